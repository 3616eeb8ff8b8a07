// SPDX-License-Identifier: Apache-2.0
#include "trace_recorder.hpp"

#include <algorithm>
#include <array>

namespace cppcgov::tools
{

namespace
{

constexpr std::string_view hintCategory = "hint";

std::vector<std::pair<std::string, std::string>> otherData(const RecordSetup& s)
{
    return {{"recorder", "cppcgovctl record"},
            {"clock", "CLOCK_MONOTONIC, microseconds"},
            {"version", s.daemon.version},
            {"backend", s.daemon.backend},
            {"policy", s.daemon.policy},
            {"cpu_count", std::to_string(s.daemon.cpuCount)},
            {"sampling_period_us", std::to_string(s.daemon.samplingPeriodUs)},
            {"sampling_source", s.daemon.samplingSource},
            {"interval_us", std::to_string(s.intervalUs)}};
}

std::vector<TraceEventWriter::Arg> hintArgs(const HandleInfo& h)
{
    std::vector<TraceEventWriter::Arg> a{
        traceArg("handle", h.handle), traceArg("kind", h.kind),
        traceArg("owner", h.owner), traceArg("task", std::uint64_t{h.task})};
    if (h.kind == "latency")
    {
        a.push_back(traceArg("latency_us", std::uint64_t{h.latencyUs}));
    }
    else
    {
        a.push_back(traceArg("util_min", std::uint64_t{h.utilMin}));
        a.push_back(traceArg("util_max", std::uint64_t{h.utilMax}));
    }
    return a;
}

} // namespace

std::string hintSliceName(const HandleInfo& h)
{
    return h.kind + " #" + std::to_string(h.handle);
}

TraceRecorder::TraceRecorder(std::ostream& out, RecordSetup setup,
                             std::span<const HandleInfo> live) :
    setup_(std::move(setup)),
    trace_(out, otherData(setup_)),
    timeline_(setup_.cpus.size(), setup_.startUs, setup_.intervalUs)
{
    trace_.processName("cppcgovd");
    for (const std::uint32_t cpu : setup_.cpus)
    {
        CpuTrack track;
        track.cpu = cpu;
        for (const CpuInfo& i : setup_.info)
        {
            if (i.cpu == cpu && i.freq().khz(i.nominalPerf))
            {
                track.freq = i.freq();
            }
        }
        rowOf_[cpu] = tracks_.size();
        tracks_.push_back(std::move(track));
        trace_.cpuTrack(cpu);
    }
    last_.resize(tracks_.size());
    for (const HandleInfo& h : live)
    {
        handleStarted(setup_.startUs, h);
    }
}

void TraceRecorder::counter(std::uint64_t tsUs, CpuTrack& track,
                            const std::string& series, std::uint64_t value,
                            bool always)
{
    const auto [it, added] = track.written.try_emplace(series, value);
    if (!added && it->second == value && !always)
    {
        return;
    }
    it->second = value;
    trace_.counter(tsUs, "CPU " + std::to_string(track.cpu), series, value);
}

void TraceRecorder::write(std::uint64_t tsUs, CpuTrack& track,
                          const CpuState& s, bool always)
{
    counter(tsUs, track, "util", s.util, always);
    counter(tsUs, track, "requested perf", s.requestedPerf, always);
    if (s.deliveredPerf != 0)
    {
        counter(tsUs, track, "delivered perf", s.deliveredPerf, always);
    }
    if (track.freq)
    {
        if (const auto khz = track.freq->khz(s.requestedPerf))
        {
            counter(tsUs, track, "requested MHz", *khz / 1000, always);
        }
        if (const auto khz = track.freq->khz(s.deliveredPerf);
            khz && s.deliveredPerf != 0)
        {
            counter(tsUs, track, "delivered MHz", *khz / 1000, always);
        }
    }
    const std::string reason = s.degraded.empty() ? s.reason : "degraded";
    if (track.slice != reason)
    {
        if (track.slice)
        {
            trace_.cpuSliceEnd(tsUs, track.cpu);
        }
        trace_.cpuSliceBegin(tsUs, track.cpu, reason);
        track.slice = reason;
    }
}

void TraceRecorder::sample(std::uint64_t tsUs, std::span<const CpuState> states)
{
    ++samples_;
    for (const CpuState& s : states)
    {
        const auto row = rowOf_.find(s.cpu);
        if (row == rowOf_.end())
        {
            continue;
        }
        write(tsUs, tracks_[row->second], s, false);
        last_[row->second] = s;
        timeline_.add(row->second, tsUs, s.util, s.requestedPerf,
                      s.deliveredPerf);
    }
}

void TraceRecorder::handleStarted(std::uint64_t tsUs, const HandleInfo& h)
{
    if (!open_.try_emplace(h.handle, h).second)
    {
        return; // listed at the start and signalled too
    }
    const auto args = hintArgs(h);
    trace_.asyncBegin(tsUs, hintCategory, h.handle, hintSliceName(h), args);
    timeline_.hintBegan(h.handle, h.kind, tsUs);
}

void TraceRecorder::handleEnded(std::uint64_t tsUs, std::uint64_t handle,
                                const std::string& owner,
                                const std::string& reason)
{
    const auto open = open_.find(handle);
    if (open == open_.end())
    {
        // A hint of which the recording saw no start.
        const std::array args{traceArg("handle", handle),
                              traceArg("owner", owner),
                              traceArg("reason", reason)};
        trace_.instant(tsUs, "HandleEnded #" + std::to_string(handle), args);
        return;
    }
    const std::array args{traceArg("reason", reason)};
    trace_.asyncEnd(tsUs, hintCategory, handle, hintSliceName(open->second),
                    args);
    timeline_.hintEnded(handle, tsUs);
    open_.erase(open);
}

void TraceRecorder::policyChanged(std::uint64_t tsUs, const std::string& policy,
                                  std::span<const std::string> files)
{
    std::string joined;
    for (const std::string& f : files)
    {
        joined += (joined.empty() ? "" : ", ") + f;
    }
    const std::array args{traceArg("policy", policy),
                          traceArg("files", joined)};
    trace_.instant(tsUs, "PolicyChanged " + policy, args);
}

void TraceRecorder::finish(std::uint64_t tsUs)
{
    for (std::size_t i = 0; i < tracks_.size(); ++i)
    {
        if (tracks_[i].slice)
        {
            write(tsUs, tracks_[i], last_[i], true);
            trace_.cpuSliceEnd(tsUs, tracks_[i].cpu);
        }
    }
    const std::array args{traceArg("reason", "live at the end")};
    for (const auto& [handle, h] : open_)
    {
        trace_.asyncEnd(tsUs, hintCategory, handle, hintSliceName(h), args);
    }
    open_.clear();
    timeline_.end(tsUs);
    trace_.finish();
}

std::uint32_t TraceRecorder::perfScale() const
{
    std::uint32_t highest = 0;
    for (const CpuInfo& i : setup_.info)
    {
        if (rowOf_.contains(i.cpu))
        {
            highest = std::max(highest, i.highestPerf);
        }
    }
    return highest != 0 ? highest : timeline_.maxPerf();
}

} // namespace cppcgov::tools
