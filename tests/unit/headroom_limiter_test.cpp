// SPDX-License-Identifier: Apache-2.0
// How often the headroom query may be asked: once per interval per
// connection with the time left to wait, a user's rate over all of its
// connections (fresh connections gain nothing), refusals that leave no
// trace, and state that is forgotten once it no longer limits.
#include "daemon/headroom_limiter.hpp"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

TEST(HeadroomLimiter, OncePerIntervalPerConnection)
{
    HeadroomLimiter limiter(1'000'000, 10);
    EXPECT_TRUE(limiter.admit(":1.1", 1000, 5'000'000).admitted);
    const HeadroomVerdict again = limiter.admit(":1.1", 1000, 5'300'000);
    EXPECT_FALSE(again.admitted);
    EXPECT_FALSE(again.byUser);
    EXPECT_EQ(again.retryInUs, 700'000U);
    // Another connection is not held back by this one's interval.
    EXPECT_TRUE(limiter.admit(":1.2", 1000, 5'300'000).admitted);
    // The refusal did not restart the interval.
    EXPECT_TRUE(limiter.admit(":1.1", 1000, 6'000'000).admitted);
}

TEST(HeadroomLimiter, FreshConnectionsMeetTheUsersRate)
{
    HeadroomLimiter limiter(1'000'000, 3);
    unsigned admitted = 0;
    HeadroomVerdict last;
    for (int n = 0; n < 20; ++n)
    {
        last = limiter.admit(":1." + std::to_string(n), 1000, 1'000'000);
        admitted += last.admitted ? 1 : 0;
    }
    EXPECT_EQ(admitted, 3U);
    EXPECT_TRUE(last.byUser);
    EXPECT_EQ(last.retryInUs, 333'334U);
    // Another user has its own bucket.
    EXPECT_TRUE(limiter.admit(":1.99", 1001, 1'000'000).admitted);
    // A refused call by rate took no interval: that connection may call
    // once a token has come back.
    EXPECT_TRUE(limiter.admit(":1.19", 1000, 1'400'000).admitted);
}

TEST(HeadroomLimiter, ForgetsWhatNoLongerLimits)
{
    HeadroomLimiter limiter(1'000'000, 1000);
    for (int n = 0; n < 200; ++n)
    {
        ASSERT_TRUE(limiter
                        .admit(":1." + std::to_string(n),
                               static_cast<uid_t>(n % 7), 1'000'000)
                        .admitted);
    }
    EXPECT_GE(limiter.connections(), 100U);
    // Two seconds on, the next calls sweep them away.
    for (int n = 0; n < 70; ++n)
    {
        ASSERT_TRUE(
            limiter.admit(":2." + std::to_string(n), 5, 3'000'000).admitted);
    }
    EXPECT_LE(limiter.connections(), 70U);
    EXPECT_EQ(limiter.users(), 1U);
}

TEST(HeadroomLimiter, TimeGoingBackHoldsNoConnectionForever)
{
    HeadroomLimiter limiter(1'000'000, 0);
    EXPECT_TRUE(limiter.admit(":1.1", 0, 5'000'000).admitted);
    // An earlier time is not inside the interval: admitted.
    EXPECT_TRUE(limiter.admit(":1.1", 0, 4'000'000).admitted);
    // A user rate of 0 is unlimited.
    for (int n = 0; n < 100; ++n)
    {
        ASSERT_TRUE(
            limiter.admit(":3." + std::to_string(n), 0, 4'000'000).admitted);
    }
}

} // namespace
} // namespace cppcgov::daemon
