#include "hint_registry.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

// Linux 6.9's flag for a pidfd that refers to one thread (uapi pidfd.h).
constexpr unsigned pidfdThread = O_EXCL;

class Category final : public std::error_category
{
  public:
    const char* name() const noexcept override
    {
        return "cppcgov-hints";
    }

    std::string message(int value) const override
    {
        switch (static_cast<HintErrc>(value))
        {
            case HintErrc::ok:
                return "success";
            case HintErrc::invalidClamp:
                return "invalid clamp: util_min and util_max must be at most "
                       "1024 and util_min at most util_max";
            case HintErrc::noSuchTask:
                return "no such task, or it has exited";
            case HintErrc::notAProcess:
                return "the task is a thread, not a process: hint the "
                       "thread or its process";
            case HintErrc::threadUnsupported:
                return "the kernel cannot hold a thread that is not its "
                       "process's main thread (needs Linux 6.9): hint the "
                       "whole process";
            case HintErrc::notAPidfd:
                return "the descriptor is not a pidfd";
            case HintErrc::tooManyHints:
                return "the client's limit of live hints is reached";
            case HintErrc::rateLimited:
                return "the client's call rate limit is exceeded";
            case HintErrc::noSuchHint:
                return "no such hint";
            case HintErrc::notOwner:
                return "the hint belongs to another client";
            case HintErrc::invalidClient:
                return "the client name is empty";
        }
        return "unknown hint error " + std::to_string(value);
    }
};

int pidfdOpen(pid_t pid, unsigned flags) noexcept
{
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, flags));
}

// Whether `fd` is readable now: its task has exited.
bool exitedNow(int fd) noexcept
{
    pollfd p{fd, POLLIN, 0};
    int n = 0;
    do
    {
        n = ::poll(&p, 1, 0);
    } while (n < 0 && errno == EINTR);
    return n > 0;
}

// Opens a pidfd for `target`, or says why not.
std::error_code openTarget(HintTarget target, cppc::backend::Fd& out)
{
    if (target.pid <= 0)
    {
        return HintErrc::noSuchTask;
    }
    if (target.wholeProcess)
    {
        const int fd = pidfdOpen(target.pid, 0);
        if (fd >= 0)
        {
            out.reset(fd);
            return {};
        }
        if (errno == ESRCH)
        {
            return HintErrc::noSuchTask;
        }
        // Not a thread group leader: EINVAL before Linux 6.9, ENOENT since.
        if (errno == EINVAL || errno == ENOENT)
        {
            return HintErrc::notAProcess;
        }
        return {errno, std::system_category()};
    }
    int fd = pidfdOpen(target.pid, pidfdThread);
    if (fd < 0 && errno == EINVAL)
    {
        // A kernel without PIDFD_THREAD: only a leader can be held, by its
        // process pidfd.
        fd = pidfdOpen(target.pid, 0);
        if (fd < 0 && errno == EINVAL)
        {
            return HintErrc::threadUnsupported;
        }
    }
    if (fd < 0)
    {
        if (errno == ESRCH)
        {
            return HintErrc::noSuchTask;
        }
        return {errno, std::system_category()};
    }
    out.reset(fd);
    return {};
}

// The "Pid:" field of `fd`'s fdinfo: the task's number in our PID
// namespace, -1 once it has exited (0 outside our namespace). Nothing when
// there is no such field: `fd` is not a pidfd.
std::optional<long> fdinfoPid(int fd)
{
    std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
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

} // namespace

const std::error_category& hintErrorCategory() noexcept
{
    static const Category category;
    return category;
}

std::string_view endReasonName(EndReason reason) noexcept
{
    switch (reason)
    {
        case EndReason::clientLeft:
            return "client left";
        case EndReason::taskExited:
            return "task exited";
    }
    return "unknown";
}

bool validClamp(const policies::Clamp& clamp) noexcept
{
    return clamp.max <= policies::utilScale && clamp.min <= clamp.max;
}

HintRegistry::HintRegistry(HintLimits limits) : limits_(limits) {}

void HintRegistry::setLimits(HintLimits limits)
{
    limits_ = limits;
    for (auto& [name, client] : clients_)
    {
        client.calls.setRate(limits_.callsPerSecond);
    }
}

std::size_t HintRegistry::count(std::string_view client) const
{
    const auto it = clients_.find(client);
    return it == clients_.end() ? 0 : it->second.live;
}

HintRegistry::Client& HintRegistry::clientEntry(std::string_view client)
{
    auto it = clients_.find(client);
    if (it == clients_.end())
    {
        it = clients_
                 .emplace(std::string(client),
                          Client{0, TokenBucket(limits_.callsPerSecond)})
                 .first;
    }
    return it->second;
}

std::error_code HintRegistry::takeToken(std::string_view client,
                                        std::uint64_t nowUs)
{
    if (!clientEntry(client).calls.take(nowUs))
    {
        return HintErrc::rateLimited;
    }
    return {};
}

// The checks every add makes, in order: client, call rate, clamp, limit.
std::error_code HintRegistry::admit(std::string_view client,
                                    policies::Clamp clamp, std::uint64_t nowUs)
{
    if (client.empty())
    {
        return HintErrc::invalidClient;
    }
    if (const std::error_code ec = takeToken(client, nowUs))
    {
        return ec;
    }
    if (!validClamp(clamp))
    {
        return HintErrc::invalidClamp;
    }
    if (count(client) >= limits_.maxHints)
    {
        return HintErrc::tooManyHints;
    }
    return {};
}

AddResult HintRegistry::add(std::string_view client, HintTarget target,
                            policies::Clamp clamp, std::uint64_t nowUs)
{
    if (const std::error_code ec = admit(client, clamp, nowUs))
    {
        return {0, ec};
    }
    cppc::backend::Fd pidfd;
    if (const std::error_code ec = openTarget(target, pidfd))
    {
        return {0, ec};
    }
    return insert(client, target, clamp, std::move(pidfd));
}

AddResult HintRegistry::addPidfd(std::string_view client, int pidfd,
                                 policies::Clamp clamp, std::uint64_t nowUs)
{
    if (const std::error_code ec = admit(client, clamp, nowUs))
    {
        return {0, ec};
    }
    if (pidfd < 0)
    {
        return {0, HintErrc::notAPidfd};
    }
    const int flags = ::fcntl(pidfd, F_GETFL);
    if (flags < 0)
    {
        return {0, HintErrc::notAPidfd};
    }
    cppc::backend::Fd dup(::fcntl(pidfd, F_DUPFD_CLOEXEC, 0));
    if (!dup)
    {
        return {0, std::error_code(errno, std::system_category())};
    }
    const std::optional<long> pid = fdinfoPid(dup.get());
    if (!pid)
    {
        return {0, HintErrc::notAPidfd};
    }
    if (*pid <= 0)
    {
        return {0, HintErrc::noSuchTask};
    }
    const HintTarget target{static_cast<pid_t>(*pid),
                            (static_cast<unsigned>(flags) & pidfdThread) == 0};
    return insert(client, target, clamp, std::move(dup));
}

AddResult HintRegistry::insert(std::string_view client, HintTarget target,
                               policies::Clamp clamp, cppc::backend::Fd pidfd)
{
    if (exitedNow(pidfd.get()))
    {
        return {0, HintErrc::noSuchTask};
    }
    const std::uint64_t handle = nextHandle_++;
    hints_.emplace(handle,
                   Hint{std::string(client), target, clamp, std::move(pidfd)});
    ++clientEntry(client).live;
    return {handle, {}};
}

void HintRegistry::erase(std::map<std::uint64_t, Hint>::iterator it)
{
    const auto c = clients_.find(it->second.client);
    if (c != clients_.end() && c->second.live > 0)
    {
        --c->second.live;
    }
    hints_.erase(it);
}

std::error_code HintRegistry::release(std::string_view client,
                                      std::uint64_t handle, std::uint64_t nowUs)
{
    if (client.empty())
    {
        return HintErrc::invalidClient;
    }
    if (const std::error_code ec = takeToken(client, nowUs))
    {
        return ec;
    }
    const auto it = hints_.find(handle);
    if (it == hints_.end())
    {
        return HintErrc::noSuchHint;
    }
    if (it->second.client != client)
    {
        return HintErrc::notOwner;
    }
    erase(it);
    return {};
}

std::vector<EndedHint> HintRegistry::clientGone(std::string_view client)
{
    std::vector<EndedHint> ended;
    for (auto it = hints_.begin(); it != hints_.end();)
    {
        if (it->second.client == client)
        {
            ended.push_back(
                {it->first, it->second.client, EndReason::clientLeft});
            it = hints_.erase(it);
        }
        else
        {
            ++it;
        }
    }
    if (const auto c = clients_.find(client); c != clients_.end())
    {
        clients_.erase(c);
    }
    return ended;
}

std::vector<std::uint64_t> HintRegistry::exitedHandles() const
{
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> handles;
    fds.reserve(hints_.size());
    handles.reserve(hints_.size());
    for (const auto& [handle, hint] : hints_)
    {
        fds.push_back({hint.pidfd.get(), POLLIN, 0});
        handles.push_back(handle);
    }
    std::vector<std::uint64_t> exited;
    if (fds.empty())
    {
        return exited;
    }
    int n = 0;
    do
    {
        n = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0)
    {
        return exited;
    }
    for (std::size_t i = 0; i < fds.size(); ++i)
    {
        // POLLIN: exited. POLLHUP (a thread pidfd once reaped), POLLERR and
        // POLLNVAL: nothing left to follow either.
        if (fds[i].revents != 0)
        {
            exited.push_back(handles[i]);
        }
    }
    return exited;
}

std::vector<EndedHint> HintRegistry::reap()
{
    std::vector<EndedHint> ended;
    for (const std::uint64_t handle : exitedHandles())
    {
        const auto it = hints_.find(handle);
        ended.push_back({handle, it->second.client, EndReason::taskExited});
        erase(it);
    }
    return ended;
}

std::vector<HintFd> HintRegistry::pidfds() const
{
    std::vector<HintFd> out;
    out.reserve(hints_.size());
    for (const auto& [handle, hint] : hints_)
    {
        out.push_back({handle, hint.pidfd.get()});
    }
    return out;
}

std::vector<HintedTask> HintRegistry::clampsForTasks() const
{
    const std::vector<std::uint64_t> exited = exitedHandles();
    std::vector<HintedTask> out;
    out.reserve(hints_.size());
    for (const auto& [handle, hint] : hints_)
    {
        if (!std::binary_search(exited.begin(), exited.end(), handle))
        {
            out.push_back({hint.target, hint.clamp});
        }
    }
    return out;
}

} // namespace cppcgov::daemon
