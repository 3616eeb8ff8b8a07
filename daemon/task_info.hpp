// What the daemon learns about tasks from procfs and the scheduler: a
// task's owner (to decide whether a caller may clamp it), its CPU affinity,
// its thread group, and, each tick, which hinted threads are active, on
// which CPU, and how much CPU time they used there.
//
// Tasks are looked up by number in the /proc of the daemon's own PID
// namespace: the numbers must be the ones its pidfds resolve to (the handle
// table's targets). `procDir` parameters exist for tests on a fake tree;
// the daemon leaves them at "/proc". Everything here only reads.
//
// No D-Bus and no logging. Not thread-safe.
#pragma once

#include "daemon/hint.hpp"
#include "lib/backend/fd.hpp"
#include "policies/policy.hpp"

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace cppcgov::daemon
{

// A task's real and effective user ids.
struct TaskCreds
{
    uid_t uid = 0;
    uid_t euid = 0;

    bool operator==(const TaskCreds&) const = default;
};

// Reads the real and effective uid of task `pid` (a process or a thread)
// from the "Uid:" line of procDir/<pid>/status (real, effective, saved,
// filesystem). Errors: std::errc::no_such_process when there is no such
// task (or pid <= 0); cppc::Errc::malformedAttribute when the line is
// missing or malformed; another errno of open or read.
[[nodiscard]] std::error_code taskCreds(
    pid_t pid, TaskCreds& out, const std::filesystem::path& procDir = "/proc");

// The real and effective uid of the task `pidfd` holds, `pid` being its
// number in the daemon's PID namespace. Asked of the pidfd itself
// (PIDFD_GET_INFO, Linux 6.13) where the kernel can: one system call, and
// the answer is that task's even if its number has been reused since.
// Elsewhere it is taskCreds(pid, out, procDir), which is the same task only
// while it has not exited: the caller checks that afterwards. Errors as
// taskCreds(); std::errc::no_such_process once the task has been reaped.
[[nodiscard]] std::error_code pidfdTaskCreds(
    int pidfd, pid_t pid, TaskCreds& out,
    const std::filesystem::path& procDir = "/proc");

// Whether a caller with effective uid `callerEuid` may change `target`'s
// scheduling attributes by the kernel's sched_setattr() same-owner rule:
// the caller's euid equals the target's euid or its real uid. Privilege
// (root, CAP_SYS_NICE) is the caller's to check, not this function's.
bool mayClamp(uid_t callerEuid, const TaskCreds& target) noexcept;

// The CPUs task `pid` (a thread id; 0 for the calling thread) may run on,
// ascending, from sched_getaffinity() with a mask sized at run time, so
// machines with more than 1024 CPUs are covered. Errors:
// std::errc::no_such_process when there is no such task; another errno
// (EPERM...). `cpus` is replaced on success.
[[nodiscard]] std::error_code taskAffinity(pid_t pid,
                                           std::vector<unsigned>& cpus);

// The thread group (process) id of task `tid`, from the "Tgid:" line of
// procDir/<tid>/status: equal to `tid` for a process's main thread. Errors
// as taskCreds().
[[nodiscard]] std::error_code threadGroupOf(
    pid_t tid, pid_t& tgid, const std::filesystem::path& procDir = "/proc");

// The fields of a thread's stat file (proc(5)) that activity needs.
struct TaskStat
{
    char state = 0;              // field 3: 'R' running or runnable, ...
    std::uint64_t cpuTicks = 0;  // fields 14 + 15: utime + stime
    std::uint64_t startTime = 0; // field 22: start time after boot
    unsigned cpu = 0;            // field 39: the CPU it last ran on
};

// Parses one stat line. The name (field 2) is in parentheses and may hold
// spaces and parentheses: the fields resume after the LAST ')'. False when
// the text is malformed or too short.
[[nodiscard]] bool parseTaskStat(std::string_view text, TaskStat& out) noexcept;

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
