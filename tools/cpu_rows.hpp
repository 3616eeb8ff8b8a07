// SPDX-License-Identifier: Apache-2.0
// What `status` and `monitor` show of each CPU, as text cells: its state
// as of the daemon's last tick (GetCpuStates) joined with what the daemon
// knows of it (GetCpuInfo): its domain, the policy in force for it after
// overrides, and its performance in MHz beside the abstract units. Also
// the line that says which policy is the default and which CPUs differ.
#pragma once

#include "governor_state.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cppcgov::tools
{

// One CPU's cells; "-" stands for what is unknown or absent.
struct CpuRow
{
    std::uint32_t cpu = 0;
    std::uint32_t domain = 0; // the CPU's own number when unknown
    std::uint16_t util = 0;   // 0..1024, for a bar
    std::size_t handleCount = 0;
    bool degraded = false;
    std::string degradedWhy;  // GetCpuStates' reason, when degraded
    std::string domainText;   // "3", or "-" when GetCpuInfo lacks the CPU
    std::string utilText;     // "512"
    std::string policy;       // "schedutil", or "-"
    std::string clamp;        // "0..1024"
    std::string requested;    // perf units, "-" for 0
    std::string requestedMhz; // "2600", "-" when the frequencies are unknown
    std::string delivered;    // perf units, "-" for 0 (unknown)
    std::string deliveredMhz; // "-" too when the delivered perf is unknown
    std::string reason;       // the policy's reason, or "degraded"
    std::string latency;      // "50 us", "-" for no limit
    std::string handles;      // "3,5", "-" for none
};

// The MHz of `perf` on `line`, rounded to the nearest: "2600"; "-" for
// perf 0 (unknown) or when the line has no frequencies.
[[nodiscard]] std::string formatMhz(const cppc::FreqLine& line,
                                    std::uint32_t perf);

// "3,5": the handles' numbers, or "-" for none.
[[nodiscard]] std::string joinHandles(const std::vector<CpuHandle>& handles);

// The rows of `s`'s CPUs, in CPU order; `only` (sorted), when not empty,
// keeps those CPUs alone.
[[nodiscard]] std::vector<CpuRow> cpuRows(const GovernorSnapshot& s,
                                          std::span<const std::uint32_t> only);

// "CPU 1 degraded: <why>".
[[nodiscard]] std::string degradedLine(const CpuRow& r);

// The policy line: "schedutil" when every CPU runs the default, else
// "schedutil (the default; CPUs 4-7 differ: 4-5 powersave, 6-7
// performance)".
[[nodiscard]] std::string policySummary(const GovernorSnapshot& s);

} // namespace cppcgov::tools
