// SPDX-License-Identifier: Apache-2.0
// The tick's pace: which ticks are quiet, watching or active (the daemon's
// own busy time left out by the caller), and which sleep follows: the idle
// period after quietTicks quiet ticks in a row, then after every quiet tick
// until an active one; the steady period after steadyTicks ticks in a row
// without a write, counted again from a wake-up out of the idle sleep; the
// period otherwise.
#include "daemon/tick_pace.hpp"

#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

// Each CPU's busy fraction without the daemon's threads.
using Busy = std::vector<std::uint16_t>;
constexpr auto justAbove = static_cast<std::uint16_t>(quietBusy + 1);

TEST(TickState, IdleCpusNothingWrittenNobodyRunningIsQuiet)
{
    EXPECT_EQ(tickState(Busy{0, quietBusy}, 0, false), TickState::quiet);
    EXPECT_EQ(tickState({}, 0, false), TickState::quiet);
}

TEST(TickState, ARunningTaskOrABusyCpuIsWatched)
{
    EXPECT_EQ(tickState(Busy{0, justAbove}, 0, false), TickState::watching);
    EXPECT_EQ(tickState(Busy{0, 0}, 0, true), TickState::watching);
}

TEST(TickState, AWriteIsActiveWhateverElse)
{
    EXPECT_EQ(tickState(Busy{0, 0}, 1, false), TickState::active);
    EXPECT_EQ(tickState(Busy{1024, 0}, 2, true), TickState::active);
}

TEST(TickPace, SleepsIdleOnlyAfterQuietTicksInARow)
{
    TickPace pace;
    for (std::uint32_t i = 1; i < quietTicks; ++i)
    {
        EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::period) << i;
    }
    EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::idle);
    EXPECT_TRUE(pace.settled());
    // Woken, and quiet again: idle again at once.
    pace.woken();
    EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::idle);
}

TEST(TickPace, BeforeItSettlesAnyTickNotQuietStartsTheQuietCountAgain)
{
    for (const TickState busy : {TickState::watching, TickState::active})
    {
        TickPace pace;
        for (std::uint32_t i = 1; i < quietTicks; ++i)
        {
            EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::period);
        }
        EXPECT_NE(pace.afterTick(busy), TickSleep::idle);
        for (std::uint32_t i = 1; i < quietTicks; ++i)
        {
            EXPECT_NE(pace.afterTick(TickState::quiet), TickSleep::idle) << i;
        }
        EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::idle);
    }
}

TEST(TickPace, SettledAndWokenItWatchesAtThePeriodAndSleepsIdleWhenQuiet)
{
    TickPace pace;
    for (std::uint32_t i = 0; i < quietTicks; ++i)
    {
        (void)pace.afterTick(TickState::quiet);
    }
    // A task woke it and runs: the period while it does ...
    pace.woken();
    EXPECT_FALSE(pace.calm());
    EXPECT_EQ(pace.afterTick(TickState::watching), TickSleep::period);
    EXPECT_EQ(pace.afterTick(TickState::watching), TickSleep::period);
    // ... and the idle sleep as soon as it is quiet.
    EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::idle);
}

TEST(TickPace, SettledAnActiveTickUnsettlesIt)
{
    TickPace pace;
    for (std::uint32_t i = 0; i < quietTicks; ++i)
    {
        (void)pace.afterTick(TickState::quiet);
    }
    // A burst woke it and the policy wrote: the whole count again.
    EXPECT_EQ(pace.afterTick(TickState::active), TickSleep::period);
    EXPECT_FALSE(pace.settled());
    EXPECT_FALSE(pace.calm());
    EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::period);
}

TEST(TickPace, TicksWithoutAWriteUnderLoadSleepSteadyUntilOneWrites)
{
    TickPace pace;
    for (std::uint32_t i = 1; i < steadyTicks; ++i)
    {
        EXPECT_EQ(pace.afterTick(TickState::watching), TickSleep::period) << i;
    }
    EXPECT_EQ(pace.afterTick(TickState::watching), TickSleep::steady);
    EXPECT_TRUE(pace.calm());
    EXPECT_EQ(pace.afterTick(TickState::watching), TickSleep::steady);
    // The load ends: steady until the quiet count settles, then idle.
    for (std::uint32_t i = 1; i < quietTicks; ++i)
    {
        EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::steady) << i;
    }
    EXPECT_EQ(pace.afterTick(TickState::quiet), TickSleep::idle);
    // A load that needs a write: the period, and the whole count again.
    EXPECT_EQ(pace.afterTick(TickState::active), TickSleep::period);
    for (std::uint32_t i = 1; i < steadyTicks; ++i)
    {
        EXPECT_EQ(pace.afterTick(TickState::watching), TickSleep::period) << i;
    }
    EXPECT_EQ(pace.afterTick(TickState::watching), TickSleep::steady);
}

} // namespace
} // namespace cppcgov::daemon
