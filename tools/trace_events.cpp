// SPDX-License-Identifier: Apache-2.0
#include "trace_events.hpp"

#include <array>

namespace cppcgov::tools
{

TraceEventWriter::TraceEventWriter(
    std::ostream& out,
    std::span<const std::pair<std::string, std::string>> otherData) :
    json_(out, 2)
{
    json_.beginObject();
    json_.field("displayTimeUnit", "ms");
    json_.key("otherData");
    json_.beginObject();
    for (const auto& [key, value] : otherData)
    {
        json_.field(key, value);
    }
    json_.endObject();
    json_.key("traceEvents");
    json_.beginArray();
}

void TraceEventWriter::begin(std::string_view ph, std::string_view name,
                             std::uint64_t tid, std::uint64_t tsUs)
{
    json_.beginObject();
    json_.field("name", name);
    json_.field("ph", ph);
    json_.field("pid", pid);
    json_.field("tid", tid);
    json_.field("ts", tsUs);
    ++events_;
}

void TraceEventWriter::args(std::span<const Arg> args)
{
    json_.key("args");
    json_.beginObject();
    for (const Arg& a : args)
    {
        if (a.isNumber)
        {
            json_.field(a.key, a.number);
        }
        else
        {
            json_.field(a.key, a.text);
        }
    }
    json_.endObject();
}

void TraceEventWriter::processName(std::string_view name)
{
    begin("M", "process_name", pid, 0);
    const std::array<Arg, 1> a{traceArg("name", std::string(name))};
    args(a);
    json_.endObject();
}

void TraceEventWriter::cpuTrack(std::uint32_t cpu)
{
    begin("M", "thread_name", cpuTid(cpu), 0);
    const std::array<Arg, 1> name{
        traceArg("name", "CPU " + std::to_string(cpu))};
    args(name);
    json_.endObject();
    begin("M", "thread_sort_index", cpuTid(cpu), 0);
    const std::array<Arg, 1> index{traceArg("sort_index", std::uint64_t{cpu})};
    args(index);
    json_.endObject();
}

void TraceEventWriter::counter(std::uint64_t tsUs, std::string_view name,
                               std::string_view series, std::uint64_t value)
{
    begin("C", name, pid, tsUs);
    const std::array<Arg, 1> a{traceArg(std::string(series), value)};
    args(a);
    json_.endObject();
}

void TraceEventWriter::cpuSliceBegin(std::uint64_t tsUs, std::uint32_t cpu,
                                     std::string_view name)
{
    begin("B", name, cpuTid(cpu), tsUs);
    json_.endObject();
}

void TraceEventWriter::cpuSliceEnd(std::uint64_t tsUs, std::uint32_t cpu)
{
    begin("E", "", cpuTid(cpu), tsUs);
    json_.endObject();
}

void TraceEventWriter::async(std::string_view ph, std::uint64_t tsUs,
                             std::string_view category, std::uint64_t id,
                             std::string_view name, std::span<const Arg> args)
{
    begin(ph, name, pid, tsUs);
    json_.field("cat", category);
    json_.field("id", id);
    this->args(args);
    json_.endObject();
}

void TraceEventWriter::instant(std::uint64_t tsUs, std::string_view name,
                               std::span<const Arg> args)
{
    begin("i", name, pid, tsUs);
    json_.field("s", "g");
    this->args(args);
    json_.endObject();
}

void TraceEventWriter::finish()
{
    json_.endArray();
    json_.endObject();
}

TraceEventWriter::Arg traceArg(std::string key, std::string text)
{
    return {std::move(key), std::move(text), 0, false};
}

TraceEventWriter::Arg traceArg(std::string key, std::uint64_t number)
{
    return {std::move(key), {}, number, true};
}

} // namespace cppcgov::tools
