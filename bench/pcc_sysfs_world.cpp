// SPDX-License-Identifier: Apache-2.0
#include "bench/pcc_sysfs_world.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <sstream>

namespace cppcgov::bench
{

void checkRigCanRun(const fs::path& pccfs)
{
    if (::access(pccfs.c_str(), X_OK) != 0)
    {
        throw RigUnavailable("the rig '" + pccfs.string() +
                             "' cannot be run: " + errnoText(errno));
    }
    if (::geteuid() != 0)
    {
        throw RigUnavailable("the rig mounts itself, which needs root");
    }
    if (::access("/dev/fuse", R_OK | W_OK) != 0)
    {
        throw RigUnavailable("'/dev/fuse': " + errnoText(errno));
    }
}

RigStats::RigStats(const std::string& text)
{
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
    {
        const std::size_t space = line.find(' ');
        if (space != std::string::npos)
        {
            values_[line.substr(0, space)] = line.substr(space + 1);
        }
    }
}

std::uint64_t RigStats::number(const std::string& key) const
{
    const auto it = values_.find(key);
    std::uint64_t value = 0;
    if (it != values_.end())
    {
        const std::string& t = it->second;
        const auto [ptr, ec] =
            std::from_chars(t.data(), t.data() + t.size(), value);
        if (ec != std::errc{} || ptr != t.data() + t.size())
        {
            value = 0;
        }
    }
    return value;
}

std::string RigStats::text(const std::string& key) const
{
    const auto it = values_.find(key);
    return it == values_.end() ? std::string() : it->second;
}

PccFs::PccFs(const fs::path& binary, const fs::path& mountpoint,
             const RigSettings& settings, const fs::path& log) :
    mountpoint_(mountpoint),
    log_(log)
{
    child_ = startLogged(
        {binary.string(), "--cpus", std::to_string(settings.cpus),
         "--latency-us", std::to_string(settings.latencyUs), "--turnaround-us",
         std::to_string(settings.turnaroundUs), mountpoint.string()},
        log);
    const fs::path stats = mountpoint / "pccfs" / "stats";
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (;;)
    {
        std::error_code ec;
        if (fs::exists(stats, ec))
        {
            statsFd_ = ::open(stats.c_str(), O_RDONLY | O_CLOEXEC);
            if (statsFd_ >= 0)
            {
                return;
            }
        }
        if (child_->exited() || Clock::now() > deadline)
        {
            const std::string output = readText(log_);
            child_.reset();
            (void)::umount2(mountpoint_.c_str(), MNT_DETACH);
            throw RigUnavailable("the rig did not mount on '" +
                                 mountpoint.string() + "':\n" + output);
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
}

PccFs::~PccFs()
{
    ::close(statsFd_);
    (void)child_->stopWithin(SIGTERM, std::chrono::seconds(5));
    // Not mounted any more once it has unmounted itself: EINVAL, ignored.
    (void)::umount2(mountpoint_.c_str(), MNT_DETACH);
}

void PccFs::control(const std::string& command) const
{
    const fs::path path = mountpoint_ / "pccfs" / "control";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    const bool ok = fd >= 0 && ::write(fd, command.data(), command.size()) ==
                                   static_cast<ssize_t>(command.size());
    const int err = errno;
    if (fd >= 0)
    {
        ::close(fd);
    }
    if (!ok)
    {
        die("the rig refused '" + command + "': " + errnoText(err));
    }
}

RigStats PccFs::stats() const
{
    // One pread at offset 0 is one request to the rig, which makes the text
    // afresh for it; the whole file fits in it.
    constexpr std::size_t room = std::size_t{64} * 1024;
    std::string text(room, '\0');
    const ssize_t n = ::pread(statsFd_, text.data(), room, 0);
    if (n <= 0 || static_cast<std::size_t>(n) == room)
    {
        die("cannot read '" + (mountpoint_ / "pccfs" / "stats").string() +
            "' whole");
    }
    text.resize(static_cast<std::size_t>(n));
    return RigStats(text);
}

StatLoad::StatLoad(const fs::path& root, unsigned cpus, Observe observe) :
    path_(root / "proc" / "stat"), observe_(std::move(observe)), busy_(cpus, 0),
    idle_(cpus, 0), up_(cpus, true), perf_(cpus, 0)
{
    fs::create_directories(path_.parent_path());
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0)
    {
        die("cannot create '" + path_.string() + "': " + errnoText(errno));
    }
    if (!write())
    {
        die("cannot write '" + path_.string() + "': " + errnoText(errno));
    }
}

StatLoad::~StatLoad()
{
    stop();
    ::close(fd_);
}

void StatLoad::start()
{
    stop_ = false;
    thread_ = std::thread(&StatLoad::run, this);
}

void StatLoad::stop()
{
    stop_ = true;
    if (thread_.joinable())
    {
        thread_.join();
    }
}

bool StatLoad::write()
{
    // Every number has 20 digits, so that the file keeps its size and is
    // rewritten in place: the daemon keeps it open and preads it.
    char line[160];
    std::uint64_t busy = 0;
    std::uint64_t idle = 0;
    for (std::size_t cpu = 0; cpu < busy_.size(); ++cpu)
    {
        busy += busy_[cpu];
        idle += idle_[cpu];
    }
    text_.clear();
    const auto add =
        [this, &line](const char* name, std::uint64_t b, std::uint64_t i) {
        const int n = std::snprintf(
            line, sizeof(line),
            "%s %020" PRIu64 " 0 0 %020" PRIu64 " 0 0 0 0 0 0\n", name, b, i);
        text_.append(line, static_cast<std::size_t>(n));
    };
    add("cpu ", busy, idle);
    for (std::size_t cpu = 0; cpu < busy_.size(); ++cpu)
    {
        const std::string name = "cpu" + std::to_string(cpu);
        add(name.c_str(), busy_[cpu], idle_[cpu]);
    }
    return ::pwrite(fd_, text_.data(), text_.size(), 0) ==
           static_cast<ssize_t>(text_.size());
}

void StatLoad::turn()
{
    try
    {
        observe_(perf_);
    }
    catch (const std::exception&)
    {
        ++blindRounds_;
        return;
    }
    for (std::size_t cpu = 0; cpu < up_.size(); ++cpu)
    {
        if (perf_[cpu] >= high)
        {
            up_[cpu] = false;
        }
        else if (perf_[cpu] <= low)
        {
            up_[cpu] = true;
        }
    }
}

void StatLoad::run()
{
    constexpr auto period = std::chrono::milliseconds(1);
    // Turns without a read seen for this long: inotify saw nothing.
    constexpr auto blind = std::chrono::milliseconds(20);
    constexpr std::uint64_t unitUs = 10;
    const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (watch >= 0)
    {
        (void)::inotify_add_watch(watch, path_.c_str(), IN_ACCESS);
    }
    const auto start = Clock::now();
    std::uint64_t counted = 0; // units given out so far
    auto next = start;
    auto lastTurn = start;
    while (!stop_.load())
    {
        const auto wait = std::max(next - Clock::now(), Clock::duration{0});
        const auto ns = duration_cast<nanoseconds>(wait).count();
        timespec timeout{};
        timeout.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
        timeout.tv_nsec = static_cast<long>(ns % 1'000'000'000);
        pollfd p{watch, POLLIN, 0};
        (void)::ppoll(&p, watch >= 0 ? 1 : 0, &timeout, nullptr);
        bool read = false;
        alignas(inotify_event) char events[4096];
        while (watch >= 0 && ::read(watch, events, sizeof(events)) > 0)
        {
            read = true;
        }
        const auto now = Clock::now();
        const bool due = now >= next;
        if (read || now - lastTurn > blind)
        {
            turn();
            lastTurn = now;
        }
        else if (!due)
        {
            continue;
        }
        const auto us = static_cast<std::uint64_t>(
            duration_cast<microseconds>(Clock::now() - start).count());
        const std::uint64_t units = us / unitUs - counted;
        counted += units;
        for (std::size_t cpu = 0; cpu < up_.size(); ++cpu)
        {
            (up_[cpu] ? busy_ : idle_)[cpu] += units;
        }
        if (!write())
        {
            failed_ = true;
            break;
        }
        ++rounds_;
        if (due)
        {
            next += period;
            if (next < now - 5 * period)
            {
                next = now; // fell behind (a loaded machine): no burst
            }
        }
    }
    if (watch >= 0)
    {
        ::close(watch);
    }
}

} // namespace cppcgov::bench
