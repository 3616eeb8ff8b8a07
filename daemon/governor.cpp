// SPDX-License-Identifier: Apache-2.0
#include "governor.hpp"

#include "lib/cpu_list.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace cppcgov::daemon
{

std::vector<std::string> policyRefusals(const GovernorConfig& config,
                                        const Machine& machine)
{
    std::vector<std::string> out;
    if (machine.controls().has(Control::autonomous))
    {
        return out;
    }
    const policies::Topology& topology = machine.topology();
    for (std::size_t d = 0; d < topology.domains.size(); ++d)
    {
        const policies::Domain& domain = topology.domains[d];
        const std::uint32_t first = domain.cpus.front();
        const std::optional<std::uint32_t> psd = machine.psdDomain(first);
        if (settingsFor(config, first, psd).kind !=
            policies::PolicyKind::autonomous)
        {
            continue;
        }
        cppc::CpuSet cpus;
        for (const std::uint32_t cpu : domain.cpus)
        {
            if (cpu < cppc::maxCpus)
            {
                cpus.set(cpu);
            }
        }
        out.push_back(
            "domain " + std::to_string(d) + " (CPUs " +
            cppc::formatCpuList(cpus) +
            (psd ? ", _PSD domain " + std::to_string(*psd) : std::string()) +
            "): policy autonomous needs CPPC autonomous selection, which "
            "backend '" +
            machine.name() + "' does not offer");
    }
    return out;
}

Governor::Governor(Machine& machine, const GovernorConfig& config) :
    machine_(machine),
    firmware_(machine.topology(), config.sanity, machine.readsPerfLimited())
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
    saturatedUs_.resize(cpus);
    usualRunUs_.resize(cpus);
    burstInput_.resize(cpus);
    clamp_.resize(cpus);
    preference_.resize(cpus, policies::EnergyPreference::none);
    window_.resize(cpus);
    otherSeenUs_.resize(cpus);
    views_.resize(cpus);
    cpuWritten_.resize(cpus);
    exactSeen_.resize(cpus);
    requests_.reserve(cpus);
    configure(config);
}

std::vector<policies::PolicyKind> policyKinds(const GovernorConfig& config,
                                              const Machine& machine)
{
    const policies::Topology& topology = machine.topology();
    std::vector<policies::PolicyKind> kinds(topology.cpus.size(),
                                            policies::PolicyKind::schedutil);
    for (const policies::Domain& domain : topology.domains)
    {
        const std::uint32_t first = domain.cpus.front();
        const policies::PolicyKind kind =
            settingsFor(config, first, machine.psdDomain(first)).kind;
        for (const std::uint32_t cpu : domain.cpus)
        {
            kinds[cpu] = kind;
        }
    }
    return kinds;
}

std::vector<std::uint32_t> domainIndices(const policies::Topology& topology)
{
    std::vector<std::uint32_t> out(topology.cpus.size(), 0);
    for (std::size_t d = 0; d < topology.domains.size(); ++d)
    {
        for (const std::uint32_t cpu : topology.domains[d].cpus)
        {
            out[cpu] = static_cast<std::uint32_t>(d);
        }
    }
    return out;
}

void Governor::configure(const GovernorConfig& config)
{
    if (const std::vector<std::string> refused =
            policyRefusals(config, machine_);
        !refused.empty())
    {
        std::string message;
        for (const std::string& r : refused)
        {
            message += (message.empty() ? "" : "\n") + r;
        }
        throw std::invalid_argument(message);
    }
    for (const Group& g : groups_)
    {
        for (std::size_t i = 0; i < g.domains.size(); ++i)
        {
            domainState_[g.domains[i]] = g.state[i];
        }
    }
    groups_.clear();
    firmware_.configure(config.sanity);

    const policies::Topology& topology = machine_.topology();
    kinds_ = policyKinds(config, machine_);
    domainOf_ = domainIndices(topology);
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

void Governor::setEnergyPreferences(
    std::span<const policies::EnergyPreference> perCpu)
{
    for (std::size_t cpu = 0; cpu < preference_.size(); ++cpu)
    {
        preference_[cpu] = cpu < perCpu.size()
                               ? perCpu[cpu]
                               : policies::EnergyPreference::none;
    }
}

namespace
{

constexpr std::uint64_t bucketUs = ceilingWindowUs / ceilingBuckets;
// A sample busy for this share of its span, in percent, is one without a
// break (a few percent go to the tick's own wake-up and the scheduler's
// accounting).
constexpr std::uint64_t saturatedPercent = 95;
// How fast a CPU forgets how long its runs were (usualRunUs_).
constexpr double usualRunHalfLifeUs = 250000;
// How much longer than the usual run a run must last to count (then for
// burst_us more) as a burst.
constexpr double usualRunMargin = 1.25;

void addSaturated(std::uint64_t& to, std::uint64_t value) noexcept
{
    if (__builtin_add_overflow(to, value, &to))
    {
        to = std::numeric_limits<std::uint64_t>::max();
    }
}

} // namespace

std::size_t Governor::begin(std::uint64_t nowUs, TickReport& report)
{
    report.writes = 0;
    report.handlesWritten.clear();
    report.handlesActive.clear();
    const std::uint64_t dtUs = ticks_ == 0 ? 0 : nowUs - lastUs_;
    const std::size_t slot = advanceWindow(nowUs);
    lastUs_ = nowUs;
    ++ticks_;

    report.sampleError = machine_.sample(nowUs, samples_);
    const std::size_t cpus = samples_.size();
    for (std::size_t cpu = 0; cpu < cpus; ++cpu)
    {
        util_[cpu] = averages_[cpu].update(samples_[cpu].util, dtUs);
        const bool saturated =
            dtUs != 0 && samples_[cpu].busyUs * 100 >= dtUs * saturatedPercent;
        if (saturated)
        {
            saturatedUs_[cpu] = static_cast<std::uint32_t>(
                std::min<std::uint64_t>(saturatedUs_[cpu] + dtUs, UINT32_MAX));
        }
        else
        {
            usualRunUs_[cpu] = std::max(
                usualRunUs_[cpu] *
                    std::exp2(-static_cast<double>(dtUs) / usualRunHalfLifeUs),
                static_cast<double>(saturatedUs_[cpu]));
            saturatedUs_[cpu] = 0;
        }
        const double beyond =
            saturatedUs_[cpu] - usualRunUs_[cpu] * usualRunMargin;
        burstInput_[cpu] = beyond <= 0
                               ? 0
                               : static_cast<std::uint32_t>(
                                     std::min<double>(beyond, UINT32_MAX));
        clamp_[cpu] = policies::Clamp{};
        views_[cpu].handles.clear();
        cpuWritten_[cpu] = false;
    }
    return slot;
}

void Governor::tick(std::uint64_t nowUs,
                    std::span<const HintSighting> sightings, TickReport& report)
{
    const std::size_t slot = begin(nowUs, report);
    for (std::size_t cpu = 0; cpu < samples_.size(); ++cpu)
    {
        addSaturated(window_[cpu].busy[slot], samples_[cpu].busyUs);
    }

    // The uclamp aggregation over each CPU's hinted tasks, and one task
    // without a hint for the other work when there was any.
    hold(nowUs, sightings, slot);
    for (auto it = held_.begin(); it != held_.end();)
    {
        const std::uint32_t cpu = it->first.first;
        taskClamps_.clear();
        for (; it != held_.end() && it->first.first == cpu; ++it)
        {
            taskClamps_.push_back({true, it->second.sighting.clamp});
        }
        if (otherWork(cpu))
        {
            otherSeenUs_[cpu] = nowUs;
        }
        if (otherSeenUs_[cpu] && nowUs - *otherSeenUs_[cpu] <= clampHoldUs)
        {
            taskClamps_.push_back({false, {}});
        }
        clamp_[cpu] = policies::aggregate(taskClamps_);
    }
    finish(report);
}

void Governor::tickExact(std::uint64_t nowUs,
                         std::span<const ExactCpu> byHostCpu,
                         TickReport& report)
{
    begin(nowUs, report);
    const std::size_t cpus = samples_.size();
    exactSightings_.clear();
    for (std::uint32_t host = 0; host < byHostCpu.size(); ++host)
    {
        const std::optional<std::uint32_t> cpu = machine_.cpuOfHostCpu(host);
        if (!cpu || *cpu >= cpus)
        {
            continue;
        }
        // Several host CPUs on one machine CPU are its tasks together.
        const policies::Clamp& seen = byHostCpu[host].clamp;
        clamp_[*cpu] =
            exactSeen_[*cpu]
                ? policies::Clamp{std::max(clamp_[*cpu].min, seen.min),
                                  std::max(clamp_[*cpu].max, seen.max)}
                : seen;
        exactSeen_[*cpu] = true;
        exactSightings_.insert(exactSightings_.end(),
                               byHostCpu[host].hints.begin(),
                               byHostCpu[host].hints.end());
    }
    hold(nowUs, exactSightings_, std::nullopt);
    // A hint seen within the hold keeps raising its CPU's minimum.
    for (const auto& [key, held] : held_)
    {
        policies::Clamp& clamp = clamp_[key.first];
        clamp.min = std::max(clamp.min, held.sighting.clamp.min);
    }
    std::fill(exactSeen_.begin(), exactSeen_.end(), false);
    finish(report);
}

void Governor::finish(TickReport& report)
{
    for (const auto& [key, held] : held_)
    {
        views_[key.first].handles.push_back(held.sighting.handle);
        report.handlesActive.push_back(held.sighting.handle);
    }

    const policies::TickInput input{lastUs_, util_, clamp_, preference_,
                                    burstInput_};
    requests_.clear();
    for (Group& g : groups_)
    {
        policies::decide(g.settings.kind, g.settings.schedutil,
                         g.settings.autonomous, g.topology, input, g.state,
                         g.decisions);
        for (std::size_t i = 0; i < g.decisions.size(); ++i)
        {
            const policies::Decision& decision = g.decisions[i];
            for (std::uint32_t cpu : g.topology.domains[i].cpus)
            {
                CpuView& v = views_[cpu];
                v.requestedPerf = decision.desired;
                v.requestedMin = decision.min;
                v.requestedMax = decision.max;
                v.epp = decision.epp;
                v.autonomous = decision.autonomous;
                v.activityWindowUs = decision.activityWindowUs;
                v.reason = decision.reason;
                if (decision.reason == policies::Reason::burst)
                {
                    // The average follows the burst's request, so that the
                    // request does not fall back the tick the burst ends.
                    averages_[cpu].raiseTo(static_cast<std::uint16_t>(
                        std::min<double>(policies::utilScale,
                                         decision.desired * 1024.0 /
                                             g.topology.cpus[cpu].highest /
                                             g.settings.schedutil.headroom)));
                }
                if (decision.changed)
                {
                    requests_.push_back(
                        {cpu, decision.min, decision.desired, decision.max,
                         decision.epp, decision.autonomous,
                         decision.activityWindowUs});
                    cpuWritten_[cpu] = true;
                }
            }
        }
    }
    report.applyError =
        requests_.empty() ? std::error_code{} : machine_.apply(requests_);
    report.writes = requests_.size();
    machine_.endTick();

    for (std::size_t cpu = 0; cpu < samples_.size(); ++cpu)
    {
        CpuView& v = views_[cpu];
        v.util = util_[cpu];
        v.clamp = clamp_[cpu];
        v.deliveredPerf = samples_[cpu].deliveredPerf;
        const bool autonomous = policyOf(static_cast<std::uint32_t>(cpu)) ==
                                policies::PolicyKind::autonomous;
        firmware_.observe(lastUs_, static_cast<std::uint32_t>(cpu),
                          samples_[cpu], v.requestedPerf, autonomous);
        // The platform's word on this tick wins over the decision's. Under
        // autonomous selection the desired excursion bit has no meaning
        // (the ACPI spec's Performance Limited Register), and Linux shows
        // it as 0: ignored here whatever the backend read.
        const std::uint8_t limited =
            samples_[cpu].perfLimited &
            (autonomous ? minimumExcursion
                        : desiredExcursion | minimumExcursion);
        if ((limited & desiredExcursion) != 0)
        {
            ++v.desiredExcursions;
            v.reason = policies::Reason::desiredExcursion;
        }
        if ((limited & minimumExcursion) != 0)
        {
            ++v.minimumExcursions;
            v.reason = policies::Reason::minimumExcursion;
        }
        // Copied only when it changes.
        std::string_view degraded =
            machine_.degraded(static_cast<std::uint32_t>(cpu));
        if (degraded.empty())
        {
            degraded = firmware_.finding(domainOf_[cpu]);
        }
        if (v.degraded != degraded)
        {
            v.degraded = degraded;
        }
    }
    for (const auto& [key, held] : held_)
    {
        if (cpuWritten_[key.first])
        {
            report.handlesWritten.push_back(held.sighting.handle);
        }
    }
}

std::size_t Governor::advanceWindow(std::uint64_t nowUs)
{
    const std::uint64_t bucket = nowUs / bucketUs;
    if (ticks_ != 0 && bucket > bucket_)
    {
        // Each bucket the window passes starts empty; after a whole
        // window, every bucket does.
        const std::uint64_t passed =
            std::min<std::uint64_t>(bucket - bucket_, ceilingBuckets);
        for (std::uint64_t b = bucket - passed + 1; b <= bucket; ++b)
        {
            const std::size_t slot = b % ceilingBuckets;
            for (CpuTime& t : window_)
            {
                t.busy[slot] = 0;
                t.hinted[slot] = 0;
            }
        }
    }
    // A clock that went back stays in the bucket it was in.
    if (ticks_ == 0 || bucket > bucket_)
    {
        bucket_ = bucket;
    }
    return bucket_ % ceilingBuckets;
}

void Governor::hold(std::uint64_t nowUs,
                    std::span<const HintSighting> sightings,
                    std::optional<std::size_t> slot)
{
    const std::size_t cpus = views_.size();
    for (const HintSighting& s : sightings)
    {
        const std::optional<std::uint32_t> cpu = machine_.cpuOfHostCpu(s.cpu);
        if (cpu && *cpu < cpus)
        {
            Held& held = held_[{*cpu, s.handle}];
            held.sighting = s;
            held.sighting.cpu = *cpu;
            held.lastSeenUs = nowUs;
            if (slot)
            {
                addSaturated(window_[*cpu].hinted[*slot], s.cpuTimeUs);
            }
        }
    }
    std::erase_if(held_, [nowUs](const auto& entry) {
        return nowUs - entry.second.lastSeenUs > clampHoldUs;
    });
}

bool Governor::otherWork(std::size_t cpu) const noexcept
{
    std::uint64_t busy = 0;
    std::uint64_t hinted = 0;
    for (std::size_t b = 0; b < ceilingBuckets; ++b)
    {
        addSaturated(busy, window_[cpu].busy[b]);
        addSaturated(hinted, window_[cpu].hinted[b]);
    }
    return busy > hinted && busy - hinted > ceilingToleranceUs;
}

void Governor::forget(std::uint64_t handle)
{
    std::erase_if(held_, [handle](const auto& entry) {
        return entry.first.second == handle;
    });
}

} // namespace cppcgov::daemon
