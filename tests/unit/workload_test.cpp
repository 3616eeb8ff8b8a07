// SPDX-License-Identifier: Apache-2.0
// The simulated workload: exact execution in virtual time, deadlines,
// transition delays, counters, energy and placement.
#include "lib/sim/workload.hpp"

#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace cppc::sim
{
namespace
{

constexpr WorkloadCpu cpu{2000, 1000, 250, 100, 50};

TaskSpec periodic(std::uint64_t workUs, std::uint64_t periodUs,
                  std::optional<unsigned> on = 0)
{
    TaskSpec t;
    t.kind = TaskSpec::Kind::periodic;
    t.name = "periodic";
    t.workUs = workUs;
    t.periodUs = periodUs;
    t.cpu = on;
    return t;
}

TEST(WorkloadTest, PeriodicWorkAtNominalTakesItsNominalTime)
{
    Workload w({cpu}, {periodic(500, 2000)});
    w.advanceTo(2000);
    const CpuWindow win = w.takeWindow(0);
    EXPECT_EQ(win.lengthNs, 2'000'000U);
    EXPECT_EQ(win.busyNs, 500'000U);
    ASSERT_EQ(win.tasks.size(), 1U);
    const Score s = w.score();
    EXPECT_EQ(s.jobs, 1U);
    EXPECT_EQ(s.misses, 0U);
    ASSERT_EQ(s.responseUs.size(), 1U);
    EXPECT_EQ(s.responseUs[0], 500U);
}

TEST(WorkloadTest, LowerPerformanceStretchesTheWorkAfterTheTransitionDelay)
{
    Workload w({cpu}, {periodic(500, 2000)});
    w.requestPerf(0, 500); // half of nominal, effective at 50 us
    w.advanceTo(40);
    EXPECT_EQ(w.perf(0), 1000U);
    w.advanceTo(2000);
    EXPECT_EQ(w.perf(0), 500U);
    // 50 us at 1000 then the remaining 450 us-at-nominal of work at 500.
    EXPECT_EQ(w.takeWindow(0).busyNs, 950'000U);
    EXPECT_EQ(w.score().perfWrites, 1U);
}

TEST(WorkloadTest, JobsFinishingAfterTheNextReleaseAreMisses)
{
    Workload w({cpu}, {periodic(1500, 2000)});
    w.requestPerf(0, 600); // 1500 us at nominal needs 2500 us at 600
    w.advanceTo(20'000);
    const Score s = w.score();
    EXPECT_GT(s.misses, 0U);
    EXPECT_EQ(s.misses, s.jobs); // it can never catch up
}

TEST(WorkloadTest, CountersTickAtReferenceAndCurrentPerfWhileBusy)
{
    TaskSpec busy;
    busy.kind = TaskSpec::Kind::busy;
    busy.name = "spin";
    busy.cpu = 0;
    Workload w({cpu}, {busy});
    w.requestPerf(0, 1500);
    w.advanceTo(1050); // 50 us at 1000, then 1000 us at 1500
    const CpuWindow win = w.takeWindow(0);
    EXPECT_EQ(win.busyNs, win.lengthNs);
    EXPECT_EQ(win.referenceCounter, 100U * 1'050'000U);
    EXPECT_EQ(win.deliveredCounter, 1000U * 50'000U + 1500U * 1'000'000U);
}

TEST(WorkloadTest, EnergyFollowsTheDocumentedModel)
{
    Workload w({cpu}, {periodic(1000, 10'000)}, {0.5, 2.0, 3.0});
    w.advanceTo(10'000);
    // 1 ms busy at nominal (half of highest): 0.5 + 2 x 0.125 = 0.75 W.
    EXPECT_NEAR(w.score().energyJoules, 0.75e-3, 1e-12);
}

TEST(WorkloadTest, TheBalancerPlacesOnTheLeastLoadedCpu)
{
    TaskSpec busy;
    busy.kind = TaskSpec::Kind::busy;
    busy.name = "spin";
    busy.cpu = 0;
    Workload w({cpu, cpu}, {busy, periodic(100, 1000, std::nullopt)});
    w.advanceTo(1000);
    EXPECT_EQ(w.takeWindow(1).busyNs, 100'000U);
}

TEST(WorkloadTest, BurstyArrivalsAreRepeatableForASeed)
{
    TaskSpec b;
    b.kind = TaskSpec::Kind::bursty;
    b.name = "bursty";
    b.workUs = 200;
    b.periodUs = 1000;
    b.cpu = 0;
    b.seed = 42;
    Workload one({cpu}, {b});
    Workload two({cpu}, {b});
    one.advanceTo(100'000);
    two.advanceTo(100'000);
    EXPECT_EQ(one.score().jobs, two.score().jobs);
    EXPECT_EQ(one.score().responseUs, two.score().responseUs);
    EXPECT_GT(one.score().jobs, 50U);
    b.seed = 43;
    Workload three({cpu}, {b});
    three.advanceTo(100'000);
    EXPECT_NE(three.score().responseUs, one.score().responseUs);
}

TEST(WorkloadTest, TheObserverSeesEveryEventInOrder)
{
    Workload w({cpu}, {periodic(500, 2000)});
    std::vector<SchedEvent> events;
    w.setObserver([&events](const SchedEvent& e) { events.push_back(e); });
    w.requestPerf(0, 1000); // nominal already: takes effect at 50 us
    w.advanceTo(2000);
    using K = SchedEvent::Kind;
    const std::vector<std::pair<K, std::uint64_t>> expected{
        {K::enqueue, 0},         {K::switchTo, 0},
        {K::perfChange, 50'000}, {K::dequeue, 500'000},
        {K::switchTo, 500'000},  {K::enqueue, 2'000'000},
        {K::switchTo, 2'000'000}};
    ASSERT_EQ(events.size(), expected.size());
    for (std::size_t i = 0; i < events.size(); ++i)
    {
        EXPECT_EQ(events[i].kind, expected[i].first) << i;
        EXPECT_EQ(events[i].timeNs, expected[i].second) << i;
        EXPECT_EQ(events[i].cpu, 0U);
    }
    EXPECT_EQ(events[1].task, std::optional<std::size_t>(0));
    EXPECT_EQ(events[4].task, std::nullopt); // idle
    EXPECT_EQ(events[3].task, std::optional<std::size_t>(0));
}

TEST(WorkloadTest, AWakingTaskPreemptsASpinner)
{
    TaskSpec spin;
    spin.kind = TaskSpec::Kind::busy;
    spin.name = "spin";
    spin.cpu = 0;
    Workload w({cpu}, {spin, periodic(500, 2000)});
    std::vector<SchedEvent> switches;
    w.setObserver([&switches](const SchedEvent& e) {
        if (e.kind == SchedEvent::Kind::switchTo)
        {
            switches.push_back(e);
        }
    });
    w.advanceTo(3999);
    const Score s = w.score();
    ASSERT_EQ(s.responseUs.size(), 2U);
    EXPECT_EQ(s.responseUs[0], 500U);
    EXPECT_EQ(s.responseUs[1], 500U);
    // Periodic at 0 and 2000 us, the spinner at 500 and 2500 us.
    ASSERT_EQ(switches.size(), 4U);
    EXPECT_EQ(switches[0].task, std::optional<std::size_t>(1));
    EXPECT_EQ(switches[1].task, std::optional<std::size_t>(0));
    EXPECT_EQ(switches[1].timeNs, 500'000U);
    EXPECT_EQ(switches[2].task, std::optional<std::size_t>(1));
    EXPECT_EQ(switches[3].timeNs, 2'500'000U);
    EXPECT_EQ(w.taskRunNs(1), 1'000'000U);
    EXPECT_EQ(w.taskRunNs(0), 2'999'000U);
    EXPECT_TRUE(w.runnable(0));
    EXPECT_FALSE(w.runnable(1));
    EXPECT_EQ(w.taskCpu(1), std::optional<unsigned>(0));
}

TEST(WorkloadTest, RejectsImpossibleSetups)
{
    EXPECT_THROW(Workload({}, {}), std::invalid_argument);
    EXPECT_THROW(Workload({cpu}, {periodic(1, 10, 3)}), std::invalid_argument);
    EXPECT_THROW(Workload({cpu}, {periodic(0, 10)}), std::invalid_argument);
    Workload w({cpu}, {});
    w.advanceTo(10);
    EXPECT_THROW(w.advanceTo(5), std::invalid_argument);
}

} // namespace
} // namespace cppc::sim
