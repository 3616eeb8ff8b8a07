// SPDX-License-Identifier: Apache-2.0
// Per-CPU load from procfs: the "cpuN" lines of <root>/proc/stat, parsed
// into cumulative busy and total times, and a sampler that turns two reads
// into each CPU's busy fraction and busy time over the time between them.
//
// The kernel prints, per CPU (Documentation/filesystems/proc.rst),
//   cpuN user nice system idle iowait irq softirq steal guest guest_nice
// in USER_HZ ticks (1/100 s). guest and guest_nice are already counted in
// user and nice, so the total is the first eight fields and the busy time
// is the total less idle and iowait. Offline CPUs have no line.
//
// The counters move in whole ticks of 10 ms: over a shorter window a CPU's
// counters often do not move at all. The sampler then repeats the CPU's
// previous fraction and keeps the start of its window, so the next fraction
// covers the whole time since the counters last moved; a running average
// (policies/util_average.hpp) smooths what remains of the granularity.
#pragma once

#include "daemon/load_source.hpp"
#include "lib/backend/fd.hpp"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppcgov::daemon
{

// Busy fractions are on this scale: busyScale means busy all the window.
inline constexpr std::uint16_t busyScale = 1024;

// CPU numbers in /proc/stat at or above this make the file malformed.
inline constexpr std::uint32_t maxProcStatCpus = 65536;

// The length of the USER_HZ tick in which procfs counts CPU time (here and
// in /proc/<pid>/task/<tid>/stat), in microseconds: 1 s /
// sysconf(_SC_CLK_TCK), 10 000 on Linux. Read once.
inline std::uint64_t clockTickUs() noexcept
{
    static const std::uint64_t us = [] {
        const long hz = ::sysconf(_SC_CLK_TCK);
        return hz > 0 ? 1'000'000 / static_cast<std::uint64_t>(hz)
                      : std::uint64_t{10'000};
    }();
    return us;
}

// One CPU's cumulative times, in USER_HZ ticks.
struct CpuTimes
{
    // total - idle - iowait.
    std::uint64_t busy = 0;
    // user + nice + system + idle + iowait + irq + softirq + steal.
    std::uint64_t total = 0;
    // Whether the file has a line for the CPU (it is online).
    bool present = false;

    bool operator==(const CpuTimes&) const = default;
};

// Parses the text of /proc/stat: out[n] gets cpuN's times, and CPUs with no
// line are left not present; lines of CPUs at or above out.size() are
// checked and skipped. `cpuCount` gets one more than the highest CPU number
// in the file (0 when it has no cpuN line). The text must start with the
// "cpu " line of the sums and end with a newline; the cpuN lines follow it
// (they are read up to the first line that is not one, as the kernel
// prints them all first), each with at least four fields, every field a
// decimal number, and no CPU twice. Anything else is
// cppc::Errc::malformedAttribute, with `out` and `cpuCount` unspecified.
// Does not allocate.
[[nodiscard]] std::error_code parseProcStat(std::string_view text,
                                            std::span<CpuTimes> out,
                                            std::uint32_t& cpuCount) noexcept;

class ProcStatSampler final : public LoadSource
{
  public:
    // Opens <root>/proc/stat, keeps it open, and reads it once to size the
    // buffer and to check it. Reports `cpus` CPUs, 0 meaning as many as
    // the file has now (one more than the highest cpuN). Throws
    // std::system_error naming the file when it cannot be opened or read
    // or is malformed.
    explicit ProcStatSampler(const std::filesystem::path& root,
                             std::uint32_t cpus = 0);

    ProcStatSampler(const ProcStatSampler&) = delete;
    ProcStatSampler& operator=(const ProcStatSampler&) = delete;
    ProcStatSampler(ProcStatSampler&&) noexcept = default;
    ProcStatSampler& operator=(ProcStatSampler&&) noexcept = default;

    // The number of CPUs sample() reports.
    std::uint32_t cpus() const noexcept override
    {
        return static_cast<std::uint32_t>(previous_.size());
    }

    // The file read.
    const std::filesystem::path& path() const noexcept
    {
        return path_;
    }

    // Reads the file with one pread(2) and writes each CPU's busy fraction
    // (0..busyScale) since the previous read into `out`, which must have
    // cpus() elements (else std::errc::invalid_argument). The first call
    // starts every window and reports zeros; so does a CPU's first read
    // after it was offline or after its counters went backwards. A CPU
    // that is offline (no line) reports 0. A CPU whose counters have not
    // moved repeats its previous fraction (see above). On an error (the
    // errno of the read, or Errc::malformedAttribute) `out` is all zeros
    // and no window changes. Does not allocate, unless the file has grown
    // past its buffer.
    [[nodiscard]] std::error_code sample(
        std::span<std::uint16_t> out) noexcept override;

    // Each CPU's busy time between the last two reads of sample(), in
    // microseconds (clockTickUs() per tick): what its busy counter gained,
    // up to what its total gained. 0 for a CPU whose window the last read
    // started (see sample()) or whose counters did not move, and for every
    // CPU after a failed read. The sum over reads is the busy time over
    // their whole span, in the file's 10 ms steps. cpus() elements.
    std::span<const std::uint64_t> busyUs() const noexcept override
    {
        return busyUs_;
    }

    // Whether `cpu` had a line in the file at the last successful read:
    // whether it was online. False beyond cpus().
    bool online(std::uint32_t cpu) const noexcept override
    {
        return cpu < current_.size() && current_[cpu].present;
    }

  private:
    // Reads the whole file into buffer_ (growing it when the file does not
    // fit) and parses it into current_ and fileCpus_.
    std::error_code readTimes() noexcept;

    std::filesystem::path path_;
    cppc::backend::Fd fd_;
    std::vector<char> buffer_;
    std::vector<CpuTimes> current_;
    std::vector<CpuTimes> previous_; // each CPU's window start
    std::vector<std::uint16_t> last_;
    std::vector<std::uint64_t> busyUs_;
    std::uint32_t fileCpus_ = 0; // as the last read found
    bool started_ = false;
};

} // namespace cppcgov::daemon
