// SPDX-License-Identifier: Apache-2.0
// Precise waits: absolute sleeps never return before their deadline, even
// when signals interrupt them; the timer slack is set per thread; and
// waitUntil, driven by a fake clock, never gives up before the deadline and
// polls no more than the bound it documents.
#include "lib/pcc/precise_wait.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cppc::pcc
{
namespace
{

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Time moves only when someone sleeps; each sleep lands `overshoot` after
// its deadline.
class FakeClock final : public WaitClock
{
  public:
    explicit FakeClock(Nanos start = Nanos{0}, Nanos overshoot = Nanos{0}) :
        now_(start), overshoot_(overshoot)
    {}

    Nanos now() const noexcept override
    {
        return now_;
    }
    void sleepUntil(Nanos deadline) noexcept override
    {
        sleeps.push_back(deadline);
        now_ = std::max(now_, deadline) + overshoot_;
    }

    std::vector<Nanos> sleeps;

  private:
    Nanos now_;
    Nanos overshoot_;
};

struct PollCase
{
    Nanos deadline;
    Nanos interval;
    Nanos overshoot;
    unsigned expectedPolls; // with a condition that never holds
};

class WaitUntilBoundTest : public ::testing::TestWithParam<PollCase>
{};

TEST_P(WaitUntilBoundTest, NeverGivesUpBeforeTheDeadlineAndPollsAtMostTheBound)
{
    const PollCase& c = GetParam();
    FakeClock clock(Nanos{0}, c.overshoot);
    unsigned polls = 0;
    const bool held = waitUntil(
        clock, [&] { return ++polls, false; }, c.deadline, c.interval);
    EXPECT_FALSE(held);
    EXPECT_GE(clock.now(), c.deadline);
    const Nanos interval = std::max(c.interval, Nanos{1});
    const auto bound = static_cast<unsigned>(
        (c.deadline.count() + interval.count() - 1) / interval.count() + 1);
    EXPECT_LE(polls, bound);
    EXPECT_EQ(polls, c.expectedPolls);
    for (Nanos s : clock.sleeps)
    {
        EXPECT_LE(s, c.deadline) << "slept past the deadline";
    }
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, WaitUntilBoundTest,
    ::testing::Values(
        // Polls at 0, 100, ..., 1000.
        PollCase{Nanos{1000}, Nanos{100}, Nanos{0}, 11},
        // Polls at 0, 100, ..., 1000 and at the deadline, 1050.
        PollCase{Nanos{1050}, Nanos{100}, Nanos{0}, 12},
        // Late wake-ups: polls at 0, 130, 260, ..., 910, 1040.
        PollCase{Nanos{1000}, Nanos{100}, Nanos{30}, 9},
        // An interval of 0 is 1 ns.
        PollCase{Nanos{5}, Nanos{0}, Nanos{0}, 6},
        // An interval longer than the wait: now and at the deadline.
        PollCase{Nanos{50}, Nanos{1000}, Nanos{0}, 2}));

TEST(WaitUntilTest, ReturnsAtTheFirstPollThatHolds)
{
    FakeClock clock;
    unsigned polls = 0;
    EXPECT_TRUE(waitUntil(
        clock, [&] { return ++polls == 4; }, Nanos{1000}, Nanos{100}));
    EXPECT_EQ(polls, 4U);
    EXPECT_EQ(clock.now(), Nanos{300});
}

TEST(WaitUntilTest, AConditionAlreadyTrueDoesNotSleep)
{
    FakeClock clock;
    EXPECT_TRUE(waitUntil(
        clock, [] { return true; }, Nanos{1000}, Nanos{1}));
    EXPECT_TRUE(clock.sleeps.empty());
}

TEST(WaitUntilTest, APassedDeadlinePollsOnceWithoutSleeping)
{
    FakeClock clock(Nanos{5000});
    unsigned polls = 0;
    EXPECT_FALSE(waitUntil(
        clock, [&] { return ++polls, false; }, Nanos{1000}, Nanos{100}));
    EXPECT_EQ(polls, 1U);
    EXPECT_TRUE(clock.sleeps.empty());
}

TEST(WaitUntilTest, AConditionThatHoldsAtTheDeadlineIsSeen)
{
    FakeClock clock;
    const Nanos deadline{1050};
    EXPECT_TRUE(waitUntil(
        clock, [&] { return clock.now() >= deadline; }, deadline, Nanos{100}));
    EXPECT_EQ(clock.now(), deadline);
}

TEST(SleepUntilTest, NeverReturnsBeforeTheDeadline)
{
    for (Nanos wait : {Nanos{0}, Nanos{microseconds{10}},
                       Nanos{microseconds{100}}, Nanos{milliseconds{1}}})
    {
        for (int i = 0; i < 20; ++i)
        {
            const Nanos deadline = monotonicNow() + wait;
            sleepUntil(deadline);
            EXPECT_GE(monotonicNow(), deadline);
        }
    }
}

std::atomic<unsigned> signalsTaken{0};

extern "C" void countSignal(int)
{
    signalsTaken.fetch_add(1);
}

TEST(SleepUntilTest, SleepsOnAfterSignals)
{
    struct sigaction action
    {};
    action.sa_handler = countSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; // no SA_RESTART: the sleep sees EINTR
    struct sigaction old
    {};
    ASSERT_EQ(::sigaction(SIGUSR1, &action, &old), 0);
    signalsTaken = 0;

    std::atomic<bool> done{false};
    Nanos deadline{0};
    Nanos returnedAt{0};
    std::atomic<bool> started{false};
    std::thread sleeper([&] {
        deadline = monotonicNow() + milliseconds{100};
        started = true;
        sleepUntil(deadline);
        returnedAt = monotonicNow();
        done = true;
    });
    while (!started)
    {
        std::this_thread::yield();
    }
    const pthread_t handle = sleeper.native_handle();
    while (!done)
    {
        ::pthread_kill(handle, SIGUSR1);
        sleepUntil(monotonicNow() + milliseconds{5});
    }
    sleeper.join();
    ::sigaction(SIGUSR1, &old, nullptr);
    EXPECT_GT(signalsTaken.load(), 0U);
    EXPECT_GE(returnedAt, deadline);
}

long timerSlack()
{
    return ::prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
}

TEST(TimerSlackTest, SetOnceToOneNanosecondForTheCallingThreadOnly)
{
    const long mainSlack = timerSlack();
    long after = 0;
    long later = 0;
    bool set = false;
    bool again = false;
    std::thread([&] {
        ::prctl(PR_SET_TIMERSLACK, 50000UL, 0UL, 0UL, 0UL);
        set = useMinimalTimerSlack();
        after = timerSlack();
        // Once per thread: a later call does not issue the prctl again.
        ::prctl(PR_SET_TIMERSLACK, 50000UL, 0UL, 0UL, 0UL);
        again = useMinimalTimerSlack();
        later = timerSlack();
    }).join();
    long other = 0;
    std::thread([&] { other = timerSlack(); }).join();
    EXPECT_TRUE(set);
    EXPECT_TRUE(again);
    EXPECT_EQ(after, 1);
    EXPECT_EQ(later, 50000);
    EXPECT_EQ(timerSlack(), mainSlack);
    EXPECT_EQ(other, mainSlack);
}

TEST(TimerSlackTest, MonotonicClockSetsItOnTheFirstSleep)
{
    long slack = 0;
    std::thread([&] {
        WaitClock& clock = monotonicClock();
        clock.sleepUntil(clock.now());
        slack = timerSlack();
    }).join();
    EXPECT_EQ(slack, 1);
}

TEST(MonotonicNowTest, IsClockMonotonic)
{
    const Nanos before = monotonicNow();
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const Nanos after = monotonicNow();
    const Nanos middle = std::chrono::seconds{ts.tv_sec} + Nanos{ts.tv_nsec};
    EXPECT_LE(before, middle);
    EXPECT_LE(middle, after);
}

} // namespace
} // namespace cppc::pcc
