// SPDX-License-Identifier: Apache-2.0
// TraceEventWriter: a Chrome trace-event JSON document, as Perfetto's UI
// (ui.perfetto.dev, "Open trace file") and chrome://tracing open it,
// streamed to an ostream one event per line: {"displayTimeUnit": "ms",
// "otherData": {...}, "traceEvents": [...]}. Timestamps are microseconds
// (of CLOCK_MONOTONIC for `cppcgovctl record`). Everything is in one
// process, `pid`; CPU n's events are on the thread track cpuTid(n).
#pragma once

#include "json_writer.hpp"

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cppcgov::tools
{

class TraceEventWriter
{
  public:
    static constexpr std::uint64_t pid = 1;

    // The thread id of CPU `cpu`'s track.
    static constexpr std::uint64_t cpuTid(std::uint32_t cpu) noexcept
    {
        return 1000 + std::uint64_t{cpu};
    }

    // Starts the document with `otherData` (shown by the UI as the
    // trace's metadata) and opens the event array.
    TraceEventWriter(
        std::ostream& out,
        std::span<const std::pair<std::string, std::string>> otherData);

    // "M" events: the process's name; CPU `cpu`'s track named "CPU n" and
    // sorted by its number.
    void processName(std::string_view name);
    void cpuTrack(std::uint32_t cpu);

    // A "C" event: series `series` of counter `name` is `value` from `tsUs`
    // on. Perfetto's UI shows each series as a track of its own, named
    // "NAME SERIES" ("CPU 3 util").
    void counter(std::uint64_t tsUs, std::string_view name,
                 std::string_view series, std::uint64_t value);

    // "B" and "E" events on CPU `cpu`'s track: a slice called `name`.
    void cpuSliceBegin(std::uint64_t tsUs, std::uint32_t cpu,
                       std::string_view name);
    void cpuSliceEnd(std::uint64_t tsUs, std::uint32_t cpu);

    // String or number arguments of an event.
    struct Arg
    {
        std::string key;
        std::string text; // used when !isNumber
        std::uint64_t number = 0;
        bool isNumber = false;
    };

    // "b" and "e" events of category `category`: the async slice `name`
    // with id `id`, with `args` at either end.
    void asyncBegin(std::uint64_t tsUs, std::string_view category,
                    std::uint64_t id, std::string_view name,
                    std::span<const Arg> args)
    {
        async("b", tsUs, category, id, name, args);
    }
    void asyncEnd(std::uint64_t tsUs, std::string_view category,
                  std::uint64_t id, std::string_view name,
                  std::span<const Arg> args)
    {
        async("e", tsUs, category, id, name, args);
    }

    // An "i" event of global scope (a line across the whole trace).
    void instant(std::uint64_t tsUs, std::string_view name,
                 std::span<const Arg> args);

    // Closes the event array and the document. Nothing may follow.
    void finish();

    // Events written so far (metadata included).
    std::uint64_t events() const noexcept
    {
        return events_;
    }

  private:
    // Opens an event object with its common fields; the caller adds its
    // own and closes it.
    void begin(std::string_view ph, std::string_view name, std::uint64_t tid,
               std::uint64_t tsUs);
    void args(std::span<const Arg> args);
    void async(std::string_view ph, std::uint64_t tsUs,
               std::string_view category, std::uint64_t id,
               std::string_view name, std::span<const Arg> args);

    JsonWriter json_;
    std::uint64_t events_ = 0;
};

// The arguments of events, built without ceremony.
[[nodiscard]] TraceEventWriter::Arg traceArg(std::string key, std::string text);
[[nodiscard]] TraceEventWriter::Arg traceArg(std::string key,
                                             std::uint64_t number);

} // namespace cppcgov::tools
