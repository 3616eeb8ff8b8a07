// The one shape of a utilization hint, from the D-Bus call to the tick: the
// handle that names it, the task it applies to and its uclamp-style clamp.
// The handle table (which owns hints) hands these to the task sampler, which
// hands the governor what it saw of each.
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

} // namespace cppcgov::daemon
