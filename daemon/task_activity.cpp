// SPDX-License-Identifier: Apache-2.0
#include "task_activity.hpp"

#include "daemon/proc_path.hpp"
#include "daemon/proc_stat.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

namespace cppcgov::daemon
{

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
    lastReads_ = readsPerTick_ - budget;
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
