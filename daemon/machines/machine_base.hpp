// SPDX-License-Identifier: Apache-2.0
// What every machine behind machine.hpp's seam shares: the topology, the
// load from /proc/stat, the numbering of apply() batches, the checks every
// request passes before a backend sees it, and stopping at restore().
#pragma once

#include "daemon/machine.hpp"
#include "daemon/proc_stat.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

namespace cppcgov::daemon::internal
{

// busy (0..busyScale) x perf / highest, on the utilization scale.
std::uint16_t utilization(std::uint16_t busy, std::uint32_t perf,
                          std::uint32_t highest) noexcept;

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
    // previous batch: Errc::noSuchCpu for a CPU beyond the topology and
    // Errc::valueOutOfRange for a request not ordered min <= desired <=
    // max, without calling applyOne(). The first error; the others still
    // attempted. Does nothing once stopped.
    [[nodiscard]] std::error_code apply(
        std::span<const CppcRequest> requests) noexcept override;
    std::optional<std::uint32_t> lastFailedCpu() const noexcept override
    {
        return lastFailedCpu_;
    }
    std::uint32_t loadCpus() const noexcept override
    {
        return sampler_ ? sampler_->cpus() : 0;
    }
    void useLoadSource(std::unique_ptr<LoadSource> source) override;
    // n -> n for n below the number of CPUs.
    std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept override;

  protected:
    MachineBase() = default;

    // Called by sample() after the load is read.
    virtual void poll(std::uint64_t nowUs) noexcept;
    // The sample of `cpu` after the first call, from busy_.
    virtual CpuSample sampleCpu(std::size_t cpu) const noexcept = 0;
    // Writes one checked request of batch applies_.
    virtual std::error_code applyOne(const CppcRequest& request) noexcept = 0;
    // apply() does nothing from now on.
    void stop() noexcept
    {
        stopped_ = true;
    }

    policies::Topology topology_;
    // /proc/stat unless the daemon gave another (useLoadSource()).
    std::unique_ptr<LoadSource> sampler_;
    std::vector<std::uint16_t> busy_; // per sampler CPU
    std::uint64_t applies_ = 0;

  private:
    std::optional<std::uint32_t> lastFailedCpu_;
    bool started_ = false;
    bool stopped_ = false;
};

} // namespace cppcgov::daemon::internal
