// SPDX-License-Identifier: Apache-2.0
#include "app.hpp"

#include "daemon/bus_loop.hpp"
#include "daemon/config.hpp"
#include "daemon/config_check.hpp"
#include "daemon/firmware_log.hpp"
#include "daemon/governor.hpp"
#include "daemon/latency_arbiter.hpp"
#include "daemon/latency_histogram.hpp"
#include "daemon/log.hpp"
#include "daemon/machines.hpp"
#include "daemon/metrics.hpp"
#include "daemon/observation.hpp"
#include "daemon/process_usage.hpp"
#include "daemon/service.hpp"
#include "daemon/task_activity.hpp"
#include "daemon/textfile_writer.hpp"
#include "daemon/tick_health.hpp"
#include "lib/backend/fd.hpp"
#include "lib/freq_line.hpp"
#include "lib/monotonic_clock.hpp"

#include <fcntl.h>
#include <sdbus-c++/sdbus-c++.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#ifndef CPPCGOV_VERSION
#define CPPCGOV_VERSION "unknown"
#endif

namespace cppcgov::daemon
{
namespace
{

using Clock = std::chrono::steady_clock;

// A degradation is logged at most once per CPU in this long after the
// CPU's last line (a recovery at once): a CPU whose accesses hover about
// their deadline would fill the journal.
constexpr std::chrono::seconds degradedLogInterval{10};

constexpr std::chrono::seconds nameCallTimeout{5};

// The tick's health warning (tick_health.hpp) at most this often.
constexpr std::chrono::seconds healthLogInterval{60};

std::filesystem::path latencyStateFile(const Options& options)
{
    return options.stateDir / "latency.state";
}

// Logs every entry of `result` at its severity: failures as errors.
void logRestore(const cppc::backend::RestoreResult& result)
{
    for (const cppc::backend::RestoreEntry& entry : result.entries())
    {
        const std::string line = cppc::backend::describe(entry);
        switch (entry.severity)
        {
            case cppc::backend::RestoreSeverity::failure:
                log::error(line);
                break;
            case cppc::backend::RestoreSeverity::warning:
                log::warning(line);
                break;
            case cppc::backend::RestoreSeverity::notice:
                log::notice(line);
                break;
        }
    }
}

// What `result` left and how to finish the job, for the last word of a
// stop, a --restore-only run or a refused start.
std::string whatIsLeft(const cppc::backend::RestoreResult& result)
{
    const std::vector<std::filesystem::path> files = result.leftFiles();
    const std::vector<std::filesystem::path> kept = result.keptStateFiles();
    std::string text;
    if (!files.empty())
    {
        text = "the saved values of " + cppc::backend::quotedList(files) +
               " are not back";
    }
    if (!kept.empty())
    {
        text += (text.empty() ? "" : "; ") + cppc::backend::quotedList(kept) +
                (kept.size() == 1 ? " holds" : " hold") +
                " what a restore must still put back";
    }
    return text + ". Fix the cause given above (a file that cannot be "
                  "written, CPUs offline, a damaged state file), then run "
                  "'cppcgovd --restore-only' or start cppcgovd, which puts "
                  "them back first";
}

// "'a', 'b'": the files a configuration was read from, for messages.
std::string quotedFiles(const std::vector<std::string>& files)
{
    std::string out;
    for (const std::string& f : files)
    {
        out += (out.empty() ? "'" : ", '") + f + "'";
    }
    return out;
}

// The configuration's warnings against the machine it drives, logged at
// start and on reload: the files' own (drop-ins not read) and the
// overrides naming CPUs or domains the machine lacks.
void logConfigWarnings(const std::vector<std::string>& fileWarnings,
                       const GovernorConfig& config, const Machine& machine)
{
    for (const std::string& w : fileWarnings)
    {
        log::warning(w);
    }
    for (const std::string& w : overrideWarnings(config, factsOf(machine)))
    {
        log::warning(w);
    }
}

// A ring of the last N values, with percentiles on demand.
class Recent
{
  public:
    explicit Recent(std::size_t capacity) : values_(capacity) {}

    void add(std::uint64_t v) noexcept
    {
        values_[next_] = v;
        next_ = (next_ + 1) % values_.size();
        count_ = std::min(count_ + 1, values_.size());
    }

    // The p-th percentile (0..100) of the values kept; 0 when empty.
    std::uint64_t percentile(unsigned p) const
    {
        if (count_ == 0)
        {
            return 0;
        }
        std::vector<std::uint64_t> sorted(
            values_.begin(),
            values_.begin() + static_cast<std::ptrdiff_t>(count_));
        std::sort(sorted.begin(), sorted.end());
        const std::size_t rank = (p * (count_ - 1) + 50) / 100;
        return sorted[rank];
    }

  private:
    std::vector<std::uint64_t> values_;
    std::size_t next_ = 0;
    std::size_t count_ = 0;
};

class Daemon
{
  public:
    // `warnings`: the files' own (ConfigReport::warnings), logged as it
    // starts.
    Daemon(const Options& options, GovernorConfig config,
           std::vector<std::string> warnings);

    int run();

  private:
    void onTick(const boost::system::error_code& ec);
    // Hands clamp `handle`, just added, to the scheduler's observation.
    void observe(std::uint64_t handle);
    void armTick();
    void onWatchdog(const boost::system::error_code& ec);
    void onSignal(const boost::system::error_code& ec, int signal);
    std::vector<std::string> reload();
    std::map<std::string, std::uint64_t> statistics() const;
    // The metrics as of now (metrics.hpp).
    MetricsSnapshot metricsSnapshot() const;
    // Writes the metrics' file now and every metrics.interval_s, or
    // removes it when the interval is 0 (at start and on reload).
    void configureMetrics();
    void onMetrics(const boost::system::error_code& ec,
                   std::uint64_t generation);
    void stop(int status);
    // Logs each CPU whose degraded reason changed since its last line: a
    // recovery at once, a degradation only once degradedLogInterval has
    // passed since the CPU's last line (those in between are counted in
    // the next line, and one still in force is logged when the interval
    // ends).
    void logDegraded(Clock::time_point now);
    // Logs `ec` when it differs from `last`, the previous tick's, and
    // records it there. `what` says what failed; it is called only when
    // there is something to log, so the tick builds no message otherwise.
    template <class What>
    void logMachineError(const What& what, std::error_code ec,
                         std::error_code& last);

    const Options& options_;
    // What runs: the files' values, but the backend and sampling source
    // the daemon started with (restartNote() says when the files differ).
    GovernorConfig config_;
    std::vector<std::string> startWarnings_;
    boost::asio::io_context io_;
    std::unique_ptr<Observation> observation_;
    std::unique_ptr<Machine> machine_;
    std::unique_ptr<Governor> governor_;
    std::unique_ptr<LatencyArbiter> arbiter_;
    std::unique_ptr<sdbus::IConnection> bus_;
    std::unique_ptr<BusLoop> busLoop_;
    std::unique_ptr<Service> service_;
    TaskActivity activity_;
    boost::asio::steady_timer tickTimer_;
    boost::asio::steady_timer watchdogTimer_;
    boost::asio::steady_timer metricsTimer_;
    // Which configureMetrics() the timer's wait belongs to: a wait that
    // completed before a cancel() still runs its handler.
    std::uint64_t metricsGeneration_ = 0;
    TextfileWriter textfile_;
    boost::asio::signal_set signals_;
    Clock::time_point deadline_;
    std::chrono::microseconds period_{1000};
    std::chrono::microseconds watchdogInterval_{0};
    std::uint64_t ticksAtLastPing_ = 0;
    TickReport report_;
    int status_ = 0;

    // Statistics.
    std::uint64_t ticksEarly_ = 0;
    std::uint64_t ticksSkipped_ = 0;
    std::uint64_t writes_ = 0;
    std::uint64_t writeErrors_ = 0;
    Recent lateness_{4096};
    Recent hintToWrite_{256};
    // The same since start, for the metrics.
    LatencyHistogram latenessBuckets_ = tickLatenessHistogram();
    LatencyHistogram hintToWriteBuckets_ = hintToWriteHistogram();
    TickHealth health_{static_cast<std::uint64_t>(
        std::chrono::nanoseconds(healthLogInterval).count())};
    std::map<std::uint64_t, std::uint64_t> pendingHints_; // handle -> ns
    std::error_code lastSampleError_;
    std::error_code lastApplyError_;
    std::error_code lastObserveError_;
    // Per CPU: its degraded reason as last logged, when, and the changes
    // seen since that were not logged.
    struct DegradedLine
    {
        std::string logged;
        std::optional<Clock::time_point> at;
        std::uint64_t unlogged = 0;
    };
    std::vector<DegradedLine> degradedLog_;
    std::uint64_t degradedChanges_ = 0; // the machine's count when read
    // The firmware checks' lines (firmware_log.hpp), at most one per
    // domain every degradedLogInterval.
    std::optional<FirmwareLog> firmwareLog_;
    // When a CPU whose change was not logged may be logged again.
    std::optional<Clock::time_point> degradedRecheck_;
};

Daemon::Daemon(const Options& options, GovernorConfig config,
               std::vector<std::string> warnings) :
    options_(options),
    config_(std::move(config)), startWarnings_(std::move(warnings)),
    tickTimer_(io_), watchdogTimer_(io_), metricsTimer_(io_),
    signals_(io_, SIGTERM, SIGINT, SIGHUP)
{
    // First, while the daemon has one thread: the capabilities the loading
    // needs are dropped afterwards, and a thread keeps those it started
    // with.
    observation_ =
        std::make_unique<Observation>(config_.samplingSource, options_.root);
    machine_ = makeMachine(config_.backend, options_.root, options_.stateDir);
    if (observation_->exact() && machine_->loadCpus() != 0)
    {
        machine_->useLoadSource(observation_->loadSource(machine_->loadCpus()));
    }
    governor_ = std::make_unique<Governor>(*machine_, config_);
    firmwareLog_.emplace(
        machine_->topology(),
        std::chrono::microseconds(degradedLogInterval).count());
    arbiter_ = std::make_unique<LatencyArbiter>(options_.root,
                                                latencyStateFile(options_));

    bus_ =
        options_.busAddress.empty()
            ? sdbus::createSystemBusConnection()
            : sdbus::createSessionBusConnectionWithAddress(options_.busAddress);
    // The daemon's synchronous bus calls are RequestName before it serves
    // and ReleaseName as it stops: bound how long a stuck bus driver could
    // hold them (sd-bus's default is 25 s).
    bus_->setMethodCallTimeout(nameCallTimeout);
    busLoop_ =
        std::make_unique<BusLoop>(io_, *bus_, [this](const std::string& what) {
            log::error("the bus connection failed: " + what + "; stopping");
            stop(1);
        });

    ServiceHooks hooks;
    hooks.reload = [this]() { return reload(); };
    hooks.statistics = [this]() { return statistics(); };
    hooks.metrics = [this]() { return renderMetrics(metricsSnapshot()); };
    hooks.clampAdded = [this](std::uint64_t handle, std::uint64_t ns) {
        pendingHints_[handle] = ns;
        observe(handle);
    };
    hooks.clampEnded = [this](std::uint64_t handle) {
        pendingHints_.erase(handle);
        observation_->endClamp(handle);
        governor_->forget(handle);
    };
    hooks.energyChanged =
        [this](std::span<const policies::EnergyPreference> perCpu) {
        governor_->setEnergyPreferences(perCpu);
    };
    hooks.poke = [this]() { busLoop_->poke(); };
    service_ = std::make_unique<Service>(
        *bus_, io_, *arbiter_, *governor_,
        ServiceInfo{machine_->name(), CPPCGOV_VERSION,
                    std::string(observation_->source()), observation_->why(),
                    options_.root},
        std::move(hooks));
    service_->configure(config_);
    period_ = std::chrono::microseconds(config_.samplingPeriodUs);
}

int Daemon::run()
{
    // Wake-ups as close to the deadline as the kernel can: the default 50 us
    // of timer slack would be added to every tick.
    (void)::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

    bus_->requestName(cppcgov::dbus::serviceName);
    busLoop_->start();

    deadline_ = Clock::now() + period_;
    armTick();
    configureMetrics();

    signals_.async_wait([this](const boost::system::error_code& ec,
                               int signal) { onSignal(ec, signal); });

    std::uint64_t watchdogUs = 0;
    if (::sd_watchdog_enabled(0, &watchdogUs) > 0 && watchdogUs > 0)
    {
        watchdogInterval_ = std::chrono::microseconds(watchdogUs / 4);
        watchdogTimer_.expires_after(watchdogInterval_);
        watchdogTimer_.async_wait([this](const boost::system::error_code& ec) {
            onWatchdog(ec);
        });
    }

    const std::string access = machine_->accessSummary();
    log::notice(
        "cppcgovd " CPPCGOV_VERSION " started: backend " + machine_->name() +
        ", " + std::to_string(governor_->cpus().size()) + " CPUs, policy " +
        std::string(policies::policyName(config_.defaults.kind)) +
        ", sampling every " + std::to_string(config_.samplingPeriodUs) +
        " us from " + std::string(observation_->source()) + " (" +
        observation_->why() + ")" +
        (access.empty() ? std::string() : ", " + access));
    if (!observation_->warning().empty())
    {
        log::warning(observation_->warning());
    }
    logConfigWarnings(startWarnings_, config_, *machine_);
    if (!observation_->exact() &&
        config_.samplingSource == SamplingSource::automatic)
    {
        log::notice("load and task placement come from procfs, in 10 ms "
                    "steps: " +
                    observation_->why());
    }
    const std::string status =
        "STATUS=governing " + std::to_string(governor_->cpus().size()) +
        " CPUs (" + machine_->name() + ")";
    (void)::sd_notify(0, ("READY=1\n" + status).c_str());

    try
    {
        io_.run();
    }
    catch (const std::exception& e)
    {
        // Nothing should get here; if something does, stop cleanly.
        log::error(std::string("unexpected failure, stopping: ") + e.what());
        status_ = 1;
    }

    // Stopping: end the handles, then put back what was changed.
    (void)::sd_notify(0, "STOPPING=1");
    tickTimer_.cancel();
    metricsTimer_.cancel();
    // A file left behind would show a stopped daemon as running.
    textfile_.stop();
    service_->endAll();
    cppc::backend::RestoreResult restored = arbiter_->restore();
    restored.merge(machine_->restore());
    logRestore(restored);
    const bool clean = !restored.anythingLeft();
    try
    {
        bus_->releaseName(cppcgov::dbus::serviceName);
    }
    catch (const sdbus::Error&)
    {
        // The bus went away first.
    }
    if (clean)
    {
        log::notice("stopped; everything changed was put back");
    }
    else
    {
        log::error("stopped, but not everything changed was put back: " +
                   whatIsLeft(restored));
    }
    const int exitStatus = status_ != 0 ? status_ : (clean ? 0 : 1);
    if (machine_->accessesStuck())
    {
        // A worker blocked in the kernel cannot be joined, and tearing the
        // machine down under it would pull its memory away: leave now.
        log::warning("an access to the hardware is still blocked in the "
                     "kernel; exiting without waiting for it");
        std::fflush(nullptr);
        ::_exit(exitStatus);
    }
    return exitStatus;
}

void Daemon::armTick()
{
    tickTimer_.expires_at(deadline_);
    tickTimer_.async_wait([this](const boost::system::error_code& ec) {
        onTick(ec);
    });
}

void Daemon::onTick(const boost::system::error_code& ec)
{
    if (ec)
    {
        return;
    }
    const Clock::time_point now = Clock::now();
    if (now < deadline_)
    {
        // Never act before the deadline.
        ++ticksEarly_;
        armTick();
        return;
    }
    const auto lateNs = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - deadline_)
            .count());
    lateness_.add(lateNs);
    latenessBuckets_.add(lateNs);

    const auto nowUs = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            now.time_since_epoch())
            .count());
    if (observation_->exact())
    {
        observation_->sample();
        governor_->tickExact(nowUs, observation_->cpus(), report_);
    }
    else
    {
        governor_->tick(nowUs, activity_.tick(service_->liveClamps()), report_);
    }
    service_->recordTick(nowUs);
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
        const std::optional<std::uint32_t> cpu = machine_->lastFailedCpu();
        return "writing a performance request" +
               (cpu ? " for " + machine_->writeTarget(*cpu) : std::string());
        },
        report_.applyError, lastApplyError_);
    if (machine_->degradedChanges() != degradedChanges_ ||
        (degradedRecheck_ && now >= *degradedRecheck_))
    {
        logDegraded(now);
    }
    if (firmwareLog_ && firmwareLog_->due(governor_->firmware(), nowUs))
    {
        for (const FirmwareLogLine& line :
             firmwareLog_->update(governor_->firmware(), nowUs))
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

    deadline_ += period_;
    const Clock::time_point after = Clock::now();
    std::uint64_t skipped = 0;
    if (after >= deadline_)
    {
        const auto missed = (after - deadline_) / period_ + 1;
        skipped = static_cast<std::uint64_t>(missed);
        ticksSkipped_ += skipped;
        deadline_ += missed * period_;
    }
    const auto ns = [](auto d) {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
    };
    if (const std::optional<std::string> line = health_.tick(
            ns(after.time_since_epoch()), lateNs, ns(period_), skipped))
    {
        log::warning(*line);
    }
    armTick();
}

void Daemon::observe(std::uint64_t handle)
{
    const std::span<const ClampHint> live = service_->liveClamps();
    const auto hint =
        std::find_if(live.begin(), live.end(), [handle](const ClampHint& c) {
            return c.handle == handle;
        });
    if (hint == live.end())
    {
        return;
    }
    const std::error_code ec = observation_->addClamp(*hint);
    if (ec && ec != lastObserveError_)
    {
        log::warning("handing clamp " + std::to_string(handle) + " (task " +
                     std::to_string(hint->target.pid) +
                     ") to the BPF program failed: " + ec.message() +
                     "; its tasks are not seen (logged again only when the "
                     "error changes)");
    }
    lastObserveError_ = ec;
}

template <class What>
void Daemon::logMachineError(const What& what, std::error_code ec,
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

void Daemon::logDegraded(Clock::time_point now)
{
    degradedChanges_ = machine_->degradedChanges();
    degradedRecheck_.reset();
    const std::size_t cpus = governor_->cpus().size();
    degradedLog_.resize(cpus);
    for (std::uint32_t cpu = 0; cpu < cpus; ++cpu)
    {
        const std::string_view state = machine_->degraded(cpu);
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

void Daemon::onWatchdog(const boost::system::error_code& ec)
{
    if (ec)
    {
        return;
    }
    // Ping only while ticks still run: a stuck tick lets systemd restart us.
    if (governor_->ticks() != ticksAtLastPing_)
    {
        ticksAtLastPing_ = governor_->ticks();
        (void)::sd_notify(0, "WATCHDOG=1");
    }
    watchdogTimer_.expires_after(watchdogInterval_);
    watchdogTimer_.async_wait([this](const boost::system::error_code& e) {
        onWatchdog(e);
    });
}

void Daemon::onSignal(const boost::system::error_code& ec, int signal)
{
    if (ec)
    {
        return;
    }
    if (signal == SIGHUP)
    {
        (void)::sd_notify(0, "RELOADING=1");
        try
        {
            (void)reload();
        }
        catch (const std::exception& e)
        {
            // A bad file was logged by reload(); the running configuration
            // stays.
            log::warning(std::string("reload on SIGHUP: ") + e.what());
        }
        // Signals emitted outside bus processing: get them out.
        busLoop_->poke();
        (void)::sd_notify(0, "READY=1");
        signals_.async_wait([this](const boost::system::error_code& e, int s) {
            onSignal(e, s);
        });
        return;
    }
    log::notice(std::string("stopping on ") + ::strsignal(signal));
    stop(0);
}

std::vector<std::string> Daemon::reload()
{
    ReloadResult r = tryReload(config_, options_.config, options_.configDir);
    if (!r.error.empty())
    {
        std::istringstream lines(r.error);
        for (std::string line; std::getline(lines, line);)
        {
            log::error("reloading the configuration failed, keeping the "
                       "running one: " +
                       line);
        }
        throw sdbus::Error(cppcgov::dbus::error::invalidConfig, r.error);
    }
    // What this machine cannot run is refused whole, like a bad file.
    if (const std::vector<std::string> refused =
            policyRefusals(r.config, *machine_);
        !refused.empty())
    {
        std::string message;
        for (const std::string& line : refused)
        {
            log::error("reloading the configuration failed, keeping the "
                       "running one: " +
                       line);
            message += (message.empty() ? "" : "\n") + line;
        }
        throw sdbus::Error(cppcgov::dbus::error::invalidConfig, message);
    }
    logConfigWarnings(r.warnings, r.config, *machine_);
    const std::string restart = restartNote(config_, r.config);
    if (!restart.empty())
    {
        log::warning(
            "not applied: " + restart + "; running backend " +
            machine_->name() + " with sampling from " +
            std::string(observation_->source()) + ", the files ask for " +
            std::string(backendKindName(r.config.backend.type)) +
            " and sampling.source " +
            std::string(samplingSourceName(r.config.samplingSource)));
    }
    // What needs a restart stays as it started.
    r.config.backend = config_.backend;
    r.config.samplingSource = config_.samplingSource;
    config_ = std::move(r.config);
    service_->setPendingRestart(restart);
    governor_->configure(config_);
    service_->configure(config_);
    period_ = std::chrono::microseconds(config_.samplingPeriodUs);
    configureMetrics();
    log::notice(
        "configuration reloaded from " + quotedFiles(config_.sources) +
        ": policy " + std::string(policies::policyName(config_.defaults.kind)) +
        (restart.empty() ? std::string() : " (" + restart + ": not applied)"));
    service_->announcePolicy();
    return config_.sources;
}

std::map<std::string, std::uint64_t> Daemon::statistics() const
{
    const AccessCounts access = machine_->accessCounts();
    const ObservationCounts observed = observation_->counts();
    return {
        {"ticks", governor_->ticks()},
        {"ticks_early", ticksEarly_},
        {"ticks_skipped", ticksSkipped_},
        {"tick_late_p50_ns", lateness_.percentile(50)},
        {"tick_late_p99_ns", lateness_.percentile(99)},
        {"tick_late_max_ns", lateness_.percentile(100)},
        {"writes", writes_},
        {"write_errors", writeErrors_},
        {"hint_to_write_p50_ns", hintToWrite_.percentile(50)},
        {"hint_to_write_p99_ns", hintToWrite_.percentile(99)},
        {"writes_landed", access.landed},
        {"access_errors", access.failed},
        {"accesses_late", access.late},
        {"cpus_degraded", access.degradedCpus},
        {"accesses_at_once_max", access.mostAtOnce},
        {"sched_events", observed.events},
        {"sched_events_missed", observed.missed},
        {"sched_runqueue_resets", observed.resets},
        {"sched_overcounts", observed.overcounts},
        {"sched_records_unread", observed.unread},
    };
}

MetricsSnapshot Daemon::metricsSnapshot() const
{
    MetricsSnapshot s;
    s.version = CPPCGOV_VERSION;
    s.backend = machine_->name();
    s.policy = policies::policyName(config_.defaults.kind);
    s.samplingSource = observation_->source();
    const std::vector<CpuView>& views = governor_->cpus();
    const policies::Topology& topology = machine_->topology();
    s.cpus.reserve(views.size());
    for (std::uint32_t cpu = 0; cpu < views.size(); ++cpu)
    {
        const CpuView& v = views[cpu];
        MetricsCpu c;
        c.cpu = cpu;
        c.requestedPerf = v.requestedPerf;
        c.deliveredPerf = v.deliveredPerf;
        if (cpu < topology.cpus.size())
        {
            const policies::CpuCaps& caps = topology.cpus[cpu];
            const cppc::FreqLine line{caps.lowest, caps.lowestKhz, caps.nominal,
                                      caps.nominalKhz};
            c.requestedKhz = line.khz(v.requestedPerf);
            // 0: not known, not a frequency.
            if (v.deliveredPerf != 0)
            {
                c.deliveredKhz = line.khz(v.deliveredPerf);
            }
        }
        c.util = v.util;
        c.clamp = v.clamp;
        c.reason = v.reason;
        c.degraded = !v.degraded.empty();
        c.desiredExcursions = v.desiredExcursions;
        c.minimumExcursions = v.minimumExcursions;
        s.cpus.push_back(c);
    }
    const std::vector<policies::Domain>& domains = topology.domains;
    s.domains.reserve(domains.size());
    for (std::uint32_t d = 0; d < domains.size(); ++d)
    {
        MetricsDomain m;
        m.domain = d;
        m.cpus = static_cast<std::uint32_t>(domains[d].cpus.size());
        for (const std::uint32_t cpu : domains[d].cpus)
        {
            if (cpu < views.size())
            {
                m.requestedPerf =
                    std::max(m.requestedPerf, views[cpu].requestedPerf);
            }
        }
        for (std::size_t c = 0; c < cppc::sanityCheckCount; ++c)
        {
            m.firmwareFindings[c] = governor_->firmware().active(
                d, static_cast<cppc::SanityCheck>(c));
        }
        s.domains.push_back(m);
    }
    s.clampHints = service_->clampCount();
    s.latencyHints = service_->latencyCount();
    s.energyHints = service_->energyCount();
    s.tickLateness = latenessBuckets_.values();
    s.hintToWrite = hintToWriteBuckets_.values();
    s.ticks = governor_->ticks();
    s.ticksSkipped = ticksSkipped_;
    s.writes = writes_;
    s.writeErrors = writeErrors_;
    s.accessErrors = machine_->accessCounts().failed;
    const ProcessUsage usage = processUsage();
    s.processCpuSeconds = usage.cpuSeconds;
    s.processResidentBytes = usage.residentBytes;
    return s;
}

void Daemon::configureMetrics()
{
    ++metricsGeneration_;
    metricsTimer_.cancel();
    if (config_.metrics.intervalS == 0)
    {
        textfile_.remove();
        return;
    }
    onMetrics({}, metricsGeneration_);
}

void Daemon::onMetrics(const boost::system::error_code& ec,
                       std::uint64_t generation)
{
    if (ec || generation != metricsGeneration_)
    {
        return;
    }
    // Figures copied here, rendered and written on the writer's thread.
    // Under --root, as every path the daemon writes on the machine.
    textfile_.write(
        options_.root /
            std::filesystem::path(config_.metrics.directory).relative_path(),
        [snapshot = metricsSnapshot()]() { return renderMetrics(snapshot); });
    metricsTimer_.expires_after(
        std::chrono::seconds(config_.metrics.intervalS));
    metricsTimer_.async_wait(
        [this, generation](const boost::system::error_code& e) {
        onMetrics(e, generation);
    });
}

void Daemon::stop(int status)
{
    if (status != 0)
    {
        status_ = status;
    }
    io_.stop();
}

} // namespace

namespace
{

// Holds an exclusive lock on the state directory for the process's life,
// so that a second cppcgovd (or a --restore-only run by hand) cannot undo
// the changes of one that runs. Throws std::runtime_error naming the
// directory when another holds it.
cppc::backend::Fd lockStateDir(const Options& options)
{
    std::filesystem::create_directories(options.stateDir);
    const std::filesystem::path path = options.stateDir / "lock";
    cppc::backend::Fd fd(
        ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.get() < 0)
    {
        throw std::system_error(errno, std::generic_category(),
                                "opening '" + path.string() + "'");
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    {
        throw std::runtime_error("another cppcgovd holds '" + path.string() +
                                 "': it is running with this state directory");
    }
    return fd;
}

// As many descriptors as the hard limit allows: each task handle holds a
// pidfd. Best effort (the unit sets LimitNOFILE= itself).
void raiseDescriptorLimit() noexcept
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
        limit.rlim_cur < limit.rlim_max)
    {
        limit.rlim_cur = limit.rlim_max;
        (void)::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

} // namespace

cppc::backend::RestoreResult restoreState(const Options& options)
{
    cppc::backend::RestoreResult result = LatencyArbiter::restoreFromFile(
        options.root, latencyStateFile(options));
    result.merge(restoreMachineState(options.root, options.stateDir));
    logRestore(result);
    return result;
}

int restoreOnly(const Options& options)
{
    try
    {
        const cppc::backend::Fd lock = lockStateDir(options);
        const cppc::backend::RestoreResult result = restoreState(options);
        if (result.anythingLeft())
        {
            log::error("a previous run's changes are not all put back: " +
                       whatIsLeft(result));
            return 1;
        }
        return 0;
    }
    catch (const std::exception& e)
    {
        log::error(e.what());
        return 1;
    }
}

int run(const Options& options)
{
    try
    {
        raiseDescriptorLimit();
        const cppc::backend::Fd lock = lockStateDir(options);
        const cppc::backend::RestoreResult restored = restoreState(options);
        if (restored.anythingLeft())
        {
            log::error("not starting over what a previous run left changed: " +
                       whatIsLeft(restored));
            return 1;
        }
        ConfigReport report =
            checkConfigFiles(options.config, options.configDir);
        if (!report.errors.empty())
        {
            for (const ConfigError& e : report.errors)
            {
                log::error(std::string("cannot start: ") + e.what());
            }
            return 1;
        }
        log::debug(
            "configuration read from " + quotedFiles(report.config.sources));
        Daemon daemon(options, std::move(report.config),
                      std::move(report.warnings));
        return daemon.run();
    }
    catch (const std::exception& e)
    {
        log::error(std::string("cannot start: ") + e.what());
        return 1;
    }
}

} // namespace cppcgov::daemon
