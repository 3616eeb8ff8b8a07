/* SPDX-License-Identifier: Apache-2.0 */
/* libcppcgov-client (cppcgov/client.h) on sd-bus: one connection per hint,
 * the request, and watching for the hint's end. */
#define _GNU_SOURCE
#include "cppcgov/client.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#define SERVICE "org.cppcgov.Governor1"
#define PATH "/org/cppcgov/Governor1"
#define INTERFACE "org.cppcgov.Governor1"
#define MAX_CPUS 4096

struct cppcgov_hint
{
    sd_bus* bus;
    uint64_t handle;
    pid_t creator;   /* the process that made it; others are forked children */
    char* daemon;    /* cppcgovd's unique name, from the request's reply */
    const char* end; /* why it ended, NULL while live */
    char reason[32]; /* a HandleEnded reason this library does not know */
};

static void copy(char* to, size_t size, const char* from)
{
    snprintf(to, size, "%s", from ? from : "");
}

/* Fills *error (when given) with `code`, `name` and the printf message. */
static int fail(cppcgov_error* error, int code, const char* name,
                const char* format, ...) __attribute__((format(printf, 4, 5)));

static int fail(cppcgov_error* error, int code, const char* name,
                const char* format, ...)
{
    if (error)
    {
        va_list ap;
        va_start(ap, format);
        memset(error, 0, sizeof(*error));
        error->code = code;
        copy(error->name, sizeof(error->name), name);
        vsnprintf(error->message, sizeof(error->message), format, ap);
        va_end(ap);
        if (error->name[0] != '\0')
        {
            snprintf(error->description, sizeof(error->description), "%s: %s",
                     error->name, error->message);
        }
        else
        {
            copy(error->description, sizeof(error->description),
                 error->message);
        }
    }
    return code;
}

/* cppcgovd's errors (daemon/dbus/org.cppcgov.Governor1.xml) as errno. */
static const struct
{
    const char* name;
    int errnum;
} daemonErrors[] = {
    {"org.cppcgov.Error.InvalidArgument", EINVAL},
    {"org.cppcgov.Error.NotPermitted", EPERM},
    {"org.cppcgov.Error.LimitExceeded", EAGAIN},
    {"org.cppcgov.Error.NoSuchTask", ESRCH},
    {"org.cppcgov.Error.NoSuchHandle", ENOENT},
    {"org.cppcgov.Error.NotSupported", EOPNOTSUPP},
    {"org.cppcgov.Error.InvalidConfig", EINVAL},
    {"org.cppcgov.Error.Failed", EIO},
};

/* Fills *error from a failed call: `r` from sd-bus, `e` its error. */
static int failCall(cppcgov_error* error, int r, const sd_bus_error* e,
                    const char* method)
{
    if (!sd_bus_error_is_set(e))
    {
        return fail(error, r < 0 ? r : -EIO, NULL, "%s: %s", method,
                    strerror(r < 0 ? -r : EIO));
    }
    int errnum = 0;
    for (size_t i = 0; i < sizeof(daemonErrors) / sizeof(daemonErrors[0]); ++i)
    {
        if (strcmp(e->name, daemonErrors[i].name) == 0)
        {
            errnum = daemonErrors[i].errnum;
        }
    }
    if (errnum == 0)
    {
        errnum = sd_bus_error_get_errno(e);
    }
    if (errnum <= 0)
    {
        errnum = EIO;
    }
    return fail(error, -errnum, e->name, "%s",
                e->message ? e->message : strerror(errnum));
}

static int forked(const cppcgov_hint* hint)
{
    return hint->creator != getpid();
}

static void endWith(cppcgov_hint* hint, const char* reason)
{
    if (!hint->end)
    {
        hint->end = reason;
    }
}

/* HandleEnded(t handle, s owner, s reason), from cppcgovd only. */
static int onHandleEnded(sd_bus_message* m, void* userdata,
                         sd_bus_error* unused)
{
    (void)unused;
    cppcgov_hint* hint = userdata;
    uint64_t handle = 0;
    const char* owner = NULL;
    const char* reason = NULL;
    const char* unique = NULL;
    if (!hint->daemon || !sd_bus_message_get_sender(m) ||
        strcmp(sd_bus_message_get_sender(m), hint->daemon) != 0 ||
        sd_bus_message_read(m, "tss", &handle, &owner, &reason) < 0 ||
        handle != hint->handle ||
        sd_bus_get_unique_name(hint->bus, &unique) < 0 ||
        strcmp(owner, unique) != 0)
    {
        return 0;
    }
    static const char* const known[] = {"released", "client-left",
                                        "task-exited", "daemon-stopped"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); ++i)
    {
        if (strcmp(reason, known[i]) == 0)
        {
            endWith(hint, known[i]);
            return 0;
        }
    }
    copy(hint->reason, sizeof(hint->reason), reason);
    endWith(hint, hint->reason);
    return 0;
}

/* NameOwnerChanged(s name, s old, s new) for cppcgovd's name, from the
 * bus: the daemon left (or was replaced), and its handles with it. */
static int onOwnerChanged(sd_bus_message* m, void* userdata,
                          sd_bus_error* unused)
{
    (void)unused;
    cppcgov_hint* hint = userdata;
    const char* name = NULL;
    const char* old = NULL;
    const char* now = NULL;
    const char* sender = sd_bus_message_get_sender(m);
    if (!sender || strcmp(sender, "org.freedesktop.DBus") != 0 ||
        sd_bus_message_read(m, "sss", &name, &old, &now) < 0 ||
        strcmp(name, SERVICE) != 0 || old[0] == '\0')
    {
        return 0;
    }
    endWith(hint, "daemon-left");
    return 0;
}

static int openBus(const char* address, sd_bus** ret, cppcgov_error* error)
{
    sd_bus* bus = NULL;
    int r = 0;
    if (!address)
    {
        r = sd_bus_open_system(&bus);
    }
    else if ((r = sd_bus_new(&bus)) >= 0)
    {
        if ((r = sd_bus_set_address(bus, address)) >= 0 &&
            (r = sd_bus_set_bus_client(bus, 1)) >= 0)
        {
            r = sd_bus_start(bus);
        }
        if (r < 0)
        {
            sd_bus_unref(bus);
        }
    }
    if (r < 0)
    {
        if (address)
        {
            return fail(error, r, NULL,
                        "Failed to connect to the bus at %s: %s", address,
                        strerror(-r));
        }
        return fail(error, r, NULL, "Failed to connect to the system bus: %s",
                    strerror(-r));
    }
    *ret = bus;
    return 0;
}

static int check(const cppcgov_request* q, cppcgov_error* error)
{
    for (size_t i = 0; i < sizeof(q->reserved) / sizeof(q->reserved[0]); ++i)
    {
        if (q->reserved[i] != 0)
        {
            return fail(error, -EINVAL, NULL,
                        "the request's reserved fields must be zero");
        }
    }
    if (q->target == CPPCGOV_TARGET_PROCESS ||
        q->target == CPPCGOV_TARGET_THREAD)
    {
        if (q->pid < 0)
        {
            return fail(error, -EINVAL, NULL, "pid %ld is negative",
                        (long)q->pid);
        }
    }
    else if (q->target == CPPCGOV_TARGET_PIDFD)
    {
        if (q->pidfd < 0)
        {
            return fail(error, -EBADF, NULL, "pidfd %d is not a descriptor",
                        q->pidfd);
        }
    }
    else if (q->target == CPPCGOV_TARGET_CPUS)
    {
        if (q->n_cpus == 0 || !q->cpus || q->n_cpus > MAX_CPUS)
        {
            return fail(error, -EINVAL, NULL,
                        "a CPU set needs 1 to %d CPUs (got %zu)", MAX_CPUS,
                        q->cpus ? q->n_cpus : 0);
        }
    }
    else
    {
        return fail(error, -EINVAL, NULL, "unknown target %d", (int)q->target);
    }
    if (q->kind == CPPCGOV_CLAMP)
    {
        if (q->target == CPPCGOV_TARGET_CPUS)
        {
            return fail(error, -EINVAL, NULL,
                        "a clamp is for a process, a thread or a pidfd, "
                        "not a CPU set");
        }
        if (q->util_max > CPPCGOV_UTIL_MAX || q->util_min > q->util_max)
        {
            return fail(error, -EINVAL, NULL,
                        "the clamp %u..%u is not within 0..%d with min <= "
                        "max",
                        (unsigned)q->util_min, (unsigned)q->util_max,
                        CPPCGOV_UTIL_MAX);
        }
    }
    else if (q->kind == CPPCGOV_LATENCY)
    {
        if (q->target == CPPCGOV_TARGET_THREAD ||
            q->target == CPPCGOV_TARGET_PIDFD)
        {
            return fail(error, -EINVAL, NULL,
                        "a latency bound is for a process or a CPU set");
        }
    }
    else if (q->kind == CPPCGOV_ENERGY)
    {
        if (q->target == CPPCGOV_TARGET_THREAD ||
            q->target == CPPCGOV_TARGET_PIDFD)
        {
            return fail(error, -EINVAL, NULL,
                        "an energy preference is for a process or a CPU set");
        }
        if (!q->preference)
        {
            return fail(error, -EINVAL, NULL,
                        "an energy preference needs its preference");
        }
    }
    else
    {
        return fail(error, -EINVAL, NULL, "unknown kind %d", (int)q->kind);
    }
    return 0;
}

/* The request's method call on `bus`. */
static int call(sd_bus* bus, const cppcgov_request* q, sd_bus_error* e,
                sd_bus_message** reply, const char** method)
{
    if (q->kind == CPPCGOV_CLAMP && q->target == CPPCGOV_TARGET_PIDFD)
    {
        *method = "SetClampPidfd";
        return sd_bus_call_method(bus, SERVICE, PATH, INTERFACE, *method, e,
                                  reply, "hqq", q->pidfd, q->util_min,
                                  q->util_max);
    }
    if (q->kind == CPPCGOV_CLAMP)
    {
        const int thread = q->target == CPPCGOV_TARGET_THREAD;
        const uint32_t pid =
            (uint32_t)(thread && q->pid == 0 ? gettid() : q->pid);
        *method = "SetClamp";
        return sd_bus_call_method(bus, SERVICE, PATH, INTERFACE, *method, e,
                                  reply, "ubqq", pid, thread, q->util_min,
                                  q->util_max);
    }
    const int energy = q->kind == CPPCGOV_ENERGY;
    if (energy && q->target == CPPCGOV_TARGET_PROCESS)
    {
        *method = "SetEnergyPreference";
        return sd_bus_call_method(bus, SERVICE, PATH, INTERFACE, *method, e,
                                  reply, "us", (uint32_t)q->pid, q->preference);
    }
    if (q->target == CPPCGOV_TARGET_PROCESS)
    {
        *method = "SetLatency";
        return sd_bus_call_method(bus, SERVICE, PATH, INTERFACE, *method, e,
                                  reply, "uu", (uint32_t)q->pid, q->latency_us);
    }
    *method = energy ? "SetEnergyPreferenceCpus" : "SetLatencyCpus";
    sd_bus_message* m = NULL;
    int r = sd_bus_message_new_method_call(bus, &m, SERVICE, PATH, INTERFACE,
                                           *method);
    if (r >= 0)
    {
        r = sd_bus_message_append_array(m, 'u', q->cpus,
                                        q->n_cpus * sizeof(uint32_t));
    }
    if (r >= 0)
    {
        r = energy ? sd_bus_message_append(m, "s", q->preference)
                   : sd_bus_message_append(m, "u", q->latency_us);
    }
    if (r >= 0)
    {
        r = sd_bus_call(bus, m, 0, e, reply);
    }
    sd_bus_message_unref(m);
    return r;
}

int cppcgov_hint_request(const cppcgov_request* request, cppcgov_hint** ret,
                         cppcgov_error* error)
{
    if (!request || !ret)
    {
        return fail(error, -EINVAL, NULL, "no request or no place for it");
    }
    int r = check(request, error);
    if (r < 0)
    {
        return r;
    }
    cppcgov_hint* hint = calloc(1, sizeof(*hint));
    if (!hint)
    {
        return fail(error, -ENOMEM, NULL, "out of memory");
    }
    hint->creator = getpid();
    r = openBus(request->bus_address, &hint->bus, error);
    if (r < 0)
    {
        free(hint);
        return r;
    }
    /* Subscribed before the call: the end may follow its reply at once. */
    r = sd_bus_match_signal(hint->bus, NULL, NULL, PATH, INTERFACE,
                            "HandleEnded", onHandleEnded, hint);
    if (r >= 0)
    {
        r = sd_bus_match_signal(hint->bus, NULL, "org.freedesktop.DBus",
                                "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                "NameOwnerChanged", onOwnerChanged, hint);
    }
    if (r < 0)
    {
        fail(error, r, NULL, "cannot subscribe to cppcgovd's signals: %s",
             strerror(-r));
        cppcgov_hint_free(hint);
        return r;
    }
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message* reply = NULL;
    const char* method = "";
    r = call(hint->bus, request, &e, &reply, &method);
    if (r >= 0)
    {
        r = sd_bus_message_read(reply, "t", &hint->handle);
        const char* sender = sd_bus_message_get_sender(reply);
        if (r >= 0 && sender && !(hint->daemon = strdup(sender)))
        {
            r = -ENOMEM;
        }
    }
    if (r < 0)
    {
        const int code = failCall(error, r, &e, method);
        sd_bus_error_free(&e);
        sd_bus_message_unref(reply);
        hint->end = "released"; /* nothing to release on the way out */
        cppcgov_hint_free(hint);
        return code;
    }
    sd_bus_message_unref(reply);
    *ret = hint;
    return 0;
}

int cppcgov_clamp_thread(uint16_t util_min, uint16_t util_max,
                         cppcgov_hint** ret, cppcgov_error* error)
{
    return cppcgov_clamp_task(0, 1, util_min, util_max, ret, error);
}

int cppcgov_clamp_process(uint16_t util_min, uint16_t util_max,
                          cppcgov_hint** ret, cppcgov_error* error)
{
    return cppcgov_clamp_task(0, 0, util_min, util_max, ret, error);
}

int cppcgov_clamp_task(pid_t pid, int thread, uint16_t util_min,
                       uint16_t util_max, cppcgov_hint** ret,
                       cppcgov_error* error)
{
    const cppcgov_request q = {
        .kind = CPPCGOV_CLAMP,
        .target = thread ? CPPCGOV_TARGET_THREAD : CPPCGOV_TARGET_PROCESS,
        .pid = pid,
        .util_min = util_min,
        .util_max = util_max,
    };
    return cppcgov_hint_request(&q, ret, error);
}

int cppcgov_clamp_pidfd(int pidfd, uint16_t util_min, uint16_t util_max,
                        cppcgov_hint** ret, cppcgov_error* error)
{
    const cppcgov_request q = {
        .kind = CPPCGOV_CLAMP,
        .target = CPPCGOV_TARGET_PIDFD,
        .pidfd = pidfd,
        .util_min = util_min,
        .util_max = util_max,
    };
    return cppcgov_hint_request(&q, ret, error);
}

int cppcgov_latency_task(pid_t pid, uint32_t latency_us, cppcgov_hint** ret,
                         cppcgov_error* error)
{
    const cppcgov_request q = {
        .kind = CPPCGOV_LATENCY,
        .target = CPPCGOV_TARGET_PROCESS,
        .pid = pid,
        .latency_us = latency_us,
    };
    return cppcgov_hint_request(&q, ret, error);
}

int cppcgov_latency_cpus(const uint32_t* cpus, size_t n_cpus,
                         uint32_t latency_us, cppcgov_hint** ret,
                         cppcgov_error* error)
{
    const cppcgov_request q = {
        .kind = CPPCGOV_LATENCY,
        .target = CPPCGOV_TARGET_CPUS,
        .cpus = cpus,
        .n_cpus = n_cpus,
        .latency_us = latency_us,
    };
    return cppcgov_hint_request(&q, ret, error);
}

cppcgov_hint* cppcgov_hint_free(cppcgov_hint* hint)
{
    if (!hint)
    {
        return NULL;
    }
    if (hint->bus)
    {
        if (forked(hint))
        {
            /* Closes this process's copy of the socket, sends nothing. */
            sd_bus_unref(hint->bus);
        }
        else
        {
            (void)cppcgov_hint_release(hint, NULL);
            sd_bus_flush_close_unref(hint->bus);
        }
    }
    free(hint->daemon);
    free(hint);
    return NULL;
}

int cppcgov_hint_release(cppcgov_hint* hint, cppcgov_error* error)
{
    if (!hint)
    {
        return fail(error, -EINVAL, NULL, "no hint");
    }
    if (forked(hint))
    {
        return fail(error, -ECHILD, NULL,
                    "the hint belongs to the parent process");
    }
    (void)cppcgov_hint_process(hint);
    if (hint->end)
    {
        return 0;
    }
    sd_bus_error e = SD_BUS_ERROR_NULL;
    const int r = sd_bus_call_method(hint->bus, SERVICE, PATH, INTERFACE,
                                     "Release", &e, NULL, "t", hint->handle);
    if (r < 0 && !sd_bus_error_has_name(&e, "org.cppcgov.Error.NoSuchHandle"))
    {
        const int code = failCall(error, r, &e, "Release");
        sd_bus_error_free(&e);
        return code;
    }
    sd_bus_error_free(&e);
    /* A HandleEnded that came first tells better why it is gone. */
    (void)cppcgov_hint_process(hint);
    endWith(hint, "released");
    return 0;
}

uint64_t cppcgov_hint_get_handle(const cppcgov_hint* hint)
{
    return hint ? hint->handle : 0;
}

const char* cppcgov_hint_get_owner(const cppcgov_hint* hint)
{
    const char* unique = NULL;
    if (!hint || sd_bus_get_unique_name(hint->bus, &unique) < 0)
    {
        return NULL;
    }
    return unique;
}

int cppcgov_hint_is_live(const cppcgov_hint* hint)
{
    return hint && !hint->end;
}

const char* cppcgov_hint_get_end_reason(const cppcgov_hint* hint)
{
    return hint ? hint->end : NULL;
}

int cppcgov_hint_get_fd(const cppcgov_hint* hint)
{
    return hint ? sd_bus_get_fd(hint->bus) : -EINVAL;
}

/* The connection broke and ended the hint: nothing more to wait for. */
static int closedAfterEnd(const cppcgov_hint* hint)
{
    return hint->end && sd_bus_is_open(hint->bus) <= 0;
}

int cppcgov_hint_get_events(cppcgov_hint* hint)
{
    if (!hint)
    {
        return -EINVAL;
    }
    return closedAfterEnd(hint) ? 0 : sd_bus_get_events(hint->bus);
}

int cppcgov_hint_get_timeout(cppcgov_hint* hint, uint64_t* usec)
{
    if (!hint || !usec)
    {
        return -EINVAL;
    }
    if (closedAfterEnd(hint))
    {
        *usec = UINT64_MAX;
        return 0;
    }
    return sd_bus_get_timeout(hint->bus, usec);
}

int cppcgov_hint_process(cppcgov_hint* hint)
{
    if (!hint)
    {
        return -EINVAL;
    }
    if (forked(hint))
    {
        return -ECHILD;
    }
    while (!hint->end)
    {
        const int r = sd_bus_process(hint->bus, NULL);
        if (r < 0 || sd_bus_is_open(hint->bus) <= 0)
        {
            endWith(hint, "disconnected");
        }
        if (r <= 0)
        {
            break;
        }
    }
    return hint->end ? 0 : 1;
}

static uint64_t nowUs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int cppcgov_hint_wait(cppcgov_hint* hint, uint64_t timeout_usec)
{
    const uint64_t start = nowUs();
    while (1)
    {
        const int r = cppcgov_hint_process(hint);
        if (r <= 0)
        {
            return r;
        }
        uint64_t left = UINT64_MAX;
        if (timeout_usec != UINT64_MAX)
        {
            const uint64_t spent = nowUs() - start;
            if (spent >= timeout_usec)
            {
                return 1;
            }
            left = timeout_usec - spent;
        }
        const int w = sd_bus_wait(hint->bus, left);
        if (w < 0 && w != -EINTR)
        {
            endWith(hint, "disconnected");
        }
        else if (w == -EINTR)
        {
            return -EINTR;
        }
    }
}
