// Judges policies in virtual time on the simulated workload, and measures
// what a policy decision costs.
//
// Part 1 runs the scenario the 2026 CPPC series was measured with: one task
// pinned to one CPU, 500 us of work (at nominal performance) every 2 ms,
// 5000 periods, a sampling tick every 1 ms and a 1000 us rate limit, and
// compares schedutil with a util_min hint of 512, schedutil without it,
// performance and powersave on deadline misses (deadline = the next
// release), response time, energy and performance writes, side by side.
// Utilization reaches the policy as the daemon's sampler gives it: busy
// fraction x delivered / highest per tick, averaged PELT-like (32 ms
// half-life).
//
// Part 2 times one policy decision for 8 to 512 CPUs (real time, median of
// several repetitions) and prints the cost per CPU per tick.
#include "lib/sim/workload.hpp"
#include "policies/policy.hpp"
#include "policies/util_average.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace
{

using cppc::sim::TaskSpec;
using cppc::sim::Workload;
using cppc::sim::WorkloadCpu;
namespace pol = cppcgov::policies;

// The simulated platform: one core with a nominal performance of 2800
// units (think MHz), highest 3000, lowest nonlinear 1000, lowest 800, a
// 50 us transition delay and the reference counter at 100.
constexpr WorkloadCpu platform{3000, 2800, 800, 100, 50};
constexpr pol::CpuCaps caps{3000, 2800, 1000, 800, 50};

constexpr std::uint64_t periods = 5000;
constexpr std::uint64_t taskPeriodUs = 2000;
// The series' scenario, and a heavier variant whose work does not fit the
// period at the floor (800 us at nominal takes 2240 us at 1000).
constexpr std::uint64_t taskWorkUs = 500;
constexpr std::uint64_t heavyWorkUs = 800;
constexpr std::uint64_t tickUs = 1000;
constexpr std::uint16_t hintMin = 512;

struct Row
{
    std::string name;
    cppc::sim::Score score;
    double meanPerf = 0;
};

// util = busy fraction x delivered / highest, on 0..1024.
std::uint16_t utilization(const cppc::sim::CpuWindow& w, std::uint64_t& lastRef,
                          std::uint64_t& lastDel, std::uint32_t currentPerf)
{
    if (w.lengthNs == 0)
    {
        return 0;
    }
    const std::uint64_t dRef = w.referenceCounter - lastRef;
    const std::uint64_t dDel = w.deliveredCounter - lastDel;
    lastRef = w.referenceCounter;
    lastDel = w.deliveredCounter;
    const double delivered =
        dRef == 0 ? currentPerf
                  : static_cast<double>(platform.referencePerf) *
                        static_cast<double>(dDel) / static_cast<double>(dRef);
    const double busy =
        static_cast<double>(w.busyNs) / static_cast<double>(w.lengthNs);
    const double util = busy * delivered / caps.highest * pol::utilScale;
    return static_cast<std::uint16_t>(
        std::clamp(util, 0.0, static_cast<double>(pol::utilScale)));
}

Row runScenario(const std::string& name, pol::PolicyKind kind, bool hinted,
                std::uint64_t workUs)
{
    TaskSpec task;
    task.kind = TaskSpec::Kind::periodic;
    task.name = "periodic";
    task.workUs = workUs;
    task.periodUs = taskPeriodUs;
    task.cpu = 0;
    Workload w({platform}, {task});
    const pol::Topology topology =
        pol::makeTopology({caps}, {{{0}, pol::Coordination::perCpu}});
    pol::SchedutilConfig config;
    config.rateLimitUpUs = 1000;
    config.rateLimitDownUs = 1000;
    std::vector<pol::DomainState> state(1);
    std::vector<pol::Decision> decisions(1);
    std::uint64_t lastRef = 0;
    std::uint64_t lastDel = 0;
    pol::UtilAverage average; // PELT-like, 32 ms half-life
    double perfSum = 0;
    std::uint64_t ticks = 0;
    for (std::uint64_t t = tickUs; t <= periods * taskPeriodUs; t += tickUs)
    {
        w.advanceTo(t);
        const cppc::sim::CpuWindow window = w.takeWindow(0);
        const std::vector<std::uint16_t> util{average.update(
            utilization(window, lastRef, lastDel, w.perf(0)), tickUs)};
        // The only task carries the hint, if any, while it is active.
        const std::vector<pol::TaskClamp> active(
            window.tasks.size(), {hinted, {hintMin, pol::utilScale}});
        const std::vector<pol::Clamp> clamp{pol::aggregate(active)};
        pol::decide(kind, config, topology, {t, util, clamp}, state, decisions);
        if (decisions[0].changed)
        {
            w.requestPerf(0, decisions[0].desired);
        }
        perfSum += w.perf(0);
        ++ticks;
    }
    return {name, w.score(), perfSum / static_cast<double>(ticks)};
}

std::uint32_t percentile(std::vector<std::uint32_t> v, unsigned p)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return v[(v.size() - 1) * p / 100];
}

void comparison(std::uint64_t workUs)
{
    const std::vector<Row> rows = {
        runScenario("schedutil + util_min 512", pol::PolicyKind::schedutil,
                    true, workUs),
        runScenario("schedutil", pol::PolicyKind::schedutil, false, workUs),
        runScenario("performance", pol::PolicyKind::performance, false, workUs),
        runScenario("powersave", pol::PolicyKind::powersave, false, workUs),
    };
    std::printf("Scenario: 1 task pinned to CPU 0, %llu us of work at nominal "
                "every %llu us, %llu periods;\n"
                "tick %llu us, rate limit 1000 us; CPU highest %u, nominal "
                "%u, lowest nonlinear %u, transition %u us\n\n",
                static_cast<unsigned long long>(workUs),
                static_cast<unsigned long long>(taskPeriodUs),
                static_cast<unsigned long long>(periods),
                static_cast<unsigned long long>(tickUs), caps.highest,
                caps.nominal, caps.lowestNonlinear, caps.transitionDelayUs);
    std::printf("%-26s %6s %7s %11s %9s %7s %9s %14s\n", "policy", "jobs",
                "misses", "energy (J)", "vs perf.", "writes", "mean perf",
                "response p50/p99 (us)");
    const double perfEnergy = rows[2].score.energyJoules;
    for (const Row& r : rows)
    {
        std::printf(
            "%-26s %6llu %7llu %11.4f %8.1f%% %7llu %9.0f %7u/%u\n",
            r.name.c_str(), static_cast<unsigned long long>(r.score.jobs),
            static_cast<unsigned long long>(r.score.misses),
            r.score.energyJoules, 100.0 * r.score.energyJoules / perfEnergy,
            static_cast<unsigned long long>(r.score.perfWrites), r.meanPerf,
            percentile(r.score.responseUs, 50),
            percentile(r.score.responseUs, 99));
    }
    const bool fewerMisses = rows[0].score.misses <= rows[1].score.misses;
    const bool lessEnergy =
        rows[0].score.energyJoules < rows[2].score.energyJoules;
    std::printf("\nschedutil with the hint: %s misses than without it; %s "
                "energy than performance\n",
                fewerMisses ? "no more" : "MORE",
                lessEnergy ? "less" : "NOT less");
}

// Median ns per CPU of one decide() over `cpus` CPUs in shared domains of
// four (the common cluster size) with varying inputs.
double decisionCost(std::uint32_t cpus)
{
    std::vector<pol::CpuCaps> allCaps(cpus, caps);
    std::vector<pol::Domain> domains;
    for (std::uint32_t c = 0; c < cpus; c += 4)
    {
        pol::Domain d;
        for (std::uint32_t k = c; k < std::min(cpus, c + 4); ++k)
        {
            d.cpus.push_back(k);
        }
        domains.push_back(std::move(d));
    }
    const pol::Topology topology =
        pol::makeTopology(std::move(allCaps), std::move(domains));
    std::mt19937 rng(7);
    constexpr std::size_t variants = 64;
    std::vector<std::vector<std::uint16_t>> utils(variants);
    std::vector<std::vector<pol::Clamp>> clamps(variants);
    for (std::size_t v = 0; v < variants; ++v)
    {
        for (std::uint32_t c = 0; c < cpus; ++c)
        {
            utils[v].push_back(static_cast<std::uint16_t>(rng() % 1025));
            clamps[v].push_back(
                {static_cast<std::uint16_t>(rng() % 4 == 0 ? 512 : 0),
                 pol::utilScale});
        }
    }
    std::vector<pol::DomainState> state(topology.domains.size());
    std::vector<pol::Decision> decisions(topology.domains.size());
    const std::uint64_t ticks = std::max<std::uint64_t>(2000, 2'000'000 / cpus);
    std::vector<double> samples;
    for (int rep = 0; rep < 7; ++rep)
    {
        const auto start = std::chrono::steady_clock::now();
        for (std::uint64_t t = 0; t < ticks; ++t)
        {
            const std::size_t v = t % variants;
            pol::decide(pol::PolicyKind::schedutil, {}, topology,
                        {t * 1000, utils[v], clamps[v]}, state, decisions);
        }
        const auto ns = std::chrono::duration<double, std::nano>(
                            std::chrono::steady_clock::now() - start)
                            .count();
        samples.push_back(ns / static_cast<double>(ticks) / cpus);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

void scaling()
{
    std::printf("\nPolicy decision cost (schedutil, domains of 4 CPUs, median "
                "of 7 runs)\n\n%6s %14s %14s\n",
                "CPUs", "ns per tick", "ns per CPU");
    double worst = 0;
    for (std::uint32_t cpus : {8U, 64U, 128U, 256U, 512U})
    {
        const double perCpu = decisionCost(cpus);
        worst = cpus == 512 ? perCpu : worst;
        std::printf("%6u %14.0f %14.2f\n", cpus, perCpu * cpus, perCpu);
    }
    std::printf("\nAt 512 CPUs: %.2f ns per CPU per tick (target: at most "
                "100)\n",
                worst);
}

} // namespace

int main(int argc, char** argv)
{
    const std::string only = argc > 1 ? argv[1] : "";
    if (only.empty() || only == "comparison")
    {
        comparison(taskWorkUs);
        std::printf("\n");
        comparison(heavyWorkUs);
    }
    if (only.empty() || only == "scaling")
    {
        scaling();
    }
    return EXIT_SUCCESS;
}
