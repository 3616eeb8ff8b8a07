// SPDX-License-Identifier: Apache-2.0
#include "firmware_watch.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

using cppc::SanityCheck;

// Shares of a stretch the CPU must have been busy (see the header).
constexpr double busyShare = 0.5;
constexpr double rateBusyShare = 0.9;
// Busy counter readings summed to at least this long make one rate
// reading, and this many of them come before the counter's rate is judged.
constexpr std::uint64_t rateWindowUs = 100'000;
constexpr std::uint32_t minRateReadings = 3;

std::size_t index(SanityCheck check) noexcept
{
    return static_cast<std::size_t>(check);
}

// The order findings are shown in: what makes every figure wrong first.
constexpr std::array<SanityCheck, cppc::sanityCheckCount> shownOrder = {
    SanityCheck::referencePerf,
    SanityCheck::counterRate,
    SanityCheck::countersStuck,
    SanityCheck::follow,
};

} // namespace

FirmwareWatch::FirmwareWatch(const policies::Topology& topology,
                             const SanityConfig& config,
                             bool readsPerfLimited) :
    topology_(topology),
    config_(config), readsPerfLimited_(readsPerfLimited),
    cpus_(topology.cpus.size()), domainOf_(topology.cpus.size(), 0),
    shown_(topology.domains.size())
{
    for (std::size_t d = 0; d < topology.domains.size(); ++d)
    {
        for (const std::uint32_t cpu : topology.domains[d].cpus)
        {
            if (cpu < domainOf_.size())
            {
                domainOf_[cpu] = d;
            }
        }
    }
}

void FirmwareWatch::configure(const SanityConfig& config)
{
    config_ = config;
    for (CpuState& s : cpus_)
    {
        s.runRequest = 0;
    }
}

bool FirmwareWatch::active(std::size_t domain, SanityCheck check) const noexcept
{
    const std::vector<std::uint32_t>& members = topology_.domains[domain].cpus;
    return std::any_of(members.begin(), members.end(),
                       [this, check](std::uint32_t cpu) {
        return cpu < cpus_.size() && cpus_[cpu].findings[index(check)];
    });
}

void FirmwareWatch::observe(std::uint64_t nowUs, std::uint32_t cpu,
                            const CpuSample& sample, std::uint32_t requested,
                            bool platformSelects)
{
    if (cpu >= cpus_.size())
    {
        return;
    }
    CpuState& s = cpus_[cpu];
    const std::uint64_t dtUs =
        s.lastUs && nowUs > *s.lastUs ? nowUs - *s.lastUs : 0;
    s.lastUs = nowUs;
    if (dtUs == 0)
    {
        return;
    }
    s.sinceElapsedUs += dtUs;
    // Not clamped per tick: procfs counts busy time in 10 ms steps, which
    // land whole in one tick of a shorter period.
    s.sinceBusyUs += sample.busyUs;
    counters(s, cpu, sample);
    follow(s, cpu, sample, requested, platformSelects, dtUs);
}

void FirmwareWatch::follow(CpuState& s, std::uint32_t cpu,
                           const CpuSample& sample, std::uint32_t requested,
                           bool platformSelects, std::uint64_t dtUs)
{
    if (platformSelects || requested == 0)
    {
        s.runRequest = 0;
        set(cpu, SanityCheck::follow, std::nullopt);
        return;
    }
    const double drift =
        std::abs(static_cast<double>(requested) - s.runRequest);
    if (s.runRequest == 0 || drift > config_.tolerance * s.runRequest)
    {
        s.runRequest = requested;
        s.runElapsedUs = 0;
        s.runBusyUs = 0;
        s.deliveredSum = 0;
        s.deliveredUs = 0;
        s.limited = false;
    }
    s.runElapsedUs += dtUs;
    s.runBusyUs += sample.busyUs;
    if (sample.deliveredPerf != 0)
    {
        s.deliveredSum += static_cast<double>(sample.deliveredPerf) *
                          static_cast<double>(dtUs);
        s.deliveredUs += dtUs;
    }
    s.limited = s.limited ||
                (sample.perfLimited & (desiredExcursion | minimumExcursion));
    const std::uint64_t windowUs =
        std::uint64_t{config_.followWindowS} * 1'000'000;
    if (s.runElapsedUs < windowUs)
    {
        return;
    }
    const auto elapsed = static_cast<double>(s.runElapsedUs);
    if (static_cast<double>(s.runBusyUs) >= busyShare * elapsed &&
        static_cast<double>(s.deliveredUs) >= busyShare * elapsed)
    {
        const cppc::FollowWindow w{
            s.runRequest,
            s.deliveredSum / static_cast<double>(s.deliveredUs),
            s.runElapsedUs,
            s.limited,
            readsPerfLimited_,
            s.runRequest < topology_.cpus[cpu].lowest,
        };
        set(cpu, SanityCheck::follow, cppc::checkFollow(w, config_.tolerance));
    }
    // The next stretch, with the same request.
    s.runRequest = 0;
}

void FirmwareWatch::counters(CpuState& s, std::uint32_t cpu,
                             const CpuSample& sample)
{
    const CpuSample::Counters& c = sample.counters;
    if (c.window == 0 || c.window == s.window)
    {
        return;
    }
    s.window = c.window;
    const double busy = s.sinceElapsedUs == 0
                            ? 0.0
                            : static_cast<double>(s.sinceBusyUs) /
                                  static_cast<double>(s.sinceElapsedUs);
    s.sinceElapsedUs = 0;
    s.sinceBusyUs = 0;

    if (c.referencePerf != 0 && c.referencePerf != s.referencePerf)
    {
        s.referencePerf = c.referencePerf;
        s.fastestHz = 0;
        s.rateReadings = 0;
        s.rateDelta = 0;
        s.rateElapsedUs = 0;
        const policies::CpuCaps& caps = topology_.cpus[cpu];
        set(cpu, SanityCheck::referencePerf,
            cppc::checkReferencePerf(
                {caps.highest, caps.nominal, caps.lowest, c.referencePerf,
                 caps.lowestKhz, caps.nominalKhz}));
    }

    if (busy >= busyShare)
    {
        s.referenceStuck = c.referenceDelta == 0 ? s.referenceStuck + 1 : 0;
        s.deliveredStuck = c.deliveredDelta == 0 ? s.deliveredStuck + 1 : 0;
        std::optional<std::string> stuck = cppc::checkCountersStuck(
            "reference", s.referenceStuck, config_.stuckReadings);
        if (!stuck)
        {
            stuck = cppc::checkCountersStuck("delivered", s.deliveredStuck,
                                             config_.stuckReadings);
        }
        set(cpu, SanityCheck::countersStuck, std::move(stuck));
    }

    if (busy < rateBusyShare || s.referencePerf == 0)
    {
        // The busy stretch ended: a window spans busy readings only.
        s.rateDelta = 0;
        s.rateElapsedUs = 0;
        return;
    }
    // A reading that did not move is summed too: a counter that counts in
    // lumps has them between its lumps (a stuck one is countersStuck's).
    s.rateDelta += c.referenceDelta;
    s.rateElapsedUs += c.elapsedUs;
    if (s.rateElapsedUs < rateWindowUs)
    {
        return;
    }
    const std::uint64_t delta = std::exchange(s.rateDelta, 0);
    const std::uint64_t elapsedUs = std::exchange(s.rateElapsedUs, 0);
    if (delta != 0)
    {
        const double hz =
            static_cast<double>(delta) * 1e6 / static_cast<double>(elapsedUs);
        s.fastestHz = std::max(s.fastestHz, hz);
        if (++s.rateReadings >= minRateReadings)
        {
            const policies::CpuCaps& caps = topology_.cpus[cpu];
            set(cpu, SanityCheck::counterRate,
                cppc::checkCounterRate(
                    {caps.highest, caps.nominal, caps.lowest, s.referencePerf,
                     caps.lowestKhz, caps.nominalKhz},
                    s.fastestHz, config_.tolerance));
        }
    }
}

void FirmwareWatch::set(std::uint32_t cpu, SanityCheck check,
                        std::optional<std::string> reason)
{
    std::optional<std::string>& slot = cpus_[cpu].findings[index(check)];
    // A finding keeps the reason it was found with while it lasts: the
    // figures of later windows differ a little each time, and each change
    // would be an event and a log line.
    if (slot == reason || (slot && reason))
    {
        return;
    }
    slot = std::move(reason);
    reshow(domainOf_[cpu]);
}

void FirmwareWatch::reshow(std::size_t domain)
{
    const std::vector<std::uint32_t>& members = topology_.domains[domain].cpus;
    std::string shown;
    for (const SanityCheck check : shownOrder)
    {
        for (const std::uint32_t cpu : members)
        {
            const std::optional<std::string>& f =
                cpus_[cpu].findings[index(check)];
            if (!f)
            {
                continue;
            }
            shown = "firmware: " + *f;
            if (members.size() > 1)
            {
                shown += " (CPU " + std::to_string(cpu) + ")";
            }
            break;
        }
        if (!shown.empty())
        {
            break;
        }
    }
    if (shown != shown_[domain])
    {
        shown_[domain] = std::move(shown);
        ++changes_;
    }
}

} // namespace cppcgov::daemon
