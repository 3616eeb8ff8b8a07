// SPDX-License-Identifier: Apache-2.0
// What cppcgovd sees of a simulated workload at each tick, in each of its
// two modes, formed from the workload's exact windows:
//   ExactInput   the scheduler observer (BPF): each CPU's busy time over
//                the window exactly, and the uclamp aggregation over the
//                tasks runnable there during it (hinted: their clamp; any
//                other: [0, 1024]), with the hints seen there;
//   ProcfsInput  procfs: busy and total CPU time in USER_HZ steps of 10 ms
//                (the cumulative exact times floored to a step, as
//                /proc/stat prints them, turned into fractions as
//                ProcStatSampler does), and the hinted tasks as
//                TaskActivity reports them: a task is active when it is
//                runnable at the tick or its CPU time, also in 10 ms
//                steps, grew since the last tick, its cpuTimeUs that
//                growth.
// Both give utilization as the daemon's machines do: busy fraction x
// delivered / highest, delivered from the window's feedback counters (the
// performance in effect when the CPU was idle).
//
// Hint handles are the task's index + 1, thread ids its index + 1000.
#pragma once

#include "daemon/governor.hpp"
#include "lib/sim/workload.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace cppc::bench
{

// Each task's hint, if it has one.
using TaskHints = std::vector<std::optional<cppcgov::policies::Clamp>>;

// Utilization over windows from the feedback counters.
class WindowLoad
{
  public:
    explicit WindowLoad(const sim::Workload& workload);

    // Takes `cpu`'s window (Workload::takeWindow) and returns it, with
    // delivered performance over it in `delivered`.
    sim::CpuWindow take(sim::Workload& workload, unsigned cpu,
                        std::uint32_t& delivered);

  private:
    std::vector<std::uint64_t> reference_;
    std::vector<std::uint64_t> deliveredCount_;
};

// util on 0..1024 from a busy fraction on 0..1024, as the daemon forms it.
std::uint16_t utilOf(std::uint64_t busyFraction, std::uint32_t delivered,
                     std::uint32_t highest) noexcept;

class ExactInput
{
  public:
    ExactInput(const sim::Workload& workload, TaskHints hints);

    // The windows since the previous call, one element per CPU in each.
    // `exact` holds spans into this object, valid until the next call.
    void take(sim::Workload& workload,
              std::vector<cppcgov::daemon::CpuSample>& samples,
              std::vector<cppcgov::daemon::ExactCpu>& exact);

  private:
    TaskHints hints_;
    WindowLoad load_;
    std::vector<std::vector<cppcgov::daemon::HintSighting>> seen_;
};

class ProcfsInput
{
  public:
    ProcfsInput(const sim::Workload& workload, TaskHints hints);

    // What a tick at the workload's present time reads.
    void take(sim::Workload& workload, std::uint64_t nowUs,
              std::vector<cppcgov::daemon::CpuSample>& samples,
              std::vector<cppcgov::daemon::HintSighting>& sightings);

  private:
    struct Counters
    {
        std::uint64_t busyNs = 0;    // exact, cumulative
        std::uint64_t startBusy = 0; // steps, at the window's start
        std::uint64_t startTotal = 0;
        std::uint16_t last = 0; // the fraction repeated while nothing moved
    };

    TaskHints hints_;
    WindowLoad load_;
    std::vector<Counters> cpus_;
    // Per task: its CPU time in steps at the last tick, nothing before
    // its first read.
    std::vector<std::optional<std::uint64_t>> taskSteps_;
    bool started_ = false;
};

} // namespace cppc::bench
