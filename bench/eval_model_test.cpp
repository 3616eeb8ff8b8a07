// SPDX-License-Identifier: Apache-2.0
// The pieces of policy_eval that its table rests on: PELT's arithmetic,
// the model of the kernel's schedutil and what each daemon mode sees (the
// PNG writer's tests are tests/unit/record_plot_test.cpp's).
#include "bench/eval_inputs.hpp"
#include "bench/kernel_schedutil.hpp"
#include "bench/pelt.hpp"

#include <string>

#include <gtest/gtest.h>

namespace cppc::bench
{
namespace
{

namespace pol = cppcgov::policies;

constexpr std::uint64_t periodNs =
    std::uint64_t{1024} * 1024; // one PELT period
constexpr sim::WorkloadCpu cpu{3000, 2800, 800, 100, 50};
constexpr pol::CpuCaps caps{3000, 2800, 1000, 800, 50};

sim::TaskSpec pinned(sim::TaskSpec::Kind kind, std::uint64_t workUs,
                     std::uint64_t periodUs)
{
    sim::TaskSpec t;
    t.kind = kind;
    t.name = "task";
    t.workUs = workUs;
    t.periodUs = periodUs;
    t.cpu = 0;
    return t;
}

TEST(PeltTest, RunningAllTheTimeTendsToFullScaleAndHalvesIn32Periods)
{
    PeltSignal s;
    std::uint64_t now = 0;
    for (int p = 0; p < 400; ++p)
    {
        now += periodNs;
        EXPECT_TRUE(s.update(now, true));
    }
    EXPECT_NEAR(s.util(), 1024.0, 1.0);
    const double full = s.util();
    now += 32 * periodNs;
    EXPECT_TRUE(s.update(now, false));
    EXPECT_NEAR(s.util(), full / 2, full / 100);
}

TEST(PeltTest, OnlyACrossedPeriodBoundaryDecays)
{
    PeltSignal s;
    EXPECT_FALSE(s.update(periodNs / 2, true));
    EXPECT_EQ(s.util(), 0.0); // util_avg waits for the boundary
    EXPECT_TRUE(s.update(periodNs + 1024, true));
    EXPECT_GT(s.util(), 0.0);
    EXPECT_FALSE(s.update(periodNs + 1500, true)); // within 1024 ns
}

TEST(KernelSchedutilTest, UtilMinSetsTheRequestBeforeTheHeadroom)
{
    sim::Workload w({cpu}, {pinned(sim::TaskSpec::Kind::periodic, 500, 2000)});
    KernelSchedutil model(w, {caps}, {pol::Clamp{512, pol::utilScale}});
    model.advanceTo(200'000);
    // 6.1 clamps util, then adds 25 %, against the nominal frequency.
    EXPECT_EQ(model.requested(0),
              static_cast<std::uint32_t>(1.25 * 512 * caps.nominal / 1024));
    EXPECT_EQ(w.perf(0), model.requested(0));
}

TEST(KernelSchedutilTest, ABusyCpuGoesToNominalAndUtilMaxCapsItToTheFloor)
{
    sim::Workload free({cpu}, {pinned(sim::TaskSpec::Kind::busy, 0, 0)});
    KernelSchedutil unclamped(free, {caps}, {std::nullopt});
    unclamped.advanceTo(300'000);
    EXPECT_EQ(unclamped.requested(0), caps.nominal);

    sim::Workload capped({cpu}, {pinned(sim::TaskSpec::Kind::busy, 0, 0)});
    KernelSchedutil model(capped, {caps}, {pol::Clamp{0, 256}});
    model.advanceTo(300'000);
    EXPECT_EQ(model.requested(0), caps.lowestNonlinear);
}

TEST(KernelSchedutilTest, ChangesKeepTheRateLimitApart)
{
    sim::TaskSpec bursty = pinned(sim::TaskSpec::Kind::bursty, 2000, 10'000);
    sim::Workload w({cpu}, {bursty});
    KernelSchedutilConfig config;
    config.rateLimitUs = 20'000;
    KernelSchedutil model(w, {caps}, {std::nullopt}, config);
    // The writes, seen as the workload's performance changes (each one
    // transition delay after its request).
    std::vector<std::uint64_t> changes;
    std::uint64_t lastWrites = 0;
    for (std::uint64_t t = 100; t <= 2'000'000; t += 100)
    {
        model.advanceTo(t);
        if (w.score().perfWrites != lastWrites)
        {
            lastWrites = w.score().perfWrites;
            changes.push_back(t);
        }
    }
    ASSERT_GT(changes.size(), 10U);
    for (std::size_t i = 1; i < changes.size(); ++i)
    {
        // Sampled every 100 us: a write lands within 100 us before.
        EXPECT_GE(changes[i] - changes[i - 1] + 100, config.rateLimitUs) << i;
    }
}

TEST(KernelSchedutilTest, RefusesUnpinnedTasks)
{
    sim::TaskSpec t = pinned(sim::TaskSpec::Kind::busy, 0, 0);
    t.cpu.reset();
    sim::Workload w({cpu}, {t});
    EXPECT_THROW(KernelSchedutil(w, {caps}, {std::nullopt}),
                 std::invalid_argument);
}

TEST(EvalInputsTest, ExactWindowsLiftTheCeilingWhileUnhintedWorkIsRunnable)
{
    sim::Workload w({cpu}, {pinned(sim::TaskSpec::Kind::busy, 0, 0),
                            pinned(sim::TaskSpec::Kind::periodic, 500, 4000)});
    ExactInput input(w, {pol::Clamp{0, 256}, std::nullopt});
    std::vector<cppcgov::daemon::CpuSample> samples;
    std::vector<cppcgov::daemon::ExactCpu> exact;
    w.advanceTo(1000); // the periodic task ran 0..500 us
    input.take(w, samples, exact);
    EXPECT_EQ(exact[0].clamp, (pol::Clamp{0, pol::utilScale}));
    ASSERT_EQ(exact[0].hints.size(), 1U);
    EXPECT_EQ(exact[0].hints[0].clamp, (pol::Clamp{0, 256}));
    EXPECT_EQ(samples[0].busyUs, 1000U);
    w.advanceTo(2000); // only the spinner
    input.take(w, samples, exact);
    EXPECT_EQ(exact[0].clamp, (pol::Clamp{0, 256}));
}

TEST(EvalInputsTest, ProcfsSeesBusyTimeInTenMillisecondSteps)
{
    sim::Workload w({cpu}, {pinned(sim::TaskSpec::Kind::periodic, 3000, 4000)});
    ProcfsInput input(w, {pol::Clamp{512, pol::utilScale}});
    std::vector<cppcgov::daemon::CpuSample> samples;
    std::vector<cppcgov::daemon::HintSighting> sightings;
    std::uint64_t busyUs = 0;
    std::size_t moved = 0;
    for (std::uint64_t t = 0; t <= 100'000; t += 1000)
    {
        w.advanceTo(t);
        input.take(w, t, samples, sightings);
        EXPECT_EQ(samples[0].busyUs % 10'000, 0U) << t;
        busyUs += samples[0].busyUs;
        moved += samples[0].busyUs != 0 ? 1 : 0;
        for (const cppcgov::daemon::HintSighting& s : sightings)
        {
            EXPECT_EQ(s.cpuTimeUs % 10'000, 0U);
            EXPECT_EQ(s.handle, 1U);
        }
    }
    // 75 % of 100 ms, floored to a step; the counters moved in few ticks.
    EXPECT_EQ(busyUs, 70'000U);
    EXPECT_LE(moved, 10U);
}

} // namespace
} // namespace cppc::bench
