// SPDX-License-Identifier: Apache-2.0
// cppcgovctl's side of the D-Bus contract (daemon/dbus/org.cppcgov.
// Governor1.xml): a connection to the bus cppcgovd is on, the generated
// proxy on it, reading the daemon's state into plain values
// (governor_state.hpp), and a single-threaded wait loop that keeps the
// connection serviced (signals dispatched, the bus answered) while a
// command waits for its own descriptors. Handles belong to this
// connection: they end when it closes.
//
// Everything runs on the calling thread: no event-loop thread, so a
// command may fork() safely.
#pragma once

#include "daemon/dbus/governor1.hpp"
#include "governor_state.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace cppcgov::tools
{

// The proxy of /org/cppcgov/Governor1. Its signal hooks are called from
// BusClient::wait().
class GovernorProxy final :
    public sdbus::ProxyInterfaces<org::cppcgov::Governor1_proxy>
{
  public:
    // Creates the proxy on `connection` and subscribes to its signals.
    // Throws sdbus::Error.
    explicit GovernorProxy(sdbus::IConnection& connection);
    ~GovernorProxy();

    GovernorProxy(const GovernorProxy&) = delete;
    GovernorProxy& operator=(const GovernorProxy&) = delete;

    // Every property of the interface in one call (Properties.GetAll).
    // Throws sdbus::Error, or std::runtime_error when a property is missing
    // or has another type than the contract's.
    [[nodiscard]] DaemonInfo daemonInfo();

    // GetCpuStates and ListHandles, as plain values.
    [[nodiscard]] std::vector<CpuState> cpuStates();
    [[nodiscard]] std::vector<HandleInfo> handleList();
    // GetCpuInfo, GetCpuControls and GetStatistics, as plain values.
    [[nodiscard]] std::vector<CpuInfo> cpuInfo();
    [[nodiscard]] std::vector<CpuControls> cpuControls();
    [[nodiscard]] std::map<std::string, std::uint64_t> statistics();

    std::function<void(const HandleInfo& handle)> handleStarted;

    std::function<void(std::uint64_t handle, const std::string& owner,
                       const std::string& reason)>
        handleEnded;
    std::function<void(const std::string& policy,
                       const std::vector<std::string>& files)>
        policyChanged;

  private:
    void onHandleStarted(const std::uint64_t& handle, const std::string& kind,
                         const std::string& owner, const std::uint32_t& task,
                         const std::uint16_t& utilMin,
                         const std::uint16_t& utilMax,
                         const std::uint32_t& latencyUs) override;
    void onHandleEnded(const std::uint64_t& handle, const std::string& owner,
                       const std::string& reason) override;
    void onPolicyChanged(const std::string& policy,
                         const std::vector<std::string>& files) override;
};

class BusClient
{
  public:
    using Clock = std::chrono::steady_clock;

    // Connects to the bus at `address` (a D-Bus address such as
    // "unix:path=/run/bus") or, without one, to the system bus, and watches
    // cppcgovd's bus name. Throws sdbus::Error.
    explicit BusClient(const std::optional<std::string>& address);
    ~BusClient();

    BusClient(const BusClient&) = delete;
    BusClient& operator=(const BusClient&) = delete;

    GovernorProxy& governor() noexcept
    {
        return *governor_;
    }

    // This connection's unique bus name (":1.42"), which owns its handles.
    [[nodiscard]] std::string uniqueName() const;

    // Properties, CPU states and information, handles and counters.
    // Throws as GovernorProxy does.
    [[nodiscard]] GovernorSnapshot snapshot();

    // Why the handles of this connection are gone, once they are: cppcgovd
    // left the bus, or the connection to the bus broke. Nothing before.
    const std::optional<std::string>& lost() const noexcept
    {
        return lost_;
    }

    // Services the bus (dispatching signals to the proxy's hooks) until
    // one of `fds` is readable, `deadline` passes, or `stop` (checked after
    // every dispatched message) returns true. Returns the index in `fds` of
    // a readable (or hung-up) descriptor, or nothing for the deadline or
    // `stop`. Once the connection broke (lost() says so) it only waits for
    // `fds` and the deadline. Throws std::system_error when poll fails.
    [[nodiscard]] std::optional<std::size_t> wait(
        std::span<const int> fds, std::optional<Clock::time_point> deadline,
        const std::function<bool()>& stop);

  private:
    void markLost(std::string why);

    std::unique_ptr<sdbus::IConnection> connection_;
    std::unique_ptr<GovernorProxy> governor_;
    sdbus::Slot nameWatch_;
    bool broken_ = false;
    std::optional<std::string> lost_;
};

} // namespace cppcgov::tools
