// SPDX-License-Identifier: Apache-2.0
// cppcgovd's log: the priority prefix only when stderr is the journal
// (JOURNAL_STREAM's DEV:INODE against fstat of the fd), the level filter,
// and the level names of --log-level.
#include "daemon/log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <string>

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

} // namespace
} // namespace cppcgov::daemon::log
