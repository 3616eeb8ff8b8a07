// SPDX-License-Identifier: Apache-2.0
// The simulator backend: a simulated CPPC machine (lib/sim) in real time,
// the default when the firmware offers no CPPC, as on a developer's
// machine. Its CPU n is as busy as host CPU (n mod host CPUs) in
// <root>/proc/stat, taken as work at highest performance (no /proc/stat:
// idle).
//
// The simulated platform reads its registers (as the firmware would, from
// the register file and the PCC payloads) at every sample():
//   - AutonomousSelectionEnable clear (or not a register): it delivers
//     Desired, clamped into [lowest, highest], at once;
//   - set: it ignores Desired and picks its own performance from the CPU's
//     load: lowest nonlinear + (highest - lowest nonlinear) x min(1, load x
//     (256 - EPP) / 128), so EPP 0 reaches highest at half load and EPP 255
//     stays near lowest nonlinear (EPP 128 where there is no register),
//     within [Minimum, Maximum] (0: no bound), moving towards it over the
//     AutonomousActivityWindow (an exponential approach with that time
//     constant; 10 ms where the window is 0 or no register);
//   - a platform limit (setPlatformLimit(), or SimulatorConfig's
//     platformLimit for every CPU), a power or thermal cap, holds delivered
//     performance at or below it; when that puts it below Desired (not in
//     autonomous mode) or below a non-zero Minimum, it sets
//     PerformanceLimited's Desired or Minimum Excursion bit, sticky until
//     cleared, where the CPU has that register.
// sample() then reads and clears PerformanceLimited through the access
// plan (CpuSample::perfLimited) on layouts where every CPU has it.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machines/machine_base.hpp"
#include "daemon/machines/plan_machine.hpp"
#include "lib/access_plan.hpp"
#include "lib/perf_control.hpp"
#include "lib/sim/layouts.hpp"
#include "lib/sim/pcc_subspace.hpp"
#include "lib/sim/register_file.hpp"

#include <array>
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

    // Desired, Minimum, Maximum and EPP, and autonomous selection and its
    // activity window where every CPU of the layout has those registers.
    // Desired, and Minimum and Maximum where every CPU has those registers,
    // go through the access plan into the register file, as do EPP,
    // AutonomousSelectionEnable and AutonomousActivityWindow where every
    // CPU has them (each written when it changes, once per aliased
    // register); the platform keeps the whole request (lastRequest()).
    Controls controls() const noexcept override;
    // Where every CPU has a PerformanceLimited register (rd-n2, altra,
    // neoverse).
    bool readsPerfLimited() const noexcept override
    {
        return readsPerfLimited_;
    }

    // sample(): util = min(demand, delivered / highest) x 1024, where
    // demand is the host CPU's busy fraction; deliveredPerf is what the
    // platform delivers (nominal before any request): the performance
    // requested, clamped into [lowest, highest], outside autonomous mode;
    // perfLimited what PerformanceLimited held (then cleared).
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
    // Caps `cpu`'s delivered performance at `perf` (0: no cap), from the
    // next sample() on. Throws std::out_of_range for a CPU beyond the
    // layout.
    void setPlatformLimit(std::uint32_t cpu, std::uint32_t perf);
    // What the platform delivers on `cpu` now (as of the last sample()).
    std::uint32_t deliveredPerf(std::uint32_t cpu) const noexcept
    {
        return delivered_[cpu];
    }
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
    // Where the platform reads one of a CPU's registers.
    struct PlatformRegister
    {
        enum class Kind : std::uint8_t
        {
            none,
            integer,
            memory,
            pcc,
        };
        Kind kind = Kind::none;
        std::uint64_t integer = 0;
        cppc::AddressSpace space = cppc::AddressSpace::systemMemory;
        std::uint64_t address = 0;
        std::uint8_t bytes = 0;
        std::uint8_t subspace = 0;
        cppc::PccRegister field; // memory: shift and width in the unit
    };
    // The registers the platform reads, per CPU, in this order.
    enum Slot : std::uint8_t
    {
        desiredSlot,
        minSlot,
        maxSlot,
        eppSlot,
        autoSlot,
        windowSlot,
        limitedSlot,
        slotCount,
    };

    SimulatorMachine(cppc::sim::Layout layout, const SimulatorConfig& config,
                     const std::filesystem::path& root);
    CpuSample sampleCpu(std::size_t cpu) const noexcept override;
    std::error_code applyOne(const CppcRequest& request) noexcept override;
    void poll(std::uint64_t nowUs) noexcept override;
    std::optional<std::uint64_t> platformRead(
        const PlatformRegister& reg) const noexcept;
    void platformWrite(const PlatformRegister& reg,
                       std::uint64_t value) noexcept;
    std::uint32_t platformPerf(std::size_t cpu, std::uint64_t elapsedUs,
                               std::uint8_t& excursions) noexcept;

    std::string layoutName_;
    cppc::sim::RegisterFile file_;
    cppc::sim::PccSubspaces pcc_;
    cppc::AccessPlan plan_;
    cppc::BasicPerfControl<cppc::sim::CountingIo> control_;
    internal::RequestWrites writes_;
    internal::ControlWrites controlWrites_;
    bool readsPerfLimited_ = false;
    std::vector<std::array<PlatformRegister, slotCount>> registers_;
    std::vector<std::uint32_t> delivered_;
    std::vector<double> autonomousPerf_; // the platform's own choice
    std::vector<std::uint32_t> limit_;   // 0: none
    std::vector<std::uint8_t> perfLimited_;
    std::vector<bool> requested_; // Desired written at least once
    std::vector<CppcRequest> lastRequest_;
    std::optional<std::uint64_t> lastPollUs_;
};

} // namespace cppcgov::daemon
