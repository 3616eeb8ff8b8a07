// SPDX-License-Identifier: Apache-2.0
// Runs part of a test in a forked child: for a run that must die without
// unwinding (a crash, so that nothing is restored) or that gives up its
// privileges, leaving the test process as it was.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <system_error>

namespace cppc::test
{

// Runs `body` in a child process and returns the child's exit status, or
// -1 when it did not exit normally. `body` ends the child with
// ::_exit(status) where what it made must not be unwound; a body that
// returns exits 0, one that throws exits 125.
inline int exitStatusOf(const std::function<void()>& body)
{
    const pid_t child = ::fork();
    if (child < 0)
    {
        throw std::system_error(errno, std::system_category(), "fork");
    }
    if (child == 0)
    {
        int status = 0;
        try
        {
            body();
        }
        catch (...)
        {
            status = 125;
        }
        ::_exit(status);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0)
    {
        if (errno != EINTR)
        {
            throw std::system_error(errno, std::system_category(), "waitpid");
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace cppc::test
