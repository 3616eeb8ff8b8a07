// SPDX-License-Identifier: Apache-2.0
// The timing of one PCC mailbox shared by every CPU. A doorbell costs
// max(latency, turnaround). A PCC write that finds no write batch open
// opens one, not before the previous doorbell has finished; every write
// arriving within one turnaround of that opening joins it, and all of them
// complete with its doorbell. A PCC read is a doorbell of its own,
// exclusive: it starts after whatever was scheduled before it, and writes
// arriving after it wait for it. Pure arithmetic on time points: the
// caller keeps the clock and the requests.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace pccfs
{

class Mailbox
{
  public:
    using Clock = std::chrono::steady_clock;

    struct Slot
    {
        std::uint64_t doorbell = 0; // numbered from 1
        Clock::time_point done;
        bool opened = false; // this access opened the doorbell
    };

    Mailbox(Clock::duration latency, Clock::duration turnaround) noexcept;

    // Schedules a PCC write arriving at `now`.
    Slot write(Clock::time_point now) noexcept;
    // Schedules a PCC read arriving at `now`.
    Slot read(Clock::time_point now) noexcept;

    // What one doorbell costs.
    Clock::duration cost() const noexcept
    {
        return cost_;
    }

  private:
    Slot open(Clock::time_point now) noexcept;

    Clock::duration cost_;
    Clock::duration turnaround_;
    Clock::time_point free_{}; // when the last doorbell scheduled finishes
    // The last doorbell scheduled, when it is a write batch: its opening.
    std::optional<Clock::time_point> batchOpened_;
    Slot last_;
};

} // namespace pccfs
