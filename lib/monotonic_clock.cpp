// SPDX-License-Identifier: Apache-2.0
#include "monotonic_clock.hpp"

#include <time.h>

#include <cerrno>

namespace cppc
{

Nanos monotonicNow() noexcept
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::chrono::seconds{ts.tv_sec} + Nanos{ts.tv_nsec};
}

void sleepUntil(Nanos deadline) noexcept
{
    const auto secs = std::chrono::floor<std::chrono::seconds>(deadline);
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(secs.count());
    ts.tv_nsec = static_cast<long>((deadline - secs).count());
    // clock_nanosleep returns the error number instead of setting errno.
    // Anything but EINTR (EINVAL for a negative time) means the deadline
    // cannot be slept to; the loop below still never returns early.
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
           EINTR)
    {}
    while (monotonicNow() < deadline)
    {}
}

} // namespace cppc
