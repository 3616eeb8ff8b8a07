// The hint registry with real tasks: child processes whose exit the test
// controls through a pipe, and a thread of the test itself. Hints end on
// release by their owner, when their client leaves, and when their task
// exits; limits refuse extra hints and fast callers; a process that gets
// an exited task's PID does not inherit its hint.
#include "daemon/hint_registry.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
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

// A child process that runs until exit() is called.
class Child
{
  public:
    Child()
    {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0)
        {
            throw std::system_error(errno, std::system_category(), "pipe2");
        }
        pid_ = ::fork();
        if (pid_ < 0)
        {
            throw std::system_error(errno, std::system_category(), "fork");
        }
        if (pid_ == 0)
        {
            ::close(fds[1]);
            char c = 0;
            // Returns 0 (end of file) when the parent closes its end.
            while (::read(fds[0], &c, 1) < 0 && errno == EINTR)
            {}
            ::_exit(0);
        }
        ::close(fds[0]);
        control_ = fds[1];
    }

    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    ~Child()
    {
        exit();
    }

    pid_t pid() const
    {
        return pid_;
    }

    // Lets the child exit and waits until it is a zombie, not reaped yet:
    // its PID cannot be reused, but its pidfd reports the exit.
    void exitUnreaped()
    {
        if (control_ >= 0)
        {
            ::close(control_);
            control_ = -1;
            siginfo_t info{};
            while (::waitid(P_PID, static_cast<id_t>(pid_), &info,
                            WEXITED | WNOWAIT) != 0 &&
                   errno == EINTR)
            {}
        }
    }

    // Lets the child exit and reaps it: its PID is free for reuse.
    void exit()
    {
        exitUnreaped();
        if (!reaped_)
        {
            reaped_ = true;
            while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR)
            {}
        }
    }

  private:
    pid_t pid_ = -1;
    int control_ = -1;
    bool reaped_ = false;
};

constexpr Clamp boost{512, 1024};
constexpr Clamp cap{0, 256};

HintTarget process(const Child& child)
{
    return {child.pid(), true};
}

// No rate limit, unless a test asks for one.
HintLimits roomy()
{
    return {64, 0};
}

TEST(HintRegistry, AddsAndReleases)
{
    Child child;
    HintRegistry reg(roomy());
    const AddResult a = reg.add(":1.1", process(child), boost, 0);
    ASSERT_FALSE(a.error) << a.error.message();
    EXPECT_NE(a.handle, 0U);
    EXPECT_TRUE(reg.contains(a.handle));
    EXPECT_EQ(reg.size(), 1U);
    EXPECT_EQ(reg.count(":1.1"), 1U);
    EXPECT_THAT(reg.clampsForTasks(),
                ElementsAre(HintedTask{{child.pid(), true}, boost}));
    const std::vector<HintFd> fds = reg.pidfds();
    ASSERT_EQ(fds.size(), 1U);
    EXPECT_EQ(fds[0].handle, a.handle);
    EXPECT_GE(fds[0].fd, 0);

    EXPECT_FALSE(reg.release(":1.1", a.handle, 0));
    EXPECT_FALSE(reg.contains(a.handle));
    EXPECT_EQ(reg.size(), 0U);
    EXPECT_EQ(reg.count(":1.1"), 0U);
    EXPECT_THAT(reg.clampsForTasks(), IsEmpty());
    EXPECT_THAT(reg.pidfds(), IsEmpty());
    EXPECT_EQ(reg.release(":1.1", a.handle, 0), HintErrc::noSuchHint);

    // Handles are never reused.
    const AddResult b = reg.add(":1.1", process(child), cap, 0);
    ASSERT_FALSE(b.error);
    EXPECT_GT(b.handle, a.handle);
}

TEST(HintRegistry, OnlyTheOwnerReleases)
{
    Child child;
    HintRegistry reg(roomy());
    const AddResult a = reg.add(":1.1", process(child), boost, 0);
    ASSERT_FALSE(a.error);
    EXPECT_EQ(reg.release(":1.2", a.handle, 0), HintErrc::notOwner);
    EXPECT_TRUE(reg.contains(a.handle));
    EXPECT_FALSE(reg.release(":1.1", a.handle, 0));
}

TEST(HintRegistry, RefusesBadClamps)
{
    Child child;
    HintRegistry reg(roomy());
    for (const Clamp bad :
         {Clamp{1025, 1025}, Clamp{0, 1025}, Clamp{600, 500}, Clamp{1024, 0}})
    {
        const AddResult r = reg.add(":1.1", process(child), bad, 0);
        EXPECT_EQ(r.error, HintErrc::invalidClamp) << bad.min << " " << bad.max;
        EXPECT_EQ(r.handle, 0U);
    }
    EXPECT_EQ(reg.size(), 0U);
    for (const Clamp good :
         {Clamp{0, 0}, Clamp{1024, 1024}, Clamp{500, 500}, Clamp{0, 1024}})
    {
        EXPECT_FALSE(reg.add(":1.1", process(child), good, 0).error)
            << good.min << " " << good.max;
    }
}

TEST(HintRegistry, RefusesTasksThatDoNotExist)
{
    HintRegistry reg(roomy());
    pid_t gone = 0;
    {
        Child child;
        gone = child.pid();
    }
    EXPECT_EQ(reg.add(":1.1", {gone, true}, boost, 0).error,
              HintErrc::noSuchTask);
    EXPECT_EQ(reg.add(":1.1", {gone, false}, boost, 0).error,
              HintErrc::noSuchTask);
    EXPECT_EQ(reg.add(":1.1", {0, true}, boost, 0).error, HintErrc::noSuchTask);
    EXPECT_EQ(reg.add(":1.1", {-1, true}, boost, 0).error,
              HintErrc::noSuchTask);

    // A zombie has exited: no hint either.
    Child zombie;
    zombie.exitUnreaped();
    EXPECT_EQ(reg.add(":1.1", process(zombie), boost, 0).error,
              HintErrc::noSuchTask);
    EXPECT_EQ(reg.size(), 0U);
    EXPECT_EQ(reg.count(":1.1"), 0U);
}

TEST(HintRegistry, LimitsLiveHintsPerClient)
{
    Child child;
    HintRegistry reg({2, 0});
    const AddResult a = reg.add(":1.1", process(child), boost, 0);
    ASSERT_FALSE(a.error);
    ASSERT_FALSE(reg.add(":1.1", process(child), cap, 0).error);
    EXPECT_EQ(reg.add(":1.1", process(child), cap, 0).error,
              HintErrc::tooManyHints);
    EXPECT_EQ(reg.count(":1.1"), 2U);
    // Another client has its own limit.
    EXPECT_FALSE(reg.add(":1.2", process(child), cap, 0).error);
    // Releasing makes room.
    ASSERT_FALSE(reg.release(":1.1", a.handle, 0));
    EXPECT_FALSE(reg.add(":1.1", process(child), cap, 0).error);

    // A lower limit keeps the live hints but refuses new ones.
    reg.setLimits({1, 0});
    EXPECT_EQ(reg.count(":1.1"), 2U);
    EXPECT_EQ(reg.add(":1.1", process(child), cap, 0).error,
              HintErrc::tooManyHints);
    reg.setLimits({0, 0});
    EXPECT_EQ(reg.add(":1.3", process(child), cap, 0).error,
              HintErrc::tooManyHints);
}

TEST(HintRegistry, LimitsTheCallRatePerClient)
{
    Child child;
    HintRegistry reg({64, 2}); // 2 calls per second, burst 2
    const AddResult a = reg.add(":1.1", process(child), boost, 1'000'000);
    ASSERT_FALSE(a.error);
    ASSERT_FALSE(reg.release(":1.1", a.handle, 1'000'000));
    EXPECT_EQ(reg.add(":1.1", process(child), boost, 1'000'000).error,
              HintErrc::rateLimited);
    EXPECT_EQ(reg.release(":1.1", 12345, 1'000'000), HintErrc::rateLimited);
    // Failed calls count too, refused ones do not: half a second gives one
    // token back, which the failed release takes.
    EXPECT_EQ(reg.add(":1.1", process(child), boost, 1'499'999).error,
              HintErrc::rateLimited);
    EXPECT_EQ(reg.release(":1.1", 12345, 1'500'000), HintErrc::noSuchHint);
    EXPECT_EQ(reg.add(":1.1", process(child), boost, 1'500'000).error,
              HintErrc::rateLimited);
    // Time going backwards gives nothing.
    EXPECT_EQ(reg.add(":1.1", process(child), boost, 0).error,
              HintErrc::rateLimited);
    // Other clients have their own bucket.
    EXPECT_FALSE(reg.add(":1.2", process(child), boost, 1'500'000).error);
    // A long pause refills the bucket only up to the burst.
    EXPECT_FALSE(reg.add(":1.1", process(child), boost, 100'000'000).error);
    EXPECT_FALSE(reg.add(":1.1", process(child), boost, 100'000'000).error);
    EXPECT_EQ(reg.add(":1.1", process(child), boost, 100'000'000).error,
              HintErrc::rateLimited);
    // A client that left and comes back starts with a full bucket.
    reg.clientGone(":1.1");
    EXPECT_FALSE(reg.add(":1.1", process(child), boost, 100'000'000).error);
}

TEST(HintRegistry, ClientGoneEndsItsHints)
{
    Child child;
    HintRegistry reg(roomy());
    const AddResult a = reg.add(":1.1", process(child), boost, 0);
    const AddResult b = reg.add(":1.2", process(child), cap, 0);
    const AddResult c = reg.add(":1.1", process(child), cap, 0);
    ASSERT_FALSE(a.error || b.error || c.error);

    const std::vector<EndedHint> ended = reg.clientGone(":1.1");
    EXPECT_THAT(
        ended, ElementsAre(EndedHint{a.handle, ":1.1", EndReason::clientLeft},
                           EndedHint{c.handle, ":1.1", EndReason::clientLeft}));
    EXPECT_EQ(endReasonName(ended[0].reason), "client left");
    EXPECT_EQ(reg.count(":1.1"), 0U);
    EXPECT_TRUE(reg.contains(b.handle));
    EXPECT_THAT(reg.clampsForTasks(),
                ElementsAre(HintedTask{{child.pid(), true}, cap}));
    EXPECT_THAT(reg.clientGone(":1.1"), IsEmpty());
    EXPECT_THAT(reg.clientGone(":1.9"), IsEmpty());
}

TEST(HintRegistry, ReapEndsHintsOfExitedTasks)
{
    Child stays;
    Child leaves;
    HintRegistry reg(roomy());
    const AddResult a = reg.add(":1.1", process(leaves), boost, 0);
    const AddResult b = reg.add(":1.2", process(leaves), cap, 0);
    const AddResult c = reg.add(":1.1", process(stays), cap, 0);
    ASSERT_FALSE(a.error || b.error || c.error);
    EXPECT_THAT(reg.reap(), IsEmpty());

    leaves.exitUnreaped();
    // The event loop sees the pidfds become readable.
    for (const HintFd& h : reg.pidfds())
    {
        pollfd p{h.fd, POLLIN, 0};
        EXPECT_EQ(::poll(&p, 1, 0), h.handle == c.handle ? 0 : 1);
    }
    // Not reaped yet, but no longer listed for the sampler.
    EXPECT_THAT(reg.clampsForTasks(),
                ElementsAre(HintedTask{{stays.pid(), true}, cap}));

    const std::vector<EndedHint> ended = reg.reap();
    EXPECT_THAT(
        ended, ElementsAre(EndedHint{a.handle, ":1.1", EndReason::taskExited},
                           EndedHint{b.handle, ":1.2", EndReason::taskExited}));
    EXPECT_EQ(endReasonName(ended[0].reason), "task exited");
    EXPECT_EQ(reg.size(), 1U);
    EXPECT_EQ(reg.count(":1.1"), 1U);
    EXPECT_EQ(reg.count(":1.2"), 0U);
    EXPECT_THAT(reg.reap(), IsEmpty());
}

TEST(HintRegistry, ReusedPidDoesNotInheritAHint)
{
    HintRegistry reg(roomy());
    auto first = std::make_unique<Child>();
    const pid_t pid = first->pid();
    const AddResult a = reg.add(":1.1", process(*first), boost, 0);
    ASSERT_FALSE(a.error);
    first.reset(); // exits and is reaped: the PID is free

    // A new process, possibly with the same PID (the test does not force
    // it: that would change the machine's PID allocation). What keeps a
    // hint from passing to a reused PID is the pidfd, checked here: the
    // exited task's hint is gone from the clamps before reap() even runs.
    const auto second = std::make_unique<Child>();
    ::testing::Test::RecordProperty("samePid", second->pid() == pid ? 1 : 0);

    // Whatever the PID, the new process has no hint, before and after
    // reap().
    EXPECT_THAT(reg.clampsForTasks(), IsEmpty());
    EXPECT_THAT(reg.reap(), ElementsAre(EndedHint{a.handle, ":1.1",
                                                  EndReason::taskExited}));
    EXPECT_THAT(reg.clampsForTasks(), IsEmpty());
    EXPECT_EQ(reg.size(), 0U);

    // It can get its own.
    const AddResult b = reg.add(":1.1", process(*second), cap, 0);
    ASSERT_FALSE(b.error);
    EXPECT_NE(b.handle, a.handle);
    EXPECT_THAT(reg.clampsForTasks(),
                ElementsAre(HintedTask{{second->pid(), true}, cap}));
}

TEST(HintRegistry, HintsAThreadOrSaysWhyNot)
{
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    pid_t tid = 0;
    int ready[2];
    ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    std::thread worker([&] {
        const auto self = static_cast<pid_t>(::syscall(SYS_gettid));
        EXPECT_EQ(::write(ready[1], &self, sizeof self),
                  static_cast<ssize_t>(sizeof self));
        char c = 0;
        while (::read(fds[0], &c, 1) < 0 && errno == EINTR)
        {}
    });
    ASSERT_EQ(::read(ready[0], &tid, sizeof tid),
              static_cast<ssize_t>(sizeof tid));

    HintRegistry reg(roomy());
    // The thread is not a process.
    EXPECT_EQ(reg.add(":1.1", {tid, true}, boost, 0).error,
              HintErrc::notAProcess);
    const AddResult a = reg.add(":1.1", {tid, false}, boost, 0);
    ::close(fds[1]);
    worker.join();
    if (a.error == HintErrc::threadUnsupported)
    {
        EXPECT_EQ(reg.size(), 0U); // a kernel before 6.9
    }
    else
    {
        ASSERT_FALSE(a.error) << a.error.message();
        // join() can return a moment before the kernel has released the
        // thread: wait for its pidfd as the event loop would.
        const std::vector<HintFd> held = reg.pidfds();
        ASSERT_EQ(held.size(), 1U);
        pollfd p{held[0].fd, POLLIN, 0};
        ASSERT_EQ(::poll(&p, 1, 10'000), 1);
        // The thread's exit ends its hint; the process lives on.
        EXPECT_THAT(reg.reap(), ElementsAre(EndedHint{a.handle, ":1.1",
                                                      EndReason::taskExited}));
    }
    for (const int fd : {fds[0], ready[0], ready[1]})
    {
        ::close(fd);
    }
}

TEST(HintRegistry, TakesAPidfdFromTheCaller)
{
    Child child;
    HintRegistry reg(roomy());
    const int pidfd =
        static_cast<int>(::syscall(SYS_pidfd_open, child.pid(), 0));
    ASSERT_GE(pidfd, 0);
    const AddResult a = reg.addPidfd(":1.1", pidfd, boost, 0);
    ::close(pidfd); // the registry holds its own
    ASSERT_FALSE(a.error) << a.error.message();
    EXPECT_THAT(reg.clampsForTasks(),
                ElementsAre(HintedTask{{child.pid(), true}, boost}));
    child.exit();
    EXPECT_THAT(reg.reap(), ElementsAre(EndedHint{a.handle, ":1.1",
                                                  EndReason::taskExited}));

    // A pidfd of a process that already exited.
    const int stale =
        static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
    ASSERT_GE(stale, 0);
    {
        Child gone;
        const int fd =
            static_cast<int>(::syscall(SYS_pidfd_open, gone.pid(), 0));
        ASSERT_GE(fd, 0);
        gone.exit();
        EXPECT_EQ(reg.addPidfd(":1.1", fd, boost, 0).error,
                  HintErrc::noSuchTask);
        ::close(fd);
    }
    ::close(stale);

    int pipeFds[2];
    ASSERT_EQ(::pipe2(pipeFds, O_CLOEXEC), 0);
    EXPECT_EQ(reg.addPidfd(":1.1", pipeFds[0], boost, 0).error,
              HintErrc::notAPidfd);
    ::close(pipeFds[0]);
    ::close(pipeFds[1]);
    EXPECT_EQ(reg.addPidfd(":1.1", pipeFds[0], boost, 0).error,
              HintErrc::notAPidfd);
    EXPECT_EQ(reg.addPidfd(":1.1", -1, boost, 0).error, HintErrc::notAPidfd);
    EXPECT_EQ(reg.size(), 0U);
}

TEST(HintRegistry, RefusesAnEmptyClientName)
{
    Child child;
    HintRegistry reg({64, 1});
    EXPECT_EQ(reg.add("", process(child), boost, 0).error,
              HintErrc::invalidClient);
    EXPECT_EQ(reg.release("", 1, 0), HintErrc::invalidClient);
}

TEST(HintRegistry, NamesItsErrors)
{
    EXPECT_STREQ(hintErrorCategory().name(), "cppcgov-hints");
    for (int e = 1; e <= static_cast<int>(HintErrc::invalidClient); ++e)
    {
        const std::string text =
            make_error_code(static_cast<HintErrc>(e)).message();
        EXPECT_FALSE(text.empty());
        EXPECT_EQ(text.find("unknown"), std::string::npos) << e;
    }
}

} // namespace
} // namespace cppcgov::daemon
