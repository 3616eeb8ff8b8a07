// SPDX-License-Identifier: Apache-2.0
// The daemon's two sources of load side by side, with real load on this
// machine: the scheduler's events (BPF, daemon/sched_observer.hpp) against
// /proc/stat (daemon/proc_stat.hpp), both read in the same loop.
//
// 1. Utilization error. A generator process pinned to one CPU is busy a
//    known fraction of every millisecond (less what waking up late takes
//    off), at SCHED_FIFO so that no ordinary task takes its CPU while it
//    spins, and records its own CPU clock at both ends of each busy
//    stretch in shared memory: the truth (truthNs()), which neither
//    source computed. Every
//    4 ms both sources give that CPU's busy fraction over the window; the
//    table has the mean and p99 of |measured - truth| in % of scale (1024).
// 2. Reaction to a step. The generator sleeps, then spins from a moment it
//    records. A 1 ms tick samples both sources: the ticks until each
//    window shows the CPU at least 90 % busy, and the time until the
//    request of the daemon's Governor (the default schedutil policy on a
//    machine with the rd-n2's capabilities, fed by that source) rises
//    above its idle value.
// 3. The daemon's own CPU use at a 1 ms tick: cppcgovd (simulator backend
//    on root /, a private dbus-daemon) idle, then with one hint on a
//    process of 64 sleeping threads, on each source.
//
// BPF needs root and BTF; without them only the procfs columns are
// filled and the reason is printed. Usage:
//   observe_bench [--cpu N] [--seconds S] [--steps N] [--cppcgovd PATH]
#include "bench/daemon_bench_world.hpp"
#include "daemon/governor.hpp"
#include "daemon/proc_stat.hpp"
#include "daemon/sched_observer.hpp"
#include "lib/monotonic_clock.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace
{

namespace fs = std::filesystem;
namespace daemon = cppcgov::daemon;
using cppc::monotonicNow;
using cppc::Nanos;

constexpr std::uint64_t generatorPeriodNs = 1'000'000;
constexpr std::uint64_t errorWindowNs = 4'000'000;
constexpr std::uint64_t tickNs = 1'000'000;

// The busy stretches the generator ran, in shared memory: when each began
// and ended, and the generator's own CPU time (CLOCK_THREAD_CPUTIME_ID,
// the kernel's account of it, system calls included) at both ends.
struct Stretch
{
    std::uint64_t startNs;
    std::uint64_t endNs;
    std::uint64_t cpuStartNs;
    std::uint64_t cpuEndNs;
};

struct Shared
{
    static constexpr std::size_t capacity = 1 << 16;
    std::atomic<std::uint64_t> count;
    // The busy fraction of every period, in 1/1000; 0: sleep; 1000: spin
    // without a break.
    std::atomic<std::uint32_t> permille;
    std::atomic<std::uint32_t> stop;
    // Whether the generator runs at SCHED_FIFO (as root).
    std::atomic<std::uint32_t> fifo;
    Stretch stretches[capacity];
};

std::uint64_t nowNs()
{
    return static_cast<std::uint64_t>(monotonicNow().count());
}

std::uint64_t cpuNs()
{
    timespec ts{};
    (void)::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

void pin(unsigned cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)::sched_setaffinity(0, sizeof(set), &set);
}

// The generator: each period busy permille/1000 of it, recorded.
[[noreturn]] void generate(Shared& shared, unsigned cpu)
{
    pin(cpu);
    // Real-time at the lowest priority, so that while it spins no ordinary
    // task takes its CPU: the CPU's busy time is then its own (what else
    // runs there does so while it sleeps, and is in the idle row).
    const sched_param low{1};
    shared.fifo.store(::sched_setscheduler(0, SCHED_FIFO, &low) == 0 ? 1 : 0);
    std::uint64_t period = nowNs();
    while (shared.stop.load() == 0)
    {
        const std::uint32_t permille = shared.permille.load();
        if (permille >= 1000)
        {
            const std::uint64_t cpuStart = cpuNs();
            const std::uint64_t start = nowNs();
            std::uint64_t end = start;
            while (shared.permille.load() >= 1000 && shared.stop.load() == 0)
            {
                end = nowNs();
                if (end - start > 1'000'000)
                {
                    break;
                }
            }
            const std::uint64_t n = shared.count.load();
            shared.stretches[n % Shared::capacity] = {start, end, cpuStart,
                                                      cpuNs()};
            shared.count.store(n + 1);
            period = end;
            continue;
        }
        if (permille > 0)
        {
            const std::uint64_t cpuStart = cpuNs();
            const std::uint64_t start = nowNs();
            const std::uint64_t busyUntil =
                period + generatorPeriodNs * permille / 1000;
            std::uint64_t end = start;
            while (end < busyUntil)
            {
                end = nowNs();
            }
            const std::uint64_t n = shared.count.load();
            shared.stretches[n % Shared::capacity] = {start, end, cpuStart,
                                                      cpuNs()};
            shared.count.store(n + 1);
        }
        period += generatorPeriodNs;
        const std::uint64_t now = nowNs();
        if (period < now)
        {
            period = now; // preempted past a period: start afresh
        }
        cppc::sleepUntil(Nanos(period));
    }
    std::_Exit(0);
}

// The generator's CPU time within [from, to): its own CPU clock
// (CLOCK_THREAD_CPUTIME_ID, the kernel's account of its run time, system
// calls included), read at both ends of every busy stretch and
// interpolated linearly between readings.
std::uint64_t truthNs(const Shared& shared, std::uint64_t from,
                      std::uint64_t to)
{
    const std::uint64_t n = shared.count.load();
    const std::uint64_t first = n > Shared::capacity ? n - Shared::capacity : 0;
    // The generator's CPU clock at time t.
    const auto cpuAt = [&](std::uint64_t t) {
        std::uint64_t lastT = 0;
        double lastCpu = 0;
        bool have = false;
        for (std::uint64_t i = first; i < n; ++i)
        {
            const Stretch& s = shared.stretches[i % Shared::capacity];
            const std::pair<std::uint64_t, double> points[2] = {
                {s.startNs, static_cast<double>(s.cpuStartNs)},
                {s.endNs, static_cast<double>(s.cpuEndNs)}};
            for (const auto& [pt, pc] : points)
            {
                if (pt >= t)
                {
                    if (!have || pt == lastT)
                    {
                        return pc;
                    }
                    return lastCpu +
                           (pc - lastCpu) * static_cast<double>(t - lastT) /
                               static_cast<double>(pt - lastT);
                }
                lastT = pt;
                lastCpu = pc;
                have = true;
            }
        }
        return lastCpu;
    };
    const double busy = cpuAt(to) - cpuAt(from);
    return busy > 0 ? static_cast<std::uint64_t>(busy) : 0;
}

// The generator's CPU clock at its last record.
std::uint64_t generatorCpuNs(const Shared& shared)
{
    const std::uint64_t n = shared.count.load();
    return n == 0 ? 0 : shared.stretches[(n - 1) % Shared::capacity].cpuEndNs;
}

// Both sources, read at once.
class Sources
{
  public:
    explicit Sources(unsigned cpu) : cpu_(cpu), procfs_("/")
    {
        procfsBusy_.resize(procfs_.cpus());
        try
        {
            bpf_.emplace();
            observed_.resize(bpf_->cpus());
        }
        catch (const daemon::ObserverUnavailable& e)
        {
            why_ = e.what();
        }
    }

    bool bpf() const
    {
        return bpf_.has_value();
    }
    const std::string& why() const
    {
        return why_;
    }

    // Ends both windows; the fractions of the generator's CPU, 0..1024
    // (the BPF one -1 without BPF).
    std::pair<double, double> sample()
    {
        double bpf = -1;
        if (bpf_)
        {
            const std::uint64_t windowNs = bpf_->sample(observed_);
            bpfBusyNs_ += observed_[cpu_].busyNs;
            bpf = windowNs == 0
                      ? 0
                      : 1024.0 * static_cast<double>(observed_[cpu_].busyNs) /
                            static_cast<double>(windowNs);
        }
        (void)procfs_.sample(procfsBusy_);
        return {std::min(bpf, 1024.0), procfsBusy_[cpu_]};
    }

    // The CPU's busy time by the scheduler's events, summed over every
    // sample() so far, in ns.
    std::uint64_t bpfBusyNs() const
    {
        return bpfBusyNs_;
    }

  private:
    std::uint64_t bpfBusyNs_ = 0;
    unsigned cpu_;
    daemon::ProcStatSampler procfs_;
    std::vector<std::uint16_t> procfsBusy_;
    std::optional<daemon::SchedObserver> bpf_;
    std::vector<daemon::ObservedCpu> observed_;
    std::string why_;
};

struct Options
{
    unsigned cpu = 0;
    unsigned seconds = 3;
    unsigned steps = 10;
    fs::path cppcgovd;
};

double percentileOf(std::vector<double> v, unsigned p)
{
    return cppcgov::bench::percentile(v, p);
}

// Part 1.
void utilizationError(Shared& shared, Sources& sources, const Options& o)
{
    std::printf("\n1. Utilization error of CPU %u over %llu ms windows, "
                "%u s per row (%% of scale; truth: the generator's own "
                "record)\n",
                o.cpu,
                static_cast<unsigned long long>(errorWindowNs / 1'000'000),
                o.seconds);
    std::printf("(the generator at %s)\n\n",
                shared.fifo.load() != 0
                    ? "SCHED_FIFO 1: nothing ordinary takes its CPU while it "
                      "spins"
                    : "SCHED_OTHER: other tasks may take its CPU while it "
                      "spins, and count as errors");
    std::printf("%-9s %8s %9s %9s | %10s %9s | %11s %10s\n", "busy", "truth",
                "its CPU", "bpf all", "bpf mean", "bpf p99", "procfs mean",
                "procfs p99");

    for (const std::uint32_t permille : {0U, 250U, 500U, 750U, 900U})
    {
        shared.permille.store(permille);
        cppc::sleepUntil(Nanos(nowNs() + 200'000'000)); // settle
        (void)sources.sample();
        std::uint64_t from = nowNs();
        const std::uint64_t rowStart = from;
        const std::uint64_t rowBpf = sources.bpfBusyNs();
        const std::uint64_t rowCpu = generatorCpuNs(shared);
        std::vector<double> bpfErr;
        std::vector<double> procErr;
        double truthSum = 0;
        const std::uint64_t end = from + o.seconds * 1'000'000'000ULL;
        std::uint64_t next = from + errorWindowNs;
        // Each window's measurements; the truth is computed once the row
        // is over, when every stretch a window holds has been recorded
        // (the generator records a stretch when it ends).
        struct Window
        {
            std::uint64_t from;
            std::uint64_t to;
            double bpf;
            double proc;
        };
        std::vector<Window> windows;
        while (next <= end)
        {
            cppc::sleepUntil(Nanos(next));
            const auto [bpf, proc] = sources.sample();
            const std::uint64_t to = nowNs();
            windows.push_back({from, to, bpf, proc});
            from = to;
            next += errorWindowNs;
        }
        cppc::sleepUntil(Nanos(nowNs() + 2 * generatorPeriodNs));
        for (const Window& w : windows)
        {
            const double truth =
                1024.0 * static_cast<double>(truthNs(shared, w.from, w.to)) /
                static_cast<double>(w.to - w.from);
            truthSum += truth;
            if (w.bpf >= 0)
            {
                bpfErr.push_back(std::fabs(w.bpf - truth) * 100 / 1024);
            }
            procErr.push_back(std::fabs(w.proc - truth) * 100 / 1024);
        }
        const auto mean = [](const std::vector<double>& v) {
            double s = 0;
            for (double x : v)
            {
                s += x;
            }
            return v.empty() ? 0.0 : s / static_cast<double>(v.size());
        };
        const double truth =
            truthSum / static_cast<double>(procErr.size()) * 100 / 1024;
        char bpfMean[32] = "-";
        char bpfP99[32] = "-";
        if (!bpfErr.empty())
        {
            std::snprintf(bpfMean, sizeof bpfMean, "%.2f", mean(bpfErr));
            std::snprintf(bpfP99, sizeof bpfP99, "%.2f",
                          percentileOf(bpfErr, 99));
        }
        // Over the whole row: the generator's own CPU clock, and every
        // busy nanosecond the scheduler's events saw on the CPU.
        const double rowNs = static_cast<double>(from - rowStart);
        const double itsCpu =
            static_cast<double>(generatorCpuNs(shared) - rowCpu) / rowNs * 100;
        const double bpfAll =
            static_cast<double>(sources.bpfBusyNs() - rowBpf) / rowNs * 100;

        std::printf(
            "%7.1f %% %6.1f %% %7.1f %% %7.1f %% | %10s %9s | %11.2f %10.2f\n",
            permille / 10.0, truth, itsCpu, bpfAll, bpfMean, bpfP99,
            mean(procErr), percentileOf(procErr, 99));
    }
    shared.permille.store(0);
}

// A machine of one caps set per host CPU, its load set by the loop.
class StepMachine final : public daemon::Machine
{
  public:
    explicit StepMachine(std::size_t cpus)
    {
        std::vector<cppcgov::policies::CpuCaps> caps(
            cpus, {3000, 2600, 1000, 500, 0});
        std::vector<cppcgov::policies::Domain> domains;
        for (std::uint32_t c = 0; c < cpus; ++c)
        {
            domains.push_back({{c}, cppcgov::policies::Coordination::perCpu});
        }
        topology_ = cppcgov::policies::makeTopology(caps, std::move(domains));
        util.assign(cpus, 0);
        requested.assign(cpus, 0);
    }
    std::string name() const override
    {
        return "step";
    }
    const cppcgov::policies::Topology& topology() const override
    {
        return topology_;
    }
    std::optional<std::uint32_t> psdDomain(std::uint32_t) const override
    {
        return std::nullopt;
    }
    std::error_code sample(std::uint64_t,
                           std::span<daemon::CpuSample> out) noexcept override
    {
        for (std::size_t c = 0; c < out.size(); ++c)
        {
            // Running at highest: util is the busy fraction.
            out[c] = {util[c], 0, 0};
        }
        return {};
    }
    daemon::Controls controls() const noexcept override
    {
        return {daemon::Control::desired};
    }
    std::error_code apply(
        std::span<const daemon::CppcRequest> requests) noexcept override
    {
        for (const daemon::CppcRequest& r : requests)
        {
            requested[r.cpu] = r.desired;
        }
        return {};
    }
    std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept override
    {
        return hostCpu < util.size() ? std::optional(hostCpu) : std::nullopt;
    }
    cppc::backend::RestoreResult restore() noexcept override
    {
        return {};
    }

    std::vector<std::uint16_t> util;
    std::vector<std::uint32_t> requested;

  private:
    cppcgov::policies::Topology topology_;
};

// Part 2.
void stepReaction(Shared& shared, Sources& sources, const Options& o)
{
    std::printf("\n2. Reaction of CPU %u to a step from idle to 100 %% busy, "
                "1 ms tick, %u steps (median / max)\n\n",
                o.cpu, o.steps);
    const std::size_t cpus = std::thread::hardware_concurrency();
    std::vector<double> inputTicks[2];
    std::vector<double> requestMs[2];
    for (unsigned step = 0; step < o.steps; ++step)
    {
        StepMachine machines[2] = {StepMachine(cpus), StepMachine(cpus)};
        daemon::Governor bpfGov(machines[0], {});
        daemon::Governor procGov(machines[1], {});
        daemon::Governor* governors[2] = {&bpfGov, &procGov};
        shared.permille.store(0);
        (void)sources.sample();
        std::uint64_t tick = nowNs();
        daemon::TickReport report;
        std::uint32_t idle[2] = {0, 0};
        // A second of idle ticks, then the step.
        std::optional<std::uint64_t> stepAt;
        std::optional<double> seen[2];
        std::optional<double> rose[2];
        for (unsigned t = 0; t < 1000 + 400; ++t)
        {
            tick += tickNs;
            cppc::sleepUntil(Nanos(tick));
            const auto [bpf, proc] = sources.sample();
            const double busy[2] = {bpf, proc};
            for (int s = 0; s < 2; ++s)
            {
                machines[s].util.assign(cpus, 0);
                machines[s].util[o.cpu] = static_cast<std::uint16_t>(
                    std::clamp(busy[s], 0.0, 1024.0));
                governors[s]->tick(tick / 1000, {}, report);
            }
            if (t == 999)
            {
                idle[0] = machines[0].requested[o.cpu];
                idle[1] = machines[1].requested[o.cpu];
                stepAt = nowNs();
                shared.permille.store(1000);
                continue;
            }
            if (!stepAt)
            {
                continue;
            }
            const double sinceMs = static_cast<double>(nowNs() - *stepAt) / 1e6;
            for (int s = 0; s < 2; ++s)
            {
                if (!seen[s] && busy[s] >= 0.9 * 1024)
                {
                    seen[s] = t - 999;
                }
                if (!rose[s] && machines[s].requested[o.cpu] > idle[s])
                {
                    rose[s] = sinceMs;
                }
            }
        }
        shared.permille.store(0);
        for (int s = 0; s < 2; ++s)
        {
            inputTicks[s].push_back(seen[s].value_or(999));
            requestMs[s].push_back(rose[s].value_or(999));
        }
        cppc::sleepUntil(Nanos(nowNs() + 100'000'000));
    }
    std::printf("%-34s | %15s | %15s\n", "", "bpf", "procfs");
    const auto row =
        [](const char* what, std::vector<double>* v, const char* unit) {
        std::printf("%-34s | %6.1f / %5.1f %s | %6.1f / %5.1f %s\n", what,
                    percentileOf(v[0], 50), percentileOf(v[0], 100), unit,
                    percentileOf(v[1], 50), percentileOf(v[1], 100), unit);
    };
    if (sources.bpf())
    {
        row("input >= 90 % busy, ticks", inputTicks, "  ");
        row("request above idle, ms", requestMs, "ms");
    }
    else
    {
        std::printf("(bpf column meaningless: %s)\n", sources.why().c_str());
        row("input >= 90 % busy, ticks", inputTicks, "  ");
        row("request above idle, ms", requestMs, "ms");
    }
}

// A process of `threads` threads that sleep until killed.
std::unique_ptr<cppcgov::bench::Child> sleepers(unsigned threads)
{
    return std::make_unique<cppcgov::bench::Child>(
        std::vector<std::string>{
            "python3", "-c",
            "import threading,time\n"
            "for _ in range(" +
                std::to_string(threads - 1) +
                "): threading.Thread(target=time.sleep, args=(3600,), "
                "daemon=True).start()\n"
                "time.sleep(3600)\n"},
        -1, -1);
}

// Part 3.
void daemonCpu(const Options& o, bool bpf)
{
    std::printf("\n3. cppcgovd's own CPU use at a 1 ms tick (simulator "
                "backend on root /, %u s per row, %% of one core)\n\n",
                o.seconds * 2);
    std::printf("%-32s | %10s | %10s\n", "", "bpf", "procfs");
    const unsigned cpus = std::thread::hardware_concurrency();
    double idle[2] = {-1, -1};
    double hinted[2] = {-1, -1};
    for (int s = 0; s < 2; ++s)
    {
        if (s == 0 && !bpf)
        {
            continue;
        }
        const std::string policy =
            "backend:\n  type: simulator\n  simulator:\n    layout: rd-n2\n"
            "    cpus: " +
            std::to_string(std::max(cpus, 4U)) +
            "\nsampling:\n  period_us: 1000\n  source: " +
            (s == 0 ? "bpf" : "procfs") + "\n" +
            cppcgov::bench::unlimitedClients();
        cppcgov::bench::World world(o.cppcgovd, policy);
        world.setDaemonRoot("/");
        world.startBus();
        world.startDaemon();
        cppcgov::bench::Client client(world.address());
        std::this_thread::sleep_for(std::chrono::seconds(1));
        cppcgov::bench::PhaseMeter meter(world.daemonPid(), "idle");
        std::this_thread::sleep_for(std::chrono::seconds(o.seconds * 2));
        idle[s] = meter.finish(client).cpuPercent;

        const auto threads = sleepers(64);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        (void)client.setClamp(static_cast<std::uint32_t>(threads->pid()), 0,
                              1024);
        std::this_thread::sleep_for(std::chrono::seconds(1));
        cppcgov::bench::PhaseMeter withHint(world.daemonPid(), "hinted");
        std::this_thread::sleep_for(std::chrono::seconds(o.seconds * 2));
        hinted[s] = withHint.finish(client).cpuPercent;
        (void)world.stopDaemon();
    }
    const auto cell = [](double v) {
        char text[32] = "-";
        if (v >= 0)
        {
            std::snprintf(text, sizeof text, "%.2f %%", v);
        }
        return std::string(text);
    };
    std::printf("%-32s | %10s | %10s\n", "idle", cell(idle[0]).c_str(),
                cell(idle[1]).c_str());
    std::printf("%-32s | %10s | %10s\n", "one hint on 64 sleeping threads",
                cell(hinted[0]).c_str(), cell(hinted[1]).c_str());
}

} // namespace

int main(int argc, char** argv)
{
    Options o;
    o.cpu = std::thread::hardware_concurrency() - 1;
    o.cppcgovd = cppcgov::bench::inBuildTree("daemon/cppcgovd");
    for (int i = 1; i + 1 < argc; i += 2)
    {
        const std::string flag = argv[i];
        const std::string value = argv[i + 1];
        if (flag == "--cpu")
        {
            o.cpu = static_cast<unsigned>(std::stoul(value));
        }
        else if (flag == "--seconds")
        {
            o.seconds = static_cast<unsigned>(std::stoul(value));
        }
        else if (flag == "--steps")
        {
            o.steps = static_cast<unsigned>(std::stoul(value));
        }
        else if (flag == "--cppcgovd")
        {
            o.cppcgovd = value;
        }
        else
        {
            std::fprintf(stderr, "usage: observe_bench [--cpu N] [--seconds S] "
                                 "[--steps N] [--cppcgovd PATH]\n");
            return 2;
        }
    }
    std::printf("observe_bench: %s\n",
                cppcgov::bench::commandLine(argc, argv).c_str());

    void* memory = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
    {
        std::perror("mmap");
        return 1;
    }
    auto* shared = new (memory) Shared{};
    const pid_t generator = ::fork();
    if (generator == 0)
    {
        generate(*shared, o.cpu);
    }
    bool bpf = false;
    {
        // The bench's own program is detached before the daemon's rows.
        Sources sources(o.cpu);
        bpf = sources.bpf();
        if (!bpf)
        {
            std::printf("BPF is not available: %s (procfs only)\n",
                        sources.why().c_str());
        }
        // The sampling loop runs on another CPU than the generator's.
        pin(o.cpu == 0 ? 1 : 0);
        utilizationError(*shared, sources, o);
        stepReaction(*shared, sources, o);
    }
    shared->stop.store(1);
    (void)::waitpid(generator, nullptr, 0);
    daemonCpu(o, bpf);
    return 0;
}
