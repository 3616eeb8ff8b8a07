// What the machine tests share: a fake /proc/stat, the message a start-up
// throws, requests as the governor makes them, and a fake kernel: a sysfs
// tree with two cpufreq policies driven by cppc_cpufreq.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machine.hpp"
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
    return {cpu, std::min(lowest, desired), desired, std::max(highest, desired),
            std::nullopt};
}

// The kernel machine's fake sysfs tree:
//   policy0  CPUs 0-3 (one shared policy), Orion O6 big-core capabilities,
//            schedutil, transition latency 100 us
//   policy4  CPU 4 alone, 255/200/50/10 at 1000-3000 MHz, userspace

inline void writeCaps(const TempTree& t, unsigned cpu,
                      std::array<std::uint32_t, 4> perf, const char* lowestFreq,
                      const char* nominalFreq)
{
    const std::string dir =
        "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/acpi_cppc/";
    const std::array<const char*, 4> names = {
        "highest_perf", "nominal_perf", "lowest_nonlinear_perf", "lowest_perf"};
    for (std::size_t i = 0; i < names.size(); ++i)
    {
        t.write(dir + names[i], std::to_string(perf[i]) + "\n");
    }
    t.write(dir + "lowest_freq", std::string(lowestFreq) + "\n");
    t.write(dir + "nominal_freq", std::string(nominalFreq) + "\n");
    t.write(dir + "feedback_ctrs", "ref:1000 del:2000\n");
}

inline void writePolicy(const TempTree& t, unsigned number, const char* cpus,
                        const char* governor, const char* setspeed,
                        std::uint32_t minKhz, std::uint32_t maxKhz,
                        const char* latencyNs)
{
    const std::string dir =
        "sys/devices/system/cpu/cpufreq/policy" + std::to_string(number) + "/";
    t.write(dir + "related_cpus", std::string(cpus) + "\n");
    t.write(dir + "affected_cpus", std::string(cpus) + "\n");
    t.write(dir + "scaling_driver", "cppc_cpufreq\n");
    t.write(dir + "scaling_available_governors",
            "ondemand userspace performance schedutil \n");
    t.write(dir + "scaling_governor", std::string(governor) + "\n");
    t.write(dir + "scaling_setspeed", std::string(setspeed) + "\n");
    t.write(dir + "cpuinfo_min_freq", std::to_string(minKhz) + "\n");
    t.write(dir + "cpuinfo_max_freq", std::to_string(maxKhz) + "\n");
    t.write(dir + "scaling_min_freq", std::to_string(minKhz) + "\n");
    t.write(dir + "scaling_max_freq", std::to_string(maxKhz) + "\n");
    t.write(dir + "cpuinfo_transition_latency", std::string(latencyNs) + "\n");
}

struct FakeKernel
{
    FakeKernel()
    {
        for (unsigned cpu = 0; cpu < 4; ++cpu)
        {
            writeCaps(sys, cpu, {0x2000, 0x2000, 0xA3D, 0xA3D}, "800", "2500");
        }
        writeCaps(sys, 4, {255, 200, 50, 10}, "1000", "3000");
        writePolicy(sys, 0, "0 1 2 3", "schedutil", "<unsupported>", 800000,
                    2500000, "100000");
        writePolicy(sys, 4, "4", "userspace", "2000000", 1000000, 3000000,
                    "4294967295");
        writeProcStat(sys, {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}});
    }

    BackendConfig config() const
    {
        BackendConfig c;
        c.type = BackendKind::kernel;
        return c;
    }
    std::filesystem::path stateDir() const
    {
        return state.path();
    }
    std::string policyFile(unsigned policy, const char* name) const
    {
        return sys.read("sys/devices/system/cpu/cpufreq/policy" +
                        std::to_string(policy) + "/" + name);
    }

    // The tree as sysfs shows it: scaling_setspeed reads "<unsupported>"
    // unless the governor is userspace, whatever a plain file last held.
    std::map<std::string, std::string> kernelView() const
    {
        std::map<std::string, std::string> s = sys.snapshot("sys");
        for (auto& [path, content] : s)
        {
            const std::string suffix = "scaling_setspeed";
            if (path.ends_with(suffix) &&
                s.at(path.substr(0, path.size() - suffix.size()) +
                     "scaling_governor") != "file userspace\n")
            {
                content = "file <unsupported>\n";
            }
        }
        return s;
    }

    TempTree sys;
    TempTree state;
};

} // namespace cppcgov::daemon::test
