// SPDX-License-Identifier: Apache-2.0
// A bounded queue of fixed-width rows from one thread to another, wait-free
// on both sides: the tick pushes each tick's utilization of every CPU with
// its time, and the bus thread drains them into the headroom history
// (util_history.hpp). Sized once; pushing never allocates, and a push to a
// full ring is refused and counted (the reader fell that far behind), so
// the writer never waits.
//
// One writer thread and one reader thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cppcgov::daemon
{

class RowRing
{
  public:
    // Room for `rows` rows of `width` values each.
    RowRing(std::size_t rows, std::size_t width) :
        width_(width), rows_(rows == 0 ? 1 : rows), stamps_(rows_),
        values_(rows_ * width)
    {}

    RowRing(const RowRing&) = delete;
    RowRing& operator=(const RowRing&) = delete;

    std::size_t width() const noexcept
    {
        return width_;
    }

    // The writer: queues `row` (its first width() values; missing ones as
    // 0) stamped `stamp`. False, and counted in dropped(), when full.
    bool push(std::uint64_t stamp, std::span<const std::uint16_t> row) noexcept
    {
        const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
        if (tail - head_.load(std::memory_order_acquire) >= rows_)
        {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        const std::size_t slot = tail % rows_;
        stamps_[slot] = stamp;
        std::uint16_t* out = values_.data() + slot * width_;
        for (std::size_t i = 0; i < width_; ++i)
        {
            out[i] = i < row.size() ? row[i] : std::uint16_t{0};
        }
        tail_.store(tail + 1, std::memory_order_release);
        return true;
    }

    // The reader: calls fn(stamp, row) for each queued row, oldest first,
    // then frees their room. Returns how many.
    template <class Fn>
    std::size_t drain(Fn&& fn)
    {
        const std::uint64_t head = head_.load(std::memory_order_relaxed);
        const std::uint64_t tail = tail_.load(std::memory_order_acquire);
        for (std::uint64_t n = head; n != tail; ++n)
        {
            const std::size_t slot = n % rows_;
            fn(stamps_[slot], std::span<const std::uint16_t>(
                                  values_.data() + slot * width_, width_));
        }
        head_.store(tail, std::memory_order_release);
        return static_cast<std::size_t>(tail - head);
    }

    // Rows refused because the ring was full, since construction.
    std::uint64_t dropped() const noexcept
    {
        return dropped_.load(std::memory_order_relaxed);
    }

  private:
    std::size_t width_;
    std::size_t rows_;
    std::vector<std::uint64_t> stamps_;
    std::vector<std::uint16_t> values_;
    // Rows pushed and rows drained since construction.
    std::atomic<std::uint64_t> head_{0};
    std::atomic<std::uint64_t> tail_{0};
    std::atomic<std::uint64_t> dropped_{0};
};

} // namespace cppcgov::daemon
