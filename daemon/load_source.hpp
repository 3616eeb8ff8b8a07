// SPDX-License-Identifier: Apache-2.0
// Where a machine reads each CPU's load: the seam between the machines
// (machines/machine_base.hpp) and the two ways the daemon observes the
// host, /proc/stat (proc_stat.hpp) and the scheduler's own events
// (observation.hpp).
//
// CPUs are the host's, numbered as the kernel numbers them. Called on the
// daemon's loop thread on every tick: nothing in here may wait.
#pragma once

#include <cstdint>
#include <span>
#include <system_error>

namespace cppcgov::daemon
{

class LoadSource
{
  public:
    virtual ~LoadSource() = default;

    // The number of CPUs sample() reports.
    virtual std::uint32_t cpus() const noexcept = 0;

    // Writes each CPU's busy fraction (0..busyScale, proc_stat.hpp) since
    // the previous call into `out` (cpus() elements, else
    // std::errc::invalid_argument). The first call starts every window and
    // reports zeros. On an error `out` is all zeros.
    [[nodiscard]] virtual std::error_code sample(
        std::span<std::uint16_t> out) noexcept = 0;

    // Each CPU's busy time over the window the last sample() ended, in
    // microseconds (cpus() elements); 0 where unknown.
    virtual std::span<const std::uint64_t> busyUs() const noexcept = 0;

    // Whether `cpu` was online at the last sample(); false beyond cpus().
    virtual bool online(std::uint32_t cpu) const noexcept = 0;
};

} // namespace cppcgov::daemon
