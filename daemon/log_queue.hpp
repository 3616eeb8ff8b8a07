// SPDX-License-Identifier: Apache-2.0
// Log lines from a thread that must never wait on the log to one that may.
// The tick logs into a LogQueue (log::deferTo()); the D-Bus thread writes
// out what it holds (log::writeQueued()). A write to stderr waits when the
// journal stops reading it; this way only the D-Bus thread would.
//
// A bounded ring of fixed-size slots, wait-free on both sides and sized
// once: pushing copies the text and never allocates. A line longer than a
// slot is cut (and ends in "..."); a line that finds the ring full is
// dropped and counted, so that the writer never waits.
//
// One writer thread and one reader thread.
#pragma once

#include "daemon/log.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cppcgov::daemon::log
{

class LogQueue
{
  public:
    // The longest line kept whole, in bytes.
    static constexpr std::size_t lineBytes = 1000;

    // Room for `lines` lines.
    explicit LogQueue(std::size_t lines = 64) : slots_(lines == 0 ? 1 : lines)
    {}

    LogQueue(const LogQueue&) = delete;
    LogQueue& operator=(const LogQueue&) = delete;

    // The writer: queues `message` at `level`. False, and counted in
    // dropped(), when full.
    bool push(Level level, std::string_view message) noexcept
    {
        const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
        if (tail - head_.load(std::memory_order_acquire) >= slots_.size())
        {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        Slot& slot = slots_[tail % slots_.size()];
        slot.level = level;
        if (message.size() <= lineBytes)
        {
            slot.length = message.size();
            std::copy(message.begin(), message.end(), slot.text);
        }
        else
        {
            constexpr std::string_view cut = "...";
            const std::size_t kept = lineBytes - cut.size();
            std::copy_n(message.begin(), kept, slot.text);
            std::copy(cut.begin(), cut.end(), slot.text + kept);
            slot.length = lineBytes;
        }
        tail_.store(tail + 1, std::memory_order_release);
        return true;
    }

    // The reader: calls fn(level, text) for each queued line, oldest
    // first, then frees their room. Returns how many.
    template <class Fn>
    std::size_t drain(Fn fn)
    {
        const std::uint64_t head = head_.load(std::memory_order_relaxed);
        const std::uint64_t tail = tail_.load(std::memory_order_acquire);
        for (std::uint64_t i = head; i != tail; ++i)
        {
            const Slot& slot = slots_[i % slots_.size()];
            fn(slot.level, std::string_view(slot.text, slot.length));
        }
        head_.store(tail, std::memory_order_release);
        return static_cast<std::size_t>(tail - head);
    }

    // Lines refused because the ring was full, since it was made.
    std::uint64_t dropped() const noexcept
    {
        return dropped_.load(std::memory_order_relaxed);
    }

    // The reader: lines refused since its last call.
    std::uint64_t takeDropped() noexcept
    {
        const std::uint64_t now = dropped();
        const std::uint64_t fresh = now - reported_;
        reported_ = now;
        return fresh;
    }

  private:
    struct Slot
    {
        Level level = Level::info;
        std::size_t length = 0;
        char text[lineBytes];
    };

    std::vector<Slot> slots_;
    std::atomic<std::uint64_t> head_{0}; // next to read
    std::atomic<std::uint64_t> tail_{0}; // next to write
    std::atomic<std::uint64_t> dropped_{0};
    std::uint64_t reported_ = 0; // the reader's: dropped() at takeDropped()
};

} // namespace cppcgov::daemon::log
