// SPDX-License-Identifier: Apache-2.0
// The schedutil-like policy and its comparison policies, as tables of
// numbers.
#include "policies/policy.hpp"
#include "policies/util_average.hpp"

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
    decide(PolicyKind::schedutil, config, t, {0, util, clamp}, state, out);
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
    decide(PolicyKind::schedutil, {}, t, {0, util, clamp}, state, out);
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
    decide(PolicyKind::schedutil, {}, t, {0, util, clamp}, state, out);
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
        decide(PolicyKind::schedutil, config, t, {k.nowUs, util, clamp}, state,
               out);
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

TEST(ComparisonPoliciesTest, PerformanceAndPowersaveAreFixed)
{
    const Topology t = makeTopology({caps}, {{{0}, Coordination::perCpu}});
    const std::vector<std::uint16_t> util{512};
    const std::vector<Clamp> clamp(1);
    std::vector<DomainState> state(1);
    std::vector<Decision> out(1);
    decide(PolicyKind::performance, {}, t, {0, util, clamp}, state, out);
    EXPECT_EQ(out[0].desired, 800U);
    SchedutilConfig boost;
    boost.boost = true;
    std::vector<DomainState> fresh(1);
    decide(PolicyKind::performance, boost, t, {0, util, clamp}, fresh, out);
    EXPECT_EQ(out[0].desired, 1000U);
    std::vector<DomainState> again(1);
    decide(PolicyKind::powersave, {}, t, {0, util, clamp}, again, out);
    EXPECT_EQ(out[0].desired, 200U);
    SchedutilConfig lowest;
    lowest.floor = Floor::lowest;
    std::vector<DomainState> last(1);
    decide(PolicyKind::powersave, lowest, t, {0, util, clamp}, last, out);
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
                    decide(kind, config, t, {nowUs, u, cl}, state, out);
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
    decide(PolicyKind::schedutil, {}, t, {0, idle, clamp}, state, out);
    EXPECT_EQ(out[0].desired, 100U);
    std::vector<DomainState> fresh(1);
    decide(PolicyKind::performance, {}, t, {0, idle, clamp}, fresh, out);
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

} // namespace
} // namespace cppcgov::policies
