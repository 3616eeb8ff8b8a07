// SPDX-License-Identifier: Apache-2.0
#include "tests/vm/platform/vcpu.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

namespace cppcgov::platform
{

namespace
{

namespace fs = std::filesystem;

// One write(2) of `text` to `path`; an errno value, 0 on success.
int writeFile(const fs::path& path, const std::string& text)
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
    {
        return errno;
    }
    const ssize_t n = ::write(fd, text.data(), text.size());
    const int e =
        n < 0 ? errno : (static_cast<std::size_t>(n) == text.size() ? 0 : EIO);
    ::close(fd);
    return e;
}

void mustWrite(const fs::path& path, const std::string& text)
{
    if (const int e = writeFile(path, text); e != 0)
    {
        throw std::system_error(
            e, std::generic_category(),
            "writing '" + text + "' to '" + path.string() + "'");
    }
}

// The thread's cgroup path in the v1 hierarchy with `cpu`, or in v2.
std::string threadCgroup(int pid, int tid, CgroupKind kind)
{
    const std::string file = "/proc/" + std::to_string(pid) + "/task/" +
                             std::to_string(tid) + "/cgroup";
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line))
    {
        // "ID:CONTROLLERS:PATH"
        const auto first = line.find(':');
        const auto second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos)
        {
            continue;
        }
        const std::string controllers =
            line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        if (kind == CgroupKind::v2 && line.compare(0, first, "0") == 0 &&
            controllers.empty())
        {
            return path;
        }
        if (kind == CgroupKind::v1)
        {
            std::istringstream names(controllers);
            std::string name;
            while (std::getline(names, name, ','))
            {
                if (name == "cpu")
                {
                    return path;
                }
            }
        }
    }
    throw std::system_error(ENOENT, std::generic_category(),
                            "no cpu cgroup in '" + file + "'");
}

fs::path under(const fs::path& root, const std::string& path)
{
    return root / fs::path(path).relative_path();
}

} // namespace

BusyClock::BusyClock(int pid, int tid)
{
    const std::string path = "/proc/" + std::to_string(pid) + "/task/" +
                             std::to_string(tid) + "/schedstat";
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
    {
        throw std::system_error(errno, std::generic_category(),
                                "'" + path + "'");
    }
}

BusyClock::~BusyClock()
{
    if (fd_ >= 0)
    {
        ::close(fd_);
    }
}

std::optional<Schedstat> BusyClock::read() const
{
    std::array<char, 128> text{};
    const ssize_t n = ::pread(fd_, text.data(), text.size() - 1, 0);
    if (n <= 0)
    {
        return std::nullopt;
    }
    return parseSchedstat(
        std::string_view(text.data(), static_cast<std::size_t>(n)));
}

std::optional<Schedstat> parseSchedstat(std::string_view text)
{
    Schedstat s;
    const char* p = text.data();
    const char* end = p + text.size();
    for (std::uint64_t* field : {&s.runNs, &s.waitNs, &s.runs})
    {
        const auto r = std::from_chars(p, end, *field);
        const bool last = field == &s.runs;
        if (r.ec != std::errc{} || (!last && (r.ptr == end || *r.ptr != ' ')) ||
            (last && r.ptr != end && *r.ptr != '\n'))
        {
            return std::nullopt;
        }
        p = r.ptr + 1;
    }
    return s;
}

std::uint64_t BusyEstimate::add(std::uint64_t nowNs, const Schedstat& reading)
{
    if (started_ && nowNs > lastNs_ && reading.runNs >= last_.runNs &&
        reading.waitNs >= last_.waitNs && reading.runs >= last_.runs)
    {
        const std::uint64_t wall = nowNs - lastNs_;
        // schedstat moves in lumps: run time at the host's ticks and
        // switches, a wait when it ends. What a stretch cannot hold is
        // carried into the next ones.
        const std::uint64_t pool = carried_ + (reading.runNs - last_.runNs) +
                                   (reading.waitNs - last_.waitNs);
        const std::uint64_t awake = std::min(wall, pool);
        carried_ = std::min(pool - awake, maxCarriedNs);
        busy_ += awake;
    }
    started_ = true;
    lastNs_ = nowNs;
    last_ = reading;
    return busy_;
}

CpuQuota::CpuQuota(CgroupKind kind, const fs::path& root,
                   const std::string& name, unsigned index, int pid, int tid,
                   std::uint64_t periodUs) :
    kind_(kind),
    pid_(pid), tid_(tid), period_(periodUs)
{
    home_ = under(root, threadCgroup(pid_, tid_, kind_));
    const fs::path parent = root / name;
    dir_ = parent / ("vcpu" + std::to_string(index));
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec)
    {
        throw std::system_error(ec, "making '" + dir_.string() + "'");
    }
    if (kind_ == CgroupKind::v1)
    {
        mustWrite(dir_ / "cpu.cfs_period_us", std::to_string(period_));
        mustWrite(dir_ / "cpu.cfs_quota_us", "-1");
        mustWrite(dir_ / "tasks", std::to_string(tid_));
        return;
    }
    // v2: the process in the subtree's domain, each virtual CPU's thread
    // in a threaded child with the cpu controller.
    mustWrite(root / "cgroup.subtree_control", "+cpu");
    mustWrite(parent / "cgroup.procs", std::to_string(pid_));
    mustWrite(parent / "cgroup.subtree_control", "+cpu");
    mustWrite(dir_ / "cgroup.type", "threaded");
    mustWrite(dir_ / "cpu.max", "max " + std::to_string(period_));
    mustWrite(dir_ / "cgroup.threads", std::to_string(tid_));
}

CpuQuota::~CpuQuota()
{
    release();
}

bool CpuQuota::set(double share)
{
    const double wanted =
        std::clamp(share, 0.0, 1.0) * static_cast<double>(period_);
    const auto us = std::max<std::uint64_t>(
        1000, static_cast<std::uint64_t>(std::llround(wanted)));
    if (us == quota_)
    {
        return true;
    }
    const int e =
        kind_ == CgroupKind::v1
            ? writeFile(dir_ / "cpu.cfs_quota_us", std::to_string(us))
            : writeFile(dir_ / "cpu.max",
                        std::to_string(us) + " " + std::to_string(period_));
    if (e != 0)
    {
        error_ = "quota for '" + dir_.string() +
                 "': " + std::generic_category().message(e);
        return false;
    }
    quota_ = us;
    return true;
}

bool CpuQuota::release()
{
    if (released_)
    {
        return error_.empty();
    }
    released_ = true;
    int e = 0;
    if (kind_ == CgroupKind::v1)
    {
        e = writeFile(home_ / "tasks", std::to_string(tid_));
    }
    else
    {
        e = writeFile(home_ / "cgroup.procs", std::to_string(pid_));
    }
    // ESRCH: the thread is gone, and with it anything left to move.
    if (e != 0 && e != ESRCH)
    {
        error_ = "moving thread " + std::to_string(tid_) + " back to '" +
                 home_.string() + "': " + std::generic_category().message(e);
    }
    if (::rmdir(dir_.c_str()) != 0 && errno != ENOENT)
    {
        error_ += (error_.empty() ? "" : "; ") + std::string("removing '") +
                  dir_.string() +
                  "': " + std::generic_category().message(errno);
    }
    // The platform's own directory goes with its last virtual CPU.
    ::rmdir(dir_.parent_path().c_str());
    return error_.empty();
}

std::optional<CgroupChoice> findCpuController(const fs::path& root)
{
    std::error_code ec;
    for (const char* v1 : {"cpu", "cpu,cpuacct"})
    {
        if (fs::exists(root / v1 / "cpu.cfs_quota_us", ec))
        {
            return CgroupChoice{CgroupKind::v1, root / v1};
        }
    }
    for (const fs::path& v2 : {root, root / "unified"})
    {
        std::ifstream in(v2 / "cgroup.controllers");
        std::string word;
        while (in >> word)
        {
            if (word == "cpu")
            {
                return CgroupChoice{CgroupKind::v2, v2};
            }
        }
    }
    return std::nullopt;
}

} // namespace cppcgov::platform
