// SPDX-License-Identifier: Apache-2.0
// What a CPU reservation for cppcgovd's tick buys under load: the daemon's
// 1 ms tick, a precise 100 us PCC wait under the tick's scheduling, and a
// client's SetClamp round trip, for two setups of the daemon under three
// loads, in one run, one table.
//
// Setups (the policy file's `tick:` section; omitted with --no-tick-key,
// for a daemon that does not know it):
//   nice -5      the whole daemon at nice -5 (through nice(1)), the tick
//                on SCHED_OTHER (`tick: {scheduling: other}`): what the
//                unit's Nice=-5 gives.
//   reservation  the daemon at nice 0, `tick: {scheduling: auto}`: the
//                tick thread on SCHED_DEADLINE if the kernel allows it,
//                else SCHED_FIFO; the D-Bus thread on SCHED_OTHER.
// Loads, each for --seconds (at least 5: the daemon's lateness figures are
// over its last 4096 ticks):
//   idle   nothing else.
//   busy   two busy-loop children per online host CPU, nice 0, not pinned.
//   flood  --clients threads, each with its own bus connection, calling
//          SetClamp(0: own process, 0, 1024) and Release back to back.
//
// Each (setup, load) cell is a fresh private dbus-daemon and a fresh
// cppcgovd on a fake root (the simulated rd-n2 machine, --cpus CPUs, a 1 ms
// tick, call limits raised so that they do not cap the flood). The load
// starts once the daemon owns its name and runs 1 s of warm-up, which is
// discarded; the phase is from a GetStatistics at its start to one at its
// end, taken while the load still runs:
//   - the tick's lateness p50 / p99 / max (the daemon's, over its last
//     4096 ticks), the ticks it skipped and ran in the phase (the two
//     GetStatistics' difference), and the tick's own CPU time per tick
//     (p99 / max) when the daemon reports it;
//   - PCC wait overshoot: a thread of this program scheduled as the
//     daemon's tick thread is in that setup (nice -5 SCHED_OTHER; or
//     SCHED_DEADLINE with the runtime and period of the daemon's start-up
//     log line, else 200 us every 1000 us, falling back to SCHED_FIFO
//     priority 1 as the daemon does) wakes every 1 ms and runs libcppc's
//     precise wait (cppc::pcc::waitUntil on the monotonic clock, polling
//     every 12.5 us as a channel of 100 us nominal latency does) for 100
//     us with a condition that never holds; the overshoot is how long
//     after its deadline the wait returned. It is the library's wait under
//     the tick's scheduling in the same load, not a wait inside the daemon;
//   - SetClamp round trip p50 / p99 from one more client, on its own
//     connection, calling SetClamp(0, 0, 1024) and Release every 10 ms
//     (timed around the synchronous call), and its p99 against the idle
//     load's of the same setup.
// Then the targets (busy: lateness p99 < 200 us, no tick skipped, PCC
// overshoot p99 < 100 us, SetClamp p99 within 2x idle's), from this run.
//
// Usage: tick_reservation [--cppcgovd=PATH] [--seconds=N] [--clients=N]
//                         [--cpus=N] [--no-tick-key]
// Needs root (SCHED_DEADLINE and SCHED_FIFO; exits 77 without it) and
// dbus-daemon in PATH. cppcgovd defaults to ../daemon/cppcgovd from this
// program's directory. Nothing on the machine changes: the daemon writes
// only under its fake root; every child is killed on every way out.
#include "bench/daemon_bench_world.hpp"
#include "lib/pcc/precise_wait.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <regex>
#include <sstream>
#include <stop_token>
#include <string_view>
#include <system_error>
#include <thread>

namespace
{

using namespace cppcgov::bench;
using cppc::pcc::monotonicNow;
using cppc::pcc::Nanos;

constexpr milliseconds warmUp{1000};
constexpr Nanos tickPeriod = milliseconds{1};
constexpr Nanos pccWait = microseconds{100};
// The channel's poll interval for a nominal latency of 100 us: 1/8 of it.
constexpr Nanos pccPollInterval = nanoseconds{12500};
constexpr milliseconds probeGap{10};
// The daemon's lateness percentiles are over its last this many ticks.
constexpr std::uint64_t latenessWindow = 4096;

// glibc 2.36 declares neither struct sched_attr nor sched_setattr.
struct SchedAttr
{
    std::uint32_t size = 0;
    std::uint32_t schedPolicy = 0;
    std::uint64_t schedFlags = 0;
    std::int32_t schedNice = 0;
    std::uint32_t schedPriority = 0;
    std::uint64_t schedRuntime = 0;
    std::uint64_t schedDeadline = 0;
    std::uint64_t schedPeriod = 0;
};
constexpr std::uint32_t schedDeadlinePolicy = 6;

// The world's options (idleSeconds unused), 6 s phases by default, and
// whether the policy file has a tick section.
struct RunOptions : Options
{
    RunOptions()
    {
        seconds = 6;
    }
    bool tickKey = true;
};

enum class Setup
{
    nice,
    reservation,
};

enum class Load
{
    idle,
    busy,
    flood,
};

const char* nameOf(Setup s)
{
    return s == Setup::nice ? "nice -5" : "reservation";
}

const char* nameOf(Load l)
{
    switch (l)
    {
        case Load::idle:
            return "idle";
        case Load::busy:
            return "busy";
        case Load::flood:
            return "flood";
    }
    return "?";
}

// SIGINT, SIGTERM or SIGHUP, once caught: the run stops at its next pause
// and unwinds, which kills and reaps every child.
std::atomic<int> caughtSignal{0};

void onSignal(int sig)
{
    caughtSignal.store(sig);
}

struct Interrupted
{
    int signal;
};

void catchSignals()
{
    struct sigaction action = {};
    action.sa_handler = onSignal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP})
    {
        (void)::sigaction(sig, &action, nullptr);
    }
}

void checkSignal()
{
    if (const int sig = caughtSignal.load(); sig != 0)
    {
        throw Interrupted{sig};
    }
}

// Sleeps for `length`, in short steps, throwing Interrupted once a signal
// is caught.
void pause(milliseconds length)
{
    const auto end = Clock::now() + length;
    for (auto now = Clock::now(); now < end; now = Clock::now())
    {
        checkSignal();
        std::this_thread::sleep_for(
            std::min<Clock::duration>(end - now, milliseconds(50)));
    }
    checkSignal();
}

// How a thread is scheduled: the daemon's tick thread, and the PCC
// waiter that imitates it.
enum class Policy
{
    other,
    fifo,
    deadline,
};

struct TickScheduling
{
    Policy policy = Policy::other;
    int nice = 0;
    unsigned fifoPriority = 1;
    microseconds runtime{200};
    microseconds period{1000};
};

std::string describe(const TickScheduling& s)
{
    switch (s.policy)
    {
        case Policy::deadline:
            return "SCHED_DEADLINE " + std::to_string(s.runtime.count()) +
                   " us every " + std::to_string(s.period.count()) + " us";
        case Policy::fifo:
            return "SCHED_FIFO priority " + std::to_string(s.fifoPriority);
        case Policy::other:
            return "SCHED_OTHER nice " + std::to_string(s.nice);
    }
    return "?";
}

// The daemon's start-up line about its tick ("tick on ..."), or "".
std::string tickLineOf(const std::string& log)
{
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);)
    {
        if (line.find("tick on") != std::string::npos)
        {
            return line;
        }
    }
    return "";
}

// How the daemon's tick thread is scheduled in `setup`, from its log line
// where it says: the reservation's SCHED_DEADLINE runtime and period (200
// us every 1000 us when the line does not say), its SCHED_FIFO priority,
// or SCHED_OTHER when the daemon fell back to it.
TickScheduling tickSchedulingOf(Setup setup, const std::string& tickLine)
{
    TickScheduling s;
    if (setup == Setup::nice)
    {
        s.nice = -5;
        return s;
    }
    std::smatch m;
    if (tickLine.find("SCHED_OTHER") != std::string::npos)
    {
        return s;
    }
    if (tickLine.find("SCHED_FIFO") != std::string::npos)
    {
        s.policy = Policy::fifo;
        if (std::regex_search(tickLine, m, std::regex("priority ([0-9]+)")))
        {
            s.fifoPriority = static_cast<unsigned>(std::stoul(m[1]));
        }
        return s;
    }
    s.policy = Policy::deadline;
    if (std::regex_search(tickLine, m,
                          std::regex("runtime ([0-9]+) us every ([0-9]+) us")))
    {
        s.runtime = microseconds(std::stol(m[1]));
        s.period = microseconds(std::stol(m[2]));
    }
    return s;
}

// Schedules the calling thread as `wanted`, falling back from
// SCHED_DEADLINE to SCHED_FIFO and from there to SCHED_OTHER as the daemon
// does; returns what it got and says in `note` what was refused.
TickScheduling scheduleThisThread(const TickScheduling& wanted,
                                  std::string& note)
{
    TickScheduling got = wanted;
    if (got.policy == Policy::deadline)
    {
        SchedAttr attr;
        attr.size = sizeof(attr);
        attr.schedPolicy = schedDeadlinePolicy;
        attr.schedRuntime = static_cast<std::uint64_t>(
            duration_cast<nanoseconds>(got.runtime).count());
        attr.schedDeadline = static_cast<std::uint64_t>(
            duration_cast<nanoseconds>(got.period).count());
        attr.schedPeriod = attr.schedDeadline;
        if (::syscall(SYS_sched_setattr, 0, &attr, 0U) == 0)
        {
            return got;
        }
        note = "SCHED_DEADLINE refused: " + errnoText(errno);
        got.policy = Policy::fifo;
    }
    if (got.policy == Policy::fifo)
    {
        sched_param param{};
        param.sched_priority = static_cast<int>(got.fifoPriority);
        const int err =
            ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
        if (err == 0)
        {
            return got;
        }
        note += (note.empty() ? "" : "; ") +
                std::string("SCHED_FIFO refused: ") + errnoText(err);
        got.policy = Policy::other;
    }
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), got.nice) !=
        0)
    {
        note += (note.empty() ? "" : "; ") + std::string("nice ") +
                std::to_string(got.nice) + " refused: " + errnoText(errno);
        got.nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    }
    return got;
}

// The PCC waiter: scheduled as `wanted`, it wakes every tickPeriod and
// waits pccWait with the library's precise wait, recording how late each
// wait returned.
struct WaiterResult
{
    TickScheduling got;
    std::string note;
    std::vector<nanoseconds> overshoot;
    // The thread's CPU time over each wait (CLOCK_THREAD_CPUTIME_ID).
    std::vector<nanoseconds> cpu;
    unsigned early = 0;
};

Nanos threadCpuNow()
{
    timespec t{};
    (void)::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return std::chrono::seconds(t.tv_sec) + Nanos(t.tv_nsec);
}

void waitLoop(const std::stop_token& stop, const TickScheduling& wanted,
              WaiterResult& out)
{
    out.got = scheduleThisThread(wanted, out.note);
    out.overshoot.reserve(16384);
    out.cpu.reserve(16384);
    cppc::pcc::WaitClock& clock = cppc::pcc::monotonicClock();
    Nanos next = clock.now();
    while (!stop.stop_requested())
    {
        next = std::max(next + tickPeriod, clock.now());
        clock.sleepUntil(next);
        const Nanos cpuBefore = threadCpuNow();
        const Nanos deadline = clock.now() + pccWait;
        (void)cppc::pcc::waitUntil(
            clock, [] { return false; }, deadline, pccPollInterval);
        const Nanos late = monotonicNow() - deadline;
        out.cpu.push_back(threadCpuNow() - cpuBefore);
        out.overshoot.push_back(late);
        if (late < Nanos{0})
        {
            ++out.early;
        }
    }
}

// The extra client: SetClamp(own process, 0, 1024) and Release every
// probeGap, the SetClamp round trip timed.
struct ProbeResult
{
    std::vector<nanoseconds> roundTrips;
    std::uint64_t errors = 0;
    std::string firstError;
};

void probeLoop(const std::stop_token& stop, const std::string& address,
               ProbeResult& out)
{
    try
    {
        Client client(address);
        auto next = Clock::now();
        while (!stop.stop_requested())
        {
            try
            {
                const auto start = Clock::now();
                const std::uint64_t handle = client.setClamp(0, 0, 1024);
                out.roundTrips.push_back(Clock::now() - start);
                client.release(handle);
            }
            catch (const sdbus::Error& e)
            {
                if (out.errors++ == 0)
                {
                    out.firstError = e.getName() + ": " + e.getMessage();
                }
            }
            next = std::max(next + probeGap, Clock::now());
            std::this_thread::sleep_until(next);
        }
    }
    catch (const std::exception& e)
    {
        ++out.errors;
        out.firstError = e.what();
    }
}

using Stats = std::map<std::string, std::uint64_t>;

std::optional<std::uint64_t> statOf(const Stats& stats, const char* key)
{
    const auto it = stats.find(key);
    return it == stats.end() ? std::nullopt
                             : std::optional<std::uint64_t>(it->second);
}

// `key` at the end of the phase less at its start.
std::uint64_t grownBy(const Stats& before, const Stats& after, const char* key)
{
    const std::uint64_t b = statOf(before, key).value_or(0);
    const std::uint64_t a = statOf(after, key).value_or(0);
    return a > b ? a - b : 0;
}

const char* policyName(int policy)
{
    switch (policy)
    {
        case SCHED_OTHER:
            return "SCHED_OTHER";
        case SCHED_FIFO:
            return "SCHED_FIFO";
        case SCHED_RR:
            return "SCHED_RR";
        case SCHED_BATCH:
            return "SCHED_BATCH";
        case SCHED_IDLE:
            return "SCHED_IDLE";
        case static_cast<int>(schedDeadlinePolicy):
            return "SCHED_DEADLINE";
        default:
            return "policy ?";
    }
}

// The daemon's threads as "name POLICY nice N", with a count where several
// are alike, from /proc/<pid>/task/*/stat.
std::string threadsOf(pid_t pid)
{
    std::map<std::string, unsigned> kinds;
    std::error_code ec;
    const fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
    for (const auto& task : fs::directory_iterator(tasks, ec))
    {
        const std::string text = readText(task.path() / "stat");
        const std::size_t open = text.find('(');
        const std::size_t close = text.rfind(')');
        if (open == std::string::npos || close == std::string::npos ||
            close + 2 > text.size())
        {
            continue;
        }
        // After the name: state is field 3, nice 19 and policy 41.
        std::istringstream fields(text.substr(close + 2));
        std::vector<std::string> f;
        for (std::string w; fields >> w;)
        {
            f.push_back(w);
        }
        if (f.size() < 39)
        {
            continue;
        }
        ++kinds[text.substr(open + 1, close - open - 1) + " " +
                policyName(std::stoi(f[38])) + " nice " + f[16]];
    }
    std::string out;
    for (const auto& [kind, n] : kinds)
    {
        out += (out.empty() ? "" : ", ") +
               (n > 1 ? std::to_string(n) + "x " : std::string()) + kind;
    }
    return out.empty() ? "(none read)" : out;
}

struct CellResult
{
    Setup setup = Setup::nice;
    Load load = Load::idle;
    Stats before;
    Stats after;
    double seconds = 0;
    std::string tickLine;
    std::string daemonThreads;
    WaiterResult waiter;
    ProbeResult probe;
    HammerResult flood;
    std::optional<int> exitStatus;
    std::string log;
};

std::string policyFor(const RunOptions& o, Setup setup)
{
    std::string policy = simulatorPolicy(o.cpus);
    if (o.tickKey)
    {
        policy += std::string("tick:\n  scheduling: ") +
                  (setup == Setup::nice ? "other" : "auto") + "\n";
    }
    return policy;
}

CellResult runCell(const RunOptions& o, Setup setup, Load load)
{
    CellResult r;
    r.setup = setup;
    r.load = load;
    World world(o.cppcgovd, policyFor(o, setup));
    world.setDaemonNice(setup == Setup::nice ? -5 : 0);
    world.startBus();
    world.startDaemon();
    Client control(world.address());
    {
        std::vector<std::unique_ptr<Child>> busy;
        std::optional<std::jthread> flood;
        if (load == Load::busy)
        {
            const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
            for (long i = 0; i < 2 * std::max(cpus, 1L); ++i)
            {
                busy.push_back(std::make_unique<Child>(
                    std::vector<std::string>{"sh", "-c", "while :; do :; done"},
                    -1, -1));
            }
        }
        else if (load == Load::flood)
        {
            // Longer than the phase, so that the flood still runs when the
            // phase's statistics are taken.
            const milliseconds length =
                warmUp + std::chrono::seconds(o.seconds) + milliseconds(500);
            flood.emplace([&r, &world, &o, length]() {
                try
                {
                    r.flood = hammer(world.address(), o.clients, length,
                                     HammerCall::clampAndRelease);
                }
                catch (const std::exception& e)
                {
                    ++r.flood.errors;
                    r.flood.firstError = e.what();
                }
            });
        }
        pause(warmUp);
        r.tickLine = tickLineOf(world.daemonLog());
        const TickScheduling wanted = tickSchedulingOf(setup, r.tickLine);
        r.before = control.statistics();
        const auto start = Clock::now();
        {
            std::jthread waiter([&wanted, &r](const std::stop_token& stop) {
                waitLoop(stop, wanted, r.waiter);
            });
            std::jthread probe([&world, &r](const std::stop_token& stop) {
                probeLoop(stop, world.address(), r.probe);
            });
            pause(std::chrono::seconds(o.seconds));
            r.after = control.statistics();
            r.seconds =
                static_cast<double>(
                    duration_cast<microseconds>(Clock::now() - start).count()) /
                1e6;
            r.daemonThreads = threadsOf(world.daemonPid());
        }
    }
    r.exitStatus = world.stopDaemonWithin(milliseconds(5000));
    r.log = world.daemonLog();
    return r;
}

std::string us(nanoseconds ns)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f",
                  static_cast<double>(ns.count()) / 1000.0);
    return text;
}

std::string usOf(const Stats& stats, const char* key)
{
    const std::optional<std::uint64_t> v = statOf(stats, key);
    return v ? us(nanoseconds(static_cast<std::int64_t>(*v))) : "-";
}

std::string usAt(std::vector<nanoseconds> v, unsigned p)
{
    return v.empty() ? "-" : us(percentile(v, p));
}

const CellResult* find(const std::vector<CellResult>& cells, Setup setup,
                       Load load)
{
    for (const CellResult& c : cells)
    {
        if (c.setup == setup && c.load == load)
        {
            return &c;
        }
    }
    return nullptr;
}

// The SetClamp p99 of `cell` against the idle load's of the same setup.
std::optional<double> againstIdle(const std::vector<CellResult>& cells,
                                  const CellResult& cell)
{
    const CellResult* idle = find(cells, cell.setup, Load::idle);
    if (idle == nullptr || idle->probe.roundTrips.empty() ||
        cell.probe.roundTrips.empty())
    {
        return std::nullopt;
    }
    std::vector<nanoseconds> base = idle->probe.roundTrips;
    std::vector<nanoseconds> here = cell.probe.roundTrips;
    const double b = static_cast<double>(percentile(base, 99).count());
    return b > 0 ? std::optional<double>(
                       static_cast<double>(percentile(here, 99).count()) / b)
                 : std::nullopt;
}

void printTable(const std::vector<CellResult>& cells)
{
    std::printf("\n%-6s %-12s %29s %15s %15s %15s %23s\n", "", "",
                "tick lateness (us)", "ticks", "tick CPU (us)", "PCC wait over",
                "SetClamp round trip");
    std::printf("%-6s %-12s %9s %9s %9s %7s %7s %7s %7s %7s %7s %9s %9s %9s\n",
                "load", "daemon", "p50", "p99", "max", "skipped", "run", "p99",
                "max", "p50 us", "p99 us", "p50 us", "p99 us", "p99/idle");
    bool shortWindow = false;
    for (const Load load : {Load::idle, Load::busy, Load::flood})
    {
        for (const Setup setup : {Setup::nice, Setup::reservation})
        {
            const CellResult* c = find(cells, setup, load);
            if (c == nullptr)
            {
                continue;
            }
            const std::uint64_t ran = grownBy(c->before, c->after, "ticks");
            const bool partial = ran < latenessWindow;
            shortWindow = shortWindow || partial;
            const std::optional<double> ratio = againstIdle(cells, *c);
            char ratioText[32] = "-";
            if (ratio)
            {
                std::snprintf(ratioText, sizeof(ratioText), "%.2fx", *ratio);
            }
            std::printf(
                "%-6s %-12s %9s %9s %9s %7llu %6llu%s %7s %7s %7s %7s %9s "
                "%9s %9s\n",
                nameOf(load), nameOf(setup),
                usOf(c->after, "tick_late_p50_ns").c_str(),
                usOf(c->after, "tick_late_p99_ns").c_str(),
                usOf(c->after, "tick_late_max_ns").c_str(),
                static_cast<unsigned long long>(
                    grownBy(c->before, c->after, "ticks_skipped")),
                static_cast<unsigned long long>(ran), partial ? "*" : " ",
                usOf(c->after, "tick_cpu_p99_ns").c_str(),
                usOf(c->after, "tick_cpu_max_ns").c_str(),
                usAt(c->waiter.overshoot, 50).c_str(),
                usAt(c->waiter.overshoot, 99).c_str(),
                usAt(c->probe.roundTrips, 50).c_str(),
                usAt(c->probe.roundTrips, 99).c_str(), ratioText);
        }
    }
    std::printf("\n(lateness: the daemon's, over its last %llu ticks at the "
                "phase's end; skipped and run: in the phase; tick CPU: the "
                "tick's own CPU time per tick, '-' when the daemon does not "
                "report it; PCC wait over: how late a precise 100 us wait "
                "returned in a thread of this program scheduled as the tick "
                "thread; SetClamp: one client every %lld ms)\n",
                static_cast<unsigned long long>(latenessWindow),
                static_cast<long long>(probeGap.count()));
    if (shortWindow)
    {
        std::printf("* fewer than %llu ticks ran in the phase: its lateness "
                    "figures reach back into the warm-up, under the same "
                    "load\n",
                    static_cast<unsigned long long>(latenessWindow));
    }
}

// The targets under the busy load, from this run.
void printTargets(const std::vector<CellResult>& cells)
{
    std::printf("\ntargets under the busy load, from this run:\n");
    for (const Setup setup : {Setup::nice, Setup::reservation})
    {
        const CellResult* c = find(cells, setup, Load::busy);
        if (c == nullptr)
        {
            continue;
        }
        const auto line =
            [setup](const char* what, const std::string& value, bool holds) {
            std::printf("  %-12s %-34s %12s  %s\n", nameOf(setup), what,
                        value.c_str(), holds ? "holds" : "does not hold");
        };
        const std::optional<std::uint64_t> lateP99 =
            statOf(c->after, "tick_late_p99_ns");
        line("tick lateness p99 < 200 us", usOf(c->after, "tick_late_p99_ns"),
             lateP99 && *lateP99 < 200'000);
        const std::uint64_t skipped =
            grownBy(c->before, c->after, "ticks_skipped");
        line("ticks skipped: 0", std::to_string(skipped), skipped == 0);
        std::vector<nanoseconds> over = c->waiter.overshoot;
        line("PCC wait overshoot p99 < 100 us", usAt(over, 99),
             !over.empty() && percentile(over, 99) < microseconds(100));
        const std::optional<double> ratio = againstIdle(cells, *c);
        char ratioText[32] = "-";
        if (ratio)
        {
            std::snprintf(ratioText, sizeof(ratioText), "%.2fx", *ratio);
        }
        line("SetClamp p99 within 2x idle's", ratioText,
             ratio && *ratio <= 2.0);
    }
}

void printNotes(const std::vector<CellResult>& cells)
{
    std::printf("\nper cell: the daemon's line about its tick; its threads "
                "at the phase's end; the PCC waiter's scheduling; the phase's "
                "length; calls\n");
    for (const CellResult& c : cells)
    {
        std::printf("  %s / %s:\n", nameOf(c.load), nameOf(c.setup));
        std::printf("    daemon: %s\n",
                    c.tickLine.empty() ? "(no 'tick on' line in its log)"
                                       : c.tickLine.c_str());
        std::printf("    threads: %s\n", c.daemonThreads.c_str());
        std::printf(
            "    PCC waiter: %s%s%s; %zu waits, %u early; its CPU "
            "time per wait p50 %s us, p99 %s us, max %s us\n",
            describe(c.waiter.got).c_str(), c.waiter.note.empty() ? "" : " (",
            c.waiter.note.empty() ? "" : (c.waiter.note + ")").c_str(),
            c.waiter.overshoot.size(), c.waiter.early,
            usAt(c.waiter.cpu, 50).c_str(), usAt(c.waiter.cpu, 99).c_str(),
            usAt(c.waiter.cpu, 100).c_str());
        std::printf("    phase %.1f s; SetClamp client: %zu calls, %llu "
                    "errors%s%s",
                    c.seconds, c.probe.roundTrips.size(),
                    static_cast<unsigned long long>(c.probe.errors),
                    c.probe.firstError.empty() ? "" : ", first: ",
                    c.probe.firstError.c_str());
        if (c.load == Load::flood)
        {
            std::printf("; flood: %llu SetClamp + %llu Release in %.1f s, "
                        "%llu errors%s%s",
                        static_cast<unsigned long long>(c.flood.setClamps),
                        static_cast<unsigned long long>(c.flood.releases),
                        c.flood.seconds,
                        static_cast<unsigned long long>(c.flood.errors),
                        c.flood.firstError.empty() ? "" : ", first: ",
                        c.flood.firstError.c_str());
        }
        std::printf("\n");
    }
}

bool inPath(const std::string& program)
{
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path == nullptr ? "" : path);
    for (std::string dir; std::getline(dirs, dir, ':');)
    {
        if (!dir.empty() &&
            ::access((fs::path(dir) / program).c_str(), X_OK) == 0)
        {
            return true;
        }
    }
    return false;
}

std::optional<RunOptions> parseArgs(int argc, char** argv)
{
    RunOptions o;
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
            ok = parseWhole(value, o.seconds) && o.seconds >= 5 &&
                 o.seconds <= 3600;
        }
        else if (key == "--no-tick-key" && value.empty())
        {
            o.tickKey = false;
            ok = true;
        }
        if (!ok)
        {
            std::cerr << "tick_reservation: bad argument '" << argv[i]
                      << "'\nusage: tick_reservation [--cppcgovd=PATH] "
                         "[--seconds=N (>= 5)] [--clients=N] [--cpus=N] "
                         "[--no-tick-key]\n";
            return std::nullopt;
        }
    }
    return o;
}

int runBench(const RunOptions& o, const std::string& command)
{
    std::printf(
        "cppcgovd's tick: nice -5 against a reservation\ncommand: "
        "%s\ncppcgovd: %s\nsimulator rd-n2, %u CPUs, sampling 1000 "
        "us; %s the policy file's tick section; %u s per phase after "
        "%lld ms of warm-up\nhost: %ld CPUs online; load average at "
        "start: %s",
        command.c_str(), o.cppcgovd.c_str(), o.cpus,
        o.tickKey ? "with" : "without", o.seconds,
        static_cast<long long>(warmUp.count()), ::sysconf(_SC_NPROCESSORS_ONLN),
        readText("/proc/loadavg").c_str());
    std::fflush(stdout);
    std::vector<CellResult> cells;
    bool failed = false;
    for (const Load load : {Load::idle, Load::busy, Load::flood})
    {
        for (const Setup setup : {Setup::nice, Setup::reservation})
        {
            std::printf("%s / %s ...\n", nameOf(load), nameOf(setup));
            std::fflush(stdout);
            cells.push_back(runCell(o, setup, load));
            const CellResult& c = cells.back();
            if (!c.exitStatus || *c.exitStatus != 0 || c.probe.errors != 0 ||
                c.flood.errors != 0 || c.waiter.early != 0)
            {
                failed = true;
                std::printf("cppcgovd's exit: %s; its log:\n%s\n",
                            c.exitStatus ? std::to_string(*c.exitStatus).c_str()
                                         : "killed after 5 s",
                            c.log.c_str());
            }
        }
    }
    printTable(cells);
    printTargets(cells);
    printNotes(cells);
    std::printf("load average at end: %s", readText("/proc/loadavg").c_str());
    return failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv)
{
    const std::optional<RunOptions> options = parseArgs(argc, argv);
    if (!options)
    {
        return 2;
    }
    if (::geteuid() != 0)
    {
        std::printf("tick_reservation: skipped: needs root, for "
                    "SCHED_DEADLINE and SCHED_FIFO\n");
        return 77;
    }
    if (!inPath("dbus-daemon"))
    {
        std::printf("tick_reservation: skipped: no dbus-daemon in PATH\n");
        return 77;
    }
    catchSignals();
    try
    {
        return runBench(*options, commandLine(argc, argv));
    }
    catch (const Interrupted& i)
    {
        std::cerr << "tick_reservation: stopped by " << ::strsignal(i.signal)
                  << "\n";
        return 128 + i.signal;
    }
    catch (const std::exception& e)
    {
        std::cerr << "tick_reservation: " << e.what() << "\n";
        return 1;
    }
}
