// SPDX-License-Identifier: Apache-2.0
#include "cpu_rows.hpp"

#include "lib/cpu_list.hpp"
#include "status_command.hpp"

#include <algorithm>
#include <map>

namespace cppcgov::tools
{
namespace
{

// The info of each CPU by number.
std::map<std::uint32_t, const CpuInfo*> infoByCpu(const GovernorSnapshot& s)
{
    std::map<std::uint32_t, const CpuInfo*> byCpu;
    for (const CpuInfo& i : s.info)
    {
        byCpu.emplace(i.cpu, &i);
    }
    return byCpu;
}

std::string cpuListText(const std::vector<std::uint32_t>& cpus)
{
    cppc::CpuSet set;
    for (const std::uint32_t cpu : cpus)
    {
        if (cpu < cppc::maxCpus)
        {
            set.set(cpu);
        }
    }
    return cppc::formatCpuList(set);
}

} // namespace

std::string formatMhz(const cppc::FreqLine& line, std::uint32_t perf)
{
    if (perf == 0)
    {
        return "-";
    }
    const std::optional<std::uint32_t> khz = line.khz(perf);
    return khz ? std::to_string((*khz + 500) / 1000) : "-";
}

std::string joinHandles(const std::vector<CpuHandle>& handles)
{
    if (handles.empty())
    {
        return "-";
    }
    std::string s;
    for (const CpuHandle& h : handles)
    {
        s += (s.empty() ? "" : ",") + std::to_string(h.handle);
    }
    return s;
}

std::vector<CpuRow> cpuRows(const GovernorSnapshot& s,
                            std::span<const std::uint32_t> only)
{
    const auto info = infoByCpu(s);
    std::vector<CpuRow> rows;
    for (const CpuState& c : s.cpus)
    {
        if (!only.empty() &&
            !std::binary_search(only.begin(), only.end(), c.cpu))
        {
            continue;
        }
        const auto it = info.find(c.cpu);
        const CpuInfo* i = it == info.end() ? nullptr : it->second;
        const cppc::FreqLine line = i ? i->freq() : cppc::FreqLine{};
        CpuRow r;
        r.cpu = c.cpu;
        r.domain = i ? i->domain : c.cpu;
        r.util = c.util;
        r.handleCount = c.handles.size();
        r.degraded = !c.degraded.empty();
        r.degradedWhy = c.degraded;
        r.domainText = i ? std::to_string(i->domain) : "-";
        r.utilText = std::to_string(c.util);
        r.policy = i && !i->policy.empty() ? i->policy : "-";
        r.clamp = formatClamp(c.clampMin, c.clampMax);
        r.requested = formatPerf(c.requestedPerf);
        r.requestedMhz = formatMhz(line, c.requestedPerf);
        r.delivered = formatPerf(c.deliveredPerf);
        r.deliveredMhz = formatMhz(line, c.deliveredPerf);
        r.reason = r.degraded ? "degraded" : c.reason;
        r.latency = formatLatency(c.latencyLimitUs);
        r.handles = joinHandles(c.handles);
        rows.push_back(std::move(r));
    }
    return rows;
}

std::string degradedLine(const CpuRow& r)
{
    return "CPU " + std::to_string(r.cpu) + " degraded: " + r.degradedWhy;
}

std::string policySummary(const GovernorSnapshot& s)
{
    const std::string& fallback = s.daemon.policy;
    // The CPUs of each policy other than the default.
    std::map<std::string, std::vector<std::uint32_t>> differ;
    std::vector<std::uint32_t> all;
    for (const CpuInfo& i : s.info)
    {
        if (i.policy != fallback)
        {
            differ[i.policy].push_back(i.cpu);
            all.push_back(i.cpu);
        }
    }
    if (all.empty())
    {
        return fallback;
    }
    std::string text =
        fallback + " (the default; " + (all.size() == 1 ? "CPU " : "CPUs ") +
        cpuListText(all) + (all.size() == 1 ? " differs:" : " differ:");
    bool first = true;
    for (const auto& [policy, cpus] : differ)
    {
        text += (first ? " " : ", ") + cpuListText(cpus) + " " + policy;
        first = false;
    }
    return text + ")";
}

} // namespace cppcgov::tools
