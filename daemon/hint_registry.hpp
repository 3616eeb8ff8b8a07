// The registry of utilization hints: which client asked which clamp for
// which task, and until when.
//
// A hint is a uclamp-style pair [util_min, util_max] (0..1024, min <= max,
// as the kernel's sched_setattr requires) on one task: a whole process or
// a single thread. Every hint belongs to two things and dies with either:
//   - its client, the D-Bus unique name that asked for it (":1.42"): the
//     daemon calls clientGone() when the name leaves the bus;
//   - its task, held by a pidfd opened when the hint is added (or dup'ed
//     from a pidfd the client passed): reap() ends the hints whose pidfd
//     reports the task's exit. Since the registry never looks a task up by
//     its number again, a process that later gets the same PID does not
//     inherit the hint.
//
// Threads: a thread's hint is held by a thread pidfd (PIDFD_THREAD, Linux
// 6.9 and later), which reports the thread's own exit. On older kernels
// pidfd_open refuses a thread that is not its group's leader; add() then
// fails with HintErrc::threadUnsupported rather than widening the hint to
// the whole process: the client may ask again for the process. (There, a
// leader thread's hint is held by the process pidfd and lasts until the
// whole process exits.)
//
// Limits, per client: a number of live hints (maxHints), and a call rate:
// add() and release() each take one token from a bucket of callsPerSecond
// tokens that refills continuously at callsPerSecond per second (a
// TokenBucket, token_bucket.hpp). Calls are counted whether they succeed or
// not; a call refused for the rate takes nothing. Time is a parameter
// (microseconds of a monotonic clock): there is no clock in here.
//
// No D-Bus and no logging. Not thread-safe.
#pragma once

#include "daemon/hint.hpp"
#include "daemon/token_bucket.hpp"
#include "lib/backend/fd.hpp"
#include "policies/policy.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppcgov::daemon
{

enum class HintErrc
{
    ok = 0,
    invalidClamp = 1,  // a bound above 1024, or min above max
    noSuchTask,        // no such process or thread, or it has exited
    notAProcess,       // a whole-process hint on a thread that is not a
                       // thread group leader
    threadUnsupported, // the kernel cannot hold a non-leader thread by pidfd
    notAPidfd,         // the descriptor passed is not a pidfd
    tooManyHints,      // the client's limit of live hints is reached
    rateLimited,       // the client's call rate is exceeded
    noSuchHint,        // the handle is not live
    notOwner,          // the hint belongs to another client
    invalidClient,     // the client name is empty
};

// The category of HintErrc values; its name is "cppcgov-hints".
const std::error_category& hintErrorCategory() noexcept;

inline std::error_code make_error_code(HintErrc e) noexcept
{
    return {static_cast<int>(e), hintErrorCategory()};
}

} // namespace cppcgov::daemon

template <>
struct std::is_error_code_enum<cppcgov::daemon::HintErrc> : std::true_type
{};

namespace cppcgov::daemon
{

struct HintLimits
{
    // Live hints per client; 0 refuses every add().
    std::size_t maxHints = 64;
    // add()/release() calls per second per client, also the burst allowed;
    // 0 turns the rate limit off.
    std::uint32_t callsPerSecond = 20;
};

enum class EndReason : std::uint8_t
{
    clientLeft,
    taskExited,
};

// "client left" or "task exited".
std::string_view endReasonName(EndReason reason) noexcept;

// A hint ended by the registry itself (not by release()).
struct EndedHint
{
    std::uint64_t handle = 0;
    std::string client;
    EndReason reason = EndReason::clientLeft;

    bool operator==(const EndedHint&) const = default;
};

// One live hint as the sampler needs it.
struct HintedTask
{
    HintTarget target;
    policies::Clamp clamp;

    bool operator==(const HintedTask&) const = default;
};

// A live hint's pidfd, for the event loop to wait on (readable: the task
// exited, call reap()). Owned by the registry: do not close it.
struct HintFd
{
    std::uint64_t handle = 0;
    int fd = -1;
};

// Whether `clamp` is acceptable: both bounds at most 1024 and min <= max.
bool validClamp(const policies::Clamp& clamp) noexcept;

// What add() returns: a handle, or why there is none.
struct AddResult
{
    std::uint64_t handle = 0; // 0 when `error` is set
    std::error_code error;
};

class HintRegistry
{
  public:
    explicit HintRegistry(HintLimits limits = {});

    HintRegistry(const HintRegistry&) = delete;
    HintRegistry& operator=(const HintRegistry&) = delete;

    // Replaces the limits. Hints already live stay, even above the new
    // maxHints (the client cannot add more until it is below); each
    // client's bucket keeps its tokens, capped at the new rate.
    void setLimits(HintLimits limits);

    const HintLimits& limits() const noexcept
    {
        return limits_;
    }

    // Adds `client`'s hint `clamp` on `target` at time `nowUs`, opening a
    // pidfd for it. Returns a handle (never 0, never reused by this
    // registry), or an error, after which nothing has changed:
    //   HintErrc::invalidClient      `client` empty (takes no token);
    //   HintErrc::rateLimited        no token left;
    //   HintErrc::invalidClamp       see validClamp();
    //   HintErrc::tooManyHints       `client` has maxHints live hints;
    //   HintErrc::noSuchTask         pid <= 0, no such task, or it has
    //                                already exited (a zombie);
    //   HintErrc::notAProcess        wholeProcess on a non-leader thread;
    //   HintErrc::threadUnsupported  a non-leader thread on a kernel
    //                                without PIDFD_THREAD;
    //   another errno of pidfd_open  (EMFILE...) as a system error.
    AddResult add(std::string_view client, HintTarget target,
                  policies::Clamp clamp, std::uint64_t nowUs);

    // As add(), for the task `pidfd` refers to (the caller keeps `pidfd`;
    // the registry holds a duplicate). The target is a thread when the
    // pidfd is a thread pidfd (PIDFD_THREAD), the process otherwise; its
    // number is read from /proc/self/fdinfo. Errors as add(), with
    // HintErrc::notAPidfd for a descriptor that is not one (or not open).
    AddResult addPidfd(std::string_view client, int pidfd,
                       policies::Clamp clamp, std::uint64_t nowUs);

    // Ends hint `handle` at time `nowUs`. Errors, after which nothing has
    // changed: HintErrc::rateLimited; HintErrc::noSuchHint when it is not
    // live; HintErrc::notOwner when it belongs to another client.
    std::error_code release(std::string_view client, std::uint64_t handle,
                            std::uint64_t nowUs);

    // Ends every hint of `client`, which has left the bus, and forgets its
    // call rate. Returns the ended hints, by handle, reason clientLeft.
    std::vector<EndedHint> clientGone(std::string_view client);

    // Ends every hint whose task has exited (its pidfd is readable; nothing
    // blocks). Returns them, by handle, reason taskExited.
    std::vector<EndedHint> reap();

    // The live hints' pidfds, by handle.
    std::vector<HintFd> pidfds() const;

    // The clamps of the live hints whose task has not exited, by handle (so
    // one task may appear several times: policies::aggregate combines them).
    // Hints whose task exited since the last reap() are left out, so a
    // reused PID never shows a clamp; a task can still exit after this
    // returns: the sampler must expect PIDs it cannot find.
    std::vector<HintedTask> clampsForTasks() const;

    // The number of live hints, of all clients or of `client`.
    std::size_t size() const noexcept
    {
        return hints_.size();
    }
    std::size_t count(std::string_view client) const;

    // Whether `handle` is live.
    bool contains(std::uint64_t handle) const
    {
        return hints_.contains(handle);
    }

    // The task of live hint `handle`, or null when it is not live.
    const HintTarget* targetOf(std::uint64_t handle) const
    {
        auto it = hints_.find(handle);
        return it == hints_.end() ? nullptr : &it->second.target;
    }

    // The pidfd holding live hint `handle`'s task (owned by the registry),
    // or -1 when it is not live.
    int pidfdOf(std::uint64_t handle) const
    {
        auto it = hints_.find(handle);
        return it == hints_.end() ? -1 : it->second.pidfd.get();
    }

  private:
    struct Hint
    {
        std::string client;
        HintTarget target;
        policies::Clamp clamp;
        cppc::backend::Fd pidfd;
    };

    // A client's live hints and its call rate.
    struct Client
    {
        std::size_t live = 0;
        TokenBucket calls;
    };

    // `client`'s entry, created with the current call rate.
    Client& clientEntry(std::string_view client);
    // Takes a token from `client`'s bucket, creating the client.
    std::error_code takeToken(std::string_view client, std::uint64_t nowUs);
    std::error_code admit(std::string_view client, policies::Clamp clamp,
                          std::uint64_t nowUs);

    // Checks and records a hint on an open pidfd.
    AddResult insert(std::string_view client, HintTarget target,
                     policies::Clamp clamp, cppc::backend::Fd pidfd);

    // Ends `handle`'s hint.
    void erase(std::map<std::uint64_t, Hint>::iterator it);

    // The handles whose pidfd is readable (task exited), in handle order.
    // One poll(2) for all of them, timeout 0.
    std::vector<std::uint64_t> exitedHandles() const;

    HintLimits limits_;
    std::uint64_t nextHandle_ = 1;
    std::map<std::uint64_t, Hint> hints_;
    std::map<std::string, Client, std::less<>> clients_;
};

} // namespace cppcgov::daemon
