/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcppcgov-client: hints to cppcgovd from applications.
 *
 * A hint is a utilization clamp (uclamp-style bounds, 0..1024, on a
 * process, a thread or a pidfd's task) or a resume-latency bound (for the
 * CPUs a process may run on, or for a CPU set). cppcgovd keeps a hint for
 * as long as the bus connection that asked for it: so every hint made here
 * is a cppcgov_hint object that owns its own connection to the system bus.
 * The hint ends when
 *   - the object is freed (cppcgov_hint_free releases it and closes the
 *     connection), or released (cppcgov_hint_release);
 *   - the process exits, however it exits (the kernel closes the socket and
 *     the bus tells cppcgovd);
 *   - the daemon ends it: its task exited, or the daemon stopped or left
 *     the bus. cppcgov_hint_process() notices (see "Event loops").
 *
 * Errors. Every function that can fail returns a negative errno and, when
 * `error` is not NULL, fills *error: the D-Bus error name when the bus or
 * cppcgovd refused (org.cppcgov.Error.NotPermitted, ...; "" otherwise), its
 * text, and a one-line description a program can print as it is
 * ("org.cppcgov.Error.NotPermitted: ..."). cppcgovd's errors map to errno
 * values: InvalidArgument EINVAL, NotPermitted EPERM, LimitExceeded EAGAIN,
 * NoSuchTask ESRCH, NoSuchHandle ENOENT, NotSupported EOPNOTSUPP, Failed
 * EIO; the bus's own errors map as sd-bus maps them (no daemon on the bus:
 * EHOSTUNREACH or ENXIO).
 *
 * The bus. NULL bus_address (every function but cppcgov_hint_request):
 * the system bus, or the address in $DBUS_SYSTEM_BUS_ADDRESS when it is
 * set (sd_bus_open_system(3)).
 *
 * Threads. A cppcgov_hint may be used by one thread at a time; different
 * objects are independent (each has its own connection) and may be used
 * from different threads at once. Nothing here starts a thread or keeps
 * global state.
 *
 * fork(2). The connection's socket is inherited by a child (it is
 * close-on-exec, so exec(2) drops it), and the hint lives while any
 * process holds the socket open: a parent that exits while its child still
 * runs leaves the hint in place until the child exits or execs. In the
 * child every function but cppcgov_hint_free() and the accessors fails
 * with -ECHILD; cppcgov_hint_free() in the child closes the child's copy of
 * the socket only and never releases the parent's hint. A child that wants
 * its own hint makes a new one.
 *
 * Event loops. The hint needs no servicing to stay alive. To learn that the
 * daemon ended it, watch cppcgov_hint_get_fd() for
 * cppcgov_hint_get_events() (with cppcgov_hint_get_timeout()) and call
 * cppcgov_hint_process() when it is ready; or block in cppcgov_hint_wait().
 */
#ifndef CPPCGOV_CLIENT_H
#define CPPCGOV_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C"
{
#endif

#if defined(__GNUC__)
#define CPPCGOV_PUBLIC __attribute__((visibility("default")))
#else
#define CPPCGOV_PUBLIC
#endif

/* The largest util_min and util_max (the kernel's uclamp scale). */
#define CPPCGOV_UTIL_MAX 1024

/* One hint and its bus connection. Opaque. */
typedef struct cppcgov_hint cppcgov_hint;

/* What went wrong. Strings are NUL-terminated, truncated when longer. */
typedef struct cppcgov_error
{
    int code;              /* the negative errno the function returned */
    char name[128];        /* D-Bus error name, "" when not from the bus */
    char message[512];     /* the error's text (cppcgovd's, the bus's) */
    char description[768]; /* "NAME: MESSAGE", or MESSAGE without a name */
} cppcgov_error;

/* What a request asks for. */
typedef enum cppcgov_kind
{
    CPPCGOV_CLAMP = 0,   /* util_min..util_max on a task */
    CPPCGOV_LATENCY = 1, /* latency_us on a process's CPUs or a CPU set */
    CPPCGOV_ENERGY = 2,  /* preference on a process's CPUs or a CPU set */
} cppcgov_kind;

/* Whom a request is for. */
typedef enum cppcgov_target
{
    CPPCGOV_TARGET_PROCESS = 0, /* pid: a process id; 0: the caller's */
    CPPCGOV_TARGET_THREAD = 1,  /* pid: a thread id; 0: the calling thread
                                   (clamps only) */
    CPPCGOV_TARGET_PIDFD = 2,   /* pidfd, from pidfd_open(2) (clamps only) */
    CPPCGOV_TARGET_CPUS = 3,    /* cpus[0..n_cpus) (latency and energy) */
} cppcgov_target;

/* The general request; zero-initialize it, then set what applies. */
typedef struct cppcgov_request
{
    cppcgov_kind kind;
    cppcgov_target target;
    pid_t pid;               /* PROCESS, THREAD */
    int pidfd;               /* PIDFD; not taken over, the caller closes it */
    const uint32_t* cpus;    /* CPUS: CPU numbers */
    size_t n_cpus;           /* CPUS: 1..4096 */
    uint16_t util_min;       /* CLAMP: 0..1024, <= util_max */
    uint16_t util_max;       /* CLAMP: 0..1024 */
    uint32_t latency_us;     /* LATENCY: microseconds, 0: no idle states */
    const char* bus_address; /* a D-Bus address ("unix:path=/run/x"), or
                                NULL: the system bus */
    const char* preference;  /* ENERGY: "performance" or "efficiency" (the
                                daemon checks it); in what was reserved[0] */
    uint64_t reserved[3];    /* zero */
} cppcgov_request;

/*
 * Asks cppcgovd for the hint `request` describes, on a connection of its
 * own. On success returns 0 and stores the new object in *ret (free it
 * with cppcgov_hint_free()); on failure returns a negative errno, fills
 * *error (when not NULL) and leaves *ret untouched. -EINVAL: the request
 * is malformed (said in error->message before anything reaches the bus).
 */
CPPCGOV_PUBLIC int cppcgov_hint_request(
    const cppcgov_request* request, cppcgov_hint** ret, cppcgov_error* error);

/* Clamps the calling thread alone (its thread id). */
CPPCGOV_PUBLIC int cppcgov_clamp_thread(uint16_t util_min, uint16_t util_max,
                                        cppcgov_hint** ret,
                                        cppcgov_error* error);

/* Clamps the calling process, every thread of it. */
CPPCGOV_PUBLIC int cppcgov_clamp_process(uint16_t util_min, uint16_t util_max,
                                         cppcgov_hint** ret,
                                         cppcgov_error* error);

/* Clamps process `pid` or, with `thread` non-zero, thread `pid`. Tasks of
 * another user need root or the daemon's group. */
CPPCGOV_PUBLIC int cppcgov_clamp_task(pid_t pid, int thread, uint16_t util_min,
                                      uint16_t util_max, cppcgov_hint** ret,
                                      cppcgov_error* error);

/* Clamps the process or thread `pidfd` refers to (a PIDFD_THREAD pidfd:
 * one thread). Immune to PID reuse. */
CPPCGOV_PUBLIC int cppcgov_clamp_pidfd(int pidfd, uint16_t util_min,
                                       uint16_t util_max, cppcgov_hint** ret,
                                       cppcgov_error* error);

/* Bounds the resume latency of the CPUs process `pid` (0: the caller) may
 * run on, as its affinity is at the call. Needs root or the daemon's group. */
CPPCGOV_PUBLIC int cppcgov_latency_task(
    pid_t pid, uint32_t latency_us, cppcgov_hint** ret, cppcgov_error* error);

/* Bounds the resume latency of CPUs cpus[0..n_cpus). Needs root or the
 * daemon's group. */
CPPCGOV_PUBLIC int cppcgov_latency_cpus(const uint32_t* cpus, size_t n_cpus,
                                        uint32_t latency_us, cppcgov_hint** ret,
                                        cppcgov_error* error);

/* Releases the hint (when it is still live) and closes the connection,
 * then frees the object. In a forked child only closes the child's copy
 * of the socket (see fork(2) above). NULL is allowed. Returns NULL. */
CPPCGOV_PUBLIC cppcgov_hint* cppcgov_hint_free(cppcgov_hint* hint);

/* Ends the hint now, keeping the object (its connection stays open; only
 * the accessors are of use afterwards). 0 also when it had already ended. */
CPPCGOV_PUBLIC int cppcgov_hint_release(cppcgov_hint* hint,
                                        cppcgov_error* error);

/* The daemon's handle number of the hint (as ListHandles and `cppcgovctl
 * status --handle` show it); never 0. */
CPPCGOV_PUBLIC uint64_t cppcgov_hint_get_handle(const cppcgov_hint* hint);

/* This connection's unique bus name (":1.42"), the hint's owner. */
CPPCGOV_PUBLIC const char* cppcgov_hint_get_owner(const cppcgov_hint* hint);

/* 1 while the hint is live, 0 once it ended, as far as the messages
 * processed so far tell (cppcgov_hint_process() reads new ones). */
CPPCGOV_PUBLIC int cppcgov_hint_is_live(const cppcgov_hint* hint);

/* Why the hint ended, NULL while it is live: "released", "client-left",
 * "task-exited", "daemon-stopped" (cppcgovd's HandleEnded reasons),
 * "daemon-left" (cppcgovd left the bus) or "disconnected" (the connection
 * to the bus broke). Valid until the object is freed. */
CPPCGOV_PUBLIC const char* cppcgov_hint_get_end_reason(
    const cppcgov_hint* hint);

/* The descriptor to poll, the poll(2) events to wait for on it, and the
 * absolute CLOCK_MONOTONIC time in microseconds by which to call
 * cppcgov_hint_process() even if it stays quiet (UINT64_MAX: no such
 * time), as sd_bus_get_fd(3), sd_bus_get_events(3), sd_bus_get_timeout(3).
 * Ask for the events and timeout again after each processing. The fd
 * stays the object's: never close it. */
CPPCGOV_PUBLIC int cppcgov_hint_get_fd(const cppcgov_hint* hint);
CPPCGOV_PUBLIC int cppcgov_hint_get_events(cppcgov_hint* hint);
CPPCGOV_PUBLIC int cppcgov_hint_get_timeout(cppcgov_hint* hint, uint64_t* usec);

/* Reads and handles what arrived on the connection without blocking.
 * Returns 1 while the hint is live, 0 once it ended (a broken connection
 * ends it: "disconnected"), -ECHILD in a forked child. */
CPPCGOV_PUBLIC int cppcgov_hint_process(cppcgov_hint* hint);

/* Processes the connection until the hint ends or `timeout_usec`
 * microseconds pass (UINT64_MAX: no limit). Returns as
 * cppcgov_hint_process(): 1 after the time passed with the hint live.
 * -EINTR when a signal interrupted the wait. */
CPPCGOV_PUBLIC int cppcgov_hint_wait(cppcgov_hint* hint, uint64_t timeout_usec);

#ifdef __cplusplus
}
#endif

#endif /* CPPCGOV_CLIENT_H */
