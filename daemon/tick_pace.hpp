// SPDX-License-Identifier: Apache-2.0
// How long the tick sleeps next: its sampling period; once the machine
// has been quiet for a while, the idle period (sampling.idle_period_us),
// from which the scheduler's events wake it early (a CPU that leaves idle
// for a task of another process: SchedObserver::armWake()), as do the
// D-Bus side's new inputs; or, once ticks have written nothing for a while
// though tasks ran, the steady period (sampling.steady_period_us), from
// which only new inputs wake it (under load the scheduler's events never
// stop). A tick that wakes every millisecond costs an idle server a
// wake-up a millisecond on some CPU, and a loaded one the tick's own CPU
// time; the kernel's schedutil runs only when the scheduler updates a
// CPU's utilization, at most once a scheduler tick per CPU for a task
// that runs on.
//
// Each tick is one of three (tickState()):
//   - active: it wrote. The period, and the counts start again. (A new
//     hint wakes a long sleep through the inputs, and its task through its
//     wake-up; a hint whose task sleeps does not hold the tick awake.)
//   - watching: a task of another process (not a kernel thread) was
//     running when the window ended, or a CPU was busy above quietBusy of the
//     window with anything but the daemon's own threads (whose tick would
//     otherwise keep itself awake: at a 1 ms period under an emulator it takes
//     a third of a CPU). Something may be about to need a write (a burst
//     from idle is one from its first tick): the period, until steadyTicks
//     ticks in a row wrote nothing (calm()); then the steady period after
//     each until an active one. A tick woken early from the idle sleep
//     starts that count again (woken()): what woke it is new.
//   - quiet: neither. The idle period once quietTicks quiet ticks came in a
//     row at the period (the policy's averages have settled), and from then
//     on after every quiet tick until an active one: a tick woken from the
//     idle sleep watches while the task that woke it runs, and sleeps long
//     again once it is quiet. Before it settles, as a watching tick.
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
// Quiet ticks in a row at the period before the first idle sleep.
inline constexpr std::uint32_t quietTicks = 8;
// Ticks in a row that wrote nothing before the first steady sleep.
inline constexpr std::uint32_t steadyTicks = 8;

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

// The sleep after a tick.
enum class TickSleep
{
    period,
    idle,   // woken by the scheduler's events and new inputs
    steady, // woken by new inputs only
};

class TickPace
{
  public:
    // After each tick, its state: the sleep it calls for.
    [[nodiscard]] TickSleep afterTick(TickState state) noexcept;

    // The tick was woken early from the idle sleep.
    void woken() noexcept
    {
        calmRun_ = 0;
    }

    // Whether the count of quiet ticks has been reached since the last
    // active tick.
    bool settled() const noexcept
    {
        return settled_;
    }
    // Whether steadyTicks ticks in a row wrote nothing.
    bool calm() const noexcept
    {
        return calmRun_ >= steadyTicks;
    }

  private:
    std::uint32_t quietRun_ = 0;
    std::uint32_t calmRun_ = 0;
    bool settled_ = false;
};

} // namespace cppcgov::daemon
