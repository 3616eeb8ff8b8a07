// SPDX-License-Identifier: Apache-2.0
// The tick's pace: which ticks are quiet, watching or active (the daemon's
// own busy time left out by the caller), and when the tick sleeps the idle
// period: after quietTicks quiet ticks in a row, then after every quiet tick
// until an active one, never after a tick that is not quiet.
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

TEST(TickPace, SleepsLongOnlyAfterQuietTicksInARow)
{
    TickPace pace;
    for (std::uint32_t i = 1; i < quietTicks; ++i)
    {
        EXPECT_FALSE(pace.afterTick(TickState::quiet)) << i;
    }
    EXPECT_TRUE(pace.afterTick(TickState::quiet));
    EXPECT_TRUE(pace.settled());
    // Woken, and quiet again: long again at once.
    EXPECT_TRUE(pace.afterTick(TickState::quiet));
}

TEST(TickPace, BeforeItSettlesAnyTickNotQuietStartsTheCountAgain)
{
    for (const TickState busy : {TickState::watching, TickState::active})
    {
        TickPace pace;
        for (std::uint32_t i = 1; i < quietTicks; ++i)
        {
            EXPECT_FALSE(pace.afterTick(TickState::quiet));
        }
        EXPECT_FALSE(pace.afterTick(busy));
        for (std::uint32_t i = 1; i < quietTicks; ++i)
        {
            EXPECT_FALSE(pace.afterTick(TickState::quiet)) << i;
        }
        EXPECT_TRUE(pace.afterTick(TickState::quiet));
    }
}

TEST(TickPace, SettledItWatchesAtThePeriodAndSleepsLongWhenQuietAgain)
{
    TickPace pace;
    for (std::uint32_t i = 0; i < quietTicks; ++i)
    {
        (void)pace.afterTick(TickState::quiet);
    }
    // A task woke it and runs: the period while it does ...
    EXPECT_FALSE(pace.afterTick(TickState::watching));
    EXPECT_FALSE(pace.afterTick(TickState::watching));
    // ... and the long sleep as soon as it is quiet.
    EXPECT_TRUE(pace.afterTick(TickState::quiet));
}

TEST(TickPace, SettledAnActiveTickUnsettlesIt)
{
    TickPace pace;
    for (std::uint32_t i = 0; i < quietTicks; ++i)
    {
        (void)pace.afterTick(TickState::quiet);
    }
    // A burst woke it and the policy wrote: the whole count again.
    EXPECT_FALSE(pace.afterTick(TickState::active));
    EXPECT_FALSE(pace.settled());
    EXPECT_FALSE(pace.afterTick(TickState::quiet));
}

} // namespace
} // namespace cppcgov::daemon
