// SPDX-License-Identifier: Apache-2.0
// The schedutil-like policy and its comparison policies, as tables of
// numbers.
#include "policies/policy.hpp"
#include "policies/util_average.hpp"

#include <optional>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::policies
{
namespace
{

constexpr CpuCaps caps{1000, 800, 200, 100, 0};

TEST(AggregateTest, FollowsUclampMaxAggregation)
{
    struct Case
    {
        std::vector<TaskClamp> tasks;
        Clamp expected;
    };
    const std::vector<Case> cases = {
        {{}, {0, 1024}},
        {{{false, {}}}, {0, 1024}},
        {{{true, {512, 1024}}, {false, {}}}, {512, 1024}},
        {{{true, {100, 300}}, {true, {200, 600}}}, {200, 600}},
        {{{true, {0, 300}}, {false, {}}}, {0, 1024}}, // unhinted: max 1024
        {{{true, {700, 700}}}, {700, 700}},
    };
    for (std::size_t i = 0; i < cases.size(); ++i)
    {
        EXPECT_EQ(aggregate(cases[i].tasks), cases[i].expected) << i;
    }
}

// One CPU, one tick, a fresh state: the request and its reason.
struct DemandCase
{
    std::uint16_t util;
    Clamp clamp;
    bool boost;
    std::uint32_t perf;
    Reason reason;
};

class SchedutilDemandTest : public ::testing::TestWithParam<DemandCase>
{};

TEST_P(SchedutilDemandTest, MatchesTheFormula)
{
    const DemandCase& c = GetParam();
    const Topology t = makeTopology({caps}, {{{0}, Coordination::perCpu}});
    SchedutilConfig config;
    config.boost = c.boost;
    const std::vector<std::uint16_t> util{c.util};
    const std::vector<Clamp> clamp{c.clamp};
    std::vector<DomainState> state(1);
    std::vector<Decision> out(1);
    decide(PolicyKind::schedutil, config, t, {0, util, clamp, {}}, state, out);
    EXPECT_EQ(out[0].desired, c.perf);
    EXPECT_EQ(reasonName(out[0].reason), reasonName(c.reason));
    EXPECT_TRUE(out[0].changed);
    EXPECT_EQ(state[0].perf, c.perf);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SchedutilDemandTest,
    ::testing::Values(
        // util -> 1.25 x util -> x highest / 1024
        DemandCase{0, {}, false, 200, Reason::floor},
        DemandCase{100, {}, false, 200, Reason::floor},
        DemandCase{400, {}, false, 488, Reason::utilization},
        DemandCase{600, {}, false, 732, Reason::utilization},
        DemandCase{1024, {}, false, 800, Reason::ceiling},
        DemandCase{1024, {}, true, 1000, Reason::utilization},
        DemandCase{2000, {}, true, 1000, Reason::utilization}, // util capped
        // util_min 512 lifts a small load to 500 (= 512 x 1000 / 1024).
        DemandCase{100, {512, 1024}, false, 500, Reason::clampMin},
        // Clamps after the headroom: 250 x 1.25 = 312 is capped at 300,
        // not 300 x 1.25 = 375 (which clamping first would give).
        DemandCase{250, {0, 300}, false, 292, Reason::clampMax},
        DemandCase{400, {0, 300}, false, 292, Reason::clampMax},
        // A minimum at or above the maximum wins.
        DemandCase{100, {600, 400}, false, 585, Reason::clampMin},
        // util_min cannot pass the ceiling without boost.
        DemandCase{0, {1024, 1024}, false, 800, Reason::ceiling},
        DemandCase{0, {1024, 1024}, true, 1000, Reason::clampMin}));

Topology twoCpuDomain(Coordination c)
{
    return makeTopology({caps, caps}, {{{0, 1}, c}});
}

TEST(SchedutilTest, SharedDomainTakesTheMaxOfItsCpus)
{
    const Topology t = twoCpuDomain(Coordination::shared);
    ASSERT_EQ(t.domains.size(), 1U);
    const std::vector<std::uint16_t> util{100, 500};
    const std::vector<Clamp> clamp(2);
    std::vector<DomainState> state(1);
    std::vector<Decision> out(1);
    decide(PolicyKind::schedutil, {}, t, {0, util, clamp, {}}, state, out);
    EXPECT_EQ(out[0].desired, 610U); // 625 x 1000 / 1024
    EXPECT_EQ(out[0].drivingCpu, 1U);
}

TEST(SchedutilTest, HwAllDomainsDecidePerCpu)
{
    const Topology t = twoCpuDomain(Coordination::perCpu);
    ASSERT_EQ(t.domains.size(), 2U);
    const std::vector<std::uint16_t> util{100, 500};
    const std::vector<Clamp> clamp(2);
    std::vector<DomainState> state(2);
    std::vector<Decision> out(2);
    decide(PolicyKind::schedutil, {}, t, {0, util, clamp, {}}, state, out);
    EXPECT_EQ(out[0].desired, 200U);
    EXPECT_EQ(out[1].desired, 610U);
}

// A sequence of ticks on one CPU: time, util, clamp -> request, changed.
struct Tick
{
    std::uint64_t nowUs;
    std::uint16_t util;
    Clamp clamp;
    std::uint32_t perf;
    bool changed;
    Reason reason;
    std::uint32_t saturatedUs = 0; // busy without a break up to nowUs
};

void run(const SchedutilConfig& config, CpuCaps c,
         const std::vector<Tick>& ticks)
{
    const Topology t = makeTopology({c}, {{{0}, Coordination::perCpu}});
    std::vector<DomainState> state(1);
    std::vector<Decision> out(1);
    for (std::size_t i = 0; i < ticks.size(); ++i)
    {
        const Tick& k = ticks[i];
        const std::vector<std::uint16_t> util{k.util};
        const std::vector<Clamp> clamp{k.clamp};
        const std::vector<std::uint32_t> saturated{k.saturatedUs};
        decide(PolicyKind::schedutil, config, t,
               {k.nowUs, util, clamp, {}, saturated}, state, out);
        EXPECT_EQ(out[0].desired, k.perf) << "tick " << i;
        EXPECT_EQ(out[0].changed, k.changed) << "tick " << i;
        EXPECT_EQ(reasonName(out[0].reason), reasonName(k.reason))
            << "tick " << i;
    }
}

TEST(SchedutilTest, RateLimitDefaultsTo1000usWithoutATransitionDelay)
{
    run({}, caps,
        {{0, 400, {}, 488, true, Reason::utilization},
         {500, 600, {}, 488, false, Reason::rateLimited},
         {999, 600, {}, 488, false, Reason::rateLimited},
         {1000, 600, {}, 732, true, Reason::utilization},
         {1500, 600, {}, 732, false, Reason::utilization}}); // unchanged
}

TEST(SchedutilTest, RateLimitDefaultsToThePlatformTransitionDelay)
{
    CpuCaps c = caps;
    c.transitionDelayUs = 300;
    run({}, c,
        {{0, 400, {}, 488, true, Reason::utilization},
         {299, 600, {}, 488, false, Reason::rateLimited},
         {300, 600, {}, 732, true, Reason::utilization}});
}

TEST(SchedutilTest, UpAndDownLimitsAreSeparate)
{
    SchedutilConfig config;
    config.rateLimitUpUs = 100;
    config.rateLimitDownUs = 5000;
    run(config, caps,
        {{0, 400, {}, 488, true, Reason::utilization},
         {100, 600, {}, 732, true, Reason::utilization},
         {200, 100, {}, 732, false, Reason::rateLimited},
         {5099, 100, {}, 732, false, Reason::rateLimited},
         {5100, 100, {}, 200, true, Reason::floor}});
}

TEST(SchedutilTest, ARisingFloorBypassesTheRateLimit)
{
    run({}, caps,
        {{0, 100, {}, 200, true, Reason::floor},
         // A util_min hint arrives 10 us later: served at once.
         {10, 100, {512, 1024}, 500, true, Reason::clampMin},
         // The same floor again gives no further bypass: load alone waits.
         {20, 600, {512, 1024}, 500, false, Reason::rateLimited},
         {1010, 600, {512, 1024}, 732, true, Reason::utilization}});
}

TEST(SchedutilTest, ABurstDoublesTheRequestEveryTickUpToTheCeiling)
{
    run({}, caps,
        {{0, 100, {}, 200, true, Reason::floor},
         // Busy without a break for less than burst_us: the average alone.
         {1000, 150, {}, 200, false, Reason::floor, 1000},
         {2000, 150, {}, 400, true, Reason::burst, 2000},
         {3000, 200, {}, 800, true, Reason::burst, 3000},
         // At the ceiling (nominal: no boost) it stays, and says why.
         {4000, 300, {}, 800, false, Reason::burst, 4000},
         // The break ends it: the average (here low) decides again.
         {5000, 300, {}, 366, true, Reason::utilization, 0}});
}

TEST(SchedutilTest, ABurstKeepsToUtilMaxAndTheRateLimit)
{
    CpuCaps c = caps;
    c.transitionDelayUs = 1500;
    const Clamp capped{0, 512}; // 500 of 1000
    run({}, c,
        {{0, 100, capped, 200, true, Reason::floor},
         {1000, 100, capped, 200, false, Reason::rateLimited, 2000},
         {1500, 100, capped, 400, true, Reason::burst, 2500},
         // Doubled to 800, held at the hint's 500: the hint says why.
         {3000, 100, capped, 500, true, Reason::clampMax, 4000},
         {4500, 100, capped, 500, false, Reason::clampMax, 5500}});
}

TEST(SchedutilTest, UtilizationAloneWritesOnlyStepsOfMinStepPercent)
{
    run({}, caps,
        {{0, 400, {}, 488, true, Reason::utilization},
         // 512 is 24 from 488, under 5 % of highest (50): not written.
         {1000, 420, {}, 488, false, Reason::utilization},
         {2000, 450, {}, 548, true, Reason::utilization},
         {3000, 170, {}, 207, true, Reason::utilization},
         // The floor, 7 away, is written all the same.
         {4000, 100, {}, 200, true, Reason::floor}});
    // A small step asked for without a break is held back minStepHoldUs
    // at most.
    run({}, caps,
        {{0, 400, {}, 488, true, Reason::utilization},
         {1000, 420, {}, 488, false, Reason::utilization},
         {1000 + minStepHoldUs - 1, 420, {}, 488, false, Reason::utilization},
         {1000 + minStepHoldUs, 420, {}, 512, true, Reason::utilization},
         {2000 + minStepHoldUs, 400, {}, 512, false, Reason::utilization},
         // Back at the request: a later hold starts afresh.
         {3000 + minStepHoldUs, 420, {}, 512, false, Reason::utilization},
         {3000 + 2 * minStepHoldUs, 400, {}, 512, false, Reason::utilization}});
    SchedutilConfig every;
    every.minStepPercent = 0;
    run(every, caps,
        {{0, 400, {}, 488, true, Reason::utilization},
         {1000, 420, {}, 512, true, Reason::utilization}});
}

TEST(SchedutilTest, BurstUsZeroLeavesTheAverageAlone)
{
    SchedutilConfig config;
    config.burstUs = 0;
    run(config, caps,
        {{0, 100, {}, 200, true, Reason::floor},
         {5000, 100, {}, 200, false, Reason::floor, 5000}});
}

TEST(ComparisonPoliciesTest, PerformanceAndPowersaveAreFixed)
{
    const Topology t = makeTopology({caps}, {{{0}, Coordination::perCpu}});
    const std::vector<std::uint16_t> util{512};
    const std::vector<Clamp> clamp(1);
    std::vector<DomainState> state(1);
    std::vector<Decision> out(1);
    decide(PolicyKind::performance, {}, t, {0, util, clamp, {}}, state, out);
    EXPECT_EQ(out[0].desired, 800U);
    SchedutilConfig boost;
    boost.boost = true;
    std::vector<DomainState> fresh(1);
    decide(PolicyKind::performance, boost, t, {0, util, clamp, {}}, fresh, out);
    EXPECT_EQ(out[0].desired, 1000U);
    std::vector<DomainState> again(1);
    decide(PolicyKind::powersave, {}, t, {0, util, clamp, {}}, again, out);
    EXPECT_EQ(out[0].desired, 200U);
    SchedutilConfig lowest;
    lowest.floor = Floor::lowest;
    std::vector<DomainState> last(1);
    decide(PolicyKind::powersave, lowest, t, {0, util, clamp, {}}, last, out);
    EXPECT_EQ(out[0].desired, 100U);
}

// Whatever the policy, the load and the clamps, a decision is a request a
// machine can write: min <= desired <= max, at the domain's lowest and
// highest (the largest of its CPUs'), EPP unset.
TEST(DecisionTest, MinDesiredAndMaxAreOrderedForEveryPolicyAndLoad)
{
    const CpuCaps small{500, 400, 150, 120, 0};
    const Topology t = makeTopology(
        {caps, small, caps},
        {{{0, 1}, Coordination::shared}, {{2}, Coordination::perCpu}});
    const std::vector<Clamp> clamps = {
        {}, {0, 0}, {1024, 1024}, {300, 200}, {512, 600}};
    for (const PolicyKind kind :
         {PolicyKind::schedutil, PolicyKind::performance,
          PolicyKind::powersave})
    {
        for (const bool boost : {false, true})
        {
            SchedutilConfig config;
            config.boost = boost;
            std::vector<DomainState> state(2);
            std::vector<Decision> out(2);
            std::uint64_t nowUs = 0;
            for (std::uint16_t util = 0; util <= 1024; util += 64)
            {
                for (const Clamp& c : clamps)
                {
                    const std::vector<std::uint16_t> u{
                        util, static_cast<std::uint16_t>(1024 - util), util};
                    const std::vector<Clamp> cl{c, {}, c};
                    nowUs += 300; // some ticks rate-limited, some not
                    decide(kind, config, t, {nowUs, u, cl, {}}, state, out);
                    for (const Decision& d : out)
                    {
                        EXPECT_LE(d.min, d.desired) << policyName(kind);
                        EXPECT_LE(d.desired, d.max) << policyName(kind);
                        EXPECT_FALSE(d.epp.has_value());
                    }
                    EXPECT_EQ(out[0].min, 120U); // max(100, 120)
                    EXPECT_EQ(out[0].max, 1000U);
                    EXPECT_EQ(out[1].min, caps.lowest);
                    EXPECT_EQ(out[1].max, caps.highest);
                }
            }
        }
    }
}

TEST(DecisionTest, FirmwareWhoseFloorIsBelowItsLowestStillGivesAnOrderedRequest)
{
    // Lowest nonlinear below lowest and nominal above highest.
    const CpuCaps odd{900, 1200, 50, 100, 0};
    const Topology t = makeTopology({odd}, {{{0}, Coordination::perCpu}});
    const std::vector<std::uint16_t> idle{0};
    const std::vector<Clamp> clamp(1);
    std::vector<DomainState> state(1);
    std::vector<Decision> out(1);
    decide(PolicyKind::schedutil, {}, t, {0, idle, clamp, {}}, state, out);
    EXPECT_EQ(out[0].desired, 100U);
    std::vector<DomainState> fresh(1);
    decide(PolicyKind::performance, {}, t, {0, idle, clamp, {}}, fresh, out);
    EXPECT_EQ(out[0].desired, 900U);
    EXPECT_EQ(out[0].max, 900U);
}

TEST(UtilAverageTest, HalvesTheGapEveryHalfLife)
{
    UtilAverage avg(32000);
    EXPECT_EQ(avg.update(1024, 32000), 512);
    EXPECT_EQ(avg.update(1024, 32000), 768);
    EXPECT_EQ(avg.update(0, 64000), 192);
    // A periodic load alternating full and idle 1 ms windows reads as its
    // average, within the ripple of one window.
    UtilAverage periodic(32000);
    for (int i = 0; i < 2000; ++i)
    {
        periodic.update(i % 2 == 0 ? 1024 : 0, 1000);
    }
    EXPECT_NEAR(periodic.value(), 512, 12);
    UtilAverage off(0);
    EXPECT_EQ(off.update(300, 1000), 300);
    EXPECT_EQ(off.update(2000, 1000), 1024);
}

TEST(TopologyTest, EveryCpuInExactlyOneDomain)
{
    EXPECT_THROW(makeTopology({caps, caps}, {{{0}, Coordination::shared}}),
                 std::invalid_argument);
    EXPECT_THROW(makeTopology({caps}, {{{0}, Coordination::shared},
                                       {{0}, Coordination::shared}}),
                 std::invalid_argument);
    EXPECT_THROW(makeTopology({caps}, {{{3}, Coordination::shared}}),
                 std::invalid_argument);
}

// ---- Autonomous ----

// One autonomous tick of `topology` at `nowUs`.
struct AutoRun
{
    Topology topology;
    SchedutilConfig config;
    AutonomousConfig autonomous;
    std::vector<DomainState> state;
    std::vector<Decision> out;

    AutoRun(Topology t) :
        topology(std::move(t)), state(topology.domains.size()),
        out(topology.domains.size())
    {}

    const Decision& tick(std::uint64_t nowUs, std::vector<Clamp> clamp,
                         std::vector<EnergyPreference> preference = {},
                         PolicyKind kind = PolicyKind::autonomous)
    {
        const std::vector<std::uint16_t> util(clamp.size(), 512);
        decide(kind, config, autonomous, topology,
               {nowUs, util, clamp, preference}, state, out);
        return out[0];
    }
};

TEST(AutonomousTest, BoundsComeFromTheClampsWithinFloorAndCeiling)
{
    AutoRun r(makeTopology({caps}, {{{0}, Coordination::perCpu}}));
    // No hint: [lowest nonlinear, nominal], Desired at Minimum.
    Decision d = r.tick(0, {{0, 1024}});
    EXPECT_TRUE(d.autonomous);
    EXPECT_TRUE(d.changed);
    EXPECT_EQ(d.min, 200U);
    EXPECT_EQ(d.max, 800U);
    EXPECT_EQ(d.desired, 200U);
    EXPECT_EQ(d.epp, std::optional<std::uint8_t>(eppBalanced));
    EXPECT_EQ(d.activityWindowUs, std::nullopt);
    EXPECT_EQ(reasonName(d.reason), "autonomous");
    // util_min 512 -> 500, util_max 614 -> 599 (x highest / 1024).
    d = r.tick(10'000, {{512, 614}});
    EXPECT_EQ(d.min, 500U);
    EXPECT_EQ(d.max, 599U);
    EXPECT_EQ(d.desired, 500U);
    EXPECT_EQ(reasonName(d.reason), "clamp-min");
    d = r.tick(20'000, {{0, 300}});
    EXPECT_EQ(d.min, 200U);
    EXPECT_EQ(d.max, 292U);
    EXPECT_EQ(reasonName(d.reason), "clamp-max");
    // A util_max below the floor stays at the floor.
    d = r.tick(30'000, {{0, 10}});
    EXPECT_EQ(d.max, 200U);
    // Boost lifts the ceiling to highest; floor lowest lowers Minimum.
    r.config.boost = true;
    r.config.floor = Floor::lowest;
    d = r.tick(40'000, {{0, 1024}});
    EXPECT_EQ(d.min, 100U);
    EXPECT_EQ(d.max, 1000U);
}

TEST(AutonomousTest, ASharedDomainTakesTheLargestBoundsAndMinimumWins)
{
    AutoRun r(makeTopology({caps, caps}, {{{0, 1}, Coordination::shared}}));
    // CPU 1's minimum (700 -> 683) lies above CPU 0's maximum (300 -> 292).
    const Decision d = r.tick(0, {{0, 300}, {700, 800}});
    EXPECT_EQ(d.min, 683U);
    EXPECT_EQ(d.max, 781U);
    EXPECT_EQ(d.drivingCpu, 1U);
    const Decision e = r.tick(10'000, {{0, 300}, {900, 900}});
    EXPECT_EQ(e.min, 800U); // util_min 900 -> 878, capped at nominal
    EXPECT_EQ(e.max, 800U);
}

TEST(AutonomousTest, EnergyPreferenceArbitration)
{
    AutoRun r(makeTopology({caps, caps, caps}, {{{0, 1}, Coordination::shared},
                                                {{2}, Coordination::perCpu}}));
    r.autonomous.energyPreference = 100;
    r.autonomous.energyPreferencePerformance = 10;
    r.autonomous.energyPreferenceEfficiency = 240;
    r.autonomous.activityWindowUs = 5000;
    using P = EnergyPreference;
    const std::vector<Clamp> none(3, Clamp{});
    r.tick(0, none);
    EXPECT_EQ(r.out[0].epp, std::optional<std::uint8_t>(100));
    EXPECT_EQ(r.out[0].activityWindowUs, std::optional<std::uint32_t>(5000));
    // Efficiency on CPU 1 sets its domain's; CPU 2's stays.
    r.tick(10'000, none, {P::none, P::efficiency, P::none});
    EXPECT_EQ(r.out[0].epp, std::optional<std::uint8_t>(240));
    EXPECT_EQ(r.out[1].epp, std::optional<std::uint8_t>(100));
    // Performance beats efficiency in the same domain.
    r.tick(20'000, none, {P::performance, P::efficiency, P::efficiency});
    EXPECT_EQ(r.out[0].epp, std::optional<std::uint8_t>(10));
    EXPECT_EQ(r.out[1].epp, std::optional<std::uint8_t>(240));
    // Gone: back to the configured value.
    r.tick(30'000, none, {});
    EXPECT_EQ(r.out[0].epp, std::optional<std::uint8_t>(100));
    EXPECT_EQ(domainEpp(r.autonomous, {{2}, Coordination::perCpu},
                        std::vector<P>{P::performance}),
              100); // CPU 2 has no entry: none
}

TEST(AutonomousTest, RateLimitsAsSchedutilAndARisingMinimumAtOnce)
{
    AutoRun r(makeTopology({caps}, {{{0}, Coordination::perCpu}}));
    r.config.rateLimitUpUs = 5000;
    r.config.rateLimitDownUs = 20'000;
    using P = EnergyPreference;
    EXPECT_TRUE(r.tick(0, {{0, 1024}}).changed);
    // Unchanged: nothing to write.
    EXPECT_FALSE(r.tick(100, {{0, 1024}}).changed);
    // A rising Minimum is written at once.
    Decision d = r.tick(200, {{512, 1024}});
    EXPECT_TRUE(d.changed);
    EXPECT_EQ(d.min, 500U);
    // Falling: held for rate_limit_down_us, reported as rate-limited.
    d = r.tick(1000, {{0, 1024}});
    EXPECT_FALSE(d.changed);
    EXPECT_EQ(d.min, 500U);
    EXPECT_EQ(reasonName(d.reason), "rate-limited");
    d = r.tick(20'200, {{0, 1024}});
    EXPECT_TRUE(d.changed);
    EXPECT_EQ(d.min, 200U);
    // EPP toward performance is "up": rate_limit_up_us.
    d = r.tick(21'000, {{0, 1024}}, {P::performance});
    EXPECT_FALSE(d.changed);
    EXPECT_EQ(d.epp, std::optional<std::uint8_t>(eppBalanced));
    d = r.tick(25'200, {{0, 1024}}, {P::performance});
    EXPECT_TRUE(d.changed);
    EXPECT_EQ(d.epp, std::optional<std::uint8_t>(eppPerformance));
}

TEST(AutonomousTest, SwitchingPoliciesWritesAutonomousAtOnce)
{
    AutoRun r(makeTopology({caps}, {{{0}, Coordination::perCpu}}));
    r.config.rateLimitUpUs = 1'000'000;
    r.config.rateLimitDownUs = 1'000'000;
    Decision d = r.tick(0, {{0, 1024}}, {}, PolicyKind::schedutil);
    EXPECT_TRUE(d.changed);
    EXPECT_FALSE(d.autonomous);
    EXPECT_EQ(d.epp, std::nullopt);
    d = r.tick(10, {{0, 1024}});
    EXPECT_TRUE(d.changed);
    EXPECT_TRUE(d.autonomous);
    // Back to schedutil: written with autonomous off although the rate
    // limit has not passed and Desired may be the same.
    d = r.tick(20, {{0, 1024}}, {}, PolicyKind::schedutil);
    EXPECT_TRUE(d.changed);
    EXPECT_FALSE(d.autonomous);
    EXPECT_EQ(d.min, 100U);
    EXPECT_EQ(d.max, 1000U);
    d = r.tick(30, {{0, 1024}}, {}, PolicyKind::schedutil);
    EXPECT_FALSE(d.changed);
}

TEST(AutonomousTest, NamesAreTheConfigurationsOwn)
{
    EXPECT_EQ(policyName(PolicyKind::autonomous), "autonomous");
    EXPECT_EQ(energyPreferenceName(EnergyPreference::performance),
              "performance");
    EXPECT_EQ(energyPreferenceName(EnergyPreference::efficiency), "efficiency");
    EXPECT_EQ(energyPreferenceName(EnergyPreference::none), "none");
}

} // namespace
} // namespace cppcgov::policies
