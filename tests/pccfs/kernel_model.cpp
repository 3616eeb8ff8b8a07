// SPDX-License-Identifier: Apache-2.0
#include "kernel_model.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

namespace pccfs
{
namespace
{

constexpr std::uint32_t cpuinfoMinKhz = lowestPerf * khzPerPerf;
constexpr std::uint32_t cpuinfoMaxKhz = nominalPerf * khzPerPerf;
constexpr std::string_view governors =
    "conservative ondemand userspace powersave performance schedutil";
// PM_QOS_RESUME_LATENCY_NO_CONSTRAINT - 1: the largest latency accepted.
constexpr std::uint64_t maxLatencyUs = 2147483646;

// A decimal number as the kernel's kstrtouint takes it: digits, one
// optional trailing newline.
std::optional<std::uint64_t> decimal(std::string_view text)
{
    if (!text.empty() && text.back() == '\n')
    {
        text.remove_suffix(1);
    }
    std::uint64_t v = 0;
    const auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    {
        return std::nullopt;
    }
    return v;
}

std::string_view word(std::string_view text)
{
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    {
        text.remove_suffix(1);
    }
    return text;
}

bool listedGovernor(std::string_view name)
{
    std::size_t pos = 0;
    while (pos < governors.size())
    {
        const std::size_t end =
            std::min(governors.find(' ', pos), governors.size());
        if (governors.substr(pos, end - pos) == name)
        {
            return true;
        }
        pos = end + 1;
    }
    return false;
}

std::string line(std::uint64_t v)
{
    return std::to_string(v) + '\n';
}

std::error_code invalid()
{
    return std::make_error_code(std::errc::invalid_argument);
}

} // namespace

std::uint32_t KernelModel::Policy::minKhz() const noexcept
{
    return std::min(minRequest, maxRequest);
}

KernelModel::KernelModel(unsigned cpus, unsigned cpusPerPolicy,
                         std::uint64_t transitionLatencyNs,
                         Clock::time_point now) :
    transitionLatencyNs_(transitionLatencyNs),
    cpus_(cpus), policies_(cpus)
{
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
    {
        const unsigned number = cpu - cpu % cpusPerPolicy;
        Policy& p = policies_[number];
        p.cpus.push_back(cpu);
        p.minRequest = cpuinfoMinKhz;
        p.maxRequest = cpuinfoMaxKhz;
        p.curKhz = cpuinfoMaxKhz;
        Cpu& c = cpus_[cpu];
        c.policy = number;
        // Different starting counts per CPU, as on a machine that has run.
        c.counters = {1000ULL * cpu, 2000ULL * cpu, now,
                      cpuinfoMaxKhz / khzPerPerf};
    }
}

const KernelModel::Policy& KernelModel::policy(unsigned index) const
{
    if (index >= policies_.size() || policies_[index].cpus.empty())
    {
        throw std::out_of_range("no policy" + std::to_string(index));
    }
    return policies_[index];
}

KernelModel::Policy& KernelModel::policy(unsigned index)
{
    return const_cast<Policy&>(std::as_const(*this).policy(index));
}

std::vector<unsigned> KernelModel::cpusOf(Role role, unsigned index) const
{
    if (isPolicyRole(role))
    {
        return policy(index).cpus;
    }
    if (role == Role::control || role == Role::stats)
    {
        return {};
    }
    return {index};
}

KernelModel::Counters KernelModel::advanced(const Counters& c,
                                            Clock::time_point now) noexcept
{
    const auto ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.since)
            .count());
    return {c.reference + ns * referenceCountsPerUs / 1000,
            c.delivered +
                ns * referenceCountsPerUs * c.perf / (1000ULL * nominalPerf),
            now, c.perf};
}

std::string KernelModel::counters(unsigned cpu, Clock::time_point now) const
{
    const Counters c = advanced(cpus_.at(cpu).counters, now);
    return "ref:" + std::to_string(c.reference) +
           " del:" + std::to_string(c.delivered) + '\n';
}

std::string KernelModel::show(Role role, unsigned index,
                              Clock::time_point now) const
{
    switch (role)
    {
        case Role::highestPerf:
            return line(highestPerf);
        case Role::nominalPerf:
        case Role::guaranteedPerf:
        case Role::referencePerf:
            return line(nominalPerf);
        case Role::lowestNonlinearPerf:
            return line(lowestNonlinearPerf);
        case Role::lowestPerf:
            return line(lowestPerf);
        case Role::lowestFreq:
            return line(lowestFreqMhz);
        case Role::nominalFreq:
            return line(nominalFreqMhz);
        case Role::feedbackCtrs:
            return counters(index, now);
        case Role::wraparoundTime:
            return line(std::numeric_limits<std::uint64_t>::max());
        case Role::resumeLatency:
            return cpus_.at(index).latency + '\n';
        default:
            break;
    }
    const Policy& p = policy(index);
    switch (role)
    {
        case Role::affectedCpus:
        case Role::relatedCpus:
        {
            std::string text;
            for (const unsigned cpu : p.cpus)
            {
                text += (text.empty() ? "" : " ") + std::to_string(cpu);
            }
            return text + '\n';
        }
        case Role::scalingDriver:
            return "cppc_cpufreq\n";
        case Role::availableGovernors:
            return std::string(governors) + " \n";
        case Role::governor:
            return p.governor + '\n';
        case Role::setspeed:
            return p.governor == "userspace" ? line(p.curKhz)
                                             : "<unsupported>\n";
        case Role::cpuinfoMinFreq:
            return line(cpuinfoMinKhz);
        case Role::cpuinfoMaxFreq:
            return line(cpuinfoMaxKhz);
        case Role::transitionLatency:
            return line(transitionLatencyNs_);
        case Role::scalingMinFreq:
            return line(p.minKhz());
        case Role::scalingMaxFreq:
            return line(p.maxRequest);
        case Role::scalingCurFreq:
        case Role::cpuinfoCurFreq:
            return line(p.curKhz);
        default:
            throw std::logic_error("not a model file");
    }
}

std::error_code KernelModel::check(Role role, unsigned index,
                                   std::string_view text) const
{
    switch (role)
    {
        case Role::resumeLatency:
        {
            const auto v = decimal(text);
            return word(text) == "n/a" || (v && *v <= maxLatencyUs)
                       ? std::error_code{}
                       : invalid();
        }
        case Role::governor:
            return listedGovernor(word(text)) ? std::error_code{} : invalid();
        case Role::setspeed:
            if (policy(index).governor != "userspace")
            {
                return invalid();
            }
            [[fallthrough]];
        case Role::scalingMinFreq:
        case Role::scalingMaxFreq:
        {
            const auto v = decimal(text);
            return v && *v <= std::numeric_limits<std::uint32_t>::max()
                       ? std::error_code{}
                       : invalid();
        }
        default:
            return std::make_error_code(std::errc::permission_denied);
    }
}

void KernelModel::setCurrent(Policy& p, std::uint32_t khz,
                             Clock::time_point now)
{
    p.curKhz = std::clamp(khz, p.minKhz(), p.maxRequest);
    for (const unsigned cpu : p.cpus)
    {
        Counters& c = cpus_[cpu].counters;
        c = advanced(c, now);
        c.perf = p.curKhz / khzPerPerf;
    }
}

void KernelModel::store(Role role, unsigned index, std::string_view text,
                        Clock::time_point now)
{
    if (role == Role::resumeLatency)
    {
        const auto v = decimal(text);
        cpus_.at(index).latency = v ? std::to_string(*v) : "n/a";
        return;
    }
    Policy& p = policy(index);
    const auto khz = [&text] {
        return static_cast<std::uint32_t>(decimal(text).value_or(0));
    };
    switch (role)
    {
        case Role::governor:
            p.governor = word(text);
            break;
        case Role::setspeed:
            setCurrent(p, khz(), now);
            break;
        case Role::scalingMinFreq:
            p.minRequest = std::clamp(khz(), cpuinfoMinKhz, cpuinfoMaxKhz);
            setCurrent(p, p.curKhz, now);
            break;
        case Role::scalingMaxFreq:
            p.maxRequest = std::clamp(khz(), cpuinfoMinKhz, cpuinfoMaxKhz);
            setCurrent(p, p.curKhz, now);
            break;
        default:
            throw std::logic_error("not a writable file");
    }
}

void KernelModel::countWrite(unsigned index) noexcept
{
    ++policies_[index].writes;
}

std::string KernelModel::policyStats() const
{
    std::string text;
    for (std::size_t n = 0; n < policies_.size(); ++n)
    {
        const Policy& p = policies_[n];
        if (p.cpus.empty())
        {
            continue;
        }
        const std::string name = "policy" + std::to_string(n) + '.';
        text += name + "setspeed_khz " + line(p.curKhz);
        text += name + "writes " + line(p.writes);
        text += name + "governor " + p.governor + '\n';
        text += name + "min_khz " + line(p.minKhz());
        text += name + "max_khz " + line(p.maxRequest);
    }
    return text;
}

} // namespace pccfs
