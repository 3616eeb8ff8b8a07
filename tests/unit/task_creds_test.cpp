// SPDX-License-Identifier: Apache-2.0
// Task facts from procfs and the scheduler: owner, thread group and
// affinity, checked against the test process itself, a fake status file
// and a task that no longer exists.
#include "daemon/task_info.hpp"
#include "lib/error.hpp"
#include "task_test_support.hpp"
#include "temp_tree.hpp"

#include <sched.h>
#include <unistd.h>

#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using test::Child;
using test::gettid;
using test::pausedBody;

// ---------------------------------------------------------------------------
// Owner, thread group, affinity

TEST(TaskCreds, OfSelfMatchTheProcessIds)
{
    TaskCreds creds;
    ASSERT_FALSE(taskCreds(::getpid(), creds));
    EXPECT_EQ(creds.uid, ::getuid());
    EXPECT_EQ(creds.euid, ::geteuid());
    // A thread's too.
    TaskCreds threadCreds;
    ASSERT_FALSE(taskCreds(gettid(), threadCreds));
    EXPECT_EQ(threadCreds, creds);
}

TEST(TaskCreds, ReadsTheUidLine)
{
    const cppc::test::TempTree proc;
    proc.write("42/status",
               "Name:\tdaemon\nUmask:\t0022\nState:\tS (sleeping)\n"
               "Tgid:\t40\nPid:\t42\nUid:\t1000\t0\t0\t0\n"
               "Gid:\t1000\t1000\t1000\t1000\n");
    TaskCreds creds;
    ASSERT_FALSE(taskCreds(42, creds, proc.path()));
    EXPECT_EQ(creds, (TaskCreds{1000, 0}));
    pid_t tgid = 0;
    ASSERT_FALSE(threadGroupOf(42, tgid, proc.path()));
    EXPECT_EQ(tgid, 40);

    for (const char* bad :
         {"Uid:\t1000\t0\t0\n", "Uid:\t1000\tx\t0\t0\n", "Uid:\t-1\t0\t0\t0\n",
          "Uid:\n", "Name:\tx\n", "Uids:\t1\t2\t3\t4\n",
          "Uid:\t99999999999\t0\t0\t0\n"})
    {
        proc.write("7/status", std::string(bad) + "Tgid:\tseven\n");
        EXPECT_EQ(taskCreds(7, creds, proc.path()),
                  cppc::Errc::malformedAttribute)
            << bad;
        EXPECT_EQ(threadGroupOf(7, tgid, proc.path()),
                  cppc::Errc::malformedAttribute)
            << bad;
    }
    EXPECT_EQ(taskCreds(8, creds, proc.path()), std::errc::no_such_process);
    EXPECT_EQ(threadGroupOf(8, tgid, proc.path()), std::errc::no_such_process);
}

TEST(TaskCreds, MayClampBySameOwnerRule)
{
    // The caller's euid against the target's euid or real uid.
    EXPECT_TRUE(mayClamp(1000, {1000, 1000}));
    EXPECT_TRUE(mayClamp(1000, {1000, 0})); // setuid program run by 1000
    EXPECT_TRUE(mayClamp(1000, {0, 1000})); // euid 1000
    EXPECT_FALSE(mayClamp(1000, {1001, 1001}));
    EXPECT_FALSE(mayClamp(1000, {0, 0}));
    // Root is the caller's business: no special case here.
    EXPECT_FALSE(mayClamp(0, {1000, 1000}));
    EXPECT_TRUE(mayClamp(0, {0, 1000}));
}

TEST(TaskInfo, ThreadGroupTellsAThreadFromAProcess)
{
    pid_t tgid = 0;
    ASSERT_FALSE(threadGroupOf(::getpid(), tgid));
    EXPECT_EQ(tgid, ::getpid());

    pid_t threadTgid = 0;
    pid_t tid = 0;
    std::error_code ec;
    std::thread worker([&tid, &threadTgid, &ec] {
        tid = gettid();
        ec = threadGroupOf(tid, threadTgid);
    });
    worker.join();
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_NE(tid, ::getpid());
    EXPECT_EQ(threadTgid, ::getpid());
}

TEST(TaskInfo, AffinityOfSelfIsTheSchedulersMask)
{
    std::vector<unsigned> cpus{12345};
    ASSERT_FALSE(taskAffinity(::getpid(), cpus));
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
    std::vector<unsigned> expected;
    for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    {
        if (CPU_ISSET(cpu, &set))
        {
            expected.push_back(cpu);
        }
    }
    EXPECT_EQ(cpus, expected);
    EXPECT_FALSE(cpus.empty());

    std::vector<unsigned> own;
    ASSERT_FALSE(taskAffinity(0, own));
    EXPECT_EQ(own, expected);
}

TEST(TaskInfo, ADeadTaskIsNoSuchProcess)
{
    pid_t gone = 0;
    {
        Child child(pausedBody);
        gone = child.pid();
    }
    TaskCreds creds;
    EXPECT_EQ(taskCreds(gone, creds), std::errc::no_such_process);
    pid_t tgid = 0;
    EXPECT_EQ(threadGroupOf(gone, tgid), std::errc::no_such_process);
    std::vector<unsigned> cpus;
    EXPECT_EQ(taskAffinity(gone, cpus), std::errc::no_such_process);
    for (const pid_t bad : {0, -1})
    {
        EXPECT_EQ(taskCreds(bad, creds), std::errc::no_such_process);
        EXPECT_EQ(threadGroupOf(bad, tgid), std::errc::no_such_process);
    }
    EXPECT_EQ(taskAffinity(-1, cpus), std::errc::no_such_process);
}

} // namespace
} // namespace cppcgov::daemon
