// Task facts from procfs and the scheduler. Owner, thread group and
// affinity are checked against the test process itself and a task that no
// longer exists. Activity is checked on a fake /proc tree, where the test
// decides every thread's state and CPU time, and on real child processes:
// busy threads are active on some CPU, a sleeping one is not, a thread that
// ran between two ticks is. Every child is killed and reaped by its owner
// object; nothing is written outside a temporary directory.
#include "daemon/task_info.hpp"
#include "lib/error.hpp"
#include "tests/unit/temp_tree.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <ostream>
#include <set>
#include <stdexcept>
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

using policies::Clamp;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// How long a test waits for an event before it fails.
constexpr auto patience = std::chrono::seconds(20);

constexpr Clamp boost{512, 1024};
constexpr Clamp cap{0, 256};

pid_t gettid()
{
    return static_cast<pid_t>(::syscall(SYS_gettid));
}

// Never set: the busy loops' condition. Loading it is an atomic operation,
// so the loops make progress in the language's sense.
std::atomic<bool> never{false};

[[noreturn]] void spin()
{
    while (!never.load(std::memory_order_relaxed))
    {}
    ::_exit(0);
}

// Writes `tid` to `fd` (a pipe to the test), or exits.
void report(int fd, pid_t tid)
{
    if (::write(fd, &tid, sizeof tid) != static_cast<ssize_t>(sizeof tid))
    {
        ::_exit(3);
    }
}

// Burns `ms` milliseconds of this thread's CPU time.
void burn(long ms)
{
    timespec start{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    for (;;)
    {
        timespec now{};
        ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
        const long elapsed = (now.tv_sec - start.tv_sec) * 1000 +
                             (now.tv_nsec - start.tv_nsec) / 1'000'000;
        if (elapsed >= ms)
        {
            return;
        }
    }
}

// A child process running `body(toTest, fromTest)`, which must not return:
// it reports thread ids on `toTest` and may read commands on `fromTest`. It
// dies with the test process, and is killed and reaped by the destructor.
class Child
{
  public:
    explicit Child(const std::function<void(int, int)>& body)
    {
        int up[2];
        int down[2];
        if (::pipe2(up, O_CLOEXEC) != 0 || ::pipe2(down, O_CLOEXEC) != 0)
        {
            throw std::system_error(errno, std::system_category(), "pipe2");
        }
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ < 0)
        {
            throw std::system_error(errno, std::system_category(), "fork");
        }
        if (pid_ == 0)
        {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent)
            {
                ::_exit(2);
            }
            ::close(up[0]);
            ::close(down[1]);
            body(up[1], down[0]);
            ::_exit(0);
        }
        ::close(up[1]);
        ::close(down[0]);
        fromChild_ = up[0];
        toChild_ = down[1];
    }

    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    ~Child()
    {
        kill();
        ::close(fromChild_);
        ::close(toChild_);
    }

    pid_t pid() const
    {
        return pid_;
    }

    // The next thread id the child reports; throws when none comes in time.
    pid_t readTid() const
    {
        pollfd p{fromChild_, POLLIN, 0};
        const auto ms = std::chrono::milliseconds(patience).count();
        if (::poll(&p, 1, static_cast<int>(ms)) != 1)
        {
            throw std::runtime_error("the child reported nothing");
        }
        pid_t tid = 0;
        if (::read(fromChild_, &tid, sizeof tid) !=
            static_cast<ssize_t>(sizeof tid))
        {
            throw std::runtime_error("the child's report is short");
        }
        return tid;
    }

    // Sends the child one byte.
    void poke() const
    {
        const char c = 'x';
        if (::write(toChild_, &c, 1) != 1)
        {
            throw std::system_error(errno, std::system_category(), "write");
        }
    }

    // Kills and reaps the child: its PID may then be reused.
    void kill()
    {
        if (!reaped_)
        {
            reaped_ = true;
            ::kill(pid_, SIGKILL);
            while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR)
            {}
        }
    }

  private:
    pid_t pid_ = -1;
    int fromChild_ = -1;
    int toChild_ = -1;
    bool reaped_ = false;
};

// A child whose main thread spins.
void busyBody(int up, int /*down*/)
{
    report(up, gettid());
    spin();
}

// A child whose main thread sleeps in pause().
void pausedBody(int up, int /*down*/)
{
    report(up, gettid());
    for (;;)
    {
        ::pause();
    }
}

// A child whose main thread and one more thread spin. The second thread is
// named so that a parser cutting the name at its first ')' would read the
// state 'S' and the wrong fields.
void twoBusyBody(int up, int /*down*/)
{
    report(up, gettid());
    std::thread second([up] {
        ::pthread_setname_np(::pthread_self(), "x) S 1 (y");
        report(up, gettid());
        spin();
    });
    spin();
}

// A child that sleeps reading its command pipe and, for each byte, burns
// 60 ms of CPU and reports its tid again.
void burstBody(int up, int down)
{
    report(up, gettid());
    for (;;)
    {
        char c = 0;
        const ssize_t n = ::read(down, &c, 1);
        if (n == 0)
        {
            ::_exit(0);
        }
        if (n == 1)
        {
            burn(60);
            report(up, gettid());
        }
    }
}

// Task `tid`'s state from its stat file, or 0.
char stateOf(pid_t tid)
{
    std::ifstream in("/proc/" + std::to_string(tid) + "/task/" +
                     std::to_string(tid) + "/stat");
    std::string text;
    std::getline(in, text);
    TaskStat stat;
    return parseTaskStat(text, stat) ? stat.state : '\0';
}

// Waits until task `tid` sleeps ('S'); false when it does not in time.
bool waitAsleep(pid_t tid)
{
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline)
    {
        if (stateOf(tid) == 'S')
        {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
}

// Ticks until every thread of `want` has been seen active (in any tick), or
// the deadline passes. Returns every entry seen.
std::vector<ActiveTask> tickUntilSeen(TaskActivity& activity,
                                      std::span<const ClampHint> hints,
                                      const std::set<pid_t>& want)
{
    std::vector<ActiveTask> seen;
    std::set<pid_t> missing = want;
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!missing.empty() && std::chrono::steady_clock::now() < deadline)
    {
        for (const ActiveTask& a : activity.tick(hints))
        {
            seen.push_back(a);
            missing.erase(a.tid);
        }
        if (!missing.empty())
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    return seen;
}

std::set<pid_t> tidsOf(const std::vector<ActiveTask>& entries)
{
    std::set<pid_t> out;
    for (const ActiveTask& a : entries)
    {
        out.insert(a.tid);
    }
    return out;
}

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
    EXPECT_THAT(activity.tick(hints), ElementsAre(ActiveTask{5, 11, 2, boost}));
    EXPECT_EQ(activity.trackedThreads(), 3U);

    // Thread 10 ran in between and sleeps again; 11 still runs, now on 0;
    // 12 is blocked and has not run.
    proc.thread(10, 10, 'S', 101, 6);
    proc.thread(10, 11, 'R', 50, 0);
    EXPECT_THAT(activity.tick(hints),
                UnorderedElementsAre(ActiveTask{5, 10, 6, boost},
                                     ActiveTask{5, 11, 0, boost}));

    // No growth, not running: not active.
    EXPECT_THAT(activity.tick(hints), ElementsAre(ActiveTask{5, 11, 0, boost}));
    proc.thread(10, 11, 'S', 50, 0);
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    EXPECT_EQ(activity.trackedThreads(), 3U);
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
    EXPECT_THAT(activity.tick(hints), ElementsAre(ActiveTask{1, 21, 1, cap}));
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
    // Every hint sees the growth, not only the first to look.
    EXPECT_THAT(activity.tick(hints), ElementsAre(ActiveTask{1, 30, 3, boost},
                                                  ActiveTask{2, 30, 3, cap},
                                                  ActiveTask{3, 30, 3, cap}));
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    EXPECT_EQ(activity.trackedThreads(), 1U);
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
    EXPECT_THAT(activity.tick(hints), ElementsAre(ActiveTask{1, 40, 0, boost}));
    EXPECT_EQ(activity.trackedThreads(), 3U);

    proc.remove(40, 41);
    proc.remove(50, 50);
    EXPECT_THAT(activity.tick(hints), ElementsAre(ActiveTask{1, 40, 0, boost}));
    EXPECT_EQ(activity.trackedThreads(), 1U);

    // A thread that comes back (or a reused number) starts afresh: its CPU
    // time is not compared with the old one's.
    proc.thread(40, 41, 'S', 500, 1);
    EXPECT_THAT(activity.tick(hints), ElementsAre(ActiveTask{1, 40, 0, boost}));

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
    EXPECT_THAT(activity.tick(hints), ElementsAre(ActiveTask{1, 70, 0, boost}));
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
                ElementsAre(ActiveTask{1, 81, 5, cap}));
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
    const std::span<const ActiveTask> active =
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
        const std::span<const ActiveTask> active = activity.tick(hints);
        perTick.push_back(active.size());
        for (const ActiveTask& a : active)
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
    const std::span<const ActiveTask> again = activity.tick(hints);
    EXPECT_EQ(again.size(), 255U);
    EXPECT_EQ(tidsOf({again.begin(), again.end()}).count(77), 0U);
}

TEST(TaskActivityFake, RefusesAMissingProcDir)
{
    const cppc::test::TempTree tree;
    EXPECT_THROW(TaskActivity(tree.path() / "absent"), std::system_error);
}

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
    const std::vector<ActiveTask> seen =
        tickUntilSeen(activity, hints, {child.pid()});
    ASSERT_THAT(tidsOf(seen), ElementsAre(child.pid()));
    for (const ActiveTask& a : seen)
    {
        EXPECT_EQ(a.handle, 7U);
        EXPECT_EQ(a.clamp, boost);
        EXPECT_THAT(allowed, ::testing::Contains(a.cpu));
    }

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
    EXPECT_THAT(activity.tick(hints), IsEmpty());
    for (int i = 0; i < 5; ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        EXPECT_THAT(activity.tick(hints), IsEmpty()) << i;
    }
    EXPECT_EQ(activity.trackedThreads(), 1U);
}

TEST(TaskActivity, AThreadThatRanBetweenTicksIsActive)
{
    Child child(burstBody);
    ASSERT_EQ(child.readTid(), child.pid());
    ASSERT_TRUE(waitAsleep(child.pid()));

    TaskActivity activity;
    const std::vector<ClampHint> hints{{1, {child.pid(), true}, boost},
                                       {2, {child.pid(), false}, cap}};
    EXPECT_THAT(activity.tick(hints), IsEmpty());

    // It burns 60 ms of CPU and sleeps again before the next tick.
    child.poke();
    ASSERT_EQ(child.readTid(), child.pid());
    ASSERT_TRUE(waitAsleep(child.pid()));
    const std::span<const ActiveTask> ran = activity.tick(hints);
    ASSERT_EQ(ran.size(), 2U);
    EXPECT_EQ(ran[0].handle, 1U);
    EXPECT_EQ(ran[0].tid, child.pid());
    EXPECT_EQ(ran[0].clamp, boost);
    EXPECT_EQ(ran[1].handle, 2U);
    EXPECT_EQ(ran[1].tid, child.pid());
    EXPECT_EQ(ran[1].clamp, cap);
    EXPECT_EQ(ran[0].cpu, ran[1].cpu);

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

    TaskActivity activity;
    const std::vector<ClampHint> hints{{3, {child.pid(), true}, boost}};
    const std::vector<ActiveTask> seen =
        tickUntilSeen(activity, hints, {leader, second});
    EXPECT_EQ(tidsOf(seen), (std::set<pid_t>{leader, second}));
    EXPECT_EQ(activity.trackedThreads(), 2U);
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
        std::vector<ActiveTask> seen = tickUntilSeen(activity, hints, {target});
        // A few more ticks: never the other thread.
        for (int i = 0; i < 5; ++i)
        {
            for (const ActiveTask& a : activity.tick(hints))
            {
                seen.push_back(a);
            }
        }
        EXPECT_THAT(tidsOf(seen), ElementsAre(target));
        EXPECT_EQ(activity.trackedThreads(), 1U);
    }
}

} // namespace

// Readable failure messages.
void PrintTo(const ActiveTask& a, std::ostream* os)
{
    *os << "{handle " << a.handle << ", tid " << a.tid << ", cpu " << a.cpu
        << ", clamp [" << a.clamp.min << ", " << a.clamp.max << "]}";
}

} // namespace cppcgov::daemon
