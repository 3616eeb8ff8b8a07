// SPDX-License-Identifier: Apache-2.0
#include "access_plan.hpp"

#include "text.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <tuple>

namespace cppc
{
namespace
{

// SystemMemory addresses beyond Arm's 52-bit physical address space are
// refused (this also keeps every unit's bit arithmetic far from overflow).
constexpr std::uint64_t physicalAddressLimit = std::uint64_t{1} << 52;
// PCC fields are keyed as (subspace << 48 | payload offset).
constexpr unsigned pccSubspaceShift = 48;
constexpr std::uint64_t pccOffsetLimit = std::uint64_t{1} << 40;

// The entries perf control writes: the performance requests, the
// autonomous-mode controls, and PerformanceLimited (cleared by writing).
bool isControl(CpcEntry e)
{
    switch (e)
    {
        case CpcEntry::desiredPerf:
        case CpcEntry::minPerf:
        case CpcEntry::maxPerf:
        case CpcEntry::perfLimited:
        case CpcEntry::autonomousSelectionEnable:
        case CpcEntry::autonomousActivityWindow:
        case CpcEntry::energyPerfPreference:
            return true;
        default:
            return false;
    }
}

constexpr std::array<std::string_view, 10> classNames = {
    "integer",           "absent",        "full-width standalone",
    "full-width alias",  "partial field", "shared unit",
    "overlapping units", "pcc",           "counter provider",
    "refused",
};

// One validated SystemMemory/SystemIO register, as the unit analysis sees
// it: the bytes its access unit covers and the bits its field covers.
struct UnitItem
{
    std::uint8_t space;
    std::uint64_t start;
    std::uint64_t end;
    std::uint8_t bitOffset;
    std::uint8_t bitWidth;
    unsigned slot;
    CpcEntry entry;

    std::uint64_t firstBit() const
    {
        return start * 8 + bitOffset;
    }
    std::uint64_t endBit() const
    {
        return firstBit() + bitWidth;
    }
    auto fieldKey() const
    {
        return std::tuple(start, end, bitOffset, bitWidth);
    }
};

} // namespace

namespace internal
{

class PlanBuilder
{
  public:
    explicit PlanBuilder(AccessPlan& plan) :
        descriptors_(plan.descriptors_),
        slotToDescriptor_(plan.slotToDescriptor_), cpus_(plan.cpus_),
        locks_(plan.locks_), diagnostics_(plan.diagnostics_)
    {}

    void run()
    {
        for (const CpcDescriptor& d : descriptors_)
        {
            classifyCpu(d);
        }
        analyseUnits();
        for (const CpcDescriptor& d : descriptors_)
        {
            checkControls(d);
        }
        for (std::size_t slot = 0; slot < cpus_.size(); ++slot)
        {
            if (slotToDescriptor_[slot] < 0)
            {
                continue;
            }
            cpus_[slot].usable =
                std::none_of(diagnostics_.begin(), diagnostics_.end(),
                             [slot](const Diagnostic& diag) {
                return diag.cpu == slot && diag.severity == Severity::error;
                });
        }
    }

  private:
    const CpcDescriptor& descriptorOf(unsigned slot) const
    {
        return descriptors_[static_cast<std::size_t>(slotToDescriptor_[slot])];
    }

    void refuse(unsigned slot, std::optional<CpcEntry> entry,
                const std::string& reason)
    {
        std::string text = descriptorOf(slot).label() + ": ";
        if (entry)
        {
            text += std::string(entryName(*entry)) + ": ";
            cpus_[slot].regs[static_cast<std::size_t>(*entry)].access =
                AccessClass::refused;
        }
        diagnostics_.push_back({Severity::error, slot, entry, text + reason});
    }

    void warn(unsigned slot, CpcEntry entry, const std::string& reason)
    {
        diagnostics_.push_back(
            {Severity::warning, slot, entry,
             descriptorOf(slot).label() + ": " + std::string(entryName(entry)) +
                 ": " + reason});
    }

    // The entries ACPI defines as registers only (Buffer), as opposed to
    // "Integer or Buffer". Desired is checked on its own: it must be
    // writable.
    static bool registerOnly(CpcEntry e)
    {
        switch (e)
        {
            case CpcEntry::guaranteedPerf:
            case CpcEntry::minPerf:
            case CpcEntry::maxPerf:
            case CpcEntry::perfReductionTolerance:
            case CpcEntry::timeWindow:
            case CpcEntry::referencePerfCounter:
            case CpcEntry::deliveredPerfCounter:
            case CpcEntry::perfLimited:
            case CpcEntry::cppcEnable:
            case CpcEntry::autonomousActivityWindow:
            case CpcEntry::energyPerfPreference:
                return true;
            default:
                return false;
        }
    }

    // Linux's rules for a SystemMemory or SystemIO register, plus the ones
    // a direct store needs (alignment, width within the access size).
    // Returns the reason for refusing it, or nothing.
    static std::optional<std::string> checkMemory(const RegisterDesc& r,
                                                  std::uint8_t& bytes)
    {
        if (r.address == 0)
        {
            return "non-NULL register at address 0";
        }
        if (r.accessSize == 0)
        {
            if (r.bitOffset != 0 || (r.bitWidth != 8 && r.bitWidth != 16 &&
                                     r.bitWidth != 32 && r.bitWidth != 64))
            {
                return "access size undefined and bit width " +
                       std::to_string(r.bitWidth) + " at offset " +
                       std::to_string(r.bitOffset) +
                       " is not a whole 8, 16, 32 or 64-bit unit";
            }
            bytes = static_cast<std::uint8_t>(r.bitWidth / 8);
        }
        else if (r.accessSize > 4)
        {
            return "access size " + std::to_string(r.accessSize) +
                   " is not 1 (byte) to 4 (qword)";
        }
        else
        {
            bytes = static_cast<std::uint8_t>(1U << (r.accessSize - 1));
        }
        if (r.inSpace(AddressSpace::systemIo))
        {
            if (r.accessSize < 1 || r.accessSize > 3)
            {
                return "SystemIO access size " + std::to_string(r.accessSize) +
                       " is not 1 to 3";
            }
            if (r.address > 0xFFFF)
            {
                return "SystemIO address " + hex(r.address) +
                       " exceeds 16 bits";
            }
        }
        if (r.bitWidth == 0)
        {
            return "bit width 0 in a non-NULL register";
        }
        if (unsigned{r.bitOffset} + r.bitWidth > bytes * 8U)
        {
            return "bit width " + std::to_string(r.bitWidth) + " at offset " +
                   std::to_string(r.bitOffset) + " is larger than the " +
                   std::to_string(bytes * 8U) + "-bit access size";
        }
        if (r.address >= physicalAddressLimit - bytes)
        {
            return "address " + hex(r.address) +
                   " is beyond the 52-bit physical address space";
        }
        if (r.address % bytes != 0)
        {
            return "address " + hex(r.address) + " is not aligned to its " +
                   std::to_string(bytes) + "-byte access size";
        }
        return std::nullopt;
    }

    void classifyCpu(const CpcDescriptor& d)
    {
        const unsigned slot = d.cpu();
        CpuPlan& cpu = cpus_[slot];
        for (std::size_t i = 0; i < cpcEntryCount; ++i)
        {
            const auto entry = static_cast<CpcEntry>(i);
            const CpcValue& v = d.entry(entry);
            RegisterPlan& rp = cpu.regs[i];
            rp.aliasOf = slot;
            if (v.kind == CpcValue::Kind::integer)
            {
                rp.access = AccessClass::integer;
                if (registerOnly(entry))
                {
                    warn(slot, entry,
                         "is an Integer, but ACPI allows only a register "
                         "here; it is treated as not supported");
                }
                continue;
            }
            if (!v.isLiveRegister())
            {
                rp.access = AccessClass::absent;
                continue;
            }
            const RegisterDesc& r = v.reg;
            if (r.inSpace(AddressSpace::systemMemory) ||
                r.inSpace(AddressSpace::systemIo))
            {
                std::uint8_t bytes = 0;
                if (auto why = checkMemory(r, bytes))
                {
                    refuse(slot, entry, *why);
                    continue;
                }
                rp.unitBytes = bytes;
                rp.shift = r.bitOffset;
                rp.width = r.bitWidth;
                items_.push_back({r.space, r.address, r.address + bytes,
                                  r.bitOffset, r.bitWidth, slot, entry});
            }
            else if (r.inSpace(AddressSpace::pcc))
            {
                classifyPcc(slot, entry, r);
            }
            else if (r.inSpace(AddressSpace::functionalFixedHw))
            {
                rp.access = AccessClass::counterProvider;
                rp.width = r.bitWidth;
            }
            else
            {
                refuse(slot, entry,
                       "unsupported address space " + hex(r.space));
            }
        }
    }

    void classifyPcc(unsigned slot, CpcEntry entry, const RegisterDesc& r)
    {
        CpuPlan& cpu = cpus_[slot];
        if (r.bitWidth == 0 || unsigned{r.bitOffset} + r.bitWidth > 64)
        {
            refuse(slot, entry,
                   "PCC register bit width " + std::to_string(r.bitWidth) +
                       " at offset " + std::to_string(r.bitOffset) +
                       " does not fit 64 bits");
            return;
        }
        // For PCC registers the access-size byte is the subspace id.
        if (cpu.pccSubspace && *cpu.pccSubspace != r.accessSize)
        {
            refuse(slot, entry,
                   "mismatched PCC ids: subspace " +
                       std::to_string(r.accessSize) + ", but " +
                       std::to_string(*cpu.pccSubspace) +
                       " for an earlier entry");
            return;
        }
        if (r.address >= pccOffsetLimit)
        {
            refuse(slot, entry,
                   "PCC offset " + hex(r.address) + " is implausibly large");
            return;
        }
        cpu.pccSubspace = r.accessSize;
        RegisterPlan& rp = cpu.regs[static_cast<std::size_t>(entry)];
        rp.access = AccessClass::pcc;
        rp.shift = r.bitOffset;
        rp.width = r.bitWidth;
        // PCC fields take part in the overlap and alias checks too, keyed
        // by subspace and payload offset; the channel serialises access,
        // so they never get a unit lock.
        const std::uint64_t start =
            (std::uint64_t{r.accessSize} << pccSubspaceShift) | r.address;
        const std::uint64_t bytes =
            (unsigned{r.bitOffset} + r.bitWidth + 7U) / 8U;
        items_.push_back({r.space, start, start + bytes, r.bitOffset,
                          r.bitWidth, slot, entry});
    }

    // Desired must be a register we can write; Min and Max are optional.
    void checkControls(const CpcDescriptor& d)
    {
        CpuPlan& cpu = cpus_[d.cpu()];
        const RegisterPlan& desired = cpu.reg(CpcEntry::desiredPerf);
        switch (desired.access)
        {
            case AccessClass::integer:
            case AccessClass::absent:
            case AccessClass::counterProvider:
                refuse(d.cpu(), CpcEntry::desiredPerf,
                       std::string("is ") +
                           (desired.access == AccessClass::integer
                                ? "an Integer"
                            : desired.access == AccessClass::absent
                                ? "the NULL register"
                                : "in Functional Fixed Hardware") +
                           ", so performance cannot be requested");
                break;
            default:
                break;
        }
        // Either every writable control is in PCC or none is: a request is
        // one PCC command or none.
        const bool desiredInPcc = desired.access == AccessClass::pcc;
        cpu.pccControl = desiredInPcc;
        for (CpcEntry e : {CpcEntry::minPerf, CpcEntry::maxPerf})
        {
            const AccessClass c = cpu.reg(e).access;
            if (isWritable(c) && (c == AccessClass::pcc) != desiredInPcc)
            {
                refuse(
                    d.cpu(), e,
                    std::string("is ") +
                        (desiredInPcc ? "outside PCC while" : "in PCC while") +
                        " DesiredPerformance is " +
                        (desiredInPcc ? "in PCC" : "not") +
                        "; split controls are not supported");
            }
        }
    }

    void analyseUnits()
    {
        std::sort(items_.begin(), items_.end(),
                  [](const UnitItem& a, const UnitItem& b) {
            return std::tie(a.space, a.start, a.end) <
                   std::tie(b.space, b.start, b.end);
        });
        std::size_t i = 0;
        while (i < items_.size())
        {
            std::size_t j = i + 1;
            std::uint64_t end = items_[i].end;
            while (j < items_.size() && items_[j].space == items_[i].space &&
                   items_[j].start < end)
            {
                end = std::max(end, items_[j].end);
                ++j;
            }
            analyseGroup(i, j, end);
            i = j;
        }
    }

    // Items [first, last) overlap one another transitively.
    void analyseGroup(std::size_t first, std::size_t last, std::uint64_t end)
    {
        const auto span = std::span(items_).subspan(first, last - first);
        std::vector<const UnitItem*> fields;
        for (const UnitItem& item : span)
        {
            bool known = std::any_of(fields.begin(), fields.end(),
                                     [&item](const UnitItem* f) {
                return f->fieldKey() == item.fieldKey();
            });
            if (!known)
            {
                fields.push_back(&item);
            }
        }
        for (std::size_t a = 0; a < fields.size(); ++a)
        {
            reportMixedAliases(*fields[a], span);
            for (std::size_t b = a + 1; b < fields.size(); ++b)
            {
                reportOverlap(*fields[a], *fields[b], span);
            }
        }
        const bool sameUnit = std::all_of(span.begin(), span.end(),
                                          [&span](const UnitItem& item) {
            return item.start == span.front().start &&
                   item.end == span.front().end;
        });
        // A lock protects a read-modify-write against another of ours: it
        // is needed only where two different fields that perf control
        // writes (Desired, Minimum, Maximum, EPP, AutonomousSelectionEnable,
        // AutonomousActivityWindow, PerformanceLimited) share the unit.
        const auto written = static_cast<std::size_t>(
            std::count_if(fields.begin(), fields.end(), [](const UnitItem* f) {
                return isControl(f->entry);
            }));
        const bool pcc = span.front().space ==
                         static_cast<std::uint8_t>(AddressSpace::pcc);
        std::optional<std::uint32_t> lock;
        if (written > 1 && !pcc)
        {
            lock = static_cast<std::uint32_t>(locks_.size());
            locks_.push_back({span.front().space, span.front().start,
                              end - span.front().start,
                              static_cast<std::uint32_t>(fields.size())});
        }
        for (const UnitItem& item : span)
        {
            RegisterPlan& rp =
                cpus_[item.slot].regs[static_cast<std::size_t>(item.entry)];
            rp.aliases = static_cast<std::uint32_t>(std::count_if(
                span.begin(), span.end(), [&item](const UnitItem& other) {
                    return other.fieldKey() == item.fieldKey();
                }));
            for (const UnitItem& other : span)
            {
                if (other.fieldKey() == item.fieldKey() &&
                    other.entry == item.entry)
                {
                    rp.aliasOf =
                        std::min<std::uint32_t>(rp.aliasOf, other.slot);
                }
            }
            if (rp.access == AccessClass::refused)
            {
                continue;
            }
            if (isControl(item.entry))
            {
                warnSharing(item, span);
            }
            if (pcc)
            {
                continue; // stays pcc
            }
            rp.lock = lock;
            const bool fullWidth = item.bitOffset == 0 &&
                                   item.bitWidth == rp.unitBytes * 8U;
            if (fields.size() > 1)
            {
                rp.access = !sameUnit ? AccessClass::overlappingUnits
                            : lock    ? AccessClass::sharedUnit
                                      : AccessClass::partialField;
            }
            else if (!fullWidth)
            {
                rp.access = AccessClass::partialField;
            }
            else
            {
                rp.access = rp.aliases > 1 ? AccessClass::fullWidthAliased
                                           : AccessClass::fullWidthStandalone;
            }
        }
    }

    // Warnings for a control register: sharing its unit with a field perf
    // control never writes (a read-modify-write writes back whatever it
    // read there, even if the platform changed it meanwhile), and being
    // the same register as another CPU outside its _PSD domain (a request
    // for one then changes the other).
    void warnSharing(const UnitItem& item, std::span<UnitItem> group)
    {
        const auto other = std::find_if(group.begin(), group.end(),
                                        [&item](const UnitItem& x) {
            return x.fieldKey() != item.fieldKey() &&
                   (!isControl(x.entry) || x.entry == CpcEntry::perfLimited);
        });
        if (other != group.end())
        {
            // PerformanceLimited is written here too (to clear it), but the
            // platform sets its bits whenever it likes: a lock cannot stop
            // that, so the hazard stays.
            warn(item.slot, item.entry,
                 "shares its access unit with " +
                     std::string(entryName(other->entry)) + " of " +
                     (other->slot == item.slot
                          ? std::string("the same CPU")
                          : descriptorOf(other->slot).label()) +
                     (other->entry == CpcEntry::perfLimited
                          ? ", whose bits the platform sets at any time"
                          : ", which is not written here") +
                     "; a read-modify-write writes back what it read of "
                     "that field");
        }
        const auto& mine = descriptorOf(item.slot).psd();
        for (const UnitItem& x : group)
        {
            if (x.slot == item.slot || x.fieldKey() != item.fieldKey())
            {
                continue;
            }
            const auto& theirs = descriptorOf(x.slot).psd();
            const bool sameDomain =
                mine && theirs && !mine->independent && !theirs->independent &&
                mine->domain == theirs->domain;
            if (!sameDomain)
            {
                warn(item.slot, item.entry,
                     "is the same register as " +
                         std::string(entryName(x.entry)) + " of " +
                         descriptorOf(x.slot).label() +
                         ", which is not in its _PSD domain; a request for "
                         "one changes the other");
                break;
            }
        }
    }

    // An exact alias is legitimate only between the same entry of
    // different CPUs (a domain's shared Desired word). When different
    // entries name one field (Desired and Maximum on the same register, or
    // one CPU's Minimum on another's Desired) they could never be set
    // apart: like overlapping bits, every register of the field is refused.
    void reportMixedAliases(const UnitItem& field, std::span<UnitItem> group)
    {
        for (const UnitItem& item : group)
        {
            if (item.fieldKey() != field.fieldKey())
            {
                continue;
            }
            const auto other = std::find_if(group.begin(), group.end(),
                                            [&item](const UnitItem& x) {
                return x.fieldKey() == item.fieldKey() && x.entry != item.entry;
            });
            if (other == group.end())
            {
                continue;
            }
            refuse(item.slot, item.entry,
                   "register at " + hex(item.start) + " is the same field as " +
                       std::string(entryName(other->entry)) + " of " +
                       (other->slot == item.slot
                            ? std::string("the same CPU")
                            : descriptorOf(other->slot).label()));
        }
    }

    // Two different fields whose bits overlap cannot both be written
    // without one clobbering the other: refuse every CPU naming either.
    void reportOverlap(const UnitItem& a, const UnitItem& b,
                       std::span<UnitItem> group)
    {
        if (a.firstBit() >= b.endBit() || b.firstBit() >= a.endBit())
        {
            return;
        }
        for (const UnitItem& item : group)
        {
            const UnitItem* other = nullptr;
            if (item.fieldKey() == a.fieldKey())
            {
                other = &b;
            }
            else if (item.fieldKey() == b.fieldKey())
            {
                other = &a;
            }
            else
            {
                continue;
            }
            refuse(item.slot, item.entry,
                   "register at " + hex(item.start) + " overlaps " +
                       std::string(entryName(other->entry)) + " of " +
                       descriptorOf(other->slot).label() + " at " +
                       hex(other->start) + " without being the same field");
        }
    }

    std::vector<CpcDescriptor>& descriptors_;
    std::vector<int>& slotToDescriptor_;
    std::vector<CpuPlan>& cpus_;
    std::vector<LockedUnit>& locks_;
    std::vector<Diagnostic>& diagnostics_;
    std::vector<UnitItem> items_;
};

} // namespace internal

std::string_view className(AccessClass c) noexcept
{
    auto i = static_cast<std::size_t>(c);
    return i < classNames.size() ? classNames[i] : "unknown";
}

AccessPlan AccessPlan::build(std::vector<CpcDescriptor> cpus)
{
    AccessPlan plan;
    plan.descriptors_ = std::move(cpus);
    std::size_t slots = 0;
    for (const CpcDescriptor& d : plan.descriptors_)
    {
        slots = std::max<std::size_t>(slots, d.cpu() + 1U);
    }
    plan.slotToDescriptor_.assign(slots, -1);
    plan.cpus_.resize(slots);
    for (std::size_t i = 0; i < plan.descriptors_.size(); ++i)
    {
        int& slot = plan.slotToDescriptor_[plan.descriptors_[i].cpu()];
        if (slot >= 0)
        {
            throw std::invalid_argument(
                "two descriptors for logical CPU " +
                std::to_string(plan.descriptors_[i].cpu()));
        }
        slot = static_cast<int>(i);
    }
    internal::PlanBuilder(plan).run();
    return plan;
}

const CpcDescriptor* AccessPlan::descriptor(unsigned index) const noexcept
{
    if (index >= slotToDescriptor_.size() || slotToDescriptor_[index] < 0)
    {
        return nullptr;
    }
    return &descriptors_[static_cast<std::size_t>(slotToDescriptor_[index])];
}

bool AccessPlan::anyRefused() const noexcept
{
    for (std::size_t i = 0; i < cpus_.size(); ++i)
    {
        if (slotToDescriptor_[i] >= 0 && !cpus_[i].usable)
        {
            return true;
        }
    }
    return false;
}

AliasGroups::AliasGroups(const AccessPlan& plan,
                         std::span<const CpcEntry> entries)
{
    const auto count = static_cast<std::uint32_t>(plan.cpuCount());
    // Per entry: the aliasOf of a writable register, or `none`.
    constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    std::map<std::vector<std::uint32_t>, std::uint32_t> byKey;
    std::uint32_t groups = 0;
    groupOf_.resize(count);
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        const CpuPlan& p = plan.cpu(cpu);
        if (plan.descriptor(cpu) == nullptr || !p.usable)
        {
            groupOf_[cpu] = groups++;
            continue;
        }
        std::vector<std::uint32_t> key;
        for (const CpcEntry e : entries)
        {
            const RegisterPlan& rp = p.reg(e);
            key.push_back(isWritable(rp.access) ? rp.aliasOf : none);
        }
        const auto [it, fresh] = byKey.try_emplace(std::move(key), groups);
        groups += fresh ? 1 : 0;
        groupOf_[cpu] = it->second;
    }
    starts_.assign(std::size_t{groups} + 1, 0);
    for (const std::uint32_t g : groupOf_)
    {
        ++starts_[g + 1];
    }
    for (std::size_t g = 0; g < groups; ++g)
    {
        starts_[g + 1] += starts_[g];
    }
    members_.resize(count);
    std::vector<std::size_t> next(starts_.begin(), starts_.end() - 1);
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        members_[next[groupOf_[cpu]]++] = cpu;
    }
}

} // namespace cppc
