// SPDX-License-Identifier: Apache-2.0
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
// Clamps follow the kernel's uclamp aggregation (policies::aggregate) over
// the tasks on a CPU: the max of their minimums and the max of their
// maximums, a task without a hint counting as [0, 1024]. The hinted tasks
// are seen one by one (HintSighting, from task_activity.hpp's TaskActivity),
// the others only in the CPU's busy time (CpuSample::busyUs). So a CPU's
// util_max binds only while its hinted tasks account for its busy time:
// when other work ran there in the window (below), the CPU's clamps are
// aggregated with one task without a hint, which lifts the ceiling to 1024
// and leaves the minimums as they are, as the kernel's max over runnable
// tasks would. So one user's util_max does not cap another user's work,
// within the limits below.
//
// The window. Both sides come from procfs in 10 ms steps (USER_HZ), taken
// at unrelated moments: a CPU's busy counter and the CPU time of the one
// busy task on it step at different instants, so over any stretch the two
// differ by up to a step with nothing else running. Over the 20 ms hold
// (below) a step is half the stretch, and a lone hinted task would see its
// ceiling come and go. The comparison therefore runs over the last
// ceilingWindowUs (100 ms, five holds, kept in ceilingBuckets buckets of
// 10 ms: the window holds the last 90 to 100 ms), adding up the CPU's busy
// time and the CPU time of the hinted tasks seen there; other work counts
// as present when the busy time exceeds the hinted time by more than
// ceilingToleranceUs, one step (the counters move in whole steps: two steps
// or more). That is the smallest tolerance a lone hinted task does not
// cross, so its ceiling holds, while other work lifts it as soon as about
// 20 ms of it are in the window (at once when it ran before the hinted
// task came, after about 40 ms for a task sharing the CPU half and half).
// A lift is held like a clamp, for clampHoldUs after other work was last
// found, as the count wavers by a step while other work comes in; so the
// ceiling stays lifted until the window no longer holds that work and a
// hold more, up to 120 ms after it stops. The errors lean toward lifting,
// which costs only energy: a hinted thread that moved to another CPU
// leaves busy time behind it that lifts the ceiling where it was. What is
// left the other way: other work of less than about two steps per window
// (10 to 20 % of a CPU) can run under another task's ceiling, and a hinted
// thread that moved brings the CPU time it used on its old CPU to its new
// one (the sighting puts it all where it is now), which hides that much
// other work there for one window. Observing the scheduler (below) makes
// this exact. A machine that reports no busy time (busyUs
// 0, such as the simulator without a proc/stat) keeps every ceiling.
//
// A hinted task's clamp stays on its CPU for clampHoldUs after it was last
// seen active there. Activity comes from procfs, whose CPU times move in
// 10 ms steps, so a task that runs a little every few milliseconds would
// otherwise flicker in and out of view and its CPU's request with it;
// the kernel's uclamp, which sees every enqueue, has no such gap to cover.
// A clamp that ends (forget()) leaves at once.
//
// Exact observation (tickExact(), from the scheduler's events through BPF,
// sched_observer.hpp) needs none of the window above: each CPU's clamp is
// the aggregation over every task runnable there during the tick's window,
// the unhinted ones included, so a util_max binds exactly while only
// hinted tasks are runnable. Only the hold remains, for the minimums: a
// hint seen on a CPU keeps raising its minimum for clampHoldUs, which
// bridges the ticks a periodic task sleeps through (the kernel's uclamp
// raises the frequency at the task's wake-up; a governor a tick away must
// already be there).
//
// The autonomous policy (policies::decide()) needs the machine's
// Control::autonomous: configure() refuses, naming the domain and the
// backend, a configuration that sets it on a domain of a machine without
// it (policyRefusals()). A domain that leaves autonomous is written with
// autonomous selection off at once. Its EPP follows the live energy
// preference hints, per CPU (setEnergyPreferences()).
//
// PerformanceLimited. When a CPU's sample has excursion bits set
// (CpuSample::perfLimited), its view reports minimum-excursion (bit 1) or
// desired-excursion (bit 0) in place of the decision's reason for that
// tick, and its excursion counters go up by one per tick with the bit.
//
// No D-Bus, no logging, no clock: time is a parameter. Not thread-safe.
#pragma once

#include "daemon/config.hpp"
#include "daemon/firmware_watch.hpp"
#include "daemon/hint.hpp"
#include "daemon/machine.hpp"
#include "policies/policy.hpp"
#include "policies/util_average.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace cppcgov::daemon
{

// How long a clamp outlives the last sight of its task on a CPU.
inline constexpr std::uint64_t clampHoldUs = 20'000;

// Over how long a CPU's busy time is compared with its hinted tasks' CPU
// time, in how many buckets, and by how much the busy time may exceed it
// with no other work counted (see above).
inline constexpr std::uint64_t ceilingWindowUs = 5 * clampHoldUs;
inline constexpr std::size_t ceilingBuckets = 10;
inline constexpr std::uint64_t ceilingToleranceUs = 10'000;

// What the API shows for one CPU, as of the last tick.
struct CpuView
{
    std::uint16_t util = 0;
    // The clamp the policy was given: util_max 1024 when other work lifted
    // the ceiling.
    policies::Clamp clamp;
    std::uint32_t requestedPerf = 0;
    std::uint32_t deliveredPerf = 0;
    // The rest of the last request for the CPU: the Minimum and Maximum
    // Performance bounds, the energy-performance preference (nothing: left
    // as it is), autonomous selection and its activity window (nothing:
    // left as it is). Each written where the machine offers it
    // (Machine::controls()).
    std::uint32_t requestedMin = 0;
    std::uint32_t requestedMax = 0;
    std::optional<std::uint8_t> epp;
    bool autonomous = false;
    std::optional<std::uint32_t> activityWindowUs;
    policies::Reason reason = policies::Reason::utilization;
    // Handles of the hinted tasks active on the CPU, ascending.
    std::vector<std::uint64_t> handles;
    // Machine::degraded(): why the CPU's accesses are failing or hung;
    // when they are not, its domain's firmware finding
    // (FirmwareWatch::finding(), "firmware: ..."); empty when neither.
    std::string degraded;
    // The ticks whose sample had the PerformanceLimited bit set: the
    // platform held the CPU below Desired, or below Minimum, since start.
    std::uint64_t desiredExcursions = 0;
    std::uint64_t minimumExcursions = 0;
};

// What `config` asks of `machine` that it cannot do: one message per
// domain set to the autonomous policy on a machine whose controls() lack
// Control::autonomous ("domain 2 (CPUs 4-7, _PSD domain 2): policy
// autonomous needs CPPC autonomous selection, which backend 'kernel' does
// not offer"). Empty when there is nothing.
[[nodiscard]] std::vector<std::string> policyRefusals(
    const GovernorConfig& config, const Machine& machine);

// Each of `machine`'s CPUs' policy under `config`: its domain's, which the
// settings of the domain's first CPU give (settingsFor()).
[[nodiscard]] std::vector<policies::PolicyKind> policyKinds(
    const GovernorConfig& config, const Machine& machine);

// Each CPU's domain: its index in `topology.domains`.
[[nodiscard]] std::vector<std::uint32_t> domainIndices(
    const policies::Topology& topology);

// One host CPU as the scheduler saw it over the last window (exact
// observation, Governor::tickExact()).
struct ExactCpu
{
    // The uclamp aggregation over the tasks runnable there during the
    // window, a task without a hint counting as [0, 1024]; [0, 1024] when
    // none was.
    policies::Clamp clamp;
    // One per hint whose tasks were runnable there: its handle and clamp
    // (cpu the host CPU; tid and cpuTimeUs unused).
    std::span<const HintSighting> hints;
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
    // Throws std::invalid_argument when the machine has no CPUs, or with
    // policyRefusals()'s messages, one per line.
    Governor(Machine& machine, const GovernorConfig& config);

    Governor(const Governor&) = delete;
    Governor& operator=(const Governor&) = delete;

    // Takes new settings; each domain keeps its last request and the time
    // of its last change, so rate limits carry over. Throws
    // std::invalid_argument with policyRefusals()'s messages, one per
    // line, and then changes nothing.
    void configure(const GovernorConfig& config);

    // The live energy preference of each CPU (one per machine CPU; a
    // shorter span leaves the rest at none), from the next tick on.
    void setEnergyPreferences(
        std::span<const policies::EnergyPreference> perCpu);

    // One tick at `nowUs` (CLOCK_MONOTONIC, microseconds) with the hinted
    // threads seen active since the previous tick, their CPUs mapped with
    // the machine's cpuOfHostCpu() (those that count nowhere are ignored).
    // Rewrites `report`, reusing its storage.
    void tick(std::uint64_t nowUs, std::span<const HintSighting> sightings,
              TickReport& report);

    // The same tick with exact observations: byHostCpu[n] is host CPU n's
    // window, mapped to the machine's CPU with cpuOfHostCpu() (those that
    // count nowhere are ignored; a machine CPU that no host CPU maps to
    // has no task and no clamp). See above for how the clamps are formed.
    void tickExact(std::uint64_t nowUs, std::span<const ExactCpu> byHostCpu,
                   TickReport& report);

    // Drops hint `handle`'s clamp from every CPU now (the hint ended).
    void forget(std::uint64_t handle);

    const Machine& machine() const noexcept
    {
        return machine_;
    }

    const std::vector<CpuView>& cpus() const noexcept
    {
        return views_;
    }

    std::uint64_t ticks() const noexcept
    {
        return ticks_;
    }

    // The firmware checks, fed every tick.
    const FirmwareWatch& firmware() const noexcept
    {
        return firmware_;
    }

    // The policy in force for `cpu` (below the machine's CPU count), its
    // domain's overrides applied.
    policies::PolicyKind policyOf(std::uint32_t cpu) const noexcept
    {
        return kinds_[cpu];
    }
    // The index in the machine's topology of the domain `cpu` decides in.
    std::uint32_t domainOf(std::uint32_t cpu) const noexcept
    {
        return domainOf_[cpu];
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

    // A sighting kept for the hold time, its cpu the machine's.
    struct Held
    {
        HintSighting sighting;
        std::uint64_t lastSeenUs = 0;
    };

    // One CPU's busy time and its hinted threads' CPU time per bucket of
    // the window, microseconds.
    struct CpuTime
    {
        std::array<std::uint64_t, ceilingBuckets> busy{};
        std::array<std::uint64_t, ceilingBuckets> hinted{};
    };

    // Both ticks: starts the tick at `nowUs`, samples the machine and
    // averages the load; returns the window's slot for this tick.
    std::size_t begin(std::uint64_t nowUs, TickReport& report);
    // Both ticks: lists each CPU's held handles, decides with clamp_,
    // writes what changed and updates the views.
    void finish(TickReport& report);

    // Moves the window to the bucket of `nowUs`, emptying the buckets it
    // passes; returns the bucket's slot.
    std::size_t advanceWindow(std::uint64_t nowUs);

    // Merges this tick's sightings into held_ (their CPU time into the
    // window's `slot` when there is one) and drops expired sightings.
    void hold(std::uint64_t nowUs, std::span<const HintSighting> sightings,
              std::optional<std::size_t> slot);

    // Whether the window holds other work than the hinted tasks' on `cpu`.
    bool otherWork(std::size_t cpu) const noexcept;

    Machine& machine_;
    // By (machine CPU, handle): a CPU's clamps are one range.
    std::map<std::pair<std::uint32_t, std::uint64_t>, Held> held_;
    std::vector<CpuTime> window_;
    std::uint64_t bucket_ = 0; // the bucket of the last tick, in bucket steps
    // When otherWork() last held, per CPU (looked at while it has clamps).
    std::vector<std::optional<std::uint64_t>> otherSeenUs_;
    std::vector<Group> groups_;
    std::vector<policies::PolicyKind> kinds_;        // per CPU
    std::vector<std::uint32_t> domainOf_;            // per CPU
    std::vector<policies::DomainState> domainState_; // between configures
    std::vector<CpuSample> samples_;
    std::vector<policies::UtilAverage> averages_;
    std::vector<std::uint16_t> util_;
    // Per CPU: how long it has been busy without a break, up to this tick
    // (a sample counts when busy for saturatedPercent of its span).
    std::vector<std::uint32_t> saturatedUs_;
    // Per CPU: the longest of its recent runs without a break, halving
    // every usualRunHalfLifeUs that the CPU is not saturated. A run is a
    // burst only once it outlasts this by a quarter (burstInput_), so
    // that a task that runs 20 ms every 50 ms is not a burst every period.
    std::vector<double> usualRunUs_;
    // What the policy is given as TickInput::saturatedUs: the part of the
    // current run beyond its CPU's usual run and a quarter.
    std::vector<std::uint32_t> burstInput_;
    std::vector<policies::Clamp> clamp_;
    std::vector<policies::EnergyPreference> preference_;
    std::vector<policies::TaskClamp> taskClamps_;
    std::vector<CppcRequest> requests_;
    std::vector<CpuView> views_;
    std::vector<bool> cpuWritten_;
    // tickExact(): the CPUs a host CPU mapped to this tick, and the hints
    // seen over all host CPUs.
    std::vector<bool> exactSeen_;
    std::vector<HintSighting> exactSightings_;
    std::uint64_t lastUs_ = 0;
    std::uint64_t ticks_ = 0;
    FirmwareWatch firmware_;
};

} // namespace cppcgov::daemon
