// SPDX-License-Identifier: Apache-2.0
// The AutonomousActivityWindow encoding: significand x 10^exponent us.
#include "lib/activity_window.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace cppc
{
namespace
{

TEST(ActivityWindowTest, BitsAreSignificandThenExponent)
{
    EXPECT_EQ(decodeActivityWindow(0), 0U);
    EXPECT_EQ(decodeActivityWindow(127), 127U);
    EXPECT_EQ(decodeActivityWindow((1U << 7) | 1U), 10U);
    EXPECT_EQ(decodeActivityWindow((3U << 7) | 5U), 5000U);
    EXPECT_EQ(decodeActivityWindow((7U << 7) | 127U), 1'270'000'000U);
    // Bits above the 10-bit field are not the window's.
    EXPECT_EQ(decodeActivityWindow((1U << 10) | 12U), 12U);
}

TEST(ActivityWindowTest, EveryRegisterValueRoundTrips)
{
    for (std::uint32_t v = 0; v < (1U << activityWindowBits); ++v)
    {
        const std::uint64_t us = decodeActivityWindow(v);
        const std::optional<std::uint16_t> again = encodeActivityWindow(us);
        ASSERT_TRUE(again) << v;
        EXPECT_EQ(decodeActivityWindow(*again), us) << v;
        EXPECT_LT(*again, 1U << activityWindowBits);
    }
}

TEST(ActivityWindowTest, EncodesWithTheSmallestExponentAndRounds)
{
    EXPECT_EQ(encodeActivityWindow(0), 0U);
    EXPECT_EQ(encodeActivityWindow(127), 127U);
    EXPECT_EQ(encodeActivityWindow(128), (1U << 7) | 13U); // 130 us
    EXPECT_EQ(encodeActivityWindow(1234), (1U << 7) | 123U);
    EXPECT_EQ(encodeActivityWindow(1235), (1U << 7) | 124U);
    EXPECT_EQ(encodeActivityWindow(10'000), (2U << 7) | 100U);
    EXPECT_EQ(encodeActivityWindow(1'270'000'000), (7U << 7) | 127U);
}

TEST(ActivityWindowTest, AnyWindowInRangeIsWithinTheRegistersPrecision)
{
    for (std::uint64_t us = 1; us <= activityWindowMaxUs; us = us * 3 + 7)
    {
        const std::optional<std::uint16_t> v = encodeActivityWindow(us);
        ASSERT_TRUE(v) << us;
        const std::uint64_t back = decodeActivityWindow(*v);
        const std::uint64_t error = back > us ? back - us : us - back;
        // Half a step of the significand, and a step is under 1/12.7 of
        // the window once the exponent is above 0.
        EXPECT_LE(error * 25, us) << us;
    }
}

TEST(ActivityWindowTest, WindowsBeyondTheRegisterAreRefused)
{
    EXPECT_FALSE(encodeActivityWindow(activityWindowMaxUs + 1));
    EXPECT_FALSE(
        encodeActivityWindow(std::numeric_limits<std::uint32_t>::max()));
    EXPECT_FALSE(
        encodeActivityWindow(std::numeric_limits<std::uint64_t>::max()));
}

} // namespace
} // namespace cppc
