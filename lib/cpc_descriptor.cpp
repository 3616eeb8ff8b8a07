// SPDX-License-Identifier: Apache-2.0
#include "cpc_descriptor.hpp"

#include "text.hpp"

namespace cppc
{
namespace
{

constexpr std::uint64_t v2Entries = 21;
constexpr std::uint64_t v3Entries = 23;

constexpr std::array<std::string_view, cpcEntryCount> entryNames = {
    "HighestPerformance",
    "NominalPerformance",
    "LowestNonlinearPerformance",
    "LowestPerformance",
    "GuaranteedPerformance",
    "DesiredPerformance",
    "MinimumPerformance",
    "MaximumPerformance",
    "PerformanceReductionTolerance",
    "TimeWindow",
    "CounterWraparoundTime",
    "ReferencePerformanceCounter",
    "DeliveredPerformanceCounter",
    "PerformanceLimited",
    "CPPCEnable",
    "AutonomousSelectionEnable",
    "AutonomousActivityWindow",
    "EnergyPerformancePreference",
    "ReferencePerformance",
    "LowestFrequency",
    "NominalFrequency",
};

} // namespace

std::string_view entryName(CpcEntry entry) noexcept
{
    auto i = static_cast<std::size_t>(entry);
    return i < entryNames.size() ? entryNames[i] : "unknown";
}

CpcDescriptor::CpcDescriptor(CpcSource source) :
    cpu_(source.cpu), uid_(source.uid), path_(std::move(source.path)),
    revision_(0), psd_(source.psd)
{
    const std::uint64_t n = source.numEntries;
    const std::uint64_t rev = source.revision;
    auto fail = [this](const std::string& why) {
        return DescriptorError(label() + ": _CPC " + why);
    };
    if (rev < 2)
    {
        throw fail("revision " + std::to_string(rev) + " is not supported");
    }
    if ((rev == 2 && n != v2Entries) || (rev == 3 && n != v3Entries) ||
        (rev > 3 && n <= v3Entries))
    {
        throw fail("NumEntries " + std::to_string(n) +
                   " does not match revision " + std::to_string(rev));
    }
    // Newer revisions are read as revision 3: only the first 23 entries.
    const std::uint64_t used = rev > 3 ? v3Entries : n;
    revision_ = rev > 3 ? 3U : static_cast<unsigned>(rev);
    if (source.entries.size() + 2 < used)
    {
        throw fail("has " + std::to_string(source.entries.size() + 2) +
                   " elements, NumEntries says " + std::to_string(n));
    }
    for (std::size_t i = 0; i + 2 < used && i < cpcEntryCount; ++i)
    {
        entries_[i] = source.entries[i];
        if (entries_[i].kind == CpcValue::Kind::absent)
        {
            throw fail("entry " +
                       std::string(entryName(static_cast<CpcEntry>(i))) +
                       " is neither Integer nor Buffer");
        }
    }
}

std::optional<std::uint8_t> CpcDescriptor::pccSubspace() const noexcept
{
    for (const CpcValue& v : entries_)
    {
        if (v.isRegister() && v.reg.inSpace(AddressSpace::pcc))
        {
            return v.reg.accessSize;
        }
    }
    return std::nullopt;
}

std::string CpcDescriptor::label() const
{
    return cpuLabel(cpu_, uid_, path_);
}

std::string cpuLabel(unsigned cpu, std::uint64_t uid, std::string_view path)
{
    std::string s = "CPU " + std::to_string(cpu) + " (_UID " + hex(uid);
    if (!path.empty())
    {
        s += ", ";
        s += path;
    }
    return s + ")";
}

} // namespace cppc
