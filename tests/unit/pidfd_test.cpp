// SPDX-License-Identifier: Apache-2.0
// The pidfd helper with real tasks: a child process that exits when told,
// and a thread of the test.
#include "lib/backend/pidfd.hpp"
#include "tests/unit/child_process.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <thread>

#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using cppcgov::test::Child;

TEST(Pidfd, HoldsAProcessUntilItExits)
{
    Child child;
    Fd fd;
    ASSERT_FALSE(openPidfd(child.pid(), PidfdOf::process, fd));
    ASSERT_TRUE(fd);
    EXPECT_FALSE(pidfdExited(fd.get()));
    EXPECT_FALSE(isThreadPidfd(fd.get()));
    EXPECT_EQ(pidfdPid(fd.get()), child.pid());
    EXPECT_EQ(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    child.exit();
    EXPECT_TRUE(pidfdExited(fd.get()));
    EXPECT_EQ(pidfdPid(fd.get()), -1);
}

TEST(Pidfd, SaysWhyNot)
{
    Fd fd;
    EXPECT_EQ(openPidfd(0, PidfdOf::process, fd), std::errc::no_such_process);
    EXPECT_EQ(openPidfd(-1, PidfdOf::thread, fd), std::errc::no_such_process);
    pid_t gone = 0;
    {
        Child child;
        gone = child.pid();
    }
    EXPECT_EQ(openPidfd(gone, PidfdOf::process, fd),
              std::errc::no_such_process);
    EXPECT_FALSE(fd);
    // Not a pidfd.
    EXPECT_EQ(pidfdPid(-1), std::nullopt);
    const Fd plain(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    EXPECT_EQ(pidfdPid(plain.get()), std::nullopt);
}

TEST(Pidfd, HoldsAThreadWhereTheKernelCan)
{
    const auto self = static_cast<pid_t>(::syscall(SYS_gettid));
    Fd fd;
    const std::error_code ec = openPidfd(self, PidfdOf::thread, fd);
    if (ec == std::errc::invalid_argument)
    {
        GTEST_SKIP() << "this kernel has no PIDFD_THREAD (Linux 6.9)";
    }
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_TRUE(isThreadPidfd(fd.get()));
    EXPECT_FALSE(pidfdExited(fd.get()));
    // A thread that is not a leader is no process.
    pid_t tid = 0;
    std::thread([&] {
        tid = static_cast<pid_t>(::syscall(SYS_gettid));
        Fd process;
        const std::error_code refused =
            openPidfd(tid, PidfdOf::process, process);
        EXPECT_TRUE(refused == std::errc::invalid_argument ||
                    refused == std::errc::no_such_file_or_directory)
            << refused.message();
    }).join();
    EXPECT_NE(tid, 0);
}

} // namespace
} // namespace cppc::backend
