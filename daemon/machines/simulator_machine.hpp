// SPDX-License-Identifier: Apache-2.0
// The simulator backend: a simulated CPPC machine (lib/sim) in real time,
// the default when the firmware offers no CPPC, as on a developer's
// machine. Its CPU n is as busy as host CPU (n mod host CPUs) in
// <root>/proc/stat, taken as work at highest performance (no /proc/stat:
// idle); it delivers the performance last requested at once.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machines/machine_base.hpp"
#include "daemon/machines/plan_machine.hpp"
#include "lib/access_plan.hpp"
#include "lib/perf_control.hpp"
#include "lib/sim/layouts.hpp"
#include "lib/sim/pcc_subspace.hpp"
#include "lib/sim/register_file.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

// Register traffic of the simulated machine since it started (setting it
// up is not counted).
struct SimulatorCounts
{
    std::uint64_t registerReads = 0;
    std::uint64_t registerWrites = 0; // memory stores and PCC register stores
    std::uint64_t locks = 0;
    std::uint64_t pccCommands = 0;
    std::uint64_t pccDoorbells = 0;

    bool operator==(const SimulatorCounts&) const = default;
};

class SimulatorMachine final : public internal::MachineBase
{
  public:
    // Builds cppc::sim::makeLayout(config.layout, config.cpus): the access
    // plan, the counted register file, the PCC payloads (layouts with PCC
    // registers go through lib/sim's PccSubspaces: a write command and
    // doorbell per request, completing at once, with no platform latency)
    // and the capabilities each CPU's _CPC gives (Integers, or registers
    // read through PCC). Load comes from <root>/proc/stat when it exists.
    // Throws std::invalid_argument for a layout or CPU count makeLayout()
    // refuses, std::runtime_error when the plan refuses a CPU or a CPU's
    // capabilities are unusable, std::system_error when /proc/stat exists
    // but cannot be read.
    SimulatorMachine(const SimulatorConfig& config,
                     const std::filesystem::path& root);

    SimulatorMachine(const SimulatorMachine&) = delete;
    SimulatorMachine& operator=(const SimulatorMachine&) = delete;

    // The registry's factory: SimulatorMachine(config.simulator, root).
    static std::unique_ptr<Machine> start(const BackendConfig& config,
                                          const std::filesystem::path& root,
                                          const std::filesystem::path&);

    std::string name() const override;
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override;

    // Desired, Minimum, Maximum and EPP: all of a request. Desired, and
    // Minimum and Maximum where every CPU of the layout has those
    // registers, go through the access plan into the register file; the
    // simulated platform keeps the whole request (lastRequest()) and
    // delivers Desired within [lowest, highest]. It has no autonomous
    // mode, so EPP changes nothing it delivers.
    Controls controls() const noexcept override;

    // sample(): util = min(demand, delivered / highest) x 1024, where
    // demand is the host CPU's busy fraction; deliveredPerf is the
    // performance last requested, clamped into [lowest, highest] (nominal
    // before any request).
    // apply(): through the access plan into the register file, once per
    // group of aliased registers however many CPUs of the batch share it.
    // cpuOfHostCpu(): n -> n for n below the number of simulated CPUs.

    // Nothing to put back; apply() does nothing afterwards.
    cppc::backend::RestoreResult restore() noexcept override;

    // The simulated CPU's performance registers.
    std::string writeTarget(std::uint32_t cpu) const override;

    // The value in `cpu`'s `entry` register field (Desired by default) as
    // the platform reads it (not counted). Throws std::out_of_range for a
    // CPU beyond the layout or a register neither in memory nor in PCC.
    std::uint64_t registerValue(
        std::uint32_t cpu,
        cppc::CpcEntry entry = cppc::CpcEntry::desiredPerf) const;
    // The last request applied for `cpu` (zeros before any). `cpu` below
    // the number of CPUs.
    const CppcRequest& lastRequest(std::uint32_t cpu) const noexcept
    {
        return lastRequest_[cpu];
    }
    // Register traffic since start-up.
    SimulatorCounts counts() const;
    // How many host CPUs the load comes from (0: no /proc/stat, idle).
    std::uint32_t hostCpus() const noexcept
    {
        return static_cast<std::uint32_t>(busy_.size());
    }
    const cppc::AccessPlan& plan() const noexcept
    {
        return plan_;
    }

  private:
    SimulatorMachine(cppc::sim::Layout layout,
                     const std::filesystem::path& root);
    CpuSample sampleCpu(std::size_t cpu) const noexcept override;
    std::error_code applyOne(const CppcRequest& request) noexcept override;

    std::string layoutName_;
    cppc::sim::RegisterFile file_;
    cppc::sim::PccSubspaces pcc_;
    cppc::AccessPlan plan_;
    cppc::BasicPerfControl<cppc::sim::CountingIo> control_;
    internal::RequestWrites writes_;
    std::vector<std::uint32_t> delivered_;
    std::vector<CppcRequest> lastRequest_;
};

} // namespace cppcgov::daemon
