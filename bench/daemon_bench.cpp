// SPDX-License-Identifier: Apache-2.0
// cppcgovd end to end: the real daemon on a private dbus-daemon, on the
// simulated rd-n2 machine with 128 CPUs (no <root>/proc/stat, so the
// simulated load is 0 and every CPU idles at the floor unless a hint raises
// it), measured from outside in one run. Six phases, one after the other
// on one daemon:
//
//   idle        nothing but the 1 ms sampling tick, for --idle-seconds.
//   hint-write  one busy child pinned to each host CPU (up to 128); rounds
//               of SetClamp(child, 1024, 1024) -> poll GetCpuStates until
//               the child's CPU asks for more than before -> Release ->
//               poll until it is back (polls 100 us apart). Each clamp raises
//               an idle CPU from the floor to nominal, so each causes a
//               register write: the daemon's hint_to_write percentiles
//               (GetStatistics: from the call's arrival to that write) are then
//               about these clamps. The client-side time from the call's start
//               until GetCpuStates shows the raise is an upper bound of the
//               same (it adds the reply and the polling).
//   single      one client on one connection, for --idle-seconds: rounds
//               of Peer.Ping (answered by sd-bus without reaching the
//               daemon's code), a Version property read (through the
//               adaptor, no work), SetClamp(own process, 0, 1024) and
//               Release, interleaved; each call's round trip is printed
//               with its ratio to Ping's, measured side by side.
//   held        the hammer's clients connected and idle, the first
//               holding one SetClamp(own process, 0, 1024), for
//               --idle-seconds: the tick samples the process's threads as
//               it does under the hammer, without calls.
//   hammer      --clients threads, each with its own bus connection,
//               calling SetClamp(0: its own process, 0, 1024) and Release
//               back to back for --seconds. A 0..1024 clamp changes no
//               request, so this is the cost of the calls and of the
//               tick's sampling of the clamped process's threads. The
//               SetClamp round trip is timed around the synchronous call
//               with steady_clock. The daemon's CPU per call is its CPU
//               time over the phase, less the idle phase's rate over as
//               long (the tick's own share), over the calls answered;
//               and, less the held phase's CPU per tick times the ticks
//               the hammer phase ran, the calls' own.
//   ping-hammer the same clients calling Peer.Ping back to back for
//               --idle-seconds: the daemon's CPU per call where none of its
//               own code runs (sd-bus's reads, dispatch and reply, and the
//               loop's wake-ups), the floor under SetClamp and Release.
//
// After each phase: the daemon's tick lateness (GetStatistics, over its
// last 4096 ticks, so phases last at least 5 s), its CPU use over the phase
// (utime + stime from /proc/<pid>/stat, as a percentage of one CPU) and its
// RSS at the end (VmRSS from /proc/<pid>/status).
//
// Usage: daemon_bench [--cppcgovd=PATH] [--clients=N] [--seconds=S]
//                     [--idle-seconds=S] [--cpus=N]
// cppcgovd defaults to ../daemon/cppcgovd from this program's directory
// (the build tree's layout). dbus-daemon is looked up in PATH. The config
// sets clients.max_calls_per_second and users.max_calls_per_second to their
// maximum (100000) and users.max_handles to 16384, so that neither the
// per-client nor the per-user limits cap the hammer.
#include "bench/daemon_bench_world.hpp"

#include <atomic>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <string_view>
#include <system_error>
#include <thread>

namespace
{

using namespace cppcgov::bench;

// Between two GetCpuStates polls: each one has the daemon marshal every
// CPU's state, which back to back would load the loop being measured.
constexpr microseconds pollGap{100};

struct HintWriteResult
{
    unsigned rounds = 0;
    unsigned timeouts = 0;
    std::vector<microseconds> callToRaise;
};

// Polls until `cpu`'s requested perf satisfies `done`, every pollGap;
// false after 1 s.
template <class Done>
bool pollPerf(Client& client, unsigned cpu, Done&& done)
{
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < deadline)
    {
        if (done(client.requestedPerf().at(cpu)))
        {
            return true;
        }
        std::this_thread::sleep_for(pollGap);
    }
    return false;
}

HintWriteResult hintToWrite(World& world, unsigned simCpus,
                            std::chrono::seconds minimum)
{
    const unsigned hostCpus = std::min(
        static_cast<unsigned>(std::thread::hardware_concurrency()), simCpus);
    std::vector<std::unique_ptr<Child>> busy;
    for (unsigned cpu = 0; cpu < std::max(hostCpus, 1U); ++cpu)
    {
        busy.push_back(std::make_unique<Child>(
            std::vector<std::string>{"sh", "-c", "while :; do :; done"}, -1, -1,
            cpu));
    }
    Client client(world.address());
    HintWriteResult r;
    const auto end = Clock::now() + minimum;
    for (unsigned i = 0; Clock::now() < end || i < 64; ++i)
    {
        const unsigned cpu = i % static_cast<unsigned>(busy.size());
        const std::uint32_t before = client.requestedPerf().at(cpu);
        const auto start = Clock::now();
        const std::uint64_t handle = client.setClamp(
            static_cast<std::uint32_t>(busy[cpu]->pid()), 1024, 1024);
        const bool raised = pollPerf(client, cpu, [before](std::uint32_t p) {
            return p > before;
        });
        const auto raisedAt = Clock::now();
        client.release(handle);
        ++r.rounds;
        if (!raised)
        {
            ++r.timeouts;
            continue;
        }
        r.callToRaise.push_back(duration_cast<microseconds>(raisedAt - start));
        // Back at the floor, so that the next clamp writes again.
        (void)pollPerf(client, cpu,
                       [before](std::uint32_t p) { return p <= before; });
    }
    return r;
}

std::optional<Options> parseArgs(int argc, char** argv)
{
    Options o;
    o.cppcgovd = inBuildTree("daemon/cppcgovd");
    for (int i = 1; i < argc; ++i)
    {
        const auto [key, value] = splitOption(argv[i]);
        bool ok = false;
        if (const std::optional<bool> world = parseWorldOption(key, value, o))
        {
            ok = *world;
        }
        else if (key == "--seconds")
        {
            ok = parseWhole(value, o.seconds) && o.seconds > 0 &&
                 o.seconds <= 3600;
        }
        else if (key == "--idle-seconds")
        {
            ok = parseWhole(value, o.idleSeconds) && o.idleSeconds > 0 &&
                 o.idleSeconds <= 3600;
        }
        if (!ok)
        {
            std::cerr << "daemon_bench: bad argument '" << argv[i]
                      << "'\nusage: daemon_bench [--cppcgovd=PATH] "
                         "[--clients=N] [--seconds=S] [--idle-seconds=S] "
                         "[--cpus=N]\n";
            return std::nullopt;
        }
    }
    return o;
}

std::string us(nanoseconds ns)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f",
                  static_cast<double>(ns.count()) / 1000.0);
    return text;
}

std::string usFromNs(std::uint64_t ns)
{
    return us(nanoseconds(static_cast<std::int64_t>(ns)));
}

void printPhases(const std::vector<PhaseReport>& phases)
{
    std::printf("\n%-11s %7s %8s %8s %11s %11s %11s %7s %8s\n", "phase", "secs",
                "CPU %", "RSS MiB", "late p50 us", "late p99 us", "late max us",
                "early", "skipped");
    for (const PhaseReport& p : phases)
    {
        const auto stat = [&p](const char* key) {
            const auto it = p.stats.find(key);
            return it == p.stats.end() ? std::uint64_t{0} : it->second;
        };
        std::printf("%-11s %7.1f %8.2f %8.1f %11s %11s %11s %7llu %8llu\n",
                    p.name.c_str(), p.seconds, p.cpuPercent,
                    static_cast<double>(p.rssKb) / 1024.0,
                    usFromNs(stat("tick_late_p50_ns")).c_str(),
                    usFromNs(stat("tick_late_p99_ns")).c_str(),
                    usFromNs(stat("tick_late_max_ns")).c_str(),
                    static_cast<unsigned long long>(stat("ticks_early")),
                    static_cast<unsigned long long>(stat("ticks_skipped")));
    }
}

// One client, one connection, for --seconds: rounds of Ping, a Version
// property read, SetClamp(own process, 0, 1024) and Release, interleaved so
// that the machine's noise falls on all four alike.
struct SingleResult
{
    std::vector<nanoseconds> ping;
    std::vector<nanoseconds> version;
    std::vector<nanoseconds> setClamp;
    std::vector<nanoseconds> release;
};

SingleResult singleClient(World& world, std::chrono::seconds length)
{
    Client client(world.address());
    SingleResult r;
    const auto timed = [](std::vector<nanoseconds>& out, auto&& call) {
        const auto start = Clock::now();
        call();
        out.push_back(Clock::now() - start);
    };
    const auto end = Clock::now() + length;
    while (Clock::now() < end)
    {
        timed(r.ping, [&client]() { client.ping(); });
        timed(r.version, [&client]() { (void)client.version(); });
        std::uint64_t handle = 0;
        timed(r.setClamp,
              [&client, &handle]() { handle = client.setClamp(0, 0, 1024); });
        timed(r.release, [&client, handle]() { client.release(handle); });
    }
    return r;
}

// The ticks the daemon ran in phase `i`: its tick count at the end of
// the phase less that at the end of the one before.
std::uint64_t ticksIn(const std::vector<PhaseReport>& phases, std::size_t i)
{
    const auto ticks = [&phases](std::size_t j) {
        const auto it = phases[j].stats.find("ticks");
        return it == phases[j].stats.end() ? std::uint64_t{0} : it->second;
    };
    const std::uint64_t end = ticks(i);
    const std::uint64_t start = i == 0 ? 0 : ticks(i - 1);
    return end > start ? end - start : 0;
}

int runBench(const Options& o, const std::string& command)
{
    std::printf("cppcgovd end to end\ncommand: %s\n", command.c_str());
    std::printf("cppcgovd: %s\nsimulator rd-n2, %u CPUs, sampling 1000 us; "
                "host: %u CPUs\n",
                o.cppcgovd.c_str(), o.cpus,
                std::thread::hardware_concurrency());
    std::printf("load average at start: %s", readText("/proc/loadavg").c_str());
    std::fflush(stdout);

    World world(o.cppcgovd, simulatorPolicy(o.cpus));
    world.startBus();
    world.startDaemon();
    Client control(world.address());
    std::vector<PhaseReport> phases;

    // Let start-up settle, then the idle phase.
    std::this_thread::sleep_for(milliseconds(500));
    {
        PhaseMeter meter(world.daemonPid(), "idle");
        std::this_thread::sleep_for(std::chrono::seconds(o.idleSeconds));
        phases.push_back(meter.finish(control));
    }

    HintWriteResult hw;
    {
        PhaseMeter meter(world.daemonPid(), "hint-write");
        hw = hintToWrite(world, o.cpus, std::chrono::seconds(o.idleSeconds));
        phases.push_back(meter.finish(control));
    }
    const PhaseReport hwPhase = phases.back();

    SingleResult single;
    {
        PhaseMeter meter(world.daemonPid(), "single");
        single = singleClient(world, std::chrono::seconds(o.idleSeconds));
        phases.push_back(meter.finish(control));
    }

    {
        PhaseMeter meter(world.daemonPid(), "held");
        (void)hammer(world.address(), o.clients,
                     std::chrono::seconds(o.idleSeconds), HammerCall::hold);
        phases.push_back(meter.finish(control));
    }
    const PhaseReport heldPhase = phases.back();
    const std::uint64_t heldTicks = ticksIn(phases, phases.size() - 1);

    HammerResult hr;
    {
        PhaseMeter meter(world.daemonPid(), "hammer");
        hr = hammer(world.address(), o.clients, std::chrono::seconds(o.seconds),
                    HammerCall::clampAndRelease);
        phases.push_back(meter.finish(control));
    }
    const PhaseReport hammerPhase = phases.back();
    const std::uint64_t hammerTicks = ticksIn(phases, phases.size() - 1);

    HammerResult pr;
    {
        PhaseMeter meter(world.daemonPid(), "ping-hammer");
        pr = hammer(world.address(), o.clients,
                    std::chrono::seconds(o.idleSeconds), HammerCall::ping);
        phases.push_back(meter.finish(control));
    }

    const int status = world.stopDaemon();

    const auto ratio =
        [](std::vector<nanoseconds>& a, std::vector<nanoseconds>& b) {
        const double base = static_cast<double>(percentile(b, 50).count());
        return base > 0 ? static_cast<double>(percentile(a, 50).count()) / base
                        : 0.0;
    };
    std::printf("\none client, interleaved rounds for %u s (%zu rounds): "
                "round trip p50 / p99 us, and p50 against Ping\n",
                o.idleSeconds, single.ping.size());
    const auto row = [&](const char* name, std::vector<nanoseconds>& v) {
        std::printf("  %-28s %8s %8s   %.2fx\n", name,
                    us(percentile(v, 50)).c_str(),
                    us(percentile(v, 99)).c_str(), ratio(v, single.ping));
    };
    row("Peer.Ping (no-op)", single.ping);
    row("Get Version (adaptor no-op)", single.version);
    row("SetClamp(own, 0, 1024)", single.setClamp);
    row("Release", single.release);
    std::printf("  SetClamp against Get Version: %.2fx\n",
                ratio(single.setClamp, single.version));

    const std::uint64_t calls = hr.setClamps + hr.releases;
    std::printf("\nhint round trip: %u client thread(s), each its own "
                "connection, SetClamp(own process, 0, 1024) + Release for "
                "%.1f s\n",
                o.clients, hr.seconds);
    std::printf("  SetClamp round trip p50 %s us, p99 %s us (%llu calls)\n",
                us(percentile(hr.roundTrips, 50)).c_str(),
                us(percentile(hr.roundTrips, 99)).c_str(),
                static_cast<unsigned long long>(hr.setClamps));
    std::printf(
        "  calls (SetClamp + Release): %llu, %.0f calls/s; "
        "errors: %llu%s%s\n",
        static_cast<unsigned long long>(calls),
        static_cast<double>(calls) / hr.seconds,
        static_cast<unsigned long long>(hr.errors),
        hr.firstError.empty() ? "" : ", first: ", hr.firstError.c_str());

    // The daemon's own CPU per call: a hammer phase's CPU time less what
    // the idle phase shows the tick alone costs over as long.
    const PhaseReport& idle = phases.front();
    const auto perCall =
        [&idle](const PhaseReport& p, std::uint64_t n, bool lessIdle) {
        const double cpuUs = p.cpuPercent / 100.0 * p.seconds * 1e6;
        const double idleUs = idle.cpuPercent / 100.0 * p.seconds * 1e6;
        return n == 0 ? 0.0
                      : (cpuUs - (lessIdle ? idleUs : 0.0)) /
                            static_cast<double>(n);
    };
    const double clampCall = perCall(hammerPhase, calls, true);
    std::printf("  daemon CPU per call: %.1f us (%.1f us less the idle "
                "tick's share)\n",
                perCall(hammerPhase, calls, false), clampCall);
    // The tick samples the clamped process's threads while any clamp is
    // live, which is all the time under the hammer: the held phase's CPU
    // per tick, times the ticks the hammer phase ran, is that share.
    const double heldPerTickUs =
        heldTicks == 0 ? 0.0
                       : heldPhase.cpuPercent / 100.0 * heldPhase.seconds *
                             1e6 / static_cast<double>(heldTicks);
    const double clampCallLessHeld =
        calls == 0
            ? 0.0
            : (hammerPhase.cpuPercent / 100.0 * hammerPhase.seconds * 1e6 -
               heldPerTickUs * static_cast<double>(hammerTicks)) /
                  static_cast<double>(calls);
    std::printf("  less the ticks' share with a clamp held (%llu ticks, "
                "%.1f us each): %.1f us per call\n",
                static_cast<unsigned long long>(hammerTicks), heldPerTickUs,
                clampCallLessHeld);

    std::printf("\nping hammer: %u client thread(s), Peer.Ping back to back "
                "for %.1f s\n",
                o.clients, pr.seconds);
    std::printf(
        "  Ping round trip p50 %s us, p99 %s us; %llu calls, %.0f "
        "calls/s; errors: %llu%s%s\n",
        us(percentile(pr.roundTrips, 50)).c_str(),
        us(percentile(pr.roundTrips, 99)).c_str(),
        static_cast<unsigned long long>(pr.setClamps),
        static_cast<double>(pr.setClamps) / pr.seconds,
        static_cast<unsigned long long>(pr.errors),
        pr.firstError.empty() ? "" : ", first: ", pr.firstError.c_str());
    const double pingCall = perCall(phases.back(), pr.setClamps, true);
    std::printf("  daemon CPU per call: %.1f us (%.1f us less the idle "
                "tick's share)\n",
                perCall(phases.back(), pr.setClamps, false), pingCall);
    std::printf("  SetClamp/Release above the Ping floor: %.1f us per call "
                "(%.2fx); less the held ticks: %.1f us (%.2fx)\n",
                clampCall - pingCall, pingCall > 0 ? clampCall / pingCall : 0.0,
                clampCallLessHeld - pingCall,
                pingCall > 0 ? clampCallLessHeld / pingCall : 0.0);

    std::vector<nanoseconds> raise(hw.callToRaise.begin(),
                                   hw.callToRaise.end());
    const auto hwStat = [&hwPhase](const char* key) {
        const auto it = hwPhase.stats.find(key);
        return it == hwPhase.stats.end() ? std::uint64_t{0} : it->second;
    };
    std::printf("\nhint to register write: %u clamps 1024..1024 on busy "
                "children (%u not seen within 1 s)\n",
                hw.rounds, hw.timeouts);
    std::printf("  daemon (call arrival -> write): p50 %s us, p99 %s us\n",
                usFromNs(hwStat("hint_to_write_p50_ns")).c_str(),
                usFromNs(hwStat("hint_to_write_p99_ns")).c_str());
    std::printf("  client (call start -> GetCpuStates shows it): p50 %s us, "
                "p99 %s us\n",
                us(percentile(raise, 50)).c_str(),
                us(percentile(raise, 99)).c_str());

    printPhases(phases);
    std::printf("\n(tick lateness over the daemon's last 4096 ticks of each "
                "phase; CPU %% of one CPU over the phase; RSS at its end)\n");
    std::printf("cppcgovd exit status after SIGTERM: %d\n", status);
    std::printf("load average at end: %s", readText("/proc/loadavg").c_str());
    if (status != 0 || hr.errors != 0 || pr.errors != 0 || hw.timeouts != 0)
    {
        std::printf("\ncppcgovd log:\n%s", world.daemonLog().c_str());
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    const std::optional<Options> options = parseArgs(argc, argv);
    if (!options)
    {
        return 2;
    }
    try
    {
        return runBench(*options, commandLine(argc, argv));
    }
    catch (const std::exception& e)
    {
        std::cerr << "daemon_bench: " << e.what() << "\n";
        return 1;
    }
}
