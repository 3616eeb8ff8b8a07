// SPDX-License-Identifier: Apache-2.0
// What the daemon learns about tasks from procfs and the scheduler: a
// task's owner (to decide whether a caller may clamp it), its CPU affinity,
// its thread group, and the fields of a thread's stat line. Which hinted
// threads ran where, tick after tick, is task_activity.hpp's.
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

} // namespace cppcgov::daemon
