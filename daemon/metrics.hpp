// SPDX-License-Identifier: Apache-2.0
// cppcgovd's metrics in the Prometheus text exposition format: a plain
// snapshot of the daemon (MetricsSnapshot, filled on the loop) rendered
// into the text that GetMetrics returns and the textfile collector's file
// holds (textfile_writer.hpp). Every name starts with cppcgov_, the
// daemon's own process figures included (cppcgov_process_*: node_exporter
// exports process_* of its own, and the same name from two sources breaks
// the scrape).
//
// Per CPU (label cpu): requested and delivered performance in the
// firmware's abstract units and in kHz (a kHz series only where the
// frequencies are known), utilization and the active clamp as ratios of
// the kernel's 1024, why the request is what it is (one series per
// reason, 1 for the current one, the excursion reasons when the
// platform's PerformanceLimited bits were set), the excursions counted
// (counter, label kind desired or minimum), degraded (0/1). Per domain (label
// domain, the set of CPUs deciding together): its CPU count and the
// request, and per firmware check (label check, firmware_sanity.hpp's
// names) cppcgov_firmware_finding: 1 while a CPU of the domain has that
// finding. Then the live hints by kind, the tick lateness and
// hint-to-write latency histograms (seconds, since start), the counters
// (ticks, ticks skipped, writes, write errors, access errors), the
// daemon's CPU time and resident memory, the sampling source (one series
// per source, 1 for the one in use) and cppcgov_info (version, backend,
// default policy). No I/O.
#pragma once

#include "daemon/prometheus_text.hpp"
#include "lib/firmware_sanity.hpp"
#include "policies/policy.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

struct MetricsCpu
{
    std::uint32_t cpu = 0;
    std::uint32_t requestedPerf = 0;
    std::uint32_t deliveredPerf = 0;
    // Nothing when the CPU's frequencies are unknown.
    std::optional<std::uint32_t> requestedKhz;
    std::optional<std::uint32_t> deliveredKhz;
    // 0..1024, the kernel's scale.
    std::uint16_t util = 0;
    policies::Clamp clamp;
    policies::Reason reason = policies::Reason::utilization;
    bool degraded = false;
    // PerformanceLimited excursions since start (governor.hpp CpuView).
    std::uint64_t desiredExcursions = 0;
    std::uint64_t minimumExcursions = 0;
};

struct MetricsDomain
{
    std::uint32_t domain = 0;
    std::uint32_t cpus = 0;
    std::uint32_t requestedPerf = 0;
    // Per cppc::SanityCheck: whether a CPU of the domain has its finding.
    std::array<bool, cppc::sanityCheckCount> firmwareFindings{};
};

struct MetricsSnapshot
{
    std::string version;
    std::string backend;
    std::string policy;
    // "bpf" or "procfs".
    std::string samplingSource;
    std::vector<MetricsCpu> cpus;
    std::vector<MetricsDomain> domains;
    std::uint64_t clampHints = 0;
    std::uint64_t latencyHints = 0;
    std::uint64_t energyHints = 0;
    HistogramValues tickLateness;
    HistogramValues hintToWrite;
    std::uint64_t ticks = 0;
    std::uint64_t ticksSkipped = 0;
    std::uint64_t writes = 0;
    std::uint64_t writeErrors = 0;
    std::uint64_t accessErrors = 0;
    double processCpuSeconds = 0;
    std::uint64_t processResidentBytes = 0;
};

// The exposition text of `snapshot`.
[[nodiscard]] std::string renderMetrics(const MetricsSnapshot& snapshot);

} // namespace cppcgov::daemon
