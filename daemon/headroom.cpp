// SPDX-License-Identifier: Apache-2.0
#include "headroom.hpp"

#include <algorithm>
#include <limits>

namespace cppcgov::daemon
{

std::optional<HeadroomCalculation> parseHeadroomCalculation(
    std::string_view name) noexcept
{
    if (name == "min")
    {
        return HeadroomCalculation::min;
    }
    if (name == "average")
    {
        return HeadroomCalculation::average;
    }
    return std::nullopt;
}

double headroomOf(std::uint16_t util) noexcept
{
    const unsigned u = std::min<unsigned>(util, 1024);
    return static_cast<double>(1024 - u) * 100.0 / 1024.0;
}

HeadroomResult headroom(const UtilHistory& history,
                        std::span<const std::uint32_t> cpus,
                        std::span<const std::uint32_t> capacity,
                        std::uint64_t windowUs, HeadroomCalculation calculation)
{
    HeadroomResult result;
    result.cpus.reserve(cpus.size());
    for (const std::uint32_t cpu : cpus)
    {
        result.cpus.push_back({cpu, 0});
    }
    const HistoryWindow w = history.window(windowUs);
    if (w.count == 0 || cpus.empty())
    {
        return result;
    }
    result.coveredUs = w.coveredUs;
    result.entries = w.count;

    double totalCapacity = 0;
    for (const std::uint32_t cpu : cpus)
    {
        totalCapacity += capacity[cpu];
    }
    const bool even = totalCapacity <= 0;
    if (even)
    {
        totalCapacity = static_cast<double>(cpus.size());
    }

    const bool min = calculation == HeadroomCalculation::min;
    const double start = min ? std::numeric_limits<double>::infinity() : 0.0;
    for (CpuHeadroom& c : result.cpus)
    {
        c.headroom = start;
    }
    double set = start;
    for (std::size_t i = 0; i < w.count; ++i)
    {
        double spare = 0;
        for (std::size_t n = 0; n < cpus.size(); ++n)
        {
            const double h = headroomOf(history.at(w, i, cpus[n]));
            const double weight = even ? 1.0 : capacity[cpus[n]];
            spare += h * weight;
            CpuHeadroom& c = result.cpus[n];
            c.headroom = min ? std::min(c.headroom, h) : c.headroom + h;
        }
        spare /= totalCapacity;
        set = min ? std::min(set, spare) : set + spare;
    }
    if (!min)
    {
        const auto n = static_cast<double>(w.count);
        set /= n;
        for (CpuHeadroom& c : result.cpus)
        {
            c.headroom /= n;
        }
    }
    result.headroom = std::clamp(set, 0.0, 100.0);
    for (CpuHeadroom& c : result.cpus)
    {
        c.headroom = std::clamp(c.headroom, 0.0, 100.0);
    }
    return result;
}

} // namespace cppcgov::daemon
