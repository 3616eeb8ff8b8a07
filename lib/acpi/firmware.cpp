// SPDX-License-Identifier: Apache-2.0
#include "firmware.hpp"

#include "lib/acpi/madt.hpp"
#include "lib/text.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace cppc::acpi
{
namespace
{

constexpr std::size_t pccHeaderBytes = 8;

std::string entryLabel(std::size_t index)
{
    if (index < cpcEntryCount)
    {
        return std::string(entryName(static_cast<CpcEntry>(index)));
    }
    return "entry " + std::to_string(index + 2);
}

// A _CPC element as CpcValue, or why it cannot be one.
std::optional<CpcValue> convertEntry(const Namespace& ns, const AmlValue& v,
                                     std::string& why)
{
    const AmlValue* value = &v;
    if (v.type == AmlValue::Type::reference)
    {
        // Names of data objects were resolved when the _CPC was evaluated;
        // what is left names something else (a Method, a Device, ...) or
        // nothing, and Linux refuses such an entry.
        const AmlObject* o = ns.followAlias(ns.resolve(v.text, v.scope));
        if (o == nullptr)
        {
            why = "refers to " + displayPath(v.text) + ", which is not defined";
        }
        else if (!o->unknownWhy.empty())
        {
            why = "refers to " + displayPath(o->path) +
                  ", which is not known statically: " + o->unknownWhy;
        }
        else
        {
            why = "refers to " + displayPath(o->path) +
                  ", which is not a data object; only Integer and Buffer are "
                  "valid";
        }
        return std::nullopt;
    }
    switch (value->type)
    {
        case AmlValue::Type::integer:
            return CpcValue::ofInteger(value->integer);
        case AmlValue::Type::buffer:
            if (auto reg = parseRegisterBuffer(value->buffer))
            {
                return CpcValue::ofRegister(*reg);
            }
            why = "is a Buffer that is not a Generic Register descriptor";
            return std::nullopt;
        default:
            why = "is a " + std::string(typeName(value->type)) +
                  "; only Integer and Buffer are valid";
            return std::nullopt;
    }
}

struct Candidate
{
    const ProcessorDevice* device = nullptr;
    CpcSource source;
    bool usable = false;
};

// Linux's acpi_get_psd: a Package of one Package of five Integers,
// revision 0, coordination SW_ALL, SW_ANY or HW_ALL.
std::optional<PsdInfo> convertPsd(const Evaluation& e, std::string& why)
{
    if (e.value.type != AmlValue::Type::package ||
        e.value.elements.size() != 1 ||
        e.value.elements[0].type != AmlValue::Type::package)
    {
        why = "_PSD is not a Package holding one Package";
        return std::nullopt;
    }
    const std::vector<AmlValue>& p = e.value.elements[0].elements;
    if (p.size() < 5 ||
        !std::all_of(p.begin(), p.begin() + 5, [](const AmlValue& x) {
            return x.type == AmlValue::Type::integer;
        }))
    {
        why = "_PSD does not hold five Integers";
        return std::nullopt;
    }
    if (p[0].integer != 5)
    {
        why = "_PSD NumEntries is " + std::to_string(p[0].integer) + ", not 5";
        return std::nullopt;
    }
    if (p[1].integer != 0)
    {
        why = "_PSD revision " + std::to_string(p[1].integer) +
              " is not supported (only 0)";
        return std::nullopt;
    }
    const std::uint64_t coord = p[3].integer;
    if (coord != 0xFC && coord != 0xFD && coord != 0xFE)
    {
        why = "_PSD coordination type " + hex(coord) +
              " is not SW_ALL (0xfc), SW_ANY (0xfd) or HW_ALL (0xfe)";
        return std::nullopt;
    }
    if (p[2].integer > 0xFFFF'FFFFU || p[4].integer > 0xFFFF'FFFFU)
    {
        why = "_PSD domain or NumProcessors does not fit 32 bits";
        return std::nullopt;
    }
    return PsdInfo{static_cast<std::uint32_t>(p[2].integer),
                   static_cast<std::uint8_t>(coord),
                   static_cast<std::uint32_t>(p[4].integer), false};
}

class Reader
{
  public:
    Reader(const std::vector<Table>& tables, FirmwareReport& report) :
        report_(report)
    {
        bool haveDsdt = false;
        for (const Table& t : tables)
        {
            const std::string& sig = t.header.signature;
            if (sig == "DSDT" || sig == "SSDT")
            {
                haveDsdt = haveDsdt || sig == "DSDT";
                ns_.load(t);
            }
            else if (sig == "PCCT")
            {
                report_.pcct = parsePcct(t);
            }
            else if (sig == "APIC")
            {
                madt_ = parseMadt(t);
            }
        }
        if (!haveDsdt)
        {
            throw AcpiError("tables", "no DSDT among the tables given");
        }
        devices_ = findProcessors(ns_);
        for (const AmlNote& n : ns_.notes())
        {
            report_.warnings.push_back(
                n.table + ": offset " + hex(n.offset) + ": in " +
                displayPath(n.scope) + ": " + n.message);
            lostDefinitions_ = lostDefinitions_ || n.lost;
        }
        for (const ProcessorDevice& d : devices_)
        {
            if (!d.uid)
            {
                report_.warnings.push_back(
                    d.path +
                    ": no usable _UID, so it cannot be matched to a "
                    "CPU" +
                    (d.problems.empty() ? std::string()
                                        : ": " + d.problems.front()));
                unusableUids_ += (unusableUids_.empty() ? "" : "; ") + d.path;
                for (const std::string& p : d.problems)
                {
                    unusableUids_ += " (" + p + ")";
                }
            }
        }
    }

    void run(const std::optional<std::vector<std::uint64_t>>& cpuUids)
    {
        std::vector<std::uint64_t> uids;
        if (cpuUids)
        {
            report_.numbering = CpuNumbering::sysfs;
            uids = *cpuUids;
        }
        else if (madt_)
        {
            report_.numbering = CpuNumbering::madt;
            for (std::uint32_t uid : logicalCpuUids(*madt_))
            {
                uids.push_back(uid);
            }
        }
        else
        {
            report_.numbering = CpuNumbering::namespaceOrder;
            report_.warnings.emplace_back(
                "no MADT and no live CPU list: CPUs are numbered in the "
                "order their processor devices appear in the namespace");
            for (const ProcessorDevice& d : devices_)
            {
                if (d.uid)
                {
                    uids.push_back(*d.uid);
                }
            }
        }
        mapCpus(uids);
        checkDomains();
        for (std::size_t i = 0; i < candidates_.size(); ++i)
        {
            build(report_.cpus[i], candidates_[i]);
        }
    }

  private:
    void mapCpus(const std::vector<std::uint64_t>& uids)
    {
        std::multimap<std::uint64_t, const ProcessorDevice*> byUid;
        for (const ProcessorDevice& d : devices_)
        {
            if (d.uid)
            {
                byUid.emplace(*d.uid, &d);
            }
        }
        std::set<const ProcessorDevice*> used;
        report_.cpus.resize(uids.size());
        candidates_.resize(uids.size());
        for (unsigned cpu = 0; cpu < uids.size(); ++cpu)
        {
            FirmwareCpu& fc = report_.cpus[cpu];
            fc.cpu = cpu;
            fc.uid = uids[cpu];
            auto [first, last] = byUid.equal_range(uids[cpu]);
            if (first == last)
            {
                // Only a fact when the whole namespace was read and every
                // processor device's _UID is known.
                if (lostDefinitions_ || !unusableUids_.empty())
                {
                    fc.errors.push_back(
                        label(fc) +
                        ": no processor device with this _UID was found, but "
                        "the reader could not read everything" +
                        (unusableUids_.empty()
                             ? std::string(" (see the warnings)")
                             : "; devices without a usable _UID: " +
                                   unusableUids_));
                    continue;
                }
                fc.noCppc = "no processor device has this _UID";
                continue;
            }
            const ProcessorDevice* d = first->second;
            fc.path = d->path;
            for (auto it = first; it != last; ++it)
            {
                used.insert(it->second); // not absent: claimed by this CPU
            }
            if (std::next(first) != last)
            {
                fc.errors.push_back(
                    label(fc) + ": " + std::next(first)->second->path +
                    " has the same _UID");
                continue;
            }
            prepare(fc, *d, candidates_[cpu]);
        }
        for (const ProcessorDevice& d : devices_)
        {
            if (used.count(&d) == 0)
            {
                report_.absent.push_back({d.path, d.uid});
            }
        }
    }

    static std::string label(const FirmwareCpu& fc)
    {
        return cpuLabel(fc.cpu, fc.uid, fc.path);
    }

    // Converts the device's _CPC and _PSD into a CpcSource.
    void prepare(FirmwareCpu& fc, const ProcessorDevice& d, Candidate& c)
    {
        for (const std::string& p : d.problems)
        {
            fc.warnings.push_back(label(fc) + ": " + p);
        }
        c.device = &d;
        c.source.cpu = fc.cpu;
        c.source.uid = fc.uid;
        c.source.path = d.path;
        if (d.cpc.status == Evaluation::Status::absent)
        {
            if (!d.problems.empty())
            {
                fc.errors.push_back(label(fc) +
                                    ": no _CPC was loaded, but the reader "
                                    "could not evaluate everything in this "
                                    "device: " +
                                    d.problems.front());
                return;
            }
            fc.noCppc = "the processor device has no _CPC object";
            return;
        }
        if (d.cpc.status == Evaluation::Status::unevaluable)
        {
            fc.errors.push_back(
                label(fc) + ": _CPC cannot be evaluated: " + d.cpc.why);
            return;
        }
        const AmlValue& pkg = d.cpc.value;
        if (pkg.type != AmlValue::Type::package || pkg.elements.size() < 2 ||
            pkg.elements[0].type != AmlValue::Type::integer ||
            pkg.elements[1].type != AmlValue::Type::integer)
        {
            fc.errors.push_back(
                label(fc) +
                ": _CPC is not a Package starting with NumEntries and "
                "Revision Integers");
            return;
        }
        c.source.numEntries = pkg.elements[0].integer;
        c.source.revision = pkg.elements[1].integer;
        // Like Linux, only the first NumEntries elements are read.
        const std::size_t declared =
            c.source.numEntries > 2
                ? static_cast<std::size_t>(std::min<std::uint64_t>(
                      c.source.numEntries - 2, cpcEntryCount))
                : 0;
        const std::size_t used =
            std::min<std::size_t>(pkg.elements.size() - 2, declared);
        bool ok = true;
        for (std::size_t i = 0; i < used; ++i)
        {
            std::string why;
            auto v = convertEntry(ns_, pkg.elements[i + 2], why);
            if (!v)
            {
                fc.errors.push_back(
                    label(fc) + ": " + entryLabel(i) + " " + why);
                ok = false;
                c.source.entries.push_back(CpcValue{});
                continue;
            }
            c.source.entries.push_back(*v);
        }
        if (d.psd.status == Evaluation::Status::unevaluable)
        {
            fc.errors.push_back(
                label(fc) + ": _PSD cannot be evaluated: " + d.psd.why);
            ok = false;
        }
        else if (d.psd.status == Evaluation::Status::ok)
        {
            std::string why;
            c.source.psd = convertPsd(d.psd, why);
            if (!c.source.psd)
            {
                fc.errors.push_back(label(fc) + ": " + why);
                ok = false;
            }
        }
        c.usable = ok;
    }

    // Linux's acpi_get_psd_map: CPUs of one domain must agree on
    // NumProcessors and coordination; when they do not, each is treated as
    // a domain of its own.
    void checkDomains()
    {
        std::map<std::uint32_t, std::vector<std::size_t>> domains;
        for (std::size_t i = 0; i < candidates_.size(); ++i)
        {
            if (candidates_[i].usable && candidates_[i].source.psd)
            {
                domains[candidates_[i].source.psd->domain].push_back(i);
            }
        }
        for (auto& [domain, members] : domains)
        {
            const PsdInfo& first = *candidates_[members[0]].source.psd;
            const bool consistent =
                std::all_of(members.begin(), members.end(), [&](std::size_t i) {
                    const PsdInfo& p = *candidates_[i].source.psd;
                    return p.numProcessors == first.numProcessors &&
                           p.coordination == first.coordination;
                });
            for (std::size_t i : members)
            {
                FirmwareCpu& fc = report_.cpus[i];
                PsdInfo& p = *candidates_[i].source.psd;
                if (!consistent)
                {
                    p.independent = true;
                    fc.warnings.push_back(
                        label(fc) + ": _PSD domain " + std::to_string(domain) +
                        " is inconsistent (its CPUs disagree on NumProcessors "
                        "or coordination); this CPU is treated as a domain of "
                        "its own");
                }
                else if (p.numProcessors != members.size())
                {
                    fc.warnings.push_back(
                        label(fc) + ": _PSD domain " + std::to_string(domain) +
                        " claims " + std::to_string(p.numProcessors) +
                        " processors, " + std::to_string(members.size()) +
                        " present");
                }
            }
        }
    }

    // PCC registers must name a subspace of the PCCT and lie inside its
    // shared-memory payload.
    void checkPcc(FirmwareCpu& fc, const CpcDescriptor& d)
    {
        for (std::size_t i = 0; i < cpcEntryCount; ++i)
        {
            const CpcValue& v = d.entry(static_cast<CpcEntry>(i));
            if (!v.isRegister() || !v.reg.inSpace(AddressSpace::pcc))
            {
                continue;
            }
            const std::string where = label(fc) + ": " + entryLabel(i) + ": ";
            const std::uint8_t id = v.reg.accessSize;
            if (!report_.pcct)
            {
                fc.errors.push_back(
                    where + "in PCC subspace " + std::to_string(id) +
                    ", but there is no PCCT");
                continue;
            }
            const auto& subspaces = report_.pcct->subspaces;
            if (id >= subspaces.size())
            {
                fc.errors.push_back(
                    where + "PCC subspace " + std::to_string(id) +
                    " is not in the PCCT (it has " +
                    std::to_string(subspaces.size()) + ")");
                continue;
            }
            if (!subspaces[id].knownType)
            {
                fc.errors.push_back(
                    where + "PCC subspace " + std::to_string(id) +
                    " has the reserved "
                    "type " +
                    std::to_string(subspaces[id].type));
                continue;
            }
            const std::uint64_t length = subspaces[id].addressLength;
            const std::uint64_t payload =
                length > pccHeaderBytes ? length - pccHeaderBytes : 0;
            const std::uint64_t bytes =
                (std::uint64_t{v.reg.bitOffset} + v.reg.bitWidth + 7) / 8;
            if (v.reg.address > payload || bytes > payload - v.reg.address)
            {
                fc.errors.push_back(
                    where + "offset " + hex(v.reg.address) + " + " +
                    std::to_string(bytes) + " bytes is beyond the " +
                    hex(payload) + "-byte payload of PCC subspace " +
                    std::to_string(id));
            }
        }
    }

    void build(FirmwareCpu& fc, Candidate& c)
    {
        if (!c.usable)
        {
            return;
        }
        try
        {
            CpcDescriptor d(std::move(c.source));
            checkPcc(fc, d);
            if (fc.errors.empty())
            {
                fc.descriptor.emplace(std::move(d));
            }
        }
        catch (const DescriptorError& e)
        {
            fc.errors.emplace_back(e.what());
        }
    }

    FirmwareReport& report_;
    Namespace ns_;
    std::optional<Madt> madt_;
    // Whether the reader skipped definitions somewhere, and the processor
    // devices whose _UID it could not use: then a UID without a device is
    // not a fact but a gap.
    bool lostDefinitions_ = false;
    std::string unusableUids_;
    std::vector<ProcessorDevice> devices_;
    std::vector<Candidate> candidates_;
};

} // namespace

std::string_view numberingName(CpuNumbering n) noexcept
{
    switch (n)
    {
        case CpuNumbering::madt:
            return "MADT";
        case CpuNumbering::sysfs:
            return "sysfs";
        case CpuNumbering::namespaceOrder:
            return "namespace order";
    }
    return "unknown";
}

std::vector<CpcDescriptor> FirmwareReport::descriptors() const
{
    std::vector<CpcDescriptor> out;
    for (const FirmwareCpu& c : cpus)
    {
        if (c.descriptor)
        {
            out.push_back(*c.descriptor);
        }
    }
    return out;
}

std::optional<RegisterDesc> parseRegisterBuffer(
    const std::vector<std::uint8_t>& b)
{
    constexpr std::size_t descriptorBytes = 15;
    if (b.size() < descriptorBytes || b[0] != 0x82 || b[1] != 12 || b[2] != 0)
    {
        return std::nullopt;
    }
    RegisterDesc r;
    r.space = b[3];
    r.bitWidth = b[4];
    r.bitOffset = b[5];
    r.accessSize = b[6];
    for (std::size_t i = 0; i < 8; ++i)
    {
        r.address |= std::uint64_t{b[7 + i]} << (8 * i);
    }
    return r;
}

std::optional<std::vector<std::uint64_t>> sysfsCpuUids(
    const std::filesystem::path& root)
{
    const std::filesystem::path cpus = root / "sys/devices/system/cpu";
    std::vector<std::uint64_t> uids;
    for (unsigned n = 0;; ++n)
    {
        const std::filesystem::path dir = cpus / ("cpu" + std::to_string(n));
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec))
        {
            break;
        }
        const std::filesystem::path file = dir / "firmware_node" / "uid";
        std::ifstream in(file);
        if (!in)
        {
            return std::nullopt;
        }
        std::string text;
        std::getline(in, text);
        std::uint64_t uid = 0;
        auto [end, err] =
            std::from_chars(text.data(), text.data() + text.size(), uid);
        if (err != std::errc() || end != text.data() + text.size())
        {
            throw AcpiError(file.string(),
                            "'" + text + "' is not a decimal UID");
        }
        uids.push_back(uid);
    }
    if (uids.empty())
    {
        return std::nullopt;
    }
    return uids;
}

FirmwareReport readFirmware(
    const std::vector<Table>& tables,
    const std::optional<std::vector<std::uint64_t>>& cpuUids)
{
    FirmwareReport report;
    Reader reader(tables, report);
    reader.run(cpuUids);
    return report;
}

} // namespace cppc::acpi
