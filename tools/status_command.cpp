// SPDX-License-Identifier: Apache-2.0
#include "status_command.hpp"

#include "bus_client.hpp"
#include "bus_errors.hpp"
#include "cpu_rows.hpp"
#include "json_writer.hpp"
#include "statistics_text.hpp"
#include "text_table.hpp"

#include <algorithm>
#include <map>

namespace cppcgov::tools
{

const std::string_view statusUsage =
    "usage: cppcgovctl status [--json] [--handle N] [--bus-address ADDR]\n"
    "\n"
    "Shows cppcgovd's backend, policy and counts, its statistics, every\n"
    "CPU's state as of the daemon's last tick, and the live handles.\n"
    "\n"
    "  --json              machine-readable output (see tools/README.md)\n"
    "  --handle N          live handle N alone: its kind, owner, task,\n"
    "                      bounds and the CPUs where it is active now; exit\n"
    "                      status 1 when no such handle is live\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n"
    "\n"
    "Per CPU: its domain (the CPUs that decide together), the policy in\n"
    "force for it, utilization (0..1024), the clamp of its active tasks, the\n"
    "performance requested and delivered in the firmware's units and in MHz\n"
    "('-': unknown), why the policy chose the request, the resume-latency\n"
    "limit ('-': none) and the clamp handles active on it. Where the backend\n"
    "writes more CPPC controls than Desired, the rest of each CPU's request:\n"
    "the Minimum and Maximum bounds, the energy-performance preference\n"
    "('-': left as it is), autonomous selection and its activity window.\n";

namespace
{

using Align = TextTable::Align;

// A number, or null when there is none.
void numberOrNull(JsonWriter& j, std::string_view key,
                  std::optional<std::uint64_t> n)
{
    j.key(key);
    if (n)
    {
        j.value(*n);
    }
    else
    {
        j.null();
    }
}

// The fields of a CPU that GetCpuInfo gives (`i`; null when it lacks the
// CPU), and its performance in kHz (null: unknown).
void printCpuInfoJson(const CpuInfo* i, const CpuState& c, JsonWriter& j)
{
    const cppc::FreqLine line = i ? i->freq() : cppc::FreqLine{};
    const auto khz =
        [&line](std::uint32_t perf) -> std::optional<std::uint64_t> {
        if (perf == 0)
        {
            return std::nullopt;
        }
        const auto k = line.khz(perf);
        return k ? std::optional<std::uint64_t>(*k) : std::nullopt;
    };
    const auto field = [i](std::uint32_t CpuInfo::*member) {
        return i ? std::optional<std::uint64_t>(i->*member) : std::nullopt;
    };
    numberOrNull(j, "requestedKhz", khz(c.requestedPerf));
    numberOrNull(j, "deliveredKhz", khz(c.deliveredPerf));
    numberOrNull(j, "domain", field(&CpuInfo::domain));
    numberOrNull(j, "psdDomain",
                 i && i->psdDomain ? std::optional<std::uint64_t>(*i->psdDomain)
                                   : std::nullopt);
    j.key("policy");
    if (i)
    {
        j.value(i->policy);
    }
    else
    {
        j.null();
    }
    numberOrNull(j, "lowestPerf", field(&CpuInfo::lowestPerf));
    numberOrNull(j, "lowestNonlinearPerf",
                 field(&CpuInfo::lowestNonlinearPerf));
    numberOrNull(j, "nominalPerf", field(&CpuInfo::nominalPerf));
    numberOrNull(j, "highestPerf", field(&CpuInfo::highestPerf));
    numberOrNull(j, "lowestKhz", field(&CpuInfo::lowestKhz));
    numberOrNull(j, "nominalKhz", field(&CpuInfo::nominalKhz));
}

} // namespace

StatusOptions parseStatusArgs(std::span<const std::string_view> args)
{
    StatusOptions o;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h")
        {
            o.help = true;
        }
        else if (a == "--json")
        {
            o.json = true;
        }
        else if (const auto n = optionValue(args, i, "--handle"))
        {
            o.handle = optionNumber("--handle", *n, 1, UINT64_MAX);
        }
        else if (!takeBusAddress(args, i, o.bus))
        {
            throw UsageError("unexpected argument '" + std::string(a) + "'");
        }
    }
    return o;
}

std::string formatClamp(std::uint16_t min, std::uint16_t max)
{
    return std::to_string(min) + ".." + std::to_string(max);
}

std::string formatLatency(const std::optional<std::uint32_t>& limitUs)
{
    return limitUs ? std::to_string(*limitUs) + " us" : "-";
}

std::string formatPerf(std::uint32_t perf)
{
    return perf == 0 ? "-" : std::to_string(perf);
}

std::optional<HandleDetail> findHandle(const GovernorSnapshot& s,
                                       std::uint64_t handle)
{
    for (const HandleInfo& h : s.handles)
    {
        if (h.handle != handle)
        {
            continue;
        }
        HandleDetail d{h, {}};
        for (const CpuState& c : s.cpus)
        {
            for (const CpuHandle& active : c.handles)
            {
                if (active.handle == handle)
                {
                    d.activeCpus.push_back(c.cpu);
                    break;
                }
            }
        }
        return d;
    }
    return std::nullopt;
}

std::string noSuchHandle(const GovernorSnapshot& s, std::uint64_t handle)
{
    std::string live;
    for (const HandleInfo& h : s.handles)
    {
        live += (live.empty() ? "" : ", ") + std::to_string(h.handle);
    }
    return "no live handle " + std::to_string(handle) +
           (live.empty() ? " (there are none)"
                         : " (the live handles are " + live + ")");
}

void printHandleText(const HandleDetail& d, std::ostream& out)
{
    const HandleInfo& h = d.info;
    std::string cpus;
    for (const std::uint32_t cpu : d.activeCpus)
    {
        cpus += (cpus.empty() ? "" : ",") + std::to_string(cpu);
    }
    const bool clamp = h.kind == "clamp";
    out << "handle    " << h.handle << "\n"
        << "kind      " << h.kind << "\n"
        << "owner     " << h.owner << "\n"
        << "task      " << (h.task == 0 ? "-" : std::to_string(h.task)) << "\n"
        << "clamp     " << (clamp ? formatClamp(h.utilMin, h.utilMax) : "-")
        << "\n"
        << "latency   "
        << (h.kind == "latency" ? formatLatency(h.latencyUs) : "-") << "\n"
        << "cpus      " << (cpus.empty() ? "-" : cpus) << "\n";
}

void writeHandleFields(const HandleInfo& h, JsonWriter& j)
{
    j.field("handle", h.handle);
    j.field("kind", h.kind);
    j.field("owner", h.owner);
    j.field("task", std::uint64_t{h.task});
    j.field("utilMin", std::uint64_t{h.utilMin});
    j.field("utilMax", std::uint64_t{h.utilMax});
    j.field("latencyUs", std::uint64_t{h.latencyUs});
}

void printHandleJson(const HandleDetail& d, std::ostream& out)
{
    const HandleInfo& h = d.info;
    JsonWriter j(out);
    j.beginObject();
    j.field("format", "cppcgov-handle");
    j.field("version", std::uint64_t{1});
    writeHandleFields(h, j);
    j.key("activeCpus");
    j.beginArray();
    for (const std::uint32_t cpu : d.activeCpus)
    {
        j.value(std::uint64_t{cpu});
    }
    j.endArray();
    j.endObject();
}

bool offers(const DaemonInfo& d, std::string_view control)
{
    return std::find(d.controls.begin(), d.controls.end(), control) !=
           d.controls.end();
}

std::string joined(const std::vector<std::string>& names)
{
    std::string out;
    for (const std::string& n : names)
    {
        out += (out.empty() ? "" : ", ") + n;
    }
    return out.empty() ? "-" : out;
}

// The rest of each CPU's request, in the columns of the controls the
// backend writes beyond Desired; nothing when it writes Desired alone.
void printControlsText(const GovernorSnapshot& s, std::ostream& out)
{
    const DaemonInfo& d = s.daemon;
    const bool minMax = offers(d, "min") || offers(d, "max");
    const bool epp = offers(d, "epp");
    const bool autonomous = offers(d, "autonomous");
    const bool window = offers(d, "activity-window");
    if (!minMax && !epp && !autonomous && !window)
    {
        return;
    }
    std::vector<TextTable::Column> columns{{"CPU", Align::right}};
    if (minMax)
    {
        columns.push_back({"MIN", Align::right});
        columns.push_back({"MAX", Align::right});
    }
    if (epp)
    {
        columns.push_back({"EPP", Align::right});
    }
    if (autonomous)
    {
        columns.push_back({"AUTONOMOUS", Align::left});
    }
    if (window)
    {
        columns.push_back({"WINDOW", Align::right});
    }
    TextTable table(columns);
    for (const CpuControls& c : s.controls)
    {
        std::vector<std::string> row{std::to_string(c.cpu)};
        if (minMax)
        {
            row.push_back(formatPerf(c.minPerf));
            row.push_back(formatPerf(c.maxPerf));
        }
        if (epp)
        {
            row.push_back(c.epp ? std::to_string(*c.epp) : "-");
        }
        if (autonomous)
        {
            row.emplace_back(c.autonomous ? "on" : "off");
        }
        if (window)
        {
            row.push_back(c.activityWindowUs
                              ? std::to_string(*c.activityWindowUs) + " us"
                              : "-");
        }
        table.addRow(std::move(row));
    }
    out << "\n";
    table.print(out);
}

// The rest of a CPU's request (`c`; null when GetCpuControls lacks the
// CPU, and then every field is null).
void printControlsJson(const CpuControls* c, JsonWriter& j)
{
    const auto u64 = [](auto v) -> std::optional<std::uint64_t> {
        if (v)
        {
            return std::uint64_t{*v};
        }
        return std::nullopt;
    };
    numberOrNull(j, "minPerf",
                 c ? std::optional<std::uint64_t>(c->minPerf) : std::nullopt);
    numberOrNull(j, "maxPerf",
                 c ? std::optional<std::uint64_t>(c->maxPerf) : std::nullopt);
    numberOrNull(j, "epp", c ? u64(c->epp) : std::nullopt);
    j.key("autonomous");
    if (c)
    {
        j.value(c->autonomous);
    }
    else
    {
        j.null();
    }
    numberOrNull(j, "activityWindowUs",
                 c ? u64(c->activityWindowUs) : std::nullopt);
}

void printStatusText(const GovernorSnapshot& s, std::ostream& out)
{
    const DaemonInfo& d = s.daemon;
    out << "version   " << d.version << "\n"
        << "backend   " << d.backend << "\n"
        << "controls  " << joined(d.controls) << "\n"
        << "policy    " << policySummary(s) << "\n"
        << "cpus      " << d.cpuCount << "\n"
        << "sampling  " << d.samplingPeriodUs << " us from " << d.samplingSource
        << " (" << d.samplingReason << ")\n"
        << "handles   " << d.clampCount << " clamp, " << d.latencyCount
        << " latency\n\n";
    if (const std::vector<std::string> lines = statisticsLines(s.statistics);
        !lines.empty())
    {
        for (const std::string& line : lines)
        {
            out << line << "\n";
        }
        out << "\n";
    }

    TextTable cpus(
        {{"CPU", Align::right},
         {"DOMAIN", Align::right},
         {"POLICY", Align::left},
         {"UTIL", Align::right},
         {"CLAMP", Align::left},
         {"REQUESTED", Align::right},
         {"MHZ", Align::right},
         {"DELIVERED", Align::right},
         {"MHZ", Align::right},
         {"REASON", Align::left},
         {"LATENCY", Align::right},
         {"HANDLES", Align::left}});
    const std::vector<CpuRow> rows = cpuRows(s, {});
    for (const CpuRow& r : rows)
    {
        cpus.addRow({std::to_string(r.cpu), r.domainText, r.policy, r.utilText,
                     r.clamp, r.requested, r.requestedMhz, r.delivered,
                     r.deliveredMhz, r.reason, r.latency, r.handles});
    }
    cpus.print(out);
    for (const CpuRow& r : rows)
    {
        if (r.degraded)
        {
            out << degradedLine(r) << "\n";
        }
    }
    printControlsText(s, out);

    out << "\n";
    if (s.handles.empty())
    {
        out << "no live handles\n";
        return;
    }
    TextTable handles({{"HANDLE", Align::right},
                       {"KIND", Align::left},
                       {"OWNER", Align::left},
                       {"TASK", Align::right},
                       {"CLAMP", Align::left},
                       {"LATENCY", Align::right}});
    for (const HandleInfo& h : s.handles)
    {
        const bool clamp = h.kind == "clamp";
        const bool latency = h.kind == "latency";
        handles.addRow({std::to_string(h.handle), h.kind, h.owner,
                        h.task == 0 ? "-" : std::to_string(h.task),
                        clamp ? formatClamp(h.utilMin, h.utilMax) : "-",
                        latency ? formatLatency(h.latencyUs) : "-"});
    }
    handles.print(out);
}

void writeStatusFields(const GovernorSnapshot& s,
                       std::span<const std::uint32_t> only, JsonWriter& j)
{
    const auto number = [&j](std::string_view key, std::uint64_t n) {
        j.field(key, n);
    };
    const DaemonInfo& d = s.daemon;
    j.key("daemon");
    j.beginObject();
    j.field("version", d.version);
    j.field("backend", d.backend);
    j.field("policy", d.policy);
    number("cpuCount", d.cpuCount);
    number("samplingPeriodUs", d.samplingPeriodUs);
    j.field("samplingSource", d.samplingSource);
    j.field("samplingReason", d.samplingReason);
    number("clampCount", d.clampCount);
    number("latencyCount", d.latencyCount);
    j.key("controls");
    j.beginArray();
    for (const std::string& c : d.controls)
    {
        j.value(c);
    }
    j.endArray();
    j.endObject();

    std::map<std::uint32_t, const CpuInfo*> info;
    for (const CpuInfo& i : s.info)
    {
        info.emplace(i.cpu, &i);
    }
    std::map<std::uint32_t, const CpuControls*> controls;
    for (const CpuControls& c : s.controls)
    {
        controls.emplace(c.cpu, &c);
    }
    j.key("cpus");
    j.beginArray();
    for (const CpuState& c : s.cpus)
    {
        if (!only.empty() &&
            !std::binary_search(only.begin(), only.end(), c.cpu))
        {
            continue;
        }
        j.beginObject();
        number("cpu", c.cpu);
        number("util", c.util);
        number("clampMin", c.clampMin);
        number("clampMax", c.clampMax);
        number("requestedPerf", c.requestedPerf);
        number("deliveredPerf", c.deliveredPerf);
        j.field("reason", c.reason);
        j.key("degraded");
        if (c.degraded.empty())
        {
            j.null();
        }
        else
        {
            j.value(c.degraded);
        }
        j.key("latencyLimitUs");
        if (c.latencyLimitUs)
        {
            j.value(std::uint64_t{*c.latencyLimitUs});
        }
        else
        {
            j.null();
        }
        const auto i = info.find(c.cpu);
        printCpuInfoJson(i == info.end() ? nullptr : i->second, c, j);
        const auto k = controls.find(c.cpu);
        printControlsJson(k == controls.end() ? nullptr : k->second, j);
        j.key("handles");
        j.beginArray();
        for (const CpuHandle& h : c.handles)
        {
            j.beginObject();
            number("handle", h.handle);
            j.field("owner", h.owner);
            number("task", h.task);
            number("utilMin", h.utilMin);
            number("utilMax", h.utilMax);
            j.endObject();
        }
        j.endArray();
        j.endObject();
    }
    j.endArray();

    j.key("handles");
    j.beginArray();
    for (const HandleInfo& h : s.handles)
    {
        j.beginObject();
        writeHandleFields(h, j);
        j.endObject();
    }
    j.endArray();

    j.key("statistics");
    j.beginObject();
    for (const auto& [name, value] : s.statistics)
    {
        number(name, value);
    }
    j.endObject();
}

void printStatusJson(const GovernorSnapshot& s, std::ostream& out)
{
    JsonWriter j(out);
    j.beginObject();
    j.field("format", "cppcgov-status");
    j.field("version", std::uint64_t{1});
    writeStatusFields(s, {}, j);
    j.endObject();
}

int runStatus(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err)
{
    StatusOptions o;
    if (const auto done = parseCommand("status", statusUsage, args, out, err,
                                       parseStatusArgs, o))
    {
        return *done;
    }
    return onBus(o.bus, bus, "read cppcgovd's state", err,
                 [&](BusClient& client) {
        const GovernorSnapshot s = client.snapshot();
        if (o.handle)
        {
            const std::optional<HandleDetail> d = findHandle(s, *o.handle);
            if (!d)
            {
                err << "cppcgovctl: " << noSuchHandle(s, *o.handle) << " ("
                    << dbus::error::noSuchHandle << ")\n";
                return 1;
            }
            if (o.json)
            {
                printHandleJson(*d, out);
            }
            else
            {
                printHandleText(*d, out);
            }
            return 0;
        }
        if (o.json)
        {
            printStatusJson(s, out);
        }
        else
        {
            printStatusText(s, out);
        }
        return 0;
    });
}

} // namespace cppcgov::tools
