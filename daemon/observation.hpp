// SPDX-License-Identifier: Apache-2.0
// Where the daemon learns each CPU's load and which CPUs the hinted tasks
// run on: the scheduler's own events (sched_observer.hpp's BPF program),
// or procfs (proc_stat.hpp for the load, task_activity.hpp for the tasks).
//
// The choice is made once, at start (sampling.source in the
// configuration, config.hpp):
//   - procfs when the configuration says so, when the daemon runs on a
//     root prefix other than / (a fake tree: the scheduler's events are
//     the live system's), when it is not in the initial PID namespace (the
//     program numbers tasks as that namespace does, the clients' hints as
//     the daemon's does), or when the program cannot be loaded (no BTF, no
//     capability, an old kernel, built without BPF): source() says which,
//     why() says why, and with `bpf` required the constructor throws
//     instead;
//   - otherwise the scheduler's events: the maps are used through the
//     descriptors opened at loading.
// Either way the two capabilities the loading needs (CAP_BPF and
// CAP_PERFMON) are dropped before the constructor returns.
//
// With the scheduler's events, each hint target (a process, or a thread)
// has a slot in the program's table: its clamp is the combination of the
// live hints on that target (the max of their minimums and of their
// maximums, as the kernel combines tasks), and the tasks of the target and
// every task they fork carry it until the last of those hints ends.
//
// Everything here runs on the daemon's loop thread; sample() makes no
// system call but, every onlineRefreshUs, one read of the CPUs' online
// list. No logging: the daemon logs what why() and the errors say.
#pragma once

#include "daemon/config.hpp"
#include "daemon/governor.hpp"
#include "daemon/hint.hpp"
#include "daemon/latest_value.hpp"
#include "daemon/load_source.hpp"
#include "daemon/sched_observer.hpp"
#include "lib/backend/fd.hpp"
#include "lib/cpu_list.hpp"

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cppcgov::daemon
{

// How often the online list is read again with the scheduler's events.
inline constexpr std::uint64_t onlineRefreshUs = 100'000;

// The counts of the program's bookkeeping, for GetStatistics.
struct ObservationCounts
{
    std::uint64_t events = 0; // scheduler events handled
    std::uint64_t missed = 0; // events the program could not account
    std::uint64_t resets = 0; // runqueue bookkeeping reset at idle
    // Reset because it counted more tasks than the kernel had runnable.
    std::uint64_t overcounts = 0;
    // Windows read from a CPU's last complete reading: a writer held its
    // record through every retry.
    std::uint64_t unread = 0;
};

class Observation
{
  public:
    // Chooses the source (see above) for the host under `root`. Throws
    // std::runtime_error, saying why, when `wanted` is bpf and the
    // scheduler's events cannot be used.
    Observation(SamplingSource wanted, const std::filesystem::path& root);
    ~Observation();

    Observation(const Observation&) = delete;
    Observation& operator=(const Observation&) = delete;

    // Whether the scheduler's events are in use.
    bool exact() const noexcept
    {
        return observer_ != nullptr;
    }
    // "bpf" or "procfs".
    std::string_view source() const noexcept
    {
        return exact() ? "bpf" : "procfs";
    }
    // Why this source, for the log, `status` and SamplingSourceReason.
    const std::string& why() const noexcept
    {
        return why_;
    }
    // Something the start-up should warn about (a capability that could not
    // be dropped); empty when there is nothing.
    const std::string& warning() const noexcept
    {
        return warning_;
    }

    // The scheduler's events only. A load source over the first `cpus`
    // host CPUs for a machine (machine.hpp useLoadSource()): the busy time
    // of the window sample() last ended. CPUs beyond the program's are
    // idle and offline. It must not outlive this object.
    std::unique_ptr<LoadSource> loadSource(std::uint32_t cpus) const;

    // The scheduler's events only: ends the window and starts the next.
    // Call once per tick, before the machine samples and the governor
    // ticks with cpus().
    void sample() noexcept;

    // Each host CPU's window as the last sample() ended it, for
    // Governor::tickExact(); valid until the next sample() or hint change.
    std::span<const ExactCpu> cpus() const noexcept
    {
        return exact_;
    }

    // A clamp hint was added: its target carries it from now on (before
    // addClamp returns, so that a task the target forks right after the
    // call's reply inherits it). An error of the program's target map
    // (its errno) leaves the hint unseen. Nothing to do (no error) on
    // procfs.
    //
    // addClamp() and endClamp() run on one thread (the D-Bus thread), and
    // sample(), cpus() and counts() on another (the tick's): the hint
    // table goes to sample() through a wait-free hand-off
    // (latest_value.hpp), taken at its next call.
    [[nodiscard]] std::error_code addClamp(const ClampHint& hint);
    // Clamp hint `handle` ended (nothing when it is not known).
    void endClamp(std::uint64_t handle) noexcept;

    // The daemon's own tick thread `tid`: to the program a task with the
    // clamp [0, 0], which neither raises a CPU's floor nor lifts its
    // ceiling, as the kernel's uclamp leaves its own SCHED_DEADLINE
    // frequency thread out; no hint of a client's, and never sighted.
    // Called as addClamp() is.
    [[nodiscard]] std::error_code addOwnThread(pid_t tid);

    // The handle addOwnThread() holds (client handles start at 1).
    static constexpr std::uint64_t ownHandle = 0;

    // The program's counts; zeros on procfs.
    ObservationCounts counts() const noexcept;

    // The scheduler's events only (empty, false, -1, nothing on procfs),
    // from the tick's thread: each CPU's busy fraction (0..busyScale) in
    // the window the last sample() ended without the daemon's own threads
    // (0 offline); whether an online CPU was running a task of another
    // process, not a kernel thread, when it ended, or is now
    // (othersRunningNow()); and the tick's wake-up from a long sleep
    // (SchedObserver::wakeFd()).
    std::span<const std::uint16_t> othersBusy() const noexcept
    {
        return othersBusy_;
    }
    bool othersRunning() const noexcept
    {
        return othersRunning_;
    }
    int wakeFd() const noexcept;
    void armWake(bool armed) noexcept;
    std::size_t takeWakes() noexcept;
    bool othersRunningNow() const noexcept;

    // For the load source.
    std::span<const std::uint16_t> busy() const noexcept
    {
        return busy_;
    }
    std::span<const std::uint64_t> busyUs() const noexcept
    {
        return busyUs_;
    }
    bool online(std::uint32_t cpu) const noexcept
    {
        return cpu < cppc::maxCpus && online_.test(cpu);
    }

  private:
    // A target's slot: the live hints on it, in the order added.
    struct Slot
    {
        HintTarget target;
        std::vector<std::pair<std::uint64_t, policies::Clamp>> hints;
    };

    // Writes slot `slot`'s combined clamp to the program's table.
    void publish(std::uint32_t slot) noexcept;
    // Hands sample() each slot's hints as they are now.
    void publishSlots() noexcept;
    // Frees the ended slots that two windows have ended since.
    void reclaimSlots();
    // Reads the online list into online_ (kept as it was on an error).
    void readOnline() noexcept;

    std::unique_ptr<SchedObserver> observer_;
    std::string why_;
    std::string warning_;
    std::vector<ObservedCpu> observed_;
    std::vector<ExactCpu> exact_;
    std::vector<HintSighting> sightings_;
    std::vector<std::size_t> firstSighting_; // per CPU, into sightings_
    std::vector<std::uint16_t> busy_;
    std::vector<std::uint16_t> othersBusy_;
    std::vector<std::uint64_t> busyUs_;
    // Per CPU: seen offline, and no window with events since.
    std::vector<bool> cameBack_;
    bool othersRunning_ = false;
    cppc::CpuSet online_;
    cppc::backend::Fd onlineFile_;
    std::uint64_t onlineReadUs_ = 0;
    bool onlineRead_ = false;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> freeSlots_;
    // Slots ended, free once sample() has counted to freeAt.
    struct EndedSlot
    {
        std::uint32_t slot;
        std::uint64_t freeAt;
    };
    std::vector<EndedSlot> endedSlots_;
    // Windows ended: counted by sample(), read by the hint side.
    std::atomic<std::uint64_t> samples_{0};
    // Each slot's hints as the hint side last handed them to sample().
    using SlotHints =
        std::vector<std::vector<std::pair<std::uint64_t, policies::Clamp>>>;
    LatestValue<SlotHints> slotHints_;
    std::map<std::pair<pid_t, bool>, std::uint32_t> slotOfTarget_;
    std::unordered_map<std::uint64_t, std::uint32_t> slotOfHandle_;
};

} // namespace cppcgov::daemon
