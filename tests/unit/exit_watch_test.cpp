// SPDX-License-Identifier: Apache-2.0
// ExitWatch with real child processes whose exit the test controls through
// a pipe: an exit is reported once with its key, a task that lives is not
// reported, a pidfd closed before the exit stops its watch, a task that
// exited before it was watched is reported at once.
#include "child_process.hpp"
#include "daemon/exit_watch.hpp"
#include "lib/backend/pidfd.hpp"

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

// A child process (child_process.hpp) with a pidfd on it.
class Child
{
  public:
    Child()
    {
        if (const std::error_code ec = cppc::backend::openPidfd(
                task_.pid(), cppc::backend::PidfdOf::process, pidfd_))
        {
            throw std::system_error(ec, "pidfd_open");
        }
    }

    int pidfd() const noexcept
    {
        return pidfd_.get();
    }

    void closePidfd()
    {
        pidfd_.reset();
    }

    // Makes the child exit and reaps it.
    void exit()
    {
        task_.exit();
    }

  private:
    test::Child task_;
    cppc::backend::Fd pidfd_;
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
