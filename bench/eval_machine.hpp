// SPDX-License-Identifier: Apache-2.0
// The machine the daemon's Governor drives in policy_eval: a simulated
// workload (lib/sim/workload.hpp) in virtual time. Its load is what the
// caller sets before each tick (eval_inputs.hpp forms it as the daemon
// would see it); its requests go to the workload's CPUs.
#pragma once

#include "daemon/machine.hpp"
#include "lib/sim/workload.hpp"

#include <cstdint>
#include <vector>

namespace cppc::bench
{

class EvalMachine : public cppcgov::daemon::Machine
{
  public:
    // One CPPC CPU per workload CPU, each its own domain, with `caps`.
    EvalMachine(sim::Workload& workload,
                std::vector<cppcgov::policies::CpuCaps> caps);

    // What the next sample() reports, one element per CPU.
    void setSamples(std::vector<cppcgov::daemon::CpuSample> samples)
    {
        next_ = std::move(samples);
    }

    // The last performance requested for `cpu` (nominal before any).
    std::uint32_t requested(unsigned cpu) const
    {
        return requested_.at(cpu);
    }

    std::string name() const override
    {
        return "policy_eval";
    }
    const cppcgov::policies::Topology& topology() const override
    {
        return topology_;
    }
    std::optional<std::uint32_t> psdDomain(std::uint32_t) const override
    {
        return std::nullopt;
    }
    std::error_code sample(
        std::uint64_t nowUs,
        std::span<cppcgov::daemon::CpuSample> out) noexcept override;
    cppcgov::daemon::Controls controls() const noexcept override
    {
        return {cppcgov::daemon::Control::desired};
    }
    std::error_code apply(std::span<const cppcgov::daemon::CppcRequest>
                              requests) noexcept override;
    std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept override;
    cppc::backend::RestoreResult restore() noexcept override
    {
        return {};
    }

  private:
    sim::Workload& workload_;
    cppcgov::policies::Topology topology_;
    std::vector<cppcgov::daemon::CpuSample> next_;
    std::vector<std::uint32_t> requested_;
};

} // namespace cppc::bench
