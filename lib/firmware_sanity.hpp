// SPDX-License-Identifier: Apache-2.0
// Firmware sanity: checks of what a CPU's _CPC says, and of what the
// platform does with requests, that say when the firmware's figures cannot
// be right. Pure functions over numbers: no I/O, no clock, no logging; the
// daemon keeps the state over time (daemon/firmware_watch.hpp) and
// acpi-inspect shows the table-only verdict.
//
// The facts the reference-performance checks stand on:
//   - delivered performance = ReferencePerformance x d(delivered counter) /
//     d(reference counter), where the reference counter counts at a
//     constant rate f_ref and the delivered counter at the CPU's clock
//     (ReferencePerformance absent: NominalPerformance, as Linux reads it);
//   - at NominalFrequency the CPU delivers NominalPerformance (that is what
//     the pair means), so there the formula gives
//     ReferencePerformance x NominalFrequency / f_ref, and it is right only
//     when f_ref = NominalFrequency x ReferencePerformance /
//     NominalPerformance: the "reference frequency" of the table. Any other
//     counter rate makes every delivered figure (and the kernel's
//     cpuinfo_cur_freq, drawn from it) wrong by the constant factor
//     reference frequency / f_ref.
//   - The tables never give f_ref. On arm64 with FFixedHW counters the
//     reference counter is the AMU's constant counter, which counts at the
//     system counter's frequency (CNTFRQ_EL0: 1 GHz from Armv8.6 on,
//     implementation defined before), a property of the running machine.
// So the tables alone can only refuse a ReferencePerformance that is no
// performance level of the CPU (0 after the fallback, or above
// HighestPerformance) or that the frequency line puts at no positive
// frequency; whether it matches the counter is decided at run time, from
// the counter's measured rate (checkCounterRate()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cppc
{

class CpcDescriptor;

// The checks, for names in messages, metrics and tables.
enum class SanityCheck : std::uint8_t
{
    referencePerf, // table-only: ReferencePerformance is no level of the CPU
    counterRate,   // run time: the reference counter's rate disagrees
    follow,        // run time: delivered does not follow a steady request
    countersStuck, // run time: a feedback counter does not move while busy
};

inline constexpr std::size_t sanityCheckCount = 4;

// "reference-perf", "counter-rate", "follow", "counters-stuck".
[[nodiscard]] std::string_view checkName(SanityCheck check) noexcept;

// The performance scale of one CPU as the checks need it.
struct PerfScale
{
    std::uint32_t highest = 0;
    std::uint32_t nominal = 0;
    std::uint32_t lowest = 0;
    // ReferencePerformance as given; 0 when not supported (absent, NULL
    // register or the Integer 0: NominalPerformance stands in).
    std::uint32_t referencePerf = 0;
    // LowestFrequency and NominalFrequency in kHz, 0 when unknown.
    std::uint32_t lowestKhz = 0;
    std::uint32_t nominalKhz = 0;

    // The level the reference counter counts at: referencePerf, or nominal
    // when it is 0.
    [[nodiscard]] std::uint32_t effectiveReference() const noexcept
    {
        return referencePerf != 0 ? referencePerf : nominal;
    }
};

// The scale a descriptor gives without reading a register: Highest,
// Nominal and Lowest Performance must be Integers (ReferencePerformance,
// LowestFrequency and NominalFrequency may be missing or Integers).
// Nothing when any of them is in a register (as on Ampere Altra, all in
// PCC): the tables alone then decide nothing.
[[nodiscard]] std::optional<PerfScale> perfScaleOf(const CpcDescriptor& cpu);

// The frequency, in Hz, at which the reference counter must count for
// delivered figures to be right: NominalFrequency x effectiveReference() /
// NominalPerformance. Nothing when NominalFrequency or NominalPerformance
// is unknown (0).
[[nodiscard]] std::optional<double> referenceHz(
    const PerfScale& scale) noexcept;

// The table-only check. A reason (naming the numbers) when the scale's
// ReferencePerformance, after the fallback to NominalPerformance, is 0 or
// above HighestPerformance, or when the line through (Lowest,
// LowestFrequency) and (Nominal, NominalFrequency) puts it at or below
// 0 Hz; nothing otherwise. Quiet on a scale whose reference frequency is
// merely unusual: the counter's rate is not in the tables.
[[nodiscard]] std::optional<std::string> checkReferencePerf(
    const PerfScale& scale);

// The run-time check, with the reference counter's rate `counterHz` (as
// measured, or as the architecture gives it). A reason when the factor
// referenceHz / counterHz by which every delivered figure is off lies
// outside [1 / (1 + tolerance), 1 + tolerance], e.g. "ReferencePerformance
// 1000 stands for a 305.2 MHz reference counter at NominalFrequency
// 2500 MHz / NominalPerformance 8192, but the counter counts at 1000.0 MHz:
// delivered performance reads 3.28x too low". Nothing when it lies
// inside, when referenceHz() is unknown or `counterHz` is not positive.
[[nodiscard]] std::optional<std::string> checkCounterRate(
    const PerfScale& scale, double counterHz, double tolerance);

// One stretch over which a CPU's request held steady, summed up.
struct FollowWindow
{
    std::uint32_t requested = 0;
    // Mean delivered performance over the samples that had one.
    double delivered = 0;
    std::uint64_t durationUs = 0;
    // Whether the platform said it held the CPU below the request
    // (PerformanceLimited excursion bits) at any time in the stretch, and
    // whether the machine can say so at all.
    bool limited = false;
    bool limitedReadable = false;
    // Whether delivering more than requested is the platform's right here:
    // the request is below LowestPerformance, the CPU shares a hardware
    // coordinated domain, or the platform selects performance itself.
    bool aboveAllowed = false;
};

// Check 2: a reason ("delivered 2600 while 8192 requested for 5 s") when
// the mean delivered performance is more than `tolerance` (relative) below
// the request with no excursion to explain it, or above it where that is
// not allowed; nothing otherwise.
[[nodiscard]] std::optional<std::string> checkFollow(const FollowWindow& w,
                                                     double tolerance);

// Check 3: a reason when `stuckReadings` successive counter readings taken
// while the CPU was busy saw the reference or the delivered counter (named
// by `counter`) unchanged and that reaches `limit`; nothing otherwise. The
// reason names `limit`, so it stays the same while the counter stays
// stuck.
[[nodiscard]] std::optional<std::string> checkCountersStuck(
    std::string_view counter, std::uint32_t stuckReadings, std::uint32_t limit);

} // namespace cppc
