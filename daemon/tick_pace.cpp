// SPDX-License-Identifier: Apache-2.0
#include "daemon/tick_pace.hpp"

#include <algorithm>

namespace cppcgov::daemon
{

TickState tickState(std::span<const std::uint16_t> othersBusy,
                    std::size_t writes, bool othersRunning) noexcept
{
    if (writes != 0)
    {
        return TickState::active;
    }
    if (othersRunning ||
        std::any_of(othersBusy.begin(), othersBusy.end(),
                    [](std::uint16_t busy) { return busy > quietBusy; }))
    {
        return TickState::watching;
    }
    return TickState::quiet;
}

bool TickPace::afterTick(TickState state) noexcept
{
    switch (state)
    {
        case TickState::active:
            quietRun_ = 0;
            settled_ = false;
            return false;
        case TickState::watching:
            if (!settled_)
            {
                quietRun_ = 0;
            }
            return false;
        case TickState::quiet:
            if (!settled_ && ++quietRun_ >= quietTicks)
            {
                settled_ = true;
            }
            return settled_;
    }
    return false;
}

} // namespace cppcgov::daemon
