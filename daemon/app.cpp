// SPDX-License-Identifier: Apache-2.0
#include "app.hpp"

#include "daemon/bus_loop.hpp"
#include "daemon/capabilities.hpp"
#include "daemon/config.hpp"
#include "daemon/config_check.hpp"
#include "daemon/governor.hpp"
#include "daemon/latency_arbiter.hpp"
#include "daemon/log.hpp"
#include "daemon/machines.hpp"
#include "daemon/metrics.hpp"
#include "daemon/observation.hpp"
#include "daemon/process_usage.hpp"
#include "daemon/service.hpp"
#include "daemon/textfile_writer.hpp"
#include "daemon/tick_loop.hpp"
#include "daemon/tick_thread.hpp"
#include "lib/backend/fd.hpp"
#include "lib/freq_line.hpp"
#include "lib/monotonic_clock.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sdbus-c++/sdbus-c++.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
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

constexpr std::chrono::seconds nameCallTimeout{5};

// How often the D-Bus thread takes the ticks' utilization into the
// headroom history and writes out what the tick logged: well within what
// the tick loop queues (tick_loop.cpp).
constexpr std::chrono::milliseconds historyInterval{100};

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

class Daemon
{
  public:
    // `warnings`: the files' own (ConfigReport::warnings), logged as it
    // starts.
    Daemon(const Options& options, GovernorConfig config,
           std::vector<std::string> warnings);

    int run();

  private:
    // The tick's inputs changed: hands them over once the current turn of
    // the loop is done (several changes in one turn make one hand-off).
    void inputsChanged();
    void publishInputs();
    // Hands clamp `handle`, just added, to the scheduler's observation,
    // before the call's reply.
    void observe(std::uint64_t handle);
    void onWatchdog(const boost::system::error_code& ec);
    void onHistory(const boost::system::error_code& ec);
    void onSignal(const boost::system::error_code& ec, int signal);
    std::vector<std::string> reload();
    std::map<std::string, std::uint64_t> statistics();
    // The metrics as of now (metrics.hpp).
    MetricsSnapshot metricsSnapshot();
    // Writes the metrics' file now and every metrics.interval_s, or
    // removes it when the interval is 0 (at start and on reload).
    void configureMetrics();
    void onMetrics(const boost::system::error_code& ec,
                   std::uint64_t generation);
    void stop(int status);

    const Options& options_;
    // What runs: the files' values, but the backend, sampling source and
    // tick scheduling the daemon started with (restartNote() says when
    // the files differ).
    GovernorConfig config_;
    std::vector<std::string> startWarnings_;
    // Started before any other thread (tick_thread.hpp).
    TickThread tickThread_;
    boost::asio::io_context io_;
    std::unique_ptr<Observation> observation_;
    std::unique_ptr<Machine> machine_;
    std::unique_ptr<Governor> governor_;
    std::unique_ptr<TickLoop> tick_;
    std::unique_ptr<LatencyArbiter> arbiter_;
    std::unique_ptr<sdbus::IConnection> bus_;
    std::unique_ptr<BusLoop> busLoop_;
    std::unique_ptr<Service> service_;
    boost::asio::steady_timer watchdogTimer_;
    boost::asio::steady_timer historyTimer_;
    boost::asio::steady_timer metricsTimer_;
    // Which configureMetrics() the timer's wait belongs to: a wait that
    // completed before a cancel() still runs its handler.
    std::uint64_t metricsGeneration_ = 0;
    TextfileWriter textfile_;
    boost::asio::signal_set signals_;
    std::chrono::microseconds watchdogInterval_{0};
    std::uint64_t ticksAtLastPing_ = 0;
    int status_ = 0;

    // The D-Bus side's copy of the tick's inputs (tick_loop.hpp): when
    // each live clamp's call arrived, each CPU's energy preference and
    // the configuration running.
    std::map<std::uint64_t, std::uint64_t> arrivals_; // handle -> ns
    std::vector<policies::EnergyPreference> energy_;
    std::uint64_t energyGeneration_ = 0;
    std::shared_ptr<const GovernorConfig> running_;
    bool inputsPending_ = false;
    std::error_code lastObserveError_;
};

Daemon::Daemon(const Options& options, GovernorConfig config,
               std::vector<std::string> warnings) :
    options_(options),
    config_(std::move(config)), startWarnings_(std::move(warnings)),
    watchdogTimer_(io_), historyTimer_(io_), metricsTimer_(io_),
    signals_(io_, SIGTERM, SIGINT, SIGHUP)
{
    // The tick's thread is the first (tickThread_, above): it alone keeps
    // CAP_SYS_NICE, which this thread drops now, so no thread started
    // after has it (tick_thread.hpp).
    (void)dropCapabilities({CAP_SYS_NICE});
    // Then, while the daemon has no other thread: the capabilities the
    // loading needs are dropped afterwards, and a thread keeps those it
    // started with.
    observation_ =
        std::make_unique<Observation>(config_.samplingSource, options_.root);
    machine_ = makeMachine(config_.backend, options_.root, options_.stateDir);
    if (observation_->exact() && machine_->loadCpus() != 0)
    {
        machine_->useLoadSource(observation_->loadSource(machine_->loadCpus()));
    }
    governor_ = std::make_unique<Governor>(*machine_, config_);
    running_ = std::make_shared<const GovernorConfig>(config_);
    tick_ = std::make_unique<TickLoop>(*governor_, *machine_, *observation_,
                                       running_);
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
        arrivals_[handle] = ns;
        observe(handle);
        inputsChanged();
    };
    hooks.clampEnded = [this](std::uint64_t handle) {
        arrivals_.erase(handle);
        observation_->endClamp(handle);
        inputsChanged();
    };
    hooks.energyChanged =
        [this](std::span<const policies::EnergyPreference> perCpu) {
        energy_.assign(perCpu.begin(), perCpu.end());
        ++energyGeneration_;
        inputsChanged();
    };
    hooks.poke = [this]() { busLoop_->poke(); };
    service_ = std::make_unique<Service>(
        *bus_, io_, *arbiter_, *machine_, *tick_,
        ServiceInfo{machine_->name(), CPPCGOV_VERSION,
                    std::string(observation_->source()), observation_->why(),
                    options_.root},
        std::move(hooks));
    service_->configure(config_);
}

void Daemon::inputsChanged()
{
    if (inputsPending_)
    {
        return;
    }
    inputsPending_ = true;
    boost::asio::post(io_, [this]() {
        inputsPending_ = false;
        publishInputs();
    });
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

void Daemon::publishInputs()
{
    // Filled whole: the slot holds an older state.
    TickInputs& in = tick_->inputs();
    const std::span<const ClampHint> live = service_->liveClamps();
    in.clamps.assign(live.begin(), live.end());
    in.arrivalNs.resize(live.size());
    for (std::size_t i = 0; i < live.size(); ++i)
    {
        const auto it = arrivals_.find(live[i].handle);
        in.arrivalNs[i] = it == arrivals_.end() ? 0 : it->second;
    }
    in.energy = energy_;
    in.energyGeneration = energyGeneration_;
    in.config = running_;
    tick_->publishInputs();
}

int Daemon::run()
{
    // Wake-ups as close to the deadline as the kernel can: the default 50 us
    // of timer slack would be added to every tick.
    // Set before the tick's thread starts: it keeps its creator's.
    (void)::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

    // The tick's thread drops what it started with once it is scheduled,
    // before its first tick.
    const std::string access = machine_->accessSummary();
    tick_->start(tickThread_, config_.tick,
                 {CAP_SYS_NICE, CAP_BPF, CAP_PERFMON});
    // The governor's own thread counts as no task's clamp: on a real-time
    // reservation it runs every tick, often on a hinted task's CPU.
    if (const std::error_code ec =
            observation_->addOwnThread(tickThread_.tid()))
    {
        log::warning(
            "leaving the tick's own thread out of the scheduler's "
            "clamps failed: " +
            ec.message() + "; a util_max hint is lifted where the tick runs");
    }

    bus_->requestName(cppcgov::dbus::serviceName);
    busLoop_->start();

    configureMetrics();
    historyTimer_.expires_after(historyInterval);
    historyTimer_.async_wait([this](const boost::system::error_code& ec) {
        onHistory(ec);
    });

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

    log::notice(
        "cppcgovd " CPPCGOV_VERSION " started: backend " + machine_->name() +
        ", " + std::to_string(tick_->cpuCount()) + " CPUs, policy " +
        std::string(policies::policyName(config_.defaults.kind)) +
        ", sampling every " + std::to_string(config_.samplingPeriodUs) +
        " us from " + std::string(observation_->source()) + " (" +
        observation_->why() + ")" +
        (access.empty() ? std::string() : ", " + access) + ", tick on " +
        describe(tick_->reservation()));
    if (!tick_->reservation().refused.empty())
    {
        log::warning(
            "the tick runs on " + describe(tick_->reservation()) +
            ", not a real-time reservation: " + tick_->reservation().refused +
            " (tick.scheduling auto; CAP_SYS_NICE, which the "
            "shipped unit grants, is needed): busy CPUs and bus "
            "clients can delay it");
    }
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
        "STATUS=governing " + std::to_string(tick_->cpuCount()) + " CPUs (" +
        machine_->name() + ")";
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

    // Stopping: the ticks end, then the handles, then what was changed is
    // put back (the machine is this thread's again).
    (void)::sd_notify(0, "STOPPING=1");
    tick_->stop();
    if (tick_->failed())
    {
        status_ = 1;
    }
    metricsTimer_.cancel();
    historyTimer_.cancel();
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

void Daemon::onWatchdog(const boost::system::error_code& ec)
{
    if (ec)
    {
        return;
    }
    // Ping only while ticks still run: a stuck tick lets systemd restart us.
    if (const std::uint64_t ticks = tick_->ticks(); ticks != ticksAtLastPing_)
    {
        ticksAtLastPing_ = ticks;
        (void)::sd_notify(0, "WATCHDOG=1");
    }
    watchdogTimer_.expires_after(watchdogInterval_);
    watchdogTimer_.async_wait([this](const boost::system::error_code& e) {
        onWatchdog(e);
    });
}

void Daemon::onHistory(const boost::system::error_code& ec)
{
    if (ec)
    {
        return;
    }
    service_->takeUtilization();
    tick_->writeLog();
    historyTimer_.expires_after(historyInterval);
    historyTimer_.async_wait([this](const boost::system::error_code& e) {
        onHistory(e);
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
    r.config.tick = config_.tick;
    const TickReservation& reservation = tick_->reservation();
    if (reservation.policy == TickScheduling::deadline &&
        r.config.samplingPeriodUs != config_.samplingPeriodUs)
    {
        log::warning(
            "sampling.period_us is now " +
            std::to_string(r.config.samplingPeriodUs) +
            " us; the tick's reservation stays " + describe(reservation) +
            " until a restart (systemctl restart cppcgovd)");
    }
    config_ = std::move(r.config);
    service_->setPendingRestart(restart);
    // The tick applies it at its next tick.
    running_ = std::make_shared<const GovernorConfig>(config_);
    publishInputs();
    service_->configure(config_);
    configureMetrics();
    log::notice(
        "configuration reloaded from " + quotedFiles(config_.sources) +
        ": policy " + std::string(policies::policyName(config_.defaults.kind)) +
        (restart.empty() ? std::string() : " (" + restart + ": not applied)"));
    service_->announcePolicy();
    return config_.sources;
}

std::map<std::string, std::uint64_t> Daemon::statistics()
{
    const TickOutputs& t = tick_->latest();
    const AccessCounts& access = t.access;
    const ObservationCounts& observed = t.observed;
    return {
        {"ticks", t.ticks},
        {"ticks_early", t.ticksEarly},
        {"ticks_skipped", t.ticksSkipped},
        {"tick_idle_sleeps", t.idleSleeps},
        {"tick_idle_wakeups", t.idleWakeups},
        {"tick_steady_sleeps", t.steadySleeps},
        {"tick_late_p50_ns", tick_->latenessNs(50)},
        {"tick_late_p99_ns", tick_->latenessNs(99)},
        {"tick_late_max_ns", tick_->latenessNs(100)},
        {"tick_cpu_p50_ns", tick_->tickCpuNs(50)},
        {"tick_cpu_p99_ns", tick_->tickCpuNs(99)},
        {"tick_cpu_max_ns", tick_->tickCpuNs(100)},
        {"tick_runtime_ns", tick_->reservation().runtimeNs},
        {"writes", t.writes},
        {"write_errors", t.writeErrors},
        {"hint_to_write_p50_ns", tick_->hintToWriteNs(50)},
        {"hint_to_write_p99_ns", tick_->hintToWriteNs(99)},
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
        {"history_ticks_dropped", tick_->utilizationDropped()},
    };
}

MetricsSnapshot Daemon::metricsSnapshot()
{
    const TickOutputs& t = tick_->latest();
    MetricsSnapshot s;
    s.version = CPPCGOV_VERSION;
    s.backend = machine_->name();
    s.policy = policies::policyName(config_.defaults.kind);
    s.samplingSource = observation_->source();
    const std::vector<CpuView>& views = t.cpus;
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
        if (d < t.findings.size())
        {
            for (std::size_t c = 0; c < cppc::sanityCheckCount; ++c)
            {
                m.firmwareFindings[c] = t.findings[d][c];
            }
        }
        s.domains.push_back(m);
    }
    s.clampHints = service_->clampCount();
    s.latencyHints = service_->latencyCount();
    s.energyHints = service_->energyCount();
    s.tickLateness = t.lateness;
    s.hintToWrite = t.hintToWrite;
    s.ticks = t.ticks;
    s.ticksSkipped = t.ticksSkipped;
    s.writes = t.writes;
    s.writeErrors = t.writeErrors;
    s.accessErrors = t.access.failed;
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
