// SPDX-License-Identifier: Apache-2.0
// Judges policies in virtual time on the simulated workload, and measures
// what a policy decision costs.
//
// Part 1 runs each scenario of eval_scenarios.hpp under every policy row
// (cppcgov's Governor on BPF and on procfs input, the model of the
// kernel's schedutil, performance, powersave), on the same workload and
// platform, and prints one table per scenario: jobs, deadline misses,
// response p50/p99, energy, performance writes and mean performance. It
// writes a PNG per scenario of requested performance against load over
// 200 ms, one panel per policy, into the directory given (default: the
// current one) and prints its path. Everything is exact and repeatable.
//
// Part 2 times one policy decision for 8 to 512 CPUs (real time, median of
// several repetitions) and prints the cost per CPU per tick.
//
// Usage: policy_eval [--plots DIR] [comparison|scaling]
#include "bench/eval_scenarios.hpp"
#include "bench/png_plot.hpp"
#include "policies/policy.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace
{

namespace pol = cppcgov::policies;
using cppc::bench::PolicyRow;
using cppc::bench::RowResult;
using cppc::bench::Scenario;

const pol::CpuCaps caps = cppc::bench::platformCaps();

std::uint32_t percentile(std::vector<std::uint32_t> v, unsigned p)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return v[(v.size() - 1) * p / 100];
}

cppc::bench::Rgb colourOf(PolicyRow row)
{
    switch (row)
    {
        case PolicyRow::cppcgovBpf:
            return {0, 90, 200}; // blue
        case PolicyRow::cppcgovProcfs:
            return {0, 160, 160}; // teal
        case PolicyRow::kernelSchedutil:
            return {210, 40, 30}; // red
        case PolicyRow::performance:
            return {120, 40, 160}; // purple
        case PolicyRow::powersave:
            return {40, 150, 40}; // green
    }
    return {};
}

void comparison(const std::filesystem::path& plots)
{
    std::printf("Platform: 1 CPU, highest %u, nominal %u, lowest nonlinear "
                "%u, lowest %u, transition %u us.\n"
                "cppcgov: the daemon's Governor, default settings, 1 ms tick. "
                "Kernel: the schedutil model,\n"
                "rate_limit_us 1000, HZ 250, util_est on, fast switch.\n",
                caps.highest, caps.nominal, caps.lowestNonlinear, caps.lowest,
                caps.transitionDelayUs);
    for (const Scenario& s : cppc::bench::scenarios())
    {
        std::vector<RowResult> rows;
        for (const PolicyRow row : cppc::bench::allRows)
        {
            rows.push_back(cppc::bench::run(s, row));
        }
        std::printf("\nScenario: %s\n\n", s.title.c_str());
        std::printf("%-26s %6s %7s %8s %17s %11s %9s %7s %9s\n", "policy",
                    "jobs", "misses", "after 1s", "response p50/p99",
                    "energy (J)", "vs perf.", "writes", "mean perf");
        double perfEnergy = 0;
        for (const RowResult& r : rows)
        {
            perfEnergy = r.row == PolicyRow::performance ? r.score.energyJoules
                                                         : perfEnergy;
        }
        std::vector<cppc::bench::PlotSeries> series;
        for (const RowResult& r : rows)
        {
            char response[32];
            std::snprintf(response, sizeof response, "%u/%u us",
                          percentile(r.score.responseUs, 50),
                          percentile(r.score.responseUs, 99));
            std::printf(
                "%-26s %6llu %7llu %8llu %17s %11.4f %8.1f%% %7llu "
                "%9.0f\n",
                cppc::bench::rowName(r.row).c_str(),
                static_cast<unsigned long long>(r.score.jobs),
                static_cast<unsigned long long>(r.score.misses),
                static_cast<unsigned long long>(r.missesAfterWarmUp), response,
                r.score.energyJoules, 100.0 * r.score.energyJoules / perfEnergy,
                static_cast<unsigned long long>(r.score.perfWrites),
                r.meanPerf);
            series.push_back({cppc::bench::rowName(r.row), colourOf(r.row),
                              r.requested, r.busy});
        }
        const std::filesystem::path file =
            plots / ("policy_eval_" + s.name + ".png");
        cppc::bench::writePlot(
            file, s.title + "; 200 us a column, a mark every 10 ms", series,
            caps.highest,
            {static_cast<double>(caps.nominal),
             static_cast<double>(caps.lowestNonlinear)});
        std::printf("\nPlot: %s (%llu ms from t = %llu ms, %llu us a "
                    "column; panels top to bottom:\n",
                    std::filesystem::absolute(file).c_str(),
                    static_cast<unsigned long long>(s.plotUs / 1000),
                    static_cast<unsigned long long>(s.plotFromUs / 1000),
                    static_cast<unsigned long long>(cppc::bench::plotStepUs));
        for (const PolicyRow row : cppc::bench::allRows)
        {
            const cppc::bench::Rgb c = colourOf(row);
            std::printf("  %s, line #%02x%02x%02x\n",
                        cppc::bench::rowName(row).c_str(), c.r, c.g, c.b);
        }
        std::printf("  grey: CPU busy; dotted: nominal and lowest "
                    "nonlinear; foot 0, head highest)\n");
    }
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
                        {t * 1000, utils[v], clamps[v], {}}, state, decisions);
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
    std::filesystem::path plots = ".";
    std::string only;
    for (int i = 1; i < argc; ++i)
    {
        if (std::strcmp(argv[i], "--plots") == 0 && i + 1 < argc)
        {
            plots = argv[++i];
        }
        else if (std::strcmp(argv[i], "comparison") == 0 ||
                 std::strcmp(argv[i], "scaling") == 0)
        {
            only = argv[i];
        }
        else
        {
            std::fprintf(stderr, "usage: policy_eval [--plots DIR] "
                                 "[comparison|scaling]\n");
            return EXIT_FAILURE;
        }
    }
    try
    {
        if (only.empty() || only == "comparison")
        {
            std::filesystem::create_directories(plots);
            comparison(plots);
        }
        if (only.empty() || only == "scaling")
        {
            scaling();
        }
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "policy_eval: %s\n", e.what());
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}
