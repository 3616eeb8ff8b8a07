// SPDX-License-Identifier: Apache-2.0
// policy_eval's scenarios and the policies it runs on each, in virtual
// time on lib/sim/workload: the workload, the platform and the hints are
// the same for every policy of a scenario.
//
// Policies (rows):
//   cppcgov, BPF input     the daemon's Governor (default settings, 1 ms
//                          tick) on exact windows (eval_inputs.hpp
//                          ExactInput, Governor::tickExact);
//   cppcgov, procfs input  the same on procfs counts (ProcfsInput,
//                          Governor::tick);
//   kernel schedutil       the model of Linux 6.1's schedutil on
//                          cppc_cpufreq (kernel_schedutil.hpp), the hints
//                          as uclamp values;
//   performance, powersave the Governor with those policies.
#pragma once

#include "bench/eval_inputs.hpp"
#include "bench/png_plot.hpp"
#include "lib/sim/workload.hpp"
#include "policies/policy.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cppc::bench
{

struct Scenario
{
    std::string name; // short, for the plot's file name
    std::string title;
    std::vector<sim::TaskSpec> tasks;
    TaskHints hints;
    std::uint64_t durationUs = 0;
    // The stretch plotted.
    std::uint64_t plotFromUs = 0;
    std::uint64_t plotUs = 200'000;
};

enum class PolicyRow : std::uint8_t
{
    cppcgovBpf,
    cppcgovProcfs,
    kernelSchedutil,
    performance,
    powersave,
};

inline constexpr PolicyRow allRows[] = {
    PolicyRow::cppcgovBpf, PolicyRow::cppcgovProcfs, PolicyRow::kernelSchedutil,
    PolicyRow::performance, PolicyRow::powersave};

std::string rowName(PolicyRow row);

struct RowResult
{
    PolicyRow row = PolicyRow::cppcgovBpf;
    sim::Score score;
    // Misses of the jobs whose deadline passed after the first warmUpUs.
    std::uint64_t missesAfterWarmUp = 0;
    double meanPerf = 0; // in effect, time-weighted
    // The plotted stretch, one sample per plotStepUs: requested
    // performance and CPU 0's busy fraction.
    std::vector<double> requested;
    std::vector<double> busy;
};

// The start-up left out of missesAfterWarmUp (the averages filling).
inline constexpr std::uint64_t warmUpUs = 1'000'000;

// The plot's resolution.
inline constexpr std::uint64_t plotStepUs = 200;

// The platform: one CPU, highest 3000, nominal 2800, lowest nonlinear
// 1000, lowest 800, a 50 us transition delay, reference counter at 100.
sim::WorkloadCpu platformCpu();
cppcgov::policies::CpuCaps platformCaps();

// The scenarios, in the order printed.
std::vector<Scenario> scenarios();

// Runs `row` on `scenario` from the start.
RowResult run(const Scenario& scenario, PolicyRow row);

} // namespace cppc::bench
