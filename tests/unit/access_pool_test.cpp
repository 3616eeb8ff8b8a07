// SPDX-License-Identifier: Apache-2.0
// The access pool: accesses of different slots run at the same time, one
// per slot at most, within the thread limit; without threads they run on
// the caller's; stop() drops what has not started, and waitIdle() is
// bounded by its deadline while an access hangs. Blocking is made with
// latches the test opens, never with timing.
#include "lib/backend/access_pool.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// Accesses that block until the test opens the gate, counting how many
// are inside at once.
class Gate
{
  public:
    void pass()
    {
        std::unique_lock lock(mutex_);
        ++inside_;
        most_ = std::max(most_, inside_);
        changed_.notify_all();
        changed_.wait(lock, [this] { return open_; });
        --inside_;
        ++passed_;
        changed_.notify_all();
    }
    void open()
    {
        const std::lock_guard lock(mutex_);
        open_ = true;
        changed_.notify_all();
    }
    // Waits (up to 10 s, a test failure then) for `n` inside at once.
    bool waitInside(std::size_t n)
    {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, 10s, [&] { return inside_ >= n; });
    }
    bool waitPassed(std::size_t n)
    {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, 10s, [&] { return passed_ >= n; });
    }
    std::size_t most()
    {
        const std::lock_guard lock(mutex_);
        return most_;
    }

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool open_ = false;
    std::size_t inside_ = 0;
    std::size_t most_ = 0;
    std::size_t passed_ = 0;
};

// Collects until `n` slots came back, waiting for them (up to 10 s).
std::vector<std::size_t> collectAll(AccessPool& pool, std::size_t n)
{
    std::vector<std::size_t> done;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (done.size() < n && std::chrono::steady_clock::now() < until)
    {
        pool.collect([&](std::size_t slot) { done.push_back(slot); });
        if (done.size() < n)
        {
            (void)pool.waitIdle(std::chrono::steady_clock::now() + 10ms);
        }
    }
    return done;
}

TEST(AccessPoolTest, AccessesOfDifferentSlotsRunAtTheSameTime)
{
    Gate gate;
    AccessPool pool(4, 8, [&](std::size_t) { gate.pass(); });
    for (std::size_t slot = 0; slot < 4; ++slot)
    {
        ASSERT_TRUE(pool.start(slot));
    }
    // All four are inside together: none waited for another to finish.
    ASSERT_TRUE(gate.waitInside(4));
    EXPECT_EQ(pool.pending(), 4U);
    EXPECT_EQ(pool.threads(), 4U); // one per access, within the maximum
    gate.open();
    EXPECT_THAT(collectAll(pool, 4), UnorderedElementsAre(0, 1, 2, 3));
}

TEST(AccessPoolTest, OneAccessPerSlotUntilItIsCollected)
{
    Gate gate;
    AccessPool pool(2, 4, [&](std::size_t) { gate.pass(); });
    ASSERT_TRUE(pool.start(0));
    EXPECT_FALSE(pool.start(0)); // queued or running
    EXPECT_TRUE(pool.inFlight(0));
    EXPECT_FALSE(pool.inFlight(1));
    gate.open();
    ASSERT_TRUE(gate.waitPassed(1));
    (void)pool.waitIdle(std::chrono::steady_clock::now() + 10s);
    EXPECT_FALSE(pool.inFlight(0));
    EXPECT_FALSE(pool.start(0)); // finished, not collected yet
    EXPECT_THAT(collectAll(pool, 1), ElementsAre(0));
    EXPECT_TRUE(pool.start(0));
    EXPECT_THAT(collectAll(pool, 1), ElementsAre(0));
}

TEST(AccessPoolTest, NoMoreThreadsThanTheMaximum)
{
    Gate gate;
    AccessPool pool(5, 2, [&](std::size_t) { gate.pass(); });
    for (std::size_t slot = 0; slot < 5; ++slot)
    {
        ASSERT_TRUE(pool.start(slot));
    }
    ASSERT_TRUE(gate.waitInside(2));
    EXPECT_EQ(pool.threads(), 2U);
    EXPECT_TRUE(pool.inFlight(4)); // queued behind the two running
    gate.open();
    EXPECT_THAT(collectAll(pool, 5), UnorderedElementsAre(0, 1, 2, 3, 4));
    EXPECT_EQ(gate.most(), 2U);
    EXPECT_EQ(pool.threads(), 2U);
}

TEST(AccessPoolTest, WithoutThreadsAnAccessRunsOnTheCallersThread)
{
    const pthread_t caller = ::pthread_self();
    bool same = false;
    AccessPool pool(1, 0, [&](std::size_t) {
        same = ::pthread_equal(::pthread_self(), caller) != 0;
    });
    ASSERT_TRUE(pool.start(0));
    EXPECT_TRUE(same); // done when start() returned
    EXPECT_EQ(pool.threads(), 0U);
    EXPECT_FALSE(pool.start(0)); // not collected yet
    std::vector<std::size_t> done;
    pool.collect([&](std::size_t slot) { done.push_back(slot); });
    EXPECT_THAT(done, ElementsAre(0));
}

TEST(AccessPoolTest, StopDropsWhatHasNotStartedAndWaitIdleIsBounded)
{
    Gate gate;
    std::atomic<int> ran{0};
    AccessPool pool(3, 1, [&](std::size_t) {
        ++ran;
        gate.pass();
    });
    ASSERT_TRUE(pool.start(0));
    ASSERT_TRUE(gate.waitInside(1));
    ASSERT_TRUE(pool.start(1)); // queued behind the hung one
    pool.stop();
    EXPECT_FALSE(pool.inFlight(1));
    EXPECT_FALSE(pool.start(2));
    // The hung access keeps waitIdle to its deadline, and stays counted.
    EXPECT_EQ(pool.waitIdle(std::chrono::steady_clock::now() + 20ms), 1U);
    EXPECT_EQ(pool.pending(), 1U);
    EXPECT_TRUE(pool.inFlight(0));
    gate.open();
    EXPECT_EQ(pool.waitIdle(std::chrono::steady_clock::now() + 10s), 0U);
    EXPECT_EQ(ran.load(), 1);
}

} // namespace
} // namespace cppc::backend
