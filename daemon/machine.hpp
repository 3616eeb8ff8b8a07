// The machine the governor drives: where per-CPU load and delivered
// performance come from and where performance requests go.
//
// One narrow seam, three backends (chosen by the `backend:` section of the
// configuration, see config.hpp):
//   simulator  a simulated CPPC machine (lib/sim) in real time: the default
//              when the firmware offers no CPPC, as on a developer's machine;
//   kernel     the cpufreq `userspace` governor and scaling_setspeed
//              (lib/backend/kernel), load from <root>/proc/stat;
//   registers  the _CPC registers themselves through /dev/mem
//              (lib/backend/devmem + libcppc's perf control), load from
//              <root>/proc/stat.
//
// Every Machine method is called from the daemon's one event-loop thread.
// sample() and apply() run on every tick: they must not block for long
// (file reads of procfs and sysfs are fine) and report failures as error
// codes. No logging in here: the daemon logs what these return.
#pragma once

#include "lib/backend/restore_result.hpp"
#include "policies/policy.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace cppcgov::daemon
{

// One CPU's load over the last sampling window.
struct CpuSample
{
    // Frequency-invariant utilization over the window, 0..1024: the busy
    // fraction x delivered / highest performance.
    std::uint16_t util = 0;
    // Average delivered performance over the window; 0 when unknown (no
    // counters, or the sample was rejected as implausible).
    std::uint32_t deliveredPerf = 0;
    // The time the CPU was busy (running any task, or interrupts) since
    // the previous sample, in microseconds, as procfs counts it (in 10 ms
    // steps); 0 when unknown. The governor compares it with the CPU time
    // of the hinted tasks seen there (governor.hpp).
    std::uint64_t busyUs = 0;
};

// A performance request for one CPU (for a shared domain, the daemon gives
// one request per CPU of the domain, all equal).
struct PerfRequest
{
    std::uint32_t cpu = 0;
    std::uint32_t perf = 0;
};

class Machine
{
  public:
    virtual ~Machine() = default;

    // "simulator:<layout>", "kernel" or "registers".
    virtual std::string name() const = 0;

    // The CPUs (numbered 0..n-1 in the order of topology().cpus, which is
    // the logical CPU number) and which decide together.
    virtual const policies::Topology& topology() const = 0;

    // The _PSD domain number of `cpu`, for the configuration's `domain:`
    // overrides; nothing when the firmware gives none.
    virtual std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const = 0;

    // Samples every CPU's load since the previous call (the first call
    // starts the window and reports zeros). `nowUs` is CLOCK_MONOTONIC in
    // microseconds. `out` has one element per CPU. Does not allocate after
    // the first call.
    [[nodiscard]] virtual std::error_code sample(
        std::uint64_t nowUs, std::span<CpuSample> out) noexcept = 0;

    // Writes the requests. Returns the first error; the others are still
    // attempted. Does not allocate.
    [[nodiscard]] virtual std::error_code apply(
        std::span<const PerfRequest> requests) noexcept = 0;

    // The logical CPU of the governed machine on which a task that the host
    // kernel reports on host CPU `hostCpu` counts; nothing when it counts
    // nowhere. The identity on real backends; the simulator maps host CPU
    // n to simulated CPU n when it has one.
    virtual std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept = 0;

    // Puts back everything the backend changed (cpufreq governor, limits,
    // set speed), removing its state file when all is back and otherwise
    // leaving it holding exactly what is not. Runs once; apply() does
    // nothing afterwards. Never throws.
    virtual cppc::backend::RestoreResult restore() noexcept = 0;
};

} // namespace cppcgov::daemon
