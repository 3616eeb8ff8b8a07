// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/plan_machine.hpp"

#include <array>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace cppcgov::daemon::internal
{
namespace
{

using cppc::CpcEntry;
using policies::Coordination;
using policies::CpuCaps;
using policies::Domain;

constexpr std::array<CpcEntry, 4> capEntries = {
    CpcEntry::highestPerf,
    CpcEntry::nominalPerf,
    CpcEntry::lowestNonlinearPerf,
    CpcEntry::lowestPerf,
};

constexpr std::array<CpcEntry, 1> desiredOnly = {CpcEntry::desiredPerf};
constexpr std::array<CpcEntry, 3> allControls = {
    CpcEntry::desiredPerf, CpcEntry::minPerf, CpcEntry::maxPerf};

} // namespace

CpuCaps capsOf(const cppc::CpcDescriptor& cpu, const CapRead& read)
{
    std::array<std::uint32_t, capEntries.size()> values{};
    for (std::size_t i = 0; i < capEntries.size(); ++i)
    {
        const CpcEntry e = capEntries[i];
        const cppc::CpcValue& v = cpu.entry(e);
        std::optional<std::uint64_t> value;
        if (v.kind == cppc::CpcValue::Kind::integer)
        {
            value = v.integer;
        }
        else if (v.isLiveRegister())
        {
            value = read(e, v.reg);
        }
        if (!value)
        {
            throw std::runtime_error(
                cpu.label() + ": " + std::string(cppc::entryName(e)) +
                " is neither an Integer nor a register that can be read");
        }
        if (*value > std::numeric_limits<std::uint32_t>::max())
        {
            throw std::runtime_error(
                cpu.label() + ": " + std::string(cppc::entryName(e)) + " is " +
                std::to_string(*value) + ", above 32 bits");
        }
        values[i] = static_cast<std::uint32_t>(*value);
    }
    CpuCaps caps{values[0], values[1], values[2], values[3], 0};
    if (caps.highest == 0 || caps.lowest > caps.highest)
    {
        throw std::runtime_error(
            cpu.label() + ": unusable performance levels (highest " +
            std::to_string(caps.highest) + ", lowest " +
            std::to_string(caps.lowest) + ")");
    }
    // The frequencies are optional (_CPC revision 3, in MHz): 0 when
    // absent, unreadable, or not a whole kHz figure in 32 bits.
    const auto khz = [&](CpcEntry e) -> std::uint32_t {
        const cppc::CpcValue& v = cpu.entry(e);
        std::optional<std::uint64_t> mhz;
        if (v.kind == cppc::CpcValue::Kind::integer)
        {
            mhz = v.integer;
        }
        else if (v.isLiveRegister())
        {
            mhz = read(e, v.reg);
        }
        constexpr std::uint64_t maxMhz =
            std::numeric_limits<std::uint32_t>::max() / 1000;
        return mhz && *mhz <= maxMhz ? static_cast<std::uint32_t>(*mhz * 1000)
                                     : 0;
    };
    caps.lowestKhz = khz(CpcEntry::lowestFreq);
    caps.nominalKhz = khz(CpcEntry::nominalFreq);
    return caps;
}

policies::Topology psdTopology(const cppc::AccessPlan& plan,
                               std::vector<CpuCaps> caps)
{
    std::vector<Domain> domains;
    std::map<std::uint32_t, std::size_t> byNumber;
    for (std::uint32_t cpu = 0; cpu < plan.cpuCount(); ++cpu)
    {
        const cppc::CpcDescriptor* d = plan.descriptor(cpu);
        const std::optional<cppc::PsdInfo> psd =
            d != nullptr ? d->psd() : std::nullopt;
        if (!psd || psd->independent)
        {
            domains.push_back({{cpu}, Coordination::perCpu});
            continue;
        }
        const bool hardware =
            psd->coordination ==
            static_cast<std::uint8_t>(cppc::Coordination::hwAll);
        const auto [it, fresh] =
            byNumber.try_emplace(psd->domain, domains.size());
        if (fresh)
        {
            domains.push_back(
                {{}, hardware ? Coordination::perCpu : Coordination::shared});
        }
        domains[it->second].cpus.push_back(cpu);
    }
    return policies::makeTopology(std::move(caps), std::move(domains));
}

std::optional<std::uint32_t> psdDomainOf(const cppc::AccessPlan& plan,
                                         std::uint32_t cpu)
{
    const cppc::CpcDescriptor* d =
        cpu < plan.cpuCount() ? plan.descriptor(cpu) : nullptr;
    if (d == nullptr || !d->psd())
    {
        return std::nullopt;
    }
    return d->psd()->domain;
}

void requireNoRefusal(const cppc::AccessPlan& plan)
{
    for (const cppc::Diagnostic& diag : plan.diagnostics())
    {
        if (diag.severity == cppc::Severity::error)
        {
            throw std::runtime_error(diag.message);
        }
    }
}

Controls planControls(bool minMax, bool epp, bool autonomous,
                      bool activityWindow) noexcept
{
    std::array<Control, 6> c{};
    std::size_t n = 0;
    c[n++] = Control::desired;
    if (minMax)
    {
        c[n++] = Control::min;
        c[n++] = Control::max;
    }
    if (epp)
    {
        c[n++] = Control::epp;
    }
    if (autonomous)
    {
        c[n++] = Control::autonomous;
    }
    if (activityWindow)
    {
        c[n++] = Control::activityWindow;
    }
    switch (n)
    {
        case 1:
            return {c[0]};
        case 2:
            return {c[0], c[1]};
        case 3:
            return {c[0], c[1], c[2]};
        case 4:
            return {c[0], c[1], c[2], c[3]};
        case 5:
            return {c[0], c[1], c[2], c[3], c[4]};
        default:
            return {c[0], c[1], c[2], c[3], c[4], c[5]};
    }
}

RequestWrites::RequestWrites(const cppc::AccessPlan& plan, bool minMax) :
    groups_(plan, minMax ? std::span<const CpcEntry>(allControls)
                         : std::span<const CpcEntry>(desiredOnly)),
    minMax_(minMax), last_(groups_.groups())
{}

} // namespace cppcgov::daemon::internal
