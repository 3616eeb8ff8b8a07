// SPDX-License-Identifier: Apache-2.0
// renderRecordPlot: the picture of a recording (record_timeline.hpp). Per
// CPU a strip over time, utilization as a filled area and requested and
// delivered performance as lines, or, for more than stripCpuLimit CPUs, a
// heatmap row per CPU (utilization in its upper half, requested
// performance in its lower half); above them a lane per overlapping
// hint with each hint's life as a bar, and dotted lines across the CPUs
// where hints begin; a legend, CPU labels and a time axis in seconds in
// the built-in font. A plain function of its inputs.
#pragma once

#include "raster.hpp"
#include "record_timeline.hpp"

#include <cstdint>
#include <span>
#include <string_view>

namespace cppcgov::tools
{

// Up to this many CPUs each get a strip; more get a heatmap row each.
constexpr std::size_t stripCpuLimit = 16;

// The plot's colours, for the tests to find.
namespace plot_colors
{
constexpr Rgb background{255, 255, 255};
constexpr Rgb stripBackground{244, 244, 244};
constexpr Rgb util{158, 197, 232};
constexpr Rgb requested{230, 85, 13};
constexpr Rgb delivered{49, 163, 84};
constexpr Rgb clamp{117, 107, 177};
constexpr Rgb latency{214, 39, 40};
constexpr Rgb text{40, 40, 40};
// The full ends of a heatmap's scales, from white.
constexpr Rgb hotUtil{8, 48, 107};
constexpr Rgb hotPerf{166, 54, 3};
} // namespace plot_colors

// The plot's width in pixels, and where the time axis runs.
constexpr int plotWidth = 960;
constexpr int plotLeft = 64;
constexpr int plotRight = plotWidth - 12;

// The picture of `timeline`, whose row i is CPU cpus[i] (labels), with
// performance drawn on 0..perfScale (at least 1) and `title` on top.
[[nodiscard]] Raster renderRecordPlot(
    const RecordTimeline& timeline, std::span<const std::uint32_t> cpus,
    std::uint32_t perfScale, std::string_view title);

} // namespace cppcgov::tools
