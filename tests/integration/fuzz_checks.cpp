// SPDX-License-Identifier: Apache-2.0
// The checks of bus_fuzz's answers: each against the contract, the
// daemon's liveness every few calls, and at the end the handles the daemon
// lists for this client and their end once it leaves.
#include "tests/integration/fuzzer.hpp"

#include <thread>

namespace cppcgov::test::fuzz
{
namespace
{

constexpr auto disconnectLimit = std::chrono::seconds(1);

// One entry of ListHandles.
using HandleEntry =
    sdbus::Struct<std::uint64_t, std::string, std::string, std::uint32_t,
                  std::uint16_t, std::uint16_t, std::uint32_t>;

std::vector<HandleEntry> listHandles(sdbus::IProxy& proxy)
{
    auto call = proxy.createMethodCall(governorInterface, "ListHandles");
    auto reply = call.send(replyTimeoutUs);
    std::vector<HandleEntry> handles;
    reply >> handles;
    return handles;
}

} // namespace

std::uint32_t countProperty(sdbus::IProxy& proxy, const char* name)
{
    auto call = proxy.createMethodCall(propertiesInterface, "Get");
    call << std::string(governorInterface) << std::string(name);
    auto reply = call.send(replyTimeoutUs);
    sdbus::Variant value;
    reply >> value;
    return value.get<std::uint32_t>();
}

bool Fuzzer::checkGovernorReply(
    const std::string& method, const std::vector<std::uint64_t>& u,
    const std::vector<std::uint32_t>& cpus, const FdChoice* fd, Answer& answer,
    const std::string& desc)
{
    if (!answer.ok)
    {
        if (!answer.errorName.starts_with("org.cppcgov.Error."))
        {
            return failed(desc, "error " + answer.errorName + " (" +
                                    answer.errorMessage +
                                    ") is not one of the contract's");
        }
        if (method == "Release" &&
            answer.errorName == "org.cppcgov.Error.NoSuchHandle" &&
            live_.contains(u[0]))
        {
            const pid_t task = live_[u[0]].task;
            if (task != 0 && task != self_ && task != child_ && task != 1)
            {
                // Another task, which may have exited since.
                live_.erase(u[0]);
                return true;
            }
            return failed(desc, "a live handle of the caller's (from " +
                                    live_[u[0]].call +
                                    ") was refused: " + answer.errorMessage);
        }
        return true;
    }
    if (method == "GetCpuHeadroom" || method == "GetTaskHeadroom")
    {
        return checkHeadroom(method, u, answer, desc);
    }
    const bool isSet = method.starts_with("Set");
    if (method == "Release")
    {
        if (live_.erase(u[0]) == 0)
        {
            return failed(desc, "released a handle that was not the caller's "
                                "live handle");
        }
        return true;
    }
    if (!isSet)
    {
        return true;
    }
    std::uint64_t handle = 0;
    if (!newHandle(answer, desc, handle))
    {
        return false;
    }
    pid_t task = 0;
    std::string why;
    if (method == "SetClamp" || method == "SetClampPidfd")
    {
        const std::size_t q = method == "SetClamp" ? 2 : 0;
        if (!(u[q] <= u[q + 1] && u[q + 1] <= utilScale))
        {
            why = "util_min/util_max out of contract";
        }
        if (method == "SetClamp")
        {
            task = u[0] == 0 ? self_ : static_cast<pid_t>(u[0]);
            if (!taskExists(static_cast<std::uint32_t>(u[0])))
            {
                why = "no such task";
            }
        }
        else
        {
            task = fd->task;
            if (!fd->livePidfd)
            {
                why = "the descriptor is not a live pidfd";
            }
        }
    }
    else if (method == "SetLatency")
    {
        task = u[0] == 0 ? self_ : static_cast<pid_t>(u[0]);
        if (!taskExists(static_cast<std::uint32_t>(u[0])))
        {
            why = "no such task";
        }
    }
    else if (method == "SetLatencyCpus")
    {
        if (cpus.empty())
        {
            why = "empty CPU set";
        }
        for (const auto cpu : cpus)
        {
            if (cpu >= cpuCount_)
            {
                why = "CPU " + std::to_string(cpu) + " does not exist (" +
                      std::to_string(cpuCount_) + " CPUs)";
                break;
            }
        }
    }
    live_[handle] = LiveHandle{task, desc};
    if (!why.empty())
    {
        return failed(desc, "returned handle " + std::to_string(handle) +
                                " for an invalid request: " + why);
    }
    return true;
}

bool Fuzzer::checkHeadroom(const std::string& method,
                           const std::vector<std::uint64_t>& u, Answer& answer,
                           const std::string& desc)
{
    const std::size_t w = method == "GetCpuHeadroom" ? 0 : 1;
    if (u.size() <= w || u[w] < 50 || u[w] > 10000)
    {
        return failed(desc, "answered a window outside 50..10000 ms");
    }
    double headroom = 0;
    std::vector<sdbus::Struct<std::uint32_t, double>> perCpu;
    std::uint32_t coveredMs = 0;
    answer.reply >> headroom >> perCpu >> coveredMs;
    const auto percent = [](double v) { return v >= 0 && v <= 100; };
    if (!percent(headroom) || perCpu.empty() || coveredMs > u[w])
    {
        return failed(desc,
                      "headroom " + std::to_string(headroom) + " of " +
                          std::to_string(perCpu.size()) + " CPUs covering " +
                          std::to_string(coveredMs) + " ms is out of contract");
    }
    for (const auto& c : perCpu)
    {
        if (c.get<0>() >= cpuCount_ || !percent(c.get<1>()))
        {
            return failed(desc, "CPU " + std::to_string(c.get<0>()) +
                                    " headroom " + std::to_string(c.get<1>()) +
                                    " is out of contract");
        }
    }
    return true;
}

bool Fuzzer::newHandle(Answer& answer, const std::string& desc,
                       std::uint64_t& handle)
{
    answer.reply >> handle;
    if (handle == 0 || seen_.contains(handle))
    {
        return failed(desc, "returned handle " + std::to_string(handle) +
                                ", zero or given before");
    }
    seen_.insert(handle);
    return true;
}

bool Fuzzer::trackUntyped(const std::string& member, Answer& answer,
                          const std::string& desc)
{
    // Random types that formed the right signature and were accepted: the
    // handles they released or created still count.
    if (member == "Release")
    {
        if (randomHandles_.size() == 1)
        {
            live_.erase(randomHandles_.front());
        }
        return true;
    }
    if (!member.starts_with("Set"))
    {
        return true;
    }
    std::uint64_t handle = 0;
    if (!newHandle(answer, desc, handle))
    {
        return false;
    }
    // Its task is not known: it may end without a release.
    live_[handle] = LiveHandle{-1, desc};
    return true;
}

bool Fuzzer::alive(sdbus::IConnection& connection, const std::string& when)
{
    const std::string desc = "liveness check " + when;
    auto proxy = sdbus::createProxy(connection, busName, objectPath);
    Answer ping;
    if (!send(proxy->createMethodCall(peerInterface, "Ping"), ping,
              desc + ": Peer.Ping"))
    {
        return false;
    }
    if (!ping.ok)
    {
        return failed(desc,
                      "Ping: " + ping.errorName + ": " + ping.errorMessage);
    }
    auto get = proxy->createMethodCall(propertiesInterface, "Get");
    get << std::string(governorInterface) << std::string("Backend");
    Answer backend;
    if (!send(get, backend, desc + ": Get Backend"))
    {
        return false;
    }
    if (!backend.ok)
    {
        return failed(desc, "Get Backend: " + backend.errorName + ": " +
                                backend.errorMessage);
    }
    sdbus::Variant value;
    backend.reply >> value;
    if (value.get<std::string>().empty())
    {
        return failed(desc, "Backend is empty");
    }
    return true;
}

bool Fuzzer::finalChecks()
{
    index_ = 0;
    const std::string desc = "final checks";
    // The handles the daemon lists for this connection are the ones it
    // returned and were not released (those of live tasks all still there).
    try
    {
        auto proxy = sdbus::createProxy(*monitor_, busName, objectPath);
        std::set<std::uint64_t> listed;
        for (const auto& h : listHandles(*proxy))
        {
            if (h.get<2>() == uniqueName_)
            {
                listed.insert(h.get<0>());
            }
        }
        for (const auto handle : listed)
        {
            if (!live_.contains(handle))
            {
                return failed(desc, "ListHandles shows handle " +
                                        std::to_string(handle) +
                                        " that this client does not hold");
            }
        }
        for (const auto& [handle, info] : live_)
        {
            const bool ours = info.task == 0 || info.task == self_ ||
                              info.task == child_ || info.task == 1;
            if (!listed.contains(handle) && ours)
            {
                return failed(desc,
                              "handle " + std::to_string(handle) + " of " +
                                  info.call + " is missing from ListHandles");
            }
        }
        std::cout << "bus_fuzz: " << listed.size()
                  << " handles held at the end\n";
    }
    catch (const sdbus::Error& e)
    {
        return failed(desc,
                      "ListHandles: " + e.getName() + ": " + e.getMessage());
    }
    if (!alive(*monitor_, "at the end"))
    {
        return false;
    }
    // Leave without releasing anything.
    proxies_.clear();
    connection_.reset();
    monitor_.reset();

    std::unique_ptr<sdbus::IConnection> fresh;
    std::unique_ptr<sdbus::IProxy> proxy;
    try
    {
        fresh = sdbus::createSessionBusConnectionWithAddress(options_.address);
        proxy = sdbus::createProxy(*fresh, busName, objectPath);
    }
    catch (const sdbus::Error& e)
    {
        return failed(desc, "second connection: " + e.getName() + ": " +
                                e.getMessage());
    }
    const auto deadline = Clock::now() + disconnectLimit;
    std::size_t left = 0;
    std::uint32_t clamps = 0;
    std::uint32_t latencies = 0;
    while (true)
    {
        try
        {
            left = 0;
            for (const auto& h : listHandles(*proxy))
            {
                left += h.get<2>() == uniqueName_ ? 1 : 0;
            }
            clamps = countProperty(*proxy, "ClampCount");
            latencies = countProperty(*proxy, "LatencyCount");
        }
        catch (const sdbus::Error& e)
        {
            return failed(desc, "after the disconnect: " + e.getName() + ": " +
                                    e.getMessage());
        }
        if ((left == 0 && clamps == 0 && latencies == 0) ||
            Clock::now() > deadline)
        {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (left != 0 || clamps != 0 || latencies != 0)
    {
        return failed(desc,
                      std::to_string(left) + " handles of " + uniqueName_ +
                          " left, ClampCount " + std::to_string(clamps) +
                          ", LatencyCount " + std::to_string(latencies) + " " +
                          std::to_string(disconnectLimit.count()) +
                          " s after it closed its connection");
    }
    return alive(*fresh, "after the disconnect");
}

} // namespace cppcgov::test::fuzz
