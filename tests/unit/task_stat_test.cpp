// SPDX-License-Identifier: Apache-2.0
// The stat parser, and task activity on a fake /proc tree where the test
// decides every thread's state and CPU time: what counts as active, the
// CPU time between reads, thread and process targets, one read per thread
// and tick, vanished and reused thread ids, and a read budget.
#include "daemon/task_info.hpp"
#include "task_test_support.hpp"
#include "temp_tree.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using test::boost;
using test::cap;
using test::tickUs;
using test::tidsOf;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// ---------------------------------------------------------------------------
// The stat parser

// A stat line with the given fields and plausible others.
std::string statLine(std::string_view comm, char state, std::uint64_t utime,
                     std::uint64_t stime, std::uint64_t start, unsigned cpu)
{
    std::string line = "4242 (" + std::string(comm) + ") " + state;
    for (int field = 4; field <= 52; ++field)
    {
        std::string value = std::to_string(field * 3);
        switch (field)
        {
            case 14:
                value = std::to_string(utime);
                break;
            case 15:
                value = std::to_string(stime);
                break;
            case 18:
                value = "-2"; // priority can be negative
                break;
            case 19:
                value = "-20"; // nice
                break;
            case 22:
                value = std::to_string(start);
                break;
            case 39:
                value = std::to_string(cpu);
                break;
            default:
                break;
        }
        line += ' ' + value;
    }
    return line + '\n';
}

TEST(TaskStat, ParsesTheFieldsAfterTheName)
{
    TaskStat stat;
    ASSERT_TRUE(parseTaskStat(statLine("worker", 'R', 100, 23, 9999, 7), stat));
    EXPECT_EQ(stat.state, 'R');
    EXPECT_EQ(stat.cpuTicks, 123U);
    EXPECT_EQ(stat.startTime, 9999U);
    EXPECT_EQ(stat.cpu, 7U);

    // Names with spaces and parentheses, even ones that look like fields.
    for (const char* comm : {"a b", "(", ")", ") R 1 (", "x) S 1 (y", "((()))",
                             "", "kworker/0:1H-kblockd"})
    {
        TaskStat s;
        ASSERT_TRUE(parseTaskStat(statLine(comm, 'S', 5, 6, 77, 4099), s))
            << comm;
        EXPECT_EQ(s.state, 'S') << comm;
        EXPECT_EQ(s.cpuTicks, 11U) << comm;
        EXPECT_EQ(s.startTime, 77U) << comm;
        EXPECT_EQ(s.cpu, 4099U) << comm;
    }

    // Exactly 39 fields, no newline.
    std::string short39 = "1 (c) R";
    for (int field = 4; field <= 39; ++field)
    {
        short39 += " 1";
    }
    ASSERT_TRUE(parseTaskStat(short39, stat));
    EXPECT_EQ(stat.cpu, 1U);
    EXPECT_EQ(stat.cpuTicks, 2U);
}

TEST(TaskStat, RefusesMalformedLines)
{
    const std::string good = statLine("w", 'R', 1, 2, 3, 4);
    TaskStat stat{'Q', 9, 9, 9};
    for (const std::string& bad : {
             std::string(),
             std::string("4242 w R 1 2 3"),
             std::string("4242 (w R 1 2 3"),
             good.substr(0, good.find(") ")) + ")",
             good.substr(0, good.size() / 3),
             statLine("w", 'R', 1, 2, 3, 4)
                 .replace(good.find(") R"), 3, ") RR"),
             statLine("w", 'R', 1, 2, 3, 4)
                 .replace(good.find(") R"), 3, ")  R"),
             // The state is a letter.
             statLine("w", 'R', 1, 2, 3, 4)
                 .replace(good.find(") R"), 3, std::string(") \0", 3)),
             statLine("w", 'R', 1, 2, 3, 4).replace(good.find(") R"), 3, ") 1"),
             std::string("1 (c) R") + std::string(36 * 2 - 2, ' '),
         })
    {
        EXPECT_FALSE(parseTaskStat(bad, stat)) << bad;
    }
    // A non-number where a number is read.
    std::string line = "1 (c) R";
    for (int field = 4; field <= 39; ++field)
    {
        line += field == 14 ? " x" : " 1";
    }
    EXPECT_FALSE(parseTaskStat(line, stat));
    // Nothing was changed by the failures.
    EXPECT_EQ(stat.state, 'Q');
    EXPECT_EQ(stat.cpuTicks, 9U);
}

// ---------------------------------------------------------------------------
// Activity on a fake /proc

class FakeProc
{
  public:
    // Sets thread `tid` of process `pid`.
    void thread(pid_t pid, pid_t tid, char state, std::uint64_t cpuTicks,
                unsigned cpu, std::uint64_t start = 1000) const
    {
        tree.write(std::to_string(pid) + "/task/" + std::to_string(tid) +
                       "/stat",
                   statLine("t", state, cpuTicks, 0, start, cpu));
    }

    // Sets thread `tid` of process `pid` with utime and stime apart.
    void times(pid_t pid, pid_t tid, char state, std::uint64_t utime,
               std::uint64_t stime, unsigned cpu) const
    {
        tree.write(std::to_string(pid) + "/task/" + std::to_string(tid) +
                       "/stat",
                   statLine("t", state, utime, stime, 1000, cpu));
    }

    void remove(pid_t pid, pid_t tid) const
    {
        std::filesystem::remove_all(
            tree.path() / std::to_string(pid) / "task" / std::to_string(tid));
    }

    cppc::test::TempTree tree;
};

TEST(TaskActivityFake, RunningOrGrownCpuTimeIsActive)
{
    FakeProc proc;
    proc.thread(10, 10, 'S', 100, 1);
    proc.thread(10, 11, 'R', 50, 2);
    proc.thread(10, 12, 'D', 7, 3);
    TaskActivity activity(proc.tree.path());
    const std::vector<ClampHint> hints{{5, {10, true}, boost}};

    // First sight: only the running thread.
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{5, 11, 2, boost, 0}));
    EXPECT_EQ(activity.trackedThreads(), 3U);

    // Thread 10 ran in between and sleeps again; 11 still runs, now on 0;
    // 12 is blocked and has not run.
    proc.thread(10, 10, 'S', 101, 6);
    proc.thread(10, 11, 'R', 50, 0);
    EXPECT_THAT(activity.tick(hints),
                UnorderedElementsAre(HintSighting{5, 10, 6, boost, tickUs},
                                     HintSighting{5, 11, 0, boost, 0}));

    // No growth, not running: not active.
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{5, 11, 0, boost, 0}));
    proc.thread(10, 11, 'S', 50, 0);
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    EXPECT_EQ(activity.trackedThreads(), 3U);
}

TEST(TaskActivityFake, CpuTimeIsWhatUtimeAndStimeGrewSinceTheLastRead)
{
    FakeProc proc;
    proc.times(90, 90, 'R', 10, 5, 1);
    proc.times(90, 91, 'R', 3, 0, 2);
    TaskActivity activity(proc.tree.path());
    const std::vector<ClampHint> hints{{1, {90, true}, cap}};
    // First read: no time yet.
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 90, 1, cap, 0},
                            HintSighting{1, 91, 2, cap, 0}));
    // User and system time both count, each thread its own, on the CPU
    // it is on now.
    proc.times(90, 90, 'R', 12, 8, 3);
    proc.times(90, 91, 'S', 4, 0, 2);
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 90, 3, cap, 5 * tickUs},
                            HintSighting{1, 91, 2, cap, tickUs}));
    // Running without a new tick of time: active, no time.
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 90, 3, cap, 0}));
}

TEST(TaskActivityFake, CpuTimeCoversTheTicksAThreadWasNotRead)
{
    FakeProc proc;
    proc.times(95, 95, 'R', 1, 0, 0);
    proc.times(96, 96, 'R', 1, 0, 1);
    // One read per tick: the two threads take turns.
    TaskActivity activity(proc.tree.path(), 1);
    const std::vector<ClampHint> hints{{1, {95, false}, cap},
                                       {2, {96, false}, cap}};
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 95, 0, cap, 0}));
    proc.times(95, 95, 'R', 2, 0, 0);
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{2, 96, 1, cap, 0}));
    proc.times(95, 95, 'R', 4, 1, 0);
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 95, 0, cap, 4 * tickUs}));
}

TEST(TaskActivityFake, ThreadTargetCoversOnlyThatThread)
{
    FakeProc proc;
    proc.thread(20, 20, 'R', 1, 0);
    proc.thread(20, 21, 'R', 1, 1);
    proc.thread(20, 22, 'R', 1, 2);
    TaskActivity activity(proc.tree.path());
    // The thread's stat is read under its own number (/proc/<tid>/task/
    // <tid>), as procfs serves it for any thread.
    proc.thread(21, 21, 'R', 1, 1);
    const std::vector<ClampHint> hints{{1, {21, false}, cap}};
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 21, 1, cap, 0}));
    EXPECT_EQ(activity.trackedThreads(), 1U);
}

TEST(TaskActivityFake, AThreadUnderSeveralHintsIsReadOncePerTick)
{
    FakeProc proc;
    proc.thread(30, 30, 'S', 10, 3);
    TaskActivity activity(proc.tree.path());
    const std::vector<ClampHint> hints{
        {1, {30, true}, boost}, {2, {30, false}, cap}, {3, {30, true}, cap}};
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    proc.thread(30, 30, 'S', 11, 3);
    // Every hint sees the growth, not only the first to look; the CPU time
    // is counted once, on the first.
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 30, 3, boost, tickUs},
                            HintSighting{2, 30, 3, cap, 0},
                            HintSighting{3, 30, 3, cap, 0}));
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    EXPECT_EQ(activity.trackedThreads(), 1U);
}

TEST(TaskActivityFake, ManyHintsOnOneProcessCostOneListingAndOneReadPerThread)
{
    FakeProc proc;
    proc.thread(40, 40, 'R', 10, 0);
    proc.thread(40, 41, 'R', 10, 1);
    proc.thread(40, 42, 'R', 10, 2);
    std::vector<ClampHint> hints;
    for (std::uint64_t handle = 1; handle <= 32; ++handle)
    {
        hints.push_back({handle, {40, true}, cap});
    }
    // One listing and three stat reads are all the 32 hints need: listing
    // and reading per hint would take 128.
    TaskActivity activity(proc.tree.path(), 4);
    for (int tick = 0; tick < 3; ++tick)
    {
        const std::span<const HintSighting> seen = activity.tick(hints);
        EXPECT_EQ(seen.size(), 32U * 3U) << "tick " << tick;
        std::set<std::uint64_t> handles;
        for (const HintSighting& s : seen)
        {
            handles.insert(s.handle);
        }
        EXPECT_EQ(handles.size(), 32U) << "tick " << tick;
    }
}

TEST(TaskActivityFake, VanishedThreadsAreSkippedAndForgotten)
{
    FakeProc proc;
    proc.thread(40, 40, 'R', 10, 0);
    proc.thread(40, 41, 'S', 10, 1);
    proc.thread(50, 50, 'S', 10, 1);
    TaskActivity activity(proc.tree.path());
    const std::vector<ClampHint> hints{
        {1, {40, true}, boost}, {2, {50, false}, cap}, {3, {60, true}, cap},
        {4, {61, false}, cap},  {5, {0, true}, cap},   {6, {-3, false}, cap}};
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 40, 0, boost, 0}));
    EXPECT_EQ(activity.trackedThreads(), 3U);

    proc.remove(40, 41);
    proc.remove(50, 50);
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 40, 0, boost, 0}));
    EXPECT_EQ(activity.trackedThreads(), 1U);

    // A thread that comes back (or a reused number) starts afresh: its CPU
    // time is not compared with the old one's.
    proc.thread(40, 41, 'S', 500, 1);
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 40, 0, boost, 0}));

    // Nothing hinted: everything forgotten.
    EXPECT_THAT(activity.tick(std::span<const ClampHint>()), IsEmpty());
    EXPECT_EQ(activity.trackedThreads(), 0U);
}

TEST(TaskActivityFake, AReusedThreadIdIsANewThread)
{
    FakeProc proc;
    proc.thread(70, 70, 'S', 10, 0, 1000);
    TaskActivity activity(proc.tree.path());
    const std::vector<ClampHint> hints{{1, {70, true}, boost}};
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    // Between ticks the thread exited and its number went to a new thread
    // (a later start time) with more CPU time: not growth.
    proc.thread(70, 70, 'S', 40, 0, 2000);
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    proc.thread(70, 70, 'S', 41, 0, 2000);
    EXPECT_THAT(activity.tick(hints),
                ElementsAre(HintSighting{1, 70, 0, boost, tickUs}));
}

TEST(TaskActivityFake, UnreadableStatIsSkipped)
{
    FakeProc proc;
    proc.tree.write("80/task/80/stat", "garbage\n");
    proc.thread(80, 81, 'R', 1, 5);
    proc.tree.write("80/task/82/stat", std::string(5000, 'x'));
    proc.tree.write("80/task/not-a-number/stat",
                    statLine("t", 'R', 1, 0, 1, 9));
    TaskActivity activity(proc.tree.path());
    EXPECT_THAT(activity.tick(std::vector<ClampHint>{{1, {80, true}, cap}}),
                ElementsAre(HintSighting{1, 81, 5, cap, 0}));
}

// The process of the next two cases: manyThreads running threads, with
// ids from manyThreadsPid on.
constexpr pid_t manyThreadsPid = 10000;
constexpr int manyThreads = 600;

// Adds process `pid` with `threads` running threads, numbered from `pid`.
// Every thread's entry is a link to one directory, which keeps the tree
// cheap to make.
void addRunningThreads(FakeProc& proc, pid_t pid, int threads)
{
    proc.tree.write("one/stat", statLine("t", 'R', 1, 0, 1, 0));
    std::filesystem::create_directories(
        proc.tree.path() / std::to_string(pid) / "task");
    for (pid_t tid = pid; tid < pid + threads; ++tid)
    {
        std::filesystem::create_directory_symlink(
            "../../one", proc.tree.path() / std::to_string(pid) / "task" /
                             std::to_string(tid));
    }
}

TEST(TaskActivityFake, ListsManyThreads)
{
    FakeProc proc;
    // More than one getdents64 call's worth: 16 KiB hold 512 records of
    // five-digit names.
    addRunningThreads(proc, manyThreadsPid, manyThreads);
    TaskActivity activity(proc.tree.path(), manyThreads + 1);
    const std::span<const HintSighting> active =
        activity.tick(std::vector<ClampHint>{{1, {manyThreadsPid, true}, cap}});
    const std::set<pid_t> tids = tidsOf({active.begin(), active.end()});
    EXPECT_EQ(tids.size(), static_cast<std::size_t>(manyThreads));
    EXPECT_EQ(*tids.begin(), manyThreadsPid);
    EXPECT_EQ(*tids.rbegin(), manyThreadsPid + manyThreads - 1);
}

TEST(TaskActivityFake, ABudgetSpreadsTheReadsOverTicksAndMissesNoThread)
{
    FakeProc proc;
    addRunningThreads(proc, manyThreadsPid, manyThreads);
    // A lone thread after the big process, and a budget of 256 reads.
    proc.tree.write("77/task/77/stat", statLine("lone", 'R', 1, 0, 1, 0));
    const std::vector<ClampHint> hints = {{1, {manyThreadsPid, true}, cap},
                                          {2, {77, false}, cap}};
    TaskActivity activity(proc.tree.path(), 256);

    std::set<pid_t> seen;
    std::vector<std::size_t> perTick;
    for (int tick = 0; tick < 3; ++tick)
    {
        const std::span<const HintSighting> active = activity.tick(hints);
        perTick.push_back(active.size());
        for (const HintSighting& a : active)
        {
            EXPECT_TRUE(seen.insert(a.tid).second)
                << a.tid << " read twice in one round";
        }
        // Threads read earlier in the round are kept until it ends.
        EXPECT_EQ(activity.trackedThreads(), seen.size());
    }
    // 1 listing + 255 threads, then 1 listing + 255 threads, then 1
    // listing + the last 90 threads + the lone thread.
    EXPECT_EQ(perTick, (std::vector<std::size_t>{255, 255, 91}));
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(manyThreads + 1));
    // The round is over: the next tick starts again at the beginning, with
    // the process's first 255 threads (and not the lone thread).
    const std::span<const HintSighting> again = activity.tick(hints);
    EXPECT_EQ(again.size(), 255U);
    EXPECT_EQ(tidsOf({again.begin(), again.end()}).count(77), 0U);
}

TEST(TaskActivityFake, RefusesAMissingProcDir)
{
    const cppc::test::TempTree tree;
    EXPECT_THROW(TaskActivity(tree.path() / "absent"), std::system_error);
}

} // namespace
} // namespace cppcgov::daemon
