// SPDX-License-Identifier: Apache-2.0
#include "daemon/tick_scheduling.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace cppcgov::daemon
{
namespace
{

// sched_setattr(2)'s argument, which glibc does not declare (its first
// version, SCHED_ATTR_SIZE_VER0).
struct SchedAttr
{
    std::uint32_t size = sizeof(SchedAttr);
    std::uint32_t policy = 0;
    std::uint64_t flags = 0;
    std::int32_t nice = 0;
    std::uint32_t priority = 0;
    std::uint64_t runtime = 0;
    std::uint64_t deadline = 0;
    std::uint64_t period = 0;
};
static_assert(sizeof(SchedAttr) == 48);

#ifndef SCHED_DEADLINE
constexpr std::uint32_t schedDeadline = 6;
#else
constexpr std::uint32_t schedDeadline = SCHED_DEADLINE;
#endif
constexpr std::uint64_t resetOnFork = 0x01; // SCHED_FLAG_RESET_ON_FORK

// The measured cost of one tick (daemon/README.md, "The tick's thread"):
// a fixed part and a part per CPU, in nanoseconds, the margin over it, and
// the share of the period it gets at least (a tick's CPU time has spikes
// of tens of microseconds: page faults, interrupts, a hypervisor's steal).
constexpr std::uint64_t tickBaseNs = 20'000;
constexpr std::uint64_t tickPerCpuNs = 500;
constexpr std::uint64_t tickMargin = 3;
constexpr std::uint64_t leastShareOfPeriod = 5; // a fifth

int setAttr(const SchedAttr& attr) noexcept
{
    if (::syscall(SYS_sched_setattr, 0, &attr, 0U) != 0)
    {
        return errno;
    }
    return 0;
}

std::string refusal(const char* policy, int error)
{
    return std::string(policy) + " refused: " + std::strerror(error);
}

} // namespace

std::uint32_t tickRuntimeUs(std::size_t cpus, std::uint32_t periodUs) noexcept
{
    const std::uint64_t costUs =
        ((tickBaseNs + tickPerCpuNs * static_cast<std::uint64_t>(cpus)) *
             tickMargin +
         999) /
        1000;
    const std::uint64_t least = periodUs / leastShareOfPeriod;
    const std::uint64_t most = std::max<std::uint64_t>(periodUs / 2, 2);
    return static_cast<std::uint32_t>(std::min(std::max(costUs, least), most));
}

TickReservation reserveTick(const TickConfig& config, std::uint32_t periodUs,
                            std::size_t cpus) noexcept
{
    TickReservation r;
    const bool automatic = config.scheduling == TickScheduling::automatic;
    const auto add = [&r](const std::string& clause) {
        r.refused += (r.refused.empty() ? "" : "; ") + clause;
    };
    if (config.scheduling == TickScheduling::other)
    {
        return r;
    }
    if (automatic || config.scheduling == TickScheduling::deadline)
    {
        const std::uint32_t runtimeUs =
            config.runtimeUs != 0 ? config.runtimeUs
                                  : tickRuntimeUs(cpus, periodUs);
        if (runtimeUs > periodUs)
        {
            add("SCHED_DEADLINE refused: tick.runtime_us " +
                std::to_string(runtimeUs) + " is longer than the period (" +
                std::to_string(periodUs) + " us, sampling.period_us)");
        }
        else
        {
            SchedAttr attr;
            attr.policy = schedDeadline;
            attr.flags = resetOnFork;
            attr.runtime = std::uint64_t{runtimeUs} * 1000;
            attr.deadline = std::uint64_t{periodUs} * 1000;
            attr.period = attr.deadline;
            if (const int error = setAttr(attr); error == 0)
            {
                r.policy = TickScheduling::deadline;
                r.runtimeNs = attr.runtime;
                r.periodNs = attr.period;
                return r;
            }
            else
            {
                add(refusal("SCHED_DEADLINE", error));
            }
        }
        if (!automatic)
        {
            return r;
        }
    }
    SchedAttr attr;
    attr.policy = SCHED_FIFO;
    attr.flags = resetOnFork;
    attr.priority = config.fifoPriority;
    if (const int error = setAttr(attr); error == 0)
    {
        r.policy = TickScheduling::fifo;
        r.priority = config.fifoPriority;
        return r;
    }
    else
    {
        add(refusal("SCHED_FIFO", error));
    }
    return r;
}

std::string describe(const TickReservation& r)
{
    switch (r.policy)
    {
        case TickScheduling::deadline:
            return "SCHED_DEADLINE (runtime " +
                   std::to_string(r.runtimeNs / 1000) + " us every " +
                   std::to_string(r.periodNs / 1000) + " us)";
        case TickScheduling::fifo:
            return "SCHED_FIFO priority " + std::to_string(r.priority);
        case TickScheduling::automatic:
        case TickScheduling::other:
            break;
    }
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, 0);
    return "SCHED_OTHER (nice " +
           (errno == 0 ? std::to_string(nice) : std::string("unknown")) + ")";
}

std::uint64_t threadCpuNs() noexcept
{
    timespec ts{};
    (void)::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000U +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

} // namespace cppcgov::daemon
