// SPDX-License-Identifier: Apache-2.0
// A child process for tests about tasks: it runs until the test lets it
// exit (a pipe it waits on is closed), so the test decides when its pidfd
// reports the exit and when its PID is free again.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace cppcgov::test
{

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
            // Only this child's own read end stays open: the write ends of
            // children forked before it, inherited here, would otherwise
            // keep those alive after the test closed its own.
            (void)::dup2(fds[0], 3);
            (void)::close_range(4, ~0U, 0);
            char c = 0;
            // Returns 0 (end of file) when the parent closes its end.
            while (::read(3, &c, 1) < 0 && errno == EINTR)
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

} // namespace cppcgov::test
