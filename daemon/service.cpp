#include "service.hpp"

#include "daemon/log.hpp"
#include "daemon/task_info.hpp"
#include "lib/error.hpp"
#include "lib/monotonic_clock.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>
#include <limits>
#include <new>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

namespace error = cppcgov::dbus::error;

[[noreturn]] void fail(const char* name, const std::string& message)
{
    throw sdbus::Error(name, message);
}

// Runs a handler's body and lets only sdbus::Error out of it: sdbus-c++
// 1.2 turns those into D-Bus errors, anything else would unwind through
// sd-bus's C frames.
template <class Body>
auto guarded(const char* method, Body&& body) -> decltype(body())
{
    try
    {
        return body();
    }
    catch (const sdbus::Error&)
    {
        throw;
    }
    catch (const std::bad_alloc&)
    {
        fail(error::failed, std::string(method) + ": out of memory");
    }
    catch (const std::exception& e)
    {
        fail(error::failed, std::string(method) + ": " + e.what());
    }
    catch (...)
    {
        fail(error::failed, std::string(method) + ": unexpected failure");
    }
}

// The bus driver's name, the sender of its messages.
constexpr const char* busDriverName = "org.freedesktop.DBus";

// How long the bus driver has to say who a caller is.
constexpr std::chrono::seconds credentialsTimeout{5};

std::uint64_t nowUs()
{
    return static_cast<std::uint64_t>(cppc::monotonicNow().count() / 1000);
}

std::uint64_t nowNs()
{
    return static_cast<std::uint64_t>(cppc::monotonicNow().count());
}

std::string taskName(pid_t pid, bool thread)
{
    return std::string(thread ? "thread " : "process ") + std::to_string(pid);
}

// The D-Bus error for a failed HintRegistry call.
[[noreturn]] void failHint(std::error_code ec, const std::string& what)
{
    if (ec.category() == hintErrorCategory())
    {
        switch (static_cast<HintErrc>(ec.value()))
        {
            case HintErrc::invalidClamp:
                fail(error::invalidArgument,
                     "util_min and util_max must be 0..1024 with util_min <= "
                     "util_max");
            case HintErrc::noSuchTask:
                fail(error::noSuchTask, what + ": no such task, or it exited");
            case HintErrc::notAProcess:
                fail(error::invalidArgument,
                     what + " is a thread, not a process: clamp it with "
                            "thread=true");
            case HintErrc::threadUnsupported:
                fail(error::notSupported,
                     what +
                         ": this kernel cannot hold a single thread by "
                         "pidfd (Linux 6.9 or later can); clamp its process");
            case HintErrc::notAPidfd:
                fail(error::invalidArgument,
                     "the descriptor passed is not a pidfd");
            case HintErrc::tooManyHints:
            case HintErrc::rateLimited:
                fail(error::limitExceeded, ec.message());
            case HintErrc::noSuchHint:
            case HintErrc::notOwner:
                fail(error::noSuchHandle, ec.message());
            case HintErrc::ok:
            case HintErrc::invalidClient:
                break;
        }
    }
    fail(error::failed, what + ": " + ec.message());
}

// The D-Bus error for a failed LatencyArbiter::add().
[[noreturn]] void failLatency(std::error_code ec)
{
    if (ec == cppc::Errc::valueOutOfRange)
    {
        fail(error::invalidArgument,
             "latency_us must be at most " + std::to_string(maxLatencyUs));
    }
    if (ec == cppc::Errc::noSuchCpu)
    {
        fail(error::invalidArgument,
             "a CPU in the set does not exist or has no "
             "power/pm_qos_resume_latency_us");
    }
    if (ec == std::errc::invalid_argument)
    {
        fail(error::invalidArgument, "the CPU set is empty");
    }
    fail(error::failed, "setting the resume latency: " + ec.message());
}

// Whether the task behind `pidfd` has exited (the pidfd is readable).
bool exited(int pidfd)
{
    pollfd p{pidfd, POLLIN, 0};
    int n = 0;
    do
    {
        n = ::poll(&p, 1, 0);
    } while (n < 0 && errno == EINTR);
    return n > 0;
}

// Calls `lookup(buffer, size)` with a growing buffer while it says ERANGE.
template <class Lookup>
int withBuffer(std::vector<char>& buffer, Lookup&& lookup)
{
    buffer.resize(4096);
    int r = 0;
    while ((r = lookup(buffer.data(), buffer.size())) == ERANGE &&
           buffer.size() < (std::size_t{1} << 24))
    {
        buffer.resize(buffer.size() * 2);
    }
    return r;
}

std::optional<gid_t> groupByName(const std::string& name)
{
    group entry{};
    group* found = nullptr;
    std::vector<char> buffer;
    const int r = withBuffer(buffer, [&](char* b, std::size_t n) {
        return ::getgrnam_r(name.c_str(), &entry, b, n, &found);
    });
    if (r != 0 || found == nullptr)
    {
        return std::nullopt;
    }
    return found->gr_gid;
}

// Whether user `uid` is a member of group `gid`, primary or supplementary,
// by the user database.
bool userInGroup(uid_t uid, gid_t gid)
{
    passwd entry{};
    passwd* found = nullptr;
    std::vector<char> buffer;
    const int r = withBuffer(buffer, [&](char* b, std::size_t n) {
        return ::getpwuid_r(uid, &entry, b, n, &found);
    });
    if (r != 0 || found == nullptr)
    {
        return false;
    }
    if (found->pw_gid == gid)
    {
        return true;
    }
    std::vector<gid_t> groups(64);
    int count = static_cast<int>(groups.size());
    while (::getgrouplist(found->pw_name, found->pw_gid, groups.data(),
                          &count) < 0)
    {
        if (count <= static_cast<int>(groups.size()))
        {
            count = static_cast<int>(groups.size()) * 2;
        }
        groups.resize(static_cast<std::size_t>(count));
    }
    groups.resize(static_cast<std::size_t>(count));
    return std::find(groups.begin(), groups.end(), gid) != groups.end();
}

cppc::backend::Fd openPidfd(pid_t pid)
{
    const long fd = ::syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
    {
        const int err = errno;
        if (err == ESRCH || err == EINVAL)
        {
            fail(error::noSuchTask,
                 "process " + std::to_string(pid) +
                     ": no such process, or not a process (a thread?)");
        }
        fail(error::failed,
             "pidfd_open: " +
                 std::error_code(err, std::generic_category()).message());
    }
    return cppc::backend::Fd(static_cast<int>(fd));
}

} // namespace

Service::Service(sdbus::IConnection& bus, boost::asio::io_context& io,
                 LatencyArbiter& arbiter, const Governor& governor,
                 ServiceInfo info, ServiceHooks hooks) :
    AdaptorInterfaces(bus, cppcgov::dbus::objectPath),
    bus_(bus), io_(io), arbiter_(arbiter), governor_(governor),
    info_(std::move(info)), hooks_(std::move(hooks)),
    // The service enforces the limits itself, over clamps and latency
    // requests together.
    registry_(HintLimits{maxTotalHandles, 0}),
    alive_(std::make_shared<Service*>(this))
{
    busDriver_ = sdbus::createProxy(bus_, "org.freedesktop.DBus",
                                    "/org/freedesktop/DBus");
    nameOwnerMatch_ = bus_.addMatch(
        "type='signal',sender='org.freedesktop.DBus',"
        "interface='org.freedesktop.DBus',member='NameOwnerChanged'",
        [this](sdbus::Message& msg) { onNameOwnerChanged(msg); });
    registerAdaptor();
}

Service::~Service()
{
    *alive_ = nullptr;
    unregisterAdaptor();
}

void Service::configure(const GovernorConfig& config)
{
    limits_ = config.clients;
    for (auto& [name, client] : clients_)
    {
        client.bucket.setRate(limits_.maxCallsPerSecond);
    }
    policyName_ = std::string(policies::policyName(config.defaults.kind));
    samplingPeriodUs_ = config.samplingPeriodUs;
    sources_ = config.sources;

    groupId_ = groupByName(config.group);
    if (!groupId_)
    {
        log::warning("the group '" + config.group +
                     "' (permissions.group) does not exist: only root may "
                     "set latency requests, reload and clamp other users' "
                     "tasks");
    }
    // A group that does not exist has no members: only root is privileged.
    for (auto& [name, client] : clients_)
    {
        client.credsKnown = false;
    }
}

void Service::announcePolicy()
{
    emitPolicyChanged(policyName_, sources_);
    getObject().emitPropertiesChangedSignal(cppcgov::dbus::interfaceName,
                                            {"Policy", "SamplingPeriodUs"});
}

Service::Client& Service::caller(std::string& name)
{
    const sdbus::Message* msg = getObject().getCurrentlyProcessedMessage();
    if (msg == nullptr)
    {
        fail(error::failed, "no message is being processed");
    }
    name = msg->getSender();
    if (name.empty())
    {
        fail(error::invalidArgument, "the call has no sender");
    }
    auto it = clients_.find(name);
    if (it == clients_.end())
    {
        it = clients_
                 .emplace(name, Client{TokenBucket(limits_.maxCallsPerSecond)})
                 .first;
    }
    Client& c = it->second;
    if (!c.bucket.take(nowUs()))
    {
        fail(error::limitExceeded,
             "more than " + std::to_string(limits_.maxCallsPerSecond) +
                 " calls per second (clients.max_calls_per_second)");
    }
    return c;
}

void Service::setCreds(Client& c,
                       const std::map<std::string, sdbus::Variant>& creds)
{
    // Only what the bus driver vouches for (the connection's user and
    // process as it connected): nothing read from /proc, whose PID may
    // have been reused since. Group membership comes from the user
    // database, by that user.
    const auto uid = creds.find("UnixUserID");
    const auto pid = creds.find("ProcessID");
    if (uid == creds.end() || pid == creds.end())
    {
        fail(error::failed,
             "the bus did not say which user and process the caller is");
    }
    c.euid = static_cast<uid_t>(uid->second.get<std::uint32_t>());
    c.pid = static_cast<pid_t>(pid->second.get<std::uint32_t>());
    c.privileged = c.euid == 0 || (groupId_ && userInGroup(c.euid, *groupId_));
    c.credsKnown = true;
}

void Service::requirePrivileged(const Client& client, const char* what) const
{
    if (!client.privileged)
    {
        fail(error::notPermitted,
             std::string(what) + " needs root or membership of the group " +
                 (groupId_ ? "configured in permissions.group"
                           : "permissions.group (which does not exist)"));
    }
}

void Service::requireRoom(const Client& client) const
{
    if (client.handles >= limits_.maxHandles)
    {
        fail(error::limitExceeded,
             "the caller holds " + std::to_string(client.handles) +
                 " handles, the limit (clients.max_handles)");
    }
    if (handles_.size() >= maxTotalHandles)
    {
        fail(error::limitExceeded,
             "the daemon holds " + std::to_string(maxTotalHandles) +
                 " handles, its limit over all clients");
    }
}

std::uint64_t Service::addClamp(const std::string& owner, Client& client,
                                const AddResult& added, policies::Clamp clamp,
                                std::uint64_t arrivalNs)
{
    const HintTarget target = *registry_.targetOf(added.handle);
    const int pidfd = registry_.pidfdOf(added.handle);
    auto refuse = [&](const char* name, const std::string& message) {
        (void)registry_.release(owner, added.handle, nowUs());
        fail(name, message);
    };
    // Checked after the pidfd holds the task: if the task is still alive
    // afterwards, its number was not reused in between.
    TaskCreds creds{};
    const std::error_code credsError = taskCreds(target.pid, creds);
    if (credsError || exited(pidfd))
    {
        refuse(error::noSuchTask,
               taskName(target.pid, !target.wholeProcess) + " exited");
    }
    if (!client.privileged && !mayClamp(client.euid, creds))
    {
        refuse(error::notPermitted,
               taskName(target.pid, !target.wholeProcess) +
                   " belongs to another user; clamping it needs root or "
                   "membership of permissions.group");
    }

    const std::uint64_t handle = nextHandle_++;
    Handle h;
    h.kind = Kind::clamp;
    h.owner = owner;
    h.pid = target.pid;
    h.registryHandle = added.handle;
    h.clamp = clamp;
    try
    {
        // The registry keeps the pidfd; the watch only borrows it.
        h.watch = watchExit(handle, pidfd);
        handles_.emplace(handle, std::move(h));
    }
    catch (...)
    {
        if (h.watch)
        {
            h.watch->release();
        }
        (void)registry_.release(owner, added.handle, nowUs());
        throw;
    }
    ++client.handles;
    ++clampCount_;
    rebuildLiveClamps();
    if (hooks_.clampAdded)
    {
        hooks_.clampAdded(handle, arrivalNs);
    }
    return handle;
}

std::uint64_t Service::addLatency(
    const std::string& owner, Client& client, std::vector<unsigned> cpus,
    std::uint32_t latencyUs, pid_t pid, cppc::backend::Fd pidfd)
{
    const std::uint64_t handle = nextHandle_++;
    Handle h;
    h.kind = Kind::latency;
    h.owner = owner;
    h.pid = pid;
    h.latencyUs = latencyUs;
    if (pidfd.get() >= 0)
    {
        // The watch owns this pidfd and closes it with the handle.
        h.watch = watchExit(handle, pidfd.get());
        (void)pidfd.release();
        h.ownsPidfd = true;
    }
    const std::error_code ec = arbiter_.add(handle, cpus, latencyUs);
    if (ec)
    {
        failLatency(ec);
    }
    handles_.emplace(handle, std::move(h));
    ++client.handles;
    return handle;
}

std::unique_ptr<boost::asio::posix::stream_descriptor> Service::watchExit(
    std::uint64_t handle, int pidfd)
{
    auto watch =
        std::make_unique<boost::asio::posix::stream_descriptor>(io_, pidfd);
    watch->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [alive = std::weak_ptr<Service*>(alive_),
                       handle](const boost::system::error_code& ec) {
        auto self = alive.lock();
        if (!ec && self && *self != nullptr)
        {
            (*self)->end(handle, "task-exited", true);
        }
    });
    return watch;
}

void Service::end(std::uint64_t handle, const std::string& reason,
                  bool outsideProcessing)
{
    auto it = handles_.find(handle);
    if (it == handles_.end())
    {
        return;
    }
    Handle& h = it->second;
    if (h.watch)
    {
        boost::system::error_code ignored;
        h.watch->cancel(ignored);
        if (!h.ownsPidfd)
        {
            // The registry's pidfd: not the watch's to close.
            (void)h.watch->release();
        }
    }
    if (h.kind == Kind::clamp)
    {
        (void)registry_.release(h.owner, h.registryHandle, nowUs());
        --clampCount_;
        if (hooks_.clampEnded)
        {
            hooks_.clampEnded(handle);
        }
    }
    else
    {
        // The request is gone even when writing a CPU's value back fails;
        // restore() at stop retries what could not be written.
        (void)arbiter_.remove(handle);
    }
    const std::string owner = h.owner;
    const bool clamp = h.kind == Kind::clamp;
    auto client = clients_.find(owner);
    if (client != clients_.end() && client->second.handles > 0)
    {
        --client->second.handles;
    }
    handles_.erase(it);
    if (clamp)
    {
        rebuildLiveClamps();
    }
    try
    {
        emitHandleEnded(handle, owner, reason);
    }
    catch (const std::exception& e)
    {
        // The handle ended anyway; only the announcement is lost.
        log::warning(std::string("announcing the end of handle ") +
                     std::to_string(handle) + " failed: " + e.what());
    }
    if (outsideProcessing && hooks_.poke)
    {
        hooks_.poke();
    }
}

void Service::endAll(const std::string& reason)
{
    while (!handles_.empty())
    {
        end(handles_.begin()->first, reason, false);
    }
}

void Service::onNameOwnerChanged(sdbus::Message& msg)
{
    // sd-bus hands this callback every NameOwnerChanged that reaches the
    // connection, a unicast one from any peer included, whatever the match
    // rule's sender says: only the bus driver's word counts.
    if (msg.getSender() != busDriverName)
    {
        return;
    }
    try
    {
        std::string name;
        std::string oldOwner;
        std::string newOwner;
        msg >> name >> oldOwner >> newOwner;
        if (!newOwner.empty() || name.empty() || name.front() != ':')
        {
            return;
        }
        std::vector<std::uint64_t> owned;
        for (const auto& [handle, h] : handles_)
        {
            if (h.owner == name)
            {
                owned.push_back(handle);
            }
        }
        for (std::uint64_t handle : owned)
        {
            end(handle, "client-left", false);
        }
        (void)registry_.clientGone(name);
        clients_.erase(name);
    }
    catch (const std::exception& e)
    {
        log::warning(std::string("handling NameOwnerChanged: ") + e.what() +
                     ", ignoring");
    }
}

void Service::rebuildLiveClamps()
{
    liveClamps_.clear();
    for (const auto& [handle, h] : handles_)
    {
        if (h.kind == Kind::clamp)
        {
            const HintTarget* t = registry_.targetOf(h.registryHandle);
            if (t != nullptr)
            {
                liveClamps_.push_back({handle, *t, h.clamp});
            }
        }
    }
}

namespace
{

// Sends `error` as the reply to `result`. Never throws: a reply that cannot
// be sent is dropped (the caller left).
template <class R>
void replyError(const sdbus::Result<R>& result, const sdbus::Error& error)
{
    try
    {
        result.returnError(error);
    }
    catch (...)
    {
        // The caller cannot be answered.
    }
}

// Replies to `result` with what `fn` returns, or with the error it throws
// (see guarded()). Never throws.
template <class R, class Fn>
void replyWith(const char* method, const sdbus::Result<R>& result, Fn&& fn)
{
    try
    {
        result.returnResults(guarded(method, std::forward<Fn>(fn)));
    }
    catch (const sdbus::Error& e)
    {
        replyError(result, e);
    }
    catch (...)
    {
        // The caller cannot be answered.
    }
}

} // namespace

template <class R, class Body>
void Service::withCreds(const char* method, sdbus::Result<R>&& result,
                        Body body)
{
    std::string name;
    bool known = false;
    try
    {
        known = caller(name).credsKnown;
    }
    catch (const sdbus::Error& e)
    {
        replyError(result, e);
        return;
    }
    catch (const std::exception& e)
    {
        replyError(result, sdbus::Error(error::failed,
                                        std::string(method) + ": " + e.what()));
        return;
    }
    if (known)
    {
        replyWith(method, result,
                  [&]() { return body(name, clients_.find(name)->second); });
        return;
    }

    auto pending = std::make_shared<sdbus::Result<R>>(std::move(result));
    auto onReply =
        [this, alive = std::weak_ptr<Service*>(alive_), method, name, pending,
         body](const sdbus::Error* error,
               const std::map<std::string, sdbus::Variant>& creds) {
        auto self = alive.lock();
        if (!self || *self == nullptr)
        {
            return;
        }
        replyWith(method, *pending, [&]() {
            if (error != nullptr)
            {
                fail(error::failed,
                     "asking the bus who the caller is: " + error->getName() +
                         ": " + error->getMessage());
            }
            auto it = clients_.find(name);
            if (it == clients_.end())
            {
                fail(error::failed, "the caller left the bus");
            }
            if (!it->second.credsKnown)
            {
                setCreds(it->second, creds);
            }
            return body(name, it->second);
        });
    };
    try
    {
        (void)busDriver_->callMethodAsync("GetConnectionCredentials")
            .onInterface("org.freedesktop.DBus")
            .withTimeout(credentialsTimeout)
            .withArguments(name)
            .uponReplyInvoke(std::move(onReply));
    }
    catch (const std::exception& e)
    {
        replyError(*pending,
                   sdbus::Error(
                       error::failed,
                       std::string(method) +
                           ": asking the bus who the caller is: " + e.what()));
    }
}

void Service::checkClamp(const Client& client, policies::Clamp clamp) const
{
    if (!validClamp(clamp))
    {
        failHint(HintErrc::invalidClamp, "");
    }
    requireRoom(client);
}

void Service::SetClamp(sdbus::Result<std::uint64_t>&& result, std::uint32_t pid,
                       bool thread, std::uint16_t utilMin,
                       std::uint16_t utilMax)
{
    const std::uint64_t arrival = nowNs();
    withCreds("SetClamp", std::move(result),
              [this, pid, thread, utilMin, utilMax,
               arrival](const std::string& name, Client& c) {
        const policies::Clamp clamp{utilMin, utilMax};
        checkClamp(c, clamp);
        if (pid > static_cast<std::uint32_t>(std::numeric_limits<pid_t>::max()))
        {
            fail(error::invalidArgument, "pid out of range");
        }
        const pid_t target = pid == 0 ? c.pid : static_cast<pid_t>(pid);
        const AddResult added =
            registry_.add(name, HintTarget{target, !thread}, clamp, nowUs());
        if (added.error)
        {
            failHint(added.error, taskName(target, thread));
        }
        return addClamp(name, c, added, clamp, arrival);
    });
}

void Service::SetClampPidfd(sdbus::Result<std::uint64_t>&& result,
                            sdbus::UnixFd pidfd, std::uint16_t utilMin,
                            std::uint16_t utilMax)
{
    const std::uint64_t arrival = nowNs();
    withCreds("SetClampPidfd", std::move(result),
              [this, pidfd, utilMin, utilMax,
               arrival](const std::string& name, Client& c) {
        const policies::Clamp clamp{utilMin, utilMax};
        checkClamp(c, clamp);
        const AddResult added =
            registry_.addPidfd(name, pidfd.get(), clamp, nowUs());
        if (added.error)
        {
            failHint(added.error, "the pidfd's task");
        }
        return addClamp(name, c, added, clamp, arrival);
    });
}

void Service::SetLatency(sdbus::Result<std::uint64_t>&& result,
                         std::uint32_t pid, std::uint32_t latencyUs)
{
    withCreds("SetLatency", std::move(result),
              [this, pid, latencyUs](const std::string& name, Client& c) {
        requirePrivileged(c, "a latency request");
        requireRoom(c);
        if (pid > static_cast<std::uint32_t>(std::numeric_limits<pid_t>::max()))
        {
            fail(error::invalidArgument, "pid out of range");
        }
        const pid_t target = pid == 0 ? c.pid : static_cast<pid_t>(pid);
        cppc::backend::Fd pidfd = openPidfd(target);
        std::vector<unsigned> cpus;
        const std::error_code ec = taskAffinity(target, cpus);
        if (ec || exited(pidfd.get()))
        {
            fail(error::noSuchTask, taskName(target, false) + " exited");
        }
        return addLatency(name, c, std::move(cpus), latencyUs, target,
                          std::move(pidfd));
    });
}

void Service::SetLatencyCpus(sdbus::Result<std::uint64_t>&& result,
                             std::vector<std::uint32_t> cpus,
                             std::uint32_t latencyUs)
{
    withCreds("SetLatencyCpus", std::move(result),
              [this, cpus = std::move(cpus),
               latencyUs](const std::string& name, Client& c) {
        requirePrivileged(c, "a latency request");
        requireRoom(c);
        if (cpus.empty())
        {
            fail(error::invalidArgument, "the CPU set is empty");
        }
        if (cpus.size() > maxCpus)
        {
            fail(error::invalidArgument, "too many CPUs in the set");
        }
        std::vector<unsigned> set(cpus.begin(), cpus.end());
        return addLatency(name, c, std::move(set), latencyUs, 0,
                          cppc::backend::Fd());
    });
}

void Service::Release(const std::uint64_t& handle)
{
    guarded("Release", [&]() {
        std::string name;
        caller(name);
        auto it = handles_.find(handle);
        if (it == handles_.end() || it->second.owner != name)
        {
            fail(error::noSuchHandle, "handle " + std::to_string(handle) +
                                          " is not live or not the caller's");
        }
        end(handle, "released", false);
    });
}

std::vector<sdbus::Struct<
    std::uint32_t, std::uint16_t, std::uint16_t, std::uint16_t, std::uint32_t,
    std::uint32_t, std::string, std::int32_t,
    std::vector<sdbus::Struct<std::uint64_t, std::string, std::uint32_t,
                              std::uint16_t, std::uint16_t>>>>
    Service::GetCpuStates()
{
    return guarded("GetCpuStates", [&]() {
        std::string name;
        caller(name);
        using Active = sdbus::Struct<std::uint64_t, std::string, std::uint32_t,
                                     std::uint16_t, std::uint16_t>;
        std::vector<
            sdbus::Struct<std::uint32_t, std::uint16_t, std::uint16_t,
                          std::uint16_t, std::uint32_t, std::uint32_t,
                          std::string, std::int32_t, std::vector<Active>>>
            out;
        const std::vector<CpuView>& views = governor_.cpus();
        out.reserve(views.size());
        for (std::uint32_t cpu = 0; cpu < views.size(); ++cpu)
        {
            const CpuView& v = views[cpu];
            std::vector<Active> active;
            for (std::uint64_t handle : v.handles)
            {
                auto it = handles_.find(handle);
                if (it != handles_.end())
                {
                    const Handle& h = it->second;
                    active.emplace_back(handle, h.owner,
                                        static_cast<std::uint32_t>(h.pid),
                                        h.clamp.min, h.clamp.max);
                }
            }
            const std::optional<std::uint32_t> latency =
                arbiter_.effective(cpu);
            out.emplace_back(cpu, v.util, v.clamp.min, v.clamp.max,
                             v.requestedPerf, v.deliveredPerf,
                             std::string(policies::reasonName(v.reason)),
                             latency ? static_cast<std::int32_t>(*latency) : -1,
                             std::move(active));
        }
        return out;
    });
}

std::vector<
    sdbus::Struct<std::uint64_t, std::string, std::string, std::uint32_t,
                  std::uint16_t, std::uint16_t, std::uint32_t>>
    Service::ListHandles()
{
    return guarded("ListHandles", [&]() {
        std::string name;
        caller(name);
        std::vector<sdbus::Struct<std::uint64_t, std::string, std::string,
                                  std::uint32_t, std::uint16_t, std::uint16_t,
                                  std::uint32_t>>
            out;
        for (const auto& [handle, h] : handles_)
        {
            out.emplace_back(
                handle,
                std::string(h.kind == Kind::clamp ? "clamp" : "latency"),
                h.owner, static_cast<std::uint32_t>(h.pid), h.clamp.min,
                h.clamp.max, h.latencyUs);
        }
        return out;
    });
}

void Service::Reload(sdbus::Result<std::vector<std::string>>&& result)
{
    withCreds("Reload", std::move(result),
              [this](const std::string&, Client& c) {
        requirePrivileged(c, "reloading the policy");
        return hooks_.reload();
    });
}

std::map<std::string, std::uint64_t> Service::GetStatistics()
{
    return guarded("GetStatistics", [&]() {
        std::string name;
        caller(name);
        return hooks_.statistics();
    });
}

std::string Service::Backend()
{
    return guarded("Backend", [&]() { return info_.backend; });
}

std::string Service::Policy()
{
    return guarded("Policy", [&]() { return policyName_; });
}

std::uint32_t Service::CpuCount()
{
    return guarded("CpuCount", [&]() {
        return static_cast<std::uint32_t>(governor_.cpus().size());
    });
}

std::uint32_t Service::SamplingPeriodUs()
{
    return guarded("SamplingPeriodUs", [&]() { return samplingPeriodUs_; });
}

std::uint32_t Service::ClampCount()
{
    return guarded("ClampCount",
                   [&]() { return static_cast<std::uint32_t>(clampCount_); });
}

std::uint32_t Service::LatencyCount()
{
    return guarded("LatencyCount", [&]() {
        return static_cast<std::uint32_t>(handles_.size() - clampCount_);
    });
}

std::string Service::Version()
{
    return guarded("Version", [&]() { return info_.version; });
}

} // namespace cppcgov::daemon
