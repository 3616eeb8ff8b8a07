// The largest number of CPUs the daemon handles: arm64's NR_CPUS limit.
// CPU numbers from configuration files, D-Bus calls and state files are
// checked against it before anything is sized from them.
#pragma once

#include <cstdint>

namespace cppcgov::daemon
{

inline constexpr std::uint32_t maxCpus = 4096;

} // namespace cppcgov::daemon
