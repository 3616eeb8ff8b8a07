#include "task_info.hpp"

#include "daemon/proc_stat.hpp"
#include "lib/error.hpp"

#include <dirent.h>
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

// A relative path under the /proc directory built without allocating:
// "<pid>/task/<tid>/stat" and the like.
class ProcPath
{
  public:
    ProcPath& add(std::string_view text) noexcept
    {
        const std::size_t n = std::min(text.size(), room());
        std::memcpy(text_.data() + size_, text.data(), n);
        size_ += n;
        text_[size_] = '\0';
        return *this;
    }

    ProcPath& add(pid_t number) noexcept
    {
        const auto [end, ec] = std::to_chars(
            text_.data() + size_, text_.data() + size_ + room(), number);
        if (ec == std::errc{})
        {
            size_ = static_cast<std::size_t>(end - text_.data());
        }
        text_[size_] = '\0';
        return *this;
    }

    const char* c_str() const noexcept
    {
        return text_.data();
    }

  private:
    std::size_t room() const noexcept
    {
        return text_.size() - 1 - size_;
    }

    std::array<char, 64> text_{};
    std::size_t size_ = 0;
};

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

TaskActivity::TaskActivity(const std::filesystem::path& procDir,
                           std::size_t readsPerTick) :
    proc_(cppc::backend::Fd::open(procDir, O_PATH | O_DIRECTORY)),
    readsPerTick_(std::max<std::size_t>(readsPerTick, 1)),
    dirBuffer_(16384) // a few hundred threads per getdents64 call
{}

bool TaskActivity::listThreads(pid_t pid, std::vector<pid_t>& tids)
{
    tids.clear();
    ProcPath dirPath;
    dirPath.add(pid).add("/task");
    const cppc::backend::Fd dir(::openat(proc_.get(), dirPath.c_str(),
                                         O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir)
    {
        return false;
    }
    char* const buffer = dirBuffer_.data();
    for (;;)
    {
        const ssize_t n = ::getdents64(dir.get(), buffer, dirBuffer_.size());
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0)
        {
            // The process went away while it was listed: what was seen
            // stays (its stat reads will fail).
            return !tids.empty();
        }
        if (n == 0)
        {
            return true;
        }
        std::size_t at = 0;
        const auto size = static_cast<std::size_t>(n);
        while (at + offsetof(dirent64, d_name) <= size)
        {
            unsigned short length = 0;
            std::memcpy(&length, buffer + at + offsetof(dirent64, d_reclen),
                        sizeof length);
            if (length == 0 || at + length > size)
            {
                break;
            }
            const char* const name = buffer + at + offsetof(dirent64, d_name);
            const std::size_t nameRoom = length - offsetof(dirent64, d_name);
            const std::string_view entry(name, ::strnlen(name, nameRoom));
            pid_t tid = 0;
            const auto [end, ec] =
                std::from_chars(entry.data(), entry.data() + entry.size(), tid);
            // "." and ".." are not numbers.
            if (ec == std::errc{} && end == entry.data() + entry.size() &&
                tid > 0)
            {
                tids.push_back(tid);
            }
            at += length;
        }
    }
}

TaskActivity::Thread* TaskActivity::sample(pid_t pid, pid_t tid, bool listed)
{
    const auto known = threads_.find(tid);
    if (known != threads_.end() && known->second.seenTick == tick_)
    {
        return &known->second;
    }
    // The thread's stat file kept open from an earlier tick is read again
    // from its start: one system call where opening it is three. It fails
    // (ESRCH) once its thread is gone, also when the number was reused,
    // and the file is then opened again by path.
    std::size_t size = 0;
    bool read = false;
    if (listed && known != threads_.end() && known->second.stat)
    {
        read = readStatLine(known->second.stat.get(), size);
        if (!read)
        {
            known->second.stat.reset();
            --openStats_;
        }
    }
    cppc::backend::Fd fd;
    if (!read)
    {
        ProcPath file;
        file.add(pid).add("/task/").add(tid).add("/stat");
        fd.reset(::openat(proc_.get(), file.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd || !readStatLine(fd.get(), size))
        {
            return nullptr;
        }
    }
    TaskStat stat;
    if (!parseTaskStat(std::string_view(statBuffer_.data(), size), stat))
    {
        return nullptr;
    }
    Thread& thread = known != threads_.end() ? known->second : threads_[tid];
    const bool seenBefore = known != threads_.end() &&
                            thread.startTime == stat.startTime;
    const bool grew = seenBefore && stat.cpuTicks > thread.cpuTicks;
    thread.active = stat.state == 'R' || grew;
    // Saturated at what the microseconds hold (a counter gone wild).
    thread.unreportedUs = 0;
    if (grew && __builtin_mul_overflow(stat.cpuTicks - thread.cpuTicks,
                                       clockTickUs(), &thread.unreportedUs))
    {
        thread.unreportedUs = std::numeric_limits<std::uint64_t>::max();
    }
    thread.cpuTicks = stat.cpuTicks;
    thread.startTime = stat.startTime;
    thread.cpu = stat.cpu;
    thread.seenTick = tick_;
    if (listed && fd && openStats_ < maxOpenStats)
    {
        thread.stat = std::move(fd);
        ++openStats_;
    }
    return &thread;
}

bool TaskActivity::readStatLine(int fd, std::size_t& size)
{
    // A stat line is well under a page; one that fills the buffer is not
    // one that can be parsed. procfs gives the whole line to one read, and
    // the newline that ends it saves the read that would return 0.
    size = 0;
    for (;;)
    {
        const ssize_t n =
            ::pread(fd, statBuffer_.data() + size, statBuffer_.size() - size,
                    static_cast<off_t>(size));
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0)
        {
            return false;
        }
        if (n == 0)
        {
            return true;
        }
        size += static_cast<std::size_t>(n);
        if (size == statBuffer_.size())
        {
            return false;
        }
        if (statBuffer_[size - 1] == '\n')
        {
            return true;
        }
    }
}

const TaskActivity::Listing* TaskActivity::listing(
    pid_t pid, std::size_t& budget, bool& outOfBudget)
{
    Listing& l = listings_[pid];
    if (l.tick != tick_)
    {
        if (budget == 0)
        {
            outOfBudget = true;
            return nullptr;
        }
        --budget;
        l.tick = tick_;
        l.gone = !listThreads(pid, l.tids);
    }
    return l.gone ? nullptr : &l;
}

bool TaskActivity::readThisTick(pid_t tid) const
{
    const auto it = threads_.find(tid);
    return it != threads_.end() && it->second.seenTick == tick_;
}

void TaskActivity::visit(const ClampHint& hint, pid_t pid, pid_t tid,
                         bool listed)
{
    Thread* const thread = sample(pid, tid, listed);
    if (thread != nullptr && thread->active)
    {
        sightings_.push_back(
            {hint.handle, tid, thread->cpu, hint.clamp, thread->unreportedUs});
        thread->unreportedUs = 0;
    }
}

std::optional<std::size_t> TaskActivity::visitHint(
    const ClampHint& hint, std::size_t firstThread, std::size_t& budget)
{
    const pid_t pid = hint.target.pid;
    if (pid <= 0)
    {
        return std::nullopt;
    }
    // One read of the budget for what has not been read this tick.
    const auto charge = [this, &budget](pid_t tid) {
        if (readThisTick(tid))
        {
            return true;
        }
        if (budget == 0)
        {
            return false;
        }
        --budget;
        return true;
    };
    if (!hint.target.wholeProcess)
    {
        if (!charge(pid))
        {
            return 0;
        }
        visit(hint, pid, pid, false);
        return std::nullopt;
    }
    bool outOfBudget = false;
    const Listing* const threads = listing(pid, budget, outOfBudget);
    if (threads == nullptr)
    {
        return outOfBudget ? std::optional<std::size_t>(firstThread)
                           : std::nullopt;
    }
    const std::vector<pid_t>& tids = threads->tids;
    for (std::size_t i = firstThread; i < tids.size(); ++i)
    {
        if (!charge(tids[i]))
        {
            return i;
        }
        visit(hint, pid, tids[i], true);
    }
    return std::nullopt;
}

std::span<const HintSighting> TaskActivity::tick(
    std::span<const ClampHint> hints)
{
    ++tick_;
    sightings_.clear();
    std::size_t budget = readsPerTick_;
    const std::size_t count = hints.size();
    // A round goes through the hints in order, over as many ticks as the
    // budget needs; the tick that reaches the end finishes it.
    const std::size_t first = resumeHint_ < count ? resumeHint_ : 0;
    const std::size_t firstThread = resumeHint_ < count ? resumeThread_ : 0;
    bool finished = true;
    for (std::size_t index = first; index < count; ++index)
    {
        const std::optional<std::size_t> stopped =
            visitHint(hints[index], index == first ? firstThread : 0, budget);
        if (stopped)
        {
            resumeHint_ = index;
            resumeThread_ = *stopped;
            finished = false;
            break;
        }
    }
    if (finished)
    {
        // A whole round since roundStart_: forget the threads it did not
        // see (they exited, or their hint ended).
        std::erase_if(threads_, [this](const auto& entry) {
            const bool forgotten = entry.second.seenTick < roundStart_;
            if (forgotten && entry.second.stat)
            {
                --openStats_;
            }
            return forgotten;
        });
        std::erase_if(listings_, [start = roundStart_](const auto& entry) {
            return entry.second.tick < start;
        });
        resumeHint_ = 0;
        resumeThread_ = 0;
        roundStart_ = tick_ + 1;
    }
    return sightings_;
}

} // namespace cppcgov::daemon
