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
    }
    return "unknown";
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
        case Reason::fixed:
            return "fixed";
        case Reason::desiredExcursion:
            return "desired-excursion";
        case Reason::minimumExcursion:
            return "minimum-excursion";
    }
    return "unknown";
}

void decide(PolicyKind kind, const SchedutilConfig& config,
            const Topology& topology, const TickInput& input,
            std::span<DomainState> state,
            std::span<Decision> decisions) noexcept
{
    const std::uint64_t headroomQ10 = toQ10(config.headroom);
    for (std::size_t d = 0; d < topology.domains.size(); ++d)
    {
        const Domain& domain = topology.domains[d];
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
                    break;
                case PolicyKind::performance:
                    demand = {ceiling, 0, Reason::fixed};
                    break;
                case PolicyKind::powersave:
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
        if (st.valid && best.desired == st.perf)
        {
            continue;
        }
        if (st.valid)
        {
            const bool up = best.desired > st.perf;
            std::uint32_t limit = up ? config.rateLimitUpUs
                                     : config.rateLimitDownUs;
            if (limit == 0)
            {
                limit = transitionUs != 0 ? transitionUs : defaultRateLimitUs;
            }
            const bool risingFloor = up && domainFloor > st.floorPerf;
            if (input.nowUs - st.lastChangeUs < limit && !risingFloor)
            {
                out.desired = std::clamp(st.perf, best.min, best.max);
                out.reason = Reason::rateLimited;
                continue;
            }
        }
        st = {best.desired, domainFloor, input.nowUs, true};
        out.changed = true;
    }
}

} // namespace cppcgov::policies
