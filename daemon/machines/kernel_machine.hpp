// The kernel backend: cppc_cpufreq's userspace governor
// (lib/backend/kernel), load from <root>/proc/stat, delivered performance
// from acpi_cppc/feedback_ctrs. For machines where the kernel owns the PCC
// channel or register access is not allowed.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machines/machine_base.hpp"
#include "lib/backend/kernel.hpp"
#include "lib/feedback.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

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

    // The registry's factory: KernelMachine(root, kernelStateFile(stateDir)),
    // or no state file when `stateDir` is empty.
    static std::unique_ptr<Machine> start(
        const BackendConfig& config, const std::filesystem::path& root,
        const std::filesystem::path& stateDir);

    std::string name() const override;
    // The kernel does not publish _PSD domain numbers: always nothing.
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override;

    // Desired only: the userspace governor takes one frequency per policy
    // (scaling_setspeed). A request's min, max and EPP are ignored: the
    // policy's scaling_min_freq and scaling_max_freq stay as the daemon
    // found them, and cppc_cpufreq shows no EPP.
    Controls controls() const noexcept override;

    // sample(): util = busy fraction x perf / highest, with perf the
    // delivered performance from the feedback counters when known, else
    // the performance last requested (highest before any request). Each
    // CPU's counters are read about every counterPeriodUs (a few CPUs per
    // call, in turn, so a large machine takes longer to go round: see
    // cppc::FeedbackRoundRobin).
    // apply(): one scaling_setspeed write per policy per call, with the
    // first request for any of its CPUs. Requests for CPUs no active
    // policy covers are ignored.
    // A policy whose CPUs were all offline (none in /proc/stat) is written
    // again with its last request at the first sample that finds one of
    // them back: cppc_cpufreq starts such a policy afresh, and the
    // userspace governor takes the frequency it finds as its set speed.

    // KernelBackend::restore(): governors, limits and set speeds as found,
    // and the state file removed.
    cppc::backend::RestoreResult restore() noexcept override;

    // The scaling_setspeed of the policy that drives `cpu`.
    std::string writeTarget(std::uint32_t cpu) const override;

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
    // Reads the counters of the CPUs that are due, when they are open, and
    // writes again the policies whose CPUs came back online.
    void poll(std::uint64_t nowUs) noexcept override;
    void rewriteReturnedPolicies() noexcept;
    CpuSample sampleCpu(std::size_t cpu) const noexcept override;
    std::error_code applyOne(const CppcRequest& request) noexcept override;
    // Opens the counters of `online` and their estimators, or says in
    // countersProblem_ why not.
    void openCounters(const std::filesystem::path& root,
                      const std::vector<unsigned>& online);

    cppc::backend::KernelBackend backend_;
    std::vector<int> policyOf_; // by CPU; -1 when none drives it
    std::optional<cppc::backend::KernelCounters> counters_;
    std::optional<cppc::FeedbackRoundRobin> feedback_;
    std::string countersProblem_;
    std::vector<std::uint32_t> requested_;
    std::vector<std::uint64_t> writtenIn_; // per policy: apply number
    std::vector<std::uint32_t> asked_;     // per policy: last request, or 0
    std::vector<char> online_; // per policy: a CPU of it was in /proc/stat
};

} // namespace cppcgov::daemon
