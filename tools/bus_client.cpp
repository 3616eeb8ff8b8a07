// SPDX-License-Identifier: Apache-2.0
#include "bus_client.hpp"

#include "poll_ready.hpp"

#include <poll.h>

#include <cerrno>
#include <map>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace cppcgov::tools
{
namespace
{

using Properties = std::map<std::string, sdbus::Variant>;

template <class T>
T property(const Properties& props, const std::string& name)
{
    const auto it = props.find(name);
    if (it == props.end() || !it->second.containsValueOfType<T>())
    {
        throw std::runtime_error("the daemon's property '" + name +
                                 "' is missing or not of the contract's type");
    }
    return it->second.get<T>();
}

// Milliseconds for poll(2) from now until `when`, rounded up so that the
// wait never ends early; 0 when it has passed.
int msUntil(std::chrono::nanoseconds left)
{
    if (left <= std::chrono::nanoseconds::zero())
    {
        return 0;
    }
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
}

} // namespace

GovernorProxy::GovernorProxy(sdbus::IConnection& connection) :
    ProxyInterfaces(connection, dbus::serviceName, dbus::objectPath)
{
    registerProxy();
}

GovernorProxy::~GovernorProxy()
{
    unregisterProxy();
}

DaemonInfo GovernorProxy::daemonInfo()
{
    Properties props;
    getProxy()
        .callMethod("GetAll")
        .onInterface("org.freedesktop.DBus.Properties")
        .withArguments(std::string(dbus::interfaceName))
        .storeResultsTo(props);
    DaemonInfo info;
    info.backend = property<std::string>(props, "Backend");
    info.policy = property<std::string>(props, "Policy");
    info.cpuCount = property<std::uint32_t>(props, "CpuCount");
    info.samplingPeriodUs = property<std::uint32_t>(props, "SamplingPeriodUs");
    info.samplingSource = property<std::string>(props, "SamplingSource");
    info.samplingReason = property<std::string>(props, "SamplingSourceReason");
    info.clampCount = property<std::uint32_t>(props, "ClampCount");
    info.latencyCount = property<std::uint32_t>(props, "LatencyCount");
    info.version = property<std::string>(props, "Version");
    info.controls = property<std::vector<std::string>>(props, "Controls");
    return info;
}

std::vector<CpuState> GovernorProxy::cpuStates()
{
    std::vector<CpuState> states;
    for (const auto& s : GetCpuStates())
    {
        CpuState c;
        c.cpu = std::get<0>(s);
        c.util = std::get<1>(s);
        c.clampMin = std::get<2>(s);
        c.clampMax = std::get<3>(s);
        c.requestedPerf = std::get<4>(s);
        c.deliveredPerf = std::get<5>(s);
        c.reason = std::get<6>(s);
        if (const std::int32_t latency = std::get<7>(s); latency >= 0)
        {
            c.latencyLimitUs = static_cast<std::uint32_t>(latency);
        }
        for (const auto& h : std::get<8>(s))
        {
            c.handles.push_back({std::get<0>(h), std::get<1>(h), std::get<2>(h),
                                 std::get<3>(h), std::get<4>(h)});
        }
        c.degraded = std::get<9>(s);
        states.push_back(std::move(c));
    }
    return states;
}

std::vector<CpuControls> GovernorProxy::cpuControls()
{
    std::vector<CpuControls> out;
    for (const auto& c : GetCpuControls())
    {
        CpuControls v;
        v.cpu = std::get<0>(c);
        v.minPerf = std::get<1>(c);
        v.maxPerf = std::get<2>(c);
        if (const std::int32_t epp = std::get<3>(c); epp >= 0 && epp <= 255)
        {
            v.epp = static_cast<std::uint8_t>(epp);
        }
        v.autonomous = std::get<4>(c);
        if (const std::uint32_t window = std::get<5>(c); window != 0)
        {
            v.activityWindowUs = window;
        }
        out.push_back(v);
    }
    return out;
}

std::vector<HandleInfo> GovernorProxy::handleList()
{
    std::vector<HandleInfo> handles;
    for (const auto& h : ListHandles())
    {
        handles.push_back(
            {std::get<0>(h), std::get<1>(h), std::get<2>(h), std::get<3>(h),
             std::get<4>(h), std::get<5>(h), std::get<6>(h)});
    }
    return handles;
}

std::vector<CpuInfo> GovernorProxy::cpuInfo()
{
    std::vector<CpuInfo> info;
    for (const auto& c : GetCpuInfo())
    {
        CpuInfo i;
        i.cpu = std::get<0>(c);
        i.domain = std::get<1>(c);
        if (const std::int32_t psd = std::get<2>(c); psd >= 0)
        {
            i.psdDomain = static_cast<std::uint32_t>(psd);
        }
        i.policy = std::get<3>(c);
        i.lowestPerf = std::get<4>(c);
        i.lowestNonlinearPerf = std::get<5>(c);
        i.nominalPerf = std::get<6>(c);
        i.highestPerf = std::get<7>(c);
        i.lowestKhz = std::get<8>(c);
        i.nominalKhz = std::get<9>(c);
        info.push_back(std::move(i));
    }
    return info;
}

std::map<std::string, std::uint64_t> GovernorProxy::statistics()
{
    return GetStatistics();
}

void GovernorProxy::onHandleStarted(
    const std::uint64_t& handle, const std::string& kind,
    const std::string& owner, const std::uint32_t& task,
    const std::uint16_t& utilMin, const std::uint16_t& utilMax,
    const std::uint32_t& latencyUs)
{
    if (handleStarted)
    {
        handleStarted({handle, kind, owner, task, utilMin, utilMax, latencyUs});
    }
}

void GovernorProxy::onHandleEnded(const std::uint64_t& handle,
                                  const std::string& owner,
                                  const std::string& reason)
{
    if (handleEnded)
    {
        handleEnded(handle, owner, reason);
    }
}

void GovernorProxy::onPolicyChanged(const std::string& policy,
                                    const std::vector<std::string>& files)
{
    if (policyChanged)
    {
        policyChanged(policy, files);
    }
}

BusClient::BusClient(const std::optional<std::string>& address) :
    connection_(address ? sdbus::createSessionBusConnectionWithAddress(*address)
                        : sdbus::createSystemBusConnection())
{
    governor_ = std::make_unique<GovernorProxy>(*connection_);
    // The daemon's name changing hands means its handles are gone: it
    // left, or another instance took over.
    nameWatch_ = connection_->addMatch(
        std::string("type='signal',sender='org.freedesktop.DBus',"
                    "path='/org/freedesktop/DBus',"
                    "interface='org.freedesktop.DBus',"
                    "member='NameOwnerChanged',arg0='") +
            dbus::serviceName + "'",
        [this](sdbus::Message& msg) {
        std::string name;
        std::string oldOwner;
        std::string newOwner;
        msg >> name >> oldOwner >> newOwner;
        if (name == dbus::serviceName && !oldOwner.empty())
        {
            markLost("cppcgovd left the bus");
        }
        });
}

BusClient::~BusClient() = default;

std::string BusClient::uniqueName() const
{
    return connection_->getUniqueName();
}

GovernorSnapshot BusClient::snapshot()
{
    GovernorSnapshot s;
    s.daemon = governor_->daemonInfo();
    s.cpus = governor_->cpuStates();
    s.handles = governor_->handleList();
    s.info = governor_->cpuInfo();
    s.controls = governor_->cpuControls();
    s.statistics = governor_->statistics();
    return s;
}

void BusClient::markLost(std::string why)
{
    if (!lost_)
    {
        lost_ = std::move(why);
    }
}

std::optional<std::size_t> BusClient::wait(
    std::span<const int> fds, std::optional<Clock::time_point> deadline,
    const std::function<bool()>& stop)
{
    const auto stopped = [&stop]() { return stop && stop(); };
    std::vector<pollfd> polled(fds.size() + 1);
    while (true)
    {
        if (!broken_)
        {
            try
            {
                while (connection_->processPendingRequest())
                {
                    if (stopped())
                    {
                        return std::nullopt;
                    }
                }
            }
            catch (const sdbus::Error& e)
            {
                broken_ = true;
                markLost("the connection to the bus broke (" + e.getName() +
                         ": " + e.getMessage() + ")");
            }
        }
        if (stopped())
        {
            return std::nullopt;
        }
        const Clock::time_point now = Clock::now();
        if (deadline && now >= *deadline)
        {
            return std::nullopt;
        }
        int timeoutMs = deadline ? msUntil(*deadline - now) : -1;
        for (std::size_t i = 0; i < fds.size(); ++i)
        {
            polled[i] = {fds[i], POLLIN, 0};
        }
        std::size_t count = fds.size();
        if (!broken_)
        {
            const sdbus::IConnection::PollData data =
                connection_->getEventLoopPollData();
            polled[count++] = {data.fd, data.events, 0};
            if (const auto relative = data.getRelativeTimeout())
            {
                const int busMs = msUntil(*relative);
                timeoutMs = timeoutMs < 0 ? busMs : std::min(timeoutMs, busMs);
            }
        }
        if (const auto ready = pollWatched(std::span(polled.data(), count),
                                           fds.size(), timeoutMs))
        {
            return ready;
        }
    }
}

} // namespace cppcgov::tools
