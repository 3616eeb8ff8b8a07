// SPDX-License-Identifier: Apache-2.0
// A fake cpufreq tree for the tests: each CPU's acpi_cppc capabilities and
// feedback counters, and cpufreq policies with their CPUs, driver,
// available governors, governor, set speed and limits (an all-offline
// policy too), written into a TempTree under sys/devices/system/cpu as
// cppc_cpufreq shows them; and the tree as sysfs would read it back, for
// comparing before and after.
#pragma once

#include "temp_tree.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cppc::test
{

// One CPU's acpi_cppc directory. An unset optional writes no file.
struct FakeCppcCpu
{
    std::uint32_t highest = 0;
    std::uint32_t nominal = 0;
    std::uint32_t lowestNonlinear = 0;
    std::uint32_t lowest = 0;
    std::optional<std::uint32_t> guaranteed = std::nullopt;
    std::optional<std::uint32_t> reference = std::nullopt;
    std::optional<std::uint32_t> lowestFreqMhz = std::nullopt;
    std::optional<std::uint32_t> nominalFreqMhz = std::nullopt;
    // feedback_ctrs: "ref:<reference> del:<delivered>".
    std::uint64_t referenceCount = 0;
    std::uint64_t deliveredCount = 0;
    std::optional<std::uint64_t> wraparoundTime = std::nullopt;
};

// One cpufreq policy. The limits in force (scaling_min_freq and
// scaling_max_freq) default to the hardware's (cpuinfo_*).
struct FakePolicy
{
    unsigned number = 0;
    std::vector<unsigned> cpus; // related_cpus
    bool online = true;         // false: affected_cpus is empty
    std::string driver = "cppc_cpufreq";
    std::vector<std::string> governors; // scaling_available_governors
    std::string governor;
    // What scaling_setspeed reads under userspace; under any other
    // governor it reads "<unsupported>".
    std::uint32_t setspeedKhz = 0;
    std::uint32_t cpuinfoMinKhz = 0;
    std::uint32_t cpuinfoMaxKhz = 0;
    std::optional<std::uint32_t> minKhz = std::nullopt;
    std::optional<std::uint32_t> maxKhz = std::nullopt;
    bool curFreq = false; // scaling_cur_freq, at the maximum in force
    std::optional<std::uint32_t> transitionLatencyNs = std::nullopt;
    bool cpuLinks = false; // cpuN/cpufreq links to the policy
};

class FakeCpufreq
{
  public:
    // Writes into `tree`, which must outlive this object.
    explicit FakeCpufreq(const TempTree& tree) : tree_(tree) {}

    // Writes cpu<cpu>/acpi_cppc.
    void addCpu(unsigned cpu, const FakeCppcCpu& c) const
    {
        const std::string dir =
            std::string(cpuRoot) + "cpu" + std::to_string(cpu) + "/acpi_cppc/";
        const auto line = [](std::uint64_t value) {
            return std::to_string(value) + "\n";
        };
        tree_.write(dir + "highest_perf", line(c.highest));
        tree_.write(dir + "nominal_perf", line(c.nominal));
        tree_.write(dir + "lowest_nonlinear_perf", line(c.lowestNonlinear));
        tree_.write(dir + "lowest_perf", line(c.lowest));
        const auto optional =
            [&](const char* name, const std::optional<std::uint64_t>& value) {
            if (value)
            {
                tree_.write(dir + name, line(*value));
            }
        };
        optional("guaranteed_perf", c.guaranteed);
        optional("reference_perf", c.reference);
        optional("lowest_freq", c.lowestFreqMhz);
        optional("nominal_freq", c.nominalFreqMhz);
        tree_.write(dir + "feedback_ctrs",
                    "ref:" + std::to_string(c.referenceCount) +
                        " del:" + std::to_string(c.deliveredCount) + "\n");
        optional("wraparound_time", c.wraparoundTime);
    }

    // Writes cpufreq/policy<number>, and the CPUs' links to it if asked.
    void addPolicy(const FakePolicy& p) const
    {
        const std::string dir = policyDir(p.number) + "/";
        std::string cpus;
        for (const unsigned cpu : p.cpus)
        {
            cpus += (cpus.empty() ? "" : " ") + std::to_string(cpu);
        }
        std::string governors;
        for (const std::string& g : p.governors)
        {
            governors += g + " ";
        }
        const auto khz = [](std::uint32_t value) {
            return std::to_string(value) + "\n";
        };
        const std::uint32_t maxKhz = p.maxKhz.value_or(p.cpuinfoMaxKhz);
        tree_.write(dir + "related_cpus", cpus + "\n");
        tree_.write(dir + "affected_cpus", (p.online ? cpus : "") + "\n");
        tree_.write(dir + "scaling_driver", p.driver + "\n");
        tree_.write(dir + "scaling_available_governors", governors + "\n");
        tree_.write(dir + "scaling_governor", p.governor + "\n");
        tree_.write(dir + "scaling_setspeed",
                    p.governor == "userspace" ? khz(p.setspeedKhz)
                                              : "<unsupported>\n");
        tree_.write(dir + "cpuinfo_min_freq", khz(p.cpuinfoMinKhz));
        tree_.write(dir + "cpuinfo_max_freq", khz(p.cpuinfoMaxKhz));
        tree_.write(dir + "scaling_min_freq",
                    khz(p.minKhz.value_or(p.cpuinfoMinKhz)));
        tree_.write(dir + "scaling_max_freq", khz(maxKhz));
        if (p.curFreq)
        {
            tree_.write(dir + "scaling_cur_freq", khz(maxKhz));
        }
        if (p.transitionLatencyNs)
        {
            tree_.write(dir + "cpuinfo_transition_latency",
                        khz(*p.transitionLatencyNs));
        }
        if (p.cpuLinks)
        {
            for (const unsigned cpu : p.cpus)
            {
                tree_.symlink(std::string(cpuRoot) + "cpu" +
                                  std::to_string(cpu) + "/cpufreq",
                              "../cpufreq/policy" + std::to_string(p.number));
            }
        }
    }

    // policy<policy>'s directory, relative to the tree.
    static std::string policyDir(unsigned policy)
    {
        return std::string(cpuRoot) + "cpufreq/policy" + std::to_string(policy);
    }

    // policy<policy>'s directory, in full.
    std::filesystem::path policyPath(unsigned policy) const
    {
        return tree_.path() / policyDir(policy);
    }

    // The content of file `name` of policy<policy>.
    std::string policyFile(unsigned policy, const char* name) const
    {
        return tree_.read(policyDir(policy) + "/" + name);
    }

    // Replaces the content of file `name` of policy<policy>.
    void setPolicyFile(unsigned policy, const char* name,
                       const std::string& value) const
    {
        tree_.write(policyDir(policy) + "/" + name, value);
    }

    // Everything under sys as sysfs would show it: scaling_setspeed is
    // computed on read, "<unsupported>" unless the governor is userspace.
    // A plain file keeps whatever was last written, so the kernel's rule
    // is applied before comparing.
    std::map<std::string, std::string> kernelView() const
    {
        std::map<std::string, std::string> s = tree_.snapshot("sys");
        const std::string suffix = "/scaling_setspeed";
        for (auto& [path, content] : s)
        {
            if (path.ends_with(suffix) &&
                s.at(path.substr(0, path.size() - suffix.size()) +
                     "/scaling_governor") != "file userspace\n")
            {
                content = "file <unsupported>\n";
            }
        }
        return s;
    }

  private:
    static constexpr const char* cpuRoot = "sys/devices/system/cpu/";

    const TempTree& tree_;
};

} // namespace cppc::test
