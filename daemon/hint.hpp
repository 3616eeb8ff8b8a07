// SPDX-License-Identifier: Apache-2.0
// The one shape of a utilization hint, from the D-Bus call to the tick: the
// handle that names it, the task it applies to and its uclamp-style clamp.
// The handle table (which owns hints) hands these to the task sampler, which
// hands the governor what it saw of each: a sighting, the one shape the
// sampler returns and the governor takes and holds.
#pragma once

#include "policies/policy.hpp"

#include <sys/types.h>

#include <cstdint>

namespace cppcgov::daemon
{

// What a hint applies to: the process `pid` (all its threads), or the single
// thread whose id is `pid`.
struct HintTarget
{
    pid_t pid = 0;
    bool wholeProcess = true;

    bool operator==(const HintTarget&) const = default;
};

// A live clamp hint: handle `handle` clamps `target` to `clamp`.
struct ClampHint
{
    std::uint64_t handle = 0;
    HintTarget target;
    policies::Clamp clamp;

    bool operator==(const ClampHint&) const = default;
};

// A thread of hint `handle`'s target seen active in one tick of the task
// sampler (task_activity.hpp).
struct HintSighting
{
    std::uint64_t handle = 0;
    pid_t tid = 0;
    // The CPU it runs on or last ran on, as the host kernel numbers it
    // (the governor maps it to its machine's CPU).
    std::uint32_t cpu = 0;
    policies::Clamp clamp;
    // The CPU time (utime + stime) it used since the sampler last read it,
    // in microseconds; counted once per thread and tick (a thread under
    // several hints carries it on its first sighting, 0 on the others).
    std::uint64_t cpuTimeUs = 0;

    bool operator==(const HintSighting&) const = default;
};

} // namespace cppcgov::daemon
