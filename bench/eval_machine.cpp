// SPDX-License-Identifier: Apache-2.0
#include "bench/eval_machine.hpp"

#include <algorithm>

namespace cppc::bench
{

namespace pol = cppcgov::policies;
namespace dmn = cppcgov::daemon;

EvalMachine::EvalMachine(sim::Workload& workload,
                         std::vector<pol::CpuCaps> caps) :
    workload_(workload)
{
    std::vector<pol::Domain> domains;
    for (std::uint32_t cpu = 0; cpu < caps.size(); ++cpu)
    {
        domains.push_back({{cpu}, pol::Coordination::perCpu});
        requested_.push_back(caps[cpu].nominal);
    }
    topology_ = pol::makeTopology(std::move(caps), std::move(domains));
    next_.resize(topology_.cpus.size());
}

std::error_code EvalMachine::sample(std::uint64_t,
                                    std::span<dmn::CpuSample> out) noexcept
{
    if (out.size() != next_.size())
    {
        return std::make_error_code(std::errc::invalid_argument);
    }
    std::copy(next_.begin(), next_.end(), out.begin());
    return {};
}

std::error_code EvalMachine::apply(
    std::span<const dmn::CppcRequest> requests) noexcept
{
    for (const dmn::CppcRequest& r : requests)
    {
        if (r.cpu >= requested_.size() || r.min > r.desired ||
            r.desired > r.max)
        {
            return std::make_error_code(std::errc::invalid_argument);
        }
        workload_.requestPerf(r.cpu, r.desired);
        requested_[r.cpu] = r.desired;
    }
    return {};
}

std::optional<std::uint32_t> EvalMachine::cpuOfHostCpu(
    std::uint32_t hostCpu) const noexcept
{
    if (hostCpu < topology_.cpus.size())
    {
        return hostCpu;
    }
    return std::nullopt;
}

} // namespace cppc::bench
