// SPDX-License-Identifier: Apache-2.0
// The events `cppcgovctl monitor` shows: the interface's signals
// (HandleStarted, HandleEnded, PolicyChanged) and the CPUs that became
// degraded or recovered between two refreshes, each with the time it was
// seen, as a line of text and as a JSON object.
#pragma once

#include "governor_state.hpp"
#include "json_writer.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

struct MonitorEvent
{
    std::chrono::system_clock::time_point time;
    std::string name; // "HandleStarted", ..., "Degraded", "Recovered"
    std::string text; // what the line says after the time
    // Writes the event's own fields into the object `j` has open.
    std::function<void(JsonWriter& j)> fields;
};

// One line for a signal of the interface, or a change of a CPU.
[[nodiscard]] std::string describeHandleStarted(const HandleInfo& h);
[[nodiscard]] std::string describeHandleEnded(
    std::uint64_t handle, std::string_view owner, std::string_view reason);
[[nodiscard]] std::string describePolicyChanged(
    std::string_view policy, std::span<const std::string> files);

// The events of each signal, seen at `time`.
[[nodiscard]] MonitorEvent handleStartedEvent(
    std::chrono::system_clock::time_point time, const HandleInfo& h);
[[nodiscard]] MonitorEvent handleEndedEvent(
    std::chrono::system_clock::time_point time, std::uint64_t handle,
    const std::string& owner, const std::string& reason);
[[nodiscard]] MonitorEvent policyChangedEvent(
    std::chrono::system_clock::time_point time, const std::string& policy,
    const std::vector<std::string>& files);

// The CPUs of `now` whose degraded reason differs from `before` (a CPU
// missing from `before` counts as not degraded): "CPU 3 degraded: <why>"
// or "CPU 3 recovered", in CPU order.
[[nodiscard]] std::vector<MonitorEvent> degradedChanges(
    std::chrono::system_clock::time_point time,
    const std::vector<CpuState>& before, const std::vector<CpuState>& now);

// "12:04:05.123": the local time of day, to the millisecond.
[[nodiscard]] std::string clockTime(std::chrono::system_clock::time_point t);

// "2025-03-01T12:04:05.123Z": the time in UTC (RFC 3339).
[[nodiscard]] std::string utcTime(std::chrono::system_clock::time_point t);

// "12:04:05.123 HandleEnded: handle 7 of :1.9 (task-exited)".
[[nodiscard]] std::string eventLine(const MonitorEvent& e);

// {"type": "event", "time": utcTime, "event": name, "text": text, ...its
// fields}, on one line.
void printEventJson(const MonitorEvent& e, std::ostream& out);

} // namespace cppcgov::tools
