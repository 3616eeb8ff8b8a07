// SPDX-License-Identifier: Apache-2.0
#include "util_history.hpp"

#include <algorithm>
#include <stdexcept>

namespace cppcgov::daemon
{

void UtilHistory::reset(std::size_t cpus, std::uint32_t periodUs)
{
    if (cpus == 0 || periodUs == 0)
    {
        throw std::invalid_argument(
            "a utilization history needs at least one CPU and a period");
    }
    // The step that keeps 10 s of every CPU within maxHistoryEntries.
    const std::uint64_t fewest =
        (historySpanUs * cpus + maxHistoryEntries - 1) / maxHistoryEntries;
    const std::uint64_t step = std::max<std::uint64_t>(periodUs, fewest);
    // historySpanUs of entries, one more for the stretch before the first
    // one in a full window, one more for a tick early in its step.
    const std::size_t entries =
        static_cast<std::size_t>((historySpanUs + step - 1) / step) + 2;
    cpus_ = cpus;
    stepUs_ = step;
    util_.assign(entries * cpus, 0);
    stamps_.assign(entries, 0);
    oldest_ = 0;
    size_ = 0;
    newest_ = 0;
    // Every block a window can hold whole, one partly overwritten and one
    // being filled.
    blocks_ = entries / blockEntries + 3;
    blockPeak_.assign(blocks_ * cpus, 0);
    blockSum_.assign(blocks_ * cpus, 0);
}

void UtilHistory::record(std::uint64_t nowUs,
                         std::span<const std::uint16_t> util) noexcept
{
    if (stamps_.empty())
    {
        return;
    }
    const auto value = [&util](std::size_t cpu) -> std::uint16_t {
        return cpu < util.size() ? std::min<std::uint16_t>(util[cpu], 1024) : 0;
    };
    if (size_ > 0)
    {
        const std::size_t newest = slot(size_ - 1);
        if (nowUs <= stamps_[newest] ||
            nowUs / stepUs_ == stamps_[newest] / stepUs_)
        {
            // The same step (or time went back): the newest again, with
            // the later time when there is one.
            stamps_[newest] = std::max(stamps_[newest], nowUs);
            std::uint16_t* row = util_.data() + newest * cpus_;
            const std::size_t b = blockSlot(newest_ / blockEntries) * cpus_;
            for (std::size_t cpu = 0; cpu < cpus_; ++cpu)
            {
                const std::uint16_t v = value(cpu);
                blockSum_[b + cpu] = blockSum_[b + cpu] - row[cpu] + v;
                blockPeak_[b + cpu] = std::max(blockPeak_[b + cpu], v);
                row[cpu] = v;
            }
            return;
        }
        // A tick that came after more than a step (a tick that slept while
        // every CPU was idle, or ran late) stands for every step since the
        // newest: each gets its value, so that an average over the window
        // weighs the time, not the ticks.
        const std::uint64_t gap = nowUs / stepUs_ - stamps_[newest] / stepUs_;
        const std::uint64_t fill =
            std::min<std::uint64_t>(gap - 1, stamps_.size());
        const std::uint64_t from = nowUs - fill * stepUs_;
        for (std::uint64_t k = 0; k < fill; ++k)
        {
            ++newest_;
            append(from + k * stepUs_, util);
        }
        ++newest_;
    }
    append(nowUs, util);
}

void UtilHistory::append(std::uint64_t nowUs,
                         std::span<const std::uint16_t> util) noexcept
{
    const auto value = [&util](std::size_t cpu) -> std::uint16_t {
        return cpu < util.size() ? std::min<std::uint16_t>(util[cpu], 1024) : 0;
    };
    std::size_t s = 0;
    if (size_ < stamps_.size())
    {
        s = slot(size_);
        ++size_;
    }
    else
    {
        s = oldest_;
        oldest_ = (oldest_ + 1) % stamps_.size();
    }
    stamps_[s] = nowUs;
    std::uint16_t* row = util_.data() + s * cpus_;
    const std::size_t b = blockSlot(newest_ / blockEntries) * cpus_;
    const bool fresh = newest_ % blockEntries == 0;
    for (std::size_t cpu = 0; cpu < cpus_; ++cpu)
    {
        const std::uint16_t v = value(cpu);
        row[cpu] = v;
        blockSum_[b + cpu] = fresh ? v : blockSum_[b + cpu] + v;
        blockPeak_[b + cpu] = fresh ? v : std::max(blockPeak_[b + cpu], v);
    }
}

HistoryWindow UtilHistory::window(std::uint64_t windowUs) const noexcept
{
    HistoryWindow w;
    if (size_ == 0 || windowUs == 0)
    {
        return w;
    }
    const std::uint64_t newest = stamps_[slot(size_ - 1)];
    // Entries later than `from` are in; stamps ascend from the oldest.
    const std::uint64_t from = newest > windowUs ? newest - windowUs : 0;
    if (newest <= from)
    {
        // A newest entry at time 0 with a longer window: none is later.
        return w;
    }
    std::size_t first = size_ - 1;
    while (first > 0 && stamps_[slot(first - 1)] > from)
    {
        --first;
    }
    w.first = first;
    w.count = size_ - first;
    // The first entry's stretch starts at the entry before it, or a step
    // before it when it is the oldest recorded.
    const std::uint64_t firstStamp = stamps_[slot(first)];
    const std::uint64_t start =
        first > 0 ? stamps_[slot(first - 1)]
                  : (firstStamp > stepUs_ ? firstStamp - stepUs_ : 0);
    w.coveredUs = std::min(windowUs, newest - start);
    return w;
}

} // namespace cppcgov::daemon
