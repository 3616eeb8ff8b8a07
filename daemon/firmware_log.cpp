// SPDX-License-Identifier: Apache-2.0
#include "firmware_log.hpp"

#include "lib/cpu_list.hpp"

#include <algorithm>

namespace cppcgov::daemon
{

FirmwareLog::FirmwareLog(const policies::Topology& topology,
                         std::uint64_t intervalUs) :
    domains_(topology.domains.size()),
    intervalUs_(intervalUs)
{
    for (std::size_t d = 0; d < domains_.size(); ++d)
    {
        cppc::CpuSet cpus;
        for (const std::uint32_t cpu : topology.domains[d].cpus)
        {
            if (cpu < cpus.size())
            {
                cpus.set(cpu);
            }
        }
        domains_[d].label =
            (cpus.count() == 1 ? "CPU " : "CPUs ") + cppc::formatCpuList(cpus);
    }
}

bool FirmwareLog::due(const FirmwareWatch& watch,
                      std::uint64_t nowUs) const noexcept
{
    return watch.changes() != changes_ || (recheckUs_ && nowUs >= *recheckUs_);
}

std::vector<FirmwareLogLine> FirmwareLog::update(const FirmwareWatch& watch,
                                                 std::uint64_t nowUs)
{
    changes_ = watch.changes();
    recheckUs_.reset();
    std::vector<FirmwareLogLine> lines;
    for (std::size_t d = 0; d < domains_.size(); ++d)
    {
        Domain& domain = domains_[d];
        const std::string_view now = watch.finding(d);
        if (now == domain.logged)
        {
            continue;
        }
        if (!now.empty() && domain.atUs && nowUs < *domain.atUs + intervalUs_)
        {
            ++domain.unlogged;
            const std::uint64_t again = *domain.atUs + intervalUs_;
            recheckUs_ = std::min(recheckUs_.value_or(again), again);
            continue;
        }
        const std::string since =
            domain.unlogged == 0
                ? std::string()
                : " (changed " + std::to_string(domain.unlogged) +
                      " more times since the last line, not logged: at most "
                      "one line per domain every " +
                      std::to_string(intervalUs_ / 1'000'000) + " s)";
        if (now.empty())
        {
            lines.push_back({false, domain.label +
                                        ": the firmware checks find nothing "
                                        "wrong any more" +
                                        since});
        }
        else
        {
            lines.push_back({true, domain.label + ": " + std::string(now) +
                                       "; shown as degraded, requests go on "
                                       "unchanged" +
                                       since});
        }
        domain.logged = now;
        domain.atUs = nowUs;
        domain.unlogged = 0;
    }
    return lines;
}

} // namespace cppcgov::daemon
