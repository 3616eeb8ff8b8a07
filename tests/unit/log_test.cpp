// SPDX-License-Identifier: Apache-2.0
// cppcgovd's log: the priority prefix only when stderr is the journal
// (JOURNAL_STREAM's DEV:INODE against fstat of the fd), the level filter,
// the level names of --log-level, and the queue of a thread that must not
// wait on stderr: kept in order, cut, counted when full, and never waiting
// when stderr is a pipe nobody reads.
#include "daemon/log.hpp"
#include "daemon/log_queue.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon::log
{
namespace
{

// A pipe, closed at the end.
struct Pipe
{
    Pipe()
    {
        EXPECT_EQ(::pipe2(fds.data(), O_CLOEXEC), 0);
    }
    ~Pipe()
    {
        for (const int fd : fds)
        {
            if (fd >= 0)
            {
                (void)::close(fd);
            }
        }
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;

    std::array<int, 2> fds{-1, -1};
};

std::string streamOf(int fd, std::uint64_t inodeOffset = 0)
{
    struct stat st
    {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return std::to_string(st.st_dev) + ":" +
           std::to_string(st.st_ino + inodeOffset);
}

TEST(JournalStreamTest, OnlyTheStreamItNames)
{
    const Pipe p;
    const int fd = p.fds[1];
    EXPECT_TRUE(isJournalStream(streamOf(fd).c_str(), fd));
    EXPECT_FALSE(isJournalStream(streamOf(fd, 1).c_str(), fd));
    const Pipe other;
    EXPECT_FALSE(isJournalStream(streamOf(other.fds[1]).c_str(), fd));
    EXPECT_FALSE(isJournalStream(nullptr, fd));
    EXPECT_FALSE(isJournalStream("", fd));
    EXPECT_FALSE(isJournalStream("12", fd));
    const std::string withJunk = streamOf(fd) + "x";
    EXPECT_FALSE(isJournalStream(withJunk.c_str(), fd));
    EXPECT_FALSE(isJournalStream(streamOf(fd).c_str(), -1));
}

// What the log writes on stderr while `body` runs.
template <class Body>
std::string stderrOf(const Body& body)
{
    Pipe p;
    const int saved = ::dup(STDERR_FILENO);
    EXPECT_GE(saved, 0);
    EXPECT_EQ(::dup2(p.fds[1], STDERR_FILENO), STDERR_FILENO);
    body();
    EXPECT_EQ(::dup2(saved, STDERR_FILENO), STDERR_FILENO);
    (void)::close(saved);
    // The write end closed, the read below ends at what was written.
    (void)::close(p.fds[1]);
    p.fds[1] = -1;
    std::string out;
    std::array<char, 256> buffer{};
    for (ssize_t n = 0;
         (n = ::read(p.fds[0], buffer.data(), buffer.size())) > 0;)
    {
        out.append(buffer.data(), static_cast<std::size_t>(n));
    }
    return out;
}

TEST(LogTest, DropsLinesBelowTheLevelAndPrefixesOnlyWhenAsked)
{
    const std::string out = stderrOf([] {
        configure(Level::warning, false);
        error("e1");
        warning("w1");
        notice("n1");
        info("i1");
        debug("d1");
        configure(Level::debug, true);
        notice("n2");
        debug("d2");
    });
    configure(Level::info, false);
    EXPECT_EQ(out, "e1\nw1\n<5>n2\n<7>d2\n");
}

TEST(LogTest, EnabledFollowsTheLevel)
{
    configure(Level::notice, false);
    EXPECT_TRUE(enabled(Level::error));
    EXPECT_TRUE(enabled(Level::notice));
    EXPECT_FALSE(enabled(Level::info));
    EXPECT_FALSE(enabled(Level::debug));
    configure(Level::info, false);
}

TEST(LogTest, LevelNames)
{
    EXPECT_EQ(parseLevel("error"), Level::error);
    EXPECT_EQ(parseLevel("warning"), Level::warning);
    EXPECT_EQ(parseLevel("notice"), Level::notice);
    EXPECT_EQ(parseLevel("info"), Level::info);
    EXPECT_EQ(parseLevel("debug"), Level::debug);
    EXPECT_EQ(parseLevel("warn"), std::nullopt);
    EXPECT_EQ(parseLevel("DEBUG"), std::nullopt);
    EXPECT_EQ(parseLevel(""), std::nullopt);
}

TEST(LogQueueTest, KeepsLinesInOrderCutsLongOnesAndCountsWhatDoesNotFit)
{
    LogQueue queue(3);
    const std::string longLine(LogQueue::lineBytes + 10, 'x');
    EXPECT_TRUE(queue.push(Level::warning, "first"));
    EXPECT_TRUE(queue.push(Level::error, longLine));
    EXPECT_TRUE(queue.push(Level::notice, ""));
    EXPECT_FALSE(queue.push(Level::error, "no room"));
    EXPECT_EQ(queue.dropped(), 1U);

    std::vector<std::pair<Level, std::string>> seen;
    const auto take = [&seen](Level l, std::string_view text) {
        seen.emplace_back(l, std::string(text));
    };
    EXPECT_EQ(queue.drain(take), 3U);
    ASSERT_EQ(seen.size(), 3U);
    EXPECT_EQ(seen[0],
              (std::pair<Level, std::string>{Level::warning, "first"}));
    EXPECT_EQ(seen[1].first, Level::error);
    EXPECT_EQ(seen[1].second.size(), LogQueue::lineBytes);
    EXPECT_EQ(seen[1].second.substr(LogQueue::lineBytes - 5), "xx...");
    EXPECT_EQ(seen[2], (std::pair<Level, std::string>{Level::notice, ""}));
    EXPECT_EQ(queue.takeDropped(), 1U);
    EXPECT_EQ(queue.takeDropped(), 0U);

    // Room again, around the end of the ring.
    seen.clear();
    for (int i = 0; i < 5; ++i)
    {
        EXPECT_TRUE(queue.push(Level::info, std::to_string(i)));
        EXPECT_EQ(queue.drain(take), 1U);
    }
    ASSERT_EQ(seen.size(), 5U);
    EXPECT_EQ(seen[4].second, "4");
    EXPECT_EQ(queue.drain(take), 0U);
}

TEST(LogQueueTest, AThreadThatDefersWritesNothingUntilItsLinesAreWrittenOut)
{
    LogQueue queue(2);
    const std::string out = stderrOf([&queue] {
        configure(Level::info, true);
        std::thread([&queue] {
            deferTo(&queue);
            warning("w1");
            debug("below the level");
            error("e1");
            error("lost");
            deferTo(nullptr);
            notice("not deferred");
        }).join();
        notice("before");
        writeQueued(queue);
        writeQueued(queue);
    });
    configure(Level::info, false);
    EXPECT_EQ(out, "<5>not deferred\n<5>before\n<4>w1\n<3>e1\n"
                   "<4>1 log lines of the tick were lost: they came faster "
                   "than they were written out\n");
}

TEST(LogQueueTest, ADeferringThreadDoesNotWaitOnAStderrNobodyReads)
{
    // stderr a pipe that is full and never read, as a journal that stopped
    // reading leaves it: a plain write would wait for ever.
    Pipe p;
    ASSERT_EQ(::fcntl(p.fds[1], F_SETFL, O_NONBLOCK), 0);
    const std::string block(4096, 'x');
    while (::write(p.fds[1], block.data(), block.size()) > 0)
    {}
    ASSERT_EQ(::fcntl(p.fds[1], F_SETFL, 0), 0);
    // A write that waited fails with EPIPE once the reader is closed below,
    // rather than ending the test.
    const auto previous = ::signal(SIGPIPE, SIG_IGN);
    const int saved = ::dup(STDERR_FILENO);
    ASSERT_GE(saved, 0);
    ASSERT_EQ(::dup2(p.fds[1], STDERR_FILENO), STDERR_FILENO);

    LogQueue queue(8);
    std::atomic<bool> done{false};
    std::thread logger([&] {
        deferTo(&queue);
        for (int i = 0; i < 100; ++i)
        {
            error("the tick falls behind");
        }
        deferTo(nullptr);
        done = true;
    });
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done && std::chrono::steady_clock::now() < deadline)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const bool finished = done;
    // Unblock whatever would wait, then put stderr back.
    (void)::close(p.fds[0]);
    p.fds[0] = -1;
    logger.join();
    EXPECT_EQ(::dup2(saved, STDERR_FILENO), STDERR_FILENO);
    (void)::close(saved);
    (void)::signal(SIGPIPE, previous);
    EXPECT_TRUE(finished) << "the deferring thread waited on stderr";
    EXPECT_EQ(queue.dropped(), 92U);
}

} // namespace
} // namespace cppcgov::daemon::log
