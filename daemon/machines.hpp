// The machines behind machine.hpp's seam, and what picks and starts one
// from the configuration's `backend:` section.
//
//   SimulatorMachine  a simulated CPPC machine (lib/sim) in real time. Its
//                     CPU n is as busy as host CPU (n mod host CPUs) in
//                     <root>/proc/stat, taken as work at highest
//                     performance (no /proc/stat: idle); it delivers the
//                     performance last requested at once.
//   KernelMachine     cppc_cpufreq's userspace governor
//                     (lib/backend/kernel), load from <root>/proc/stat,
//                     delivered performance from acpi_cppc/feedback_ctrs.
//   RegistersMachine  the _CPC registers mapped from <root>/dev/mem
//                     (SystemMemory registers only), load from
//                     <root>/proc/stat.
//
// Start-up throws with a message naming what is missing or refused; the
// per-tick paths (sample, apply) return error codes, never allocate after
// their first call and build no paths.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machine.hpp"
#include "daemon/proc_stat.hpp"
#include "lib/access_plan.hpp"
#include "lib/backend/devmem.hpp"
#include "lib/backend/kernel.hpp"
#include "lib/feedback.hpp"
#include "lib/perf_control.hpp"
#include "lib/sim/layouts.hpp"
#include "lib/sim/pcc_subspace.hpp"
#include "lib/sim/register_file.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

// What `auto` checks: <root>/sys/devices/system/cpu/cpu0/acpi_cppc, which
// the kernel creates when the firmware gives CPU 0 a usable _CPC.
std::filesystem::path cppcProbePath(const std::filesystem::path& root);

// The backend `kind` stands for under `root`: for automatic, kernel when
// cppcProbePath(root) exists and simulator otherwise; any other kind
// itself.
[[nodiscard]] BackendKind resolveBackend(BackendKind kind,
                                         const std::filesystem::path& root);

// Where the kernel machine records what it changed: <stateDir>/kernel.state.
std::filesystem::path kernelStateFile(const std::filesystem::path& stateDir);

// Starts the machine `config` names, on the system under `root` ("/" in
// production). `stateDir` holds the state files through which a crashed
// run's changes are undone (empty: none are written). Throws
// std::runtime_error whose message starts with the backend's name (and,
// for auto, why it was chosen) and names what is missing or refused: a
// previous run's state file not restored first (see restoreMachineState),
// no cpufreq policy, no ACPI tables, registers in PCC, /dev/mem refused,
// an unreadable /proc/stat, ...
[[nodiscard]] std::unique_ptr<Machine> makeMachine(
    const BackendConfig& config, const std::filesystem::path& root,
    const std::filesystem::path& stateDir);

// Undoes what a run that did not stop cleanly changed, from the state files
// in `stateDir` (empty: none): KernelBackend::restoreFromFile() of
// kernelStateFile(). Empty when there was nothing to undo; a state file
// that is bad, unreadable or not all put back is kept (holding what is
// left) and reported as failures. Throws only std::bad_alloc.
[[nodiscard]] cppc::backend::RestoreResult restoreMachineState(
    const std::filesystem::path& root, const std::filesystem::path& stateDir);

namespace internal
{

// Which CPUs share one Desired register field (as _PSD domains of Orion
// O6 do), so that a field is written once per request however many CPUs
// name it.
class DesiredAliases
{
  public:
    DesiredAliases() = default;
    explicit DesiredAliases(const cppc::AccessPlan& plan);

    // The group of `cpu`; every CPU is in exactly one.
    std::uint32_t groupOf(std::uint32_t cpu) const noexcept
    {
        return groupOf_[cpu];
    }
    // The CPUs of `group`.
    std::span<const std::uint32_t> members(std::uint32_t group) const noexcept
    {
        return {members_.data() + starts_[group],
                starts_[group + 1] - starts_[group]};
    }
    std::size_t groups() const noexcept
    {
        return starts_.empty() ? 0 : starts_.size() - 1;
    }

  private:
    std::vector<std::uint32_t> groupOf_;
    std::vector<std::uint32_t> members_;
    std::vector<std::size_t> starts_; // groups() + 1 offsets into members_
};

// The Desired fields one apply() batch already wrote (per DesiredAliases
// group), so that a field is written once per batch.
struct DesiredWrites
{
    DesiredWrites() = default;
    explicit DesiredWrites(const cppc::AccessPlan& plan);

    DesiredAliases aliases;
    std::vector<std::uint64_t> batch; // per group: apply number
    std::vector<std::uint32_t> value; // per group: the perf written
};

// What the machines share: the topology, the load from /proc/stat, the
// numbering of apply() batches and stopping at restore().
class MachineBase : public Machine
{
  public:
    const policies::Topology& topology() const override
    {
        return topology_;
    }
    // std::errc::invalid_argument when `out` has not one element per CPU;
    // otherwise reads the load into busy_ (when there is a sampler), calls
    // poll(nowUs), and fills `out` with sampleCpu() of each CPU (zeros on
    // the first call), with the busy time of busy_'s CPU cpu mod busy_'s
    // size from the sampler. Returns the sampler's error.
    [[nodiscard]] std::error_code sample(
        std::uint64_t nowUs, std::span<CpuSample> out) noexcept override;
    // applyOne() of each request, with applies_ one higher than for the
    // previous batch; the first error, the others still attempted. Does
    // nothing once stopped.
    [[nodiscard]] std::error_code apply(
        std::span<const PerfRequest> requests) noexcept override;
    // n -> n for n below the number of CPUs.
    std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept override;

  protected:
    MachineBase() = default;

    // Called by sample() after the load is read.
    virtual void poll(std::uint64_t nowUs) noexcept;
    // The sample of `cpu` after the first call, from busy_.
    virtual CpuSample sampleCpu(std::size_t cpu) const noexcept = 0;
    // Writes one request of batch applies_.
    virtual std::error_code applyOne(const PerfRequest& request) noexcept = 0;
    // apply() does nothing from now on.
    void stop() noexcept
    {
        stopped_ = true;
    }

    policies::Topology topology_;
    std::optional<ProcStatSampler> sampler_;
    std::vector<std::uint16_t> busy_; // per sampler CPU
    std::uint64_t applies_ = 0;

  private:
    bool started_ = false;
    bool stopped_ = false;
};

} // namespace internal

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

    std::string name() const override;
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override;

    // sample(): util = min(demand, delivered / highest) x 1024, where
    // demand is the host CPU's busy fraction; deliveredPerf is the
    // performance last requested, clamped into [lowest, highest] (nominal
    // before any request).
    // apply(): setPerf(cpu, perf) through the access plan into the register
    // file, once per Desired field however many CPUs of the batch share it.
    // Errc::noSuchCpu for a CPU beyond the layout.
    // cpuOfHostCpu(): n -> n for n below the number of simulated CPUs.

    // Nothing to put back; apply() does nothing afterwards.
    cppc::backend::RestoreResult restore() noexcept override;

    // The value in `cpu`'s Desired register field as the platform reads
    // it (not counted). Throws std::out_of_range for a CPU beyond the
    // layout.
    std::uint64_t desiredRegister(std::uint32_t cpu) const;
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
    std::error_code applyOne(const PerfRequest& request) noexcept override;

    std::string layoutName_;
    cppc::sim::RegisterFile file_;
    cppc::sim::PccSubspaces pcc_;
    cppc::AccessPlan plan_;
    cppc::BasicPerfControl<cppc::sim::CountingIo> control_;
    internal::DesiredWrites desired_;
    std::vector<std::uint32_t> delivered_;
};

class KernelMachine final : public internal::MachineBase
{
  public:
    // Starts cppc::backend::KernelBackend on every CPU with an active
    // cpufreq policy (switching them to the userspace governor, recorded
    // first in `stateFile` unless it is empty), reads each policy's
    // capabilities and transition latency, opens the CPUs' feedback_ctrs
    // when they all have one, and opens <root>/proc/stat. CPUs of a policy
    // are one shared domain; CPUs below the highest one that no active
    // policy covers (offline) are domains of their own, with the
    // capabilities their acpi_cppc gives, and get no requests. Throws
    // std::system_error naming the file or directory concerned; whatever
    // was switched is put back first.
    KernelMachine(const std::filesystem::path& root,
                  const std::filesystem::path& stateFile);

    KernelMachine(const KernelMachine&) = delete;
    KernelMachine& operator=(const KernelMachine&) = delete;

    std::string name() const override;
    // The kernel does not publish _PSD domain numbers: always nothing.
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override;

    // sample(): util = busy fraction x perf / highest, with perf the
    // delivered performance from the feedback counters when known, else
    // the performance last requested (highest before any request). Each
    // CPU's counters are read about every counterPeriodUs (a few CPUs per
    // call, in turn, so a large machine takes longer to go round) and
    // published by a DeliveredPerfEstimator.
    // apply(): one scaling_setspeed write per policy per call, with the
    // first request for any of its CPUs. Requests for CPUs no active
    // policy covers are ignored; Errc::noSuchCpu beyond the topology.

    // KernelBackend::restore(): governors, limits and set speeds as found,
    // and the state file removed, or left holding what is not back.
    cppc::backend::RestoreResult restore() noexcept override;

    // How often the feedback counters are read.
    static constexpr std::uint64_t counterPeriodUs = 10'000;

    const cppc::backend::KernelBackend& backend() const noexcept
    {
        return backend_;
    }
    // Why delivered performance is unknown (no feedback_ctrs, or they
    // could not be opened); empty when the counters are read.
    const std::string& countersProblem() const noexcept
    {
        return countersProblem_;
    }

  private:
    // Reads the counters of the CPUs that are due (at most a few per call,
    // in turn) into their estimators, when they are open.
    void poll(std::uint64_t nowUs) noexcept override;
    CpuSample sampleCpu(std::size_t cpu) const noexcept override;
    std::error_code applyOne(const PerfRequest& request) noexcept override;

    cppc::backend::KernelBackend backend_;
    std::vector<int> policyOf_; // by CPU; -1 when none drives it
    std::optional<cppc::backend::KernelCounters> counters_;
    std::vector<std::optional<cppc::DeliveredPerfEstimator>> estimators_;
    std::string countersProblem_;
    std::vector<std::uint32_t> delivered_; // 0: unknown
    std::vector<std::uint32_t> requested_;
    std::vector<std::uint64_t> writtenIn_; // per policy: apply number
    std::vector<std::uint64_t> nextCounterReadUs_;
    std::size_t counterCursor_ = 0;
};

class RegistersMachine final : public internal::MachineBase
{
  public:
    // Reads the firmware tables in <root>/sys/firmware/acpi/tables
    // (numbering CPUs by <root>/sys/devices/system/cpu/cpuN/firmware_node/
    // uid when present), builds the access plan, refuses any CPU that has
    // no usable _CPC, whose Desired register is not writable or whose
    // performance controls are in PCC (the kernel owns PCC channels: use
    // the kernel backend), maps the registers from <root>/dev/mem, and
    // opens <root>/proc/stat. Capabilities must be Integers or SystemMemory
    // registers. Throws std::runtime_error (or the std::system_error of a
    // file) naming the CPU, register or file concerned.
    explicit RegistersMachine(const std::filesystem::path& root);

    RegistersMachine(const RegistersMachine&) = delete;
    RegistersMachine& operator=(const RegistersMachine&) = delete;

    std::string name() const override;
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override;

    // sample(): util = busy fraction x last requested perf / highest
    // (highest before any request); deliveredPerf is 0 (no counters user
    // space can read here).
    // apply(): Desired through the access plan, once per Desired field
    // however many CPUs of the batch share it. Errc::noSuchCpu beyond the
    // topology.

    // Nothing to put back; apply() does nothing afterwards.
    cppc::backend::RestoreResult restore() noexcept override;

    const cppc::AccessPlan& plan() const noexcept
    {
        return *plan_;
    }

  private:
    CpuSample sampleCpu(std::size_t cpu) const noexcept override;
    std::error_code applyOne(const PerfRequest& request) noexcept override;

    std::unique_ptr<cppc::AccessPlan> plan_;
    std::unique_ptr<cppc::backend::DevMemMap> map_;
    std::unique_ptr<cppc::PerfControl> control_;
    internal::DesiredWrites desired_;
    std::vector<std::uint32_t> requested_;
};

} // namespace cppcgov::daemon
