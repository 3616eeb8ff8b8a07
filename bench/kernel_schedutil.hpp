// SPDX-License-Identifier: Apache-2.0
// A model of what Linux 6.1 does with a CPPC CPU when the operator runs
// the kernel's schedutil governor on cppc_cpufreq, driven per scheduler
// event of a simulated workload (lib/sim/workload.hpp) in virtual time.
//
// Per CPU it keeps what the scheduler keeps: the runqueue's PELT
// utilization (pelt.hpp) on a clock_pelt that runs at perf / highest of
// real time while a task runs and catches up with real time when the CPU
// is idle (frequency invariance as cppc_cpufreq's counters give it, one CPU
// type so no capacity scaling); per task its own PELT signal and, when
// enabled, util_est (the estimate kept at each sleep: the last util_avg,
// or an EWMA with weight 1/4 that follows decreases slowly and increases
// at once); and uclamp over the runnable tasks (max of their minimums, max
// of their maximums; a task without a hint [0, 1024]; when nothing is
// runnable the minimum is 0 and the maximum that of the last task out).
//
// The cpufreq hook runs where the kernel calls it: at an enqueue, a
// dequeue, the switch away from a task still runnable, and the scheduler
// tick (HZ, only while a task runs), each time only when the runqueue's
// PELT update crossed a period boundary. The hook is schedutil's
// single-CPU frequency path: util = max(util_avg, util_est), clamped by
// the runqueue's uclamp (a minimum at or above the maximum wins), next =
// 1.25 x util / 1024 x nominal (cppc_cpufreq's cpuinfo.max_freq is the
// nominal frequency, boost off), within lowest nonlinear (policy->min) and
// nominal (policy->max); not lowered while the CPU has not been idle since
// the hook last ran (unless uclamp caps it); nothing when less than
// rate_limit_us has passed since the last change; a change is written at
// once (fast switch) and takes effect after the platform's transition
// delay (the workload's). bench/README.md lists what is left out.
#pragma once

#include "bench/pelt.hpp"
#include "lib/sim/workload.hpp"
#include "policies/policy.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace cppc::bench
{

struct KernelSchedutilConfig
{
    // What 6.1's schedutil takes by default on cppc_cpufreq with a
    // fast-switch (SystemMemory) Desired register (bench/README.md).
    std::uint32_t rateLimitUs = 1000;
    std::uint32_t tickHz = 250;
    // The first tick's time: ticks come at tickPhaseUs + n / tickHz.
    std::uint64_t tickPhaseUs = 0;
    bool utilEst = true;
};

class KernelSchedutil
{
  public:
    // Takes over `workload`'s observer for its life. `clamps`: each task's
    // uclamp request (nothing: no hint, [0, 1024]). Every task must be
    // pinned to a CPU (the model has no migration). Throws
    // std::invalid_argument otherwise.
    // `caps`: each workload CPU's levels (the floor is its lowest
    // nonlinear performance, the ceiling its nominal).
    KernelSchedutil(sim::Workload& workload,
                    std::vector<cppcgov::policies::CpuCaps> caps,
                    std::vector<std::optional<cppcgov::policies::Clamp>> clamps,
                    KernelSchedutilConfig config = {});
    ~KernelSchedutil();

    KernelSchedutil(const KernelSchedutil&) = delete;
    KernelSchedutil& operator=(const KernelSchedutil&) = delete;

    // Runs the workload to `timeUs`, with the scheduler ticks on the way.
    void advanceTo(std::uint64_t timeUs);

    // The last performance requested for `cpu` (nominal before any).
    std::uint32_t requested(unsigned cpu) const
    {
        return cpus_.at(cpu).next;
    }

  private:
    struct TaskModel
    {
        PeltSignal pelt;
        double utilEstEnqueued = 0; // util_avg at the last sleep
        double utilEstEwma = 0;
        double enqueuedEstimate = 0; // what was added to the runqueue's sum
        cppcgov::policies::Clamp clamp;
    };

    struct CpuModel
    {
        cppcgov::policies::CpuCaps caps;
        std::uint64_t lastNs = 0;
        double clockPeltNs = 0;
        std::uint32_t perf = 0; // in effect
        std::optional<std::size_t> current;
        std::vector<std::size_t> runnable;
        PeltSignal pelt;
        double utilEstSum = 0;
        cppcgov::policies::Clamp
            idleClamp; // the clamp while nothing is runnable
        // schedutil's state
        std::uint32_t next = 0;
        bool changed = false; // a request was made
        std::uint64_t lastChangeNs = 0;
        bool idleSinceHook = false;
    };

    void onEvent(const sim::SchedEvent& e);
    void tick();
    void advanceClock(CpuModel& c, std::uint64_t nowNs) const;
    // Updates the runqueue's PELT and that of its runnable tasks; returns
    // whether the runqueue's signal decayed.
    bool updateLoad(CpuModel& c);
    cppcgov::policies::Clamp rqClamp(const CpuModel& c) const;
    double estimate(const TaskModel& t) const;
    void hook(unsigned cpu, std::uint64_t nowNs);

    sim::Workload& workload_;
    KernelSchedutilConfig config_;
    std::vector<TaskModel> tasks_;
    std::vector<CpuModel> cpus_;
    std::uint64_t nextTickNs_ = 0;
};

} // namespace cppc::bench
