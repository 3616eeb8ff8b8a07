// ExitWatch with real child processes whose exit the test controls through
// a pipe: an exit is reported once with its key, a task that lives is not
// reported, a pidfd closed before the exit stops its watch, a task that
// exited before it was watched is reported at once.
#include "daemon/exit_watch.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <system_error>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// A child process that exits when exit() is called (or the test ends),
// with a pidfd on it: it waits for the end of a pipe whose write end only
// the test holds.
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
            // Only this child's own read end stays open: write ends of
            // other children's pipes inherited here would keep them alive.
            (void)::dup2(fds[0], 3);
            (void)::close_range(4, ~0U, 0);
            char c = 0;
            while (::read(3, &c, 1) < 0 && errno == EINTR)
            {}
            ::_exit(0);
        }
        ::close(fds[0]);
        control_ = fds[1];
        pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
        if (pidfd_ < 0)
        {
            throw std::system_error(errno, std::system_category(),
                                    "pidfd_open");
        }
    }

    ~Child()
    {
        exit();
        closePidfd();
    }

    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    int pidfd() const noexcept
    {
        return pidfd_;
    }

    void closePidfd()
    {
        if (pidfd_ >= 0)
        {
            ::close(pidfd_);
            pidfd_ = -1;
        }
    }

    // Makes the child exit and reaps it.
    void exit()
    {
        if (control_ >= 0)
        {
            ::close(control_);
            control_ = -1;
            (void)::waitpid(pid_, nullptr, 0);
        }
    }

  private:
    pid_t pid_ = -1;
    int control_ = -1;
    int pidfd_ = -1;
};

class ExitWatchTest : public ::testing::Test
{
  protected:
    // Runs the loop until `count` exits were reported or 5 s passed.
    void runUntil(std::size_t count)
    {
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (exited_.size() < count &&
               std::chrono::steady_clock::now() < deadline)
        {
            io_.run_for(std::chrono::milliseconds(10));
            io_.restart();
        }
    }

    // Runs whatever is ready on the loop, without waiting.
    void poll()
    {
        io_.poll();
        io_.restart();
    }

    boost::asio::io_context io_;
    std::vector<std::uint64_t> exited_;
    ExitWatch watch_{io_,
                     [this](std::uint64_t key) { exited_.push_back(key); }};
};

TEST_F(ExitWatchTest, ReportsTheExitOfAWatchedTaskOnce)
{
    Child a;
    Child b;
    ASSERT_FALSE(watch_.add(a.pidfd(), 7));
    ASSERT_FALSE(watch_.add(b.pidfd(), 8));
    poll();
    EXPECT_THAT(exited_, IsEmpty());

    a.exit();
    runUntil(1);
    EXPECT_THAT(exited_, ElementsAre(7U));

    // The pidfd stays readable, but the watch fired already.
    io_.run_for(std::chrono::milliseconds(50));
    io_.restart();
    EXPECT_THAT(exited_, ElementsAre(7U));

    b.exit();
    runUntil(2);
    EXPECT_THAT(exited_, ElementsAre(7U, 8U));
}

TEST_F(ExitWatchTest, AClosedPidfdIsNoLongerWatched)
{
    Child a;
    Child b;
    ASSERT_FALSE(watch_.add(a.pidfd(), 1));
    ASSERT_FALSE(watch_.add(b.pidfd(), 2));
    a.closePidfd();
    a.exit();
    b.exit();
    runUntil(1);
    io_.run_for(std::chrono::milliseconds(50));
    io_.restart();
    EXPECT_THAT(exited_, ElementsAre(2U));
}

TEST_F(ExitWatchTest, ATaskThatAlreadyExitedIsReportedAtOnce)
{
    Child a;
    a.exit();
    ASSERT_FALSE(watch_.add(a.pidfd(), 3));
    runUntil(1);
    EXPECT_THAT(exited_, ElementsAre(3U));
}

TEST_F(ExitWatchTest, ManyExitsInOneTurnAreAllReported)
{
    // More than one epoll_wait batch.
    std::vector<std::unique_ptr<Child>> children;
    for (std::uint64_t key = 0; key < 100; ++key)
    {
        children.push_back(std::make_unique<Child>());
        ASSERT_FALSE(watch_.add(children.back()->pidfd(), key));
    }
    for (auto& c : children)
    {
        c->exit();
    }
    runUntil(100);
    ASSERT_EQ(exited_.size(), 100U);
    std::sort(exited_.begin(), exited_.end());
    for (std::uint64_t key = 0; key < 100; ++key)
    {
        EXPECT_EQ(exited_[key], key);
    }
}

TEST_F(ExitWatchTest, WatchingOnePidfdTwiceIsRefused)
{
    Child a;
    ASSERT_FALSE(watch_.add(a.pidfd(), 1));
    EXPECT_EQ(watch_.add(a.pidfd(), 2), std::errc::file_exists);
    EXPECT_EQ(watch_.add(-1, 3), std::errc::bad_file_descriptor);
}

TEST(ExitWatchLifetimeTest, AHandlerMayDestroyTheWatch)
{
    boost::asio::io_context io;
    std::unique_ptr<ExitWatch> watch;
    int calls = 0;
    watch = std::make_unique<ExitWatch>(io, [&](std::uint64_t) {
        ++calls;
        watch.reset();
    });
    Child a;
    Child b;
    ASSERT_FALSE(watch->add(a.pidfd(), 1));
    ASSERT_FALSE(watch->add(b.pidfd(), 2));
    a.exit();
    b.exit();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (watch && std::chrono::steady_clock::now() < deadline)
    {
        io.run_for(std::chrono::milliseconds(10));
        io.restart();
    }
    io.run_for(std::chrono::milliseconds(20));
    EXPECT_EQ(calls, 1);
}

} // namespace
} // namespace cppcgov::daemon
