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

    // Each CPU's weight in the set: its capacity scaled so that the
    // largest is 65535 (integer sums, exact for capacities in ratios of
    // 65535's divisors and within 1/65535 otherwise).
    std::uint64_t largest = 0;
    for (const std::uint32_t cpu : cpus)
    {
        largest = std::max<std::uint64_t>(largest, capacity[cpu]);
    }
    std::vector<std::uint64_t> weight(cpus.size(), 1);
    std::uint64_t totalWeight = cpus.size();
    if (largest > 0)
    {
        totalWeight = 0;
        for (std::size_t n = 0; n < cpus.size(); ++n)
        {
            weight[n] =
                (std::uint64_t{capacity[cpus[n]]} * 65535 + largest / 2) /
                largest;
            totalWeight += weight[n];
        }
    }

    // Utilization is summed as integers and turned into headroom at the
    // end: headroom = 100 - util x 100 / 1024 is linear, so the average of
    // the headroom is the headroom of the average, and the minimum of the
    // headroom is at the maximum of the utilization.
    const bool min = calculation == HeadroomCalculation::min;
    std::vector<std::uint64_t> used(cpus.size(), 0);
    std::uint64_t setUsed = 0; // the set's weighted utilization: max or sum
    const bool byBlock = w.count * cpus.size() > headroomExactReads;
    result.byBlock = byBlock;
    std::size_t i = 0;
    while (i < w.count)
    {
        const std::uint64_t number = history.number(w, i);
        std::uint64_t entry = 0;
        if (byBlock && number % blockEntries == 0 &&
            i + blockEntries <= w.count)
        {
            // A whole block: each CPU's peak (for the minimum; the set's
            // peak is then at most the sum of its CPUs') or sum.
            const std::uint64_t block = number / blockEntries;
            for (std::size_t n = 0; n < cpus.size(); ++n)
            {
                const std::uint64_t v = min ? history.blockPeak(block, cpus[n])
                                            : history.blockSum(block, cpus[n]);
                entry += weight[n] * v;
                used[n] = min ? std::max(used[n], v) : used[n] + v;
            }
            i += blockEntries;
        }
        else
        {
            const std::span<const std::uint16_t> row = history.row(w, i);
            for (std::size_t n = 0; n < cpus.size(); ++n)
            {
                const std::uint64_t u = row[cpus[n]];
                entry += weight[n] * u;
                used[n] = min ? std::max(used[n], u) : used[n] + u;
            }
            ++i;
        }
        setUsed = min ? std::max(setUsed, entry) : setUsed + entry;
    }
    const auto spare = [](double util) {
        return std::clamp(100.0 - util * 100.0 / 1024.0, 0.0, 100.0);
    };
    const double ticks = min ? 1.0 : static_cast<double>(w.count);
    result.headroom = totalWeight == 0
                          ? 100.0
                          : spare(static_cast<double>(setUsed) /
                                  static_cast<double>(totalWeight) / ticks);
    for (std::size_t k = 0; k < cpus.size(); ++k)
    {
        result.cpus[k].headroom = spare(static_cast<double>(used[k]) / ticks);
    }
    return result;
}

} // namespace cppcgov::daemon
