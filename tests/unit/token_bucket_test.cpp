// SPDX-License-Identifier: Apache-2.0
// The token bucket behind the daemon's call rates: a burst of the rate, an
// exact refill per microsecond, no refill when time goes backwards, rate 0
// as unlimited, and a rate change that caps the tokens left.
#include "daemon/token_bucket.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

// How many take() calls succeed at `nowUs` before one is refused (at most
// `limit`, to stop on an unlimited bucket).
unsigned drain(TokenBucket& bucket, std::uint64_t nowUs, unsigned limit = 1000)
{
    unsigned taken = 0;
    while (taken < limit && bucket.take(nowUs))
    {
        ++taken;
    }
    return taken;
}

TEST(TokenBucket, StartsFullWithABurstOfTheRate)
{
    TokenBucket bucket(5);
    EXPECT_EQ(bucket.rate(), 5U);
    EXPECT_EQ(drain(bucket, 1'000'000), 5U);
    EXPECT_FALSE(bucket.take(1'000'000));
}

TEST(TokenBucket, FirstTakeFindsItFullWhateverTheTime)
{
    TokenBucket early(3);
    EXPECT_EQ(drain(early, 0), 3U);
    TokenBucket late(3);
    EXPECT_EQ(drain(late, std::numeric_limits<std::uint64_t>::max() / 2), 3U);
}

TEST(TokenBucket, RefillsExactlyPerMicrosecond)
{
    // 3 calls per second: a token every 333333.33 us, exactly 3 millionths
    // of a call per microsecond.
    TokenBucket bucket(3);
    ASSERT_EQ(drain(bucket, 0), 3U);
    // 333333 us give 999999 millionths: not a whole call yet.
    EXPECT_FALSE(bucket.take(333'333));
    // One more microsecond completes it (a refused call took nothing).
    EXPECT_TRUE(bucket.take(333'334));
    EXPECT_FALSE(bucket.take(333'334));

    // A whole second gives exactly the rate, with no rounding lost over
    // many seconds.
    TokenBucket steady(7);
    ASSERT_EQ(drain(steady, 0), 7U);
    unsigned total = 0;
    for (std::uint64_t s = 1; s <= 100; ++s)
    {
        total += drain(steady, s * 1'000'000);
    }
    EXPECT_EQ(total, 700U);

    // Refilling in small steps adds up as one step would: 1 call per second
    // taken as 1'000'000 one-microsecond refills.
    TokenBucket slow(1);
    ASSERT_TRUE(slow.take(10));
    for (std::uint64_t t = 11; t < 1'000'010; ++t)
    {
        ASSERT_FALSE(slow.take(t)) << t;
    }
    EXPECT_TRUE(slow.take(1'000'010));
}

TEST(TokenBucket, ALongPauseRefillsOnlyTheBurst)
{
    TokenBucket bucket(2);
    ASSERT_EQ(drain(bucket, 0), 2U);
    EXPECT_EQ(drain(bucket, 3'600'000'000ULL), 2U);
    // Even across a jump that would overflow a naive product.
    EXPECT_EQ(drain(bucket, std::numeric_limits<std::uint64_t>::max()), 2U);
}

TEST(TokenBucket, TimeGoingBackwardsGivesNothing)
{
    TokenBucket bucket(2);
    ASSERT_EQ(drain(bucket, 5'000'000), 2U);
    EXPECT_FALSE(bucket.take(0));
    // Nor does it move the reference point back: half a second after the
    // last take gives one token.
    EXPECT_FALSE(bucket.take(5'499'999));
    EXPECT_TRUE(bucket.take(5'500'000));
}

TEST(TokenBucket, RateZeroIsUnlimited)
{
    TokenBucket bucket(0);
    EXPECT_EQ(bucket.rate(), 0U);
    EXPECT_EQ(drain(bucket, 0, 100'000), 100'000U);
    TokenBucket byDefault;
    EXPECT_EQ(drain(byDefault, 0, 100'000), 100'000U);
}

TEST(TokenBucket, SetRateCapsTheTokensAtTheNewBurst)
{
    TokenBucket bucket(10);
    ASSERT_TRUE(bucket.take(1'000'000)); // full: 9 left
    bucket.setRate(2);
    EXPECT_EQ(bucket.rate(), 2U);
    EXPECT_EQ(drain(bucket, 1'000'000), 2U);
    // It refills at the new rate: a token per half second.
    EXPECT_FALSE(bucket.take(1'499'999));
    EXPECT_TRUE(bucket.take(1'500'000));
}

TEST(TokenBucket, SetRateHigherKeepsTheTokensAndRefillsToTheNewBurst)
{
    TokenBucket bucket(2);
    ASSERT_EQ(drain(bucket, 0), 2U);
    bucket.setRate(4);
    // Nothing added by the change itself.
    EXPECT_FALSE(bucket.take(0));
    // A quarter second at 4 per second is one call.
    EXPECT_TRUE(bucket.take(250'000));
    EXPECT_FALSE(bucket.take(250'000));
    // A second refills the new burst.
    EXPECT_EQ(drain(bucket, 1'250'000), 4U);
}

TEST(TokenBucket, UnlimitedAndBack)
{
    TokenBucket bucket(2);
    ASSERT_EQ(drain(bucket, 0), 2U);
    bucket.setRate(0);
    EXPECT_EQ(drain(bucket, 0, 50), 50U);
    // Limited again: calls taken while unlimited cost nothing, the time
    // since the last limited take refills at the new rate.
    bucket.setRate(2);
    EXPECT_FALSE(bucket.take(0));
    EXPECT_TRUE(bucket.take(500'000));
    EXPECT_FALSE(bucket.take(500'000));

    // A bucket unlimited from the start begins full when limited.
    TokenBucket later(0);
    EXPECT_TRUE(later.take(0));
    later.setRate(3);
    EXPECT_EQ(drain(later, 7), 3U);
}

} // namespace
} // namespace cppcgov::daemon
