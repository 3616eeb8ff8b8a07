// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/machine_base.hpp"

#include "lib/error.hpp"

#include <algorithm>
#include <stdexcept>

namespace cppcgov::daemon::internal
{
namespace
{

// Keeps the first error of a batch.
void keepFirst(std::error_code& first, std::error_code ec) noexcept
{
    if (ec && !first)
    {
        first = ec;
    }
}

} // namespace

std::uint16_t utilization(std::uint16_t busy, std::uint32_t perf,
                          std::uint32_t highest) noexcept
{
    const std::uint64_t util =
        std::uint64_t{busy} * perf / std::max<std::uint32_t>(highest, 1);
    return static_cast<std::uint16_t>(
        std::min<std::uint64_t>(util, policies::utilScale));
}

std::error_code MachineBase::sample(std::uint64_t nowUs,
                                    std::span<CpuSample> out) noexcept
{
    if (out.size() != topology_.cpus.size())
    {
        return std::make_error_code(std::errc::invalid_argument);
    }
    std::error_code ec;
    if (sampler_)
    {
        ec = sampler_->sample(busy_);
    }
    poll(nowUs);
    const bool first = !started_;
    started_ = true;
    for (std::size_t cpu = 0; cpu < out.size(); ++cpu)
    {
        out[cpu] = first ? CpuSample{} : sampleCpu(cpu);
        // The busy time of the sampler CPU whose load it has (the
        // simulator's CPU n has host CPU n mod the host's CPUs').
        if (!first && sampler_ && sampler_->cpus() != 0)
        {
            out[cpu].busyUs = sampler_->busyUs()[cpu % sampler_->cpus()];
        }
    }
    return ec;
}

void MachineBase::poll(std::uint64_t) noexcept {}

void MachineBase::useLoadSource(std::unique_ptr<LoadSource> source)
{
    if (!source || !sampler_ || source->cpus() != sampler_->cpus())
    {
        throw std::invalid_argument(
            "a load source must report the CPUs the machine reads");
    }
    sampler_ = std::move(source);
}

std::error_code MachineBase::apply(
    std::span<const CppcRequest> requests) noexcept
{
    if (stopped_)
    {
        return {};
    }
    ++applies_;
    std::error_code first;
    lastFailedCpu_.reset();
    for (const CppcRequest& r : requests)
    {
        std::error_code ec;
        if (r.cpu >= topology_.cpus.size())
        {
            ec = cppc::Errc::noSuchCpu;
        }
        else if (r.min > r.desired || r.desired > r.max)
        {
            ec = cppc::Errc::valueOutOfRange;
        }
        else
        {
            ec = applyOne(r);
        }
        if (ec && !first)
        {
            lastFailedCpu_ = r.cpu;
        }
        keepFirst(first, ec);
    }
    return first;
}

std::optional<std::uint32_t> MachineBase::cpuOfHostCpu(
    std::uint32_t hostCpu) const noexcept
{
    if (hostCpu < topology_.cpus.size())
    {
        return hostCpu;
    }
    return std::nullopt;
}

} // namespace cppcgov::daemon::internal
