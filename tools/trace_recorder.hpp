// SPDX-License-Identifier: Apache-2.0
// TraceRecorder: what `cppcgovctl record` makes of the daemon's samples
// and signals, without a bus. It turns each GetCpuStates sample into
// counter events of the CPUs recorded (util, requested and delivered
// perf, and MHz where the CPU's frequencies are known, each written only
// when it changes, and all again at the end so the tracks reach it), the
// policy's reason into slices on each CPU's track, and every hint's life
// (HandleStarted, or live at the start, to HandleEnded, or the end) into
// an async slice with its handle, owner, task and clamp or latency; it
// feeds the plot's bounded timeline beside. Memory: per CPU the last
// values and the timeline's buckets, per live hint its description.
#pragma once

#include "governor_state.hpp"
#include "record_timeline.hpp"
#include "trace_events.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace cppcgov::tools
{

// What a recording starts from.
struct RecordSetup
{
    DaemonInfo daemon;
    std::vector<CpuInfo> info;       // from GetCpuInfo; may be empty
    std::vector<std::uint32_t> cpus; // the CPUs recorded, sorted
    std::uint64_t intervalUs = 0;
    std::uint64_t startUs = 0; // CLOCK_MONOTONIC
};

class TraceRecorder
{
  public:
    // Writes the document's start, its metadata and a begin for each
    // handle of `live` (the handles before the recording) on `out`.
    TraceRecorder(std::ostream& out, RecordSetup setup,
                  std::span<const HandleInfo> live);

    // One GetCpuStates reply, taken at `tsUs`. CPUs not recorded are
    // skipped.
    void sample(std::uint64_t tsUs, std::span<const CpuState> states);

    void handleStarted(std::uint64_t tsUs, const HandleInfo& h);
    void handleEnded(std::uint64_t tsUs, std::uint64_t handle,
                     const std::string& owner, const std::string& reason);
    void policyChanged(std::uint64_t tsUs, const std::string& policy,
                       std::span<const std::string> files);

    // Ends the recording at `tsUs`: the last values of every counter,
    // the open slices and hints closed, the document finished.
    void finish(std::uint64_t tsUs);

    const RecordTimeline& timeline() const noexcept
    {
        return timeline_;
    }
    const RecordSetup& setup() const noexcept
    {
        return setup_;
    }
    std::uint64_t samples() const noexcept
    {
        return samples_;
    }
    std::uint64_t events() const noexcept
    {
        return trace_.events();
    }

    // The top of the plot's performance axis: the highest highest_perf of
    // the CPUs recorded, else the highest performance seen.
    [[nodiscard]] std::uint32_t perfScale() const;

  private:
    // The last values written of one CPU's counters and slice.
    struct CpuTrack
    {
        std::uint32_t cpu = 0;
        std::optional<cppc::FreqLine> freq;
        std::map<std::string, std::uint64_t> written;
        std::optional<std::string> slice;
    };

    void counter(std::uint64_t tsUs, CpuTrack& track, const std::string& series,
                 std::uint64_t value, bool always);
    void write(std::uint64_t tsUs, CpuTrack& track, const CpuState& s,
               bool always);

    RecordSetup setup_;
    TraceEventWriter trace_;
    RecordTimeline timeline_;
    std::vector<CpuTrack> tracks_; // in setup_.cpus's order
    std::map<std::uint32_t, std::size_t> rowOf_;
    std::vector<CpuState> last_; // per track: the last sample
    std::map<std::uint64_t, HandleInfo> open_;
    std::uint64_t samples_ = 0;
};

// The async slice's name of a hint: "clamp #12", "latency #3".
[[nodiscard]] std::string hintSliceName(const HandleInfo& h);

} // namespace cppcgov::tools
