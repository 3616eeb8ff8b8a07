// SPDX-License-Identifier: Apache-2.0
// What cppcgovctl reads from cppcgovd over D-Bus, as plain values: the
// daemon's properties, its per-CPU state (GetCpuStates) and its live
// handles (ListHandles). The D-Bus client (bus_client.hpp) fills these;
// the commands' formatting works on them alone, so it is tested without a
// bus.
#pragma once

#include "lib/freq_line.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::tools
{

// The properties of org.cppcgov.Governor1.
struct DaemonInfo
{
    std::string backend;
    std::string policy;
    std::uint32_t cpuCount = 0;
    std::uint32_t samplingPeriodUs = 0;
    // "bpf" or "procfs", and why.
    std::string samplingSource;
    std::string samplingReason;
    std::uint32_t clampCount = 0;
    std::uint32_t latencyCount = 0;
    std::string version;
    // The CPPC controls the backend writes ("desired", "min", "max", "epp",
    // "autonomous", "activity-window").
    std::vector<std::string> controls;

    bool operator==(const DaemonInfo&) const = default;
};

// A clamp handle active on one CPU.
struct CpuHandle
{
    std::uint64_t handle = 0;
    std::string owner; // the owner's unique bus name
    std::uint32_t task = 0;
    std::uint16_t utilMin = 0;
    std::uint16_t utilMax = 0;

    bool operator==(const CpuHandle&) const = default;
};

// One CPU as of the daemon's last tick.
struct CpuState
{
    std::uint32_t cpu = 0;
    std::uint16_t util = 0; // 0..1024
    std::uint16_t clampMin = 0;
    std::uint16_t clampMax = 0;
    std::uint32_t requestedPerf = 0;
    std::uint32_t deliveredPerf = 0; // 0: unknown
    std::string reason;
    std::optional<std::uint32_t> latencyLimitUs; // none: no limit
    std::vector<CpuHandle> handles;
    // Why the CPU is degraded (an access to its hardware failed or hangs);
    // empty when it is not.
    std::string degraded;

    bool operator==(const CpuState&) const = default;
};

// The rest of one CPU's last CPPC request (GetCpuControls).
struct CpuControls
{
    std::uint32_t cpu = 0;
    std::uint32_t minPerf = 0;
    std::uint32_t maxPerf = 0;
    std::optional<std::uint8_t> epp; // none: left as it is
    bool autonomous = false;
    std::optional<std::uint32_t> activityWindowUs; // none: left as it is

    bool operator==(const CpuControls&) const = default;
};

// What one CPU is (GetCpuInfo).
struct CpuInfo
{
    std::uint32_t cpu = 0;
    // The index of the domain it decides in (the CPUs sharing a request).
    std::uint32_t domain = 0;
    std::optional<std::uint32_t> psdDomain; // none: no _PSD
    std::string policy; // in force for it: schedutil, performance, powersave
    std::uint32_t lowestPerf = 0;
    std::uint32_t lowestNonlinearPerf = 0;
    std::uint32_t nominalPerf = 0;
    std::uint32_t highestPerf = 0;
    std::uint32_t lowestKhz = 0; // 0: unknown
    std::uint32_t nominalKhz = 0;

    // The conversion of its performance levels to kHz.
    cppc::FreqLine freq() const noexcept
    {
        return {lowestPerf, lowestKhz, nominalPerf, nominalKhz};
    }

    bool operator==(const CpuInfo&) const = default;
};

// One live handle, as ListHandles reports it.
struct HandleInfo
{
    std::uint64_t handle = 0;
    std::string kind; // "clamp" or "latency"
    std::string owner;
    std::uint32_t task = 0; // 0 for a CPU-set latency request
    std::uint16_t utilMin = 0;
    std::uint16_t utilMax = 0;
    std::uint32_t latencyUs = 0;

    bool operator==(const HandleInfo&) const = default;
};

// Everything `cppcgovctl status` shows.
struct GovernorSnapshot
{
    DaemonInfo daemon;
    std::vector<CpuState> cpus;
    std::vector<HandleInfo> handles;
    std::vector<CpuInfo> info;                       // one per CPU, as cpus
    std::vector<CpuControls> controls;               // one per CPU, as cpus
    std::map<std::string, std::uint64_t> statistics; // GetStatistics
};

} // namespace cppcgov::tools
