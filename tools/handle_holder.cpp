// SPDX-License-Identifier: Apache-2.0
#include "handle_holder.hpp"

#include "lib/backend/pidfd.hpp"
#include "signal_watch.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <system_error>
#include <vector>

namespace cppcgov::tools
{
namespace
{

using cppc::backend::Fd;

// Sets the proxy's HandleEnded hook to note when `handle`, owned by this
// connection, ends; removes the hook when destroyed.
class EndWatch
{
  public:
    EndWatch(BusClient& client, std::uint64_t handle) :
        client_(client), owner_(client.uniqueName())
    {
        client_.governor().handleEnded =
            [this, handle](std::uint64_t h, const std::string& owner,
                           const std::string& reason) {
            if (h == handle && owner == owner_ && !reason_)
            {
                reason_ = reason;
            }
        };
    }

    ~EndWatch()
    {
        client_.governor().handleEnded = nullptr;
    }

    EndWatch(const EndWatch&) = delete;
    EndWatch& operator=(const EndWatch&) = delete;

    // Why the handle ended, once it did.
    const std::optional<std::string>& reason() const noexcept
    {
        return reason_;
    }

  private:
    BusClient& client_;
    std::string owner_;
    std::optional<std::string> reason_;
};

// Releases `handle` unless it has already ended.
void release(BusClient& client, std::uint64_t handle)
{
    try
    {
        client.governor().Release(handle);
    }
    catch (const sdbus::Error& e)
    {
        if (e.getName() != dbus::error::noSuchHandle)
        {
            throw;
        }
    }
}

// Waits for child `pid` to end; returns its status as a shell would.
int reap(pid_t pid)
{
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
    {
        if (errno != EINTR)
        {
            throw std::system_error(errno, std::generic_category(), "waitpid");
        }
    }
    if (WIFSIGNALED(status))
    {
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

// Kills and reaps a child that must never run its command, unless
// disarmed.
class ChildGuard
{
  public:
    explicit ChildGuard(pid_t pid) : pid_(pid) {}
    ~ChildGuard()
    {
        if (pid_ > 0)
        {
            ::kill(pid_, SIGKILL);
            int status = 0;
            while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR)
            {}
        }
    }

    ChildGuard(const ChildGuard&) = delete;
    ChildGuard& operator=(const ChildGuard&) = delete;

    void disarm() noexcept
    {
        pid_ = -1;
    }

  private:
    pid_t pid_;
};

// The child's side: waits for the go-ahead on `go` (end of file means
// never), then runs the command.
[[noreturn]] void runChild(int go, const sigset_t& mask, char* const argv[])
{
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    char byte = 0;
    ssize_t n = 0;
    do
    {
        n = ::read(go, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1)
    {
        ::_exit(125);
    }
    ::execvp(argv[0], argv);
    const int e = errno;
    const std::string message =
        std::string("cppcgovctl: ") + argv[0] + ": " + std::strerror(e) + "\n";
    [[maybe_unused]] const ssize_t w =
        ::write(STDERR_FILENO, message.data(), message.size());
    ::_exit(e == ENOENT ? 127 : 126);
}

} // namespace

Fd openTaskPidfd(const HeldTask& task)
{
    Fd fd;
    (void)cppc::backend::openPidfd(
        static_cast<pid_t>(task.pid),
        task.thread ? cppc::backend::PidfdOf::thread
                    : cppc::backend::PidfdOf::process,
        fd);
    return fd;
}

int requestAndHold(BusClient& client,
                   const std::function<std::uint64_t()>& request,
                   const std::optional<HeldTask>& task, std::ostream& out,
                   std::ostream& err)
{
    SignalWatch signals({SIGINT, SIGTERM, SIGHUP});
    // Opened before the request: if the PID is reused in between, this
    // still watches the task that was asked for, and its exit ends the
    // hold.
    const Fd pidfd = task ? openTaskPidfd(*task) : Fd();
    const std::uint64_t handle = request();
    out << "handle " << handle << std::endl;

    const EndWatch end(client, handle);
    std::vector<int> fds{signals.fd()};
    if (pidfd)
    {
        fds.push_back(pidfd.get());
    }
    const auto stop = [&end, &client]() {
        return end.reason().has_value() || client.lost().has_value();
    };
    while (true)
    {
        const auto ready = client.wait(fds, std::nullopt, stop);
        if (end.reason())
        {
            if (*end.reason() != "task-exited")
            {
                err << "cppcgovctl: handle " << handle << " ended ("
                    << *end.reason() << ")\n";
            }
            return 0;
        }
        if (client.lost())
        {
            err << "cppcgovctl: " << *client.lost() << "; handle " << handle
                << " is gone\n";
            return 1;
        }
        if (!ready || (*ready == 0 && !signals.take()))
        {
            continue;
        }
        // A signal, or the task exited.
        release(client, handle);
        return 0;
    }
}

int runHolding(
    BusClient& client, std::span<const std::string> command,
    const std::function<std::uint64_t(pid_t pid, int pidfd)>& request,
    std::ostream& err)
{
    std::vector<char*> argv;
    for (const std::string& a : command)
    {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);

    SignalWatch signals({SIGINT, SIGTERM, SIGHUP});
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    {
        throw std::system_error(errno, std::generic_category(), "socketpair");
    }
    Fd go(pair[0]);
    Fd childEnd(pair[1]);
    std::cout.flush();
    std::cerr.flush();
    const pid_t child = ::fork();
    if (child < 0)
    {
        throw std::system_error(errno, std::generic_category(), "fork");
    }
    if (child == 0)
    {
        go.reset();
        runChild(childEnd.get(), signals.previousMask(), argv.data());
    }
    childEnd.reset();
    ChildGuard guard(child);
    Fd pidfd;
    if (const std::error_code ec = cppc::backend::openPidfd(
            child, cppc::backend::PidfdOf::process, pidfd))
    {
        throw std::system_error(ec, "pidfd_open");
    }
    // When the request throws, the guard kills the waiting child.
    const std::uint64_t handle = request(child, pidfd.get());
    guard.disarm();
    const char byte = 'x';
    // The child may already be gone (killed while it waited): then there
    // is only its status to collect.
    [[maybe_unused]] const ssize_t sent =
        ::send(go.get(), &byte, 1, MSG_NOSIGNAL);
    go.reset();

    const EndWatch end(client, handle);
    bool endSaid = false;
    bool lossSaid = false;
    const std::array<int, 2> fds{pidfd.get(), signals.fd()};
    const auto stop = [&end, &endSaid, &client, &lossSaid]() {
        return (end.reason() && !endSaid) || (client.lost() && !lossSaid);
    };
    while (true)
    {
        const auto ready = client.wait(fds, std::nullopt, stop);
        if (end.reason() && !endSaid)
        {
            endSaid = true;
            if (*end.reason() != "task-exited")
            {
                err << "cppcgovctl: handle " << handle << " ended ("
                    << *end.reason() << "); " << command.front()
                    << " runs on without it\n";
            }
        }
        if (client.lost() && !lossSaid)
        {
            lossSaid = true;
            if (!endSaid)
            {
                err << "cppcgovctl: " << *client.lost() << "; handle " << handle
                    << " is gone, " << command.front()
                    << " runs on without it\n";
            }
        }
        if (!ready)
        {
            continue;
        }
        if (*ready == 0)
        {
            return reap(child);
        }
        if (const auto s = signals.take(); s && s->fromProcess)
        {
            ::kill(child, s->signal);
        }
    }
}

bool takeHelpOrCommand(std::span<const std::string_view> args, std::size_t i,
                       bool& help, std::vector<std::string>& command)
{
    const std::string_view a = args[i];
    if (a == "--help" || a == "-h")
    {
        help = true;
        return true;
    }
    if (a == "--" || !a.starts_with("-"))
    {
        command.assign(args.begin() +
                           static_cast<std::ptrdiff_t>(i + (a == "--" ? 1 : 0)),
                       args.end());
        if (command.empty())
        {
            throw UsageError("'--' needs a command after it");
        }
        return true;
    }
    return false;
}

} // namespace cppcgov::tools
