// SPDX-License-Identifier: Apache-2.0
// A CPU's CPPC capabilities as the kernel publishes them under
// /sys/devices/system/cpu/cpuN/acpi_cppc/, and the conversion between
// performance levels and cpufreq kHz that Linux's CPPC library uses
// (cppc_perf_to_khz and cppc_khz_to_perf), reproduced to the last rounding
// step so that a value written to scaling_setspeed becomes exactly the
// Desired performance meant.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace cppc::backend
{

struct PerfCaps
{
    std::uint32_t highestPerf = 0;
    std::uint32_t nominalPerf = 0;
    std::uint32_t lowestNonlinearPerf = 0;
    std::uint32_t lowestPerf = 0;
    // The performance level the reference counter counts at: reference_perf,
    // or nominal_perf when the firmware has no ReferencePerformance (as the
    // kernel's cppc_get_perf_ctrs falls back).
    std::uint32_t referencePerf = 0;
    bool referenceFromNominal = false;
    // In MHz; 0 when the firmware does not give them.
    std::uint32_t lowestFreqMhz = 0;
    std::uint32_t nominalFreqMhz = 0;

    bool operator==(const PerfCaps&) const = default;
};

// Reads cpuN's acpi_cppc attributes under `root`. Like cppc_cpufreq, which
// refuses a CPU whose cppc_get_perf_caps fails, it throws
// std::system_error naming the file when highest_perf, nominal_perf,
// lowest_nonlinear_perf or lowest_perf is missing, unreadable, zero or not
// a number. lowest_freq and nominal_freq may be missing (0). reference_perf
// that is missing, unreadable (the kernel reads it with the counters, which
// can fail) or zero becomes nominal_perf.
PerfCaps readPerfCaps(const std::filesystem::path& root, unsigned cpu);

// The kernel's fallback maximum frequency for CPUs without lowest_freq and
// nominal_freq: cppc_get_dmi_max_khz, the largest "Max Speed" (offset 0x14,
// MHz) of the SMBIOS type 4 (processor) structures at least 48 bytes long,
// read from root/sys/firmware/dmi/entries/4-*/raw, or 1 MHz when there is
// none; in kHz. Nothing when the DMI entries directory does not exist or a
// raw file cannot be read (it is readable by root only).
std::optional<std::uint64_t> dmiMaxKhz(const std::filesystem::path& root);

// The same value worked back from what cppc_cpufreq published: it set
// cpuinfo_max_freq to perfToKhz(nominal_perf), or perfToKhz(highest_perf)
// (which is maxKhz itself) while boost is on. Returns the multiple of
// 1000 kHz (the kernel's maxKhz is whole MHz) that reproduces
// `cpuinfoMaxKhz`, or, when none does, the smallest value that does.
std::uint64_t maxKhzFromCpuinfo(const PerfCaps& caps,
                                std::uint32_t cpuinfoMaxKhz, bool boost);

// Converts between performance levels and kHz as Linux's CPPC library
// does. With lowest_freq and nominal_freq known, linearly through (lowest
// perf, lowest freq) and (nominal perf, nominal freq), or through the
// origin and (nominal perf, nominal freq) when the two frequencies are
// equal; without them, proportionally through (highest perf, maxKhz).
// Integer arithmetic and truncation as the kernel's; negative results are
// 0.
class FreqScale
{
  public:
    // `fallbackMaxKhz` is used only when the frequencies are unknown, and
    // must then be non-zero. Throws std::invalid_argument when the
    // capabilities would make the kernel's formula divide by zero or run
    // backwards (nominal_perf not above lowest_perf, or nominal_freq below
    // lowest_freq).
    FreqScale(const PerfCaps& caps, std::uint64_t fallbackMaxKhz);

    // Whether the lowest/nominal frequency line is used.
    bool linear() const noexcept
    {
        return linear_;
    }

    // cppc_perf_to_khz.
    std::uint32_t perfToKhz(std::uint32_t perf) const noexcept;

    // cppc_khz_to_perf: the Desired performance cppc_cpufreq requests when
    // asked for `khz`.
    std::uint32_t khzToPerf(std::uint32_t khz) const noexcept;

    // The smallest kHz for which khzToPerf() is at least `perf` (the
    // largest kHz if none).
    std::uint32_t khzForPerf(std::uint32_t perf) const noexcept;

    // The kHz to write to request `perf`: perfToKhz(perf), the kernel's own
    // number, when the kernel turns it back into `perf`; otherwise (both
    // directions truncate, so it can land a level short) khzForPerf(perf),
    // which makes the kernel request `perf` whenever any frequency does.
    std::uint32_t requestKhz(std::uint32_t perf) const noexcept;

  private:
    PerfCaps caps_;
    std::uint64_t maxKhz_;
    bool linear_;
};

} // namespace cppc::backend
