// SPDX-License-Identifier: Apache-2.0
// Pidfds: a descriptor that holds one task (pidfd_open(2)) and becomes
// readable when it exits, so that a task is followed without looking its
// number up again (a number the kernel may give to another task once this
// one is gone). The one place that opens pidfds and asks about them.
//
// A process pidfd refers to a whole thread group (opened on its leader); a
// thread pidfd (PIDFD_THREAD, Linux 6.9 and later) to a single thread, and
// reports that thread's own exit. No logging.
#pragma once

#include "lib/backend/fd.hpp"

#include <sys/types.h>

#include <optional>
#include <system_error>

namespace cppc::backend
{

// What a pidfd is to hold.
enum class PidfdOf : unsigned char
{
    process,
    thread,
};

// Opens a pidfd of the process `pid` (which must be a thread group leader)
// or of the single thread `pid`, close-on-exec, into `out`. Errors are
// pidfd_open's errno (system category), `out` then unchanged: ESRCH when
// there is no such task; for a process, EINVAL (before Linux 6.9) or
// ENOENT (since) when `pid` is not a leader; for a thread, EINVAL when the
// kernel has no PIDFD_THREAD; EMFILE and the like. pid <= 0 is ESRCH.
[[nodiscard]] std::error_code openPidfd(pid_t pid, PidfdOf of,
                                        Fd& out) noexcept;

// Whether the task behind `pidfd` has exited: it is readable, or reports
// a hang-up or an error (nothing left to follow either). Never blocks.
[[nodiscard]] bool pidfdExited(int pidfd) noexcept;

// Whether `pidfd` is a thread pidfd (opened with PIDFD_THREAD).
[[nodiscard]] bool isThreadPidfd(int pidfd) noexcept;

// The number of the task behind `pidfd` in our PID namespace, from the
// "Pid:" line of /proc/self/fdinfo: -1 once it has exited, 0 when it is
// outside our namespace. Nothing when `fd` has no such line: it is not a
// pidfd (or not open).
[[nodiscard]] std::optional<long> pidfdPid(int pidfd);

} // namespace cppc::backend
