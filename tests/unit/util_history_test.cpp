// SPDX-License-Identifier: Apache-2.0
// The utilization history behind the headroom query: rings sized for 10 s
// at the period (a longer step when that would be too many entries), that
// wrap without losing order, a tick within its step sharing its entry, a
// tick after a gap filling its steps, and
// windows shorter and longer than what is recorded, with how long they
// cover.
#include "daemon/util_history.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

// Records one entry at `nowUs` where every CPU has `util` plus its index.
void put(UtilHistory& h, std::uint64_t nowUs, std::uint16_t util)
{
    std::vector<std::uint16_t> row(h.cpus());
    for (std::size_t cpu = 0; cpu < row.size(); ++cpu)
    {
        row[cpu] = static_cast<std::uint16_t>(util + cpu);
    }
    h.record(nowUs, row);
}

TEST(UtilHistory, RefusesNoCpusOrNoPeriod)
{
    UtilHistory h;
    EXPECT_THROW(h.reset(0, 1000), std::invalid_argument);
    EXPECT_THROW(h.reset(4, 0), std::invalid_argument);
    h.record(1000, std::vector<std::uint16_t>{5});
    EXPECT_EQ(h.window(1000).count, 0U);
}

TEST(UtilHistory, SizedForTenSecondsAtThePeriod)
{
    UtilHistory h;
    h.reset(4, 1000);
    EXPECT_EQ(h.stepUs(), 1000U);
    EXPECT_EQ(h.capacity(), 10'002U);
    h.reset(2, 4000);
    EXPECT_EQ(h.capacity(), 2502U);
}

TEST(UtilHistory, ManyCpusAtAShortPeriodTakeALongerStep)
{
    UtilHistory h;
    // 10 s at 100 us on 4096 CPUs would be 400 Mi entries.
    h.reset(4096, 100);
    EXPECT_GT(h.stepUs(), 100U);
    EXPECT_LE(h.capacity() * h.cpus(),
              maxHistoryEntries + std::size_t{2} * 4096);
    EXPECT_GE(h.capacity() * h.stepUs(), historySpanUs);
}

TEST(UtilHistory, AWindowShorterThanRecordedTakesTheNewestEntries)
{
    UtilHistory h;
    h.reset(2, 1000);
    for (std::uint64_t t = 1; t <= 100; ++t)
    {
        put(h, t * 1000, static_cast<std::uint16_t>(t));
    }
    const HistoryWindow w = h.window(10'000);
    ASSERT_EQ(w.count, 10U);
    EXPECT_EQ(w.coveredUs, 10'000U);
    // Entries 91..100, oldest first; CPU 1 reads one more.
    EXPECT_EQ(h.at(w, 0, 0), 91);
    EXPECT_EQ(h.at(w, 9, 0), 100);
    EXPECT_EQ(h.at(w, 9, 1), 101);
}

TEST(UtilHistory, AWindowLongerThanRecordedSaysHowLongItCovers)
{
    UtilHistory h;
    h.reset(1, 1000);
    for (std::uint64_t t = 1; t <= 30; ++t)
    {
        put(h, 5'000'000 + t * 1000, 7);
    }
    const HistoryWindow w = h.window(2'000'000);
    EXPECT_EQ(w.count, 30U);
    // Thirty entries of one step each.
    EXPECT_EQ(w.coveredUs, 30'000U);
    EXPECT_EQ(h.at(w, 0, 0), 7);
}

TEST(UtilHistory, RingsWrapAndKeepTheLastTenSeconds)
{
    UtilHistory h;
    h.reset(3, 1000);
    const std::size_t total = h.capacity() * 2 + 123;
    for (std::size_t t = 1; t <= total; ++t)
    {
        put(h, t * 1000, static_cast<std::uint16_t>(t % 1000));
    }
    EXPECT_EQ(h.size(), h.capacity());
    const HistoryWindow all = h.window(historySpanUs);
    EXPECT_EQ(all.count, 10'000U);
    EXPECT_EQ(all.coveredUs, historySpanUs);
    for (std::size_t i = 0; i < all.count; ++i)
    {
        const std::size_t t = total - all.count + 1 + i;
        ASSERT_EQ(h.at(all, i, 0), t % 1000) << i;
        ASSERT_EQ(h.at(all, i, 2), t % 1000 + 2) << i;
    }
    // Longer than the span: all that is held, covering what it covers.
    const HistoryWindow more = h.window(60'000'000);
    EXPECT_EQ(more.count, h.capacity());
    EXPECT_EQ(more.coveredUs, (h.capacity()) * 1000U);
}

TEST(UtilHistory, ATickWithinItsStepSharesTheEntry)
{
    UtilHistory h;
    h.reset(1, 1000);
    put(h, 10'100, 1);
    // A tick late and the next one on time land in one step.
    put(h, 11'950, 2);
    put(h, 11'990, 3);
    put(h, 12'010, 4);
    EXPECT_EQ(h.size(), 3U);
    const HistoryWindow w = h.window(100'000);
    ASSERT_EQ(w.count, 3U);
    EXPECT_EQ(h.at(w, 1, 0), 3);
    EXPECT_EQ(h.at(w, 2, 0), 4);
    // Time going back reuses the newest entry.
    put(h, 5'000, 9);
    EXPECT_EQ(h.size(), 3U);
    EXPECT_EQ(h.at(h.window(100'000), 2, 0), 9);
}

TEST(UtilHistory, ATickAfterAGapStandsForEveryStepOfIt)
{
    UtilHistory h;
    h.reset(1, 1000);
    put(h, 1'000'000, 1);
    put(h, 1'001'000, 2);
    // The tick slept (or stalled) for 300 ms: its value fills each step.
    put(h, 1'301'000, 3);
    const HistoryWindow w = h.window(200'000);
    ASSERT_EQ(w.count, 200U);
    for (std::size_t i = 0; i < w.count; ++i)
    {
        EXPECT_EQ(h.at(w, i, 0), 3) << i;
    }
    EXPECT_EQ(w.coveredUs, 200'000U);
    const HistoryWindow longer = h.window(1'000'000);
    ASSERT_EQ(longer.count, 302U);
    EXPECT_EQ(h.at(longer, 0, 0), 1);
    EXPECT_EQ(h.at(longer, 1, 0), 2);
    EXPECT_EQ(h.at(longer, 2, 0), 3);
    EXPECT_EQ(longer.coveredUs, 302'000U);
}

TEST(UtilHistory, AGapLongerThanTheRingsFillsThemOnce)
{
    UtilHistory h;
    h.reset(1, 1000);
    put(h, 1'000'000, 1);
    put(h, 60'000'000, 7);
    const HistoryWindow w = h.window(historySpanUs);
    ASSERT_GT(w.count, 0U);
    for (std::size_t i = 0; i < w.count; ++i)
    {
        EXPECT_EQ(h.at(w, i, 0), 7) << i;
    }
}

TEST(UtilHistory, BlocksHoldEachCpusPeakAndSum)
{
    UtilHistory h;
    h.reset(2, 1000);
    // Wrap the rings more than once; entry t holds t % 700 and one more.
    const std::size_t total = h.capacity() * 2 + 37;
    for (std::size_t t = 0; t < total; ++t)
    {
        put(h, (t + 1) * 1000, static_cast<std::uint16_t>(t % 700));
    }
    const HistoryWindow w = h.window(historySpanUs);
    std::size_t checked = 0;
    for (std::size_t i = 0; i + blockEntries <= w.count; ++i)
    {
        const std::uint64_t n = h.number(w, i);
        if (n % blockEntries != 0)
        {
            continue;
        }
        std::uint32_t sum = 0;
        std::uint16_t peak = 0;
        for (std::size_t k = 0; k < blockEntries; ++k)
        {
            sum += h.at(w, i + k, 1);
            peak = std::max(peak, h.at(w, i + k, 1));
        }
        ASSERT_EQ(h.blockSum(n / blockEntries, 1), sum) << n;
        ASSERT_EQ(h.blockPeak(n / blockEntries, 1), peak) << n;
        ++checked;
    }
    EXPECT_GE(checked, w.count / blockEntries - 1);
    // Entry numbers count every entry since the reset.
    EXPECT_EQ(h.number(w, w.count - 1), total - 1);
}

TEST(UtilHistory, ValuesAboveTheScaleAndAnOverwrittenEntry)
{
    UtilHistory h;
    h.reset(2, 1000);
    h.record(1000, std::vector<std::uint16_t>{2000, 10});
    // The same step again: the entry takes the new values, its block the
    // new sum and the larger peak.
    h.record(1500, std::vector<std::uint16_t>{100});
    const HistoryWindow w = h.window(1'000'000);
    ASSERT_EQ(w.count, 1U);
    EXPECT_EQ(h.at(w, 0, 0), 100);
    EXPECT_EQ(h.at(w, 0, 1), 0);
    EXPECT_EQ(h.blockSum(0, 0), 100U);
    EXPECT_EQ(h.blockPeak(0, 0), 1024);
    EXPECT_EQ(h.blockSum(0, 1), 0U);
}

TEST(UtilHistory, ResetEmptiesIt)
{
    UtilHistory h;
    h.reset(2, 1000);
    put(h, 1000, 5);
    h.reset(2, 2000);
    EXPECT_EQ(h.size(), 0U);
    EXPECT_EQ(h.window(1'000'000).count, 0U);
}

TEST(UtilHistory, AZeroWindowOrAnEntryAtTimeZeroGivesNothing)
{
    UtilHistory h;
    h.reset(1, 1000);
    put(h, 0, 5);
    EXPECT_EQ(h.window(50'000).count, 0U);
    put(h, 50'000, 6);
    EXPECT_EQ(h.window(0).count, 0U);
    // The second entry stands for the 50 steps after the first.
    const HistoryWindow w = h.window(50'000);
    ASSERT_EQ(w.count, 50U);
    EXPECT_EQ(h.at(w, 0, 0), 6);
    EXPECT_EQ(h.at(w, 49, 0), 6);
    EXPECT_EQ(w.coveredUs, 50'000U);
}

} // namespace
} // namespace cppcgov::daemon
