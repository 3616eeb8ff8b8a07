// SPDX-License-Identifier: Apache-2.0
// The last N values one thread records, with percentiles on demand for
// another: a ring of atomics, so that the writer (the tick) never waits
// and the reader (GetStatistics, on the D-Bus thread) copies what is there.
// A percentile read while the writer adds may mix values of two adjacent
// ticks, never a torn value.
//
// One writer thread; any number of readers.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace cppcgov::daemon
{

class RecentValues
{
  public:
    explicit RecentValues(std::size_t capacity) :
        capacity_(capacity == 0 ? 1 : capacity),
        values_(std::make_unique<std::atomic<std::uint64_t>[]>(capacity_))
    {}

    // The writer.
    void add(std::uint64_t v) noexcept
    {
        const std::uint64_t n = added_.load(std::memory_order_relaxed);
        values_[n % capacity_].store(v, std::memory_order_relaxed);
        added_.store(n + 1, std::memory_order_release);
    }

    // The p-th percentile (0..100) of the values kept; 0 when empty.
    std::uint64_t percentile(unsigned p) const
    {
        const std::size_t count = static_cast<std::size_t>(
            std::min<std::uint64_t>(added_.load(std::memory_order_acquire),
                                    capacity_));
        if (count == 0)
        {
            return 0;
        }
        std::vector<std::uint64_t> sorted(count);
        for (std::size_t i = 0; i < count; ++i)
        {
            sorted[i] = values_[i].load(std::memory_order_relaxed);
        }
        std::sort(sorted.begin(), sorted.end());
        const std::size_t rank = (std::min(p, 100U) * (count - 1) + 50) / 100;
        return sorted[rank];
    }

  private:
    std::size_t capacity_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> values_;
    std::atomic<std::uint64_t> added_{0};
};

} // namespace cppcgov::daemon
