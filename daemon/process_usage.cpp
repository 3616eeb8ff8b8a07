// SPDX-License-Identifier: Apache-2.0
#include "daemon/process_usage.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace cppcgov::daemon
{
namespace
{

double seconds(const timeval& tv) noexcept
{
    return static_cast<double>(tv.tv_sec) +
           static_cast<double>(tv.tv_usec) / 1e6;
}

} // namespace

ProcessUsage processUsage()
{
    ProcessUsage u;
    rusage usage{};
    if (::getrusage(RUSAGE_SELF, &usage) == 0)
    {
        u.cpuSeconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    }
    // statm: size resident shared ..., in pages.
    std::ifstream statm("/proc/self/statm");
    std::uint64_t size = 0;
    std::uint64_t resident = 0;
    const long page = ::sysconf(_SC_PAGESIZE);
    if (statm >> size >> resident && page > 0)
    {
        u.residentBytes = resident * static_cast<std::uint64_t>(page);
    }
    return u;
}

} // namespace cppcgov::daemon
