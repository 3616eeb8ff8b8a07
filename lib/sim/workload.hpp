// SPDX-License-Identifier: Apache-2.0
// A workload in virtual time: tasks running on simulated CPUs whose
// performance the governor sets, scored on deadline misses, energy and the
// number of performance writes.
//
// Work is counted in cycles at a performance level: a job of "X us at
// nominal" is X x nominal perf-microseconds of work, and a CPU running at
// perf p completes p of it per microsecond. Time only moves when the caller
// advances it, so runs are exact and repeatable.
//
// Scheduling: a CPU runs its queued jobs first come, first served, each to
// completion; a busy task's endless job runs only while no other job is
// queued there (a task waking up preempts a spinner at once, as the
// kernel's fair scheduler does for a light sleeper against a CPU hog).
// An observer (setObserver) is told of every scheduler event in order.
//
// Energy model (documented in bench/README.md): while a CPU executes, it
// draws staticWatts + dynamicWatts x (perf / highest)^exponent; an idle CPU
// draws nothing (it sits in a deep idle state). With the default exponent
// of 3 (dynamic power ~ f x V^2 with voltage rising with frequency),
// running slower for longer costs less energy, down to where static power
// dominates.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace cppc::sim
{

struct WorkloadCpu
{
    std::uint32_t highest = 0;
    std::uint32_t nominal = 0;
    std::uint32_t lowest = 0;
    // The performance the reference counter counts at.
    std::uint32_t referencePerf = 0;
    // How long a performance request takes to take effect.
    std::uint32_t transitionUs = 0;
};

struct EnergyModel
{
    double staticWatts = 0.1;
    double dynamicWatts = 1.0; // at highest performance
    double exponent = 3.0;
};

struct TaskSpec
{
    enum class Kind : std::uint8_t
    {
        periodic, // workUs of work (at nominal) every periodUs
        bursty,   // bursts of mean workUs, arriving every periodUs on average
        busy,     // always runnable
    };

    Kind kind = Kind::periodic;
    std::string name;
    std::uint64_t workUs = 0;
    std::uint64_t periodUs = 0;
    // Pinned to a CPU, or placed by the balancer (least queued work).
    std::optional<unsigned> cpu;
    std::uint64_t startUs = 0;
    std::uint64_t seed = 1; // bursty arrivals and sizes
};

// What a CPU did since the previous window was taken.
struct CpuWindow
{
    std::uint64_t lengthNs = 0;
    std::uint64_t busyNs = 0;
    // Cumulative feedback counters (perf x ns): reference counts at
    // referencePerf, delivered at the current performance, both only while
    // the CPU executes.
    std::uint64_t referenceCounter = 0;
    std::uint64_t deliveredCounter = 0;
    // Tasks that had work on this CPU during the window.
    std::vector<std::size_t> tasks;
};

struct Score
{
    std::uint64_t jobs = 0;   // jobs completed (or overdue at the end)
    std::uint64_t misses = 0; // jobs finished after their deadline
    double energyJoules = 0;
    std::uint64_t perfWrites = 0;
    // Release to completion of every completed job with a deadline, in us.
    std::vector<std::uint32_t> responseUs;
};

// One scheduler event, at the virtual time it happens. At one instant they
// come in this order: performance changes, dequeues, enqueues, switches.
struct SchedEvent
{
    enum class Kind : std::uint8_t
    {
        perfChange, // a requested performance took effect (Workload::perf)
        dequeue,    // `task` finished its last queued job on `cpu`: it sleeps
        enqueue,    // `task` became runnable on `cpu` (a job with none queued)
        switchTo,   // `cpu` now runs `task`, or nothing (idle)
    };

    Kind kind = Kind::perfChange;
    std::uint64_t timeNs = 0;
    unsigned cpu = 0;
    std::optional<std::size_t> task;
};

class Workload
{
  public:
    Workload(const std::vector<WorkloadCpu>& cpus, std::vector<TaskSpec> tasks,
             EnergyModel energy = {});

    // Requests `perf` on `cpu`; it takes effect after the CPU's transition
    // delay (a newer request replaces one still in flight). Counts a write.
    void requestPerf(unsigned cpu, std::uint32_t perf);

    // Runs every CPU up to `timeUs` (never backwards).
    void advanceTo(std::uint64_t timeUs);

    // The window since the previous call for `cpu`, and starts a new one.
    CpuWindow takeWindow(unsigned cpu);

    std::uint32_t perf(unsigned cpu) const
    {
        return cpus_[cpu].perf;
    }
    std::size_t cpuCount() const noexcept
    {
        return cpus_.size();
    }
    const WorkloadCpu& cpu(unsigned index) const
    {
        return cpus_[index].spec;
    }
    const std::vector<TaskSpec>& tasks() const noexcept
    {
        return tasks_;
    }

    // Calls `observer` with every scheduler event from now on (nothing:
    // no more calls). The observer may call requestPerf().
    void setObserver(std::function<void(const SchedEvent&)> observer);

    // Whether `task` has a job queued (runnable or running) now.
    bool runnable(std::size_t task) const;

    // The CPU time `task` has used so far, in ns.
    std::uint64_t taskRunNs(std::size_t task) const
    {
        return taskState_.at(task).runNs;
    }

    // The CPU `task` is queued on, or last ran on (nothing before its
    // first job).
    std::optional<unsigned> taskCpu(std::size_t task) const
    {
        return taskState_.at(task).cpu;
    }

    // The score so far; jobs still unfinished past their deadline count
    // as misses.
    Score score() const;

  private:
    struct Job
    {
        std::size_t task;
        std::uint64_t remaining; // perf x ns
        std::uint64_t releaseNs;
        std::uint64_t deadlineNs;
        bool hasDeadline;
    };

    struct Cpu
    {
        WorkloadCpu spec;
        std::uint32_t perf;
        std::optional<std::uint32_t> pendingPerf;
        std::uint64_t pendingAtNs = 0;
        std::vector<Job> queue; // FIFO: the front runs
        std::uint64_t windowStartNs = 0;
        std::uint64_t busyNs = 0;
        std::uint64_t reference = 0;
        std::uint64_t delivered = 0;
        std::vector<bool> ranTask;
        std::optional<std::size_t> current; // as last reported
    };

    struct TaskState
    {
        std::uint64_t nextReleaseNs;
        std::mt19937_64 rng;
        std::uint64_t runNs = 0;
        std::optional<unsigned> cpu;
    };

    // The job `c` runs now: the first one with an end, else the first
    // (endless) one; nullptr when idle.
    static Job* running(Cpu& c);
    static const Job* running(const Cpu& c);
    bool queuedOn(const Cpu& c, std::size_t task) const;
    void emit(SchedEvent::Kind kind, unsigned cpu,
              std::optional<std::size_t> task);

    std::uint64_t nextEventNs(std::uint64_t limitNs) const;
    void run(std::uint64_t untilNs);
    void release(std::size_t task);
    unsigned place(const TaskSpec& spec) const;
    double power(const Cpu& c) const;

    std::vector<Cpu> cpus_;
    std::vector<TaskSpec> tasks_;
    std::vector<TaskState> taskState_;
    EnergyModel energy_;
    std::uint64_t nowNs_ = 0;
    Score score_;
    std::function<void(const SchedEvent&)> observer_;
};

} // namespace cppc::sim
