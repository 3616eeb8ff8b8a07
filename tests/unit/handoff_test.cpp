// SPDX-License-Identifier: Apache-2.0
// The wait-free hand-offs between the D-Bus thread and the tick's:
// LatestValue (the newest whole state), RowRing (rows in order, refused
// when full) and RecentValues (percentiles of what one thread adds).
#include "daemon/latest_value.hpp"
#include "daemon/recent_values.hpp"
#include "daemon/row_ring.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

TEST(LatestValue, TheReaderSeesTheInitialValueUntilAPublish)
{
    LatestValue<int> v(7);
    EXPECT_FALSE(v.refresh());
    EXPECT_EQ(v.front(), 7);
    v.back() = 8;
    v.publish();
    EXPECT_TRUE(v.refresh());
    EXPECT_EQ(v.front(), 8);
    EXPECT_FALSE(v.refresh());
    EXPECT_EQ(v.front(), 8);
}

TEST(LatestValue, OnlyTheNewestOfSeveralPublishesIsTaken)
{
    LatestValue<int> v(0);
    for (int i = 1; i <= 5; ++i)
    {
        v.back() = i;
        v.publish();
    }
    EXPECT_TRUE(v.refresh());
    EXPECT_EQ(v.front(), 5);
}

TEST(LatestValue, TheWriterNeverGetsTheSlotTheReaderHolds)
{
    LatestValue<int> v(0);
    v.back() = 1;
    v.publish();
    ASSERT_TRUE(v.refresh());
    // Whatever the writer does now, front() stays the value taken.
    for (int i = 2; i < 10; ++i)
    {
        v.back() = -1;
        EXPECT_EQ(v.front(), 1);
        v.back() = i;
        v.publish();
        EXPECT_EQ(v.front(), 1);
    }
    ASSERT_TRUE(v.refresh());
    EXPECT_EQ(v.front(), 9);
}

// Two threads: every value the reader sees is whole (all its words from
// one publish) and never older than one it saw before.
TEST(LatestValue, AcrossThreadsEveryValueIsWholeAndNewer)
{
    using Words = std::array<std::uint64_t, 64>;
    LatestValue<Words> v(Words{});
    constexpr std::uint64_t last = 200'000;
    std::thread writer([&v]() {
        for (std::uint64_t n = 1; n <= last; ++n)
        {
            v.back().fill(n);
            v.publish();
        }
    });
    std::uint64_t seen = 0;
    std::uint64_t torn = 0;
    std::uint64_t backwards = 0;
    while (seen != last)
    {
        if (!v.refresh())
        {
            continue;
        }
        const Words& w = v.front();
        for (const std::uint64_t word : w)
        {
            torn += word != w[0] ? 1 : 0;
        }
        backwards += w[0] < seen ? 1 : 0;
        seen = w[0];
    }
    writer.join();
    EXPECT_EQ(torn, 0U);
    EXPECT_EQ(backwards, 0U);
}

TEST(RowRing, RowsComeOutInOrderAndPaddedToTheWidth)
{
    RowRing ring(4, 3);
    const std::vector<std::uint16_t> a{1, 2, 3};
    const std::vector<std::uint16_t> shortRow{9};
    EXPECT_TRUE(ring.push(10, a));
    EXPECT_TRUE(ring.push(20, shortRow));
    std::vector<std::uint64_t> stamps;
    std::vector<std::vector<std::uint16_t>> rows;
    EXPECT_EQ(
        ring.drain([&](std::uint64_t s, std::span<const std::uint16_t> r) {
            stamps.push_back(s);
            rows.emplace_back(r.begin(), r.end());
        }),
        2U);
    EXPECT_EQ(stamps, (std::vector<std::uint64_t>{10, 20}));
    EXPECT_EQ(rows[0], a);
    EXPECT_EQ(rows[1], (std::vector<std::uint16_t>{9, 0, 0}));
    EXPECT_EQ(ring.drain([](auto, auto) {}), 0U);
}

TEST(RowRing, AFullRingRefusesAndCountsWithoutOverwriting)
{
    RowRing ring(2, 1);
    const std::vector<std::uint16_t> row{5};
    EXPECT_TRUE(ring.push(1, row));
    EXPECT_TRUE(ring.push(2, row));
    EXPECT_FALSE(ring.push(3, row));
    EXPECT_EQ(ring.dropped(), 1U);
    std::vector<std::uint64_t> stamps;
    (void)ring.drain([&](std::uint64_t s, auto) { stamps.push_back(s); });
    EXPECT_EQ(stamps, (std::vector<std::uint64_t>{1, 2}));
    EXPECT_TRUE(ring.push(4, row));
}

TEST(RowRing, AcrossThreadsNothingIsLostOrReordered)
{
    RowRing ring(64, 8);
    constexpr std::uint64_t rows = 100'000;
    std::thread writer([&ring]() {
        std::array<std::uint16_t, 8> row{};
        for (std::uint64_t n = 1; n <= rows;)
        {
            row.fill(static_cast<std::uint16_t>(n));
            if (ring.push(n, row))
            {
                ++n;
            }
        }
    });
    std::uint64_t next = 1;
    std::uint64_t wrong = 0;
    while (next <= rows)
    {
        (void)ring.drain(
            [&](std::uint64_t stamp, std::span<const std::uint16_t> row) {
            wrong += stamp != next ? 1 : 0;
            for (const std::uint16_t v : row)
            {
                wrong += v != static_cast<std::uint16_t>(stamp) ? 1 : 0;
            }
            next = stamp + 1;
        });
    }
    writer.join();
    EXPECT_EQ(wrong, 0U);
}

TEST(RecentValues, PercentilesOfTheLastValuesKept)
{
    RecentValues r(4);
    EXPECT_EQ(r.percentile(50), 0U);
    for (const std::uint64_t v : {100U, 1U, 2U, 3U, 4U})
    {
        r.add(v);
    }
    // 100 fell out of the ring of four.
    EXPECT_EQ(r.percentile(0), 1U);
    EXPECT_EQ(r.percentile(100), 4U);
    EXPECT_EQ(r.percentile(50), 3U);
}

} // namespace
} // namespace cppcgov::daemon
