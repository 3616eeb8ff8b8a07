// One governor tick: sample the machine, fold in the clamps of the hinted
// tasks active on each CPU, let the policy decide per domain, write what
// changed, and keep the per-CPU picture the D-Bus API shows.
//
// The configuration's per-CPU settings (config.hpp settingsFor) are applied
// per domain: a shared domain takes the settings of its first CPU (the
// shipped policy.yaml tells operators to select shared domains whole). The
// domains with equal settings are decided together, one policies::decide()
// call per distinct settings.
//
// Clamps follow the kernel's uclamp aggregation over the hinted tasks that
// were active on a CPU during the window (the max of their minimums and of
// their maximums). Tasks without a hint are not seen per CPU, so a util_max
// caps a CPU whenever its active hinted tasks all ask for it, even if
// unhinted tasks ran there too: a simplification against the kernel, which
// counts every runnable task.
//
// A hinted task's clamp stays on its CPU for clampHoldUs after it was last
// seen active there. Activity comes from procfs, whose CPU times move in
// 10 ms steps, so a task that runs a little every few milliseconds would
// otherwise flicker in and out of view and its CPU's request with it;
// the kernel's uclamp, which sees every enqueue, has no such gap to cover.
// A clamp that ends (forget()) leaves at once.
//
// No D-Bus, no logging, no clock: time is a parameter. Not thread-safe.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machine.hpp"
#include "policies/policy.hpp"
#include "policies/util_average.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

namespace cppcgov::daemon
{

// How long a clamp outlives the last sight of its task on a CPU.
inline constexpr std::uint64_t clampHoldUs = 20'000;

// A hinted task seen active on a (governed) CPU during the last window.
struct ActiveClamp
{
    std::uint64_t handle = 0;
    std::uint32_t cpu = 0;
    policies::Clamp clamp;
};

// What the API shows for one CPU, as of the last tick.
struct CpuView
{
    std::uint16_t util = 0;
    policies::Clamp clamp;
    std::uint32_t requestedPerf = 0;
    std::uint32_t deliveredPerf = 0;
    policies::Reason reason = policies::Reason::utilization;
    // Handles of the hinted tasks active on the CPU, ascending.
    std::vector<std::uint64_t> handles;
};

struct TickReport
{
    // The machine's errors, if any (the tick still decided and wrote what
    // it could).
    std::error_code sampleError;
    std::error_code applyError;
    // Requests written this tick.
    std::size_t writes = 0;
    // The handles whose clamp was on a CPU whose request was written this
    // tick (not deduplicated), for hint-to-write latency.
    std::vector<std::uint64_t> handlesWritten;
    // The handles whose clamp was on a CPU this tick, written or not.
    std::vector<std::uint64_t> handlesActive;
};

class Governor
{
  public:
    // Throws std::invalid_argument when the machine has no CPUs.
    Governor(Machine& machine, const GovernorConfig& config);

    Governor(const Governor&) = delete;
    Governor& operator=(const Governor&) = delete;

    // Takes new settings; each domain keeps its last request and the time
    // of its last change, so rate limits carry over.
    void configure(const GovernorConfig& config);

    // One tick at `nowUs` (CLOCK_MONOTONIC, microseconds) with the hinted
    // tasks active since the previous tick (CPUs outside the machine are
    // ignored). Rewrites `report`, reusing its storage.
    void tick(std::uint64_t nowUs, std::span<const ActiveClamp> active,
              TickReport& report);

    // Drops hint `handle`'s clamp from every CPU now (the hint ended).
    void forget(std::uint64_t handle);

    const std::vector<CpuView>& cpus() const noexcept
    {
        return views_;
    }

    std::uint64_t ticks() const noexcept
    {
        return ticks_;
    }

  private:
    // Domains decided with the same settings.
    struct Group
    {
        PolicySettings settings;
        policies::Topology topology; // all CPUs' caps, this group's domains
        std::vector<std::size_t> domains; // index into the machine topology
        std::vector<policies::DomainState> state;
        std::vector<policies::Decision> decisions;
    };

    struct Held
    {
        ActiveClamp clamp;
        std::uint64_t lastSeenUs = 0;
    };

    // Merges this tick's active clamps into held_ and drops expired ones.
    void hold(std::uint64_t nowUs, std::span<const ActiveClamp> active);

    Machine& machine_;
    // By (handle, CPU).
    std::map<std::pair<std::uint64_t, std::uint32_t>, Held> held_;
    std::vector<Group> groups_;
    std::vector<policies::DomainState> domainState_; // between configures
    std::vector<CpuSample> samples_;
    std::vector<policies::UtilAverage> averages_;
    std::vector<std::uint16_t> util_;
    std::vector<policies::Clamp> clamp_;
    std::vector<policies::TaskClamp> taskClamps_;
    std::vector<CppcRequest> requests_;
    std::vector<CpuView> views_;
    std::vector<bool> cpuWritten_;
    std::uint64_t lastUs_ = 0;
    std::uint64_t ticks_ = 0;
};

} // namespace cppcgov::daemon
