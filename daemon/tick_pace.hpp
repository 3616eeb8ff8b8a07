// SPDX-License-Identifier: Apache-2.0
// How long the tick sleeps next: its sampling period, or, once the machine
// has been quiet for a while, the idle period (sampling.idle_period_us), from
// which the scheduler's events wake it early (a CPU that leaves idle for a
// task of another process: SchedObserver::armWake()), as do the D-Bus
// side's new inputs. A tick that wakes every millisecond costs an idle
// server a wake-up a millisecond on some CPU; the kernel's schedutil runs
// only when the scheduler updates a CPU's utilization.
//
// Each tick is one of three (tickState()):
//   - active: it wrote. The period, and the count of quiet ticks starts
//     again. (A new hint wakes a long sleep through the inputs, and its
//     task through its wake-up; a hint whose task sleeps does not hold the
//     tick awake.)
//   - watching: a task of another process (not a kernel thread) was
//     running when the window ended, or a CPU was busy above quietBusy of the
//     window with anything but the daemon's own threads (whose tick would
//     otherwise keep itself awake: at a 1 ms period under an emulator it takes
//     a third of a CPU). The period: something may be about to need a write (a
//     burst from idle is one from its first tick).
//   - quiet: neither. The idle period once quietTicks quiet ticks came in a
//     row at the period (the policy's averages have settled), and from then
//     on after every quiet tick until an active one: a tick woken from the
//     long sleep watches while the task that woke it runs, and sleeps long
//     again once it is quiet.
//
// No clock, no logging; the tick's thread alone uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cppcgov::daemon
{

// Busy fraction (of busyScale, 1024) of a tick's window above which a CPU
// is watched: a quarter, far above an idle CPU's housekeeping and far
// below what a CPU-bound task makes.
inline constexpr std::uint16_t quietBusy = 256;
// Quiet ticks in a row at the period before the first long sleep.
inline constexpr std::uint32_t quietTicks = 8;

enum class TickState
{
    quiet,
    watching,
    active,
};

// The state of a tick: `othersBusy`, each CPU's busy fraction in its window
// without the daemon's own threads (Observation::othersBusy()).
[[nodiscard]] TickState tickState(std::span<const std::uint16_t> othersBusy,
                                  std::size_t writes,
                                  bool othersRunning) noexcept;

class TickPace
{
  public:
    // After each tick, its state: whether the next sleep is the long one.
    [[nodiscard]] bool afterTick(TickState state) noexcept;

    // Whether the count of quiet ticks has been reached since the last
    // active tick.
    bool settled() const noexcept
    {
        return settled_;
    }

  private:
    std::uint32_t quietRun_ = 0;
    bool settled_ = false;
};

} // namespace cppcgov::daemon
