// SPDX-License-Identifier: Apache-2.0
// The tick on a thread of its own: every sampling period it samples the
// load, runs the policy and writes, on a thread scheduled apart from the
// D-Bus thread (tick_scheduling.hpp), so that neither busy CPUs nor a flood
// of calls delays it, and no client borrows its priority by calling. While
// the machine is quiet it sleeps the longer idle period (tick_pace.hpp),
// woken early by the scheduler's events or by new inputs (an eventfd the
// D-Bus side's publishInputs() writes).
//
// The tick's thread owns the governor, the machine, the observation's
// sampling and the task sampler while it runs; the D-Bus thread never
// touches them. The
// two share only wait-free hand-offs, so that nothing the ordinary-priority
// side does (allocate, be preempted, wait on the bus) can hold the tick:
//   - inputs, D-Bus thread to tick (LatestValue<TickInputs>): the live
//     clamps, each CPU's energy preference and the configuration, as one
//     whole state; the tick compares the clamps with those it had to find
//     the new and ended hints (the BPF program's hint table is the D-Bus
//     thread's, written before a call's reply: observation.hpp);
//   - outputs, tick to D-Bus thread (LatestValue<TickOutputs>): the CPUs'
//     views and the counters, published after every tick;
//   - each tick's utilization of every CPU (RowRing), for the headroom
//     history, drained by the D-Bus thread;
//   - the tick count and the recent lateness (atomics), for the watchdog
//     and GetStatistics;
//   - what the tick logs (log::LogQueue), written out by the D-Bus side
//     (writeLog()), so that a journal that stops reading stderr holds the
//     D-Bus thread at worst, never the tick.
// The tick allocates on its own thread only (a new hint, a reload).
#pragma once

#include "daemon/config.hpp"
#include "daemon/governor.hpp"
#include "daemon/hint.hpp"
#include "daemon/latency_histogram.hpp"
#include "daemon/latest_value.hpp"
#include "daemon/log_queue.hpp"
#include "daemon/machine.hpp"
#include "daemon/observation.hpp"
#include "daemon/recent_values.hpp"
#include "daemon/row_ring.hpp"
#include "daemon/task_activity.hpp"
#include "daemon/tick_pace.hpp"
#include "daemon/tick_scheduling.hpp"
#include "daemon/tick_thread.hpp"
#include "lib/backend/fd.hpp"
#include "policies/policy.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

class FirmwareLog;
class TickHealth;

// What the D-Bus side gives the tick: the whole state, every time.
struct TickInputs
{
    // The live clamp hints, ascending by handle, and when each one's call
    // arrived (CLOCK_MONOTONIC ns; for the hint-to-write figure).
    std::vector<ClampHint> clamps;
    std::vector<std::uint64_t> arrivalNs;
    // One per machine CPU; applied when energyGeneration changes.
    std::vector<policies::EnergyPreference> energy;
    std::uint64_t energyGeneration = 0;
    // The configuration to run; applied when the pointer changes.
    std::shared_ptr<const GovernorConfig> config;
};

// What the tick shows the D-Bus side, as of its last tick.
struct TickOutputs
{
    std::vector<CpuView> cpus;
    // Per domain of the machine's topology, per sanity check: whether the
    // firmware check's finding is active.
    std::vector<std::array<bool, cppc::sanityCheckCount>> findings;
    std::uint64_t ticks = 0;
    std::uint64_t ticksEarly = 0;
    std::uint64_t ticksSkipped = 0;
    // Sleeps of the idle period (tick_pace.hpp), and of them those that
    // were woken early.
    std::uint64_t idleSleeps = 0;
    std::uint64_t idleWakeups = 0;
    // Sleeps of the steady period.
    std::uint64_t steadySleeps = 0;
    std::uint64_t writes = 0;
    std::uint64_t writeErrors = 0;
    AccessCounts access;
    ObservationCounts observed;
    HistogramValues lateness;
    HistogramValues hintToWrite;
};

class TickLoop
{
  public:
    // The governor, machine, observation and configuration must outlive
    // the loop. Publishes outputs of the state before the first tick.
    TickLoop(Governor& governor, Machine& machine, Observation& observation,
             std::shared_ptr<const GovernorConfig> config);
    ~TickLoop();

    TickLoop(const TickLoop&) = delete;
    TickLoop& operator=(const TickLoop&) = delete;

    // Schedules `thread` as `config` asks (and drops `dropCapabilities`
    // from it), then runs the ticks on it. Throws std::runtime_error when
    // an explicit deadline or fifo is refused (nothing runs on the thread
    // then). `thread` must outlive the loop.
    void start(TickThread& thread, const TickConfig& config,
               std::vector<int> dropCapabilities = {});
    // Stops the ticks and waits for the thread's end: afterwards the
    // governor and the machine are the caller's again. Idempotent.
    void stop() noexcept;

    const TickReservation& reservation() const noexcept
    {
        return reservation_;
    }

    // Whether the tick's thread ended on an exception (it then sent the
    // process SIGTERM, so that the daemon stops and puts everything back).
    bool failed() const noexcept
    {
        return failed_.load(std::memory_order_relaxed);
    }

    // --- the D-Bus thread's side ---------------------------------------

    // The inputs' slot to fill whole, then publishInputs().
    TickInputs& inputs() noexcept
    {
        return inputs_.back();
    }
    void publishInputs() noexcept;

    // The newest outputs.
    const TickOutputs& latest() noexcept
    {
        (void)outputs_.refresh();
        return outputs_.front();
    }

    // Calls fn(nowUs, utilization of every CPU) for each tick not drained
    // yet, oldest first.
    template <class Fn>
    void drainUtilization(Fn&& fn)
    {
        (void)util_.drain(std::forward<Fn>(fn));
    }
    // Ticks whose utilization was not drained in time.
    std::uint64_t utilizationDropped() const noexcept
    {
        return util_.dropped();
    }

    // Writes out what the tick logged since the last call (its thread logs
    // into a queue: log_queue.hpp). From one thread, the one that calls
    // stop(), which writes out the rest.
    void writeLog() noexcept
    {
        log::writeQueued(log_);
    }

    std::size_t cpuCount() const noexcept
    {
        return cpuCount_;
    }

    // Ticks run so far (the watchdog's sign of life).
    std::uint64_t ticks() const noexcept
    {
        return ticks_.load(std::memory_order_relaxed);
    }

    // Percentiles (0..100) over the last ticks.
    std::uint64_t latenessNs(unsigned percentile) const
    {
        return lateness_.percentile(percentile);
    }
    std::uint64_t tickCpuNs(unsigned percentile) const
    {
        return tickCpu_.percentile(percentile);
    }
    std::uint64_t hintToWriteNs(unsigned percentile) const
    {
        return hintToWrite_.percentile(percentile);
    }

  private:
    void run();
    // Sleeps until `until` or an early wake-up (new inputs, stop(), and
    // when `armed` the scheduler's events); returns whether it woke early.
    bool sleepLong(std::chrono::steady_clock::time_point until,
                   bool armed) noexcept;
    // Ends a long sleep, now or at its start (wakeEvent_).
    void wakeSleep() noexcept;
    void tickOnce(std::chrono::steady_clock::time_point now);
    void takeInputs();
    // On SCHED_DEADLINE: sets the procfs reads' budget from what the last
    // tick's `tookNs` of reads cost.
    void fitReads(std::uint64_t tookNs) noexcept;
    void publishOutputs();
    void logDegraded(std::chrono::steady_clock::time_point now);
    void logFirmware(std::uint64_t nowUs);
    template <class What>
    void logMachineError(const What& what, std::error_code ec,
                         std::error_code& last);

    Governor& governor_;
    Machine& machine_;
    Observation& observation_;
    std::shared_ptr<const GovernorConfig> config_;
    const std::size_t cpuCount_;
    TaskActivity activity_;

    LatestValue<TickInputs> inputs_;
    LatestValue<TickOutputs> outputs_;
    RowRing util_;
    log::LogQueue log_;
    std::atomic<std::uint64_t> ticks_{0};
    RecentValues lateness_{4096};
    RecentValues tickCpu_{4096};
    RecentValues hintToWrite_{256};

    TickThread* thread_ = nullptr;
    std::atomic<bool> stopping_{false};
    // Written by publishInputs() and stop(), read by sleepLong().
    cppc::backend::Fd wakeEvent_;
    std::atomic<bool> failed_{false};
    TickReservation reservation_;

    // The tick's own, on its thread.
    std::chrono::steady_clock::time_point deadline_;
    std::chrono::microseconds period_{1000};
    TickPace pace_;
    TickSleep sleep_ = TickSleep::period;
    bool capped_ = false; // a live hint has a util_max below utilScale
    std::uint64_t longSleeps_ = 0;
    std::uint64_t earlyWakes_ = 0;
    std::uint64_t steadySleeps_ = 0;
    // When the access and observation counts were last read.
    std::chrono::steady_clock::time_point countsRead_{};
    std::uint64_t spinNs_ = 0;
    // The procfs reads' CPU time a tick may take (0: no limit but the
    // sampler's own), and what one read costs, measured.
    std::uint64_t readsBudgetNs_ = 0;
    std::uint64_t readCostNs_ = 0;
    TickReport report_;
    std::vector<std::uint64_t> known_; // the clamps' handles, ascending
    std::uint64_t energyGeneration_ = 0;
    std::map<std::uint64_t, std::uint64_t> pendingHints_; // handle -> ns
    std::vector<std::uint16_t> utilRow_;
    std::uint64_t ticksEarly_ = 0;
    std::uint64_t ticksSkipped_ = 0;
    std::uint64_t writes_ = 0;
    std::uint64_t writeErrors_ = 0;
    // The machine's access counts and the observation's, as last read.
    AccessCounts access_;
    ObservationCounts observed_;
    LatencyHistogram latenessBuckets_ = tickLatenessHistogram();
    LatencyHistogram hintToWriteBuckets_ = hintToWriteHistogram();
    std::unique_ptr<TickHealth> health_;
    std::error_code lastSampleError_;
    std::error_code lastApplyError_;
    struct DegradedLine
    {
        std::string logged;
        std::optional<std::chrono::steady_clock::time_point> at;
        std::uint64_t unlogged = 0;
    };
    std::vector<DegradedLine> degradedLog_;
    std::uint64_t degradedChanges_ = 0;
    std::unique_ptr<FirmwareLog> firmwareLog_;
    std::optional<std::chrono::steady_clock::time_point> degradedRecheck_;
};

} // namespace cppcgov::daemon
