// SPDX-License-Identifier: Apache-2.0
// RecordTimeline: what `cppcgovctl record` keeps in memory for its plot,
// bounded whatever the recording's length. Per CPU row, at most
// `bucketCapacity` time buckets of summed samples: when a sample falls
// past the last bucket, neighbouring buckets merge in pairs and each then
// covers twice the time. Hint lifetimes: at most `spanCapacity` spans,
// later hints are only counted. So the memory is about 32 bytes x 1024 per
// CPU plus 1024 spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::tools
{

// The sums of the samples of one CPU that fell into one bucket.
struct TimelineBucket
{
    std::uint64_t util = 0;
    std::uint64_t requested = 0;
    std::uint64_t delivered = 0;
    std::uint32_t samples = 0;
    std::uint32_t deliveredSamples = 0; // samples with delivered known

    bool operator==(const TimelineBucket&) const = default;
};

// One hint's life, in microseconds from the timeline's start.
struct HintSpan
{
    std::uint64_t handle = 0;
    std::string kind; // "clamp" or "latency"
    std::uint64_t beginUs = 0;
    std::optional<std::uint64_t> endUs; // none: live at the end

    bool operator==(const HintSpan&) const = default;
};

class RecordTimeline
{
  public:
    static constexpr std::size_t bucketCapacity = 1024;
    static constexpr std::size_t spanCapacity = 1024;

    // `rows` CPU rows starting at `startUs` (CLOCK_MONOTONIC), each bucket
    // covering `bucketUs` (at least 1) until the first merge.
    RecordTimeline(std::size_t rows, std::uint64_t startUs,
                   std::uint64_t bucketUs);

    // Adds a sample of row `row` (below rows()) taken at `tsUs`; a sample
    // before the start counts at the start. `delivered` 0 is unknown.
    void add(std::size_t row, std::uint64_t tsUs, std::uint16_t util,
             std::uint32_t requested, std::uint32_t delivered);

    // A hint began or ended at `tsUs`. An end without a begin is ignored.
    void hintBegan(std::uint64_t handle, const std::string& kind,
                   std::uint64_t tsUs);
    void hintEnded(std::uint64_t handle, std::uint64_t tsUs);

    // The recording ends at `tsUs`: how long the plot's axis is.
    void end(std::uint64_t tsUs) noexcept;

    std::size_t rows() const noexcept
    {
        return buckets_.size();
    }
    std::uint64_t bucketUs() const noexcept
    {
        return bucketUs_;
    }
    // Microseconds from the start to the end (or to the last sample
    // before end()).
    std::uint64_t durationUs() const noexcept
    {
        return durationUs_;
    }
    // Row `row`'s buckets from the start; bucket i covers
    // [i * bucketUs(), (i + 1) * bucketUs()).
    const std::vector<TimelineBucket>& buckets(std::size_t row) const
    {
        return buckets_.at(row);
    }
    const std::vector<HintSpan>& spans() const noexcept
    {
        return spans_;
    }
    // Hints that began after spanCapacity spans were kept.
    std::uint64_t spansDropped() const noexcept
    {
        return spansDropped_;
    }
    // The highest requested or delivered performance added.
    std::uint32_t maxPerf() const noexcept
    {
        return maxPerf_;
    }

  private:
    void mergePairs();

    std::uint64_t startUs_;
    std::uint64_t bucketUs_;
    std::uint64_t durationUs_ = 0;
    std::uint32_t maxPerf_ = 0;
    std::vector<std::vector<TimelineBucket>> buckets_;
    std::vector<HintSpan> spans_;
    std::uint64_t spansDropped_ = 0;
};

} // namespace cppcgov::tools
