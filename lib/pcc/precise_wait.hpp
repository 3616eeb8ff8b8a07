// SPDX-License-Identifier: Apache-2.0
// Precise waits on CLOCK_MONOTONIC for the PCC channel: absolute-deadline
// sleeps that never return early, the thread's timer slack at its minimum,
// and "wait until a condition holds or a deadline passes" by polling with
// precise sleeps in between.
//
// Times are nanoseconds since the CLOCK_MONOTONIC epoch (what
// clock_gettime(CLOCK_MONOTONIC) returns), so they compare directly with
// timestamps taken by other threads and processes on the same machine.
//
// The clock and the sleeper are reached through WaitClock so that tests can
// drive waits with a fake clock and count the polls; MonotonicClock is the
// real one.
#pragma once

#include "lib/monotonic_clock.hpp"

#include <algorithm>
#include <chrono>

namespace cppc::pcc
{

// monotonicNow() and sleepUntil() come from lib/monotonic_clock.hpp.
using cppc::monotonicNow;
using cppc::Nanos;
using cppc::sleepUntil;

// Sets the calling thread's timer slack to 1 ns (PR_SET_TIMERSLACK), so the
// kernel does not defer its timer wake-ups by the default 50 us. Issues
// the prctl once per thread; later calls only return the first result.
// Returns whether the slack is set.
bool useMinimalTimerSlack() noexcept;

// The time source and sleeper of precise waits.
class WaitClock
{
  public:
    virtual ~WaitClock() = default;

    // The current time.
    virtual Nanos now() const noexcept = 0;

    // Returns once now() >= deadline, never before.
    virtual void sleepUntil(Nanos deadline) noexcept = 0;
};

// CLOCK_MONOTONIC and clock_nanosleep. The first sleep in each thread sets
// that thread's timer slack to the minimum (useMinimalTimerSlack).
class MonotonicClock final : public WaitClock
{
  public:
    Nanos now() const noexcept override;
    void sleepUntil(Nanos deadline) noexcept override;
};

// A process-wide MonotonicClock.
[[nodiscard]] WaitClock& monotonicClock() noexcept;

// Polls `condition` until it holds or `deadline` passes, sleeping with
// `clock` until min(last reading + interval, deadline) between polls. The
// first poll is immediate, and a poll is made after the last sleep, at or
// after the deadline, so a condition that became true in time is seen.
//
// Returns true as soon as a poll finds the condition true. Returns false
// only after a poll found it false and the clock read at or after
// `deadline`: never before the deadline. With a clock whose sleeps never
// return early, the condition is evaluated at most
// ceil((deadline - start) / interval) + 1 times. An interval below 1 ns is
// taken as 1 ns.
template <class Condition>
[[nodiscard]] bool waitUntil(WaitClock& clock, Condition&& condition,
                             Nanos deadline, Nanos interval)
{
    interval = std::max(interval, Nanos{1});
    for (;;)
    {
        if (condition())
        {
            return true;
        }
        const Nanos t = clock.now();
        if (t >= deadline)
        {
            return false;
        }
        clock.sleepUntil(std::min(t + interval, deadline));
    }
}

} // namespace cppc::pcc
