// SPDX-License-Identifier: Apache-2.0
// The daemon's handle table: every handle clients hold (clamps on tasks,
// resume-latency requests and energy preferences), who holds it, the task that
// holds it, why it ended, who may add one, and how many handles and calls a
// connection and a user may have.
//
// Owners. A handle belongs to a connection (the caller's unique bus name,
// ":1.42") and through it to a user (the UID the bus driver vouches for).
// Every call of a connection is counted with takeCall(); the table learns
// who a connection is with setCredentials() (the service asks the bus
// driver) and forgets it with connectionGone() when the bus driver says the
// name left, ending the connection's handles.
//
// Tasks. A clamp, and a latency request set for a task, hold the task by a
// pidfd (lib/backend/pidfd.hpp) opened when the handle is added, and the
// task's owner is checked only after the pidfd holds it and the task is
// found alive: a PID reused before that is refused (noSuchTask), and since
// the table never looks the task up by number again, a process that later
// gets the same PID does not inherit the handle. The pidfd becomes readable
// when the task exits; whoever watches it calls end(handle, taskExited).
// A thread's clamp is held by a thread pidfd (PIDFD_THREAD, Linux 6.9):
// older kernels refuse a non-leader thread (threadUnsupported) rather than
// widen the clamp to the process.
//
// Permissions. A caller may clamp a task it owns by the kernel's
// sched_setattr rule (mayClamp(), task_info.hpp), and set an energy
// preference for it by the same rule; privileged callers (root and
// members of the configured group: the service decides, see Credentials)
// may clamp any task, set latency requests, and set energy preferences for
// any task or on CPU sets.
//
// Limits, from ClientLimits (config.hpp), with one token-bucket mechanism
// (token_bucket.hpp) for both call rates:
//   - per connection: maxHandles handles, maxCallsPerSecond calls;
//   - per user, over all of its connections: maxHandlesPerUser handles,
//     maxCallsPerSecondPerUser calls (counted once the user is known);
//   - in all: maxTotal handles, of which the unprivileged users together
//     may hold all but privilegedReserve(), so root and the group always
//     have headroom.
//
// No D-Bus, no logging, no clock (time is a parameter, microseconds of a
// monotonic clock). Not thread-safe.
#pragma once

#include "daemon/config.hpp"
#include "daemon/hint.hpp"
#include "daemon/token_bucket.hpp"
#include "lib/backend/fd.hpp"
#include "policies/policy.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppcgov::daemon
{

// Each handle of a task holds one pidfd: the unit's LimitNOFILE= leaves
// room for these and for the daemon's other descriptors.
inline constexpr std::size_t maxTotalHandles = 16384;

enum class HandleErrc
{
    ok = 0,
    invalidClamp = 1,  // a bound above 1024, or min above max
    noSuchTask,        // no such process or thread, or it has exited
    notAProcess,       // a process target that is not a thread group leader
    threadUnsupported, // the kernel cannot hold a non-leader thread by pidfd
    notAPidfd,         // the descriptor passed is not a pidfd
    notPermitted,      // another user's task, or a latency request,
                       // without privilege
    connectionFull,    // the connection holds maxHandles handles
    userFull,          // the user holds maxHandlesPerUser handles
    tableFull,         // no room left in the table for this caller
    connectionRate,    // the connection's call rate is exceeded
    userRate,          // the user's call rate is exceeded
    noSuchHandle,      // not live, or not the caller's
    unknownCaller,     // no name, or credentials not set yet
};

// The category of HandleErrc values; its name is "cppcgov-handles".
const std::error_category& handleErrorCategory() noexcept;

inline std::error_code make_error_code(HandleErrc e) noexcept
{
    return {static_cast<int>(e), handleErrorCategory()};
}

} // namespace cppcgov::daemon

template <>
struct std::is_error_code_enum<cppcgov::daemon::HandleErrc> : std::true_type
{};

namespace cppcgov::daemon
{

enum class HandleKind : std::uint8_t
{
    clamp,
    latency,
    energy,
};

enum class EndReason : std::uint8_t
{
    released,
    clientLeft,
    taskExited,
    daemonStopped,
};

// The kind's name: "clamp", "latency", "energy" (ListHandles and
// HandleStarted name an energy preference by handleName()).
std::string_view handleKindName(HandleKind kind) noexcept;

// The reason's name in HandleEnded: "released", "client-left",
// "task-exited", "daemon-stopped".
std::string_view endReasonName(EndReason reason) noexcept;

// Whether `clamp` is acceptable: both bounds at most 1024 and min <= max.
bool validClamp(const policies::Clamp& clamp) noexcept;

// Who a connection is, as the bus driver says.
struct Credentials
{
    uid_t uid = 0;
    pid_t pid = 0; // the process that connected
    bool privileged = false;

    bool operator==(const Credentials&) const = default;
};

// A live handle.
struct Handle
{
    HandleKind kind = HandleKind::clamp;
    std::string owner; // the connection's unique name
    uid_t uid = 0;
    bool privileged = false; // counted in the privileged share
    // The task; pid 0 for a latency request on a CPU set.
    HintTarget target;
    // A clamp's bounds; 0/0 for a latency request, which clamps nothing.
    policies::Clamp clamp;
    std::uint32_t latencyUs = 0; // 0 for a clamp
    // An energy preference's; none for the other kinds.
    policies::EnergyPreference preference = policies::EnergyPreference::none;
    std::vector<unsigned> cpus; // a latency or energy request's CPUs
    cppc::backend::Fd pidfd;    // none for a CPU set
};

// The kind as ListHandles and HandleStarted name it: "clamp", "latency",
// "energy-performance", "energy-efficiency".
std::string handleName(const Handle& handle);

// A handle that ended, for the announcement.
struct Ended
{
    std::uint64_t handle = 0;
    HandleKind kind = HandleKind::clamp;
    std::string owner;
    EndReason reason = EndReason::released;
    std::vector<unsigned> cpus; // a latency or energy request's CPUs
    // The handle's pidfd, closed with this. The table's pidfds are its
    // own (no other descriptor shares their open file), so closing one
    // also takes it out of any epoll set watching it.
    cppc::backend::Fd pidfd;
};

// What an add returns: a handle, or why there is none.
struct AddResult
{
    std::uint64_t handle = 0; // 0 when `error` is set
    std::error_code error;
};

class HandleTable
{
  public:
    // A table of at most `maxTotal` handles.
    explicit HandleTable(std::size_t maxTotal = maxTotalHandles,
                         ClientLimits limits = {});

    HandleTable(const HandleTable&) = delete;
    HandleTable& operator=(const HandleTable&) = delete;

    // Replaces the limits. Handles already live stay, even above the new
    // limits (no more are added until below); every bucket keeps its
    // tokens, capped at its new rate.
    void setLimits(const ClientLimits& limits);

    // The share of the table only privileged callers may take: a quarter.
    std::size_t privilegedReserve() const noexcept
    {
        return maxTotal_ / 4;
    }

    // Counts one call of connection `name` at `nowUs`: a token from its
    // bucket and, once its user is known, one from the user's. Errors:
    // unknownCaller (empty name), connectionRate, userRate (the
    // connection's token is then spent).
    [[nodiscard]] std::error_code takeCall(std::string_view name,
                                           std::uint64_t nowUs);

    // Records who connection `name` is. Its handles keep the user and
    // privilege they were added with.
    void setCredentials(std::string_view name, const Credentials& creds);

    // Whether connection `name` has called and not left since.
    bool connected(std::string_view name) const
    {
        return connections_.find(name) != connections_.end();
    }

    // Who connection `name` is, or null when not known (yet, or since
    // forgetCredentials()).
    const Credentials* credentials(std::string_view name) const;

    // Forgets who every connection is (privileges may have changed), so
    // that they are asked again. Handles and rates stay.
    void forgetCredentials() noexcept;

    // Adds connection `name`'s clamp `clamp` on `target`, opening a pidfd
    // for it. Errors, after which nothing has changed: unknownCaller,
    // invalidClamp, connectionFull, userFull, tableFull, noSuchTask (pid
    // <= 0, no such task, or it exited), notAProcess, threadUnsupported,
    // notPermitted; another errno of pidfd_open (EMFILE...) as a system
    // error.
    AddResult addClamp(std::string_view name, HintTarget target,
                       policies::Clamp clamp);

    // As addClamp(), for the task `pidfd` refers to (the caller keeps
    // `pidfd`): a thread when it is a thread pidfd, the process otherwise.
    // The table opens a pidfd of its own on that task, never a duplicate
    // of the caller's, so that its pidfds share their open file with no
    // one. notAPidfd for a descriptor that is not one; noSuchTask once
    // the task has exited.
    AddResult addClampPidfd(std::string_view name, int pidfd,
                            policies::Clamp clamp);

    // Adds connection `name`'s latency request of `latencyUs` for the
    // process `pid`, held by its pidfd, on the CPUs it may run on; or, when
    // pid is 0, on `cpus` (not checked here: the arbiter knows the CPUs).
    // Errors: unknownCaller, notPermitted, connectionFull, userFull,
    // tableFull, noSuchTask. The handle's cpus are what the arbiter is to
    // be given; when it refuses, end() the handle.
    AddResult addLatency(std::string_view name, pid_t pid,
                         std::uint32_t latencyUs, std::vector<unsigned> cpus);

    // Adds connection `name`'s energy preference `preference` (not none)
    // for the process `pid`, held by its pidfd, on the CPUs it may run on
    // (its affinity now, as the host numbers them); or, when pid is 0, on
    // `cpus` (not checked here). A task needs the caller to own it by
    // mayClamp()'s rule, unless privileged; a CPU set needs privilege.
    // Errors: unknownCaller, notPermitted, connectionFull, userFull,
    // tableFull, noSuchTask. The handle's cpus are what the arbiter is to
    // be given (the caller maps them to the machine's CPUs); when it
    // refuses, end() the handle.
    AddResult addEnergy(std::string_view name, pid_t pid,
                        policies::EnergyPreference preference,
                        std::vector<unsigned> cpus);

    // Ends `handle` for `reason`, or nothing when it is not live.
    std::optional<Ended> end(std::uint64_t handle, EndReason reason);

    // Ends `handle` at its owner `name`'s request. noSuchHandle when it is
    // not live or another connection's.
    [[nodiscard]] std::error_code release(std::string_view name,
                                          std::uint64_t handle, Ended& ended);

    // Ends every handle of connection `name`, which left the bus, and
    // forgets the connection. Returns them in handle order.
    std::vector<Ended> connectionGone(std::string_view name);

    // Ends every handle (reason daemonStopped), in handle order.
    std::vector<Ended> endAll();

    // The live clamps, by handle, for the sampler: valid until the next
    // change of the table.
    std::span<const ClampHint> liveClamps() const noexcept
    {
        return liveClamps_;
    }

    // Handle `handle`, or null when it is not live.
    const Handle* find(std::uint64_t handle) const;

    // Every live handle, by handle.
    const std::map<std::uint64_t, Handle>& handles() const noexcept
    {
        return handles_;
    }

    std::size_t size() const noexcept
    {
        return handles_.size();
    }
    std::size_t clampCount() const noexcept
    {
        return liveClamps_.size();
    }
    std::size_t energyCount() const noexcept
    {
        return energy_;
    }
    // The handles of connection `name`, of user `uid`.
    std::size_t countOf(std::string_view name) const;
    std::size_t countOfUser(uid_t uid) const;

  private:
    struct Connection
    {
        TokenBucket bucket;
        std::optional<Credentials> creds;
        std::optional<uid_t> uid; // kept when creds are forgotten
        std::size_t handles = 0;
    };

    struct User
    {
        TokenBucket bucket;
        std::size_t connections = 0;
        std::size_t handles = 0;
    };

    Connection& connection(std::string_view name);
    // Drops user `uid` when nothing refers to it.
    void dropUserIfUnused(uid_t uid);
    // The caller's credentials and room for one more handle.
    std::error_code admit(std::string_view name, const Credentials*& creds);
    // admit() after checking `clamp`.
    std::error_code admitClamp(std::string_view name, policies::Clamp clamp,
                               const Credentials*& creds);
    // Checks that the task `pidfd` holds is alive and the caller may clamp
    // it, then records the handle.
    AddResult insertClamp(std::string_view name, const Credentials& creds,
                          HintTarget target, policies::Clamp clamp,
                          cppc::backend::Fd pidfd);
    std::uint64_t insert(std::string_view name, const Credentials& creds,
                         Handle handle);
    Ended erase(std::map<std::uint64_t, Handle>::iterator it, EndReason reason);

    std::size_t maxTotal_;
    ClientLimits limits_;
    std::uint64_t nextHandle_ = 1;
    std::size_t unprivileged_ = 0; // handles of unprivileged callers
    std::size_t energy_ = 0;       // energy preferences
    std::map<std::uint64_t, Handle> handles_;
    std::vector<ClampHint> liveClamps_; // by handle
    std::map<std::string, Connection, std::less<>> connections_;
    std::map<uid_t, User> users_;
};

} // namespace cppcgov::daemon
