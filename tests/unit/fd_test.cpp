// SPDX-License-Identifier: Apache-2.0
// Fd: ownership of a file descriptor across moves, resets and release, and
// that every descriptor is closed exactly once.
#include "lib/backend/fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <system_error>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using ::testing::HasSubstr;

bool isOpen(int fd)
{
    return ::fcntl(fd, F_GETFD) != -1;
}

int openNull()
{
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
    {
        throw std::system_error(errno, std::system_category(), "/dev/null");
    }
    return fd;
}

TEST(FdTest, DefaultOwnsNothing)
{
    Fd fd;
    EXPECT_EQ(fd.get(), -1);
    EXPECT_FALSE(fd);
    EXPECT_EQ(fd.close(), 0);
}

TEST(FdTest, DestructorClosesTheDescriptor)
{
    int raw = -1;
    {
        Fd fd(openNull());
        raw = fd.get();
        EXPECT_TRUE(fd);
        EXPECT_TRUE(isOpen(raw));
    }
    EXPECT_FALSE(isOpen(raw));
}

TEST(FdTest, MoveConstructionTransfersAndTheSourceClosesNothing)
{
    const int raw = openNull();
    auto from = std::make_unique<Fd>(raw);
    Fd to(std::move(*from));
    EXPECT_EQ(from->get(), -1);
    EXPECT_EQ(to.get(), raw);
    from.reset(); // destroying the moved-from Fd must not close it
    EXPECT_TRUE(isOpen(raw));
}

TEST(FdTest, MoveAssignmentOverAnOpenFdClosesTheOldOne)
{
    const int first = openNull();
    const int second = openNull();
    Fd a(first);
    Fd b(second);
    a = std::move(b);
    EXPECT_FALSE(isOpen(first));
    EXPECT_TRUE(isOpen(second));
    EXPECT_EQ(a.get(), second);
    EXPECT_EQ(b.get(), -1); // NOLINT(bugprone-use-after-move)
}

TEST(FdTest, SelfMoveAssignmentKeepsTheDescriptor)
{
    const int raw = openNull();
    Fd a(raw);
    Fd& alias = a;
    a = std::move(alias);
    EXPECT_EQ(a.get(), raw);
    EXPECT_TRUE(isOpen(raw));
}

TEST(FdTest, MoveAssignmentFromAnEmptyFdClosesAndEmpties)
{
    const int raw = openNull();
    Fd a(raw);
    a = Fd();
    EXPECT_FALSE(isOpen(raw));
    EXPECT_FALSE(a);
}

TEST(FdTest, ReleaseGivesUpOwnershipWithoutClosing)
{
    int raw = -1;
    {
        Fd fd(openNull());
        raw = fd.release();
        EXPECT_FALSE(fd);
    }
    EXPECT_TRUE(isOpen(raw));
    ::close(raw);
}

TEST(FdTest, ResetClosesTheOldDescriptorButNotTheSameOne)
{
    const int first = openNull();
    const int second = openNull();
    Fd fd(first);
    fd.reset(first);
    EXPECT_TRUE(isOpen(first));
    fd.reset(second);
    EXPECT_FALSE(isOpen(first));
    EXPECT_EQ(fd.get(), second);
    fd.reset();
    EXPECT_FALSE(isOpen(second));
}

TEST(FdTest, CloseReportsTheErrorAndOwnsNothingAfter)
{
    const int raw = openNull();
    Fd fd(raw);
    ::close(raw); // behind its back: its own close must now fail
    EXPECT_EQ(fd.close(), EBADF);
    EXPECT_FALSE(fd);
    EXPECT_EQ(fd.close(), 0);
}

TEST(FdTest, OpenSetsCloseOnExecAndNamesThePathOnFailure)
{
    Fd fd = Fd::open("/dev/null", O_RDONLY);
    ASSERT_TRUE(fd);
    EXPECT_NE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, 0);
    try
    {
        (void)Fd::open("/nonexistent/cppcgov-test", O_RDONLY);
        FAIL() << "opening a missing file did not throw";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
        EXPECT_THAT(e.what(), HasSubstr("'/nonexistent/cppcgov-test'"));
    }
}

} // namespace
} // namespace cppc::backend
