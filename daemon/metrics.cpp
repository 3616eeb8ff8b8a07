// SPDX-License-Identifier: Apache-2.0
#include "daemon/metrics.hpp"

#include <array>
#include <functional>

namespace cppcgov::daemon
{
namespace
{

using Type = PrometheusText::Type;

constexpr std::array<policies::Reason, 11> reasons = {
    policies::Reason::utilization,
    policies::Reason::clampMin,
    policies::Reason::clampMax,
    policies::Reason::floor,
    policies::Reason::ceiling,
    policies::Reason::rateLimited,
    policies::Reason::burst,
    policies::Reason::fixed,
    policies::Reason::autonomous,
    policies::Reason::desiredExcursion,
    policies::Reason::minimumExcursion,
};

constexpr std::array<std::string_view, 2> sources = {"bpf", "procfs"};

double ratio(std::uint16_t util) noexcept
{
    return static_cast<double>(util) / policies::utilScale;
}

// One gauge family with a series per CPU, from `value` (nothing: no
// series for that CPU).
template <class Value>
void perCpu(PrometheusText& out, const MetricsSnapshot& s,
            std::string_view name, std::string_view help, const Value& value)
{
    out.family(name, help, Type::gauge);
    for (const MetricsCpu& c : s.cpus)
    {
        if (const std::optional<double> v{value(c)})
        {
            const std::string cpu = std::to_string(c.cpu);
            const std::array<Label, 1> labels = {Label{"cpu", cpu}};
            out.sample(name, labels, *v);
        }
    }
}

void counter(PrometheusText& out, std::string_view name, std::string_view help,
             std::uint64_t value)
{
    out.family(name, help, Type::counter);
    out.sample(name, {}, value);
}

void cpuFamilies(PrometheusText& out, const MetricsSnapshot& s)
{
    const auto khz =
        [](const std::optional<std::uint32_t>& v) -> std::optional<double> {
        if (v)
        {
            return static_cast<double>(*v);
        }
        return std::nullopt;
    };
    perCpu(out, s, "cppcgov_cpu_requested_perf",
           "Performance requested for the CPU, in the firmware's abstract "
           "units (CPPC Desired Performance).",
           [](const MetricsCpu& c) { return c.requestedPerf; });
    perCpu(out, s, "cppcgov_cpu_delivered_perf",
           "Performance the CPU delivered over the last tick, in the "
           "firmware's abstract units (0 when unknown).",
           [](const MetricsCpu& c) { return c.deliveredPerf; });
    perCpu(out, s, "cppcgov_cpu_requested_khz",
           "Performance requested for the CPU, in kHz (only where the "
           "firmware gives the CPU's frequencies).",
           [&](const MetricsCpu& c) { return khz(c.requestedKhz); });
    perCpu(out, s, "cppcgov_cpu_delivered_khz",
           "Performance the CPU delivered over the last tick, in kHz (only "
           "where the firmware gives the CPU's frequencies).",
           [&](const MetricsCpu& c) { return khz(c.deliveredKhz); });
    perCpu(out, s, "cppcgov_cpu_utilization_ratio",
           "The CPU's averaged utilization, 0 to 1.",
           [](const MetricsCpu& c) { return ratio(c.util); });
    perCpu(out, s, "cppcgov_cpu_clamp_min_ratio",
           "The util_min of the clamps active on the CPU, 0 to 1.",
           [](const MetricsCpu& c) { return ratio(c.clamp.min); });
    perCpu(out, s, "cppcgov_cpu_clamp_max_ratio",
           "The util_max of the clamps active on the CPU, 0 to 1 (1 when "
           "other work lifts the ceiling).",
           [](const MetricsCpu& c) { return ratio(c.clamp.max); });

    out.family("cppcgov_cpu_reason",
               "Why the CPU's request is what it is: 1 for the current "
               "reason, 0 for the others.",
               Type::gauge);
    for (const MetricsCpu& c : s.cpus)
    {
        const std::string cpu = std::to_string(c.cpu);
        for (const policies::Reason r : reasons)
        {
            const std::array<Label, 2> labels = {
                Label{"cpu", cpu}, Label{"reason", policies::reasonName(r)}};
            out.sample("cppcgov_cpu_reason", labels,
                       std::uint64_t{c.reason == r ? 1U : 0U});
        }
    }
    out.family("cppcgov_cpu_excursions_total",
               "Ticks in which the platform's PerformanceLimited register "
               "said it held the CPU below Desired (kind desired) or below "
               "Minimum (kind minimum) performance.",
               Type::counter);
    for (const MetricsCpu& c : s.cpus)
    {
        const std::string cpu = std::to_string(c.cpu);
        const std::array<Label, 2> desired = {Label{"cpu", cpu},
                                              Label{"kind", "desired"}};
        const std::array<Label, 2> minimum = {Label{"cpu", cpu},
                                              Label{"kind", "minimum"}};
        out.sample("cppcgov_cpu_excursions_total", desired,
                   c.desiredExcursions);
        out.sample("cppcgov_cpu_excursions_total", minimum,
                   c.minimumExcursions);
    }
    perCpu(out, s, "cppcgov_cpu_degraded",
           "1 while an access to the CPU's hardware failed or has not "
           "returned within its deadline, or a firmware check finds its "
           "domain wrong (cppcgov_firmware_finding), else 0.",
           [](const MetricsCpu& c) { return c.degraded ? 1.0 : 0.0; });
}

void domainFamilies(PrometheusText& out, const MetricsSnapshot& s)
{
    const auto perDomain =
        [&](std::string_view name, std::string_view help,
            const std::function<std::uint64_t(const MetricsDomain&)>& value) {
        out.family(name, help, Type::gauge);
        for (const MetricsDomain& d : s.domains)
        {
            const std::string domain = std::to_string(d.domain);
            const std::array<Label, 1> labels = {Label{"domain", domain}};
            out.sample(name, labels, value(d));
        }
    };
    perDomain("cppcgov_domain_cpus",
              "The CPUs of the domain (the CPUs that decide together).",
              [](const MetricsDomain& d) { return d.cpus; });
    perDomain("cppcgov_domain_requested_perf",
              "Performance requested for the domain, in abstract units.",
              [](const MetricsDomain& d) { return d.requestedPerf; });
    constexpr std::string_view finding = "cppcgov_firmware_finding";
    out.family(finding,
               "1 while a firmware check finds a CPU of the domain wrong "
               "(check: reference-perf, counter-rate, counters-stuck, "
               "follow), else 0.",
               Type::gauge);
    for (const MetricsDomain& d : s.domains)
    {
        const std::string domain = std::to_string(d.domain);
        for (std::size_t c = 0; c < cppc::sanityCheckCount; ++c)
        {
            const std::array<Label, 2> labels = {
                Label{"domain", domain},
                Label{"check",
                      cppc::checkName(static_cast<cppc::SanityCheck>(c))}};
            out.sample(finding, labels,
                       std::uint64_t{d.firmwareFindings[c] ? 1U : 0U});
        }
    }
}

} // namespace

std::string renderMetrics(const MetricsSnapshot& s)
{
    PrometheusText out;
    const std::array<Label, 3> info = {Label{"version", s.version},
                                       Label{"backend", s.backend},
                                       Label{"policy", s.policy}};
    out.family("cppcgov_info",
               "cppcgovd's version, backend and default policy (always 1).",
               Type::gauge);
    out.sample("cppcgov_info", info, std::uint64_t{1});

    out.family("cppcgov_sampling_source",
               "Where the load comes from: 1 for the source in use (bpf: the "
               "scheduler's events; procfs: /proc/stat).",
               Type::gauge);
    for (const std::string_view source : sources)
    {
        const std::array<Label, 1> labels = {Label{"source", source}};
        out.sample("cppcgov_sampling_source", labels,
                   std::uint64_t{source == s.samplingSource ? 1U : 0U});
    }

    cpuFamilies(out, s);
    domainFamilies(out, s);

    out.family("cppcgov_hints", "Live hints (handles) by kind.", Type::gauge);
    const std::array<Label, 1> clamp = {Label{"kind", "clamp"}};
    const std::array<Label, 1> latency = {Label{"kind", "latency"}};
    const std::array<Label, 1> energy = {Label{"kind", "energy"}};
    out.sample("cppcgov_hints", clamp, s.clampHints);
    out.sample("cppcgov_hints", latency, s.latencyHints);
    out.sample("cppcgov_hints", energy, s.energyHints);

    out.family("cppcgov_tick_lateness_seconds",
               "How late each tick ran after its deadline.", Type::histogram);
    out.histogram("cppcgov_tick_lateness_seconds", {}, s.tickLateness);
    out.family("cppcgov_hint_to_write_seconds",
               "From a clamp call's arrival to the tick that made the first "
               "write it caused.",
               Type::histogram);
    out.histogram("cppcgov_hint_to_write_seconds", {}, s.hintToWrite);

    counter(out, "cppcgov_ticks_total", "Ticks run.", s.ticks);
    counter(out, "cppcgov_ticks_skipped_total",
            "Tick deadlines missed by a whole sampling period.",
            s.ticksSkipped);
    counter(out, "cppcgov_writes_total", "Performance requests written.",
            s.writes);
    counter(out, "cppcgov_write_errors_total",
            "Ticks whose writes of performance requests failed.",
            s.writeErrors);
    counter(out, "cppcgov_access_errors_total",
            "Accesses to the hardware that failed.", s.accessErrors);

    out.family("cppcgov_process_cpu_seconds_total",
               "CPU time cppcgovd used, user and system, in seconds.",
               Type::counter);
    out.sample("cppcgov_process_cpu_seconds_total", {}, s.processCpuSeconds);
    out.family("cppcgov_process_resident_memory_bytes",
               "cppcgovd's resident memory, in bytes.", Type::gauge);
    out.sample("cppcgov_process_resident_memory_bytes", {},
               s.processResidentBytes);
    return out.text();
}

} // namespace cppcgov::daemon
