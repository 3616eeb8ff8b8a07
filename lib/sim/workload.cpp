// SPDX-License-Identifier: Apache-2.0
#include "workload.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace cppc::sim
{
namespace
{

constexpr std::uint64_t nsPerUs = 1000;
constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

std::uint64_t exponential(std::mt19937_64& rng, std::uint64_t meanUs)
{
    std::exponential_distribution<double> d(1.0 / static_cast<double>(meanUs));
    return std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(d(rng) * static_cast<double>(nsPerUs)));
}

} // namespace

Workload::Workload(const std::vector<WorkloadCpu>& cpus,
                   std::vector<TaskSpec> tasks, EnergyModel energy) :
    tasks_(std::move(tasks)),
    energy_(energy)
{
    if (cpus.empty())
    {
        throw std::invalid_argument("a workload needs at least one CPU");
    }
    for (const WorkloadCpu& c : cpus)
    {
        if (c.highest == 0 || c.nominal == 0 || c.lowest == 0 ||
            c.referencePerf == 0)
        {
            throw std::invalid_argument(
                "a simulated CPU needs non-zero performance levels");
        }
        cpus_.push_back(
            {c,
             c.nominal,
             std::nullopt,
             0,
             {},
             0,
             0,
             0,
             0,
             std::vector<bool>(tasks_.size(), false),
             std::nullopt});
    }
    for (const TaskSpec& t : tasks_)
    {
        if (t.cpu && *t.cpu >= cpus_.size())
        {
            throw std::invalid_argument(
                "task '" + t.name + "' is pinned to a missing CPU");
        }
        if (t.kind != TaskSpec::Kind::busy &&
            (t.periodUs == 0 || t.workUs == 0))
        {
            throw std::invalid_argument(
                "task '" + t.name + "' needs work and a period");
        }
        taskState_.push_back(
            {t.startUs * nsPerUs, std::mt19937_64(t.seed), 0, std::nullopt});
    }
}

void Workload::requestPerf(unsigned cpu, std::uint32_t perf)
{
    Cpu& c = cpus_.at(cpu);
    c.pendingPerf = std::clamp(perf, c.spec.lowest, c.spec.highest);
    c.pendingAtNs = nowNs_ + std::uint64_t{c.spec.transitionUs} * nsPerUs;
    ++score_.perfWrites;
}

void Workload::setObserver(std::function<void(const SchedEvent&)> observer)
{
    observer_ = std::move(observer);
}

Workload::Job* Workload::running(Cpu& c)
{
    return const_cast<Job*>(running(static_cast<const Cpu&>(c)));
}

const Workload::Job* Workload::running(const Cpu& c)
{
    const Job* endless = nullptr;
    for (const Job& j : c.queue)
    {
        if (j.remaining != never)
        {
            return &j;
        }
        endless = endless == nullptr ? &j : endless;
    }
    return endless;
}

bool Workload::queuedOn(const Cpu& c, std::size_t task) const
{
    return std::any_of(c.queue.begin(), c.queue.end(),
                       [task](const Job& j) { return j.task == task; });
}

bool Workload::runnable(std::size_t task) const
{
    const std::optional<unsigned> cpu = taskState_.at(task).cpu;
    return cpu && queuedOn(cpus_[*cpu], task);
}

void Workload::emit(SchedEvent::Kind kind, unsigned cpu,
                    std::optional<std::size_t> task)
{
    if (observer_)
    {
        observer_({kind, nowNs_, cpu, task});
    }
}

unsigned Workload::place(const TaskSpec& spec) const
{
    if (spec.cpu)
    {
        return *spec.cpu;
    }
    unsigned best = 0;
    std::uint64_t bestWork = never;
    for (unsigned i = 0; i < cpus_.size(); ++i)
    {
        std::uint64_t queued = 0;
        for (const Job& j : cpus_[i].queue)
        {
            queued =
                j.remaining > never - queued ? never : queued + j.remaining;
        }
        if (queued < bestWork)
        {
            best = i;
            bestWork = queued;
        }
    }
    return best;
}

void Workload::release(std::size_t task)
{
    const TaskSpec& spec = tasks_[task];
    TaskState& st = taskState_[task];
    Cpu& c = cpus_[place(spec)];
    const std::uint32_t nominal = c.spec.nominal;
    Job job{task, 0, st.nextReleaseNs, 0, false};
    switch (spec.kind)
    {
        case TaskSpec::Kind::periodic:
            job.remaining = spec.workUs * nsPerUs * nominal;
            job.deadlineNs = st.nextReleaseNs + spec.periodUs * nsPerUs;
            job.hasDeadline = true;
            st.nextReleaseNs += spec.periodUs * nsPerUs;
            break;
        case TaskSpec::Kind::bursty:
        {
            job.remaining = exponential(st.rng, spec.workUs) * nominal;
            const std::uint64_t gap = exponential(st.rng, spec.periodUs);
            job.deadlineNs = st.nextReleaseNs + spec.periodUs * nsPerUs;
            job.hasDeadline = true;
            st.nextReleaseNs += gap;
            break;
        }
        case TaskSpec::Kind::busy:
            job.remaining = never;
            st.nextReleaseNs = never;
            break;
    }
    c.ranTask[task] = true;
    const bool wasQueued = queuedOn(c, task);
    const auto cpu = static_cast<unsigned>(&c - cpus_.data());
    st.cpu = cpu;
    c.queue.push_back(job);
    if (!wasQueued)
    {
        emit(SchedEvent::Kind::enqueue, cpu, task);
    }
}

std::uint64_t Workload::nextEventNs(std::uint64_t limitNs) const
{
    std::uint64_t next = limitNs;
    for (const TaskState& t : taskState_)
    {
        next = std::min(next, t.nextReleaseNs);
    }
    for (const Cpu& c : cpus_)
    {
        if (c.pendingPerf)
        {
            next = std::min(next, c.pendingAtNs);
        }
        const Job* j = running(c);
        if (j != nullptr && j->remaining != never)
        {
            const std::uint64_t need = (j->remaining + c.perf - 1) / c.perf;
            next = std::min(next, nowNs_ + need);
        }
    }
    return std::max(next, nowNs_);
}

double Workload::power(const Cpu& c) const
{
    const double ratio =
        static_cast<double>(c.perf) / static_cast<double>(c.spec.highest);
    return energy_.staticWatts +
           energy_.dynamicWatts * std::pow(ratio, energy_.exponent);
}

void Workload::run(std::uint64_t untilNs)
{
    const std::uint64_t dt = untilNs - nowNs_;
    for (Cpu& c : cpus_)
    {
        Job* const j = running(c);
        if (j == nullptr || dt == 0)
        {
            continue;
        }
        c.ranTask[j->task] = true;
        taskState_[j->task].runNs += dt;
        if (j->remaining != never)
        {
            j->remaining -= std::min(j->remaining, std::uint64_t{c.perf} * dt);
        }
        c.busyNs += dt;
        c.reference += std::uint64_t{c.spec.referencePerf} * dt;
        c.delivered += std::uint64_t{c.perf} * dt;
        score_.energyJoules += power(c) * static_cast<double>(dt) * 1e-9;
    }
    nowNs_ = untilNs;
    for (unsigned cpu = 0; cpu < cpus_.size(); ++cpu)
    {
        Cpu& c = cpus_[cpu];
        if (c.pendingPerf && c.pendingAtNs <= nowNs_)
        {
            c.perf = *c.pendingPerf;
            c.pendingPerf.reset();
            emit(SchedEvent::Kind::perfChange, cpu, std::nullopt);
        }
    }
    for (unsigned cpu = 0; cpu < cpus_.size(); ++cpu)
    {
        Cpu& c = cpus_[cpu];
        // Only the running job can have finished.
        Job* const j = running(c);
        if (j == nullptr || j->remaining != 0)
        {
            continue;
        }
        ++score_.jobs;
        if (j->hasDeadline)
        {
            score_.misses += nowNs_ > j->deadlineNs ? 1 : 0;
            score_.responseUs.push_back(
                static_cast<std::uint32_t>((nowNs_ - j->releaseNs) / nsPerUs));
        }
        const std::size_t task = j->task;
        c.queue.erase(c.queue.begin() + (j - c.queue.data()));
        if (!queuedOn(c, task))
        {
            emit(SchedEvent::Kind::dequeue, cpu, task);
        }
    }
    for (std::size_t t = 0; t < taskState_.size(); ++t)
    {
        while (taskState_[t].nextReleaseNs <= nowNs_)
        {
            release(t);
        }
    }
    for (unsigned cpu = 0; cpu < cpus_.size(); ++cpu)
    {
        Cpu& c = cpus_[cpu];
        const Job* const j = running(c);
        const std::optional<std::size_t> now =
            j == nullptr ? std::nullopt : std::optional<std::size_t>(j->task);
        if (now != c.current)
        {
            c.current = now;
            emit(SchedEvent::Kind::switchTo, cpu, now);
        }
    }
}

void Workload::advanceTo(std::uint64_t timeUs)
{
    const std::uint64_t target = timeUs * nsPerUs;
    if (target < nowNs_)
    {
        throw std::invalid_argument("virtual time cannot go backwards");
    }
    // Releases due exactly now happen before anything runs.
    run(nowNs_);
    while (nowNs_ < target)
    {
        run(nextEventNs(target));
    }
}

CpuWindow Workload::takeWindow(unsigned cpu)
{
    Cpu& c = cpus_.at(cpu);
    CpuWindow w;
    w.lengthNs = nowNs_ - c.windowStartNs;
    w.busyNs = c.busyNs;
    w.referenceCounter = c.reference;
    w.deliveredCounter = c.delivered;
    for (std::size_t t = 0; t < c.ranTask.size(); ++t)
    {
        if (c.ranTask[t])
        {
            w.tasks.push_back(t);
        }
    }
    // A task still queued here stays active in the next window.
    std::fill(c.ranTask.begin(), c.ranTask.end(), false);
    for (const Job& j : c.queue)
    {
        c.ranTask[j.task] = true;
    }
    c.windowStartNs = nowNs_;
    c.busyNs = 0;
    return w;
}

Score Workload::score() const
{
    Score s = score_;
    for (const Cpu& c : cpus_)
    {
        for (const Job& j : c.queue)
        {
            if (j.hasDeadline && nowNs_ > j.deadlineNs)
            {
                ++s.jobs;
                ++s.misses;
            }
        }
    }
    return s;
}

} // namespace cppc::sim
