// SPDX-License-Identifier: Apache-2.0
// The headroom calculation on constructed histories: a CPU's headroom from
// its utilization, the minimum and the average over a window exact, the
// set's weighted by capacity (the lowest moment of the set, not the lowest
// CPU), a window longer than what is recorded, and an empty history.
#include "daemon/headroom.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

// A history of 2 CPUs with one entry per millisecond: cpu0[i], cpu1[i].
UtilHistory twoCpus(const std::vector<std::uint16_t>& cpu0,
                    const std::vector<std::uint16_t>& cpu1)
{
    UtilHistory h;
    h.reset(2, 1000);
    for (std::size_t i = 0; i < cpu0.size(); ++i)
    {
        const std::vector<std::uint16_t> row{cpu0[i], cpu1[i]};
        h.record(1'000'000 + i * 1000, row);
    }
    return h;
}

TEST(Headroom, ACpusHeadroomIsItsSpareShare)
{
    EXPECT_DOUBLE_EQ(headroomOf(0), 100.0);
    EXPECT_DOUBLE_EQ(headroomOf(256), 75.0);
    EXPECT_DOUBLE_EQ(headroomOf(1024), 0.0);
    EXPECT_DOUBLE_EQ(headroomOf(2000), 0.0);
}

TEST(Headroom, CalculationsByName)
{
    EXPECT_EQ(parseHeadroomCalculation("min"), HeadroomCalculation::min);
    EXPECT_EQ(parseHeadroomCalculation("average"),
              HeadroomCalculation::average);
    EXPECT_FALSE(parseHeadroomCalculation("max"));
    EXPECT_FALSE(parseHeadroomCalculation("Min"));
    EXPECT_FALSE(parseHeadroomCalculation(""));
}

TEST(Headroom, MinAndAverageAreExact)
{
    // cpu0: 0, 512, 256, 768 -> headroom 100, 50, 75, 25.
    const UtilHistory h = twoCpus({0, 512, 256, 768}, {1024, 1024, 0, 0});
    const std::vector<std::uint32_t> cpu0{0};
    const std::vector<std::uint32_t> caps{100, 100};
    const HeadroomResult min =
        headroom(h, cpu0, caps, 4000, HeadroomCalculation::min);
    EXPECT_EQ(min.entries, 4U);
    EXPECT_EQ(min.coveredUs, 4000U);
    EXPECT_DOUBLE_EQ(min.headroom, 25.0);
    ASSERT_EQ(min.cpus.size(), 1U);
    EXPECT_DOUBLE_EQ(min.cpus[0].headroom, 25.0);
    const HeadroomResult avg =
        headroom(h, cpu0, caps, 4000, HeadroomCalculation::average);
    EXPECT_DOUBLE_EQ(avg.headroom, 62.5);
    EXPECT_DOUBLE_EQ(avg.cpus[0].headroom, 62.5);
}

TEST(Headroom, TheWindowTakesOnlyTheNewestEntries)
{
    const UtilHistory h = twoCpus({1024, 1024, 0, 512}, {0, 0, 0, 0});
    const std::vector<std::uint32_t> cpu0{0};
    const std::vector<std::uint32_t> caps{1, 1};
    // The last two entries: headroom 100 and 50.
    const HeadroomResult r =
        headroom(h, cpu0, caps, 2000, HeadroomCalculation::average);
    EXPECT_EQ(r.entries, 2U);
    EXPECT_DOUBLE_EQ(r.headroom, 75.0);
    EXPECT_DOUBLE_EQ(
        headroom(h, cpu0, caps, 2000, HeadroomCalculation::min).headroom, 50.0);
    // Longer than recorded: all four, and says so.
    const HeadroomResult all =
        headroom(h, cpu0, caps, 10'000'000, HeadroomCalculation::average);
    EXPECT_EQ(all.entries, 4U);
    EXPECT_EQ(all.coveredUs, 4000U);
    EXPECT_DOUBLE_EQ(all.headroom, 37.5);
}

TEST(Headroom, TheSetIsWeightedByCapacityAndItsMinIsItsLowestMoment)
{
    // The two CPUs take turns being full: each CPU's minimum is 0, but
    // the set always had half (equal capacities) of its capacity spare.
    const UtilHistory h = twoCpus({1024, 0, 1024, 0}, {0, 1024, 0, 1024});
    const std::vector<std::uint32_t> both{0, 1};
    const HeadroomResult even =
        headroom(h, both, std::vector<std::uint32_t>{300, 300}, 4000,
                 HeadroomCalculation::min);
    EXPECT_DOUBLE_EQ(even.headroom, 50.0);
    ASSERT_EQ(even.cpus.size(), 2U);
    EXPECT_EQ(even.cpus[0].cpu, 0U);
    EXPECT_EQ(even.cpus[1].cpu, 1U);
    EXPECT_DOUBLE_EQ(even.cpus[0].headroom, 0.0);
    EXPECT_DOUBLE_EQ(even.cpus[1].headroom, 0.0);
    // CPU 1 with three times CPU 0's capacity: when CPU 0 is full, 3/4
    // of the set is spare; when CPU 1 is, 1/4.
    const std::vector<std::uint32_t> caps{100, 300};
    EXPECT_DOUBLE_EQ(
        headroom(h, both, caps, 4000, HeadroomCalculation::min).headroom, 25.0);
    EXPECT_DOUBLE_EQ(
        headroom(h, both, caps, 4000, HeadroomCalculation::average).headroom,
        50.0);
}

TEST(Headroom, NoCapacityKnownWeighsEvenly)
{
    const UtilHistory h = twoCpus({1024}, {0});
    const std::vector<std::uint32_t> both{1, 0};
    const HeadroomResult r = headroom(h, both, std::vector<std::uint32_t>{0, 0},
                                      1000, HeadroomCalculation::average);
    EXPECT_DOUBLE_EQ(r.headroom, 50.0);
    // In the order asked.
    EXPECT_EQ(r.cpus[0].cpu, 1U);
    EXPECT_DOUBLE_EQ(r.cpus[0].headroom, 100.0);
    EXPECT_DOUBLE_EQ(r.cpus[1].headroom, 0.0);
}

TEST(Headroom, NothingRecordedGivesNoEntries)
{
    UtilHistory h;
    h.reset(2, 1000);
    const std::vector<std::uint32_t> cpu0{0};
    const HeadroomResult r = headroom(h, cpu0, std::vector<std::uint32_t>{1, 1},
                                      50'000, HeadroomCalculation::min);
    EXPECT_EQ(r.entries, 0U);
    EXPECT_EQ(r.coveredUs, 0U);
    EXPECT_DOUBLE_EQ(r.headroom, 0.0);
    ASSERT_EQ(r.cpus.size(), 1U);
}

// 64 CPUs over 10 s at 1 ms: more values than a query reads one by one.
UtilHistory manyCpus()
{
    UtilHistory h;
    h.reset(64, 1000);
    std::vector<std::uint16_t> row(64);
    for (std::uint64_t t = 0; t < 12'345; ++t)
    {
        for (std::size_t cpu = 0; cpu < row.size(); ++cpu)
        {
            // Each CPU its own pattern, peaks at different ticks.
            row[cpu] =
                static_cast<std::uint16_t>((t * (cpu + 3) + cpu * 7) % 1025);
        }
        h.record(1'000'000 + t * 1000, row);
    }
    return h;
}

TEST(Headroom, ALongWindowOverManyCpusReadsBlocksAndStaysExactWhereItCan)
{
    const UtilHistory h = manyCpus();
    std::vector<std::uint32_t> all(64);
    for (std::uint32_t cpu = 0; cpu < 64; ++cpu)
    {
        all[cpu] = cpu;
    }
    const std::vector<std::uint32_t> caps(64, 1000);
    const std::uint64_t window = 9'999'000; // not aligned to a block
    for (const auto calc :
         {HeadroomCalculation::min, HeadroomCalculation::average})
    {
        const HeadroomResult set = headroom(h, all, caps, window, calc);
        ASSERT_TRUE(set.byBlock);
        double mean = 0;
        for (std::uint32_t cpu = 0; cpu < 64; ++cpu)
        {
            // One CPU alone is read one by one: the same value.
            const std::vector<std::uint32_t> one{cpu};
            const HeadroomResult alone = headroom(h, one, caps, window, calc);
            ASSERT_FALSE(alone.byBlock);
            ASSERT_DOUBLE_EQ(set.cpus[cpu].headroom, alone.headroom) << cpu;
            mean += alone.headroom / 64;
        }
        // The set's minimum, tick by tick, as the exact reading gives it.
        const HistoryWindow w = h.window(window);
        double exactMin = 100;
        for (std::size_t i = 0; i < w.count; ++i)
        {
            double spare = 0;
            for (std::uint32_t cpu = 0; cpu < 64; ++cpu)
            {
                spare += headroomOf(h.at(w, i, cpu)) / 64;
            }
            exactMin = std::min(exactMin, spare);
        }
        if (calc == HeadroomCalculation::average)
        {
            EXPECT_NEAR(set.headroom, mean, 1e-9);
        }
        else
        {
            // Never more than there was.
            EXPECT_LE(set.headroom, exactMin + 1e-9);
            EXPECT_GE(set.headroom, 0.0);
        }
    }
}

TEST(Headroom, BlocksOfSteadyLoadGiveTheExactMinimum)
{
    UtilHistory h;
    h.reset(64, 1000);
    std::vector<std::uint16_t> row(64);
    for (std::uint64_t t = 0; t < 10'000; ++t)
    {
        // Every CPU steady through each block of 16 ticks.
        for (std::size_t cpu = 0; cpu < row.size(); ++cpu)
        {
            row[cpu] = static_cast<std::uint16_t>(((t / 16) * 37 + cpu) % 900);
        }
        h.record(1'000'000 + t * 1000, row);
    }
    std::vector<std::uint32_t> all(64);
    for (std::uint32_t cpu = 0; cpu < 64; ++cpu)
    {
        all[cpu] = cpu;
    }
    const HeadroomResult r = headroom(h, all, std::vector<std::uint32_t>(64, 1),
                                      3'000'000, HeadroomCalculation::min);
    ASSERT_TRUE(r.byBlock);
    const HistoryWindow w = h.window(3'000'000);
    double exactMin = 100;
    for (std::size_t i = 0; i < w.count; ++i)
    {
        double used = 0;
        for (std::uint32_t cpu = 0; cpu < 64; ++cpu)
        {
            used += h.at(w, i, cpu);
        }
        exactMin = std::min(exactMin, 100.0 - used / 64 * 100.0 / 1024.0);
    }
    EXPECT_NEAR(r.headroom, exactMin, 1e-9);
}

} // namespace
} // namespace cppcgov::daemon
