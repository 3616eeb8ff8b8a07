// SPDX-License-Identifier: Apache-2.0
// Task activity on real child processes: busy threads are active on some
// CPU, a sleeping one is not, a thread that ran between two ticks is, with
// the CPU time it used. Every child is killed and reaped by its owner
// object.
#include "daemon/task_activity.hpp"
#include "task_test_support.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using test::boost;
using test::burstBody;
using test::busyBody;
using test::cap;
using test::Child;
using test::patience;
using test::pausedBody;
using test::threadsOf;
using test::tickUntilSeen;
using test::tickUs;
using test::tidsOf;
using test::twoBusyBody;
using test::waitAsleep;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// ---------------------------------------------------------------------------
// Activity of real tasks

TEST(TaskActivity, ABusyProcessIsActiveOnSomeCpu)
{
    Child child(busyBody);
    ASSERT_EQ(child.readTid(), child.pid());
    std::vector<unsigned> allowed;
    ASSERT_FALSE(taskAffinity(child.pid(), allowed));

    TaskActivity activity;
    const std::vector<ClampHint> hints{{7, {child.pid(), true}, boost}};
    const std::vector<HintSighting> seen =
        tickUntilSeen(activity, hints, {child.pid()});
    // Its busy thread, and any other of its threads that ran (under
    // qemu-aarch64 the emulator's own thread in the child, at its start).
    ASSERT_THAT(tidsOf(seen), Contains(child.pid()));
    const std::set<pid_t> threads = threadsOf(child.pid());
    for (const pid_t tid : tidsOf(seen))
    {
        EXPECT_THAT(threads, Contains(tid));
    }
    for (const HintSighting& a : seen)
    {
        EXPECT_EQ(a.handle, 7U);
        EXPECT_EQ(a.clamp, boost);
        EXPECT_THAT(allowed, ::testing::Contains(a.cpu));
    }

    // Its CPU time comes in ticks of procfs.
    std::uint64_t usedUs = 0;
    for (const HintSighting& a : seen)
    {
        usedUs += a.cpuTimeUs;
    }
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (usedUs < 3 * tickUs && std::chrono::steady_clock::now() < deadline)
    {
        for (const HintSighting& a : activity.tick(hints))
        {
            EXPECT_EQ(a.cpuTimeUs % tickUs, 0U);
            usedUs += a.cpuTimeUs;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_GE(usedUs, 3 * tickUs);

    // Killed and reaped: skipped, and forgotten.
    child.kill();
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    EXPECT_EQ(activity.trackedThreads(), 0U);
}

TEST(TaskActivity, ASleepingProcessIsNotActive)
{
    Child child(pausedBody);
    ASSERT_EQ(child.readTid(), child.pid());
    ASSERT_TRUE(waitAsleep(child.pid()));

    TaskActivity activity;
    const std::vector<ClampHint> hints{{1, {child.pid(), true}, boost},
                                       {2, {child.pid(), false}, cap}};
    // Its paused thread is never seen. An emulator running the test adds
    // threads of its own to the process, which may run now and then;
    // without one nothing is seen at all.
    const bool alone = threadsOf(child.pid()).size() == 1;
    const auto check = [&](std::span<const HintSighting> seen, int i) {
        for (const HintSighting& s : seen)
        {
            EXPECT_NE(s.tid, child.pid()) << i;
        }
        if (alone)
        {
            EXPECT_THAT(seen, IsEmpty()) << i;
        }
    };
    check(activity.tick(hints), -1);
    for (int i = 0; i < 5; ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        check(activity.tick(hints), i);
    }
    // Its one thread (and any an emulator running the test adds).
    EXPECT_EQ(activity.trackedThreads(), threadsOf(child.pid()).size());
}

TEST(TaskActivity, AThreadThatRanBetweenTicksIsActive)
{
    Child child(burstBody);
    ASSERT_EQ(child.readTid(), child.pid());
    ASSERT_TRUE(waitAsleep(child.pid()));

    TaskActivity activity;
    const std::vector<ClampHint> hints{{1, {child.pid(), true}, boost},
                                       {2, {child.pid(), false}, cap}};
    // The first ticks read every thread once; under an emulator the
    // process has threads of the emulator's own, which may be running or
    // gain CPU time then: tick until a tick sees nothing run.
    bool quiet = false;
    for (int i = 0; i < 100 && !quiet; ++i)
    {
        quiet = activity.tick(hints).empty();
        if (!quiet)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    ASSERT_TRUE(quiet);

    // It burns 60 ms of CPU and sleeps again before the next tick.
    child.poke();
    ASSERT_EQ(child.readTid(), child.pid());
    ASSERT_TRUE(waitAsleep(child.pid()));
    const std::span<const HintSighting> ran = activity.tick(hints);
    ASSERT_EQ(ran.size(), 2U);
    EXPECT_EQ(ran[0].handle, 1U);
    EXPECT_EQ(ran[0].tid, child.pid());
    EXPECT_EQ(ran[0].clamp, boost);
    EXPECT_EQ(ran[1].handle, 2U);
    EXPECT_EQ(ran[1].tid, child.pid());
    EXPECT_EQ(ran[1].clamp, cap);
    EXPECT_EQ(ran[0].cpu, ran[1].cpu);
    // The 60 ms it burned, in procfs's 10 ms steps, counted once.
    EXPECT_GE(ran[0].cpuTimeUs, 50'000U);
    EXPECT_LE(ran[0].cpuTimeUs, 80'000U);
    EXPECT_EQ(ran[1].cpuTimeUs, 0U);

    // It has not run since.
    EXPECT_THAT(activity.tick(hints), IsEmpty());
}

TEST(TaskActivity, AWholeProcessTargetCoversEveryThread)
{
    Child child(twoBusyBody);
    const pid_t leader = child.readTid();
    const pid_t second = child.readTid();
    ASSERT_EQ(leader, child.pid());
    ASSERT_NE(second, leader);
    pid_t tgid = 0;
    ASSERT_FALSE(threadGroupOf(second, tgid));
    EXPECT_EQ(tgid, child.pid());

    // Natively the process has just those two; under an emulator it has
    // threads of the emulator's own too, which are the process's threads
    // as well and may be seen when they run.
    const std::set<pid_t> threads = threadsOf(child.pid());
    ASSERT_TRUE(threads.contains(leader) && threads.contains(second));

    TaskActivity activity;
    const std::vector<ClampHint> hints{{3, {child.pid(), true}, boost}};
    const std::vector<HintSighting> seen =
        tickUntilSeen(activity, hints, {leader, second});
    std::set<pid_t> ours = tidsOf(seen);
    for (const pid_t tid : threads)
    {
        if (tid != leader && tid != second)
        {
            ours.erase(tid);
        }
    }
    EXPECT_EQ(ours, (std::set<pid_t>{leader, second}));
    EXPECT_EQ(activity.trackedThreads(), threads.size());
}

TEST(TaskActivity, AThreadTargetCoversOnlyThatThread)
{
    Child child(twoBusyBody);
    const pid_t leader = child.readTid();
    const pid_t second = child.readTid();
    ASSERT_NE(second, leader);

    for (const pid_t target : {second, leader})
    {
        TaskActivity activity;
        const std::vector<ClampHint> hints{{4, {target, false}, cap}};
        std::vector<HintSighting> seen =
            tickUntilSeen(activity, hints, {target});
        // A few more ticks: never the other thread.
        for (int i = 0; i < 5; ++i)
        {
            for (const HintSighting& a : activity.tick(hints))
            {
                seen.push_back(a);
            }
        }
        EXPECT_THAT(tidsOf(seen), ElementsAre(target));
        EXPECT_EQ(activity.trackedThreads(), 1U);
    }
}

} // namespace
} // namespace cppcgov::daemon
