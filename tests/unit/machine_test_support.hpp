// SPDX-License-Identifier: Apache-2.0
// What the machine tests share: a fake /proc/stat, the message a start-up
// throws, requests as the governor makes them, and a fake kernel: a sysfs
// tree with two cpufreq policies driven by cppc_cpufreq.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machine.hpp"
#include "fake_cpufreq.hpp"
#include "temp_tree.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cppcgov::daemon::test
{

using cppc::test::TempTree;

// <root>/proc/stat with one line per CPU: (busy, idle) ticks.
inline void writeProcStat(
    const TempTree& t,
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& cpus)
{
    std::string text = "cpu  0 0 0 0 0 0 0 0 0 0\n";
    for (std::size_t cpu = 0; cpu < cpus.size(); ++cpu)
    {
        text += "cpu" + std::to_string(cpu) + " " +
                std::to_string(cpus[cpu].first) + " 0 0 " +
                std::to_string(cpus[cpu].second) + " 0 0 0 0 0 0\n";
    }
    t.write("proc/stat", text + "intr 0\nctxt 0\n");
}

// The message `start` throws, or "no error".
inline std::string errorOf(const std::function<void()>& start)
{
    try
    {
        start();
    }
    catch (const std::exception& e)
    {
        return e.what();
    }
    return "no error";
}

// The simulator's configuration for `layout` (0 CPUs: the layout's own
// count).
inline SimulatorConfig sim(const char* layout, std::uint32_t cpus = 0)
{
    SimulatorConfig c;
    c.layout = layout;
    c.cpus = cpus;
    return c;
}

// A request for `desired` on `cpu` as the governor makes it: min and max
// at the CPU's lowest and highest, widened to take in `desired` where it
// lies outside them so that the machine sees it as asked.
inline CppcRequest desiredOf(const Machine& m, std::uint32_t cpu,
                             std::uint32_t desired)
{
    const auto& caps = m.topology().cpus;
    const std::uint32_t lowest = cpu < caps.size() ? caps[cpu].lowest : 0;
    const std::uint32_t highest = cpu < caps.size() ? caps[cpu].highest : 0;
    return {cpu,          std::min(lowest, desired),
            desired,      std::max(highest, desired),
            std::nullopt, false,
            std::nullopt};
}

// The kernel machine's fake sysfs tree, with a directory for its state:
//   policy0  CPUs 0-3 (one shared policy), Orion O6 big-core capabilities,
//            schedutil, transition latency 100 us
//   policy4  CPU 4 alone, 255/200/50/10 at 1000-3000 MHz, userspace
struct FakeKernel
{
    FakeKernel()
    {
        const auto addCpu = [this](unsigned cpu, cppc::test::FakeCppcCpu c) {
            c.referenceCount = 1000;
            c.deliveredCount = 2000;
            cpufreq.addCpu(cpu, c);
        };
        for (unsigned cpu = 0; cpu < 4; ++cpu)
        {
            addCpu(cpu, {.highest = 0x2000,
                         .nominal = 0x2000,
                         .lowestNonlinear = 0xA3D,
                         .lowest = 0xA3D,
                         .lowestFreqMhz = 800,
                         .nominalFreqMhz = 2500});
        }
        addCpu(4, {.highest = 255,
                   .nominal = 200,
                   .lowestNonlinear = 50,
                   .lowest = 10,
                   .lowestFreqMhz = 1000,
                   .nominalFreqMhz = 3000});
        const std::vector<std::string> governors = {"ondemand", "userspace",
                                                    "performance", "schedutil"};
        cpufreq.addPolicy(
            {.number = 0,
             .cpus = {0, 1, 2, 3},
             .governors = governors,
             .governor = "schedutil",
             .cpuinfoMinKhz = 800000,
             .cpuinfoMaxKhz = 2500000,
             .transitionLatencyNs = 100000});
        cpufreq.addPolicy(
            {.number = 4,
             .cpus = {4},
             .governors = governors,
             .governor = "userspace",
             .setspeedKhz = 2000000,
             .cpuinfoMinKhz = 1000000,
             .cpuinfoMaxKhz = 3000000,
             .transitionLatencyNs = 4294967295U});
        writeProcStat(sys, {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}});
    }

    BackendConfig config() const
    {
        BackendConfig c;
        c.type = BackendKind::kernel;
        // Every access on the test's thread, so that a write has landed
        // when apply() returns; kernel_access_test.cpp drives the workers.
        c.access.threads = 0;
        return c;
    }
    std::filesystem::path stateDir() const
    {
        return state.path();
    }
    std::string policyFile(unsigned policy, const char* name) const
    {
        return cpufreq.policyFile(policy, name);
    }
    std::map<std::string, std::string> kernelView() const
    {
        return cpufreq.kernelView();
    }

    TempTree sys;
    TempTree state;
    cppc::test::FakeCpufreq cpufreq{sys};
};

} // namespace cppcgov::daemon::test
