// SPDX-License-Identifier: Apache-2.0
// The D-Bus service org.cppcgov.Governor1 at /org/cppcgov/Governor1: the
// handlers of the interface in dbus/org.cppcgov.Governor1.xml (the adaptor
// is generated from it). A thin adaptor over the handle table
// (handles.hpp), which owns the handles, their limits and who may add
// them: the service parses the arguments, asks the bus driver who the
// caller is, calls the table, maps its errors to org.cppcgov.Error.*
// names, watches the handles' pidfds on the loop (one epoll set for all,
// exit_watch.hpp), and emits the signals.
//
// Trust. Only the bus driver says who a caller is and when it left: the
// caller is the sender the bus stamps on its message; its user, process
// and groups come from GetConnectionCredentials, whose reply must come
// from org.freedesktop.DBus; a NameOwnerChanged is acted on only when its
// sender is org.freedesktop.DBus (sd-bus also hands the match callback
// unicast signals forged by any peer). Credentials are asked
// asynchronously at a connection's first call (so that its later calls
// count against its user) and by the methods that need them, and cached
// until it leaves or the configuration is reloaded. A caller is
// privileged when it is root or the groups the bus driver reports
// (UnixGroupIDs) hold the configured group; when the driver reports none,
// the user database is asked on a worker thread, never on the loop. The
// methods that need credentials are asynchronous on the server side (the
// XML says so), so the loop never waits for the bus driver or the user
// database.
//
// Every handler turns every failure into a named org.cppcgov.Error.* and
// never lets another exception reach sd-bus. Runs on the event-loop
// thread.
#pragma once

#include "daemon/config.hpp"
#include "daemon/dbus/governor1.hpp"
#include "daemon/energy_arbiter.hpp"
#include "daemon/exit_watch.hpp"
#include "daemon/governor.hpp"
#include "daemon/handles.hpp"
#include "daemon/headroom.hpp"
#include "daemon/headroom_limiter.hpp"
#include "daemon/latency_arbiter.hpp"
#include "daemon/tick_loop.hpp"
#include "daemon/user_db.hpp"

#include <sys/types.h>

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace cppcgov::daemon
{

// What the service needs from the daemon around it.
struct ServiceHooks
{
    // Re-reads the configuration; returns the files read, or throws
    // sdbus::Error (InvalidConfig) with the message.
    std::function<std::vector<std::string>()> reload;
    // The daemon's counters for GetStatistics.
    std::function<std::map<std::string, std::uint64_t>()> statistics;
    // The metrics' text for GetMetrics (metrics.hpp).
    std::function<std::string()> metrics;
    // A clamp handle was added (its call arrived at `arrivalNs`,
    // CLOCK_MONOTONIC) or ended.
    std::function<void(std::uint64_t handle, std::uint64_t arrivalNs)>
        clampAdded;
    std::function<void(std::uint64_t handle)> clampEnded;
    // The live energy preferences changed: each machine CPU's strongest.
    std::function<void(std::span<const policies::EnergyPreference> perCpu)>
        energyChanged;
    // A bus operation happened outside bus processing: re-arm the bus.
    std::function<void()> poke;
};

struct ServiceInfo
{
    std::string backend;
    std::string version;
    // Observation::source() and why().
    std::string samplingSource;
    std::string samplingReason;
    // The root prefix of the latency arbiter's files, for messages.
    std::filesystem::path root = "/";
};

class Service final :
    public sdbus::AdaptorInterfaces<org::cppcgov::Governor1_adaptor>
{
  public:
    // Registers the object on `bus` and subscribes to NameOwnerChanged.
    // `arbiter`, `machine` and `tick` must outlive the service. What the
    // governor shows comes from the tick's outputs (tick_loop.hpp); the
    // machine is read only for what never changes (its topology, its CPUs'
    // mapping).
    Service(sdbus::IConnection& bus, boost::asio::io_context& io,
            LatencyArbiter& arbiter, const Machine& machine, TickLoop& tick,
            ServiceInfo info, ServiceHooks hooks);
    ~Service();

    // Takes the limits, group and policy name of a (re)loaded config.
    void configure(const GovernorConfig& config);

    // Emits PolicyChanged and PropertiesChanged for the configuration
    // taken by the last configure().
    void announcePolicy();

    // Sets the PendingRestart property: what the files set that needs a
    // restart, empty when nothing. announcePolicy() announces its change.
    void setPendingRestart(std::string note);

    // The live clamps, for the sampler: valid until the next bus
    // processing or pidfd watch changes the table.
    std::span<const ClampHint> liveClamps() const noexcept
    {
        return table_.liveClamps();
    }

    // The live handles by kind.
    std::size_t clampCount() const noexcept
    {
        return table_.clampCount();
    }
    std::size_t latencyCount() const noexcept
    {
        return table_.size() - table_.clampCount() - table_.energyCount();
    }
    std::size_t energyCount() const noexcept
    {
        return table_.energyCount();
    }

    // Ends every handle (at shutdown), announcing each as daemon-stopped.
    void endAll();

    // Takes the ticks' utilization the tick loop queued into the headroom
    // query's history. Call often enough that its queue does not fill
    // (tick_loop.hpp); the headroom calls take it first too.
    void takeUtilization();

  private:
    // The caller of the method being processed, its call counted; when
    // `learn` and its credentials are not known, they are asked (without
    // waiting), so that its later calls count against its user. Throws
    // sdbus::Error.
    std::string caller(bool learn = true);
    // Runs `body(name, credentials)` for the caller of the method being
    // processed once its credentials are known, and replies with what it
    // returns or the sdbus::Error it throws (anything else it throws
    // becomes org.cppcgov.Error.Failed). Known credentials are used at
    // once; otherwise they are asked (askCredentials) and the rest runs
    // when they are known: the loop never waits.
    template <class... R, class Body>
    void withCreds(const char* method, sdbus::Result<R...>&& result, Body body);
    // Asks the bus driver who connection `name` is, records it in the
    // table, then calls `then` with an empty string, or with what went
    // wrong. `then` runs on the loop, maybe outside bus processing.
    void askCredentials(const std::string& name,
                        const std::function<void(const std::string&)>& then);
    // Takes what GetConnectionCredentials said of `name`; the user
    // database is asked on the worker when the groups are missing. Throws
    // sdbus::Error.
    void takeCredentials(const std::string& name,
                         const std::map<std::string, sdbus::Variant>& creds,
                         const std::function<void(const std::string&)>& then);
    // Whether user `uid` is privileged: root, or `groups` hold the group.
    bool privilegedBy(uid_t uid,
                      const std::vector<std::uint32_t>& groups) const;
    // Applies a resolved permissions.group.
    void setGroup(const std::string& name, std::optional<gid_t> gid);

    // Watches the new handle's pidfd (if any) and announces a clamp; on
    // failure the handle is gone again. Returns `handle`. Throws
    // sdbus::Error.
    std::uint64_t added(std::uint64_t handle, std::uint64_t arrivalNs);
    // Emits HandleStarted for the handles added since the last call that
    // are still live; after the reply of the call that added them.
    // `outsideProcessing`: re-arm the bus afterwards.
    void announceStarted(bool outsideProcessing);
    // Ends `handle` as task-exited, if it is still live.
    void taskExited(std::uint64_t handle);
    // Adds `name`'s latency request (see HandleTable::addLatency) and the
    // arbiter's. Throws sdbus::Error.
    std::uint64_t addLatency(const std::string& name, pid_t pid,
                             std::uint32_t latencyUs,
                             std::vector<unsigned> cpus);
    // Adds `name`'s energy preference (see HandleTable::addEnergy), maps
    // a task's CPUs to the machine's, and adds the arbiter's. Throws
    // sdbus::Error.
    std::uint64_t addEnergy(const std::string& name, pid_t pid,
                            const std::string& preference,
                            std::vector<unsigned> cpus);
    // Tells the governor each CPU's preference now.
    void energyChanged();
    // Undoes what the handle did outside the table and announces its end.
    void finish(const Ended& ended, bool outsideProcessing);
    void onNameOwnerChanged(sdbus::Message& msg);

    // The reply of GetCpuHeadroom and GetTaskHeadroom.
    using HeadroomReply =
        std::tuple<double, std::vector<sdbus::Struct<std::uint32_t, double>>,
                   std::uint32_t>;
    // The headroom of machine CPUs `cpus` (ascending, each once) for
    // connection `name` of user `uid`: checks the window and calculation,
    // then the limits (headroom_limiter.hpp). Throws sdbus::Error.
    HeadroomReply headroomOf(const char* method, const std::string& name,
                             uid_t uid, const std::vector<std::uint32_t>& cpus,
                             std::uint32_t windowMs,
                             const std::string& calculation);

    // org.cppcgov.Governor1
    void SetClamp(sdbus::Result<std::uint64_t>&& result, std::uint32_t pid,
                  bool thread, std::uint16_t utilMin,
                  std::uint16_t utilMax) override;
    void SetClampPidfd(sdbus::Result<std::uint64_t>&& result,
                       sdbus::UnixFd pidfd, std::uint16_t utilMin,
                       std::uint16_t utilMax) override;
    void SetLatency(sdbus::Result<std::uint64_t>&& result, std::uint32_t pid,
                    std::uint32_t latencyUs) override;
    void SetLatencyCpus(sdbus::Result<std::uint64_t>&& result,
                        std::vector<std::uint32_t> cpus,
                        std::uint32_t latencyUs) override;
    void SetEnergyPreference(sdbus::Result<std::uint64_t>&& result,
                             std::uint32_t pid,
                             std::string preference) override;
    void SetEnergyPreferenceCpus(sdbus::Result<std::uint64_t>&& result,
                                 std::vector<std::uint32_t> cpus,
                                 std::string preference) override;
    void Release(const std::uint64_t& handle) override;
    std::vector<sdbus::Struct<
        std::uint32_t, std::uint16_t, std::uint16_t, std::uint16_t,
        std::uint32_t, std::uint32_t, std::string, std::int32_t,
        std::vector<sdbus::Struct<std::uint64_t, std::string, std::uint32_t,
                                  std::uint16_t, std::uint16_t>>,
        std::string>>
        GetCpuStates() override;
    std::vector<sdbus::Struct<std::uint32_t, std::uint32_t, std::uint32_t,
                              std::int32_t, bool, std::uint32_t>>
        GetCpuControls() override;
    std::vector<
        sdbus::Struct<std::uint32_t, std::uint32_t, std::int32_t, std::string,
                      std::uint32_t, std::uint32_t, std::uint32_t,
                      std::uint32_t, std::uint32_t, std::uint32_t>>
        GetCpuInfo() override;
    std::vector<
        sdbus::Struct<std::uint64_t, std::string, std::string, std::uint32_t,
                      std::uint16_t, std::uint16_t, std::uint32_t>>
        ListHandles() override;
    void Reload(sdbus::Result<std::vector<std::string>>&& result) override;
    std::map<std::string, std::uint64_t> GetStatistics() override;
    std::string GetMetrics() override;
    std::string Backend() override;
    std::vector<std::string> Controls() override;
    std::string SamplingSource() override;
    std::string SamplingSourceReason() override;
    std::string Policy() override;
    std::uint32_t CpuCount() override;
    std::uint32_t SamplingPeriodUs() override;
    std::uint32_t ClampCount() override;
    std::uint32_t LatencyCount() override;
    std::uint32_t EnergyPreferenceCount() override;
    std::string Version() override;
    std::string PendingRestart() override;
    void GetCpuHeadroom(
        sdbus::Result<double, std::vector<sdbus::Struct<std::uint32_t, double>>,
                      std::uint32_t>&& result,
        std::vector<std::uint32_t> cpus, std::uint32_t windowMs,
        std::string calculation) override;
    void GetTaskHeadroom(
        sdbus::Result<double, std::vector<sdbus::Struct<std::uint32_t, double>>,
                      std::uint32_t>&& result,
        std::uint32_t pid, std::uint32_t windowMs,
        std::string calculation) override;
    std::uint32_t HeadroomMinIntervalMs() override;

    sdbus::IConnection& bus_;
    LatencyArbiter& arbiter_;
    const Machine& machine_;
    TickLoop& tick_;
    EnergyArbiter energy_;
    ServiceInfo info_;
    ServiceHooks hooks_;
    HandleTable table_;
    std::optional<gid_t> groupId_;
    std::string groupName_; // permissions.group, for the callers refused
    bool configured_ = false;
    std::string policyName_;
    std::vector<std::string> sources_;
    std::uint32_t samplingPeriodUs_ = 0;
    std::string pendingRestart_;
    // Handles added whose HandleStarted is not sent yet (announceStarted).
    std::vector<std::uint64_t> started_;
    // The exits of the handles' tasks, keyed by handle; a handle's watch
    // ends when the table closes its pidfd.
    ExitWatch exits_;
    // org.freedesktop.DBus, for callers' credentials.
    std::unique_ptr<sdbus::IProxy> busDriver_;
    sdbus::Slot nameOwnerMatch_;
    // Connections whose credentials caller() asked for, not yet answered.
    std::set<std::string, std::less<>> asking_;
    std::shared_ptr<Service*> alive_;
    // The headroom query: each CPU's utilization over the last 10 s (reset
    // when the sampling period changes), each CPU's capacity (highest
    // performance) and who may ask when.
    UtilHistory history_;
    std::uint32_t historyPeriodUs_ = 0;
    std::vector<std::uint32_t> capacity_;
    // Each CPU's policy under the configuration taken, and its domain.
    std::vector<policies::PolicyKind> kinds_;
    std::vector<std::uint32_t> domainOf_;
    HeadroomLimiter headroomLimiter_;
    // Last: destroyed first, so no user-database job outlives the rest.
    BlockingWorker worker_;
};

} // namespace cppcgov::daemon
