// SPDX-License-Identifier: Apache-2.0
// Which hinted threads ran, on which CPU and for how long, tick after tick,
// from procfs: the sampler between the handle table's live clamps
// (ClampHint, hint.hpp) and the governor (HintSighting).
//
// Tasks are looked up by number in the /proc of the daemon's own PID
// namespace, as in task_info.hpp. No D-Bus and no logging. Not
// thread-safe.
#pragma once

#include "daemon/hint.hpp"
#include "daemon/task_info.hpp"
#include "lib/backend/fd.hpp"

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace cppcgov::daemon
{

// Which hinted threads are active, tick after tick.
//
// A thread is active in a tick when its state is 'R' (running or waiting
// for a CPU), or when its CPU time (utime + stime) grew since the previous
// tick: it ran in between, even if it sleeps now. A thread seen for the
// first time is active only when it is 'R'. A whole-process target covers
// every thread of the process (procDir/<pid>/task/*), a thread target only
// that thread.
//
// A sighting carries what the thread's CPU time grew since it was last read
// (in USER_HZ ticks, 10 ms each, converted with clockTickUs()): 0 on its
// first read. All of it is put on the CPU the thread is on when read: a
// thread that moved between reads has its time counted where it went.
//
// Each thread's previous CPU time is kept by thread id and forgotten when
// the thread is not seen in a tick (a thread id reused in between is told
// apart by its start time). A thread covered by several hints is read once
// per tick.
//
// Cost per tick: one directory listing of procDir/<pid>/task per distinct
// process among the whole-process targets (many hints on one process list
// it once), and one read of a stat file per distinct thread: the file is
// kept open between ticks and read again from its start (a thread's first
// read, or any beyond maxOpenStats open files, opens and closes it too).
// The buffers are kept between ticks; what still allocates is a map node
// per newly seen thread or process.
//
// Clients choose the tasks, so the cost is bounded: a tick makes at most
// `readsPerTick` reads (a listing or a thread's stat each; what was read
// already this tick costs nothing again). When that is
// not enough for every hinted thread, the next tick goes on where this one
// stopped, so every thread is still read in turn, and threads are then
// remembered until a tick has covered them all. A clamp outlives a missed
// sighting by the governor's hold time, so this only delays, by a few
// ticks, the clamps of tasks with thousands of threads.
class TaskActivity
{
  public:
    // What a tick may read by default: about a millisecond of procfs reads.
    static constexpr std::size_t defaultReadsPerTick = 256;

    // Opens `procDir` (a directory handle kept for the object's life).
    // Throws std::system_error naming it when it cannot be opened.
    explicit TaskActivity(const std::filesystem::path& procDir = "/proc",
                          std::size_t readsPerTick = defaultReadsPerTick);

    // Samples the threads of `hints` (those the budget reaches, see above)
    // and returns the active ones: one sighting per (hint, active thread),
    // in the order they were read, a process's threads in the order procfs
    // lists them. A thread's CPU time is on its first sighting of the tick
    // only. Tasks that no longer exist (or whose stat cannot be read or
    // parsed) are skipped: the handle table reaps exited tasks. The span
    // stays valid until the next tick() or the object's end.
    std::span<const HintSighting> tick(std::span<const ClampHint> hints);

    // What a tick may read from now on (at least 1).
    void setReadsPerTick(std::size_t reads) noexcept
    {
        readsPerTick_ = reads == 0 ? 1 : reads;
    }
    std::size_t readsPerTick() const noexcept
    {
        return readsPerTick_;
    }
    // The reads the last tick() made.
    std::size_t lastReads() const noexcept
    {
        return lastReads_;
    }

    // The number of threads whose CPU time is remembered from the last tick.
    std::size_t trackedThreads() const noexcept
    {
        return threads_.size();
    }

  private:
    struct Thread
    {
        std::uint64_t cpuTicks = 0;
        std::uint64_t startTime = 0;
        std::uint64_t seenTick = 0; // the tick that last read it
        // What cpuTicks grew by at that read, in microseconds, until the
        // tick's first sighting of the thread carries it.
        std::uint64_t unreportedUs = 0;
        unsigned cpu = 0;
        bool active = false;
        // Its stat file, kept open between ticks (at most maxOpenStats).
        cppc::backend::Fd stat;
    };

    // Stat files kept open between ticks, at most: the rest are opened and
    // closed at each read. Well inside the unit's LimitNOFILE= beside the
    // handles' pidfds.
    static constexpr std::size_t maxOpenStats = 1024;

    // Reads the stat line of open file `fd` from its start into
    // statBuffer_, setting `size`; false when it cannot be read or does
    // not fit.
    bool readStatLine(int fd, std::size_t& size);

    // Thread `tid` of process `pid` (the thread itself when pid == tid) as
    // seen this tick, read at most once per tick; nullptr when it cannot be
    // read. `listed`: this tick's listing of `pid` holds `tid`; only then
    // is its stat file read through the descriptor kept from an earlier
    // tick (procfs fails that read once the thread is gone, so a thread
    // target, which no listing vouches for, is opened by path each time).
    Thread* sample(pid_t pid, pid_t tid, bool listed);

    // A process's thread ids as listed in tick `tick`.
    struct Listing
    {
        std::uint64_t tick = 0;
        bool gone = false;
        std::vector<pid_t> tids;
    };

    // Lists the thread ids of process `pid` into `out`; false when the
    // process is gone.
    bool listThreads(pid_t pid, std::vector<pid_t>& out);

    // Process `pid`'s listing of this tick, listed at most once per tick
    // (charging `budget` then); nullptr when the process is gone, or when
    // it must be listed and `budget` is 0 (then `outOfBudget` is set).
    const Listing* listing(pid_t pid, std::size_t& budget, bool& outOfBudget);

    // Whether thread `tid` was read this tick already.
    bool readThisTick(pid_t tid) const;

    // Appends `hint`'s sighting of `tid` when it is active (`listed` as
    // for sample()).
    void visit(const ClampHint& hint, pid_t pid, pid_t tid, bool listed);

    // Visits `hint` from its thread `firstThread` on (in listing order),
    // each thread not read yet this tick costing one read of `budget`.
    // Returns the position it stopped at when the budget ran out, or
    // nothing when it finished the hint.
    std::optional<std::size_t> visitHint(
        const ClampHint& hint, std::size_t firstThread, std::size_t& budget);

    cppc::backend::Fd proc_;
    std::size_t readsPerTick_;
    std::size_t lastReads_ = 0;
    // Where the next tick starts when the last one ran out of reads: the
    // hint (by position in the span) and the thread within it.
    std::size_t resumeHint_ = 0;
    std::size_t resumeThread_ = 0;
    // The tick since which every hinted thread was read at least once.
    std::uint64_t roundStart_ = 1;
    std::uint64_t tick_ = 0;
    std::unordered_map<pid_t, Thread> threads_;
    std::size_t openStats_ = 0;
    std::vector<HintSighting> sightings_;
    std::unordered_map<pid_t, Listing> listings_;
    std::vector<char> dirBuffer_; // getdents64 records
    std::array<char, 4096> statBuffer_{};
};

} // namespace cppcgov::daemon
