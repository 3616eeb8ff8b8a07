// SPDX-License-Identifier: Apache-2.0
#include "lib/firmware_sanity.hpp"

#include "lib/cpc_descriptor.hpp"
#include "lib/freq_line.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

namespace cppc
{
namespace
{

constexpr std::array<std::string_view, sanityCheckCount> checkNames = {
    "reference-perf",
    "counter-rate",
    "follow",
    "counters-stuck",
};

// A fixed-point figure with `decimals` digits after the point.
std::string fixed(double value, int decimals)
{
    std::array<char, 64> buffer{};
    std::snprintf(buffer.data(), buffer.size(), "%.*f", decimals, value);
    return buffer.data();
}

std::string mhz(double hz)
{
    return fixed(hz / 1e6, 1) + " MHz";
}

// An Integer entry that fits 32 bits; nothing for a register or absence.
std::optional<std::uint32_t> integer32(const CpcDescriptor& d, CpcEntry e)
{
    const CpcValue& v = d.entry(e);
    if (v.kind != CpcValue::Kind::integer ||
        v.integer > std::numeric_limits<std::uint32_t>::max())
    {
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(v.integer);
}

// An optional entry: an Integer, or 0 when not supported (absent, NULL
// register, Integer 0); nothing for a live register or a value beyond 32
// bits.
std::optional<std::uint32_t> optionalInteger32(const CpcDescriptor& d,
                                               CpcEntry e)
{
    const CpcValue& v = d.entry(e);
    if (v.kind == CpcValue::Kind::absent ||
        (v.kind == CpcValue::Kind::reg && v.reg.isNull()))
    {
        return 0;
    }
    return integer32(d, e);
}

} // namespace

std::string_view checkName(SanityCheck check) noexcept
{
    return checkNames[static_cast<std::size_t>(check)];
}

std::optional<PerfScale> perfScaleOf(const CpcDescriptor& cpu)
{
    const auto highest = integer32(cpu, CpcEntry::highestPerf);
    const auto nominal = integer32(cpu, CpcEntry::nominalPerf);
    const auto lowest = integer32(cpu, CpcEntry::lowestPerf);
    const auto reference = optionalInteger32(cpu, CpcEntry::referencePerf);
    const auto lowestMhz = optionalInteger32(cpu, CpcEntry::lowestFreq);
    const auto nominalMhz = optionalInteger32(cpu, CpcEntry::nominalFreq);
    if (!highest || !nominal || !lowest || !reference || !lowestMhz ||
        !nominalMhz)
    {
        return std::nullopt;
    }
    constexpr std::uint32_t maxMhz =
        std::numeric_limits<std::uint32_t>::max() / 1000;
    PerfScale s;
    s.highest = *highest;
    s.nominal = *nominal;
    s.lowest = *lowest;
    s.referencePerf = *reference;
    // A frequency beyond 4.29 THz is no frequency: unknown.
    s.lowestKhz = *lowestMhz <= maxMhz ? *lowestMhz * 1000 : 0;
    s.nominalKhz = *nominalMhz <= maxMhz ? *nominalMhz * 1000 : 0;
    return s;
}

std::optional<double> referenceHz(const PerfScale& scale) noexcept
{
    if (scale.nominalKhz == 0 || scale.nominal == 0)
    {
        return std::nullopt;
    }
    return 1e3 * scale.nominalKhz * scale.effectiveReference() / scale.nominal;
}

std::optional<std::string> checkReferencePerf(const PerfScale& scale)
{
    const std::uint32_t reference = scale.effectiveReference();
    const std::string name =
        scale.referencePerf != 0
            ? "ReferencePerformance " + std::to_string(reference)
            : "NominalPerformance " + std::to_string(reference) +
                  " (no ReferencePerformance)";
    if (reference == 0)
    {
        return name + " is no performance level: the reference counter "
                      "would not count, and no delivered figure exists";
    }
    if (reference > scale.highest)
    {
        return name + " is above HighestPerformance " +
               std::to_string(scale.highest) +
               ": it is no performance level of the CPU, and delivered "
               "performance computed from it is off the CPU's scale";
    }
    const FreqLine line{scale.lowest, scale.lowestKhz, scale.nominal,
                        scale.nominalKhz};
    if (const std::optional<std::uint32_t> khz = line.khz(reference);
        khz && *khz == 0)
    {
        return name + " lies at or below 0 MHz on the line through (" +
               std::to_string(scale.lowest) + ", " +
               std::to_string(scale.lowestKhz / 1000) + " MHz) and (" +
               std::to_string(scale.nominal) + ", " +
               std::to_string(scale.nominalKhz / 1000) +
               " MHz): no reference counter can count there";
    }
    return std::nullopt;
}

std::optional<std::string> checkCounterRate(const PerfScale& scale,
                                            double counterHz, double tolerance)
{
    const std::optional<double> wanted = referenceHz(scale);
    if (!wanted || !(counterHz > 0) || !(*wanted > 0))
    {
        return std::nullopt;
    }
    // Delivered figures are off by wanted / counterHz.
    const double factor = *wanted / counterHz;
    if (factor <= 1 + tolerance && factor * (1 + tolerance) >= 1)
    {
        return std::nullopt;
    }
    const std::string way = factor < 1 ? fixed(1 / factor, 2) + "x too low"
                                       : fixed(factor, 2) + "x too high";
    return (scale.referencePerf != 0 ? "ReferencePerformance "
                                     : "NominalPerformance ") +
           std::to_string(scale.effectiveReference()) + " stands for a " +
           mhz(*wanted) + " reference counter at NominalFrequency " +
           std::to_string(scale.nominalKhz / 1000) +
           " MHz / NominalPerformance " + std::to_string(scale.nominal) +
           ", but the counter counts at " + mhz(counterHz) +
           ": delivered performance reads " + way;
}

std::optional<std::string> checkFollow(const FollowWindow& w, double tolerance)
{
    if (w.requested == 0 || !(w.delivered > 0))
    {
        return std::nullopt;
    }
    const double requested = w.requested;
    const bool below = w.delivered < requested * (1 - tolerance);
    const bool above = w.delivered > requested * (1 + tolerance);
    if ((below && w.limited) || (above && w.aboveAllowed) || (!below && !above))
    {
        return std::nullopt;
    }
    std::string reason =
        "delivered " + std::to_string(std::lround(w.delivered)) + " while " +
        std::to_string(w.requested) + " requested for " +
        fixed(static_cast<double>(w.durationUs) / 1e6,
              w.durationUs % 1'000'000 == 0 ? 0 : 1) +
        " s";
    if (below)
    {
        reason += w.limitedReadable ? ", no PerformanceLimited excursion"
                                    : " (PerformanceLimited not readable)";
    }
    return reason;
}

std::optional<std::string> checkCountersStuck(
    std::string_view counter, std::uint32_t stuckReadings, std::uint32_t limit)
{
    if (limit == 0 || stuckReadings < limit)
    {
        return std::nullopt;
    }
    return "the " + std::string(counter) + " counter did not move over " +
           std::to_string(limit) + " readings while the CPU was busy";
}

} // namespace cppc
