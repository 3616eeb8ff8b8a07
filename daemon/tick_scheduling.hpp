// SPDX-License-Identifier: Apache-2.0
// The tick thread's scheduling: a SCHED_DEADLINE reservation (a runtime in
// every period, which the kernel both guarantees and enforces), SCHED_FIFO
// at a low priority, or an ordinary thread, as the `tick:` section asks and
// the kernel grants (config.hpp, TickConfig).
//
// SCHED_DEADLINE's runtime is the most CPU time the thread may use in each
// period; past it the kernel throttles the thread until the next period,
// whatever it is doing, so a tick that spins cannot take a CPU from other
// tasks. SCHED_FIFO has no such cap of its own: only the kernel's
// real-time throttling (kernel.sched_rt_runtime_us of every
// kernel.sched_rt_period_us) leaves the others a share.
//
// Both are set with SCHED_FLAG_RESET_ON_FORK: threads the tick's thread
// starts (the kernel backend's workers) are ordinary ones, and a
// SCHED_DEADLINE thread could not start any otherwise.
#pragma once

#include "daemon/config.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace cppcgov::daemon
{

// What the tick's thread got.
struct TickReservation
{
    // deadline, fifo or other (never automatic).
    TickScheduling policy = TickScheduling::other;
    // SCHED_DEADLINE's runtime and period (the deadline is the period).
    std::uint64_t runtimeNs = 0;
    std::uint64_t periodNs = 0;
    // SCHED_FIFO's priority.
    std::uint32_t priority = 0;
    // Why a policy asked for, or tried by auto, was refused, one clause
    // each ("SCHED_DEADLINE refused: Operation not permitted"); empty when
    // the first choice held.
    std::string refused;
};

// The SCHED_DEADLINE runtime a tick gets when runtime_us is 0, for
// `cpus` CPUs ticked every `periodUs`: three times the measured cost of a
// tick at that many CPUs (daemon/README.md), at least a fifth of the
// period and never more than half of it.
[[nodiscard]] std::uint32_t tickRuntimeUs(std::size_t cpus,
                                          std::uint32_t periodUs) noexcept;

// Schedules the calling thread as `config` asks, its reservation sized for
// `cpus` CPUs ticked every `periodUs`. Under auto, each refusal falls to
// the next policy; an explicit deadline or fifo that the kernel refuses
// leaves the thread as it was, with policy other and `refused` saying why
// (the caller does not start). A runtime_us above the period is refused
// the same way.
[[nodiscard]] TickReservation reserveTick(const TickConfig& config,
                                          std::uint32_t periodUs,
                                          std::size_t cpus) noexcept;

// "SCHED_DEADLINE (runtime 180 us every 1000 us)", "SCHED_FIFO priority 1",
// "SCHED_OTHER (nice -5)": what the thread runs on, for the log.
[[nodiscard]] std::string describe(const TickReservation& reservation);

// The calling thread's CPU time, in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
[[nodiscard]] std::uint64_t threadCpuNs() noexcept;

} // namespace cppcgov::daemon
