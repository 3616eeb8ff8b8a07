// SPDX-License-Identifier: Apache-2.0
#include "mailbox.hpp"

#include <algorithm>

namespace pccfs
{

Mailbox::Mailbox(Clock::duration latency, Clock::duration turnaround) noexcept :
    cost_(std::max(latency, turnaround)), turnaround_(turnaround)
{}

Mailbox::Slot Mailbox::open(Clock::time_point now) noexcept
{
    const Clock::time_point start = std::max(now, free_);
    free_ = start + cost_;
    last_ = {last_.doorbell + 1, free_, true};
    return last_;
}

Mailbox::Slot Mailbox::write(Clock::time_point now) noexcept
{
    // A batch opening in the future (after the doorbell before it) takes
    // every write until one turnaround past its opening.
    if (batchOpened_ && now < *batchOpened_ + turnaround_)
    {
        Slot joined = last_;
        joined.opened = false;
        return joined;
    }
    const Slot slot = open(now);
    batchOpened_ = slot.done - cost_;
    return slot;
}

Mailbox::Slot Mailbox::read(Clock::time_point now) noexcept
{
    batchOpened_.reset();
    return open(now);
}

} // namespace pccfs
