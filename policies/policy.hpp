// SPDX-License-Identifier: Apache-2.0
// The governor's decision logic: pure functions over plain values.
//
// Inputs per CPU are its frequency-invariant utilization (0..1024: busy
// fraction x delivered / highest performance) and the uclamp-style clamp
// of its active tasks; the topology says which CPUs share a performance
// domain. The output is a request per domain (min, desired, max, epp,
// autonomous selection and its activity window), and why. There is
// no clock, no file and no D-Bus in here: time comes in as a number, state
// is a plain struct the caller keeps, and tests are tables of numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace cppcgov::policies
{

// Utilization and clamps are on the kernel's scale.
inline constexpr std::uint32_t utilScale = 1024;

// A CPU's performance levels, from its _CPC.
struct CpuCaps
{
    std::uint32_t highest = 0;
    std::uint32_t nominal = 0;
    std::uint32_t lowestNonlinear = 0;
    std::uint32_t lowest = 0;
    // How long the platform takes to change performance, 0 when unknown.
    std::uint32_t transitionDelayUs = 0;
    // The frequencies at lowest and nominal performance, in kHz, 0 when
    // unknown: for showing performance in kHz (the policy never uses them).
    std::uint32_t lowestKhz = 0;
    std::uint32_t nominalKhz = 0;
};

// A uclamp pair: the utilization a CPU's tasks ask at least and at most.
struct Clamp
{
    std::uint16_t min = 0;
    std::uint16_t max = utilScale;

    bool operator==(const Clamp&) const = default;
};

// One active task's hint, if it has one. A task with no hint counts as
// [0, 1024], like the kernel's default uclamp.
struct TaskClamp
{
    bool hinted = false;
    Clamp clamp;
};

// The kernel's uclamp aggregation over a CPU's active tasks: the max of
// their minimums and the max of their maximums. No active task: [0, 1024].
Clamp aggregate(std::span<const TaskClamp> tasks) noexcept;

enum class Coordination : std::uint8_t
{
    perCpu, // HW_ALL, or no _PSD: every CPU decides alone
    shared, // SW_ANY / SW_ALL: one request for the domain, the max of its CPUs
};

struct Domain
{
    std::vector<std::uint32_t> cpus;
    Coordination coordination = Coordination::shared;
};

// Which CPUs decide together. Build it once; HW_ALL domains must be given
// as one domain per CPU (makeTopology does that).
struct Topology
{
    std::vector<CpuCaps> cpus;
    std::vector<Domain> domains;
};

// Splits HW_ALL (perCpu) domains into one domain per CPU and checks that
// every CPU is in exactly one domain. Throws std::invalid_argument.
Topology makeTopology(std::vector<CpuCaps> cpus, std::vector<Domain> domains);

enum class Floor : std::uint8_t
{
    lowestNonlinear,
    lowest,
};

// The schedutil policy's knobs, with the defaults of the shipped
// config/policy.yaml.
struct SchedutilConfig
{
    // target = headroom x util, before clamps (the kernel's 1.25).
    double headroom = 1.25;
    // Minimum time between two changes; 0 means the platform's transition
    // delay, or 1000 us when it reports none.
    std::uint32_t rateLimitUpUs = 0;
    std::uint32_t rateLimitDownUs = 0;
    Floor floor = Floor::lowestNonlinear;
    // Whether requests may go above nominal performance.
    bool boost = false;
    // A CPU busy without a break for this long beyond what its recent runs
    // lasted (TickInput::saturatedUs) has a demand its utilization average
    // does not show yet: its
    // request at least doubles (burstFactor), up to the ceiling and its
    // tasks' util_max, at every tick it stays so. 0: never.
    std::uint32_t burstUs = 2000;
    // A request that utilization alone moves by less than this share of
    // the domain's highest performance, in percent, is left as it is (the
    // floor, the ceiling, a clamp and a burst are always written): every
    // write costs the platform a transition, and on a PCC machine a
    // mailbox round trip; for minStepHoldUs at most. 0: every change is
    // written.
    std::uint32_t minStepPercent = 5;

    bool operator==(const SchedutilConfig&) const = default;
};

// Energy-performance preference values (the CPPC register, 0..255):
// 0 asks for performance, 255 for energy efficiency. The balanced value is
// the middle, 128 (0x80): what Linux's intel_pstate and amd-pstate write
// for "balance_performance", and the midpoint of the range the ACPI
// specification defines.
inline constexpr std::uint8_t eppPerformance = 0;
inline constexpr std::uint8_t eppBalanced = 128;
inline constexpr std::uint8_t eppEfficiency = 255;

// What a live energy-preference hint asks of a CPU; the larger value wins
// on a CPU that several hints cover (performance beats efficiency, which
// beats no hint).
enum class EnergyPreference : std::uint8_t
{
    none = 0,
    efficiency = 1,
    performance = 2,
};

// "none", "efficiency", "performance".
std::string_view energyPreferenceName(EnergyPreference preference) noexcept;

// The autonomous policy's knobs, with the defaults of the shipped
// config/policy.yaml. Its rate limits, floor and ceiling (boost) are the
// schedutil ones (SchedutilConfig).
struct AutonomousConfig
{
    // The domain's EPP when no hint on its CPUs says otherwise.
    std::uint8_t energyPreference = eppBalanced;
    // The EPP a "performance" and an "efficiency" hint stand for.
    std::uint8_t energyPreferencePerformance = eppPerformance;
    std::uint8_t energyPreferenceEfficiency = eppEfficiency;
    // The platform's activity window in microseconds; nothing: leave the
    // platform's own.
    std::optional<std::uint32_t> activityWindowUs;

    bool operator==(const AutonomousConfig&) const = default;
};

// The EPP of a domain: the strongest preference among its CPUs' hints
// (`preference`, one per CPU of the topology; empty: no hints), mapped
// with `config`, or the configured energyPreference when none has one.
std::uint8_t domainEpp(const AutonomousConfig& config, const Domain& domain,
                       std::span<const EnergyPreference> preference) noexcept;

enum class PolicyKind : std::uint8_t
{
    schedutil,
    performance,
    powersave,
    // The platform chooses within bounds (CPPC autonomous selection): see
    // decide().
    autonomous,
};

std::string_view policyName(PolicyKind kind) noexcept;

// Why a domain's request is what it is.
enum class Reason : std::uint8_t
{
    utilization, // headroom x util
    clampMin,    // raised to a task's util_min
    clampMax,    // capped by the tasks' util_max
    floor,       // raised to the floor (lowest nonlinear by default)
    ceiling,     // capped at nominal (or highest with boost)
    rateLimited, // unchanged: too soon after the last change
    burst,       // raised by burstFactor: busy without a break (burstUs)
    fixed,       // performance or powersave
    // Not decide()'s: the daemon reports these in place of the decision's
    // reason when the platform's PerformanceLimited register, as last
    // read, said it held the CPU below Desired (bit 0) or below Minimum
    // (bit 1); Minimum's wins when both are set.
    desiredExcursion,
    minimumExcursion,
    // Autonomous: the platform chooses within [min, max], which no hint
    // narrowed (clamp-min and clamp-max say when one did).
    autonomous,
};

// The reason as the D-Bus API and the metrics name it: "utilization",
// "clamp-min", "clamp-max", "floor", "ceiling", "rate-limited", "burst",
// "fixed",
// "desired-excursion", "minimum-excursion", "autonomous".
std::string_view reasonName(Reason reason) noexcept;

// What the caller keeps per domain between ticks.
struct DomainState
{
    std::uint32_t perf = 0;      // the last request sent
    std::uint32_t floorPerf = 0; // the clamp-derived floor of that request
    std::uint64_t lastChangeUs = 0;
    bool valid = false; // nothing sent yet
    // The rest of the last request sent (autonomous only; a request with
    // autonomous selection off has min and max at the domain's lowest and
    // highest and no EPP).
    std::uint32_t min = 0;
    std::uint32_t max = 0;
    std::optional<std::uint8_t> epp;
    bool autonomous = false;
    // Since when a change smaller than SchedutilConfig::minStepPercent has
    // been held back (none: the request is what the policy asks).
    std::optional<std::uint64_t> heldSinceUs;
};

// A domain's request: the whole CPPC request, min <= desired <= max. The
// schedutil, performance and powersave policies decide Desired and leave
// Minimum and Maximum at the domain's lowest and highest performance (the
// largest of its CPUs'), EPP unset and autonomous selection off. The
// autonomous policy decides the bounds instead (see decide()).
struct Decision
{
    std::uint32_t min = 0;
    std::uint32_t desired = 0;
    std::uint32_t max = 0;
    // Energy-performance preference, 0 (performance) to 255 (energy);
    // nothing: leave it as it is.
    std::optional<std::uint8_t> epp;
    // CPPC autonomous selection, and its activity window (nothing: leave
    // it as it is).
    bool autonomous = false;
    std::optional<std::uint32_t> activityWindowUs;
    // Why `desired` is what it is.
    Reason reason = Reason::utilization;
    // The request differs from the last one sent: write it.
    bool changed = false;
    // The CPU whose demand set a shared domain's request.
    std::uint32_t drivingCpu = 0;
};

// How much a burst (SchedutilConfig::burstUs) raises a request a tick.
inline constexpr std::uint32_t burstFactor = 2;

// How long a change under SchedutilConfig::minStepPercent is held back at
// most: a small step that utilization keeps asking for is written then,
// so that a request does not stay above (or below) its demand for good.
inline constexpr std::uint64_t minStepHoldUs = 100000;

// Everything one tick needs, per CPU: utilization, aggregated clamp, the
// energy preference of the live hints (empty: none anywhere), and for how
// long the CPU has been busy without a break beyond what its recent runs
// lasted, up to now (empty: not known).
struct TickInput
{
    std::uint64_t nowUs = 0;
    std::span<const std::uint16_t> util;
    std::span<const Clamp> clamp;
    std::span<const EnergyPreference> preference;
    std::span<const std::uint32_t> saturatedUs{};
};

// Decides every domain of `topology`: `state` and `decisions` have one
// element per domain. Updates `state` for the domains whose request
// changed. Does not allocate.
//
// The autonomous policy turns autonomous selection on and decides the
// bounds the platform chooses in, per domain (a shared domain takes the
// largest of its CPUs' values):
//   - Maximum from the tasks' util_max, mapped to performance as schedutil
//     maps utilization (util_max x highest / 1024), at most the ceiling
//     (nominal, or highest with boost) and at least the floor;
//   - Minimum from util_min the same way, at least the floor (lowest
//     nonlinear, or lowest) and at most Maximum (a Minimum above another
//     CPU's Maximum raises that Maximum: a minimum wins, as in uclamp);
//   - Desired equal to Minimum. With autonomous selection on, a Desired
//     above Minimum is taken by platforms as an explicit performance
//     requirement, which would defeat the platform's own choice; Minimum
//     is the one value in [min, max] that asks for nothing the bounds do
//     not already say, and it changes only when the hints do, so the
//     request is written when the hints change and not at every tick;
//   - EPP from domainEpp(), the activity window from the configuration.
// Changes are rate limited as schedutil's: up (Minimum or Maximum rising,
// or EPP falling toward performance) by rateLimitUpUs, down by
// rateLimitDownUs, a rising Minimum at once. A domain that switches to or
// from autonomous is written at once; the other policies' requests carry
// autonomous selection off.
void decide(PolicyKind kind, const SchedutilConfig& config,
            const AutonomousConfig& autonomous, const Topology& topology,
            const TickInput& input, std::span<DomainState> state,
            std::span<Decision> decisions) noexcept;

// decide() with the default AutonomousConfig.
void decide(PolicyKind kind, const SchedutilConfig& config,
            const Topology& topology, const TickInput& input,
            std::span<DomainState> state,
            std::span<Decision> decisions) noexcept;

} // namespace cppcgov::policies
