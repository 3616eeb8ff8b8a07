// SPDX-License-Identifier: Apache-2.0
#include "handle_holder.hpp"

#include "bus_client.hpp"
#include "lib/backend/pidfd.hpp"
#include "poll_ready.hpp"
#include "signal_watch.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <iostream>
#include <system_error>
#include <utility>
#include <vector>

namespace cppcgov::tools
{
namespace
{

using cppc::backend::Fd;

// Why a hint's handle is gone, for a message.
struct HintEnd
{
    std::string why;   // the daemon's reason, or what befell the daemon or bus
    bool lost = false; // the daemon or the bus went away
};

HintEnd hintEnd(const client::Hint& hint)
{
    std::string reason = hint.endReason().value_or("released");
    if (reason == "daemon-left")
    {
        return {"cppcgovd left the bus", true};
    }
    if (reason == "disconnected")
    {
        return {"the connection to the bus broke", true};
    }
    return {std::move(reason), false};
}

// Milliseconds for poll(2) until the absolute CLOCK_MONOTONIC time `usec`,
// rounded up; -1 for none.
int pollTimeout(std::optional<std::uint64_t> usec)
{
    if (!usec)
    {
        return -1;
    }
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const auto nowUs = static_cast<std::uint64_t>(now.tv_sec) * 1000000U +
                       static_cast<std::uint64_t>(now.tv_nsec) / 1000U;
    if (*usec <= nowUs)
    {
        return 0;
    }
    const std::uint64_t ms = (*usec - nowUs + 999U) / 1000U;
    return ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
}

// Waits until one of `fds` is readable (or hung up), watching `hint`'s
// connection while the hint is live. Returns the index in `fds` of a ready
// descriptor, or nothing when the hint ended while live at the call.
std::optional<std::size_t> waitFor(client::Hint& hint, std::span<const int> fds)
{
    std::vector<pollfd> polled(fds.size() + 1);
    const bool watching = hint.live();
    while (true)
    {
        if (watching && !hint.process())
        {
            return std::nullopt;
        }
        for (std::size_t i = 0; i < fds.size(); ++i)
        {
            polled[i] = {fds[i], POLLIN, 0};
        }
        std::size_t count = fds.size();
        int timeoutMs = -1;
        if (watching)
        {
            polled[count++] = {hint.fd(), hint.events(), 0};
            timeoutMs = pollTimeout(hint.timeoutUs());
        }
        if (const auto ready = pollWatched(std::span(polled.data(), count),
                                           fds.size(), timeoutMs))
        {
            return ready;
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

client::Hint requestHint(cppcgov_request request, const BusOptions& bus)
{
    request.bus_address = bus.address ? bus.address->c_str() : nullptr;
    return client::Hint::request(request);
}

int requestAndHold(const std::function<client::Hint()>& request,
                   const std::optional<HeldTask>& task, std::ostream& out,
                   std::ostream& err)
{
    SignalWatch signals({SIGINT, SIGTERM, SIGHUP});
    // Opened before the request: if the PID is reused in between, this
    // still watches the task that was asked for, and its exit ends the
    // hold.
    const Fd pidfd = task ? openTaskPidfd(*task) : Fd();
    client::Hint hint = request();
    out << "handle " << hint.handle() << std::endl;

    std::vector<int> fds{signals.fd()};
    if (pidfd)
    {
        fds.push_back(pidfd.get());
    }
    while (true)
    {
        const auto ready = waitFor(hint, fds);
        if (!ready)
        {
            const HintEnd end = hintEnd(hint);
            if (end.lost)
            {
                err << "cppcgovctl: " << end.why << "; handle " << hint.handle()
                    << " is gone\n";
                return 1;
            }
            if (end.why != "task-exited")
            {
                err << "cppcgovctl: handle " << hint.handle() << " ended ("
                    << end.why << ")\n";
            }
            return 0;
        }
        if (*ready == 0 && !signals.take())
        {
            continue;
        }
        // A signal, or the task exited.
        hint.release();
        return 0;
    }
}

int requestOnCpusAndHold(cppcgov_request request,
                         std::span<const std::uint32_t> cpus,
                         const BusOptions& bus, std::ostream& out,
                         std::ostream& err)
{
    BusClient reader(bus.address);
    if (const auto missing = missingCpus(cpus, reader.governor().CpuCount()))
    {
        err << "cppcgovctl: " << *missing << "\n";
        return 1;
    }
    request.target = CPPCGOV_TARGET_CPUS;
    request.cpus = cpus.data();
    request.n_cpus = cpus.size();
    return requestAndHold(
        [&request, &bus]() { return requestHint(request, bus); }, std::nullopt,
        out, err);
}

int runHolding(std::span<const std::string> command,
               const std::function<client::Hint(pid_t pid, int pidfd)>& request,
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
    // When the request throws, the guard kills the waiting child. The
    // child was forked before the hint's connection opened: it holds no
    // copy of its socket.
    client::Hint hint = request(child, pidfd.get());
    guard.disarm();
    const char byte = 'x';
    // The child may already be gone (killed while it waited): then there
    // is only its status to collect.
    [[maybe_unused]] const ssize_t sent =
        ::send(go.get(), &byte, 1, MSG_NOSIGNAL);
    go.reset();

    const std::array<int, 2> fds{pidfd.get(), signals.fd()};
    while (true)
    {
        const auto ready = waitFor(hint, fds);
        if (!ready)
        {
            const HintEnd end = hintEnd(hint);
            if (end.lost)
            {
                err << "cppcgovctl: " << end.why << "; handle " << hint.handle()
                    << " is gone, " << command.front()
                    << " runs on without it\n";
            }
            else if (end.why != "task-exited")
            {
                err << "cppcgovctl: handle " << hint.handle() << " ended ("
                    << end.why << "); " << command.front()
                    << " runs on without it\n";
            }
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
