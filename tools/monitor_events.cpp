// SPDX-License-Identifier: Apache-2.0
#include "monitor_events.hpp"

#include "status_command.hpp"

#include <array>
#include <cstdio>
#include <ctime>
#include <map>

namespace cppcgov::tools
{
namespace
{

using SystemClock = std::chrono::system_clock;

// The seconds since the epoch and the milliseconds within the second.
std::pair<std::time_t, int> split(SystemClock::time_point t)
{
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        t.time_since_epoch())
                        .count();
    const auto seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    return {static_cast<std::time_t>(seconds),
            static_cast<int>(ms - seconds * 1000)};
}

std::string formatTime(SystemClock::time_point t, bool utc)
{
    const auto [seconds, ms] = split(t);
    std::tm tm{};
    if ((utc ? ::gmtime_r(&seconds, &tm) : ::localtime_r(&seconds, &tm)) ==
        nullptr)
    {
        return "?";
    }
    std::array<char, 64> buf{};
    if (utc)
    {
        std::snprintf(buf.data(), buf.size(),
                      "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                      tm.tm_sec, ms);
    }
    else
    {
        std::snprintf(buf.data(), buf.size(), "%02d:%02d:%02d.%03d", tm.tm_hour,
                      tm.tm_min, tm.tm_sec, ms);
    }
    return buf.data();
}

} // namespace

std::string describeHandleStarted(const HandleInfo& h)
{
    std::string s = "HandleStarted: handle " + std::to_string(h.handle) + " " +
                    h.kind + " ";
    s += h.kind == "clamp" ? formatClamp(h.utilMin, h.utilMax)
                           : formatLatency(h.latencyUs);
    s += " of " + h.owner;
    s += h.task == 0 ? std::string(" on its CPUs")
                     : " for task " + std::to_string(h.task);
    return s;
}

std::string describeHandleEnded(std::uint64_t handle, std::string_view owner,
                                std::string_view reason)
{
    return "HandleEnded: handle " + std::to_string(handle) + " of " +
           std::string(owner) + " (" + std::string(reason) + ")";
}

std::string describePolicyChanged(std::string_view policy,
                                  std::span<const std::string> files)
{
    std::string s = "PolicyChanged: " + std::string(policy);
    for (std::size_t i = 0; i < files.size(); ++i)
    {
        s += (i == 0 ? " from '" : ", '") + files[i] + "'";
    }
    return s;
}

MonitorEvent handleStartedEvent(SystemClock::time_point time,
                                const HandleInfo& h)
{
    return {time, "HandleStarted", describeHandleStarted(h),
            [h](JsonWriter& j) { writeHandleFields(h, j); }};
}

MonitorEvent handleEndedEvent(SystemClock::time_point time,
                              std::uint64_t handle, const std::string& owner,
                              const std::string& reason)
{
    return {time, "HandleEnded", describeHandleEnded(handle, owner, reason),
            [handle, owner, reason](JsonWriter& j) {
        j.field("handle", handle);
        j.field("owner", owner);
        j.field("reason", reason);
            }};
}

MonitorEvent policyChangedEvent(SystemClock::time_point time,
                                const std::string& policy,
                                const std::vector<std::string>& files)
{
    return {time, "PolicyChanged", describePolicyChanged(policy, files),
            [policy, files](JsonWriter& j) {
        j.field("policy", policy);
        j.key("files");
        j.beginArray();
        for (const std::string& f : files)
        {
            j.value(f);
        }
        j.endArray();
            }};
}

std::vector<MonitorEvent> degradedChanges(SystemClock::time_point time,
                                          const std::vector<CpuState>& before,
                                          const std::vector<CpuState>& now)
{
    std::map<std::uint32_t, const std::string*> was;
    for (const CpuState& c : before)
    {
        was.emplace(c.cpu, &c.degraded);
    }
    std::vector<MonitorEvent> events;
    for (const CpuState& c : now)
    {
        const auto it = was.find(c.cpu);
        const std::string& previous =
            it == was.end() ? std::string() : *it->second;
        if (previous == c.degraded)
        {
            continue;
        }
        const std::uint32_t cpu = c.cpu;
        const std::string why = c.degraded;
        if (why.empty())
        {
            events.push_back(
                {time, "Recovered", "CPU " + std::to_string(cpu) + " recovered",
                 [cpu](JsonWriter& j) { j.field("cpu", std::uint64_t{cpu}); }});
        }
        else
        {
            events.push_back(
                {time, "Degraded",
                 "CPU " + std::to_string(cpu) + " degraded: " + why,
                 [cpu, why](JsonWriter& j) {
                j.field("cpu", std::uint64_t{cpu});
                j.field("degraded", why);
                 }});
        }
    }
    return events;
}

std::string clockTime(SystemClock::time_point t)
{
    return formatTime(t, false);
}

std::string utcTime(SystemClock::time_point t)
{
    return formatTime(t, true);
}

std::string eventLine(const MonitorEvent& e)
{
    return clockTime(e.time) + " " + e.text;
}

void printEventJson(const MonitorEvent& e, std::ostream& out)
{
    JsonWriter j(out, 0); // one line
    j.beginObject();
    j.field("format", "cppcgov-monitor");
    j.field("version", std::uint64_t{1});
    j.field("type", "event");
    j.field("time", utcTime(e.time));
    j.field("event", e.name);
    j.field("text", e.text);
    if (e.fields)
    {
        e.fields(j);
    }
    j.endObject();
}

} // namespace cppcgov::tools
