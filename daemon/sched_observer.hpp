// SPDX-License-Identifier: Apache-2.0
// Exact load and hint placement from the scheduler's own events: a BPF
// program (daemon/bpf/sched_observe.bpf.c) on sched_switch, sched_wakeup,
// sched_wakeup_new, sched_migrate_task, sched_process_fork and
// sched_process_exit keeps, per CPU, the busy time in ns and the
// uclamp-style aggregation of the tasks runnable there, in memory this
// object maps at construction and then reads and writes in place.
//
// Built without BPF support (meson option `bpf`), the constructor always
// throws ObserverUnavailable. No logging. Not thread-safe: one thread
// calls sample(), slotsSeen() and the slot and target calls.
#pragma once

#include "daemon/hint.hpp"
#include "policies/policy.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <system_error>

namespace cppcgov::daemon
{

// Thrown when the program cannot be loaded or attached; what() is a reason
// for an operator: what failed and why.
class ObserverUnavailable : public std::runtime_error
{
  public:
    using runtime_error::runtime_error;
};

// One CPU's last window.
struct ObservedCpu
{
    // Time a task other than idle ran in the window, and of it the time
    // the threads of this process (the daemon's own) ran.
    std::uint64_t busyNs = 0;
    std::uint64_t ownBusyNs = 0;
    // The uclamp aggregation over the tasks runnable there at any time in
    // the window (hinted: their slot's clamp, several slots on one task:
    // max of mins, max of maxes; any other task [0,1024]); {0,1024} when no
    // task was runnable.
    policies::Clamp clamp;
    // Scheduler events the program handled for this CPU in the window
    // (0: the window is the runqueue as it stood).
    std::uint64_t events = 0;
    // Of them, context switches on the CPU itself (an event may be a
    // wakeup of a task bound there, handled on another CPU).
    std::uint64_t switches = 0;
    // Whether a task of another process than this one (the daemon's own
    // threads do not count), not a kernel thread, was running on the CPU
    // when the window ended.
    bool othersRunning = false;
};

// Cumulative, from the program's counters.
struct ObserverStats
{
    std::uint64_t events = 0; // scheduler events handled
    std::uint64_t missed = 0; // events it could not account (no task storage)
    std::uint64_t resets = 0; // runqueue bookkeeping reset when a CPU went idle
    // Runqueue bookkeeping reset at a switch because the program counted
    // more tasks on the CPU than the kernel had runnable there (a task left
    // without an event it sees, such as a throttled group's); the CPU's
    // other tasks are counted again at their next wakeup or switch-in.
    std::uint64_t overcounts = 0;
    // Bookkeeping found out of step and repaired (a task counted on another
    // CPU than it was found on, an empty bucket taken from, more than four
    // inherited slots).
    std::uint64_t anomalies = 0;
    // Windows in which a writer held a CPU's record through every retry
    // (its CPU stopped mid-update: a virtual machine's vCPU the host
    // preempted): the CPU's last complete reading stood in for it.
    std::uint64_t unread = 0;
};

// The loaded, attached program and its mapped results.
class SchedObserver
{
  public:
    static constexpr std::uint32_t maxSlots = 16384;

    // Loads, attaches (switch, wakeup, wakeup_new, migrate, fork, exit) and
    // maps the per-CPU results. cpus: how many CPUs to report (0: the
    // host's possible CPUs); events on CPUs beyond are not accounted.
    // Throws ObserverUnavailable.
    explicit SchedObserver(std::uint32_t cpus = 0);
    ~SchedObserver(); // detaches, unmaps

    SchedObserver(const SchedObserver&) = delete;
    SchedObserver& operator=(const SchedObserver&) = delete;

    std::uint32_t cpus() const noexcept;

    // Ends the current window and starts the next, then fills out[cpu] for
    // the window just ended (out.size() == cpus(); a shorter span gets its
    // first out.size() CPUs). Returns the window's length in ns
    // (CLOCK_MONOTONIC; 0 on the first call, which only starts). No system
    // call (clock_gettime through the vDSO), no allocation.
    std::uint64_t sample(std::span<ObservedCpu> out) noexcept;

    // The slots whose tasks were runnable on `cpu` in the window sample()
    // last ended, ascending, as far as they are still in use. (When
    // nothing happened on the CPU in the window: the slots of the task
    // running there.) Valid until the next sample(). A task that stayed
    // queued but did not run in a window with events on its CPU adds its
    // clamp to the window but not its slots.
    std::span<const std::uint32_t> slotsSeen(std::uint32_t cpu) const noexcept;

    // Slot table (mmapped; no system call). A slot in use has a clamp;
    // clearSlot() ends it: every task that carries it, own or inherited,
    // loses it at once (a generation changes; bindings made before are
    // void too), and the slot may be reused. setSlotClamp() on a slot not
    // in use starts it; on one in use it changes the clamp of every task
    // carrying it. Slots >= maxSlots are ignored.
    void setSlotClamp(std::uint32_t slot, policies::Clamp clamp) noexcept;
    void clearSlot(std::uint32_t slot) noexcept;

    // Target -> slot (one bpf map update each). A task carries the slot of
    // its own thread id (target.wholeProcess == false) and of its thread
    // group (wholeProcess == true), and every slot its parent carried when
    // it was forked (up to 4 inherited). Numbers are the kernel's (the
    // initial PID namespace). A binding holds for the slot's current use
    // (bindTarget() on a slot not in use starts it with [0,1024]), and
    // binding a target again replaces its slot. Errors: the errno of the
    // map update (EINVAL for a slot >= maxSlots; unbinding a target not
    // bound: ENOENT).
    std::error_code bindTarget(const HintTarget& target,
                               std::uint32_t slot) noexcept;
    std::error_code unbindTarget(const HintTarget& target) noexcept;

    ObserverStats stats() const noexcept;

    // The tick's wake-up from a long sleep. While armed, the first wake-up
    // or switch-in of a task of another process that is not a kernel
    // thread disarms it and makes wakeFd() readable (epoll); takeWakes()
    // then empties the ring and returns how many of its records came since
    // the last arming (two CPUs may both have seen it armed; one that saw
    // an earlier arming may write late, and is not counted).
    int wakeFd() const noexcept;
    void armWake(bool armed) noexcept;
    std::size_t takeWakes() noexcept;
    // Whether a task of another process that is not a kernel thread runs
    // on `cpu` as the program last saw it (no window ends; an offline CPU
    // shows the last task it ran): after armWake(true), what woke up
    // before it was armed.
    bool runningOther(std::uint32_t cpu) const noexcept;

  private:
    struct State;
    std::unique_ptr<State> state_;
};

} // namespace cppcgov::daemon
