// SPDX-License-Identifier: Apache-2.0
#include "policy.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace cppcgov::policies
{
namespace
{

constexpr std::uint32_t defaultRateLimitUs = 1000;

// Fixed point with 10 fractional bits, like the kernel's capacity math.
std::uint64_t toQ10(double v)
{
    return static_cast<std::uint64_t>(std::llround(v * 1024.0));
}

struct CpuDemand
{
    std::uint32_t perf;
    std::uint32_t clampFloor; // the perf a task's util_min asks for
    Reason reason;
};

CpuDemand schedutilDemand(const CpuCaps& caps, std::uint64_t headroomQ10,
                          std::uint32_t floorPerf, std::uint32_t ceiling,
                          std::uint16_t util, Clamp clamp)
{
    const std::uint64_t boosted =
        (std::min<std::uint64_t>(util, utilScale) * headroomQ10) >> 10;
    std::uint64_t clamped = boosted;
    Reason reason = Reason::utilization;
    // Clamps apply after the headroom; a minimum at or above the maximum
    // wins, as in the kernel's uclamp_rq_util_with().
    if (clamp.min >= clamp.max)
    {
        clamped = clamp.min;
        reason = boosted < clamp.min ? Reason::clampMin : Reason::clampMax;
    }
    else if (boosted < clamp.min)
    {
        clamped = clamp.min;
        reason = Reason::clampMin;
    }
    else if (boosted > clamp.max)
    {
        // Capping at 1024 is only saturation, not a task's limit.
        clamped = clamp.max;
        reason = clamp.max < utilScale ? Reason::clampMax : Reason::utilization;
    }
    auto perf = static_cast<std::uint32_t>(clamped * caps.highest / utilScale);
    const auto clampFloor = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        std::uint64_t{clamp.min} * caps.highest / utilScale, ceiling));
    if (perf < floorPerf)
    {
        perf = floorPerf;
        reason = Reason::floor;
    }
    if (perf > ceiling)
    {
        perf = ceiling;
        reason = Reason::ceiling;
    }
    return {perf, clampFloor, reason};
}

// A burst's demand (SchedutilConfig::burstUs): `last`, the domain's last
// request, times burstFactor, within the ceiling and the tasks' util_max
// (clamp-max when that binds); `demand` when that is no higher.
CpuDemand burstDemand(const CpuCaps& caps, std::uint32_t ceiling,
                      std::uint32_t last, Clamp clamp, CpuDemand demand)
{
    std::uint64_t perf =
        std::min<std::uint64_t>(std::uint64_t{last} * burstFactor, ceiling);
    Reason reason = Reason::burst;
    if (clamp.min < clamp.max && clamp.max < utilScale)
    {
        const std::uint64_t cap =
            std::uint64_t{clamp.max} * caps.highest / utilScale;
        if (cap < perf)
        {
            perf = cap;
            reason = Reason::clampMax; // the hint, not the burst, says
        }
    }
    if (perf > demand.perf)
    {
        demand.perf = static_cast<std::uint32_t>(perf);
        demand.reason = reason;
    }
    return demand;
}

std::uint32_t rateLimit(std::uint32_t configured, std::uint32_t transitionUs)
{
    if (configured != 0)
    {
        return configured;
    }
    return transitionUs != 0 ? transitionUs : defaultRateLimitUs;
}

// The autonomous policy's request for one domain (see decide()).
void decideAutonomous(const SchedutilConfig& config,
                      const AutonomousConfig& autonomous,
                      const Topology& topology, const Domain& domain,
                      const TickInput& input, DomainState& st, Decision& out)
{
    Decision best;
    best.autonomous = true;
    best.activityWindowUs = autonomous.activityWindowUs;
    best.drivingCpu = domain.cpus.front();
    best.reason = Reason::autonomous;
    std::uint32_t lowest = 0;
    std::uint32_t highest = 0;
    std::uint32_t transitionUs = 0;
    bool minRaised = false;
    std::uint32_t domainCeiling = 0;
    for (const std::uint32_t cpu : domain.cpus)
    {
        const CpuCaps& caps = topology.cpus[cpu];
        transitionUs = std::max(transitionUs, caps.transitionDelayUs);
        lowest = std::max(lowest, caps.lowest);
        highest = std::max(highest, caps.highest);
        const std::uint32_t ceiling =
            config.boost ? caps.highest : caps.nominal;
        const std::uint32_t floorPerf =
            config.floor == Floor::lowest ? caps.lowest : caps.lowestNonlinear;
        const Clamp clamp = input.clamp[cpu];
        const auto toPerf = [&caps](std::uint16_t util) {
            return static_cast<std::uint32_t>(
                std::uint64_t{std::min<std::uint16_t>(util, utilScale)} *
                caps.highest / utilScale);
        };
        const std::uint32_t maxPerf =
            std::max(std::min(toPerf(clamp.max), ceiling), floorPerf);
        const std::uint32_t minPerf =
            std::max(std::min(toPerf(clamp.min), ceiling), floorPerf);
        if (minPerf > best.min)
        {
            best.min = minPerf;
            best.drivingCpu = cpu;
        }
        best.max = std::max(best.max, maxPerf);
        minRaised = minRaised || minPerf > floorPerf;
        domainCeiling = std::max(domainCeiling, ceiling);
    }
    // A minimum above a maximum wins; and neither leaves what the
    // firmware can be asked for.
    best.max = std::clamp(std::max(best.max, best.min), lowest,
                          std::max(lowest, highest));
    best.min = std::clamp(best.min, lowest, best.max);
    best.desired = best.min;
    best.epp = domainEpp(autonomous, domain, input.preference);
    if (minRaised)
    {
        best.reason = Reason::clampMin;
    }
    else if (best.max < domainCeiling)
    {
        best.reason = Reason::clampMax;
    }
    out = best;
    const bool same = st.valid && st.autonomous && st.min == best.min &&
                      st.max == best.max && st.epp == best.epp;
    if (same)
    {
        return;
    }
    if (st.valid && st.autonomous)
    {
        const bool up = best.min > st.min || best.max > st.max ||
                        (st.epp && best.epp && *best.epp < *st.epp);
        const std::uint32_t limit = rateLimit(
            up ? config.rateLimitUpUs : config.rateLimitDownUs, transitionUs);
        const bool risingFloor = best.min > st.min;
        if (input.nowUs - st.lastChangeUs < limit && !risingFloor)
        {
            out.min = st.min;
            out.max = st.max;
            out.desired = st.perf;
            out.epp = st.epp;
            out.reason = Reason::rateLimited;
            return;
        }
    }
    st = {best.desired, best.min, input.nowUs, true,        best.min,
          best.max,     best.epp, true,        std::nullopt};
    out.changed = true;
}

} // namespace

Clamp aggregate(std::span<const TaskClamp> tasks) noexcept
{
    if (tasks.empty())
    {
        return {};
    }
    Clamp out{0, 0};
    for (const TaskClamp& t : tasks)
    {
        const Clamp c = t.hinted ? t.clamp : Clamp{};
        out.min = std::max(out.min, c.min);
        out.max = std::max(out.max, c.max);
    }
    return out;
}

Topology makeTopology(std::vector<CpuCaps> cpus, std::vector<Domain> domains)
{
    Topology t;
    t.cpus = std::move(cpus);
    std::vector<bool> seen(t.cpus.size(), false);
    for (Domain& d : domains)
    {
        for (std::uint32_t cpu : d.cpus)
        {
            if (cpu >= t.cpus.size())
            {
                throw std::invalid_argument(
                    "domain names CPU " + std::to_string(cpu) +
                    ", which has no capabilities");
            }
            if (seen[cpu])
            {
                throw std::invalid_argument(
                    "CPU " + std::to_string(cpu) + " is in two domains");
            }
            seen[cpu] = true;
        }
        if (d.coordination == Coordination::perCpu)
        {
            for (std::uint32_t cpu : d.cpus)
            {
                t.domains.push_back({{cpu}, Coordination::perCpu});
            }
        }
        else if (!d.cpus.empty())
        {
            t.domains.push_back(std::move(d));
        }
    }
    for (std::size_t cpu = 0; cpu < seen.size(); ++cpu)
    {
        if (!seen[cpu])
        {
            throw std::invalid_argument(
                "CPU " + std::to_string(cpu) + " is in no domain");
        }
    }
    return t;
}

std::string_view policyName(PolicyKind kind) noexcept
{
    switch (kind)
    {
        case PolicyKind::schedutil:
            return "schedutil";
        case PolicyKind::performance:
            return "performance";
        case PolicyKind::powersave:
            return "powersave";
        case PolicyKind::autonomous:
            return "autonomous";
    }
    return "unknown";
}

std::string_view energyPreferenceName(EnergyPreference preference) noexcept
{
    switch (preference)
    {
        case EnergyPreference::none:
            return "none";
        case EnergyPreference::efficiency:
            return "efficiency";
        case EnergyPreference::performance:
            return "performance";
    }
    return "unknown";
}

std::uint8_t domainEpp(const AutonomousConfig& config, const Domain& domain,
                       std::span<const EnergyPreference> preference) noexcept
{
    EnergyPreference strongest = EnergyPreference::none;
    for (const std::uint32_t cpu : domain.cpus)
    {
        if (cpu < preference.size())
        {
            strongest = std::max(strongest, preference[cpu]);
        }
    }
    switch (strongest)
    {
        case EnergyPreference::performance:
            return config.energyPreferencePerformance;
        case EnergyPreference::efficiency:
            return config.energyPreferenceEfficiency;
        case EnergyPreference::none:
            break;
    }
    return config.energyPreference;
}

std::string_view reasonName(Reason reason) noexcept
{
    switch (reason)
    {
        case Reason::utilization:
            return "utilization";
        case Reason::clampMin:
            return "clamp-min";
        case Reason::clampMax:
            return "clamp-max";
        case Reason::floor:
            return "floor";
        case Reason::ceiling:
            return "ceiling";
        case Reason::rateLimited:
            return "rate-limited";
        case Reason::burst:
            return "burst";
        case Reason::fixed:
            return "fixed";
        case Reason::desiredExcursion:
            return "desired-excursion";
        case Reason::minimumExcursion:
            return "minimum-excursion";
        case Reason::autonomous:
            return "autonomous";
    }
    return "unknown";
}

void decide(PolicyKind kind, const SchedutilConfig& config,
            const Topology& topology, const TickInput& input,
            std::span<DomainState> state,
            std::span<Decision> decisions) noexcept
{
    decide(kind, config, AutonomousConfig{}, topology, input, state, decisions);
}

void decide(PolicyKind kind, const SchedutilConfig& config,
            const AutonomousConfig& autonomous, const Topology& topology,
            const TickInput& input, std::span<DomainState> state,
            std::span<Decision> decisions) noexcept
{
    const std::uint64_t headroomQ10 = toQ10(config.headroom);
    for (std::size_t d = 0; d < topology.domains.size(); ++d)
    {
        const Domain& domain = topology.domains[d];
        if (kind == PolicyKind::autonomous)
        {
            decideAutonomous(config, autonomous, topology, domain, input,
                             state[d], decisions[d]);
            continue;
        }
        Decision best;
        best.drivingCpu = domain.cpus.front();
        std::uint32_t domainFloor = 0;
        std::uint32_t transitionUs = 0;
        for (std::uint32_t cpu : domain.cpus)
        {
            const CpuCaps& caps = topology.cpus[cpu];
            transitionUs = std::max(transitionUs, caps.transitionDelayUs);
            best.min = std::max(best.min, caps.lowest);
            best.max = std::max(best.max, caps.highest);
            const std::uint32_t ceiling =
                config.boost ? caps.highest : caps.nominal;
            const std::uint32_t floorPerf = config.floor == Floor::lowest
                                                ? caps.lowest
                                                : caps.lowestNonlinear;
            CpuDemand demand{};
            switch (kind)
            {
                case PolicyKind::schedutil:
                    demand =
                        schedutilDemand(caps, headroomQ10, floorPerf, ceiling,
                                        input.util[cpu], input.clamp[cpu]);
                    if (config.burstUs != 0 && state[d].valid &&
                        !state[d].autonomous &&
                        cpu < input.saturatedUs.size() &&
                        input.saturatedUs[cpu] >= config.burstUs)
                    {
                        demand = burstDemand(caps, ceiling, state[d].perf,
                                             input.clamp[cpu], demand);
                    }
                    break;
                case PolicyKind::performance:
                    demand = {ceiling, 0, Reason::fixed};
                    break;
                case PolicyKind::powersave:
                case PolicyKind::autonomous: // decided above
                    demand = {floorPerf, 0, Reason::fixed};
                    break;
            }
            domainFloor = std::max(domainFloor, demand.clampFloor);
            if (demand.perf > best.desired)
            {
                best.desired = demand.perf;
                best.reason = demand.reason;
                best.drivingCpu = cpu;
            }
        }
        // Firmware whose lowest nonlinear level lies below its lowest, or
        // whose nominal lies above its highest, must not make a request
        // that contradicts itself.
        best.min = std::min(best.min, best.max);
        best.desired = std::clamp(best.desired, best.min, best.max);
        DomainState& st = state[d];
        Decision& out = decisions[d];
        out = best;
        // Leaving autonomous selection is written at once.
        if (st.valid && best.desired == st.perf && !st.autonomous)
        {
            st.heldSinceUs.reset();
            continue;
        }
        if (st.valid && !st.autonomous && best.reason == Reason::utilization &&
            std::uint64_t{st.perf > best.desired ? st.perf - best.desired
                                                 : best.desired - st.perf} *
                    100 <
                std::uint64_t{best.max} * config.minStepPercent)
        {
            if (!st.heldSinceUs)
            {
                st.heldSinceUs = input.nowUs;
            }
            if (input.nowUs - *st.heldSinceUs < minStepHoldUs)
            {
                out.desired = std::clamp(st.perf, best.min, best.max);
                continue;
            }
        }
        if (st.valid && !st.autonomous)
        {
            const bool up = best.desired > st.perf;
            const std::uint32_t limit =
                rateLimit(up ? config.rateLimitUpUs : config.rateLimitDownUs,
                          transitionUs);
            const bool risingFloor = up && domainFloor > st.floorPerf;
            if (input.nowUs - st.lastChangeUs < limit && !risingFloor)
            {
                out.desired = std::clamp(st.perf, best.min, best.max);
                out.reason = Reason::rateLimited;
                continue;
            }
        }
        st = {best.desired, domainFloor,  input.nowUs, true,        best.min,
              best.max,     std::nullopt, false,       std::nullopt};
        out.changed = true;
    }
}

} // namespace cppcgov::policies
