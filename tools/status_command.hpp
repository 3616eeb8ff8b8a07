// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl status`: cppcgovd's properties, its per-CPU state and its
// live handles, as text tables or as a stable JSON object (--json,
// documented in tools/README.md). Also the cell formatting that `monitor`
// shares.
#pragma once

#include "args.hpp"
#include "governor_state.hpp"
#include "json_writer.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

extern const std::string_view statusUsage;

struct StatusOptions
{
    BusOptions bus;
    bool json = false;
    bool help = false;
    std::optional<std::uint64_t> handle; // --handle N: that handle alone
};

// One live handle and the CPUs where it is active now (a clamp's task is
// running or runnable there, as GetCpuStates lists it; none for a latency
// request, which the interface does not place).
struct HandleDetail
{
    HandleInfo info;
    std::vector<std::uint32_t> activeCpus;
};

// Parses the arguments after "status". Throws UsageError.
[[nodiscard]] StatusOptions parseStatusArgs(
    std::span<const std::string_view> args);

// "512..1024".
[[nodiscard]] std::string formatClamp(std::uint16_t min, std::uint16_t max);

// "50 us", or "-" for no limit.
[[nodiscard]] std::string formatLatency(
    const std::optional<std::uint32_t>& limitUs);

// The performance value, or "-" for 0 (unknown).
[[nodiscard]] std::string formatPerf(std::uint32_t perf);

// Handle `handle` of `s`, or nothing when it is not live.
[[nodiscard]] std::optional<HandleDetail> findHandle(const GovernorSnapshot& s,
                                                     std::uint64_t handle);

// Why `handle` cannot be shown: "no live handle 9 (the live handles are
// 3, 5)", or "... (there are none)".
[[nodiscard]] std::string noSuchHandle(const GovernorSnapshot& s,
                                       std::uint64_t handle);

// The fields of a ListHandles entry ("handle", "kind", "owner", "task",
// "utilMin", "utilMax", "latencyUs") into the object `j` has open.
void writeHandleFields(const HandleInfo& h, JsonWriter& j);

// --handle N: one "key value" line per field, or the JSON object
// ("format": "cppcgov-handle", "version": 1).
void printHandleText(const HandleDetail& h, std::ostream& out);
void printHandleJson(const HandleDetail& h, std::ostream& out);

// The text form: properties, the per-CPU table, the handle table.
void printStatusText(const GovernorSnapshot& s, std::ostream& out);

// The JSON form ("format": "cppcgov-status", "version": 1).
void printStatusJson(const GovernorSnapshot& s, std::ostream& out);

// The fields of the JSON form after "format" and "version" ("daemon",
// "cpus", "handles", "statistics"), into the object `j` has open; `only`
// (sorted), when not empty, keeps those CPUs alone in "cpus".
void writeStatusFields(const GovernorSnapshot& s,
                       std::span<const std::uint32_t> only, JsonWriter& j);

// Runs the command. `bus` is the global bus choice, which the command's
// own --bus-address overrides. Returns the exit status: 0; 1 for a D-Bus
// error (said as a sentence, bus_errors.hpp) or a --handle that is not
// live (NoSuchHandle); 2 for a usage error.
int runStatus(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
