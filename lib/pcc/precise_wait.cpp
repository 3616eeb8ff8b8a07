// SPDX-License-Identifier: Apache-2.0
#include "precise_wait.hpp"

#include <sys/prctl.h>

namespace cppc::pcc
{

bool useMinimalTimerSlack() noexcept
{
    thread_local const bool set =
        ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0;
    return set;
}

Nanos MonotonicClock::now() const noexcept
{
    return monotonicNow();
}

void MonotonicClock::sleepUntil(Nanos deadline) noexcept
{
    useMinimalTimerSlack();
    pcc::sleepUntil(deadline);
}

WaitClock& monotonicClock() noexcept
{
    static MonotonicClock clock;
    return clock;
}

} // namespace cppc::pcc
