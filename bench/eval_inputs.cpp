// SPDX-License-Identifier: Apache-2.0
#include "bench/eval_inputs.hpp"

#include <algorithm>

namespace cppc::bench
{
namespace
{

namespace pol = cppcgov::policies;
namespace dmn = cppcgov::daemon;

constexpr std::uint64_t stepNs = 10'000'000; // USER_HZ
constexpr std::uint64_t stepUs = stepNs / 1000;
constexpr std::uint64_t scale = pol::utilScale;

std::uint64_t handleOf(std::size_t task)
{
    return task + 1;
}

} // namespace

WindowLoad::WindowLoad(const sim::Workload& workload) :
    reference_(workload.cpuCount(), 0), deliveredCount_(workload.cpuCount(), 0)
{}

sim::CpuWindow WindowLoad::take(sim::Workload& workload, unsigned cpu,
                                std::uint32_t& delivered)
{
    sim::CpuWindow w = workload.takeWindow(cpu);
    const std::uint64_t dRef = w.referenceCounter - reference_[cpu];
    const std::uint64_t dDel = w.deliveredCounter - deliveredCount_[cpu];
    reference_[cpu] = w.referenceCounter;
    deliveredCount_[cpu] = w.deliveredCounter;
    delivered = dRef == 0 ? workload.perf(cpu)
                          : static_cast<std::uint32_t>(
                                workload.cpu(cpu).referencePerf * dDel / dRef);
    return w;
}

std::uint16_t utilOf(std::uint64_t busyFraction, std::uint32_t delivered,
                     std::uint32_t highest) noexcept
{
    const std::uint64_t util =
        busyFraction * delivered / std::max<std::uint32_t>(highest, 1);
    return static_cast<std::uint16_t>(std::min(util, scale));
}

ExactInput::ExactInput(const sim::Workload& workload, TaskHints hints) :
    hints_(std::move(hints)), load_(workload), seen_(workload.cpuCount())
{}

void ExactInput::take(sim::Workload& workload,
                      std::vector<dmn::CpuSample>& samples,
                      std::vector<dmn::ExactCpu>& exact)
{
    const auto cpus = static_cast<unsigned>(workload.cpuCount());
    samples.assign(cpus, {});
    exact.assign(cpus, {});
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
    {
        std::uint32_t delivered = 0;
        const sim::CpuWindow w = load_.take(workload, cpu, delivered);
        const std::uint64_t busy =
            w.lengthNs == 0 ? 0 : w.busyNs * scale / w.lengthNs;
        samples[cpu] = {utilOf(busy, delivered, workload.cpu(cpu).highest),
                        delivered, w.busyNs / 1000};
        std::vector<pol::TaskClamp> clamps;
        seen_[cpu].clear();
        for (const std::size_t task : w.tasks)
        {
            const std::optional<pol::Clamp>& hint = hints_.at(task);
            clamps.push_back({hint.has_value(), hint.value_or(pol::Clamp{})});
            if (hint)
            {
                seen_[cpu].push_back({handleOf(task), 0, cpu, *hint, 0});
            }
        }
        exact[cpu] = {pol::aggregate(clamps), seen_[cpu]};
    }
}

ProcfsInput::ProcfsInput(const sim::Workload& workload, TaskHints hints) :
    hints_(std::move(hints)), load_(workload), cpus_(workload.cpuCount()),
    taskSteps_(workload.tasks().size())
{}

void ProcfsInput::take(sim::Workload& workload, std::uint64_t nowUs,
                       std::vector<dmn::CpuSample>& samples,
                       std::vector<dmn::HintSighting>& sightings)
{
    const auto cpus = static_cast<unsigned>(workload.cpuCount());
    samples.assign(cpus, {});
    const std::uint64_t total = nowUs * 1000 / stepNs;
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
    {
        std::uint32_t delivered = 0;
        Counters& c = cpus_[cpu];
        c.busyNs += load_.take(workload, cpu, delivered).busyNs;
        const std::uint64_t busy = c.busyNs / stepNs;
        dmn::CpuSample& s = samples[cpu];
        s.deliveredPerf = delivered;
        // As ProcStatSampler: the first read starts the window; counters
        // that did not move repeat the last fraction.
        if (!started_ || total == c.startTotal)
        {
            if (!started_)
            {
                c.startBusy = busy;
                c.startTotal = total;
            }
            s.util = utilOf(started_ ? c.last : 0, delivered,
                            workload.cpu(cpu).highest);
            continue;
        }
        const std::uint64_t dTotal = total - c.startTotal;
        const std::uint64_t dBusy = std::min(busy - c.startBusy, dTotal);
        c.last = static_cast<std::uint16_t>(dBusy * scale / dTotal);
        s.util = utilOf(c.last, delivered, workload.cpu(cpu).highest);
        s.busyUs = dBusy * stepUs;
        c.startBusy = busy;
        c.startTotal = total;
    }
    started_ = true;

    sightings.clear();
    for (std::size_t task = 0; task < hints_.size(); ++task)
    {
        if (!hints_[task] || !workload.taskCpu(task))
        {
            continue; // unhinted, or not started yet
        }
        const std::uint64_t steps = workload.taskRunNs(task) / stepNs;
        const std::optional<std::uint64_t> before = taskSteps_[task];
        taskSteps_[task] = steps;
        const bool grew = before && steps > *before;
        if (workload.runnable(task) || grew)
        {
            sightings.push_back(
                {handleOf(task), static_cast<pid_t>(task + 1000),
                 *workload.taskCpu(task), *hints_[task],
                 grew ? (steps - *before) * stepUs : 0});
        }
    }
}

} // namespace cppc::bench
