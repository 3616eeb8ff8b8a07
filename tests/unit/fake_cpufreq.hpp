// SPDX-License-Identifier: Apache-2.0
// A fake cpufreq tree for the tests: each CPU's acpi_cppc capabilities and
// feedback counters, and cpufreq policies with their CPUs, driver,
// available governors, governor, set speed and limits (an all-offline
// policy too), and the CPPC knobs of Linux 6.16 (auto_select,
// auto_act_window, energy_performance_preference_val), written into a
// TempTree under sys/devices/system/cpu as cppc_cpufreq shows them; the
// tree as sysfs would read it back, for comparing before and after; and
// FakeKnobIo, which stores the knobs as the kernel does.
#pragma once

#include "lib/backend/attribute_io.hpp"
#include "temp_tree.hpp"

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
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
    // The knobs' contents ("1\n"; "\n" as the kernel shows a register the
    // firmware does not have); unset: no file (a kernel before 6.16).
    std::optional<std::string> autoSelect = std::nullopt;
    std::optional<std::string> autoActWindow = std::nullopt;
    std::optional<std::string> eppVal = std::nullopt;
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
        for (const auto& [name, text] :
             {std::pair{"auto_select", &p.autoSelect},
              std::pair{"auto_act_window", &p.autoActWindow},
              std::pair{"energy_performance_preference_val", &p.eppVal}})
        {
            if (*text)
            {
                tree_.write(dir + name, **text);
            }
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

// The knobs' store() as cppc_cpufreq has it, where a plain file would
// take anything:
//   - auto_act_window stores what the register can hold: a significand
//     of at most 127 times a power of ten (1234 reads back as 1230, 128
//     as 127), and refuses more than 1270000000 with EINVAL;
//   - auto_select takes 0 or 1, and energy_performance_preference_val 0
//     to 255; anything else is EINVAL;
//   - perf_limited (2026 trees) holds the sticky PerformanceLimited bits
//     the platform sets (a test sets them in the file); bits written are
//     cleared, the others stay; more than 3 is EINVAL;
//   - a file can be made to answer an errno to every write (EOPNOTSUPP:
//     firmware without the register, or one that refuses it, as NVIDIA
//     Grace does auto_select) or to every read (EIO: a PCC channel that
//     failed); the file keeps what it held.
// Writes that the kernel took are counted per file. Every other file is
// read and written as it is. Thread-safe, as the workers need.
class FakeKnobIo final : public backend::AttributeIo
{
  public:
    void refuseWrites(const std::filesystem::path& file, int error)
    {
        const std::lock_guard lock(mutex_);
        writeErrors_[file.lexically_normal()] = error;
    }
    void failReads(const std::filesystem::path& file, int error)
    {
        const std::lock_guard lock(mutex_);
        readErrors_[file.lexically_normal()] = error;
    }
    // Back to answering as the kernel does.
    void heal(const std::filesystem::path& file)
    {
        const std::lock_guard lock(mutex_);
        writeErrors_.erase(file.lexically_normal());
        readErrors_.erase(file.lexically_normal());
    }
    // How many writes of `file` landed.
    std::size_t writes(const std::filesystem::path& file) const
    {
        const std::lock_guard lock(mutex_);
        const auto it = writes_.find(file.lexically_normal());
        return it == writes_.end() ? 0 : it->second;
    }

    std::error_code read(const std::filesystem::path& file,
                         std::string& out) const override
    {
        {
            const std::lock_guard lock(mutex_);
            if (const auto it = readErrors_.find(file.lexically_normal());
                it != readErrors_.end())
            {
                return {it->second, std::system_category()};
            }
        }
        return AttributeIo::read(file, out);
    }

    std::error_code write(const std::filesystem::path& file,
                          std::string_view value) const noexcept override
    {
        try
        {
            const std::lock_guard lock(mutex_);
            const std::filesystem::path key = file.lexically_normal();
            if (const auto it = writeErrors_.find(key);
                it != writeErrors_.end())
            {
                return {it->second, std::system_category()};
            }
            const std::string name = key.filename().string();
            std::string stored(value);
            if (name == "perf_limited")
            {
                const std::optional<std::uint64_t> v = number(value);
                std::string text;
                if (!v || *v > 3 || AttributeIo::read(file, text))
                {
                    return {EINVAL, std::system_category()};
                }
                stored = std::to_string(number(text).value_or(0) & ~*v) + "\n";
            }
            else if (name == "auto_select" || name == "auto_act_window" ||
                     name == "energy_performance_preference_val")
            {
                const std::optional<std::uint64_t> v = number(value);
                const std::uint64_t max =
                    name == "auto_select"       ? 1
                    : name == "auto_act_window" ? 1'270'000'000
                                                : 255;
                if (!v || *v > max)
                {
                    return {EINVAL, std::system_category()};
                }
                stored =
                    std::to_string(
                        name == "auto_act_window" ? representable(*v) : *v) +
                    "\n";
            }
            if (const std::error_code ec = AttributeIo::write(file, stored))
            {
                return ec;
            }
            ++writes_[key];
            return {};
        }
        catch (...)
        {
            return {ENOMEM, std::system_category()};
        }
    }

    // The activity window the register holds for `us`.
    static std::uint64_t representable(std::uint64_t us) noexcept
    {
        std::uint64_t scale = 1;
        while (us > 129)
        {
            us /= 10;
            scale *= 10;
        }
        return (us > 127 ? 127 : us) * scale;
    }

  private:
    static std::optional<std::uint64_t> number(std::string_view text) noexcept
    {
        if (!text.empty() && text.back() == '\n')
        {
            text.remove_suffix(1);
        }
        std::uint64_t v = 0;
        const auto [end, ec] =
            std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() ||
            end != text.data() + text.size())
        {
            return std::nullopt;
        }
        return v;
    }

    mutable std::mutex mutex_;
    std::map<std::filesystem::path, int> writeErrors_;
    std::map<std::filesystem::path, int> readErrors_;
    mutable std::map<std::filesystem::path, std::size_t> writes_;
};

} // namespace cppc::test
