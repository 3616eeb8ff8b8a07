// SPDX-License-Identifier: Apache-2.0
// The newest value one thread hands another, wait-free on both sides: a
// triple buffer. The writer fills back() in place and publish()es it; the
// reader calls refresh() and reads front(). Neither ever waits for the
// other, takes a lock or allocates here: each side works on a slot of its
// own, and publishing or taking the newest is one atomic exchange of slot
// numbers. A value published while the reader still holds the one before
// replaces it unread (the reader gets the newest, never a torn one), so
// what goes through must be a whole state, not an event.
//
// Whatever a slot's T allocates is allocated by the side writing it: the
// writer assigns into a slot the reader once held, so with T's containers
// reusing their capacity, a steady state allocates nothing.
//
// One writer thread and one reader thread; either may be the one that
// constructs it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace cppcgov::daemon
{

template <class T>
class LatestValue
{
  public:
    // Three copies of `initial`, the reader's front() among them.
    explicit LatestValue(const T& initial = T()) :
        slots_{initial, initial, initial}
    {}

    LatestValue(const LatestValue&) = delete;
    LatestValue& operator=(const LatestValue&) = delete;

    // The writer's slot: what it held when last published, two values ago
    // or older (the writer must set every part it publishes).
    T& back() noexcept
    {
        return slots_[back_];
    }

    // Makes back() the newest value and gives the writer another slot.
    void publish() noexcept
    {
        back_ = middle_.exchange(back_ | fresh, std::memory_order_acq_rel) &
                slotMask;
    }

    // Takes the newest published value as front(), if there is one the
    // reader has not taken yet. True when front() changed.
    bool refresh() noexcept
    {
        if ((middle_.load(std::memory_order_relaxed) & fresh) == 0)
        {
            return false;
        }
        front_ = middle_.exchange(front_, std::memory_order_acq_rel) & slotMask;
        return true;
    }

    // The reader's slot: the value taken by the last refresh().
    const T& front() const noexcept
    {
        return slots_[front_];
    }

  private:
    static constexpr std::uint8_t slotMask = 0x3;
    static constexpr std::uint8_t fresh = 0x4;

    std::array<T, 3> slots_;
    // The slot between the two sides, with `fresh` while it holds a value
    // the reader has not taken.
    std::atomic<std::uint8_t> middle_{1};
    // Owned by the writer.
    std::uint8_t back_ = 2;
    // Owned by the reader.
    std::uint8_t front_ = 0;
};

} // namespace cppcgov::daemon
