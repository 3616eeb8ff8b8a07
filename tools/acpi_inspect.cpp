// SPDX-License-Identifier: Apache-2.0
#include "acpi_inspect.hpp"

#include "args.hpp"
#include "json_writer.hpp"
#include "lib/access_plan.hpp"
#include "lib/acpi/firmware.hpp"
#include "lib/cpu_list.hpp"
#include "lib/firmware_sanity.hpp"
#include "lib/text.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace cppcgov::tools
{
namespace
{

using cppc::AccessClass;
using cppc::CpcEntry;
using cppc::CpcValue;
using cppc::RegisterDesc;
namespace acpi = cppc::acpi;

constexpr std::string_view usage =
    "usage: cppcgovctl acpi-inspect [--tables FILE...] [--root DIR] [--json]\n"
    "\n"
    "Shows each CPU's _CPC and _PSD, the access plan libcppc builds from\n"
    "them and the firmware's diagnostics, read from the ACPI tables (no\n"
    "daemon needed). Exit status 1 when a CPU's description is refused.\n"
    "\n"
    "  --tables FILE...  read these table files (DSDT, SSDTs, PCCT, APIC)\n"
    "                    instead of DIR/sys/firmware/acpi/tables\n"
    "  --root DIR        prefix for /sys paths (default /)\n"
    "  --json            machine-readable output (see tools/README.md)\n";

struct Options
{
    std::vector<std::string> tables;
    std::filesystem::path root = "/";
    bool json = false;
};

std::string spaceName(std::uint8_t space)
{
    switch (space)
    {
        case 0x00:
            return "SystemMemory";
        case 0x01:
            return "SystemIO";
        case 0x0A:
            return "PCC";
        case 0x7F:
            return "FFixedHW";
        default:
            return "space " + cppc::hex(space);
    }
}

std::string coordinationName(std::uint8_t c)
{
    switch (c)
    {
        case 0xFC:
            return "SW_ALL";
        case 0xFD:
            return "SW_ANY";
        case 0xFE:
            return "HW_ALL";
        default:
            return cppc::hex(c);
    }
}

// Everything shown about one CPU, merged from the firmware reader and the
// access plan.
struct CpuView
{
    const acpi::FirmwareCpu* firmware;
    const cppc::CpuPlan* plan; // null when the CPU has no descriptor
    std::vector<std::string> errors;
    std::vector<std::string> warnings;

    bool refused() const
    {
        return !errors.empty() || (plan != nullptr && !plan->usable);
    }
    bool ok() const
    {
        return !refused() && plan != nullptr;
    }
    std::string_view status() const
    {
        return refused() ? "refused" : ok() ? "ok" : "no-cppc";
    }
};

std::vector<CpuView> merge(const acpi::FirmwareReport& report,
                           const cppc::AccessPlan& plan)
{
    std::vector<CpuView> views;
    for (const acpi::FirmwareCpu& fc : report.cpus)
    {
        CpuView v{&fc, nullptr, fc.errors, fc.warnings};
        if (fc.descriptor)
        {
            v.plan = &plan.cpu(fc.cpu);
        }
        for (const cppc::Diagnostic& d : plan.diagnostics())
        {
            if (d.cpu == fc.cpu)
            {
                (d.severity == cppc::Severity::error ? v.errors : v.warnings)
                    .push_back(d.message);
            }
        }
        views.push_back(std::move(v));
    }
    return views;
}

// The table-only firmware check of one CPU (firmware_sanity.hpp).
struct TableCheck
{
    // "ok", "finding", or "undecided" (the scale is in registers, or the
    // CPU has no usable descriptor).
    std::string_view status = "undecided";
    std::string reason;
};

std::string mhzText(double hz);

TableCheck tableCheck(const CpuView& v)
{
    if (!v.ok() || !v.firmware->descriptor)
    {
        return {"undecided", "no usable _CPC"};
    }
    const std::optional<cppc::PerfScale> scale =
        cppc::perfScaleOf(*v.firmware->descriptor);
    if (!scale)
    {
        return {"undecided", "the performance scale is in registers, read "
                             "only at run time"};
    }
    if (std::optional<std::string> reason = cppc::checkReferencePerf(*scale))
    {
        return {"finding", std::move(*reason)};
    }
    std::string note = "ReferencePerformance consistent with the scale";
    if (const std::optional<double> hz = cppc::referenceHz(*scale))
    {
        // What only the running machine can confirm.
        note += "; the reference counter must count at " + mhzText(*hz) +
                " (checked at run time)";
    }
    return {"ok", std::move(note)};
}

// Whether the CPU's reference counter is FFixedHW (on arm64, the AMU's
// constant counter, one rate for every CPU: the system counter's).
bool ffhReference(const CpuView& v)
{
    return v.firmware->descriptor &&
           v.firmware->descriptor->entry(CpcEntry::referencePerfCounter)
               .reg.inSpace(cppc::AddressSpace::functionalFixedHw) &&
           v.firmware->descriptor->entry(CpcEntry::referencePerfCounter)
               .isLiveRegister();
}

std::string mhzText(double hz)
{
    const long tenths = std::lround(hz / 1e5);
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) +
           " MHz";
}

// One line per _PSD domain (a CPU without a _PSD, or treated as
// independent, is a domain of its own), in the order of their first CPUs:
// what the table-only check found.
void printTableChecks(const std::vector<CpuView>& views, std::ostream& out)
{
    struct Domain
    {
        std::string name;
        cppc::CpuSet cpus;
        std::vector<std::pair<unsigned, TableCheck>> checks;
    };
    std::vector<Domain> domains;
    std::map<std::string, std::size_t> byName;
    // The reference counter rates FFixedHW CPUs imply, by the CPUs.
    std::map<long, cppc::CpuSet> ffhRates;
    for (const CpuView& v : views)
    {
        const acpi::FirmwareCpu& fc = *v.firmware;
        std::string name = "CPU " + std::to_string(fc.cpu);
        if (fc.descriptor && fc.descriptor->psd() &&
            !fc.descriptor->psd()->independent)
        {
            name = "domain " + std::to_string(fc.descriptor->psd()->domain);
        }
        const auto [it, added] = byName.try_emplace(name, domains.size());
        if (added)
        {
            domains.push_back({name, {}, {}});
        }
        Domain& d = domains[it->second];
        if (fc.cpu < d.cpus.size())
        {
            d.cpus.set(fc.cpu);
        }
        d.checks.emplace_back(fc.cpu, tableCheck(v));
        if (d.checks.back().second.status == "ok" && ffhReference(v))
        {
            if (const auto hz =
                    cppc::referenceHz(*cppc::perfScaleOf(*fc.descriptor));
                hz && fc.cpu < cppc::maxCpus)
            {
                ffhRates[std::lround(*hz / 1e5)].set(fc.cpu);
            }
        }
    }
    out << "\nfirmware checks from the tables (per _PSD domain):\n";
    for (const Domain& d : domains)
    {
        out << "  " << d.name << " ("
            << (d.cpus.count() == 1 ? "CPU " : "CPUs ")
            << cppc::formatCpuList(d.cpus) << "): ";
        const auto finding =
            std::find_if(d.checks.begin(), d.checks.end(), [](const auto& c) {
                return c.second.status == "finding";
            });
        if (finding != d.checks.end())
        {
            out << cppc::checkName(cppc::SanityCheck::referencePerf) << ": CPU "
                << finding->first << ": " << finding->second.reason << "\n";
        }
        else
        {
            out << d.checks.front().second.status << ": "
                << d.checks.front().second.reason << "\n";
        }
    }
    if (ffhRates.size() > 1)
    {
        out << "  note: with FFixedHW counters these CPUs imply reference "
               "counters at";
        for (const auto& [tenths, cpus] : ffhRates)
        {
            out << " " << mhzText(static_cast<double>(tenths) * 1e5)
                << " (CPUs " << cppc::formatCpuList(cpus) << ")";
        }
        out << "; where one counter serves every CPU (on arm64 the AMU's "
               "constant counter counts at the system counter's rate) they "
               "cannot all be right\n";
    }
}

struct Counts
{
    std::uint64_t ok = 0;
    std::uint64_t refused = 0;
    std::uint64_t noCppc = 0;
};

Counts count(const std::vector<CpuView>& views)
{
    Counts n;
    for (const CpuView& v : views)
    {
        ++(v.refused() ? n.refused : v.ok() ? n.ok : n.noCppc);
    }
    return n;
}

std::string describeRegister(const RegisterDesc& r)
{
    std::string s = spaceName(r.space);
    if (r.inSpace(cppc::AddressSpace::pcc))
    {
        s += " subspace " + std::to_string(r.accessSize) + " offset " +
             cppc::hex(r.address);
    }
    else
    {
        s += " " + cppc::hex(r.address) + " access size " +
             std::to_string(r.accessSize);
    }
    return s + " width " + std::to_string(r.bitWidth) + " offset " +
           std::to_string(r.bitOffset);
}

void printText(const acpi::FirmwareReport& report, const cppc::AccessPlan& plan,
               const std::vector<CpuView>& views, std::ostream& out)
{
    out << "CPUs numbered by " << acpi::numberingName(report.numbering) << "\n";
    for (const std::string& w : report.warnings)
    {
        out << "warning: " << w << "\n";
    }
    for (const CpuView& v : views)
    {
        const acpi::FirmwareCpu& fc = *v.firmware;
        out << "\nCPU " << fc.cpu << "  _UID " << cppc::hex(fc.uid) << "  "
            << (fc.path.empty() ? "(no device)" : fc.path) << "  "
            << (v.refused() ? "REFUSED"
                : v.ok()    ? "ok"
                            : "no CPPC")
            << "\n";
        if (!fc.noCppc.empty())
        {
            out << "  " << fc.noCppc << "\n";
        }
        if (fc.descriptor)
        {
            const cppc::CpcDescriptor& d = *fc.descriptor;
            out << "  _CPC revision " << d.revision();
            if (const auto& psd = d.psd())
            {
                out << ", _PSD domain " << psd->domain << " "
                    << coordinationName(psd->coordination) << " ("
                    << psd->numProcessors << " processors)"
                    << (psd->independent ? ", treated as independent" : "");
            }
            else
            {
                out << ", no _PSD";
            }
            if (v.plan->pccSubspace)
            {
                out << ", PCC subspace " << unsigned{*v.plan->pccSubspace};
            }
            out << "\n";
            for (std::size_t i = 0; i < cppc::cpcEntryCount; ++i)
            {
                const auto e = static_cast<CpcEntry>(i);
                const CpcValue& val = d.entry(e);
                const cppc::RegisterPlan& rp = v.plan->reg(e);
                out << "  " << std::left << std::setw(30) << cppc::entryName(e);
                if (val.kind == CpcValue::Kind::absent)
                {
                    out << "(not in this revision)\n";
                    continue;
                }
                if (val.kind == CpcValue::Kind::integer)
                {
                    out << "Integer " << cppc::hex(val.integer) << "\n";
                    continue;
                }
                if (val.reg.isNull())
                {
                    out << "NULL register\n";
                    continue;
                }
                out << describeRegister(val.reg) << "  ["
                    << cppc::className(rp.access);
                if (rp.aliases > 1)
                {
                    out << ", " << rp.aliases << " aliases";
                }
                if (rp.lock)
                {
                    out << ", lock " << *rp.lock;
                }
                out << "]\n";
            }
        }
        for (const std::string& e : v.errors)
        {
            out << "  error: " << e << "\n";
        }
        for (const std::string& w : v.warnings)
        {
            out << "  warning: " << w << "\n";
        }
    }
    if (!report.absent.empty())
    {
        out << "\n"
            << report.absent.size()
            << " processor device(s) with no enabled CPU:";
        for (const acpi::AbsentDevice& a : report.absent)
        {
            out << " " << a.path;
        }
        out << "\n";
    }
    if (report.pcct)
    {
        for (const acpi::PccSubspace& s : report.pcct->subspaces)
        {
            out << "\nPCC subspace " << unsigned{s.id} << ": type "
                << unsigned{s.type};
            if (!s.knownType)
            {
                out << " (reserved)\n";
                continue;
            }
            out << ", base " << cppc::hex(s.baseAddress) << ", length "
                << cppc::hex(s.addressLength) << ", doorbell "
                << describeRegister(s.doorbell) << " preserve "
                << cppc::hex(s.doorbellPreserveMask) << " write "
                << cppc::hex(s.doorbellWriteMask) << ", latency "
                << s.nominalLatencyUs << " us, max rate "
                << s.maxPeriodicAccessRate << "/min, turnaround "
                << s.minRequestTurnaroundUs << " us";
            if (!s.platformAck.isNull())
            {
                out << ", platform ack " << describeRegister(s.platformAck);
            }
            out << "\n";
        }
    }
    printTableChecks(views, out);
    const Counts n = count(views);
    out << "\n"
        << views.size() << " CPUs: " << n.ok << " ok, " << n.refused
        << " refused, " << n.noCppc << " without CPPC; " << plan.locks().size()
        << " unit lock(s)\n";
}

void jsonRegister(JsonWriter& j, const RegisterDesc& r)
{
    j.beginObject();
    j.field("space", spaceName(r.space));
    j.field("spaceId", std::uint64_t{r.space});
    j.field("bitWidth", std::uint64_t{r.bitWidth});
    j.field("bitOffset", std::uint64_t{r.bitOffset});
    j.field("accessSize", std::uint64_t{r.accessSize});
    j.field("address", cppc::hex(r.address));
    j.endObject();
}

void jsonStrings(JsonWriter& j, std::string_view name,
                 const std::vector<std::string>& list)
{
    j.key(name);
    j.beginArray();
    for (const std::string& s : list)
    {
        j.value(s);
    }
    j.endArray();
}

void jsonEntry(JsonWriter& j, CpcEntry e, const CpcValue& v,
               const cppc::RegisterPlan& rp)
{
    j.beginObject();
    j.field("name", cppc::entryName(e));
    if (v.kind == CpcValue::Kind::absent)
    {
        j.field("kind", "absent");
        j.endObject();
        return;
    }
    if (v.kind == CpcValue::Kind::integer)
    {
        j.field("kind", "integer");
        j.field("value", v.integer);
    }
    else if (v.reg.isNull())
    {
        j.field("kind", "null");
    }
    else
    {
        j.field("kind", "register");
        j.key("register");
        jsonRegister(j, v.reg);
        if (rp.aliases > 0)
        {
            j.field("aliases", std::uint64_t{rp.aliases});
        }
        j.key("lock");
        if (rp.lock)
        {
            j.value(std::uint64_t{*rp.lock});
        }
        else
        {
            j.null();
        }
    }
    j.field("access", cppc::className(rp.access));
    j.endObject();
}

void jsonCpu(JsonWriter& j, const CpuView& v)
{
    const acpi::FirmwareCpu& fc = *v.firmware;
    j.beginObject();
    j.field("cpu", std::uint64_t{fc.cpu});
    j.field("uid", fc.uid);
    j.key("path");
    if (fc.path.empty())
    {
        j.null();
    }
    else
    {
        j.value(fc.path);
    }
    j.field("status", v.status());
    j.key("noCppc");
    if (fc.noCppc.empty())
    {
        j.null();
    }
    else
    {
        j.value(fc.noCppc);
    }
    if (fc.descriptor)
    {
        const cppc::CpcDescriptor& d = *fc.descriptor;
        j.field("revision", std::uint64_t{d.revision()});
        j.key("pccSubspace");
        if (v.plan->pccSubspace)
        {
            j.value(std::uint64_t{*v.plan->pccSubspace});
        }
        else
        {
            j.null();
        }
        j.field("pccControl", v.plan->pccControl);
        j.key("psd");
        if (const auto& psd = d.psd())
        {
            j.beginObject();
            j.field("domain", std::uint64_t{psd->domain});
            j.field("coordination", coordinationName(psd->coordination));
            j.field("coordinationType", std::uint64_t{psd->coordination});
            j.field("numProcessors", std::uint64_t{psd->numProcessors});
            j.field("independent", psd->independent);
            j.endObject();
        }
        else
        {
            j.null();
        }
        j.key("entries");
        j.beginArray();
        for (std::size_t i = 0; i < cppc::cpcEntryCount; ++i)
        {
            const auto e = static_cast<CpcEntry>(i);
            jsonEntry(j, e, d.entry(e), v.plan->reg(e));
        }
        j.endArray();
    }
    const TableCheck check = tableCheck(v);
    j.key("firmwareCheck");
    j.beginObject();
    j.field("check", cppc::checkName(cppc::SanityCheck::referencePerf));
    j.field("status", check.status);
    j.field("reason", check.reason);
    j.endObject();
    jsonStrings(j, "errors", v.errors);
    jsonStrings(j, "warnings", v.warnings);
    j.endObject();
}

void jsonSubspace(JsonWriter& j, const acpi::PccSubspace& s)
{
    j.beginObject();
    j.field("id", std::uint64_t{s.id});
    j.field("type", std::uint64_t{s.type});
    j.field("knownType", s.knownType);
    if (s.knownType)
    {
        j.field("baseAddress", cppc::hex(s.baseAddress));
        j.field("length", cppc::hex(s.addressLength));
        j.key("doorbell");
        jsonRegister(j, s.doorbell);
        j.field("doorbellPreserveMask", cppc::hex(s.doorbellPreserveMask));
        j.field("doorbellWriteMask", cppc::hex(s.doorbellWriteMask));
        j.field("nominalLatencyUs", std::uint64_t{s.nominalLatencyUs});
        j.field("maxPeriodicAccessRate",
                std::uint64_t{s.maxPeriodicAccessRate});
        j.field("minRequestTurnaroundUs",
                std::uint64_t{s.minRequestTurnaroundUs});
        j.field("platformInterrupt", std::uint64_t{s.platformInterrupt});
        j.field("platformInterruptFlags",
                std::uint64_t{s.platformInterruptFlags});
        const auto optionalRegister =
            [&j](std::string_view name, const RegisterDesc& r) {
            j.key(name);
            if (r.isNull())
            {
                j.null();
            }
            else
            {
                jsonRegister(j, r);
            }
        };
        optionalRegister("platformAck", s.platformAck);
        j.field("platformAckPreserveMask",
                cppc::hex(s.platformAckPreserveMask));
        j.field("platformAckWriteMask", cppc::hex(s.platformAckWriteMask));
        optionalRegister("commandComplete", s.commandComplete);
        j.field("commandCompleteMask", cppc::hex(s.commandCompleteMask));
        optionalRegister("commandUpdate", s.commandUpdate);
        j.field("commandUpdatePreserveMask",
                cppc::hex(s.commandUpdatePreserveMask));
        j.field("commandUpdateSetMask", cppc::hex(s.commandUpdateSetMask));
        optionalRegister("errorStatus", s.errorStatus);
        j.field("errorStatusMask", cppc::hex(s.errorStatusMask));
    }
    j.endObject();
}

void printJson(const std::vector<acpi::Table>& tables,
               const acpi::FirmwareReport& report, const cppc::AccessPlan& plan,
               const std::vector<CpuView>& views, std::ostream& out)
{
    JsonWriter j(out);
    j.beginObject();
    j.field("format", "cppcgov-acpi-inspect");
    j.field("version", std::uint64_t{1});
    j.key("tables");
    j.beginArray();
    for (const acpi::Table& t : tables)
    {
        j.beginObject();
        j.field("signature", t.header.signature);
        j.field("source", t.source);
        j.field("revision", std::uint64_t{t.header.revision});
        j.field("oemId", t.header.oemId);
        j.field("oemTableId", t.header.oemTableId);
        j.endObject();
    }
    j.endArray();
    j.field("cpuNumbering", acpi::numberingName(report.numbering));
    j.key("cpus");
    j.beginArray();
    for (const CpuView& v : views)
    {
        jsonCpu(j, v);
    }
    j.endArray();
    j.key("absentDevices");
    j.beginArray();
    for (const acpi::AbsentDevice& a : report.absent)
    {
        j.beginObject();
        j.field("path", a.path);
        j.key("uid");
        if (a.uid)
        {
            j.value(*a.uid);
        }
        else
        {
            j.null();
        }
        j.endObject();
    }
    j.endArray();
    j.key("unitLocks");
    j.beginArray();
    for (const cppc::LockedUnit& u : plan.locks())
    {
        j.beginObject();
        j.field("space", spaceName(u.space));
        j.field("address", cppc::hex(u.address));
        j.field("bytes", u.bytes);
        j.field("fields", std::uint64_t{u.fields});
        j.endObject();
    }
    j.endArray();
    j.key("pccSubspaces");
    j.beginArray();
    if (report.pcct)
    {
        for (const acpi::PccSubspace& s : report.pcct->subspaces)
        {
            jsonSubspace(j, s);
        }
    }
    j.endArray();
    jsonStrings(j, "warnings", report.warnings);
    const Counts n = count(views);
    j.key("summary");
    j.beginObject();
    j.field("cpus", std::uint64_t{views.size()});
    j.field("ok", n.ok);
    j.field("refused", n.refused);
    j.field("noCppc", n.noCppc);
    j.field("absentDevices", std::uint64_t{report.absent.size()});
    j.endObject();
    j.endObject();
}

// DSDT first, then SSDTs in the order given, then the rest: the order an
// OS loads them in.
void loadOrder(std::vector<acpi::Table>& tables)
{
    std::stable_sort(tables.begin(), tables.end(),
                     [](const acpi::Table& a, const acpi::Table& b) {
        auto rank = [](const acpi::Table& t) {
            return t.header.signature == "DSDT"   ? 0
                   : t.header.signature == "SSDT" ? 1
                                                  : 2;
        };
        return rank(a) < rank(b);
    });
}

} // namespace

int runAcpiInspect(std::span<const std::string_view> args, std::ostream& out,
                   std::ostream& err)
{
    Options o;
    bool inTables = false;
    bool tablesGiven = false;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (a == "--json")
        {
            o.json = true;
            inTables = false;
        }
        else if (a == "--root" && i + 1 < args.size())
        {
            o.root = std::string(args[++i]);
            inTables = false;
        }
        else if (a == "--tables")
        {
            inTables = true;
            tablesGiven = true;
        }
        else if (a == "--help" || a == "-h")
        {
            out << usage;
            return 0;
        }
        else if (inTables && !a.starts_with("--"))
        {
            o.tables.emplace_back(a);
        }
        else
        {
            return reportUsageError(
                "acpi-inspect",
                a == "--root" ? std::string("--root needs a value")
                              : "unexpected argument '" + std::string(a) + "'",
                err);
        }
    }
    if (tablesGiven && o.tables.empty())
    {
        return reportUsageError("acpi-inspect",
                                "--tables needs at least one file", err);
    }
    try
    {
        std::vector<acpi::Table> tables;
        std::optional<std::vector<std::uint64_t>> uids;
        if (o.tables.empty())
        {
            tables =
                acpi::loadTableDirectory(o.root / "sys/firmware/acpi/tables");
            uids = acpi::sysfsCpuUids(o.root);
        }
        else
        {
            for (const std::string& f : o.tables)
            {
                tables.push_back(acpi::loadTableFile(f));
            }
            loadOrder(tables);
        }
        const acpi::FirmwareReport report = acpi::readFirmware(tables, uids);
        const cppc::AccessPlan plan =
            cppc::AccessPlan::build(report.descriptors());
        const std::vector<CpuView> views = merge(report, plan);
        if (o.json)
        {
            printJson(tables, report, plan, views, out);
        }
        else
        {
            printText(report, plan, views, out);
        }
        return count(views).refused == 0 ? 0 : 1;
    }
    catch (const std::exception& e)
    {
        err << "cppcgovctl acpi-inspect: " << e.what() << "\n";
        return 1;
    }
}

} // namespace cppcgov::tools
