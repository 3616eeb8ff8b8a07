// The D-Bus service org.cppcgov.Governor1 at /org/cppcgov/Governor1: the
// handlers of the interface in dbus/org.cppcgov.Governor1.xml (the adaptor
// is generated from it), the handles clients hold, and who may do what.
//
// Handles. A clamp handle is a hint in the HintRegistry (held by a pidfd
// on its task); a latency handle is a request in the LatencyArbiter, held
// by a pidfd too when it was set for a task. Either belongs to the caller's
// unique bus name. The service watches each pidfd on the event loop and
// ends the handle as soon as its task exits; it ends all of a client's
// handles when NameOwnerChanged says the client left the bus. Every end is
// announced with HandleEnded.
//
// Permissions. Reading is open to all. A caller may clamp tasks it owns
// (the kernel's sched_setattr rule: its effective UID is the task's real
// or effective UID); root and members of the configured group may clamp
// any task, set latency requests and reload. Credentials come from the bus
// driver (GetConnectionCredentials: its record of the connection's user and
// process), asked asynchronously once per client by the methods that need
// them and cached until the client leaves or the configuration is
// reloaded; group membership comes from the user database. Those methods
// are asynchronous on the server side (the XML says so), so the loop never
// waits for the bus driver.
//
// Limits. Per client: handles (clamps and latency requests together) and
// method calls per second (a token bucket), from the configuration; and at
// most maxTotalHandles handles over all clients.
//
// Every handler turns every failure into a named org.cppcgov.Error.* and
// never lets another exception reach sd-bus. Runs on the event-loop
// thread.
#pragma once

#include "daemon/config.hpp"
#include "daemon/dbus/governor1.hpp"
#include "daemon/governor.hpp"
#include "daemon/hint_registry.hpp"
#include "daemon/latency_arbiter.hpp"
#include "daemon/task_info.hpp"
#include "daemon/token_bucket.hpp"

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

// Each handle of a task holds one pidfd: the unit's LimitNOFILE= leaves
// room for these and for the daemon's other descriptors.
inline constexpr std::size_t maxTotalHandles = 16384;

// What the service needs from the daemon around it.
struct ServiceHooks
{
    // Re-reads the configuration; returns the files read, or throws
    // sdbus::Error (InvalidConfig) with the message.
    std::function<std::vector<std::string>()> reload;
    // The daemon's counters for GetStatistics.
    std::function<std::map<std::string, std::uint64_t>()> statistics;
    // A clamp handle was added (its call arrived at `arrivalNs`,
    // CLOCK_MONOTONIC) or ended.
    std::function<void(std::uint64_t handle, std::uint64_t arrivalNs)>
        clampAdded;
    std::function<void(std::uint64_t handle)> clampEnded;
    // A bus operation happened outside bus processing: re-arm the bus.
    std::function<void()> poke;
};

struct ServiceInfo
{
    std::string backend;
    std::string version;
};

class Service final :
    public sdbus::AdaptorInterfaces<org::cppcgov::Governor1_adaptor>
{
  public:
    // Registers the object on `bus` and subscribes to NameOwnerChanged.
    // `arbiter` and `governor` must outlive the service.
    Service(sdbus::IConnection& bus, boost::asio::io_context& io,
            LatencyArbiter& arbiter, const Governor& governor, ServiceInfo info,
            ServiceHooks hooks);
    ~Service();

    // Takes the limits, group and policy name of a (re)loaded config.
    void configure(const GovernorConfig& config);

    // Emits PolicyChanged and PropertiesChanged for the configuration
    // taken by the last configure().
    void announcePolicy();

    // The live clamps, for the sampler.
    const std::vector<ClampHint>& liveClamps() const noexcept
    {
        return liveClamps_;
    }

    // Ends every handle (at shutdown), announcing each.
    void endAll(const std::string& reason);

  private:
    enum class Kind : std::uint8_t
    {
        clamp,
        latency,
    };

    struct Handle
    {
        Kind kind = Kind::clamp;
        std::string owner;
        pid_t pid = 0; // 0 for a CPU-set latency request
        policies::Clamp clamp;
        std::uint32_t latencyUs = 0;
        std::uint64_t registryHandle = 0;
        // Readable when the task exits. On a clamp it borrows the
        // registry's pidfd (released, not closed, when the handle ends);
        // on a latency request it owns the pidfd.
        std::unique_ptr<boost::asio::posix::stream_descriptor> watch;
        bool ownsPidfd = false;
    };

    struct Client
    {
        TokenBucket bucket;
        bool credsKnown = false;
        uid_t euid = 0;
        pid_t pid = 0;
        bool privileged = false;
        std::size_t handles = 0;
    };

    // The caller of the method being processed, its rate token taken.
    // Throws sdbus::Error.
    Client& caller(std::string& name);
    // Runs `body(name, client)` for the caller of the method being
    // processed once its credentials are known, and replies with what it
    // returns or the sdbus::Error it throws (anything else it throws
    // becomes org.cppcgov.Error.Failed). Known credentials are used at
    // once; otherwise the bus driver is asked, asynchronously, and the
    // rest runs when it answers: the loop never waits for it.
    template <class R, class Body>
    void withCreds(const char* method, sdbus::Result<R>&& result, Body body);
    // Records what GetConnectionCredentials said of `client`. Throws
    // sdbus::Error.
    void setCreds(Client& client,
                  const std::map<std::string, sdbus::Variant>& creds);
    void requirePrivileged(const Client& client, const char* what) const;
    void requireRoom(const Client& client) const;
    // Checks `clamp` and the caller's room for one more handle.
    void checkClamp(const Client& client, policies::Clamp clamp) const;

    std::uint64_t addClamp(const std::string& owner, Client& client,
                           const AddResult& added, policies::Clamp clamp,
                           std::uint64_t arrivalNs);
    std::uint64_t addLatency(const std::string& owner, Client& client,
                             std::vector<unsigned> cpus,
                             std::uint32_t latencyUs, pid_t pid,
                             cppc::backend::Fd pidfd);
    // A watch that ends `handle` when the task behind `pidfd` exits.
    std::unique_ptr<boost::asio::posix::stream_descriptor> watchExit(
        std::uint64_t handle, int pidfd);
    void end(std::uint64_t handle, const std::string& reason,
             bool outsideProcessing);
    void onNameOwnerChanged(sdbus::Message& msg);
    void rebuildLiveClamps();

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
    void Release(const std::uint64_t& handle) override;
    std::vector<sdbus::Struct<
        std::uint32_t, std::uint16_t, std::uint16_t, std::uint16_t,
        std::uint32_t, std::uint32_t, std::string, std::int32_t,
        std::vector<sdbus::Struct<std::uint64_t, std::string, std::uint32_t,
                                  std::uint16_t, std::uint16_t>>>>
        GetCpuStates() override;
    std::vector<
        sdbus::Struct<std::uint64_t, std::string, std::string, std::uint32_t,
                      std::uint16_t, std::uint16_t, std::uint32_t>>
        ListHandles() override;
    void Reload(sdbus::Result<std::vector<std::string>>&& result) override;
    std::map<std::string, std::uint64_t> GetStatistics() override;
    std::string Backend() override;
    std::string Policy() override;
    std::uint32_t CpuCount() override;
    std::uint32_t SamplingPeriodUs() override;
    std::uint32_t ClampCount() override;
    std::uint32_t LatencyCount() override;
    std::string Version() override;

    sdbus::IConnection& bus_;
    boost::asio::io_context& io_;
    LatencyArbiter& arbiter_;
    const Governor& governor_;
    ServiceInfo info_;
    ServiceHooks hooks_;
    HintRegistry registry_;
    ClientLimits limits_;
    std::optional<gid_t> groupId_;
    std::string policyName_;
    std::vector<std::string> sources_;
    std::uint32_t samplingPeriodUs_ = 0;
    std::uint64_t nextHandle_ = 1;
    std::size_t clampCount_ = 0;
    std::map<std::uint64_t, Handle> handles_;
    std::map<std::string, Client, std::less<>> clients_;
    std::vector<ClampHint> liveClamps_;
    // org.freedesktop.DBus, for callers' credentials.
    std::unique_ptr<sdbus::IProxy> busDriver_;
    sdbus::Slot nameOwnerMatch_;
    std::shared_ptr<Service*> alive_;
};

} // namespace cppcgov::daemon
