// SPDX-License-Identifier: Apache-2.0
#include "pidfd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <string>
#include <string_view>

namespace cppc::backend
{
namespace
{

// PIDFD_THREAD (uapi linux/pidfd.h, Linux 6.9) is O_EXCL.
constexpr unsigned pidfdThread = O_EXCL;

} // namespace

std::error_code openPidfd(pid_t pid, PidfdOf of, Fd& out) noexcept
{
    if (pid <= 0)
    {
        return std::make_error_code(std::errc::no_such_process);
    }
    // glibc 2.36's pidfd_open() is not declared for C++: the system call.
    // Every pidfd is close-on-exec.
    const long fd = ::syscall(SYS_pidfd_open, pid,
                              of == PidfdOf::thread ? pidfdThread : 0U);
    if (fd < 0)
    {
        return {errno, std::system_category()};
    }
    out.reset(static_cast<int>(fd));
    return {};
}

bool pidfdExited(int pidfd) noexcept
{
    pollfd p{pidfd, POLLIN, 0};
    int n = 0;
    do
    {
        n = ::poll(&p, 1, 0);
    } while (n < 0 && errno == EINTR);
    // POLLIN: exited. POLLHUP (a thread pidfd once reaped), POLLERR and
    // POLLNVAL: nothing left to follow either.
    return n > 0 && p.revents != 0;
}

bool isThreadPidfd(int pidfd) noexcept
{
    const int flags = ::fcntl(pidfd, F_GETFL);
    return flags >= 0 && (static_cast<unsigned>(flags) & pidfdThread) != 0;
}

std::optional<long> pidfdPid(int pidfd)
{
    if (pidfd < 0)
    {
        return std::nullopt;
    }
    std::ifstream in("/proc/self/fdinfo/" + std::to_string(pidfd));
    std::string line;
    while (std::getline(in, line))
    {
        constexpr std::string_view key = "Pid:";
        if (!line.starts_with(key))
        {
            continue;
        }
        std::string_view rest = std::string_view(line).substr(key.size());
        while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
        {
            rest.remove_prefix(1);
        }
        long pid = 0;
        const auto [end, ec] =
            std::from_chars(rest.data(), rest.data() + rest.size(), pid);
        if (ec != std::errc{} || end != rest.data() + rest.size())
        {
            return std::nullopt;
        }
        return pid;
    }
    return std::nullopt;
}

} // namespace cppc::backend
