// SPDX-License-Identifier: Apache-2.0
// Abstract performance levels in kHz, for people: a CPU's performance
// scale is linear in frequency between the two points its _CPC gives,
// (LowestPerformance, LowestFrequency) and (NominalPerformance,
// NominalFrequency), and continues along the same line above nominal
// (boost) and below lowest. This is the conversion to show and export
// figures with; the kernel backend's requests go through FreqScale
// (backend/perf_caps.hpp), which reproduces the kernel's own rounding.
#pragma once

#include <cstdint>
#include <optional>

namespace cppc
{

struct FreqLine
{
    std::uint32_t lowestPerf = 0;
    std::uint32_t lowestKhz = 0;
    std::uint32_t nominalPerf = 0;
    std::uint32_t nominalKhz = 0;

    // `perf` in kHz, rounded to the nearest (0 for a level the line puts
    // below zero). Equal frequencies make a line through the origin and
    // nominal, as the kernel draws it. Nothing when a frequency is unknown
    // (0), nominal frequency is below lowest, nominal performance is not
    // above lowest while the frequencies differ, or the result does not
    // fit 32 bits.
    std::optional<std::uint32_t> khz(std::uint32_t perf) const noexcept;

    bool operator==(const FreqLine&) const = default;
};

} // namespace cppc
