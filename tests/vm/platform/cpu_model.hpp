// SPDX-License-Identifier: Apache-2.0
// One CPU of the platform: what it delivers for what the OS asks, its
// feedback counters, its energy and what it counts. Pure: no I/O, no clock;
// time comes in as nanoseconds and busy time as the part of each stretch
// the CPU was not idle.
//
// The rules (tests/vm/README.md states them for the reader):
//   - the target: Desired clamped into [Minimum, Maximum] (each absent or 0:
//     lowest and highest) and into [lowest, highest]; under autonomous
//     selection the platform's own choice instead,
//       lowest nonlinear + (highest - lowest nonlinear)
//                        x min(1, busy x (256 - EPP) / 128)
//     within the same bounds, where busy is the CPU's busy share averaged
//     over the activity window (an exponential average with that time
//     constant; 10 ms when the window is 0): EPP 0 reaches highest at half
//     load, EPP 255 stays near lowest nonlinear;
//   - a new target takes effect `latency` after the platform saw it (in
//     order; a target the platform already heads for is not queued again);
//   - a cap (a thermal or power event) holds delivered performance at or
//     below it at once; while it holds delivered below the clamped Desired
//     (not under autonomous selection) the Desired Excursion bit (0) is
//     due, and while below a Minimum register's value the Minimum
//     Excursion bit (1);
//   - the counters, only while busy: the reference counter at
//     NominalFrequency x ReferencePerformance / NominalPerformance (the
//     rate the tables imply), the delivered counter at NominalFrequency x
//     delivered / NominalPerformance (the CPU's clock); exact integer
//     arithmetic with carried remainders;
//   - energy: power_model.hpp's busy power at the delivered level for the
//     busy part of a stretch, its idle power for the rest.
// Lies, for the daemon's firmware checks: a reference counter that counts
// at another rate than the tables imply, counters that stall, a Desired
// that is ignored (the platform stays where it was).
#pragma once

#include "tests/vm/platform/layout.hpp"
#include "tests/vm/platform/power_model.hpp"

#include <cstdint>
#include <deque>
#include <map>

namespace cppcgov::platform
{

// What the OS asks of one CPU, as its registers hold it.
struct Request
{
    std::uint32_t desired = 0;
    std::uint32_t minimum = 0; // 0: no bound (or no register)
    std::uint32_t maximum = 0; // 0: no bound (or no register)
    std::uint32_t epp = 128;
    bool autonomous = false;
    std::uint64_t windowUs = 0; // 0: 10 ms
};

struct Faults
{
    // The reference counter's rate, in percent of the rate the tables
    // imply (100: honest).
    std::uint32_t referenceRatePercent = 100;
    bool countersStalled = false;
    bool ignoreDesired = false;
};

inline constexpr std::uint32_t desiredExcursion = 1U << 0;
inline constexpr std::uint32_t minimumExcursion = 1U << 1;

struct CpuStats
{
    std::uint64_t desiredChanges = 0; // Desired values seen to change
    std::uint64_t wallNs = 0;
    std::uint64_t busyNs = 0;
    std::uint64_t throttledNs = 0; // a cap held delivered below the target
    // The integral of delivered performance over busy time: divided by
    // busyNs, the busy-weighted delivered performance that the counters
    // give.
    long double busyPerfNs = 0;
    double energyJoules = 0;
    std::map<std::uint32_t, std::uint64_t> levelNs; // wall time per level
};

class CpuModel
{
  public:
    CpuModel(const Scale& scale, PowerCurve curve, std::uint64_t latencyNs,
             std::uint64_t startNs);

    // The registers' contents at `nowNs` (not before the last advance()).
    void request(std::uint64_t nowNs, const Request& request);
    // Runs the CPU from the last advance() to `nowNs`, `busyNs` of that
    // busy (clamped to the stretch).
    void advance(std::uint64_t nowNs, std::uint64_t busyNs);

    void setCap(std::uint32_t cap) noexcept; // 0: none
    // Zeroes the statistics (not the counters).
    void resetStats() noexcept
    {
        totals_ = CpuStats{};
    }
    void setFaults(const Faults& faults) noexcept;
    [[nodiscard]] const Faults& faults() const noexcept
    {
        return faults_;
    }
    void setLatency(std::uint64_t latencyNs) noexcept
    {
        latency_ = latencyNs;
    }
    void setCurve(PowerCurve c) noexcept
    {
        curve_ = c;
    }

    [[nodiscard]] std::uint32_t delivered() const noexcept;
    [[nodiscard]] std::uint32_t target() const noexcept
    {
        return applied_;
    }
    [[nodiscard]] std::uint64_t referenceCounter() const noexcept
    {
        return reference_;
    }
    [[nodiscard]] std::uint64_t deliveredCounter() const noexcept
    {
        return deliveredCount_;
    }
    // The excursion bits due now (to be set in PerformanceLimited).
    [[nodiscard]] std::uint32_t excursions() const noexcept;
    [[nodiscard]] const CpuStats& stats() const noexcept
    {
        return totals_;
    }
    [[nodiscard]] const Scale& cpuScale() const noexcept
    {
        return scale_;
    }
    [[nodiscard]] double busyAverage() const noexcept
    {
        return busyShare_;
    }
    [[nodiscard]] std::uint32_t cap() const noexcept
    {
        return capLevel_;
    }

  private:
    struct Change
    {
        std::uint64_t dueNs;
        std::uint32_t level;
    };

    [[nodiscard]] std::uint32_t choose(const Request& r) const noexcept;
    void run(std::uint64_t ns, std::uint64_t busyNs);

    Scale scale_;
    PowerCurve curve_;
    std::uint64_t latency_;
    std::uint64_t lastNs_;
    Faults faults_;
    Request asked_;
    bool seenRequest_ = false;
    std::uint32_t capLevel_ = 0;
    std::uint32_t applied_; // the target in force
    std::uint32_t heading_; // the last target queued (or applied)
    std::uint32_t frozen_;  // the target while Desired is ignored
    std::deque<Change> pending_;
    double busyShare_ = 0;
    std::uint64_t reference_ = 1U << 20;
    std::uint64_t deliveredCount_ = 1U << 20;
    __extension__ using Wide = unsigned __int128;
    Wide referenceRemainder_ = 0;
    Wide deliveredRemainder_ = 0;
    CpuStats totals_;
};

} // namespace cppcgov::platform
