// SPDX-License-Identifier: Apache-2.0
#include "daemon/tick_loop.hpp"

#include "daemon/firmware_log.hpp"
#include "daemon/log.hpp"
#include "daemon/tick_health.hpp"
#include "lib/monotonic_clock.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <stdexcept>
#include <string_view>

namespace cppcgov::daemon
{
namespace
{

using Clock = std::chrono::steady_clock;

// A degradation is logged at most once per CPU in this long after the
// CPU's last line (a recovery at once): a CPU whose accesses hover about
// their deadline would fill the journal.
constexpr std::chrono::seconds degradedLogInterval{10};

// The tick's health warning (tick_health.hpp) at most this often.
constexpr std::chrono::seconds healthLogInterval{60};

// Ticks of utilization the D-Bus thread may fall behind by before rows are
// dropped from the headroom history: 2 s at the default period.
constexpr std::size_t utilizationRows = 2048;

// The fewest procfs reads of hinted threads a tick on SCHED_DEADLINE makes.
constexpr std::size_t leastReadsPerTick = 8;

// How often the machine's access counts (they take the worker pool's lock)
// and the observation's counts (a pass over every CPU's record) are read
// for GetStatistics: about this often, whatever the sampling period.
constexpr std::chrono::milliseconds countsInterval{100};

// The test hook: CPPCGOV_TEST_SPIN_TICK_US=N makes every tick spin for N
// us of its own CPU time, to show what the reservation leaves the rest of
// the machine (tests/integration/realtime_test.py). Never set by the unit.
std::uint64_t spinFromEnvironment() noexcept
{
    const char* text = std::getenv("CPPCGOV_TEST_SPIN_TICK_US");
    if (text == nullptr)
    {
        return 0;
    }
    const std::string_view view(text);
    std::uint64_t us = 0;
    const auto [end, ec] =
        std::from_chars(view.data(), view.data() + view.size(), us);
    if (ec != std::errc() || end != view.data() + view.size() || us > 1'000'000)
    {
        return 0;
    }
    return us * 1000;
}

std::uint64_t nanos(Clock::duration d) noexcept
{
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

timespec toTimespec(std::uint64_t ns) noexcept
{
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000U);
    ts.tv_nsec = static_cast<long>(ns % 1'000'000'000U);
    return ts;
}

// Sleeps until `when` on CLOCK_MONOTONIC (steady_clock's clock).
void sleepUntil(Clock::time_point when) noexcept
{
    const timespec ts = toTimespec(nanos(when.time_since_epoch()));
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
           EINTR)
    {}
}

} // namespace

TickLoop::TickLoop(Governor& governor, Machine& machine,
                   Observation& observation,
                   std::shared_ptr<const GovernorConfig> config) :
    governor_(governor),
    machine_(machine), observation_(observation), config_(std::move(config)),
    cpuCount_(governor.cpus().size()),
    util_(utilizationRows, governor.cpus().size()),
    wakeEvent_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
    spinNs_(spinFromEnvironment()), utilRow_(governor.cpus().size(), 0),
    health_(std::make_unique<TickHealth>(nanos(healthLogInterval))),
    firmwareLog_(std::make_unique<FirmwareLog>(
        machine.topology(),
        std::chrono::microseconds(degradedLogInterval).count()))
{
    if (!wakeEvent_)
    {
        throw std::system_error(errno, std::system_category(),
                                "creating the tick's wake-up eventfd");
    }
    period_ = std::chrono::microseconds(config_->samplingPeriodUs);
    access_ = machine_.accessCounts();
    observed_ = observation_.counts();
    // The D-Bus side's slot starts as the state before the first tick, so
    // that it sees every CPU from the start.
    publishOutputs();
    (void)outputs_.refresh();
    TickInputs& in = inputs_.back();
    in.config = config_;
    inputs_.publish();
}

TickLoop::~TickLoop()
{
    stop();
}

void TickLoop::start(TickThread& thread, const TickConfig& config,
                     std::vector<int> dropCapabilities)
{
    thread_ = &thread;
    reservation_ = thread.reserve(config, config_->samplingPeriodUs, cpuCount_,
                                  std::move(dropCapabilities));
    if ((config.scheduling == TickScheduling::deadline ||
         config.scheduling == TickScheduling::fifo) &&
        reservation_.policy != config.scheduling)
    {
        throw std::runtime_error(
            "tick.scheduling is " +
            std::string(tickSchedulingName(config.scheduling)) + ": " +
            reservation_.refused +
            " (it needs CAP_SYS_NICE, which the shipped unit grants; "
            "'auto' falls back instead)");
    }
    if (reservation_.policy == TickScheduling::deadline)
    {
        // The hinted threads' procfs reads within half the runtime (a tick
        // past its runtime waits for the next period): the budget follows
        // what the reads are measured to cost (tickOnce()). What a tick
        // does not reach, the next one reads (task_activity.hpp).
        readsBudgetNs_ = reservation_.runtimeNs / 2;
        activity_.setReadsPerTick(leastReadsPerTick);
    }
    thread.run([this]() {
        log::deferTo(&log_);
        try
        {
            run();
        }
        catch (const std::exception& e)
        {
            // Nothing should get here; if something does, the daemon
            // stops cleanly and puts back what it changed.
            failed_.store(true, std::memory_order_relaxed);
            // The tick is over: its last word straight to stderr, where a
            // full queue cannot lose it.
            log::deferTo(nullptr);
            log::error(std::string("the tick failed, stopping: ") + e.what());
            (void)::kill(::getpid(), SIGTERM);
        }
        log::deferTo(nullptr);
    });
}

void TickLoop::publishInputs() noexcept
{
    inputs_.publish();
    // A sleeping tick takes them now (a tick awake counts one spare wake-up
    // at its next long sleep, and ticks again).
    wakeSleep();
}

void TickLoop::wakeSleep() noexcept
{
    const std::uint64_t one = 1;
    (void)!::write(wakeEvent_.get(), &one, sizeof(one));
}

void TickLoop::stop() noexcept
{
    stopping_.store(true, std::memory_order_relaxed);
    wakeSleep();
    if (thread_ != nullptr)
    {
        thread_->join();
    }
    // The tick's last lines (the thread has ended: nothing is added).
    writeLog();
}

void TickLoop::run()
{
    takeInputs();
    deadline_ = Clock::now() + period_;
    while (!stopping_.load(std::memory_order_relaxed))
    {
        bool early = false;
        if (sleep_ == TickSleep::period)
        {
            sleepUntil(deadline_);
        }
        else
        {
            early = sleepLong(deadline_, sleep_ == TickSleep::idle);
        }
        if (stopping_.load(std::memory_order_relaxed))
        {
            break;
        }
        const Clock::time_point now = Clock::now();
        if (early && now < deadline_)
        {
            // Woken: the tick is due now, and the period runs from here.
            if (sleep_ == TickSleep::idle)
            {
                ++earlyWakes_;
                pace_.woken();
            }
            deadline_ = now;
        }
        if (now < deadline_)
        {
            // Never act before the deadline.
            ++ticksEarly_;
            continue;
        }
        tickOnce(now);
    }
}

bool TickLoop::sleepLong(Clock::time_point until, bool armed) noexcept
{
    std::array<pollfd, 2> fds{};
    fds[0] = {-1, 0, 0}; // ignored by ppoll() unless armed
    fds[1] = {wakeEvent_.get(), POLLIN, 0};
    if (armed)
    {
        ++longSleeps_;
        observation_.armWake(true);
        // What woke between the tick's sample and the arming (a task that
        // slept a moment after the tick saw it go) wakes it at once.
        if (observation_.othersRunningNow())
        {
            observation_.armWake(false);
            (void)observation_.takeWakes();
            return true;
        }
        fds[0] = {observation_.wakeFd(), POLLIN, 0};
    }
    else
    {
        ++steadySleeps_;
    }
    bool early = false;
    bool woken = false;
    for (;;)
    {
        const Clock::time_point now = Clock::now();
        if (now >= until)
        {
            break;
        }
        const timespec timeout = toTimespec(nanos(until - now));
        const int n = ::ppoll(fds.data(), fds.size(), &timeout, nullptr);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0)
        {
            // Never expected; the period's sleep, not a loop.
            sleepUntil(until);
            break;
        }
        if (n == 0)
        {
            break;
        }
        woken = (fds[1].revents & POLLIN) != 0;
        if (woken || !armed || observation_.takeWakes() != 0)
        {
            early = true;
            break;
        }
        // Only a late record of an earlier arming, which may have disarmed
        // this one: armed again, and what runs now is looked for again.
        observation_.armWake(true);
        if (observation_.othersRunningNow())
        {
            early = true;
            break;
        }
    }
    if (armed)
    {
        observation_.armWake(false);
        (void)observation_.takeWakes();
    }
    // Emptied only when it was seen set: a read of an empty eventfd is a
    // system call a sleep, for nothing (one set after the poll stays set
    // and ends the next long sleep at once, as one set while awake does).
    if (woken)
    {
        std::uint64_t count = 0;
        (void)!::read(wakeEvent_.get(), &count, sizeof(count));
    }
    return early;
}

void TickLoop::tickOnce(Clock::time_point now)
{
    const std::uint64_t cpuBefore = threadCpuNs();
    const std::uint64_t lateNs = nanos(now - deadline_);
    lateness_.add(lateNs);
    latenessBuckets_.add(lateNs);
    takeInputs();

    const auto nowUs = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            now.time_since_epoch())
            .count());
    if (observation_.exact())
    {
        observation_.sample();
        governor_.tickExact(nowUs, observation_.cpus(), report_);
    }
    else
    {
        const std::uint64_t readsFrom = threadCpuNs();
        const std::span<const HintSighting> seen =
            activity_.tick(inputs_.front().clamps);
        fitReads(threadCpuNs() - readsFrom);
        governor_.tick(nowUs, seen, report_);
    }
    writes_ += report_.writes;
    logMachineError([]() { return std::string("sampling the load"); },
                    report_.sampleError, lastSampleError_);
    if (report_.applyError)
    {
        ++writeErrors_;
    }
    // The message names the CPU the write was for and where it went.
    logMachineError(
        [this]() {
        const std::optional<std::uint32_t> cpu = machine_.lastFailedCpu();
        return "writing a performance request" +
               (cpu ? " for " + machine_.writeTarget(*cpu) : std::string());
        },
        report_.applyError, lastApplyError_);
    if (machine_.degradedChanges() != degradedChanges_ ||
        (degradedRecheck_ && now >= *degradedRecheck_))
    {
        logDegraded(now);
    }
    logFirmware(nowUs);

    if (!pendingHints_.empty())
    {
        const auto done =
            static_cast<std::uint64_t>(cppc::monotonicNow().count());
        for (std::uint64_t handle : report_.handlesWritten)
        {
            auto it = pendingHints_.find(handle);
            if (it != pendingHints_.end())
            {
                hintToWrite_.add(done - it->second);
                hintToWriteBuckets_.add(done - it->second);
                pendingHints_.erase(it);
            }
        }
        // Active without a write: its clamp changed nothing to measure.
        for (std::uint64_t handle : report_.handlesActive)
        {
            pendingHints_.erase(handle);
        }
    }

    const std::vector<CpuView>& views = governor_.cpus();
    for (std::size_t cpu = 0; cpu < utilRow_.size() && cpu < views.size();
         ++cpu)
    {
        utilRow_[cpu] = views[cpu].util;
    }
    (void)util_.push(nowUs, utilRow_);
    if (now - countsRead_ >= countsInterval)
    {
        countsRead_ = now;
        access_ = machine_.accessCounts();
        observed_ = observation_.counts();
    }

    if (spinNs_ != 0)
    {
        // The test hook: burn CPU time until the tick has used spinNs_.
        while (threadCpuNs() - cpuBefore < spinNs_ &&
               !stopping_.load(std::memory_order_relaxed))
        {}
    }

    // The next sleep (tick_pace.hpp): the idle period once the machine is
    // quiet, where the scheduler's events can end it; else the steady
    // period once ticks stopped writing, unless a util_max hint is live
    // (any task runnable in a window lifts its cap for the whole window: a
    // longer window would lift it for longer); else the period.
    const auto idle = std::chrono::microseconds(config_->idlePeriodUs);
    const auto steady = std::chrono::microseconds(config_->steadyPeriodUs);
    const TickSleep wish = pace_.afterTick(
        tickState(observation_.othersBusy(), report_.writes,
                  observation_.othersRunning()));
    if (wish == TickSleep::idle && idle > period_ && observation_.exact() &&
        observation_.wakeFd() >= 0)
    {
        sleep_ = TickSleep::idle;
        deadline_ = now + idle;
    }
    else if (wish != TickSleep::period && pace_.calm() && steady > period_ &&
             !capped_)
    {
        sleep_ = TickSleep::steady;
        deadline_ = now + steady;
    }
    else
    {
        sleep_ = TickSleep::period;
        deadline_ += period_;
    }
    const Clock::time_point after = Clock::now();
    std::uint64_t skipped = 0;
    if (sleep_ == TickSleep::period && after >= deadline_)
    {
        const auto missed = (after - deadline_) / period_ + 1;
        skipped = static_cast<std::uint64_t>(missed);
        ticksSkipped_ += skipped;
        deadline_ += missed * period_;
    }
    tickCpu_.add(threadCpuNs() - cpuBefore);
    publishOutputs();
    ticks_.store(governor_.ticks(), std::memory_order_relaxed);
    if (const std::optional<std::string> line = health_->tick(
            nanos(after.time_since_epoch()), lateNs, nanos(period_), skipped))
    {
        log::warning(*line);
    }
}

void TickLoop::fitReads(std::uint64_t tookNs) noexcept
{
    const std::size_t reads = activity_.lastReads();
    if (readsBudgetNs_ == 0 || reads == 0)
    {
        return;
    }
    // A moving average of a read's cost, an eighth of the newest each time.
    const std::uint64_t perRead = std::max<std::uint64_t>(tookNs / reads, 1);
    readCostNs_ = readCostNs_ == 0 ? perRead : (readCostNs_ * 7 + perRead) / 8;
    activity_.setReadsPerTick(std::clamp<std::size_t>(
        static_cast<std::size_t>(readsBudgetNs_ / readCostNs_),
        leastReadsPerTick, TaskActivity::defaultReadsPerTick));
}

void TickLoop::takeInputs()
{
    if (!inputs_.refresh())
    {
        return;
    }
    const TickInputs& in = inputs_.front();
    if (in.config && in.config != config_)
    {
        config_ = in.config;
        try
        {
            governor_.configure(*config_);
        }
        catch (const std::exception& e)
        {
            // The D-Bus side checked it first (policyRefusals()).
            log::error(std::string("applying the reloaded configuration "
                                   "failed, keeping parts of the old one: ") +
                       e.what());
        }
        period_ = std::chrono::microseconds(config_->samplingPeriodUs);
    }
    if (in.energyGeneration != energyGeneration_ &&
        in.energy.size() == cpuCount_)
    {
        energyGeneration_ = in.energyGeneration;
        governor_.setEnergyPreferences(in.energy);
    }

    // The hints that ended: known before, not among the live ones.
    const auto liveHas = [&in](std::uint64_t handle) {
        const auto at = std::lower_bound(
            in.clamps.begin(), in.clamps.end(), handle,
            [](const ClampHint& c, std::uint64_t h) { return c.handle < h; });
        return at != in.clamps.end() && at->handle == handle;
    };
    for (const std::uint64_t handle : known_)
    {
        if (!liveHas(handle))
        {
            pendingHints_.erase(handle);
            governor_.forget(handle);
        }
    }
    // The new ones: live, not known before.
    for (std::size_t i = 0; i < in.clamps.size(); ++i)
    {
        const ClampHint& hint = in.clamps[i];
        if (std::binary_search(known_.begin(), known_.end(), hint.handle))
        {
            continue;
        }
        if (i < in.arrivalNs.size() && in.arrivalNs[i] != 0)
        {
            pendingHints_[hint.handle] = in.arrivalNs[i];
        }
    }
    known_.resize(in.clamps.size());
    std::transform(in.clamps.begin(), in.clamps.end(), known_.begin(),
                   [](const ClampHint& c) { return c.handle; });
    capped_ = std::any_of(in.clamps.begin(), in.clamps.end(),
                          [](const ClampHint& c) {
        return c.clamp.max < policies::utilScale;
    });
}

void TickLoop::publishOutputs()
{
    TickOutputs& out = outputs_.back();
    out.cpus = governor_.cpus();
    const std::size_t domains = machine_.topology().domains.size();
    out.findings.resize(domains);
    for (std::size_t d = 0; d < domains; ++d)
    {
        for (std::size_t c = 0; c < cppc::sanityCheckCount; ++c)
        {
            out.findings[d][c] = governor_.firmware().active(
                d, static_cast<cppc::SanityCheck>(c));
        }
    }
    out.ticks = governor_.ticks();
    out.ticksEarly = ticksEarly_;
    out.ticksSkipped = ticksSkipped_;
    out.idleSleeps = longSleeps_;
    out.idleWakeups = earlyWakes_;
    out.steadySleeps = steadySleeps_;
    out.writes = writes_;
    out.writeErrors = writeErrors_;
    out.access = access_;
    out.observed = observed_;
    latenessBuckets_.valuesInto(out.lateness);
    hintToWriteBuckets_.valuesInto(out.hintToWrite);
    outputs_.publish();
}

template <class What>
void TickLoop::logMachineError(const What& what, std::error_code ec,
                               std::error_code& last)
{
    // Once per change, not once per tick.
    if (ec && ec != last)
    {
        log::warning(what() + " failed: " + ec.message() +
                     ", ignoring (logged again only when it changes)");
    }
    last = ec;
}

void TickLoop::logFirmware(std::uint64_t nowUs)
{
    if (!firmwareLog_->due(governor_.firmware(), nowUs))
    {
        return;
    }
    for (const FirmwareLogLine& line :
         firmwareLog_->update(governor_.firmware(), nowUs))
    {
        if (line.finding)
        {
            log::warning(line.text);
        }
        else
        {
            log::notice(line.text);
        }
    }
}

void TickLoop::logDegraded(Clock::time_point now)
{
    degradedChanges_ = machine_.degradedChanges();
    degradedRecheck_.reset();
    degradedLog_.resize(cpuCount_);
    for (std::uint32_t cpu = 0; cpu < cpuCount_; ++cpu)
    {
        const std::string_view state = machine_.degraded(cpu);
        DegradedLine& line = degradedLog_[cpu];
        if (state == line.logged)
        {
            continue;
        }
        // A recovery is logged at once; a degradation soon after the CPU's
        // last line is counted, and logged when the interval has passed if
        // it is still there.
        if (!state.empty() && line.at && now < *line.at + degradedLogInterval)
        {
            ++line.unlogged;
            const Clock::time_point again = *line.at + degradedLogInterval;
            degradedRecheck_ =
                std::min(degradedRecheck_.value_or(again), again);
            continue;
        }
        const std::string since =
            line.unlogged == 0
                ? std::string()
                : " (degraded " + std::to_string(line.unlogged) +
                      " more times since the last line, not logged: at most "
                      "one line per CPU every " +
                      std::to_string(degradedLogInterval.count()) + " s)";
        if (state.empty())
        {
            log::notice("CPU " + std::to_string(cpu) +
                        " recovered: its accesses answer again" + since);
        }
        else
        {
            log::warning("CPU " + std::to_string(cpu) +
                         " degraded: " + std::string(state) +
                         "; its requests are held back until the access "
                         "returns" +
                         since);
        }
        line.logged = state;
        line.at = now;
        line.unlogged = 0;
    }
}

} // namespace cppcgov::daemon
