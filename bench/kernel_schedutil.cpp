// SPDX-License-Identifier: Apache-2.0
#include "bench/kernel_schedutil.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cppc::bench
{
namespace
{

constexpr std::uint64_t nsPerUs = 1000;
constexpr double capacity = 1024.0;
// util_est leaves an estimate alone within 1 % of the capacity.
constexpr double utilEstMargin = capacity / 100.0;

} // namespace

KernelSchedutil::KernelSchedutil(
    sim::Workload& workload, std::vector<cppcgov::policies::CpuCaps> caps,
    std::vector<std::optional<cppcgov::policies::Clamp>> clamps,
    KernelSchedutilConfig config) :
    workload_(workload),
    config_(config)
{
    if (caps.size() != workload_.cpuCount() ||
        clamps.size() != workload_.tasks().size() || config_.tickHz == 0)
    {
        throw std::invalid_argument(
            "the schedutil model needs each CPU's levels and each task's "
            "clamp, and a tick rate");
    }
    for (std::size_t t = 0; t < clamps.size(); ++t)
    {
        if (!workload_.tasks()[t].cpu)
        {
            throw std::invalid_argument(
                "the schedutil model needs task '" + workload_.tasks()[t].name +
                "' pinned to a CPU");
        }
        TaskModel m;
        m.clamp = clamps[t].value_or(cppcgov::policies::Clamp{});
        tasks_.push_back(m);
    }
    for (unsigned cpu = 0; cpu < caps.size(); ++cpu)
    {
        CpuModel c;
        c.caps = caps[cpu];
        c.perf = workload_.perf(cpu);
        c.next = c.caps.nominal;
        cpus_.push_back(std::move(c));
    }
    nextTickNs_ = config_.tickPhaseUs * nsPerUs;
    workload_.setObserver([this](const sim::SchedEvent& e) { onEvent(e); });
}

KernelSchedutil::~KernelSchedutil()
{
    workload_.setObserver(nullptr);
}

void KernelSchedutil::advanceTo(std::uint64_t timeUs)
{
    const std::uint64_t tickUs = 1'000'000 / config_.tickHz;
    while (nextTickNs_ <= timeUs * nsPerUs)
    {
        workload_.advanceTo(nextTickNs_ / nsPerUs);
        tick();
        nextTickNs_ += tickUs * nsPerUs;
    }
    workload_.advanceTo(timeUs);
}

void KernelSchedutil::advanceClock(CpuModel& c, std::uint64_t nowNs) const
{
    const std::uint64_t dt = nowNs - c.lastNs;
    c.lastNs = nowNs;
    if (c.current)
    {
        // Frequency invariance: a busy CPU's PELT time runs at
        // delivered / highest (cppc_cpufreq's scale).
        c.clockPeltNs += static_cast<double>(dt) * c.perf / c.caps.highest;
    }
    else
    {
        // An idle runqueue's clock_pelt is synchronised with its clock.
        c.clockPeltNs = static_cast<double>(nowNs);
    }
}

bool KernelSchedutil::updateLoad(CpuModel& c)
{
    const auto clock = static_cast<std::uint64_t>(c.clockPeltNs);
    const bool decayed = c.pelt.update(clock, c.current.has_value());
    for (const std::size_t t : c.runnable)
    {
        tasks_[t].pelt.update(clock, c.current == t);
    }
    if (c.current && std::find(c.runnable.begin(), c.runnable.end(),
                               *c.current) == c.runnable.end())
    {
        // Dequeued this instant: it ran up to now.
        tasks_[*c.current].pelt.update(clock, true);
    }
    return decayed;
}

cppcgov::policies::Clamp KernelSchedutil::rqClamp(const CpuModel& c) const
{
    if (c.runnable.empty())
    {
        return c.idleClamp;
    }
    cppcgov::policies::Clamp out{0, 0};
    for (const std::size_t t : c.runnable)
    {
        out.min = std::max(out.min, tasks_[t].clamp.min);
        out.max = std::max(out.max, tasks_[t].clamp.max);
    }
    return out;
}

double KernelSchedutil::estimate(const TaskModel& t) const
{
    return config_.utilEst ? std::max(t.utilEstEwma, t.utilEstEnqueued) : 0.0;
}

void KernelSchedutil::onEvent(const sim::SchedEvent& e)
{
    CpuModel& c = cpus_.at(e.cpu);
    advanceClock(c, e.timeNs);
    switch (e.kind)
    {
        case sim::SchedEvent::Kind::perfChange:
            c.perf = workload_.perf(e.cpu);
            break;
        case sim::SchedEvent::Kind::enqueue:
        {
            // uclamp and util_est take the task before the load update
            // that may call the hook.
            TaskModel& t = tasks_[*e.task];
            c.runnable.push_back(*e.task);
            t.pelt.update(static_cast<std::uint64_t>(c.clockPeltNs), false);
            t.enqueuedEstimate = estimate(t);
            c.utilEstSum += t.enqueuedEstimate;
            if (updateLoad(c))
            {
                hook(e.cpu, e.timeNs);
            }
            break;
        }
        case sim::SchedEvent::Kind::dequeue:
        {
            TaskModel& t = tasks_[*e.task];
            std::erase(c.runnable, *e.task);
            if (c.runnable.empty())
            {
                c.idleClamp = {0, t.clamp.max};
            }
            c.utilEstSum = std::max(0.0, c.utilEstSum - t.enqueuedEstimate);
            if (updateLoad(c))
            {
                hook(e.cpu, e.timeNs);
            }
            // The estimate kept at the sleep.
            const double last = t.pelt.util();
            t.utilEstEnqueued = last;
            if (t.utilEstEwma < last)
            {
                t.utilEstEwma = last;
            }
            else if (t.utilEstEwma - last >= utilEstMargin)
            {
                t.utilEstEwma += (last - t.utilEstEwma) / 4.0;
            }
            break;
        }
        case sim::SchedEvent::Kind::switchTo:
        {
            const std::optional<std::size_t> prev = c.current;
            if (prev &&
                std::find(c.runnable.begin(), c.runnable.end(), *prev) !=
                    c.runnable.end() &&
                updateLoad(c))
            {
                hook(e.cpu, e.timeNs);
            }
            c.current = e.task;
            c.idleSinceHook = c.idleSinceHook || !e.task;
            break;
        }
    }
}

void KernelSchedutil::tick()
{
    for (unsigned cpu = 0; cpu < cpus_.size(); ++cpu)
    {
        CpuModel& c = cpus_[cpu];
        if (!c.current)
        {
            continue; // an idle CPU has no tick
        }
        advanceClock(c, nextTickNs_);
        if (updateLoad(c))
        {
            hook(cpu, nextTickNs_);
        }
    }
}

void KernelSchedutil::hook(unsigned cpu, std::uint64_t nowNs)
{
    CpuModel& c = cpus_[cpu];
    if (c.changed &&
        nowNs - c.lastChangeNs < std::uint64_t{config_.rateLimitUs} * nsPerUs)
    {
        return;
    }
    double util = c.pelt.util();
    if (config_.utilEst)
    {
        util = std::max(util, c.utilEstSum);
    }
    util = std::min(util, capacity);
    const cppcgov::policies::Clamp clamp = rqClamp(c);
    const double lo = clamp.min;
    const double hi = clamp.max;
    const double clamped = lo >= hi ? lo : std::clamp(util, lo, hi);
    const auto raw =
        static_cast<std::uint32_t>(1.25 * clamped * c.caps.nominal / capacity);
    std::uint32_t next =
        std::clamp(raw, c.caps.lowestNonlinear, c.caps.nominal);
    // Not lowered while the CPU has been busy since the last hook, unless
    // uclamp caps it. As in 6.1, whether it was idle is asked (and the
    // question starts over) only when the runqueue is not capped.
    const bool capped = clamp.max < capacity && util >= clamp.max;
    if (!capped)
    {
        const bool busy = !c.idleSinceHook;
        c.idleSinceHook = false;
        if (c.changed && busy && next < c.next)
        {
            next = c.next;
        }
    }
    if (c.changed && next == c.next)
    {
        return;
    }
    c.next = next;
    c.changed = true;
    c.lastChangeNs = nowNs;
    workload_.requestPerf(cpu, next);
}

} // namespace cppc::bench
