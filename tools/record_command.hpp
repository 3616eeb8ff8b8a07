// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl record`: samples cppcgovd's per-CPU state for a while, takes
// its HandleStarted, HandleEnded and PolicyChanged signals as they come,
// and writes a Chrome trace-event JSON file that Perfetto's UI opens
// (trace_recorder.hpp) and a PNG plot of it (record_plot.hpp). Both files
// are written under temporary names and renamed when complete; SIGINT,
// SIGTERM or SIGHUP ends the recording early with both files complete.
// The trace streams to its file as it goes: memory stays bounded whatever
// the length (record_timeline.hpp).
#pragma once

#include "args.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

extern const std::string_view recordUsage;

// The shortest time between samples.
constexpr std::uint32_t minRecordIntervalMs = 10;

struct RecordOptions
{
    BusOptions bus;
    std::uint32_t seconds = 0;
    std::optional<std::uint32_t> intervalMs;        // none: the daemon's period
    std::optional<std::vector<std::uint32_t>> cpus; // none: every CPU
    std::optional<std::string> png;                 // none: FILE's .png
    std::string file;
    bool help = false;
};

// Parses the arguments after "record". Throws UsageError.
[[nodiscard]] RecordOptions parseRecordArgs(
    std::span<const std::string_view> args);

// The plot's default path: `file` with ".png" in place of its ".json"
// (or added when it has none).
[[nodiscard]] std::string defaultPngPath(std::string_view file);

// The time between samples in microseconds: `intervalMs` when given, else
// the daemon's sampling period, never below minRecordIntervalMs.
[[nodiscard]] std::uint64_t recordIntervalUs(
    std::optional<std::uint32_t> intervalMs, std::uint32_t samplingPeriodUs);

// Runs the command; `bus` as for runStatus. Returns 0 once both files are
// written (after --seconds or a signal), 1 when a file cannot be written
// (said on `err` naming it), a D-Bus call fails, or the daemon went away
// (the files still hold what was recorded), 2 for a usage error.
int runRecord(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
