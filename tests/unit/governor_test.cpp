// SPDX-License-Identifier: Apache-2.0
#include "daemon/governor.hpp"

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

// A machine of plain values: load set by the test, requests recorded.
class FakeMachine final : public Machine
{
  public:
    FakeMachine(std::size_t cpus, std::vector<policies::Domain> domains)
    {
        std::vector<policies::CpuCaps> caps(cpus, {1000, 800, 200, 100, 0});
        topology_ = policies::makeTopology(caps, std::move(domains));
        load.resize(cpus);
        busyUs.resize(cpus);
    }

    std::string name() const override
    {
        return "fake";
    }
    const policies::Topology& topology() const override
    {
        return topology_;
    }
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override
    {
        return cpu / 2;
    }
    std::error_code sample(std::uint64_t,
                           std::span<CpuSample> out) noexcept override
    {
        for (std::size_t i = 0; i < out.size(); ++i)
        {
            out[i] = {load[i], 0, busyUs[i],
                      i < perfLimited.size() ? perfLimited[i]
                                             : std::uint8_t{0}};
        }
        return sampleError;
    }
    Controls controls() const noexcept override
    {
        return offered;
    }
    std::error_code apply(
        std::span<const CppcRequest> requests) noexcept override
    {
        for (const CppcRequest& r : requests)
        {
            written[r.cpu] = r.desired;
            last[r.cpu] = r;
            ++writes;
        }
        writesAtEndTick = -1; // not yet ended
        return {};
    }
    void endTick() noexcept override
    {
        ++endTicks;
        writesAtEndTick = static_cast<int>(writes);
    }
    std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept override
    {
        if (hostCpus.empty())
        {
            return hostCpu;
        }
        const auto it = hostCpus.find(hostCpu);
        return it == hostCpus.end() ? std::nullopt
                                    : std::optional<std::uint32_t>(it->second);
    }
    cppc::backend::RestoreResult restore() noexcept override
    {
        return {};
    }

    Controls offered{Control::desired, Control::min, Control::max};
    std::vector<std::uint16_t> load;
    // Each CPU's PerformanceLimited bits in the next samples.
    std::vector<std::uint8_t> perfLimited;
    // Each CPU's busy time in the next samples.
    std::vector<std::uint64_t> busyUs;
    // Host CPU -> machine CPU; empty: the identity.
    std::map<std::uint32_t, std::uint32_t> hostCpus;
    std::map<std::uint32_t, std::uint32_t> written;
    std::map<std::uint32_t, CppcRequest> last;
    std::size_t writes = 0;
    std::size_t endTicks = 0;
    int writesAtEndTick = -1; // writes when the last tick ended
    std::error_code sampleError;

  private:
    policies::Topology topology_;
};

// Hint `handle`'s thread seen on `cpu` with `clamp`, having used
// `cpuTimeUs` since it was last read.
HintSighting seen(std::uint64_t handle, std::uint32_t cpu,
                  policies::Clamp clamp, std::uint64_t cpuTimeUs = 0)
{
    return {handle, static_cast<pid_t>(100 + handle), cpu, clamp, cpuTimeUs};
}

GovernorConfig noAveraging()
{
    GovernorConfig c;
    c.defaults.schedutil.rateLimitUpUs = 1;
    c.defaults.schedutil.rateLimitDownUs = 1;
    return c;
}

TEST(Governor, ClampMinRaisesOnlyTheCpuTheTaskIsActiveOn)
{
    FakeMachine m(4, {{{0, 1, 2, 3}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    ASSERT_EQ(report.writes, 4U);
    EXPECT_EQ(m.written[2], 200U); // idle: the floor (lowest nonlinear)

    const std::vector<HintSighting> active = {seen(7, 2, {1024, 1024})};
    g.tick(3000, active, report);
    EXPECT_EQ(m.written[2], 800U); // util_min 1024: the ceiling (nominal)
    EXPECT_EQ(m.written[1], 200U);
    EXPECT_EQ(g.cpus()[2].reason, policies::Reason::ceiling);
    EXPECT_EQ(g.cpus()[2].clamp, (policies::Clamp{1024, 1024}));
    EXPECT_EQ(g.cpus()[2].handles, std::vector<std::uint64_t>{7});
    EXPECT_TRUE(g.cpus()[1].handles.empty());
    EXPECT_EQ(report.handlesWritten, std::vector<std::uint64_t>{7});
    EXPECT_EQ(report.handlesActive, std::vector<std::uint64_t>{7});
}

TEST(Governor, ACpuBusyWithoutABreakDoublesItsRequestAndLiftsItsAverage)
{
    for (const std::uint32_t burstUs : {2000U, 0U})
    {
        FakeMachine m(1, {{{0}, policies::Coordination::perCpu}});
        GovernorConfig config = noAveraging();
        config.defaults.schedutil.burstUs = burstUs;
        Governor g(m, config);
        TickReport report;
        m.load = {300};
        m.busyUs = {1000}; // every 1 ms tick busy throughout
        g.tick(1000, {}, report);
        EXPECT_EQ(m.written[0], 200U); // the average starts at nothing
        g.tick(2000, {}, report);
        EXPECT_EQ(m.written[0], 200U) << "busy for 1 ms: not yet a burst";
        g.tick(3000, {}, report);
        g.tick(4000, {}, report);
        if (burstUs == 0)
        {
            EXPECT_EQ(m.written[0], 200U) << "the average alone";
            continue;
        }
        EXPECT_EQ(m.written[0], 800U) << "doubled twice: the ceiling";
        EXPECT_EQ(g.cpus()[0].reason, policies::Reason::burst);
        // Busy at 951 of every 1000 us is still without a break; at 900,
        // not: the lifted average holds the request near the ceiling
        // instead of dropping it to the floor.
        m.busyUs = {951};
        g.tick(5000, {}, report);
        EXPECT_EQ(g.cpus()[0].reason, policies::Reason::burst);
        m.busyUs = {900};
        g.tick(6000, {}, report);
        EXPECT_EQ(g.cpus()[0].reason, policies::Reason::utilization);
        EXPECT_GE(m.written[0], 700U);
    }
}

TEST(Governor, ARunNoLongerThanTheCpusRecentRunsIsNoBurst)
{
    FakeMachine m(1, {{{0}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    m.load = {300};
    std::uint64_t nowUs = 0;
    // Runs 20 ms of every 50 (1 ms ticks); whether a burst was seen in
    // each period.
    auto period = [&](std::uint32_t runMs, std::uint32_t idleMs) {
        bool burst = false;
        for (std::uint32_t ms = 0; ms < runMs + idleMs; ++ms)
        {
            m.busyUs = {ms < runMs ? 1000U : 0U};
            nowUs += 1000;
            g.tick(nowUs, {}, report);
            burst = burst || g.cpus()[0].reason == policies::Reason::burst;
        }
        return burst;
    };
    EXPECT_TRUE(period(20, 30)) << "the first run: nothing to go by";
    for (int i = 0; i < 10; ++i)
    {
        EXPECT_FALSE(period(20, 30)) << "period " << i;
    }
    EXPECT_FALSE(period(24, 30)) << "within a quarter and burst_us";
    EXPECT_TRUE(period(40, 30)) << "twice as long as the usual run";
    // 2 s without a run: the memory of 40 ms has halved eight times.
    EXPECT_FALSE(period(0, 2000));
    EXPECT_TRUE(period(5, 30)) << "a burst from idle";
}

TEST(Governor, EveryTickEndsTheMachinesTickAfterItsWrites)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    ASSERT_EQ(report.writes, 2U);
    EXPECT_EQ(m.endTicks, 1U);
    EXPECT_EQ(m.writesAtEndTick, 2);
    g.tick(2000, {}, report);
    ASSERT_EQ(report.writes, 0U); // nothing changed: no apply()
    EXPECT_EQ(m.endTicks, 2U);
}

TEST(Governor, RequestsCarryTheDecisionsMinimumAndMaximum)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::shared}});
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    ASSERT_EQ(report.writes, 2U);
    // The CPUs' lowest and highest around the floor, EPP left alone.
    EXPECT_EQ(m.last[1],
              (CppcRequest{1, 100, 200, 1000, std::nullopt, false, {}}));
    EXPECT_EQ(g.cpus()[1].requestedPerf, 200U);
}

TEST(Governor, ClampsOnOneCpuCombineLikeUclamp)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    const std::vector<HintSighting> active = {
        seen(2, 0, {400, 500}), seen(1, 0, {100, 300}),
        seen(3, 5, {1024, 1024})};
    g.tick(1000, active, report);
    EXPECT_EQ(g.cpus()[0].clamp, (policies::Clamp{400, 500}));
    EXPECT_EQ(g.cpus()[0].handles, (std::vector<std::uint64_t>{1, 2}));
    // A CPU outside the machine is ignored.
    EXPECT_EQ(report.handlesActive, (std::vector<std::uint64_t>{1, 2}));
}

TEST(Governor, ASightingCountsOnTheMachineCpuOfItsHostCpu)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    m.hostCpus = {{8, 1}};
    Governor g(m, noAveraging());
    TickReport report;
    const std::vector<HintSighting> active = {seen(1, 8, {1024, 1024}),
                                              seen(2, 0, {1024, 1024})};
    g.tick(1000, active, report);
    EXPECT_EQ(g.cpus()[1].handles, std::vector<std::uint64_t>{1});
    EXPECT_TRUE(g.cpus()[0].handles.empty()) << "host CPU 0 counts nowhere";
    EXPECT_EQ(m.written[1], 800U);
    EXPECT_EQ(m.written[0], 200U);
}

TEST(Governor, SharedDomainWritesEveryCpuOnce)
{
    FakeMachine m(4, {{{0, 1}, policies::Coordination::shared},
                      {{2, 3}, policies::Coordination::shared}});
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    EXPECT_EQ(report.writes, 4U);
    g.tick(2000, {}, report);
    EXPECT_EQ(report.writes, 0U) << "nothing changed, nothing written";
    m.load = {0, 1024, 0, 0};
    g.tick(40000, {}, report);
    EXPECT_EQ(m.written[0], m.written[1]);
    EXPECT_GT(m.written[0], 200U);
    EXPECT_EQ(m.written[2], 200U);
}

TEST(Governor, OverridesApplyPerDomainAndKeepState)
{
    FakeMachine m(4, {{{0, 1, 2, 3}, policies::Coordination::perCpu}});
    GovernorConfig c = noAveraging();
    Governor g(m, c);
    TickReport report;
    g.tick(1000, {}, report);
    EXPECT_EQ(m.written[3], 200U);

    Override o;
    CpuSet cpus;
    cpus.set(3);
    o.selector = cpus;
    o.kind = policies::PolicyKind::performance;
    c.overrides.push_back(o);
    g.configure(c);
    g.tick(2000, {}, report);
    EXPECT_EQ(m.written[3], 800U);
    EXPECT_EQ(g.cpus()[3].reason, policies::Reason::fixed);
    EXPECT_EQ(report.writes, 1U) << "the other CPUs kept their request";
}

TEST(Governor, AClampOutlivesItsTaskBrieflyUnlessForgotten)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    const std::vector<HintSighting> active = {seen(9, 1, {1024, 1024})};
    g.tick(1000, active, report);
    EXPECT_EQ(m.written[1], 800U);
    // Not seen for less than the hold time: still clamped.
    g.tick(1000 + clampHoldUs, {}, report);
    EXPECT_EQ(g.cpus()[1].handles, std::vector<std::uint64_t>{9});
    EXPECT_EQ(m.written[1], 800U);
    // Past it: gone.
    g.tick(2000 + clampHoldUs, {}, report);
    EXPECT_TRUE(g.cpus()[1].handles.empty());
    EXPECT_EQ(m.written[1], 200U);

    g.tick(3000 + clampHoldUs, active, report);
    EXPECT_EQ(m.written[1], 800U);
    g.forget(9);
    g.tick(4000 + clampHoldUs, {}, report);
    EXPECT_TRUE(g.cpus()[1].handles.empty()) << "a released clamp goes at once";
}

// procfs's view of one busy CPU, tick by tick (1 ms each): its busy
// counter and the CPU time of hint 7's thread, which runs there all along,
// move in 10 ms steps, each on the milliseconds its function says.
class Steps
{
  public:
    Steps(FakeMachine& machine, Governor& governor, policies::Clamp clamp) :
        machine_(machine), governor_(governor), clamp_(clamp)
    {}

    // Ticks milliseconds [from, to) of the run; `busyStep(ms)` and
    // `hintStep(ms)` say where the CPU's busy time and the thread's CPU
    // time step by 10 ms, `hinted` whether the thread is seen at all.
    // Calls `check(ms)` after each tick.
    template <typename Busy, typename Hint, typename Check>
    void run(int from, int to, Busy busyStep, Hint hintStep, bool hinted,
             Check check)
    {
        for (int ms = from; ms < to; ++ms)
        {
            machine_.busyUs[0] = busyStep(ms) ? step : 0;
            std::vector<HintSighting> sightings;
            if (hinted)
            {
                sightings.push_back(
                    seen(7, 0, clamp_, hintStep(ms) ? step : 0));
            }
            governor_.tick(static_cast<std::uint64_t>(ms) * 1000 + 500,
                           sightings, report);
            check(ms);
        }
    }

    static constexpr std::uint64_t step = 10'000;
    TickReport report;

  private:
    FakeMachine& machine_;
    Governor& governor_;
    policies::Clamp clamp_;
};

bool every10(int ms, int phase)
{
    return ms % 10 == phase;
}

TEST(Governor, AUtilMaxBindsWhileTheHintedTasksAccountForTheBusyTime)
{
    // The thread alone keeps the CPU busy: both counters step every 10 ms,
    // at whatever moments relative to each other.
    for (int phase = 0; phase < 10; ++phase)
    {
        FakeMachine m(1, {{{0}, policies::Coordination::perCpu}});
        m.load = {1024};
        Governor g(m, noAveraging());
        Steps steps(m, g, {0, 0});
        steps.run(
            0, 500, [](int ms) { return every10(ms, 0); },
            [phase](int ms) { return every10(ms, phase); }, true,
            [&](int ms) {
            ASSERT_EQ(g.cpus()[0].clamp, (policies::Clamp{0, 0}))
                << "phase " << phase << ", " << ms << " ms";
            ASSERT_EQ(g.cpus()[0].requestedPerf, 200U);
            ASSERT_EQ(g.cpus()[0].reason, policies::Reason::floor);
            });
    }
}

TEST(Governor, OtherWorkOnTheCpuLiftsTheCeiling)
{
    FakeMachine m(1, {{{0}, policies::Coordination::perCpu}});
    m.load = {1024};
    Governor g(m, noAveraging());
    Steps steps(m, g, {0, 0});
    const auto always = [](int ms) { return every10(ms, 0); };
    // Other work only, then the hinted thread comes and takes half the
    // CPU: the window still holds the other work, the ceiling lifts at
    // once, and it stays lifted while the other half is not the thread's.
    steps.run(0, 200, always, always, false, [](int) {});
    EXPECT_EQ(g.cpus()[0].requestedPerf, 800U) << "busy: nominal";
    steps.run(
        200, 600, always, [](int ms) { return ms % 20 == 5; }, true,
        [&](int ms) {
        ASSERT_EQ(g.cpus()[0].clamp, (policies::Clamp{0, 1024})) << ms;
        ASSERT_EQ(g.cpus()[0].requestedPerf, 800U) << ms;
        ASSERT_EQ(g.cpus()[0].handles, std::vector<std::uint64_t>{7});
        });

    // The other work stops: once it has left the window (and a hold has
    // passed), the thread's ceiling binds again.
    const int bound =
        600 + static_cast<int>((ceilingWindowUs + clampHoldUs) / 1000) + 10;
    steps.run(
        600, bound, always, [](int ms) { return every10(ms, 5); }, true,
        [](int) {});
    EXPECT_EQ(g.cpus()[0].clamp, (policies::Clamp{0, 0}));
    EXPECT_EQ(g.cpus()[0].requestedPerf, 200U);

    // The thread alone, with the ceiling bound, then other work comes: it
    // lifts the ceiling within a few of the counters' steps, for good.
    steps.run(
        bound, 1000, always, [](int ms) { return every10(ms, 5); }, true,
        [&](int) {
        ASSERT_EQ(g.cpus()[0].clamp, (policies::Clamp{0, 0}));
        });
    int liftedAt = -1;
    steps.run(
        1000, 1300, always, [](int ms) { return ms % 20 == 5; }, true,
        [&](int ms) {
        const bool lifted = g.cpus()[0].clamp == policies::Clamp{0, 1024};
        if (liftedAt < 0 && lifted)
        {
            liftedAt = ms;
        }
        ASSERT_EQ(lifted, liftedAt >= 0) << ms << ": lifted for good";
        });
    ASSERT_GE(liftedAt, 1000);
    EXPECT_LE(liftedAt, 1000 + 50);
}

TEST(Governor, UtilMinStillAppliesWhenTheCeilingLifts)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    // Other work ran on CPU 0 (its load is left at 0 to show the minimum).
    m.busyUs = {50'000, 0};
    g.tick(1000, {}, report);
    m.busyUs = {0, 0};
    const std::vector<HintSighting> active = {seen(4, 0, {600, 700}),
                                              seen(5, 1, {600, 700})};
    g.tick(2000, active, report);
    EXPECT_EQ(g.cpus()[0].clamp, (policies::Clamp{600, 1024}));
    EXPECT_EQ(g.cpus()[1].clamp, (policies::Clamp{600, 700}));
    for (std::uint32_t cpu : {0U, 1U})
    {
        // 600 / 1024 of the highest 1000.
        EXPECT_EQ(m.written[cpu], 585U) << cpu;
        EXPECT_EQ(g.cpus()[cpu].reason, policies::Reason::clampMin) << cpu;
    }
}

TEST(Governor, SampleErrorsAreReportedAndTheTickGoesOn)
{
    FakeMachine m(1, {{{0}, policies::Coordination::perCpu}});
    m.sampleError = std::make_error_code(std::errc::io_error);
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    EXPECT_EQ(report.sampleError, std::errc::io_error);
    EXPECT_EQ(report.writes, 1U);
}

// Exact observation: host CPU n's window, with the hints seen there.
ExactCpu window(policies::Clamp clamp, std::span<const HintSighting> hints = {})
{
    return {clamp, hints};
}

TEST(GovernorExact, AnUnhintedTaskInTheWindowLiftsTheCeilingAtOnce)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    m.load = {1024, 1024};
    const std::vector<HintSighting> hint = {seen(3, 0, {0, 300})};
    // Only the hinted task ran on CPU 0: its util_max binds; CPU 1 ran
    // unhinted work.
    std::vector<ExactCpu> cpus = {window({0, 300}, hint), window({0, 1024})};
    g.tickExact(1000, cpus, report);
    // Long enough for the average to near the full load.
    g.tickExact(200'000, cpus, report);
    EXPECT_EQ(g.cpus()[0].clamp, (policies::Clamp{0, 300}));
    EXPECT_EQ(g.cpus()[0].reason, policies::Reason::clampMax);
    EXPECT_EQ(m.written[0], 300U * 1000 / 1024);
    EXPECT_EQ(g.cpus()[0].handles, std::vector<std::uint64_t>{3});
    EXPECT_EQ(g.cpus()[1].clamp, (policies::Clamp{0, 1024}));

    // The next window also had an unhinted task on CPU 0: no ceiling, with
    // no busy-time comparison and no wait.
    cpus[0] = window({0, 1024}, hint);
    g.tickExact(201'000, cpus, report);
    EXPECT_EQ(g.cpus()[0].clamp, (policies::Clamp{0, 1024}));
    EXPECT_EQ(m.written[0], 800U);
}

TEST(GovernorExact, AHintsMinimumOutlivesItsWindowByTheHold)
{
    FakeMachine m(1, {{{0}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    const std::vector<HintSighting> hint = {seen(5, 0, {512, 1024})};
    std::vector<ExactCpu> cpus = {window({512, 1024}, hint)};
    g.tickExact(1000, cpus, report);
    EXPECT_EQ(g.cpus()[0].clamp.min, 512U);
    EXPECT_EQ(report.handlesWritten, std::vector<std::uint64_t>{5});

    // The task sleeps: nothing runnable, and the minimum holds.
    cpus[0] = window({0, 1024});
    g.tickExact(1000 + clampHoldUs, cpus, report);
    EXPECT_EQ(g.cpus()[0].clamp, (policies::Clamp{512, 1024}));
    EXPECT_EQ(g.cpus()[0].handles, std::vector<std::uint64_t>{5});
    // One microsecond past the hold it is gone.
    g.tickExact(1001 + clampHoldUs, cpus, report);
    EXPECT_EQ(g.cpus()[0].clamp, (policies::Clamp{0, 1024}));
    EXPECT_TRUE(g.cpus()[0].handles.empty());
}

TEST(GovernorExact, ForgetEndsAHeldMinimumAndHostCpusAreMapped)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    m.hostCpus = {{5, 1}};
    Governor g(m, noAveraging());
    TickReport report;
    const std::vector<HintSighting> hint = {seen(9, 5, {700, 1024})};
    std::vector<ExactCpu> cpus(6, window({0, 1024}));
    cpus[5] = window({700, 1024}, hint);
    cpus[0] = window({900, 1024}); // host CPU 0 counts nowhere
    g.tickExact(1000, cpus, report);
    EXPECT_EQ(g.cpus()[1].clamp.min, 700U);
    EXPECT_EQ(g.cpus()[0].clamp.min, 0U);

    g.forget(9);
    cpus[5] = window({0, 1024});
    g.tickExact(2000, cpus, report);
    EXPECT_EQ(g.cpus()[1].clamp.min, 0U);
    EXPECT_TRUE(report.handlesActive.empty());
}

// ---- Autonomous ----

GovernorConfig autonomousOn(std::uint32_t domain)
{
    GovernorConfig c = noAveraging();
    Override o;
    o.selector = PsdDomain{domain};
    o.kind = policies::PolicyKind::autonomous;
    o.autonomous.energyPreference = 77;
    o.autonomous.activityWindowUs = 3000;
    o.origin = "test.yaml:1";
    c.overrides.push_back(o);
    return c;
}

void offerEveryControl(FakeMachine& m)
{
    m.offered = {Control::desired,    Control::min,
                 Control::max,        Control::epp,
                 Control::autonomous, Control::activityWindow};
}

TEST(Governor, RefusesAutonomousOnAMachineWithoutIt)
{
    FakeMachine m(4, {{{0, 1}, policies::Coordination::shared},
                      {{2, 3}, policies::Coordination::shared}});
    const std::string refusal =
        "domain 1 (CPUs 2-3, _PSD domain 1): policy autonomous needs CPPC "
        "autonomous selection, which backend 'fake' does not offer";
    EXPECT_EQ(policyRefusals(autonomousOn(1), m),
              std::vector<std::string>{refusal});
    try
    {
        Governor g(m, autonomousOn(1));
        ADD_FAILURE() << "no refusal";
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_EQ(std::string(e.what()), refusal);
    }
    // At reload: refused, and the running settings stay.
    Governor g(m, noAveraging());
    EXPECT_THROW(g.configure(autonomousOn(1)), std::invalid_argument);
    EXPECT_EQ(g.policyOf(2), policies::PolicyKind::schedutil);
    TickReport report;
    g.tick(0, {}, report);
    EXPECT_FALSE(m.last.at(2).autonomous);
    // A default of autonomous names every domain.
    GovernorConfig all = noAveraging();
    all.defaults.kind = policies::PolicyKind::autonomous;
    EXPECT_EQ(policyRefusals(all, m).size(), 2U);
    m.offered = {Control::desired, Control::autonomous};
    EXPECT_TRUE(policyRefusals(all, m).empty());
}

TEST(Governor, AutonomousRequestsCarryTheSelectionEppAndWindow)
{
    FakeMachine m(4, {{{0, 1}, policies::Coordination::shared},
                      {{2, 3}, policies::Coordination::shared}});
    offerEveryControl(m);
    Governor g(m, autonomousOn(1));
    EXPECT_EQ(g.policyOf(2), policies::PolicyKind::autonomous);
    TickReport report;
    g.tick(0, {}, report);
    // Domain 0: schedutil, autonomous off.
    EXPECT_FALSE(m.last.at(0).autonomous);
    EXPECT_EQ(m.last.at(0).epp, std::nullopt);
    // Domain 1: both CPUs, [lowest nonlinear, nominal], EPP and window.
    for (const std::uint32_t cpu : {2U, 3U})
    {
        const CppcRequest& r = m.last.at(cpu);
        EXPECT_TRUE(r.autonomous);
        EXPECT_EQ(r.min, 200U);
        EXPECT_EQ(r.desired, 200U);
        EXPECT_EQ(r.max, 800U);
        EXPECT_EQ(r.epp, std::optional<std::uint8_t>(77));
        EXPECT_EQ(r.activityWindowUs, std::optional<std::uint32_t>(3000));
    }
    EXPECT_EQ(policies::reasonName(g.cpus()[2].reason), "autonomous");

    // util_max hints on both CPUs lower the domain's Maximum (one CPU's
    // alone would not: a shared domain takes the largest); a performance
    // preference on CPU 2 sets its EPP (the configuration's for it: 0).
    const std::vector<policies::EnergyPreference> prefs = {
        policies::EnergyPreference::none, policies::EnergyPreference::none,
        policies::EnergyPreference::performance};
    g.setEnergyPreferences(prefs);
    const std::vector<HintSighting> s = {seen(1, 2, {0, 512}),
                                         seen(2, 3, {0, 400})};
    g.tick(100'000, s, report);
    EXPECT_EQ(m.last.at(3).max, 500U);
    EXPECT_EQ(m.last.at(3).epp, std::optional<std::uint8_t>(0));
    EXPECT_EQ(policies::reasonName(g.cpus()[3].reason), "clamp-max");

    // Switching the domain away writes autonomous off at once.
    const std::size_t before = m.writes;
    g.configure(noAveraging());
    g.tick(100'010, {}, report);
    EXPECT_GT(m.writes, before);
    EXPECT_FALSE(m.last.at(2).autonomous);
    EXPECT_FALSE(m.last.at(3).autonomous);
}

TEST(Governor, PerformanceLimitedBitsBecomeTheReasonAndAreCounted)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    m.perfLimited = {desiredExcursion, 0};
    g.tick(0, {}, report);
    EXPECT_EQ(policies::reasonName(g.cpus()[0].reason), "desired-excursion");
    EXPECT_EQ(policies::reasonName(g.cpus()[1].reason), "floor");
    m.perfLimited = {desiredExcursion | minimumExcursion, minimumExcursion};
    g.tick(10'000, {}, report);
    EXPECT_EQ(policies::reasonName(g.cpus()[0].reason), "minimum-excursion");
    EXPECT_EQ(policies::reasonName(g.cpus()[1].reason), "minimum-excursion");
    m.perfLimited = {0, 0};
    g.tick(20'000, {}, report);
    EXPECT_NE(policies::reasonName(g.cpus()[0].reason), "minimum-excursion");
    EXPECT_EQ(g.cpus()[0].desiredExcursions, 2U);
    EXPECT_EQ(g.cpus()[0].minimumExcursions, 1U);
    EXPECT_EQ(g.cpus()[1].desiredExcursions, 0U);
    EXPECT_EQ(g.cpus()[1].minimumExcursions, 1U);
}

TEST(Governor, UnderAutonomousSelectionOnlyTheMinimumExcursionCounts)
{
    FakeMachine m(4, {{{0, 1}, policies::Coordination::shared},
                      {{2, 3}, policies::Coordination::shared}});
    offerEveryControl(m);
    Governor g(m, autonomousOn(1));
    TickReport report;
    // CPU 0 runs schedutil, CPUs 2 and 3 autonomous selection.
    m.perfLimited = {desiredExcursion, 0, desiredExcursion,
                     desiredExcursion | minimumExcursion};
    g.tick(0, {}, report);
    EXPECT_EQ(policies::reasonName(g.cpus()[0].reason), "desired-excursion");
    EXPECT_EQ(policies::reasonName(g.cpus()[2].reason), "autonomous");
    EXPECT_EQ(policies::reasonName(g.cpus()[3].reason), "minimum-excursion");
    EXPECT_EQ(g.cpus()[0].desiredExcursions, 1U);
    EXPECT_EQ(g.cpus()[2].desiredExcursions, 0U);
    EXPECT_EQ(g.cpus()[3].desiredExcursions, 0U);
    EXPECT_EQ(g.cpus()[3].minimumExcursions, 1U);
}

} // namespace
} // namespace cppcgov::daemon
