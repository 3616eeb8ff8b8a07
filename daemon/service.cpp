// SPDX-License-Identifier: Apache-2.0
#include "service.hpp"

#include "daemon/log.hpp"
#include "daemon/service_errors.hpp"
#include "daemon/task_info.hpp"
#include "lib/monotonic_clock.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <system_error>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

namespace error = cppcgov::dbus::error;

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

// The target of SetClamp or SetLatency: `pid`, 0 for the caller's process.
pid_t targetPid(std::uint32_t pid, const Credentials& c)
{
    if (pid > static_cast<std::uint32_t>(std::numeric_limits<pid_t>::max()))
    {
        fail(error::invalidArgument, "pid out of range");
    }
    return pid == 0 ? c.pid : static_cast<pid_t>(pid);
}

} // namespace

Service::Service(sdbus::IConnection& bus, boost::asio::io_context& io,
                 LatencyArbiter& arbiter, const Machine& machine,
                 TickLoop& tick, ServiceInfo info, ServiceHooks hooks) :
    AdaptorInterfaces(bus, cppcgov::dbus::objectPath),
    bus_(bus), arbiter_(arbiter), machine_(machine), tick_(tick),
    energy_(tick.cpuCount()), info_(std::move(info)), hooks_(std::move(hooks)),
    exits_(io, [this](std::uint64_t handle) { taskExited(handle); }),
    alive_(std::make_shared<Service*>(this)), worker_(io)
{
    busDriver_ =
        sdbus::createProxy(bus_, busDriverName, "/org/freedesktop/DBus");
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
    table_.setLimits(config.clients);
    policyName_ = std::string(policies::policyName(config.defaults.kind));
    samplingPeriodUs_ = config.samplingPeriodUs;
    sources_ = config.sources;
    if (capacity_.empty())
    {
        for (const policies::CpuCaps& c : machine_.topology().cpus)
        {
            capacity_.push_back(c.highest);
        }
    }
    kinds_ = policyKinds(config, machine_);
    domainOf_ = domainIndices(machine_.topology());
    if (config.samplingPeriodUs != historyPeriodUs_)
    {
        // Entries of another period would be misread as this one's: the
        // old period's go in before the reset drops them.
        takeUtilization();
        history_.reset(tick_.cpuCount(), config.samplingPeriodUs);
        historyPeriodUs_ = config.samplingPeriodUs;
    }
    if (!configured_)
    {
        // At start-up, before the loop runs: nothing waits for this.
        configured_ = true;
        setGroup(config.group, groupByName(config.group));
        return;
    }
    // At reload, on the loop: the user database is asked on the worker, and
    // the group the daemon runs with stays until it answers.
    worker_.run([name = config.group]() { return groupByName(name); },
                [this, alive = std::weak_ptr<Service*>(alive_),
                 name = config.group](std::optional<gid_t> gid) {
        auto self = alive.lock();
        if (self && *self != nullptr)
        {
            setGroup(name, gid);
        }
    });
}

void Service::setGroup(const std::string& name, std::optional<gid_t> gid)
{
    groupId_ = gid;
    groupName_ = name;
    if (!groupId_)
    {
        // A group that does not exist has no members: only root is
        // privileged.
        log::warning("the group '" + name +
                     "' (permissions.group) does not exist: only root may "
                     "set latency requests, reload and clamp other users' "
                     "tasks");
    }
    // Privileges may have changed: callers are asked again.
    table_.forgetCredentials();
}

void Service::announcePolicy()
{
    emitPolicyChanged(policyName_, sources_);
    getObject().emitPropertiesChangedSignal(
        cppcgov::dbus::interfaceName,
        {"Policy", "SamplingPeriodUs", "PendingRestart"});
}

void Service::setPendingRestart(std::string note)
{
    pendingRestart_ = std::move(note);
}

std::string Service::caller(bool learn)
{
    const sdbus::Message* msg = getObject().getCurrentlyProcessedMessage();
    if (msg == nullptr)
    {
        fail(error::failed, "no message is being processed");
    }
    std::string name = msg->getSender();
    if (name.empty())
    {
        fail(error::invalidArgument, "the call has no sender");
    }
    if (const std::error_code ec = table_.takeCall(name, nowUs()))
    {
        failHandle(ec, "the call", "");
    }
    if (learn && table_.credentials(name) == nullptr &&
        asking_.insert(name).second)
    {
        // Its calls count against its user once the bus driver says who
        // it is; until then against the connection only.
        askCredentials(name, [this, name](const std::string&) {
            asking_.erase(name);
        });
    }
    return name;
}

bool Service::privilegedBy(uid_t uid,
                           const std::vector<std::uint32_t>& groups) const
{
    return uid == 0 ||
           (groupId_ &&
            std::find(groups.begin(), groups.end(), *groupId_) != groups.end());
}

void Service::askCredentials(
    const std::string& name,
    const std::function<void(const std::string&)>& then)
{
    auto onReply =
        [this, alive = std::weak_ptr<Service*>(alive_), name,
         then](sdbus::MethodReply& reply, const sdbus::Error* error) {
        auto self = alive.lock();
        if (!self || *self == nullptr)
        {
            return;
        }
        try
        {
            if (error != nullptr)
            {
                fail(error::failed,
                     "asking the bus who the caller is: " + error->getName() +
                         ": " + error->getMessage());
            }
            // Replies are matched by serial: only the bus driver's counts.
            if (reply.getSender() != busDriverName)
            {
                fail(error::failed,
                     "the answer to who the caller is did not come from the "
                     "bus driver");
            }
            std::map<std::string, sdbus::Variant> creds;
            reply >> creds;
            takeCredentials(name, creds, then);
        }
        catch (const sdbus::Error& e)
        {
            then(e.getMessage());
        }
        catch (const std::exception& e)
        {
            then(std::string("asking the bus who the caller is: ") + e.what());
        }
    };
    sdbus::MethodCall call = busDriver_->createMethodCall(
        "org.freedesktop.DBus", "GetConnectionCredentials");
    call << name;
    (void)busDriver_->callMethod(call, std::move(onReply), credentialsTimeout);
}

void Service::takeCredentials(
    const std::string& name, const std::map<std::string, sdbus::Variant>& creds,
    const std::function<void(const std::string&)>& then)
{
    // Only what the bus driver vouches for (the connection's user, process
    // and groups as it connected): nothing read from /proc, whose PID may
    // have been reused since.
    const auto uid = creds.find("UnixUserID");
    const auto pid = creds.find("ProcessID");
    if (uid == creds.end() || pid == creds.end())
    {
        fail(error::failed,
             "the bus did not say which user and process the caller is");
    }
    Credentials c;
    c.uid = static_cast<uid_t>(uid->second.get<std::uint32_t>());
    c.pid = static_cast<pid_t>(pid->second.get<std::uint32_t>());
    auto record = [this, name, then](const Credentials& known) {
        if (!table_.connected(name))
        {
            then("the caller left the bus");
            return;
        }
        table_.setCredentials(name, known);
        then("");
    };
    const auto groups = creds.find("UnixGroupIDs");
    if (groups != creds.end() || c.uid == 0 || !groupId_)
    {
        c.privileged = privilegedBy(
            c.uid, groups != creds.end()
                       ? groups->second.get<std::vector<std::uint32_t>>()
                       : std::vector<std::uint32_t>());
        record(c);
        return;
    }
    // No groups from the bus driver: the user database, on the worker.
    worker_.run([uid = c.uid,
                 gid = *groupId_]() { return userInGroup(uid, gid); },
                [this, alive = std::weak_ptr<Service*>(alive_), c,
                 record](bool member) mutable {
        auto self = alive.lock();
        if (!self || *self == nullptr)
        {
            return;
        }
        c.privileged = member;
        record(c);
        // Replies sent from here are outside bus processing.
        if (hooks_.poke)
        {
            hooks_.poke();
        }
    });
}

std::uint64_t Service::added(std::uint64_t handle, std::uint64_t arrivalNs)
{
    const Handle* h = table_.find(handle);
    if (h->pidfd)
    {
        // Unwatched, the handle could outlive its task: not added.
        if (const std::error_code ec = exits_.add(h->pidfd.get(), handle))
        {
            const std::optional<Ended> ended =
                table_.end(handle, EndReason::released);
            if (ended && ended->kind == HandleKind::latency)
            {
                (void)arbiter_.remove(handle);
            }
            if (ended && ended->kind == HandleKind::energy &&
                !energy_.remove(handle))
            {
                energyChanged();
            }
            fail(error::failed,
                 "watching the task for its exit: " + ec.message());
        }
    }
    if (h->kind == HandleKind::clamp && hooks_.clampAdded)
    {
        hooks_.clampAdded(handle, arrivalNs);
    }
    started_.push_back(handle);
    return handle;
}

void Service::announceStarted(bool outsideProcessing)
{
    if (started_.empty())
    {
        return;
    }
    std::vector<std::uint64_t> handles;
    handles.swap(started_);
    for (const std::uint64_t handle : handles)
    {
        // A handle that already ended again (its task exited first) is
        // not announced: its HandleEnded has gone out.
        const Handle* h = table_.find(handle);
        if (h == nullptr)
        {
            continue;
        }
        try
        {
            emitHandleStarted(handle, handleName(*h), h->owner,
                              static_cast<std::uint32_t>(h->target.pid),
                              h->clamp.min, h->clamp.max, h->latencyUs);
        }
        catch (const std::exception& e)
        {
            log::warning(std::string("announcing handle ") +
                         std::to_string(handle) + " failed: " + e.what());
        }
    }
    if (outsideProcessing && hooks_.poke)
    {
        hooks_.poke();
    }
}

void Service::taskExited(std::uint64_t handle)
{
    // A key of a handle that already ended (its exit raced its end) finds
    // nothing: handle numbers are never reused.
    if (const std::optional<Ended> ended =
            table_.end(handle, EndReason::taskExited))
    {
        finish(*ended, true);
    }
}

void Service::finish(const Ended& ended, bool outsideProcessing)
{
    // The watch of the handle's task ends when `ended` closes its pidfd.
    if (ended.kind == HandleKind::clamp)
    {
        if (hooks_.clampEnded)
        {
            hooks_.clampEnded(ended.handle);
        }
    }
    else if (ended.kind == HandleKind::energy)
    {
        // Nothing outside memory: removing cannot fail for a live one.
        if (!energy_.remove(ended.handle))
        {
            energyChanged();
        }
    }
    else if (const std::error_code ec = arbiter_.remove(ended.handle))
    {
        // The request is gone; a CPU whose value could not be written back
        // stays the arbiter's, and stopping the daemon tries it again.
        for (const unsigned cpu : ended.cpus)
        {
            if (arbiter_.saved().contains(cpu) && !arbiter_.effective(cpu))
            {
                log::error(
                    "ending latency handle " + std::to_string(ended.handle) +
                    ": cpu" + std::to_string(cpu) +
                    "'s resume latency could "
                    "not be put back in '" +
                    latencyAttribute(info_.root, cpu).string() +
                    "': " + ec.message() + " (retried at stop)");
            }
        }
    }
    try
    {
        emitHandleEnded(ended.handle, ended.owner,
                        std::string(endReasonName(ended.reason)));
    }
    catch (const std::exception& e)
    {
        // The handle ended anyway; only the announcement is lost.
        log::warning(std::string("announcing the end of handle ") +
                     std::to_string(ended.handle) + " failed: " + e.what());
    }
    if (outsideProcessing && hooks_.poke)
    {
        hooks_.poke();
    }
}

void Service::endAll()
{
    for (const Ended& ended : table_.endAll())
    {
        finish(ended, false);
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
        for (const Ended& ended : table_.connectionGone(name))
        {
            finish(ended, false);
        }
    }
    catch (const std::exception& e)
    {
        log::warning(std::string("handling NameOwnerChanged: ") + e.what() +
                     ", ignoring");
    }
}

template <class... R, class Body>
void Service::withCreds(const char* method, sdbus::Result<R...>&& result,
                        Body body)
{
    std::string name;
    try
    {
        name = guarded(method, [this]() { return caller(false); });
    }
    catch (const sdbus::Error& e)
    {
        replyError(result, e);
        return;
    }
    if (const Credentials* c = table_.credentials(name))
    {
        replyWith(method, result, [&]() { return body(name, *c); });
        announceStarted(false);
        return;
    }
    auto pending = std::make_shared<sdbus::Result<R...>>(std::move(result));
    auto then =
        [this, method, name, pending, body](const std::string& problem) {
        replyWith(method, *pending, [&]() {
            if (!problem.empty())
            {
                fail(error::failed, problem);
            }
            const Credentials* c = table_.credentials(name);
            if (c == nullptr)
            {
                fail(error::failed, "the caller left the bus");
            }
            return body(name, *c);
        });
        announceStarted(true);
    };
    try
    {
        askCredentials(name, std::move(then));
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

void Service::SetClamp(sdbus::Result<std::uint64_t>&& result, std::uint32_t pid,
                       bool thread, std::uint16_t utilMin,
                       std::uint16_t utilMax)
{
    const std::uint64_t arrival = nowNs();
    withCreds("SetClamp", std::move(result),
              [this, pid, thread, utilMin, utilMax,
               arrival](const std::string& name, const Credentials& c) {
        const pid_t target = targetPid(pid, c);
        const AddResult added =
            table_.addClamp(name, {target, !thread}, {utilMin, utilMax});
        if (added.error)
        {
            const std::string what = taskName(target, thread);
            failHandle(added.error, what,
                       what + " belongs to another user; " +
                           needsPrivilege("clamping it", groupName_,
                                          groupId_.has_value()));
        }
        return this->added(added.handle, arrival);
    });
}

void Service::SetClampPidfd(sdbus::Result<std::uint64_t>&& result,
                            sdbus::UnixFd pidfd, std::uint16_t utilMin,
                            std::uint16_t utilMax)
{
    const std::uint64_t arrival = nowNs();
    withCreds("SetClampPidfd", std::move(result),
              [this, pidfd, utilMin, utilMax,
               arrival](const std::string& name, const Credentials&) {
        const AddResult added =
            table_.addClampPidfd(name, pidfd.get(), {utilMin, utilMax});
        if (added.error)
        {
            failHandle(added.error, "the pidfd's task",
                       "the pidfd's task belongs to another user; " +
                           needsPrivilege("clamping it", groupName_,
                                          groupId_.has_value()));
        }
        return this->added(added.handle, arrival);
    });
}

void Service::SetLatency(sdbus::Result<std::uint64_t>&& result,
                         std::uint32_t pid, std::uint32_t latencyUs)
{
    withCreds("SetLatency", std::move(result),
              [this, pid,
               latencyUs](const std::string& name, const Credentials& c) {
        const pid_t target = targetPid(pid, c);
        return addLatency(name, target, latencyUs, {});
    });
}

void Service::SetLatencyCpus(sdbus::Result<std::uint64_t>&& result,
                             std::vector<std::uint32_t> cpus,
                             std::uint32_t latencyUs)
{
    withCreds("SetLatencyCpus", std::move(result),
              [this, cpus = std::move(cpus),
               latencyUs](const std::string& name, const Credentials&) {
        if (cpus.empty())
        {
            fail(error::invalidArgument, "the CPU set is empty");
        }
        if (cpus.size() > cppc::maxCpus)
        {
            fail(error::invalidArgument, "too many CPUs in the set");
        }
        return addLatency(name, 0, latencyUs, {cpus.begin(), cpus.end()});
    });
}

std::uint64_t Service::addLatency(const std::string& name, pid_t pid,
                                  std::uint32_t latencyUs,
                                  std::vector<unsigned> cpus)
{
    const AddResult added =
        table_.addLatency(name, pid, latencyUs, std::move(cpus));
    if (added.error)
    {
        failHandle(added.error, taskName(pid, false),
                   needsPrivilege("a latency request", groupName_,
                                  groupId_.has_value()));
    }
    const std::error_code ec =
        arbiter_.add(added.handle, table_.find(added.handle)->cpus, latencyUs);
    if (ec)
    {
        (void)table_.end(added.handle, EndReason::released);
        failLatency(ec);
    }
    return this->added(added.handle, 0);
}

namespace
{

policies::EnergyPreference preferenceValue(const std::string& text)
{
    if (text == "performance")
    {
        return policies::EnergyPreference::performance;
    }
    if (text == "efficiency")
    {
        return policies::EnergyPreference::efficiency;
    }
    // Bounded: a caller's string is quoted, never echoed whole.
    const std::string shown =
        text.size() > 64 ? text.substr(0, 64) + "..." : text;
    fail(error::invalidArgument, "preference '" + shown +
                                     "' is not one of: performance, "
                                     "efficiency");
}

} // namespace

void Service::SetEnergyPreference(sdbus::Result<std::uint64_t>&& result,
                                  std::uint32_t pid, std::string preference)
{
    withCreds("SetEnergyPreference", std::move(result),
              [this, pid, preference = std::move(preference)](
                  const std::string& name, const Credentials& c) {
        const pid_t target = targetPid(pid, c);
        return addEnergy(name, target, preference, {});
    });
}

void Service::SetEnergyPreferenceCpus(sdbus::Result<std::uint64_t>&& result,
                                      std::vector<std::uint32_t> cpus,
                                      std::string preference)
{
    withCreds("SetEnergyPreferenceCpus", std::move(result),
              [this, cpus = std::move(cpus),
               preference = std::move(preference)](const std::string& name,
                                                   const Credentials&) {
        if (cpus.empty())
        {
            fail(error::invalidArgument, "the CPU set is empty");
        }
        if (cpus.size() > cppc::maxCpus)
        {
            fail(error::invalidArgument, "too many CPUs in the set");
        }
        const std::size_t count = tick_.cpuCount();
        for (const std::uint32_t cpu : cpus)
        {
            if (cpu >= count)
            {
                fail(error::invalidArgument,
                     "CPU " + std::to_string(cpu) +
                         " is not governed (the daemon governs CPUs 0-" +
                         std::to_string(count - 1) + ")");
            }
        }
        return addEnergy(name, 0, preference, {cpus.begin(), cpus.end()});
    });
}

std::uint64_t Service::addEnergy(const std::string& name, pid_t pid,
                                 const std::string& preference,
                                 std::vector<unsigned> cpus)
{
    const policies::EnergyPreference value = preferenceValue(preference);
    const AddResult added = table_.addEnergy(name, pid, value, std::move(cpus));
    if (added.error)
    {
        const std::string what = taskName(pid, false);
        failHandle(added.error, what,
                   pid == 0
                       ? needsPrivilege("an energy preference on a CPU set",
                                        groupName_, groupId_.has_value())
                       : what + " belongs to another user; " +
                             needsPrivilege("an energy preference for it",
                                            groupName_, groupId_.has_value()));
    }
    std::vector<unsigned> machineCpus;
    const Handle* h = table_.find(added.handle);
    if (pid == 0)
    {
        machineCpus = h->cpus;
    }
    else
    {
        // The task's affinity is the host's numbering.
        const Machine& machine = machine_;
        for (const unsigned host : h->cpus)
        {
            const std::optional<std::uint32_t> cpu = machine.cpuOfHostCpu(host);
            if (cpu && *cpu < tick_.cpuCount())
            {
                machineCpus.push_back(*cpu);
            }
        }
    }
    if (const std::error_code ec =
            energy_.add(added.handle, machineCpus, value))
    {
        (void)table_.end(added.handle, EndReason::released);
        fail(error::invalidArgument,
             machineCpus.empty()
                 ? taskName(pid, false) + " may run on no governed CPU"
                 : "the energy preference was refused: " + ec.message());
    }
    energyChanged();
    return this->added(added.handle, 0);
}

void Service::energyChanged()
{
    if (hooks_.energyChanged)
    {
        hooks_.energyChanged(energy_.perCpu());
    }
}

void Service::Release(const std::uint64_t& handle)
{
    guarded("Release", [&]() {
        const std::string name = caller();
        Ended ended;
        if (table_.release(name, handle, ended))
        {
            fail(error::noSuchHandle, "handle " + std::to_string(handle) +
                                          " is not live or not the caller's");
        }
        finish(ended, false);
    });
}

std::vector<sdbus::Struct<
    std::uint32_t, std::uint16_t, std::uint16_t, std::uint16_t, std::uint32_t,
    std::uint32_t, std::string, std::int32_t,
    std::vector<sdbus::Struct<std::uint64_t, std::string, std::uint32_t,
                              std::uint16_t, std::uint16_t>>,
    std::string>>
    Service::GetCpuStates()
{
    return guarded("GetCpuStates", [&]() {
        (void)caller();
        using Active = sdbus::Struct<std::uint64_t, std::string, std::uint32_t,
                                     std::uint16_t, std::uint16_t>;
        std::vector<sdbus::Struct<std::uint32_t, std::uint16_t, std::uint16_t,
                                  std::uint16_t, std::uint32_t, std::uint32_t,
                                  std::string, std::int32_t,
                                  std::vector<Active>, std::string>>
            out;
        const std::vector<CpuView>& views = tick_.latest().cpus;
        out.reserve(views.size());
        for (std::uint32_t cpu = 0; cpu < views.size(); ++cpu)
        {
            const CpuView& v = views[cpu];
            std::vector<Active> active;
            for (std::uint64_t handle : v.handles)
            {
                if (const Handle* h = table_.find(handle))
                {
                    active.emplace_back(
                        handle, h->owner,
                        static_cast<std::uint32_t>(h->target.pid), h->clamp.min,
                        h->clamp.max);
                }
            }
            const std::optional<std::uint32_t> latency =
                arbiter_.effective(cpu);
            out.emplace_back(cpu, v.util, v.clamp.min, v.clamp.max,
                             v.requestedPerf, v.deliveredPerf,
                             std::string(policies::reasonName(v.reason)),
                             latency ? static_cast<std::int32_t>(*latency) : -1,
                             std::move(active), v.degraded);
        }
        return out;
    });
}

std::vector<sdbus::Struct<std::uint32_t, std::uint32_t, std::uint32_t,
                          std::int32_t, bool, std::uint32_t>>
    Service::GetCpuControls()
{
    return guarded("GetCpuControls", [&]() {
        (void)caller();
        std::vector<sdbus::Struct<std::uint32_t, std::uint32_t, std::uint32_t,
                                  std::int32_t, bool, std::uint32_t>>
            out;
        const std::vector<CpuView>& views = tick_.latest().cpus;
        out.reserve(views.size());
        for (std::uint32_t cpu = 0; cpu < views.size(); ++cpu)
        {
            const CpuView& v = views[cpu];
            out.emplace_back(cpu, v.requestedMin, v.requestedMax,
                             v.epp ? std::int32_t{*v.epp} : -1, v.autonomous,
                             v.activityWindowUs.value_or(0));
        }
        return out;
    });
}

std::vector<sdbus::Struct<
    std::uint32_t, std::uint32_t, std::int32_t, std::string, std::uint32_t,
    std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>>
    Service::GetCpuInfo()
{
    return guarded("GetCpuInfo", [&]() {
        (void)caller();
        const Machine& machine = machine_;
        const policies::Topology& topology = machine.topology();
        std::vector<sdbus::Struct<std::uint32_t, std::uint32_t, std::int32_t,
                                  std::string, std::uint32_t, std::uint32_t,
                                  std::uint32_t, std::uint32_t, std::uint32_t,
                                  std::uint32_t>>
            out;
        out.reserve(topology.cpus.size());
        for (std::uint32_t cpu = 0; cpu < topology.cpus.size(); ++cpu)
        {
            const policies::CpuCaps& c = topology.cpus[cpu];
            const std::optional<std::uint32_t> psd = machine.psdDomain(cpu);
            out.emplace_back(cpu, domainOf_[cpu],
                             psd ? static_cast<std::int32_t>(*psd) : -1,
                             std::string(policies::policyName(kinds_[cpu])),
                             c.lowest, c.lowestNonlinear, c.nominal, c.highest,
                             c.lowestKhz, c.nominalKhz);
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
        (void)caller();
        std::vector<sdbus::Struct<std::uint64_t, std::string, std::string,
                                  std::uint32_t, std::uint16_t, std::uint16_t,
                                  std::uint32_t>>
            out;
        out.reserve(table_.size());
        for (const auto& [handle, h] : table_.handles())
        {
            out.emplace_back(handle, handleName(h), h.owner,
                             static_cast<std::uint32_t>(h.target.pid),
                             h.clamp.min, h.clamp.max, h.latencyUs);
        }
        return out;
    });
}

void Service::Reload(sdbus::Result<std::vector<std::string>>&& result)
{
    withCreds("Reload", std::move(result),
              [this](const std::string&, const Credentials& c) {
        if (!c.privileged)
        {
            fail(error::notPermitted,
                 needsPrivilege("reloading the policy", groupName_,
                                groupId_.has_value()));
        }
        return hooks_.reload();
    });
}

std::map<std::string, std::uint64_t> Service::GetStatistics()
{
    return guarded("GetStatistics", [&]() {
        (void)caller();
        return hooks_.statistics();
    });
}

std::string Service::GetMetrics()
{
    return guarded("GetMetrics", [&]() {
        (void)caller();
        return hooks_.metrics();
    });
}

std::string Service::Backend()
{
    return guarded("Backend", [&]() { return info_.backend; });
}

std::vector<std::string> Service::Controls()
{
    return guarded("Controls",
                   [&]() { return controlList(machine_.controls()); });
}

std::string Service::SamplingSource()
{
    return guarded("SamplingSource", [&]() { return info_.samplingSource; });
}

std::string Service::SamplingSourceReason()
{
    return guarded("SamplingSourceReason",
                   [&]() { return info_.samplingReason; });
}

std::string Service::Policy()
{
    return guarded("Policy", [&]() { return policyName_; });
}

std::uint32_t Service::CpuCount()
{
    return guarded("CpuCount", [&]() {
        return static_cast<std::uint32_t>(tick_.cpuCount());
    });
}

std::uint32_t Service::SamplingPeriodUs()
{
    return guarded("SamplingPeriodUs", [&]() { return samplingPeriodUs_; });
}

std::uint32_t Service::ClampCount()
{
    return guarded("ClampCount",
                   [&]() { return static_cast<std::uint32_t>(clampCount()); });
}

std::uint32_t Service::LatencyCount()
{
    return guarded("LatencyCount", [&]() {
        return static_cast<std::uint32_t>(latencyCount());
    });
}

std::uint32_t Service::EnergyPreferenceCount()
{
    return guarded("EnergyPreferenceCount",
                   [&]() { return static_cast<std::uint32_t>(energyCount()); });
}

std::string Service::Version()
{
    return guarded("Version", [&]() { return info_.version; });
}

std::string Service::PendingRestart()
{
    return guarded("PendingRestart", [&]() { return pendingRestart_; });
}

void Service::takeUtilization()
{
    tick_.drainUtilization(
        [this](std::uint64_t nowUs, std::span<const std::uint16_t> util) {
        history_.record(nowUs, util);
    });
}

Service::HeadroomReply Service::headroomOf(
    const char* method, const std::string& name, uid_t uid,
    const std::vector<std::uint32_t>& cpus, std::uint32_t windowMs,
    const std::string& calculation)
{
    if (windowMs < headroomMinWindowMs || windowMs > headroomMaxWindowMs)
    {
        fail(error::invalidArgument,
             "window_ms " + std::to_string(windowMs) + " is outside " +
                 std::to_string(headroomMinWindowMs) + ".." +
                 std::to_string(headroomMaxWindowMs) + " ms");
    }
    const std::optional<HeadroomCalculation> calc =
        parseHeadroomCalculation(calculation);
    if (!calc)
    {
        fail(error::invalidArgument, "calculation '" + calculation +
                                         "' is neither 'min' nor 'average'");
    }
    takeUtilization();
    if (history_.size() == 0)
    {
        fail(error::failed,
             std::string(method) + ": no tick recorded yet; retry after one "
                                   "sampling period");
    }
    const HeadroomVerdict verdict = headroomLimiter_.admit(name, uid, nowUs());
    if (!verdict.admitted)
    {
        const std::uint64_t retryMs = (verdict.retryInUs + 999) / 1000;
        fail(error::limitExceeded,
             verdict.byUser
                 ? "the user's headroom queries exceed " +
                       std::to_string(headroomLimiter_.perUser()) +
                       " per second over all of its connections; retry in " +
                       std::to_string(retryMs) + " ms"
                 : "a connection may ask for headroom once every " +
                       std::to_string(headroomLimiter_.minIntervalUs() / 1000) +
                       " ms (HeadroomMinIntervalMs); retry in " +
                       std::to_string(retryMs) + " ms");
    }
    const HeadroomResult r = headroom(history_, cpus, capacity_,
                                      std::uint64_t{windowMs} * 1000, *calc);
    std::vector<sdbus::Struct<std::uint32_t, double>> perCpu;
    perCpu.reserve(r.cpus.size());
    for (const CpuHeadroom& c : r.cpus)
    {
        perCpu.emplace_back(c.cpu, c.headroom);
    }
    return {r.headroom, std::move(perCpu),
            static_cast<std::uint32_t>(r.coveredUs / 1000)};
}

void Service::GetCpuHeadroom(
    sdbus::Result<double, std::vector<sdbus::Struct<std::uint32_t, double>>,
                  std::uint32_t>&& result,
    std::vector<std::uint32_t> cpus, std::uint32_t windowMs,
    std::string calculation)
{
    withCreds("GetCpuHeadroom", std::move(result),
              [this, cpus = std::move(cpus), windowMs,
               calculation = std::move(calculation)](const std::string& name,
                                                     const Credentials& c) {
        const auto count = static_cast<std::uint32_t>(tick_.cpuCount());
        if (cpus.empty())
        {
            fail(error::invalidArgument, "the CPU set is empty");
        }
        std::vector<std::uint32_t> set;
        set.reserve(std::min<std::size_t>(cpus.size(), count));
        std::vector<bool> seen(count, false);
        for (const std::uint32_t cpu : cpus)
        {
            if (cpu >= count)
            {
                fail(error::invalidArgument,
                     "cpu " + std::to_string(cpu) +
                         " is not one of the machine's (0.." +
                         std::to_string(count - 1) + ")");
            }
            if (!seen[cpu])
            {
                seen[cpu] = true;
                set.push_back(cpu);
            }
        }
        std::sort(set.begin(), set.end());
        return headroomOf("GetCpuHeadroom", name, c.uid, set, windowMs,
                          calculation);
    });
}

void Service::GetTaskHeadroom(
    sdbus::Result<double, std::vector<sdbus::Struct<std::uint32_t, double>>,
                  std::uint32_t>&& result,
    std::uint32_t pid, std::uint32_t windowMs, std::string calculation)
{
    withCreds("GetTaskHeadroom", std::move(result),
              [this, pid, windowMs, calculation = std::move(calculation)](
                  const std::string& name, const Credentials& c) {
        const pid_t target = targetPid(pid, c);
        // One system call, no I/O: fine on the loop. Anyone may read any
        // task's affinity.
        std::vector<unsigned> hostCpus;
        if (const std::error_code ec = taskAffinity(target, hostCpus))
        {
            if (ec == std::errc::no_such_process)
            {
                fail(error::noSuchTask, "no task " + std::to_string(target));
            }
            fail(error::failed,
                 "reading the affinity of task " + std::to_string(target) +
                     ": " + ec.message());
        }
        const Machine& machine = machine_;
        const auto count = static_cast<std::uint32_t>(tick_.cpuCount());
        std::vector<bool> seen(count, false);
        std::vector<std::uint32_t> set;
        for (const unsigned host : hostCpus)
        {
            const std::optional<std::uint32_t> cpu = machine.cpuOfHostCpu(host);
            if (cpu && *cpu < count && !seen[*cpu])
            {
                seen[*cpu] = true;
                set.push_back(*cpu);
            }
        }
        if (set.empty())
        {
            fail(error::failed,
                 "none of the CPUs task " + std::to_string(target) +
                     " may run on is one of the machine's");
        }
        std::sort(set.begin(), set.end());
        return headroomOf("GetTaskHeadroom", name, c.uid, set, windowMs,
                          calculation);
    });
}

std::uint32_t Service::HeadroomMinIntervalMs()
{
    return guarded("HeadroomMinIntervalMs", [&]() {
        return static_cast<std::uint32_t>(
            headroomLimiter_.minIntervalUs() / 1000);
    });
}

} // namespace cppcgov::daemon
