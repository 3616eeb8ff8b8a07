// SPDX-License-Identifier: Apache-2.0
// What the task tests share: a child process the test drives through
// pipes (busy, paused, two busy threads, bursts on command), waiting for a
// task to sleep, ticking until threads are seen, the clamps the hints use
// and a readable HintSighting.
#pragma once

#include "daemon/task_activity.hpp"
#include "daemon/task_info.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace cppcgov::daemon
{

// Readable failure messages.
inline void PrintTo(const HintSighting& a, std::ostream* os)
{
    *os << "{handle " << a.handle << ", tid " << a.tid << ", cpu " << a.cpu
        << ", clamp [" << a.clamp.min << ", " << a.clamp.max << "], "
        << a.cpuTimeUs << " us}";
}

namespace test
{

using policies::Clamp;

// How long a test waits for an event before it fails.
constexpr auto patience = std::chrono::seconds(20);

constexpr Clamp boost{512, 1024};
constexpr Clamp cap{0, 256};

// One USER_HZ tick of procfs's CPU times, in microseconds.
inline const std::uint64_t tickUs =
    1'000'000 / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));

inline pid_t gettid()
{
    return static_cast<pid_t>(::syscall(SYS_gettid));
}

// Never set: the busy loops' condition. Loading it is an atomic operation,
// so the loops make progress in the language's sense.
inline std::atomic<bool> never{false};

[[noreturn]] inline void spin()
{
    while (!never.load(std::memory_order_relaxed))
    {}
    ::_exit(0);
}

// Writes `tid` to `fd` (a pipe to the test), or exits.
inline void report(int fd, pid_t tid)
{
    if (::write(fd, &tid, sizeof tid) != static_cast<ssize_t>(sizeof tid))
    {
        ::_exit(3);
    }
}

// Burns `ms` milliseconds of this thread's CPU time.
inline void burn(long ms)
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
inline void busyBody(int up, int /*down*/)
{
    report(up, gettid());
    spin();
}

// A child whose main thread sleeps in pause().
inline void pausedBody(int up, int /*down*/)
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
inline void twoBusyBody(int up, int /*down*/)
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
inline void burstBody(int up, int down)
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
inline char stateOf(pid_t tid)
{
    std::ifstream in("/proc/" + std::to_string(tid) + "/task/" +
                     std::to_string(tid) + "/stat");
    std::string text;
    std::getline(in, text);
    TaskStat stat;
    return parseTaskStat(text, stat) ? stat.state : '\0';
}

// The threads of process `pid`, as its procfs task directory lists them:
// the kernel's list, which includes any thread an emulator running the test
// adds to every process.
inline std::set<pid_t> threadsOf(pid_t pid)
{
    std::error_code ec;
    std::set<pid_t> tids;
    for (std::filesystem::directory_iterator it(
             "/proc/" + std::to_string(pid) + "/task", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    {
        tids.insert(
            static_cast<pid_t>(std::stol(it->path().filename().string())));
    }
    return tids;
}

// Waits until task `tid` sleeps ('S'); false when it does not in time.
inline bool waitAsleep(pid_t tid)
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
inline std::vector<HintSighting> tickUntilSeen(TaskActivity& activity,
                                               std::span<const ClampHint> hints,
                                               const std::set<pid_t>& want)
{
    std::vector<HintSighting> seen;
    std::set<pid_t> missing = want;
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!missing.empty() && std::chrono::steady_clock::now() < deadline)
    {
        for (const HintSighting& a : activity.tick(hints))
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

inline std::set<pid_t> tidsOf(const std::vector<HintSighting>& entries)
{
    std::set<pid_t> out;
    for (const HintSighting& a : entries)
    {
        out.insert(a.tid);
    }
    return out;
}

} // namespace test
} // namespace cppcgov::daemon
