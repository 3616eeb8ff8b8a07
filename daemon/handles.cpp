// SPDX-License-Identifier: Apache-2.0
#include "handles.hpp"

#include "daemon/task_info.hpp"
#include "lib/backend/pidfd.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

using cppc::backend::Fd;
using cppc::backend::PidfdOf;

class Category final : public std::error_category
{
  public:
    const char* name() const noexcept override
    {
        return "cppcgov-handles";
    }

    std::string message(int value) const override
    {
        switch (static_cast<HandleErrc>(value))
        {
            case HandleErrc::ok:
                return "success";
            case HandleErrc::invalidClamp:
                return "util_min and util_max must be 0..1024 with util_min "
                       "<= util_max";
            case HandleErrc::noSuchTask:
                return "no such task, or it has exited";
            case HandleErrc::notAProcess:
                return "the task is a thread, not a process: clamp it as a "
                       "thread";
            case HandleErrc::threadUnsupported:
                return "this kernel cannot hold a single thread by pidfd "
                       "(Linux 6.9 or later can): clamp its process";
            case HandleErrc::notAPidfd:
                return "the descriptor passed is not a pidfd";
            case HandleErrc::notPermitted:
                return "needs root or membership of permissions.group";
            case HandleErrc::connectionFull:
                return "the connection holds as many handles as it may "
                       "(clients.max_handles)";
            case HandleErrc::userFull:
                return "the user's connections hold as many handles as they "
                       "may (users.max_handles)";
            case HandleErrc::tableFull:
                return "the daemon holds as many handles as it may for this "
                       "caller (the rest is kept for root and "
                       "permissions.group)";
            case HandleErrc::connectionRate:
                return "too many calls per second from this connection "
                       "(clients.max_calls_per_second)";
            case HandleErrc::userRate:
                return "too many calls per second from this user's "
                       "connections (users.max_calls_per_second)";
            case HandleErrc::noSuchHandle:
                return "no such handle, or not the caller's";
            case HandleErrc::unknownCaller:
                return "the caller is not known";
        }
        return "unknown handle error " + std::to_string(value);
    }
};

// Opens the pidfd that holds `target`, or says why not.
std::error_code openTarget(HintTarget target, Fd& out)
{
    if (target.wholeProcess)
    {
        const std::error_code ec =
            cppc::backend::openPidfd(target.pid, PidfdOf::process, out);
        // Not a thread group leader: EINVAL before Linux 6.9, ENOENT since.
        if (ec == std::errc::invalid_argument ||
            ec == std::errc::no_such_file_or_directory)
        {
            return HandleErrc::notAProcess;
        }
        return ec == std::errc::no_such_process ? HandleErrc::noSuchTask : ec;
    }
    std::error_code ec =
        cppc::backend::openPidfd(target.pid, PidfdOf::thread, out);
    if (ec == std::errc::invalid_argument)
    {
        // A kernel without PIDFD_THREAD: only a leader can be held, by its
        // process pidfd.
        ec = cppc::backend::openPidfd(target.pid, PidfdOf::process, out);
        if (ec == std::errc::invalid_argument ||
            ec == std::errc::no_such_file_or_directory)
        {
            return HandleErrc::threadUnsupported;
        }
    }
    return ec == std::errc::no_such_process ? HandleErrc::noSuchTask : ec;
}

// A pidfd of process `pid`; noSuchTask when there is none (or `pid` is a
// thread that is not one).
std::error_code openProcess(pid_t pid, cppc::backend::Fd& out)
{
    const std::error_code ec =
        cppc::backend::openPidfd(pid, PidfdOf::process, out);
    const bool gone = ec == std::errc::no_such_process ||
                      ec == std::errc::invalid_argument ||
                      ec == std::errc::no_such_file_or_directory;
    return gone ? make_error_code(HandleErrc::noSuchTask) : ec;
}

} // namespace

const std::error_category& handleErrorCategory() noexcept
{
    static const Category category;
    return category;
}

std::string_view handleKindName(HandleKind kind) noexcept
{
    switch (kind)
    {
        case HandleKind::clamp:
            return "clamp";
        case HandleKind::latency:
            return "latency";
        case HandleKind::energy:
            return "energy";
    }
    return "unknown";
}

std::string handleName(const Handle& handle)
{
    if (handle.kind != HandleKind::energy)
    {
        return std::string(handleKindName(handle.kind));
    }
    return "energy-" +
           std::string(policies::energyPreferenceName(handle.preference));
}

std::string_view endReasonName(EndReason reason) noexcept
{
    switch (reason)
    {
        case EndReason::released:
            return "released";
        case EndReason::clientLeft:
            return "client-left";
        case EndReason::taskExited:
            return "task-exited";
        case EndReason::daemonStopped:
            return "daemon-stopped";
    }
    return "unknown";
}

bool validClamp(const policies::Clamp& clamp) noexcept
{
    return clamp.max <= policies::utilScale && clamp.min <= clamp.max;
}

HandleTable::HandleTable(std::size_t maxTotal, ClientLimits limits) :
    maxTotal_(maxTotal), limits_(limits)
{}

void HandleTable::setLimits(const ClientLimits& limits)
{
    limits_ = limits;
    for (auto& [name, c] : connections_)
    {
        c.bucket.setRate(limits_.maxCallsPerSecond);
    }
    for (auto& [uid, u] : users_)
    {
        u.bucket.setRate(limits_.maxCallsPerSecondPerUser);
    }
}

HandleTable::Connection& HandleTable::connection(std::string_view name)
{
    auto it = connections_.find(name);
    if (it == connections_.end())
    {
        it = connections_
                 .emplace(std::string(name),
                          Connection{TokenBucket(limits_.maxCallsPerSecond),
                                     std::nullopt, std::nullopt, 0})
                 .first;
    }
    return it->second;
}

void HandleTable::dropUserIfUnused(uid_t uid)
{
    const auto it = users_.find(uid);
    if (it != users_.end() && it->second.connections == 0 &&
        it->second.handles == 0)
    {
        users_.erase(it);
    }
}

std::error_code HandleTable::takeCall(std::string_view name,
                                      std::uint64_t nowUs)
{
    if (name.empty())
    {
        return HandleErrc::unknownCaller;
    }
    Connection& c = connection(name);
    if (!c.bucket.take(nowUs))
    {
        return HandleErrc::connectionRate;
    }
    if (c.uid && !users_.at(*c.uid).bucket.take(nowUs))
    {
        return HandleErrc::userRate;
    }
    return {};
}

void HandleTable::setCredentials(std::string_view name,
                                 const Credentials& creds)
{
    Connection& c = connection(name);
    if (c.uid != creds.uid)
    {
        if (c.uid)
        {
            --users_.at(*c.uid).connections;
            dropUserIfUnused(*c.uid);
        }
        auto u = users_.find(creds.uid);
        if (u == users_.end())
        {
            u = users_
                    .emplace(creds.uid, User{TokenBucket(
                                            limits_.maxCallsPerSecondPerUser)})
                    .first;
        }
        ++u->second.connections;
        c.uid = creds.uid;
    }
    c.creds = creds;
}

const Credentials* HandleTable::credentials(std::string_view name) const
{
    const auto it = connections_.find(name);
    return it == connections_.end() || !it->second.creds
               ? nullptr
               : &*it->second.creds;
}

void HandleTable::forgetCredentials() noexcept
{
    for (auto& [name, c] : connections_)
    {
        c.creds.reset();
    }
}

// The checks every add makes, in order: caller, then room for one more
// handle for the connection, its user, and the table.
std::error_code HandleTable::admit(std::string_view name,
                                   const Credentials*& creds)
{
    creds = credentials(name);
    if (creds == nullptr)
    {
        return HandleErrc::unknownCaller;
    }
    if (countOf(name) >= limits_.maxHandles)
    {
        return HandleErrc::connectionFull;
    }
    if (countOfUser(creds->uid) >= limits_.maxHandlesPerUser)
    {
        return HandleErrc::userFull;
    }
    if (handles_.size() >= maxTotal_ ||
        (!creds->privileged &&
         unprivileged_ + privilegedReserve() >= maxTotal_))
    {
        return HandleErrc::tableFull;
    }
    return {};
}

std::error_code HandleTable::admitClamp(
    std::string_view name, policies::Clamp clamp, const Credentials*& creds)
{
    if (!validClamp(clamp))
    {
        return HandleErrc::invalidClamp;
    }
    return admit(name, creds);
}

AddResult HandleTable::addClamp(std::string_view name, HintTarget target,
                                policies::Clamp clamp)
{
    const Credentials* creds = nullptr;
    if (const std::error_code ec = admitClamp(name, clamp, creds))
    {
        return {0, ec};
    }
    Fd pidfd;
    if (const std::error_code ec = openTarget(target, pidfd))
    {
        return {0, ec};
    }
    return insertClamp(name, *creds, target, clamp, std::move(pidfd));
}

AddResult HandleTable::addClampPidfd(std::string_view name, int pidfd,
                                     policies::Clamp clamp)
{
    const Credentials* creds = nullptr;
    if (const std::error_code ec = admitClamp(name, clamp, creds))
    {
        return {0, ec};
    }
    if (pidfd < 0 || ::fcntl(pidfd, F_GETFL) < 0)
    {
        return {0, HandleErrc::notAPidfd};
    }
    const std::optional<long> pid = cppc::backend::pidfdPid(pidfd);
    if (!pid)
    {
        return {0, HandleErrc::notAPidfd};
    }
    if (*pid <= 0)
    {
        return {0, HandleErrc::noSuchTask};
    }
    const HintTarget target{static_cast<pid_t>(*pid),
                            !cppc::backend::isThreadPidfd(pidfd)};
    // A pidfd of the table's own, not a duplicate: the caller's descriptor
    // shares its open file, which would keep an exit watch on it alive
    // after the handle ends. It holds the caller's task when that task is
    // still alive after it was opened (its number not reused in between).
    Fd own;
    if (const std::error_code ec = openTarget(target, own))
    {
        return {0, ec};
    }
    if (cppc::backend::pidfdExited(pidfd))
    {
        return {0, HandleErrc::noSuchTask};
    }
    return insertClamp(name, *creds, target, clamp, std::move(own));
}

AddResult HandleTable::insertClamp(std::string_view name,
                                   const Credentials& creds, HintTarget target,
                                   policies::Clamp clamp, Fd pidfd)
{
    // Checked after the pidfd holds the task: if the task is still alive
    // afterwards, its number was not reused in between.
    TaskCreds owner{};
    if (pidfdTaskCreds(pidfd.get(), target.pid, owner) ||
        cppc::backend::pidfdExited(pidfd.get()))
    {
        return {0, HandleErrc::noSuchTask};
    }
    if (!creds.privileged && !mayClamp(creds.uid, owner))
    {
        return {0, HandleErrc::notPermitted};
    }
    Handle h;
    h.kind = HandleKind::clamp;
    h.target = target;
    h.clamp = clamp;
    h.pidfd = std::move(pidfd);
    const std::uint64_t handle = insert(name, creds, std::move(h));
    liveClamps_.push_back({handle, target, clamp});
    return {handle, {}};
}

AddResult HandleTable::addLatency(std::string_view name, pid_t pid,
                                  std::uint32_t latencyUs,
                                  std::vector<unsigned> cpus)
{
    const Credentials* creds = credentials(name);
    if (creds != nullptr && !creds->privileged)
    {
        return {0, HandleErrc::notPermitted};
    }
    if (const std::error_code ec = admit(name, creds))
    {
        return {0, ec};
    }
    Handle h;
    h.kind = HandleKind::latency;
    h.clamp = {0, 0};
    h.latencyUs = latencyUs;
    if (pid != 0)
    {
        if (const std::error_code ec = openProcess(pid, h.pidfd))
        {
            return {0, ec};
        }
        // The CPUs of the task the pidfd holds: alive afterwards means the
        // number was not reused in between.
        if (taskAffinity(pid, cpus) ||
            cppc::backend::pidfdExited(h.pidfd.get()))
        {
            return {0, HandleErrc::noSuchTask};
        }
        h.target = {pid, true};
    }
    h.cpus = std::move(cpus);
    return {insert(name, *creds, std::move(h)), {}};
}

AddResult HandleTable::addEnergy(std::string_view name, pid_t pid,
                                 policies::EnergyPreference preference,
                                 std::vector<unsigned> cpus)
{
    const Credentials* creds = credentials(name);
    if (pid == 0 && creds != nullptr && !creds->privileged)
    {
        return {0, HandleErrc::notPermitted};
    }
    if (const std::error_code ec = admit(name, creds))
    {
        return {0, ec};
    }
    Handle h;
    h.kind = HandleKind::energy;
    h.clamp = {0, 0};
    h.preference = preference;
    if (pid != 0)
    {
        if (const std::error_code ec = openProcess(pid, h.pidfd))
        {
            return {0, ec};
        }
        // Owner and CPUs of the task the pidfd holds: alive afterwards
        // means the number was not reused in between.
        TaskCreds owner{};
        if (pidfdTaskCreds(h.pidfd.get(), pid, owner) ||
            taskAffinity(pid, cpus) ||
            cppc::backend::pidfdExited(h.pidfd.get()))
        {
            return {0, HandleErrc::noSuchTask};
        }
        if (!creds->privileged && !mayClamp(creds->uid, owner))
        {
            return {0, HandleErrc::notPermitted};
        }
        h.target = {pid, true};
    }
    h.cpus = std::move(cpus);
    ++energy_;
    return {insert(name, *creds, std::move(h)), {}};
}

std::uint64_t HandleTable::insert(std::string_view name,
                                  const Credentials& creds, Handle handle)
{
    const std::uint64_t id = nextHandle_++;
    handle.owner = std::string(name);
    handle.uid = creds.uid;
    handle.privileged = creds.privileged;
    if (!creds.privileged)
    {
        ++unprivileged_;
    }
    ++connection(name).handles;
    ++users_.at(creds.uid).handles;
    handles_.emplace(id, std::move(handle));
    return id;
}

Ended HandleTable::erase(std::map<std::uint64_t, Handle>::iterator it,
                         EndReason reason)
{
    Handle& h = it->second;
    if (h.kind == HandleKind::clamp)
    {
        const auto live = std::lower_bound(
            liveClamps_.begin(), liveClamps_.end(), it->first,
            [](const ClampHint& c, std::uint64_t id) { return c.handle < id; });
        if (live != liveClamps_.end() && live->handle == it->first)
        {
            liveClamps_.erase(live);
        }
    }
    if (!h.privileged)
    {
        --unprivileged_;
    }
    if (h.kind == HandleKind::energy)
    {
        --energy_;
    }
    if (const auto c = connections_.find(h.owner); c != connections_.end())
    {
        --c->second.handles;
    }
    if (const auto u = users_.find(h.uid); u != users_.end())
    {
        --u->second.handles;
        dropUserIfUnused(h.uid);
    }
    Ended ended{it->first,          h.kind,
                std::move(h.owner), reason,
                std::move(h.cpus),  std::move(h.pidfd)};
    handles_.erase(it);
    return ended;
}

std::optional<Ended> HandleTable::end(std::uint64_t handle, EndReason reason)
{
    const auto it = handles_.find(handle);
    if (it == handles_.end())
    {
        return std::nullopt;
    }
    return erase(it, reason);
}

std::error_code HandleTable::release(std::string_view name,
                                     std::uint64_t handle, Ended& ended)
{
    const auto it = handles_.find(handle);
    if (it == handles_.end() || it->second.owner != name)
    {
        return HandleErrc::noSuchHandle;
    }
    ended = erase(it, EndReason::released);
    return {};
}

std::vector<Ended> HandleTable::connectionGone(std::string_view name)
{
    std::vector<Ended> ended;
    for (auto it = handles_.begin(); it != handles_.end();)
    {
        auto next = std::next(it);
        if (it->second.owner == name)
        {
            ended.push_back(erase(it, EndReason::clientLeft));
        }
        it = next;
    }
    if (const auto c = connections_.find(name); c != connections_.end())
    {
        if (c->second.uid)
        {
            const uid_t uid = *c->second.uid;
            --users_.at(uid).connections;
            connections_.erase(c);
            dropUserIfUnused(uid);
        }
        else
        {
            connections_.erase(c);
        }
    }
    return ended;
}

std::vector<Ended> HandleTable::endAll()
{
    std::vector<Ended> ended;
    while (!handles_.empty())
    {
        ended.push_back(erase(handles_.begin(), EndReason::daemonStopped));
    }
    return ended;
}

const Handle* HandleTable::find(std::uint64_t handle) const
{
    const auto it = handles_.find(handle);
    return it == handles_.end() ? nullptr : &it->second;
}

std::size_t HandleTable::countOf(std::string_view name) const
{
    const auto it = connections_.find(name);
    return it == connections_.end() ? 0 : it->second.handles;
}

std::size_t HandleTable::countOfUser(uid_t uid) const
{
    const auto it = users_.find(uid);
    return it == users_.end() ? 0 : it->second.handles;
}

} // namespace cppcgov::daemon
