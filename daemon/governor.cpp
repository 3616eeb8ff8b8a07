#include "governor.hpp"

#include <algorithm>
#include <stdexcept>

namespace cppcgov::daemon
{

Governor::Governor(Machine& machine, const GovernorConfig& config) :
    machine_(machine)
{
    const policies::Topology& topology = machine_.topology();
    const std::size_t cpus = topology.cpus.size();
    if (cpus == 0)
    {
        throw std::invalid_argument("the machine has no CPUs to govern");
    }
    domainState_.resize(topology.domains.size());
    samples_.resize(cpus);
    averages_.resize(cpus);
    util_.resize(cpus);
    clamp_.resize(cpus);
    views_.resize(cpus);
    cpuWritten_.resize(cpus);
    requests_.reserve(cpus);
    configure(config);
}

void Governor::configure(const GovernorConfig& config)
{
    for (const Group& g : groups_)
    {
        for (std::size_t i = 0; i < g.domains.size(); ++i)
        {
            domainState_[g.domains[i]] = g.state[i];
        }
    }
    groups_.clear();

    const policies::Topology& topology = machine_.topology();
    for (std::size_t d = 0; d < topology.domains.size(); ++d)
    {
        const policies::Domain& domain = topology.domains[d];
        const std::uint32_t first = domain.cpus.front();
        const PolicySettings settings =
            settingsFor(config, first, machine_.psdDomain(first));
        auto group = std::find_if(groups_.begin(), groups_.end(),
                                  [&settings](const Group& g) {
            return g.settings == settings;
        });
        if (group == groups_.end())
        {
            group = groups_.insert(groups_.end(), Group{});
            group->settings = settings;
            group->topology.cpus = topology.cpus;
        }
        group->topology.domains.push_back(domain);
        group->domains.push_back(d);
        group->state.push_back(domainState_[d]);
        group->decisions.emplace_back();
    }
}

void Governor::tick(std::uint64_t nowUs, std::span<const ActiveClamp> active,
                    TickReport& report)
{
    report.writes = 0;
    report.handlesWritten.clear();
    report.handlesActive.clear();
    const std::uint64_t dtUs = ticks_ == 0 ? 0 : nowUs - lastUs_;
    lastUs_ = nowUs;
    ++ticks_;

    report.sampleError = machine_.sample(nowUs, samples_);
    const std::size_t cpus = samples_.size();
    for (std::size_t cpu = 0; cpu < cpus; ++cpu)
    {
        util_[cpu] = averages_[cpu].update(samples_[cpu].util, dtUs);
        clamp_[cpu] = policies::Clamp{};
        views_[cpu].handles.clear();
        cpuWritten_[cpu] = false;
    }

    // The uclamp aggregation over the hinted tasks active on each CPU.
    hold(nowUs, active);
    for (const auto& [key, held] : held_)
    {
        const ActiveClamp& a = held.clamp;
        std::vector<std::uint64_t>& handles = views_[a.cpu].handles;
        policies::Clamp& c = clamp_[a.cpu];
        if (handles.empty())
        {
            c = a.clamp;
        }
        else
        {
            c.min = std::max(c.min, a.clamp.min);
            c.max = std::max(c.max, a.clamp.max);
        }
        handles.push_back(a.handle);
        report.handlesActive.push_back(a.handle);
    }

    const policies::TickInput input{nowUs, util_, clamp_};
    requests_.clear();
    for (Group& g : groups_)
    {
        policies::decide(g.settings.kind, g.settings.schedutil, g.topology,
                         input, g.state, g.decisions);
        for (std::size_t i = 0; i < g.decisions.size(); ++i)
        {
            const policies::Decision& decision = g.decisions[i];
            for (std::uint32_t cpu : g.topology.domains[i].cpus)
            {
                views_[cpu].requestedPerf = decision.desired;
                views_[cpu].reason = decision.reason;
                if (decision.changed)
                {
                    requests_.push_back({cpu, decision.min, decision.desired,
                                         decision.max, decision.epp});
                    cpuWritten_[cpu] = true;
                }
            }
        }
    }
    report.applyError =
        requests_.empty() ? std::error_code{} : machine_.apply(requests_);
    report.writes = requests_.size();

    for (std::size_t cpu = 0; cpu < cpus; ++cpu)
    {
        CpuView& v = views_[cpu];
        v.util = util_[cpu];
        v.clamp = clamp_[cpu];
        v.deliveredPerf = samples_[cpu].deliveredPerf;
        std::sort(v.handles.begin(), v.handles.end());
    }
    for (const auto& [key, held] : held_)
    {
        if (cpuWritten_[held.clamp.cpu])
        {
            report.handlesWritten.push_back(held.clamp.handle);
        }
    }
}

void Governor::hold(std::uint64_t nowUs, std::span<const ActiveClamp> active)
{
    const std::size_t cpus = views_.size();
    for (const ActiveClamp& a : active)
    {
        if (a.cpu < cpus)
        {
            held_[{a.handle, a.cpu}] = {a, nowUs};
        }
    }
    std::erase_if(held_, [nowUs](const auto& entry) {
        return nowUs - entry.second.lastSeenUs > clampHoldUs;
    });
}

void Governor::forget(std::uint64_t handle)
{
    held_.erase(held_.lower_bound({handle, 0}),
                held_.lower_bound({handle + 1, 0}));
}

} // namespace cppcgov::daemon
