// SPDX-License-Identifier: Apache-2.0
// The CLOCK_MONOTONIC time and an absolute sleep on it that never returns
// early: shared by the PCC channel's precise waits and the simulated
// platform that answers it.
#pragma once

#include <chrono>

namespace cppc
{

using Nanos = std::chrono::nanoseconds;

// The current CLOCK_MONOTONIC time.
[[nodiscard]] Nanos monotonicNow() noexcept;

// Sleeps until CLOCK_MONOTONIC reaches `deadline`, with an absolute
// clock_nanosleep (TIMER_ABSTIME), sleeping again after a signal (EINTR).
// Never returns before the deadline; returns at once if it has passed.
void sleepUntil(Nanos deadline) noexcept;

} // namespace cppc
