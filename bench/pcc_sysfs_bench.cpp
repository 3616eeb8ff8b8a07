// SPDX-License-Identifier: Apache-2.0
// cppcgovd's kernel backend on PCC-speed sysfs, side by side in one run:
// each row a fresh cppcgovd (backend kernel, 1 ms tick) on a private
// dbus-daemon, on a root whose sys is served by the rig pccfs with 128
// CPUs, one policy each:
//
//   baseline   backend.access.threads 0 (every access on the loop, one
//              after the other); rig latency 100 us, turnaround 110 us.
//   pool       the default access settings, the same rig.
//   instant    the default access settings on a rig that answers at once
//              (latency and turnaround 0): the reference for round trips.
//   pool+hung  as pool, with `hang 7` on the rig once the daemon runs and
//              before the load starts: every access to CPU 7 is held.
//
// The load (StatLoad, pcc_sysfs_world.hpp) rewrites <root>/proc/stat every
// millisecond so that every CPU's request changes at every tick; the
// policy has headroom 2 and rate limits of 1 us. Under it, one after the
// other: the load alone (tick lateness from GetStatistics at its end),
// one client, then 32 clients, each calling SetClamp(own process, 0, 1024)
// and Release back to back (the SetClamp round trips). Over the three:
// the rig's doorbells and landed writes per daemon tick. Then the load
// stops, the requests settle, and every policy's set speed on the rig is
// compared with what GetCpuStates says the daemon asked (a mismatch is a
// lost write); then SIGTERM, timed to the exit, and the governors on the
// rig compared with those found.
//
// Usage: pcc_sysfs_bench [--pccfs=PATH] [--cppcgovd=PATH] [--quick]
//                        [--rows=NAME,...]
// pccfs defaults to ../tests/pccfs/pccfs and cppcgovd to ../daemon/cppcgovd
// from this program's directory (the build tree's layout). It needs root
// and /dev/fuse for the rig's mounts; without them it exits 77 (skipped).
// --quick runs each phase for 1 s instead of 5 s.
#include "bench/pcc_sysfs_world.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <stop_token>
#include <string_view>
#include <thread>

namespace
{

using namespace cppcgov::bench;

constexpr unsigned cpus = 128;
constexpr unsigned hungCpu = 7;
constexpr unsigned manyClients = 32;
constexpr std::uint64_t khzPerPerf = 10000;
constexpr double periodNs = 1e6;
// The deadline a degraded CPU's reason names ("... has not returned after
// 10 ms", or "after 7040 us"), in milliseconds; nothing when it names none.
// The bench's root has no firmware tables, so the daemon's default applies.
std::optional<double> deadlineMsIn(const std::string& reason)
{
    constexpr std::string_view after = "after ";
    const std::size_t at = reason.rfind(after);
    if (at == std::string::npos)
    {
        return std::nullopt;
    }
    const char* begin = reason.data() + at + after.size();
    const char* end = reason.data() + reason.size();
    std::uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    const std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
    if (ec != std::errc{} || !(unit == " ms" || unit == " us"))
    {
        return std::nullopt;
    }
    return static_cast<double>(value) / (unit == " ms" ? 1.0 : 1000.0);
}

struct BenchOptions
{
    fs::path pccfs;
    fs::path cppcgovd;
    bool quick = false;
    std::vector<std::string> rows;
};

struct RowSpec
{
    std::string name;
    bool onLoop = false;
    RigSettings rig;
    bool hung = false;
};

const std::vector<RowSpec>& allRows()
{
    static const std::vector<RowSpec> rows{
        {"baseline", true, {cpus, 100, 110}, false},
        {"pool", false, {cpus, 100, 110}, false},
        {"instant", false, {cpus, 0, 0}, false},
        {"pool+hung", false, {cpus, 100, 110}, true},
    };
    return rows;
}

using Stats = std::map<std::string, std::uint64_t>;

std::uint64_t stat(const Stats& s, const char* key)
{
    const auto it = s.find(key);
    return it == s.end() ? 0 : it->second;
}

struct RowResult
{
    std::string name;
    // Lateness over the load alone, and p99 at the end of the 32 clients.
    std::uint64_t lateP50Ns = 0;
    std::uint64_t lateP99Ns = 0;
    std::uint64_t lateP99ManyNs = 0;
    std::uint64_t loadTicks = 0; // ticks of the load-alone phase
    double meanTickUs = 0;       // its length over those ticks
    HammerResult one;
    HammerResult many;
    // Over the three phases.
    std::uint64_t ticks = 0;
    std::uint64_t skipped = 0;
    double writeDoorbellsPerTick = 0;
    double readDoorbellsPerTick = 0;
    double landedPerTick = 0;
    double issuedPerTick = 0;      // the daemon's changed requests
    double landedPerTickAlone = 0; // the rig's, under the load alone
    // CPU use over the three phases, % of one CPU.
    double daemonCpu = 0;
    double rigCpu = 0;
    // Since the start, after the settling.
    std::uint64_t issued = 0;
    std::uint64_t acknowledged = 0;
    std::uint64_t landed = 0;
    unsigned lost = 0;
    std::string firstLost;
    bool settled = false;
    Stats final;
    // pool+hung.
    bool hung = false;
    std::optional<double> degradedMs;
    std::string degradedReason;
    bool hungCpuMatches = false;
    // SIGTERM.
    double exitSeconds = 0;
    std::optional<int> exitStatus;
    unsigned notRestored = 0; // governor or limits not as found
    bool stateKept = false;   // kernel.state still there after the exit
    std::uint64_t loadRounds = 0;
    std::uint64_t blindRounds = 0;
    std::string log;
};

std::string policyFor(const RowSpec& row)
{
    return std::string("backend:\n"
                       "  type: kernel\n") +
           (row.onLoop ? "  access:\n"
                         "    threads: 0\n"
                       : "") +
           "sampling:\n"
           "  period_us: 1000\n"
           "schedutil:\n"
           "  headroom: 2.0\n"
           "  rate_limit_up_us: 1\n"
           "  rate_limit_down_us: 1\n" +
           unlimitedClients();
}

// Polls the rig until it holds an access, then GetCpuStates until CPU
// hungCpu is degraded: the time from the last look that found nothing held
// (so at most what it took) to the state showing it.
void watchDegraded(const PccFs& rig, const std::string& address, RowResult& out,
                   const std::stop_token& stop)
{
    Client client(address);
    auto lastClear = Clock::now();
    const auto giveUp = Clock::now() + std::chrono::seconds(30);
    while (!stop.stop_requested() && Clock::now() < giveUp)
    {
        if (rig.stats().number("held") > 0)
        {
            break;
        }
        lastClear = Clock::now();
        std::this_thread::sleep_for(microseconds(200));
    }
    while (!stop.stop_requested() && Clock::now() < giveUp)
    {
        const std::vector<Client::CpuState> states = client.cpuStates();
        if (states.size() > hungCpu && !states[hungCpu].degraded.empty())
        {
            out.degradedMs =
                static_cast<double>(
                    duration_cast<microseconds>(Clock::now() - lastClear)
                        .count()) /
                1000.0;
            out.degradedReason = states[hungCpu].degraded;
            return;
        }
        std::this_thread::sleep_for(microseconds(500));
    }
}

// Waits (up to 10 s) until neither the daemon's requests nor the writes
// landing on the rig move over three looks 100 ms apart.
bool settle(Client& client, const PccFs& rig)
{
    std::vector<std::uint32_t> last;
    std::uint64_t lastWrites = ~std::uint64_t{0};
    unsigned still = 0;
    const auto giveUp = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < giveUp)
    {
        std::this_thread::sleep_for(milliseconds(100));
        const std::vector<std::uint32_t> perf = client.requestedPerf();
        const std::uint64_t writes = rig.stats().number("writes");
        still = perf == last && writes == lastWrites ? still + 1 : 0;
        if (still >= 2)
        {
            return true;
        }
        last = perf;
        lastWrites = writes;
    }
    return false;
}

RowResult runRow(const BenchOptions& o, const RowSpec& spec)
{
    const milliseconds phase(o.quick ? 1000 : 5000);
    RowResult r;
    r.name = spec.name;
    r.hung = spec.hung;
    World world(o.cppcgovd, policyFor(spec));
    fs::create_directories(world.root() / "sys");
    std::unique_ptr<PccFs> rig =
        std::make_unique<PccFs>(o.pccfs, world.root() / "sys", spec.rig,
                                world.root().parent_path() / "pccfs.log");
    const RigStats found = rig->stats();
    StatLoad load(world.root(), cpus, [&rig](std::vector<std::uint32_t>& perf) {
        const RigStats s = rig->stats();
        for (unsigned p = 0; p < perf.size(); ++p)
        {
            perf[p] = static_cast<std::uint32_t>(s.setspeedKhz(p) / khzPerPerf);
        }
    });
    world.startBus();
    // Under load from the daemon's first tick, so that its window of 4096
    // ticks holds as few idle ones as can be (the baseline's ticks are
    // long).
    if (!spec.hung)
    {
        load.start();
    }
    world.startDaemon();
    Client control(world.address());
    std::jthread watcher;
    if (spec.hung)
    {
        std::this_thread::sleep_for(milliseconds(300));
        rig->control("hang " + std::to_string(hungCpu));
        watcher = std::jthread([&rig, &world, &r](const std::stop_token& st) {
            try
            {
                watchDegraded(*rig, world.address(), r, st);
            }
            catch (const std::exception& e)
            {
                r.degradedReason =
                    std::string("(watch failed: ") + e.what() + ")";
            }
        });
        load.start();
    }
    std::this_thread::sleep_for(milliseconds(o.quick ? 200 : 500));

    const RigStats rig0 = rig->stats();
    const Stats daemon0 = control.statistics();
    const ProcessUsage daemonUse0 = usageOf(world.daemonPid());
    const ProcessUsage rigUse0 = usageOf(rig->pid());
    const auto aloneStart = Clock::now();
    std::this_thread::sleep_for(phase);
    const Stats alone = control.statistics();
    const RigStats rigAlone = rig->stats();
    const auto aloneUs = static_cast<double>(
        duration_cast<microseconds>(Clock::now() - aloneStart).count());
    r.lateP50Ns = stat(alone, "tick_late_p50_ns");
    r.lateP99Ns = stat(alone, "tick_late_p99_ns");
    r.loadTicks = stat(alone, "ticks") - stat(daemon0, "ticks");
    r.meanTickUs =
        r.loadTicks == 0 ? 0.0 : aloneUs / static_cast<double>(r.loadTicks);
    r.one = hammer(world.address(), 1, phase, HammerCall::clampAndRelease);
    r.many = hammer(world.address(), manyClients, phase,
                    HammerCall::clampAndRelease);
    const Stats daemon1 = control.statistics();
    const RigStats rig1 = rig->stats();
    const double spanNs = static_cast<double>(
        duration_cast<nanoseconds>(Clock::now() - aloneStart).count());
    r.daemonCpu =
        100.0 *
        static_cast<double>(
            (usageOf(world.daemonPid()).cpu - daemonUse0.cpu).count()) /
        spanNs;
    r.rigCpu =
        100.0 *
        static_cast<double>((usageOf(rig->pid()).cpu - rigUse0.cpu).count()) /
        spanNs;
    r.landedPerTickAlone =
        r.loadTicks == 0
            ? 0.0
            : static_cast<double>(
                  rigAlone.number("writes") - rig0.number("writes")) /
                  static_cast<double>(r.loadTicks);
    r.lateP99ManyNs = stat(daemon1, "tick_late_p99_ns");
    r.ticks = stat(daemon1, "ticks") - stat(daemon0, "ticks");
    r.skipped = stat(daemon1, "ticks_skipped") - stat(daemon0, "ticks_skipped");
    const auto perTick = [&r, &rig0, &rig1](const char* key) {
        return r.ticks == 0
                   ? 0.0
                   : static_cast<double>(rig1.number(key) - rig0.number(key)) /
                         static_cast<double>(r.ticks);
    };
    r.writeDoorbellsPerTick = perTick("write_doorbells");
    r.readDoorbellsPerTick = perTick("read_doorbells");
    r.landedPerTick = perTick("writes");
    r.issuedPerTick =
        r.ticks == 0 ? 0.0
                     : static_cast<double>(
                           stat(daemon1, "writes") - stat(daemon0, "writes")) /
                           static_cast<double>(r.ticks);

    load.stop();
    r.loadRounds = load.rounds();
    r.blindRounds = load.blindRounds();
    if (watcher.joinable())
    {
        watcher.request_stop();
        watcher.join();
    }
    r.settled = settle(control, *rig);
    const std::vector<Client::CpuState> states = control.cpuStates();
    const RigStats rigEnd = rig->stats();
    r.final = control.statistics();
    r.issued = stat(r.final, "writes");
    r.acknowledged = stat(r.final, "writes_landed");
    r.landed = rigEnd.number("writes");
    for (unsigned cpu = 0; cpu < states.size() && cpu < cpus; ++cpu)
    {
        const std::uint64_t asked = states[cpu].requestedPerf * khzPerPerf;
        const std::uint64_t set = rigEnd.setspeedKhz(cpu);
        if (spec.hung && cpu == hungCpu)
        {
            r.hungCpuMatches = asked == set;
            continue;
        }
        if (asked != set && r.lost++ == 0)
        {
            r.firstLost = "policy" + std::to_string(cpu) + ": asked " +
                          std::to_string(asked) + " kHz, set " +
                          std::to_string(set) + " kHz";
        }
    }

    const auto stopAt = Clock::now();
    r.exitStatus = world.stopDaemonWithin(std::chrono::seconds(10));
    r.exitSeconds =
        static_cast<double>(
            duration_cast<milliseconds>(Clock::now() - stopAt).count()) /
        1000.0;
    const RigStats after = rig->stats();
    for (unsigned p = 0; p < cpus; ++p)
    {
        const std::string policy = "policy" + std::to_string(p) + ".";
        const bool back =
            after.governor(p) == found.governor(p) &&
            after.text(policy + "min_khz") == found.text(policy + "min_khz") &&
            after.text(policy + "max_khz") == found.text(policy + "max_khz");
        if (!back && !(spec.hung && p == hungCpu))
        {
            ++r.notRestored;
        }
    }
    r.stateKept = fs::exists(world.stateDir() / "kernel.state");
    r.log = world.daemonLog();
    if (spec.hung)
    {
        rig->control("clear");
    }
    rig.reset(); // unmounted before the world removes its directory
    return r;
}

std::string us(double ns)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.0f", ns / 1000.0);
    return text;
}

std::string ms(double value)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", value);
    return text;
}

double pct(std::vector<nanoseconds> v, unsigned p)
{
    return static_cast<double>(percentile(v, p).count());
}

const RowResult* find(const std::vector<RowResult>& rows,
                      const std::string& name)
{
    for (const RowResult& r : rows)
    {
        if (r.name == name)
        {
            return &r;
        }
    }
    return nullptr;
}

void printTable(const std::vector<RowResult>& rows)
{
    std::printf("\n%-10s %9s %9s | %9s %9s | %9s %9s | %7s %7s | %7s %7s | "
                "%8s %8s %8s %5s\n",
                "", "late p50", "late p99", "1 cl p50", "1 cl p99", "32 cl p50",
                "32 cl p99", "doorb w", "doorb r", "asked", "landed", "issued",
                "acked", "landed", "lost");
    std::printf("%-10s %9s %9s | %9s %9s | %9s %9s | %7s %7s | %7s %7s | "
                "%8s %8s %8s %5s\n",
                "row", "us", "us", "us", "us", "us", "us", "/tick", "/tick",
                "/tick", "/tick", "", "", "(rig)", "");
    for (const RowResult& r : rows)
    {
        std::printf(
            "%-10s %9s %9s | %9s %9s | %9s %9s | %7.2f %7.2f | %7.1f %7.1f | "
            "%8llu %8llu %8llu %5u\n",
            r.name.c_str(), us(static_cast<double>(r.lateP50Ns)).c_str(),
            us(static_cast<double>(r.lateP99Ns)).c_str(),
            us(pct(r.one.roundTrips, 50)).c_str(),
            us(pct(r.one.roundTrips, 99)).c_str(),
            us(pct(r.many.roundTrips, 50)).c_str(),
            us(pct(r.many.roundTrips, 99)).c_str(), r.writeDoorbellsPerTick,
            r.readDoorbellsPerTick, r.issuedPerTick, r.landedPerTick,
            static_cast<unsigned long long>(r.issued),
            static_cast<unsigned long long>(r.acknowledged),
            static_cast<unsigned long long>(r.landed), r.lost);
    }
    std::printf("\n%-10s %6s %6s %6s %6s %6s %6s %6s %8s %7s %7s %8s %6s "
                "%5s %6s %6s %4s\n",
                "row", "ticks", "skip", "load", "tick", "landed", "daemon",
                "rig", "32 cl", "calls", "calls", "accesses", "access", "degr",
                "exit", "exit", "not");
    std::printf("%-10s %6s %6s %6s %6s %6s %6s %6s %8s %7s %7s %8s %6s %5s "
                "%6s %6s %4s\n",
                "", "", "ped", "ticks", "us", "/tick", "CPU %", "CPU %",
                "p99 us", "1 cl", "32 cl", "late", "errors", "now", "s",
                "status", "back");
    for (const RowResult& r : rows)
    {
        std::printf(
            "%-10s %6llu %6llu %6llu %6.0f %6.1f %6.0f %6.0f %8s %7llu %7llu "
            "%8llu %6llu %5llu %6.2f %6s %4u\n",
            r.name.c_str(), static_cast<unsigned long long>(r.ticks),
            static_cast<unsigned long long>(r.skipped),
            static_cast<unsigned long long>(r.loadTicks), r.meanTickUs,
            r.landedPerTickAlone, r.daemonCpu, r.rigCpu,
            us(static_cast<double>(r.lateP99ManyNs)).c_str(),
            static_cast<unsigned long long>(r.one.setClamps),
            static_cast<unsigned long long>(r.many.setClamps),
            static_cast<unsigned long long>(stat(r.final, "accesses_late")),
            static_cast<unsigned long long>(stat(r.final, "access_errors")),
            static_cast<unsigned long long>(stat(r.final, "cpus_degraded")),
            r.exitSeconds,
            r.exitStatus ? std::to_string(*r.exitStatus).c_str() : "hung",
            r.notRestored);
    }
}

// "met", or by how much the value misses.
std::string verdict(double value, double target, bool strict)
{
    const bool met = strict ? value < target : value <= target;
    char text[64];
    if (met)
    {
        return "met";
    }
    std::snprintf(text, sizeof(text), "missed by %.3f", value - target);
    return text;
}

void target(const char* what, double value, const char* op, double target,
            bool strict)
{
    std::printf("  %-52s %8.3f  (target %s %g): %s\n", what, value, op, target,
                verdict(value, target, strict).c_str());
}

// Ratios of two rows' SetClamp round trips, p50 and p99, 1 and 32 clients.
void roundTripTargets(const RowResult& a, const RowResult& b,
                      const std::string& label)
{
    const auto ratio =
        [](const HammerResult& x, const HammerResult& y, unsigned p) {
        const double base = pct(y.roundTrips, p);
        return base > 0 ? pct(x.roundTrips, p) / base : 0.0;
    };
    const std::string one = label + ", 1 client";
    const std::string many = label + ", 32 clients";
    target((one + ", p50").c_str(), ratio(a.one, b.one, 50), "<=", 1.5, false);
    target((one + ", p99").c_str(), ratio(a.one, b.one, 99), "<=", 1.5, false);
    target((many + ", p50").c_str(), ratio(a.many, b.many, 50), "<=", 1.5,
           false);
    target((many + ", p99").c_str(), ratio(a.many, b.many, 99), "<=", 1.5,
           false);
}

void printTargets(const std::vector<RowResult>& rows)
{
    const RowResult* pool = find(rows, "pool");
    const RowResult* instant = find(rows, "instant");
    const RowResult* hung = find(rows, "pool+hung");
    std::printf("\ntargets\n");
    if (pool != nullptr)
    {
        if (instant != nullptr)
        {
            roundTripTargets(*pool, *instant, "round trip pool / instant");
        }
        target("tick lateness p99 / period, pool",
               static_cast<double>(pool->lateP99Ns) / periodNs, "<", 1, true);
        target("tick lateness p99 / period, pool, under 32 clients",
               static_cast<double>(pool->lateP99ManyNs) / periodNs, "<", 1,
               true);
        target("doorbells per tick, pool (write + read)",
               pool->writeDoorbellsPerTick + pool->readDoorbellsPerTick,
               "<=", 2, false);
        target("lost writes, pool", pool->lost, "=", 0, false);
    }
    if (hung != nullptr)
    {
        if (pool != nullptr)
        {
            roundTripTargets(*hung, *pool, "round trip pool+hung / pool");
        }
        const std::optional<double> deadline =
            deadlineMsIn(hung->degradedReason);
        if (hung->degradedMs && deadline && *deadline > 0)
        {
            const std::string what = "CPU 7 degraded after, in deadlines of " +
                                     ms(*deadline) + " ms";
            target(what.c_str(), *hung->degradedMs / *deadline, "<=", 2, false);
        }
        else if (hung->degradedMs)
        {
            std::printf("  CPU 7 degraded after %s ms; its reason names no "
                        "deadline to compare with\n",
                        ms(*hung->degradedMs).c_str());
        }
        else
        {
            std::printf("  CPU 7 degraded: never seen (target <= 2 deadlines): "
                        "missed\n");
        }
        target("SIGTERM to exit, pool+hung, s", hung->exitSeconds, "<", 5,
               true);
        target("lost writes, pool+hung, other CPUs", hung->lost, "=", 0, false);
    }
}

void printNotes(const std::vector<RowResult>& rows)
{
    std::printf("\nnotes\n");
    for (const RowResult& r : rows)
    {
        const double changing = r.landedPerTick / cpus;
        std::printf("  %s: %llu ticks under load (%llu in the load alone); "
                    "per tick the daemon changed %.1f requests (%.0f %% of "
                    "the %u CPUs) and %.1f writes landed on the rig (%.0f "
                    "%%)%s; load rounds %llu (%llu without the rig's "
                    "speeds)\n",
                    r.name.c_str(), static_cast<unsigned long long>(r.ticks),
                    static_cast<unsigned long long>(r.loadTicks),
                    r.issuedPerTick, 100.0 * r.issuedPerTick / cpus, cpus,
                    r.landedPerTick, 100.0 * changing,
                    changing < 0.9 ? ": writes landed NOT close to every CPU "
                                     "at every tick"
                                   : "",
                    static_cast<unsigned long long>(r.loadRounds),
                    static_cast<unsigned long long>(r.blindRounds));
        // Whether the writes of a tick were in the kernel together: the
        // rig can only batch what reaches it together.
        std::printf("    at most %llu accesses were in the kernel at once "
                    "(accesses_at_once_max)\n",
                    static_cast<unsigned long long>(
                        stat(r.final, "accesses_at_once_max")));
        if (r.loadTicks < 4096)
        {
            std::printf("    lateness is over the daemon's last 4096 ticks, "
                        "of which the load alone had %llu\n",
                        static_cast<unsigned long long>(r.loadTicks));
        }
        if (!r.settled)
        {
            std::printf("    the requests had not settled within 10 s after "
                        "the load stopped\n");
        }
        if (r.lost != 0)
        {
            std::printf("    first mismatch: %s\n", r.firstLost.c_str());
        }
        if (r.one.errors + r.many.errors != 0)
        {
            std::printf("    call errors: %llu, first: %s\n",
                        static_cast<unsigned long long>(r.one.errors) +
                            static_cast<unsigned long long>(r.many.errors),
                        (r.one.firstError + r.many.firstError).c_str());
        }
        if (r.hung)
        {
            std::printf(
                "    CPU 7: %s; its set speed %s what the daemon "
                "asked (held)\n",
                r.degradedMs
                    ? ("degraded " + ms(*r.degradedMs) +
                       " ms after its first held access: " + r.degradedReason)
                          .c_str()
                    : ("never seen degraded " + r.degradedReason).c_str(),
                r.hungCpuMatches ? "equals" : "differs from");
        }
        if (r.notRestored != 0)
        {
            std::printf("    %u policies' governors or limits not put back\n",
                        r.notRestored);
        }
        if (r.hung || r.stateKept)
        {
            std::printf("    after the exit the state file kernel.state %s\n",
                        r.stateKept ? "is kept" : "is gone");
        }
    }
}

std::optional<BenchOptions> parseArgs(int argc, char** argv)
{
    BenchOptions o;
    o.cppcgovd = inBuildTree("daemon/cppcgovd");
    o.pccfs = inBuildTree("tests/pccfs/pccfs");
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg(argv[i]);
        const auto eq = arg.find('=');
        const std::string_view key = arg.substr(0, eq);
        const std::string value(
            eq == std::string_view::npos ? "" : arg.substr(eq + 1));
        bool ok = false;
        if (key == "--cppcgovd" || key == "--pccfs")
        {
            (key == "--pccfs" ? o.pccfs : o.cppcgovd) = value;
            ok = !value.empty();
        }
        else if (arg == "--quick")
        {
            o.quick = true;
            ok = true;
        }
        else if (key == "--rows")
        {
            std::istringstream names(value);
            ok = !value.empty();
            for (std::string name; std::getline(names, name, ',');)
            {
                bool known = false;
                for (const RowSpec& r : allRows())
                {
                    known = known || r.name == name;
                }
                ok = ok && known;
                o.rows.push_back(name);
            }
        }
        if (!ok)
        {
            std::cerr << "pcc_sysfs_bench: bad argument '" << arg
                      << "'\nusage: pcc_sysfs_bench [--pccfs=PATH] "
                         "[--cppcgovd=PATH] [--quick] "
                         "[--rows=baseline,pool,instant,pool+hung]\n";
            return std::nullopt;
        }
    }
    return o;
}

int runBench(const BenchOptions& o, const std::string& command)
{
    checkRigCanRun(o.pccfs);
    std::printf("cppcgovd on PCC-speed sysfs (pccfs), %u CPUs, one policy "
                "each, 1 ms tick\ncommand: %s\ncppcgovd: %s\npccfs: %s\n"
                "host: %u CPUs; load average at start: %s",
                cpus, command.c_str(), o.cppcgovd.c_str(), o.pccfs.c_str(),
                std::thread::hardware_concurrency(),
                readText("/proc/loadavg").c_str());
    std::fflush(stdout);
    std::vector<RowResult> results;
    bool failed = false;
    for (const RowSpec& spec : allRows())
    {
        if (!o.rows.empty() &&
            std::find(o.rows.begin(), o.rows.end(), spec.name) == o.rows.end())
        {
            continue;
        }
        std::printf("row %s ...\n", spec.name.c_str());
        std::fflush(stdout);
        results.push_back(runRow(o, spec));
        const RowResult& r = results.back();
        const int expected = spec.hung ? 1 : 0;
        if (!r.exitStatus || *r.exitStatus != expected)
        {
            failed = true;
            std::printf("cppcgovd's exit (%s, expected %d); its log:\n%s\n",
                        r.exitStatus ? std::to_string(*r.exitStatus).c_str()
                                     : "killed after 10 s",
                        expected, r.log.c_str());
        }
    }
    printTable(results);
    printTargets(results);
    printNotes(results);
    std::printf("load average at end: %s", readText("/proc/loadavg").c_str());
    return failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv)
{
    const std::optional<BenchOptions> options = parseArgs(argc, argv);
    if (!options)
    {
        return 2;
    }
    try
    {
        return runBench(*options, commandLine(argc, argv));
    }
    catch (const RigUnavailable& e)
    {
        std::printf("pcc_sysfs_bench: skipped: %s\n", e.what());
        return 77;
    }
    catch (const std::exception& e)
    {
        std::cerr << "pcc_sysfs_bench: " << e.what() << "\n";
        return 1;
    }
}
