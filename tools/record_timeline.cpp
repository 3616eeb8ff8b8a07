// SPDX-License-Identifier: Apache-2.0
#include "record_timeline.hpp"

#include <algorithm>

namespace cppcgov::tools
{

RecordTimeline::RecordTimeline(std::size_t rows, std::uint64_t startUs,
                               std::uint64_t bucketUs) :
    startUs_(startUs),
    bucketUs_(std::max<std::uint64_t>(bucketUs, 1)), buckets_(rows)
{
    for (auto& row : buckets_)
    {
        row.reserve(bucketCapacity);
    }
}

void RecordTimeline::mergePairs()
{
    for (auto& row : buckets_)
    {
        std::vector<TimelineBucket> merged((row.size() + 1) / 2);
        for (std::size_t i = 0; i < row.size(); ++i)
        {
            TimelineBucket& m = merged[i / 2];
            m.util += row[i].util;
            m.requested += row[i].requested;
            m.delivered += row[i].delivered;
            m.samples += row[i].samples;
            m.deliveredSamples += row[i].deliveredSamples;
        }
        row = std::move(merged);
        row.reserve(bucketCapacity);
    }
    bucketUs_ *= 2;
}

void RecordTimeline::add(std::size_t row, std::uint64_t tsUs,
                         std::uint16_t util, std::uint32_t requested,
                         std::uint32_t delivered)
{
    const std::uint64_t at = tsUs > startUs_ ? tsUs - startUs_ : 0;
    while (at / bucketUs_ >= bucketCapacity)
    {
        mergePairs();
    }
    auto& buckets = buckets_.at(row);
    const auto index = static_cast<std::size_t>(at / bucketUs_);
    if (buckets.size() <= index)
    {
        buckets.resize(index + 1);
    }
    TimelineBucket& b = buckets[index];
    b.util += util;
    b.requested += requested;
    b.samples += 1;
    if (delivered != 0)
    {
        b.delivered += delivered;
        b.deliveredSamples += 1;
    }
    maxPerf_ = std::max({maxPerf_, requested, delivered});
    durationUs_ = std::max(durationUs_, at);
}

void RecordTimeline::hintBegan(std::uint64_t handle, const std::string& kind,
                               std::uint64_t tsUs)
{
    if (spans_.size() >= spanCapacity)
    {
        ++spansDropped_;
        return;
    }
    spans_.push_back(
        {handle, kind, tsUs > startUs_ ? tsUs - startUs_ : 0, std::nullopt});
}

void RecordTimeline::hintEnded(std::uint64_t handle, std::uint64_t tsUs)
{
    const auto open = std::find_if(spans_.rbegin(), spans_.rend(),
                                   [handle](const HintSpan& s) {
        return s.handle == handle && !s.endUs;
    });
    if (open != spans_.rend())
    {
        open->endUs =
            std::max(tsUs > startUs_ ? tsUs - startUs_ : 0, open->beginUs);
    }
}

void RecordTimeline::end(std::uint64_t tsUs) noexcept
{
    durationUs_ = std::max(durationUs_, tsUs > startUs_ ? tsUs - startUs_ : 0);
}

} // namespace cppcgov::tools
