// SPDX-License-Identifier: Apache-2.0
// PELT, the kernel's per-entity load tracking, for the schedutil model
// (kernel_schedutil.hpp): one utilization signal (of a CPU's runqueue or
// of one task), advanced on a PELT clock.
//
// As in kernel/sched/pelt.c: time counts in units of 1024 ns, gathered in
// periods of 1024 units (about 1 ms); each whole period passed multiplies
// what was summed before by y, with y^32 = 1/2 (a 32-period half-life);
// the time spent running adds to the sum, scaled to 1024; util_avg is the
// sum over its maximum, and is recomputed only when a period boundary was
// crossed. Frequency and capacity invariance live in the clock the caller
// passes (the runqueue's clock_pelt, which runs slower at lower
// performance), not here. Arithmetic is in doubles: the kernel's integer
// tables (and their rounding) are not reproduced, so the maximum is
// 1024 / (1 - y) where the kernel's LOAD_AVG_MAX is 47742.
#pragma once

#include <cstdint>

namespace cppc::bench
{

class PeltSignal
{
  public:
    // Advances the signal to `clockNs` on its PELT clock (never
    // backwards), `running` over all the time since the last update.
    // Returns whether a period boundary was crossed (the kernel's
    // "decayed", which is what lets a runqueue update call the cpufreq
    // hook).
    bool update(std::uint64_t clockNs, bool running) noexcept;

    // util_avg, 0..1024.
    double util() const noexcept
    {
        return util_;
    }

  private:
    std::uint64_t lastNs_ = 0;        // a multiple of 1024 ns
    std::uint32_t periodContrib_ = 0; // units into the current period
    double sum_ = 0;
    double util_ = 0;
};

} // namespace cppc::bench
