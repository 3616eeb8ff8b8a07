// SPDX-License-Identifier: Apache-2.0
// The last 10 seconds of every CPU's utilization, as the daemon's own ticks
// saw it, for the headroom query (headroom.hpp).
//
// One ring of entries per CPU, all sharing one ring of timestamps: an entry
// is a tick's utilization of each CPU (CpuView::util, frequency-invariant,
// 0..1024). The rings are sized once per reset() to cover historySpanUs at
// the step, so recording never allocates. The step is the sampling period,
// or longer when 10 s at the period would need more than maxHistoryEntries
// entries over all CPUs (at the default 1 ms period, more than 419 CPUs):
// ticks within one step then share an entry, the last one's value kept.
//
// Beside the entries, each CPU's peak and sum over every block of
// blockEntries consecutive entries (numbered from the first recorded), so
// that a long window over many CPUs can be read a block at a time
// (headroom.hpp): averages stay exact, and a peak is a block's.
//
// A window is the entries of the last `windowUs` before the newest entry;
// what the history has recorded so far may be shorter, and the window then
// says how long it covers.
//
// No clock (time is a parameter, microseconds of a monotonic clock), no
// D-Bus, no logging. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cppcgov::daemon
{

// How far back the history reaches.
inline constexpr std::uint64_t historySpanUs = 10'000'000;
// The most entries kept over all CPUs (2 bytes each).
inline constexpr std::size_t maxHistoryEntries = std::size_t{4} << 20;
// Entries per block.
inline constexpr std::size_t blockEntries = 16;

// A stretch of the history: `count` entries, the oldest at position
// `first` (pass to UtilHistory::at()), covering `coveredUs`.
struct HistoryWindow
{
    std::size_t first = 0;
    std::size_t count = 0;
    std::uint64_t coveredUs = 0;
};

class UtilHistory
{
  public:
    // An empty history of no CPU: reset() before recording.
    UtilHistory() = default;

    // Rings for `cpus` CPUs ticked every `periodUs`, empty. Throws
    // std::invalid_argument when either is 0.
    void reset(std::size_t cpus, std::uint32_t periodUs);

    // Records the tick at `nowUs`: each CPU's utilization (one per CPU;
    // above 1024 is kept as 1024; missing CPUs as 0), in a new entry, or
    // in the newest again when `nowUs` falls in its step (its block then
    // keeps the larger peak). A tick more than a step after the newest
    // entry fills each step between with the same values (at most the
    // rings' length). Time going backwards reuses the newest.
    // Nothing before reset().
    void record(std::uint64_t nowUs,
                std::span<const std::uint16_t> util) noexcept;

    // The entries of the last `windowUs` before the newest entry, oldest
    // first: those whose tick is later than the newest's minus `windowUs`.
    // Each entry stands for the time since the entry before it, the oldest
    // one recorded for one step, so coveredUs is the newest entry's time
    // minus the time before the first entry's stretch, at most `windowUs`
    // (less while fewer have been recorded). Empty (count 0) with no entry
    // or a window of 0.
    HistoryWindow window(std::uint64_t windowUs) const noexcept;

    // CPU `cpu`'s utilization in the entry `index` places after the
    // window's first (index < count).
    std::uint16_t at(const HistoryWindow& w, std::size_t index,
                     std::size_t cpu) const noexcept
    {
        return util_[slot(w.first + index) * cpus_ + cpu];
    }

    // The whole entry `index` places after the window's first: one value
    // per CPU.
    std::span<const std::uint16_t> row(const HistoryWindow& w,
                                       std::size_t index) const noexcept
    {
        return {util_.data() + slot(w.first + index) * cpus_, cpus_};
    }

    // The number of the window's entry `index` places after its first,
    // counted from the first entry recorded since reset(): entry number n
    // is in block n / blockEntries.
    std::uint64_t number(const HistoryWindow& w,
                         std::size_t index) const noexcept
    {
        return newest_ + 1 - size_ + w.first + index;
    }
    // CPU `cpu`'s peak and sum over block `block` (entry numbers block x
    // blockEntries onwards), valid while all of its entries are held.
    std::uint16_t blockPeak(std::uint64_t block, std::size_t cpu) const noexcept
    {
        return blockPeak_[blockSlot(block) * cpus_ + cpu];
    }
    std::uint32_t blockSum(std::uint64_t block, std::size_t cpu) const noexcept
    {
        return blockSum_[blockSlot(block) * cpus_ + cpu];
    }

    std::size_t cpus() const noexcept
    {
        return cpus_;
    }
    // Microseconds per entry.
    std::uint64_t stepUs() const noexcept
    {
        return stepUs_;
    }
    // How many entries the rings hold at most.
    std::size_t capacity() const noexcept
    {
        return stamps_.size();
    }
    // How many entries are held now (at most capacity()).
    std::size_t size() const noexcept
    {
        return size_;
    }

  private:
    // Appends an entry at `nowUs` (the newest's number already advanced).
    void append(std::uint64_t nowUs,
                std::span<const std::uint16_t> util) noexcept;

    std::size_t blockSlot(std::uint64_t block) const noexcept
    {
        return static_cast<std::size_t>(block % blocks_);
    }

    // The ring slot of the entry `position` places after the oldest held.
    std::size_t slot(std::size_t position) const noexcept
    {
        return (oldest_ + position) % stamps_.size();
    }

    std::size_t cpus_ = 0;
    std::uint64_t stepUs_ = 0;
    std::vector<std::uint16_t> util_;   // capacity() x cpus_, by slot
    std::vector<std::uint64_t> stamps_; // the tick time of each slot
    std::size_t oldest_ = 0;            // slot of the oldest entry held
    std::size_t size_ = 0;
    std::uint64_t newest_ = 0;             // the newest entry's number
    std::size_t blocks_ = 0;               // block slots
    std::vector<std::uint16_t> blockPeak_; // blocks_ x cpus_
    std::vector<std::uint32_t> blockSum_;  // blocks_ x cpus_
};

} // namespace cppcgov::daemon
