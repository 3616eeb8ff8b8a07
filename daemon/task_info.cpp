// SPDX-License-Identifier: Apache-2.0
#include "task_info.hpp"

#include "daemon/proc_path.hpp"
#include "lib/error.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>

namespace cppcgov::daemon
{
namespace
{

// The largest status file read (it is a few KiB; the CPU masks in it grow
// with the machine).
constexpr std::size_t maxStatusBytes = 1 << 20;

// The largest CPU mask tried by taskAffinity(), in CPUs.
constexpr std::size_t maxAffinityCpus = std::size_t{1} << 20;

std::error_code noSuchTask() noexcept
{
    return std::make_error_code(std::errc::no_such_process);
}

// ENOENT (no /proc entry) and ESRCH (the task went away while being read)
// both mean the task is gone.
std::error_code fromErrno(int error) noexcept
{
    if (error == ENOENT || error == ESRCH)
    {
        return noSuchTask();
    }
    return {error, std::system_category()};
}

// Reads the whole of `file` (relative to `dir`, or absolute) into `out`.
std::error_code readWhole(int dir, const char* file, std::string& out)
{
    const cppc::backend::Fd fd(::openat(dir, file, O_RDONLY | O_CLOEXEC));
    if (!fd)
    {
        return fromErrno(errno);
    }
    out.clear();
    std::array<char, 4096> chunk{};
    for (;;)
    {
        const ssize_t n = ::read(fd.get(), chunk.data(), chunk.size());
        if (n < 0)
        {
            if (errno == EINTR)
            {
                continue;
            }
            return fromErrno(errno);
        }
        if (n == 0)
        {
            return {};
        }
        out.append(chunk.data(), static_cast<std::size_t>(n));
        if (out.size() > maxStatusBytes)
        {
            return cppc::Errc::malformedAttribute;
        }
    }
}

// The text after "key:" on its line of a status file, or nothing.
std::optional<std::string_view> statusField(std::string_view status,
                                            std::string_view key) noexcept
{
    std::size_t at = 0;
    while (at < status.size())
    {
        std::size_t end = status.find('\n', at);
        if (end == std::string_view::npos)
        {
            end = status.size();
        }
        const std::string_view line = status.substr(at, end - at);
        if (line.size() > key.size() && line.starts_with(key) &&
            line[key.size()] == ':')
        {
            return line.substr(key.size() + 1);
        }
        at = end + 1;
    }
    return std::nullopt;
}

// Parses up to `values.size()` decimal numbers separated by blanks (tabs or
// spaces); the count parsed, or -1 when a token is not a number that fits.
template <typename T>
int parseNumbers(std::string_view text, std::span<T> values) noexcept
{
    std::size_t count = 0;
    const char* p = text.data();
    const char* const end = text.data() + text.size();
    while (count < values.size())
    {
        while (p != end && (*p == ' ' || *p == '\t'))
        {
            ++p;
        }
        if (p == end)
        {
            break;
        }
        const auto [next, ec] = std::from_chars(p, end, values[count]);
        if (ec != std::errc{} || (next != end && *next != ' ' && *next != '\t'))
        {
            return -1;
        }
        p = next;
        ++count;
    }
    return static_cast<int>(count);
}

// Reads procDir/<pid>/status into `status`.
std::error_code readStatus(pid_t pid, const std::filesystem::path& procDir,
                           std::string& status)
{
    if (pid <= 0)
    {
        return noSuchTask();
    }
    ProcPath file;
    file.add(pid).add("/status");
    const cppc::backend::Fd dir(
        ::open(procDir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir)
    {
        return {errno, std::system_category()};
    }
    return readWhole(dir.get(), file.c_str(), status);
}

// PIDFD_GET_INFO (linux/pidfd.h of Linux 6.13; the system headers may be
// older): the first version of its argument, which later kernels extend.
struct PidfdInfo
{
    std::uint64_t mask;
    std::uint64_t cgroupId;
    std::uint32_t pid;
    std::uint32_t tgid;
    std::uint32_t ppid;
    std::uint32_t ruid;
    std::uint32_t rgid;
    std::uint32_t euid;
    std::uint32_t egid;
    std::uint32_t suid;
    std::uint32_t sgid;
    std::uint32_t fsuid;
    std::uint32_t fsgid;
    std::uint32_t spare;
};
static_assert(sizeof(PidfdInfo) == 64, "PIDFD_INFO_SIZE_VER0");

constexpr std::uint64_t pidfdInfoCreds = 1U << 1U;
constexpr unsigned long pidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);

struct CpuSetDeleter
{
    void operator()(cpu_set_t* set) const noexcept
    {
        CPU_FREE(set);
    }
};

} // namespace

std::error_code taskCreds(pid_t pid, TaskCreds& out,
                          const std::filesystem::path& procDir)
{
    std::string status;
    if (const std::error_code ec = readStatus(pid, procDir, status))
    {
        return ec;
    }
    const std::optional<std::string_view> uids = statusField(status, "Uid");
    std::array<uid_t, 4> values{};
    if (!uids || parseNumbers(*uids, std::span<uid_t>(values)) != 4)
    {
        return cppc::Errc::malformedAttribute;
    }
    out = {values[0], values[1]};
    return {};
}

std::error_code pidfdTaskCreds(int pidfd, pid_t pid, TaskCreds& out,
                               const std::filesystem::path& procDir)
{
    // Set once the kernel has said it does not know the request.
    static std::atomic<bool> unsupported{false};
    if (!unsupported.load(std::memory_order_relaxed))
    {
        PidfdInfo info{};
        info.mask = pidfdInfoCreds;
        if (::ioctl(pidfd, pidfdGetInfo, &info) == 0 &&
            (info.mask & pidfdInfoCreds) != 0)
        {
            out = {static_cast<uid_t>(info.ruid),
                   static_cast<uid_t>(info.euid)};
            return {};
        }
        if (errno == ESRCH)
        {
            return noSuchTask();
        }
        // ENOTTY or EINVAL: a kernel before 6.13.
        unsupported.store(true, std::memory_order_relaxed);
    }
    return taskCreds(pid, out, procDir);
}

bool mayClamp(uid_t callerEuid, const TaskCreds& target) noexcept
{
    return callerEuid == target.euid || callerEuid == target.uid;
}

std::error_code taskAffinity(pid_t pid, std::vector<unsigned>& cpus)
{
    if (pid < 0)
    {
        return noSuchTask();
    }
    const long configured = ::sysconf(_SC_NPROCESSORS_CONF);
    std::size_t count = std::max<std::size_t>(
        1024, configured > 0 ? static_cast<std::size_t>(configured) : 0);
    for (;;)
    {
        const std::unique_ptr<cpu_set_t, CpuSetDeleter> set(CPU_ALLOC(count));
        if (!set)
        {
            return std::make_error_code(std::errc::not_enough_memory);
        }
        const std::size_t bytes = CPU_ALLOC_SIZE(count);
        if (::sched_getaffinity(pid, bytes, set.get()) == 0)
        {
            cpus.clear();
            // CPU_ALLOC_SIZE rounds up to whole words: every bit counts.
            const std::size_t bits = bytes * 8;
            for (std::size_t cpu = 0; cpu < bits; ++cpu)
            {
                if (CPU_ISSET_S(cpu, bytes, set.get()))
                {
                    cpus.push_back(static_cast<unsigned>(cpu));
                }
            }
            return {};
        }
        // EINVAL: the mask is smaller than the kernel's; try a larger one.
        if (errno == EINVAL && count < maxAffinityCpus)
        {
            count *= 2;
            continue;
        }
        return fromErrno(errno);
    }
}

std::error_code threadGroupOf(pid_t tid, pid_t& tgid,
                              const std::filesystem::path& procDir)
{
    std::string status;
    if (const std::error_code ec = readStatus(tid, procDir, status))
    {
        return ec;
    }
    const std::optional<std::string_view> field = statusField(status, "Tgid");
    std::array<pid_t, 1> value{};
    if (!field || parseNumbers(*field, std::span<pid_t>(value)) != 1 ||
        value[0] <= 0)
    {
        return cppc::Errc::malformedAttribute;
    }
    tgid = value[0];
    return {};
}

bool parseTaskStat(std::string_view text, TaskStat& out) noexcept
{
    const std::size_t open = text.find('(');
    const std::size_t close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos ||
        close < open)
    {
        return false;
    }
    // Fields 3 onwards, one space before each.
    std::string_view rest = text.substr(close + 1);
    TaskStat stat;
    std::uint64_t utime = 0;
    std::uint64_t stime = 0;
    for (int field = 3; field <= 39; ++field)
    {
        if (rest.empty() || rest.front() != ' ')
        {
            return false;
        }
        rest.remove_prefix(1);
        std::size_t end = rest.find_first_of(" \n");
        if (end == std::string_view::npos)
        {
            end = rest.size();
        }
        const std::string_view token = rest.substr(0, end);
        rest.remove_prefix(end);
        if (token.empty())
        {
            return false;
        }
        const auto number = [&token](auto& value) {
            const auto [p, ec] = std::from_chars(
                token.data(), token.data() + token.size(), value);
            return ec == std::errc{} && p == token.data() + token.size();
        };
        switch (field)
        {
            case 3:
                // One letter, as proc(5) lists the states.
                if (token.size() != 1 ||
                    !((token.front() >= 'A' && token.front() <= 'Z') ||
                      (token.front() >= 'a' && token.front() <= 'z')))
                {
                    return false;
                }
                stat.state = token.front();
                break;
            case 14:
                if (!number(utime))
                {
                    return false;
                }
                break;
            case 15:
                if (!number(stime))
                {
                    return false;
                }
                break;
            case 22:
                if (!number(stat.startTime))
                {
                    return false;
                }
                break;
            case 39:
                if (!number(stat.cpu))
                {
                    return false;
                }
                break;
            default:
                break;
        }
    }
    stat.cpuTicks = utime + stime;
    out = stat;
    return true;
}

} // namespace cppcgov::daemon
