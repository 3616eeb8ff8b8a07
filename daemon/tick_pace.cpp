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

TickSleep TickPace::afterTick(TickState state) noexcept
{
    if (state == TickState::active)
    {
        quietRun_ = 0;
        calmRun_ = 0;
        settled_ = false;
        return TickSleep::period;
    }
    calmRun_ = std::min(calmRun_ + 1, steadyTicks);
    if (state == TickState::watching)
    {
        if (!settled_)
        {
            quietRun_ = 0;
        }
    }
    else if (!settled_ && ++quietRun_ >= quietTicks)
    {
        settled_ = true;
    }
    if (state == TickState::quiet && settled_)
    {
        return TickSleep::idle;
    }
    return calm() ? TickSleep::steady : TickSleep::period;
}

} // namespace cppcgov::daemon
