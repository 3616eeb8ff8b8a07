// SPDX-License-Identifier: Apache-2.0
// The headroom query: how much of a set of CPUs' capacity was spare over a
// recent window, from the daemon's utilization history (util_history.hpp).
// After Android's getCpuHeadroom (a window of 50 ms to 10 s, the minimum or
// the average over it, one number in [0, 100] for the set), with the
// per-CPU values beside the set's.
//
// In the daemon's own terms: a CPU's utilization is frequency-invariant,
// 0..1024 of its highest performance, so its headroom in an entry is
// (1024 - util) / 1024 x 100 percent of its capacity (its highest
// performance). The set's headroom in an entry is its CPUs' headroom
// weighted by their capacity: the share of the set's whole capacity that
// was spare. The minimum is the lowest entry over the window, the average
// the mean of the entries (each one step, util_history.hpp).
//
// A query reads the window's entries of each CPU asked: up to 10 s of
// ticks times the CPUs. Beyond headroomExactReads values it reads each
// whole block of the window (util_history.hpp) as one: averages and each
// CPU's minimum stay exact, and the set's minimum takes, per block, the
// sum of its CPUs' peaks, which is never less than the set's peak in the
// block: it can only say there was less headroom than there was, by at
// most how far the CPUs' peaks fall at different ticks of a block (16
// ticks). A 10 s window over 192 CPUs at 1 ms reads 120 thousand values
// instead of 1.9 million.
//
// Pure arithmetic: no D-Bus, no logging, no clock.
#pragma once

#include "daemon/util_history.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace cppcgov::daemon
{

// The windows a query may ask for, in milliseconds.
inline constexpr std::uint32_t headroomMinWindowMs = 50;
inline constexpr std::uint32_t headroomMaxWindowMs = 10'000;
// The most values a query reads one by one (see above).
inline constexpr std::size_t headroomExactReads = std::size_t{1} << 17;

enum class HeadroomCalculation : std::uint8_t
{
    min,
    average,
};

// "min" or "average"; nothing for anything else.
std::optional<HeadroomCalculation> parseHeadroomCalculation(
    std::string_view name) noexcept;

// One CPU's share of the answer.
struct CpuHeadroom
{
    std::uint32_t cpu = 0;
    double headroom = 0; // percent, 0..100
};

struct HeadroomResult
{
    // The set's headroom, percent, 0..100 (see above).
    double headroom = 0;
    // Each CPU's, in the order asked.
    std::vector<CpuHeadroom> cpus;
    // How long the entries used cover (at most the window; less while the
    // history is younger than it), and how many there were. 0 entries:
    // nothing recorded yet, and the numbers above are 0.
    std::uint64_t coveredUs = 0;
    std::size_t entries = 0;
    // Whether whole blocks were read as one (see above).
    bool byBlock = false;
};

// One CPU's headroom, percent, at utilization `util` (above 1024 counts
// as 1024).
double headroomOf(std::uint16_t util) noexcept;

// The headroom of `cpus` (indices below history.cpus(), the caller checks;
// each once) over the last `windowUs` of `history`, by `calculation`.
// `capacity[cpu]` is CPU cpu's highest performance (one per history CPU);
// a set whose capacities are all 0 is weighted evenly.
HeadroomResult headroom(
    const UtilHistory& history, std::span<const std::uint32_t> cpus,
    std::span<const std::uint32_t> capacity, std::uint64_t windowUs,
    HeadroomCalculation calculation);

} // namespace cppcgov::daemon
