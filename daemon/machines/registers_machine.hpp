// SPDX-License-Identifier: Apache-2.0
// The registers backend: the _CPC registers mapped from <root>/dev/mem
// (SystemMemory registers only, lib/backend/devmem) and written through
// libcppc's perf control, load from <root>/proc/stat.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machines/machine_base.hpp"
#include "daemon/machines/plan_machine.hpp"
#include "daemon/machines/registers_state.hpp"
#include "lib/access_plan.hpp"
#include "lib/backend/devmem.hpp"
#include "lib/perf_control.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

class RegistersMachine final : public internal::MachineBase
{
  public:
    // Reads the firmware tables in <root>/sys/firmware/acpi/tables
    // (numbering CPUs by <root>/sys/devices/system/cpu/cpuN/firmware_node/
    // uid when present), builds the access plan, refuses any CPU that has
    // no usable _CPC and, by cppc::backend::refuseDirectPcc(), any whose
    // performance controls are in PCC (naming the kernel backend, which
    // owns PCC channels), refuses to run while the kernel's cppc_cpufreq
    // is loaded (cppc::backend::refuseWhileKernelDrivesCppc(): it writes
    // the same registers), maps the registers from <root>/dev/mem, and
    // opens <root>/proc/stat. Capabilities must be Integers or SystemMemory
    // registers. Before it writes anything it records every control
    // register it may write (savedEntries) in `stateFile`
    // (registers_state.hpp; empty: none), and refuses to start while that
    // file is there: a previous run's registers must be put back first
    // (restoreFromFile). Throws std::runtime_error (or the
    // std::system_error of a file or of the PCC rule) naming the CPU,
    // register or file concerned.
    explicit RegistersMachine(const std::filesystem::path& root,
                              std::filesystem::path stateFile = {});

    // restore(), unless it ran: a start that fails after the machine was
    // made puts the registers back and leaves no state file.
    ~RegistersMachine() override;

    RegistersMachine(const RegistersMachine&) = delete;
    RegistersMachine& operator=(const RegistersMachine&) = delete;

    // The registry's factory: RegistersMachine(root), recording in
    // registersStateFile(stateDir) unless `stateDir` is empty.
    static std::unique_ptr<Machine> start(
        const BackendConfig& config, const std::filesystem::path& root,
        const std::filesystem::path& stateDir);

    // Puts back what a run that did not stop left in the registers, from
    // the state file `stateFile`: opens the registers under `root` as the
    // constructor does and writes each saved value through the access
    // plan. A register the firmware no longer describes with its saved
    // address and field is not written (Errc::registerMoved); when the
    // registers
    // cannot be opened (tables, /dev/mem, the PCC or cppc_cpufreq rule)
    // every one is a failure with that error. The file then holds what is
    // not back (lib/backend/state_file.hpp). Empty when there is no file.
    // Throws only std::bad_alloc.
    static cppc::backend::RestoreResult restoreFromFile(
        const std::filesystem::path& root,
        const std::filesystem::path& stateFile);

    std::string name() const override;
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override;

    // Desired, and Minimum and Maximum when every CPU's _CPC has them as
    // writable registers (then one setPerf writes all three, merged where
    // they share a unit); EnergyPerformancePreference,
    // AutonomousSelectionEnable and AutonomousActivityWindow each where
    // every CPU has it as a writable register (not an Integer, not NULL).
    Controls controls() const noexcept override;
    // Where every CPU has a PerformanceLimited register.
    bool readsPerfLimited() const noexcept override
    {
        return readsPerfLimited_;
    }

    // sample(): util = busy fraction x last requested perf / highest
    // (highest before any request); deliveredPerf is 0 (no counters user
    // space can read here); perfLimited the PerformanceLimited bits, read
    // and cleared (cppc::BasicPerfControl::takePerfLimited()).
    // apply(): through the access plan, once per group of aliased
    // registers however many CPUs of the batch share it; EPP, autonomous
    // selection and the activity window only when they change.

    // Writes back every control register as it was at start: Desired, and
    // Minimum, Maximum, EPP, AutonomousSelectionEnable and
    // AutonomousActivityWindow where the CPU has them. A write that fails
    // is a failure entry naming the CPU and the register. The state file
    // is then removed, or left holding the CPUs whose registers are not
    // all back. apply() does nothing afterwards.
    cppc::backend::RestoreResult restore() noexcept override;

    // The CPU's _CPC performance registers, in physical memory.
    std::string writeTarget(std::uint32_t cpu) const override;

    const cppc::AccessPlan& plan() const noexcept
    {
        return *plan_;
    }

  private:
    // The registers under a root, opened and checked.
    struct Registers
    {
        std::unique_ptr<cppc::AccessPlan> plan;
        std::unique_ptr<cppc::backend::DevMemMap> map;
        std::unique_ptr<cppc::PerfControl> control;
        std::filesystem::path memory;
    };
    // Reads the firmware, builds the plan, applies the refusals the
    // constructor documents and maps the registers. Throws as it does.
    static Registers open(const std::filesystem::path& root);
    // Reads every control register of savedEntries the `count` CPUs have
    // into saved_, and records them in the state file. Throws
    // std::system_error naming the register or the file.
    void saveControls(std::uint32_t count);

    CpuSample sampleCpu(std::size_t cpu) const noexcept override;
    std::error_code applyOne(const CppcRequest& request) noexcept override;
    void poll(std::uint64_t nowUs) noexcept override;

    std::unique_ptr<cppc::AccessPlan> plan_;
    std::unique_ptr<cppc::backend::DevMemMap> map_;
    std::unique_ptr<cppc::PerfControl> control_;
    internal::RequestWrites writes_;
    internal::ControlWrites controlWrites_;
    bool readsPerfLimited_ = false;
    std::vector<std::uint32_t> requested_;
    std::vector<std::uint8_t> perfLimited_;
    std::filesystem::path stateFile_;
    std::vector<SavedRegister> saved_;
    std::filesystem::path memory_;
    bool stopped_ = false; // restore() ran
};

} // namespace cppcgov::daemon
