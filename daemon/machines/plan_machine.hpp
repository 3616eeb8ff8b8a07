// SPDX-License-Identifier: Apache-2.0
// What the machines that execute an access plan share (the simulator and
// the registers backend): capabilities from each CPU's _CPC, domains from
// its _PSD, and writing a batch's requests once per group of CPUs whose
// registers are exact aliases (AccessPlan's AliasGroups).
#pragma once

#include "daemon/machine.hpp"
#include "lib/access_plan.hpp"
#include "lib/cpc_descriptor.hpp"
#include "policies/policy.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <system_error>
#include <vector>

namespace cppcgov::daemon::internal
{

// Reads a capability register; nothing when it cannot be reached.
using CapRead = std::function<std::optional<std::uint64_t>(
    cppc::CpcEntry, const cppc::RegisterDesc&)>;

// The four performance levels of `cpu`, each an Integer or a register
// `read` fetches. Throws std::runtime_error naming the CPU and the entry
// when one is neither, is above 32 bits, or the levels are unusable.
policies::CpuCaps capsOf(const cppc::CpcDescriptor& cpu, const CapRead& read);

// Domains from each CPU's _PSD: SW_ANY and SW_ALL domains decide together,
// HW_ALL and CPUs without _PSD (or with an inconsistent one) alone.
policies::Topology psdTopology(const cppc::AccessPlan& plan,
                               std::vector<policies::CpuCaps> caps);

// The _PSD domain number of `cpu`, if it has one.
std::optional<std::uint32_t> psdDomainOf(const cppc::AccessPlan& plan,
                                         std::uint32_t cpu);

// Throws std::runtime_error with the first error the plan found, if it
// refused a CPU.
void requireNoRefusal(const cppc::AccessPlan& plan);

// Whether every CPU of `control` (a cppc::BasicPerfControl) has writable
// Minimum and Maximum registers.
template <typename Control>
bool everyCpuHasMinMax(const Control& control, std::size_t cpus) noexcept
{
    for (std::size_t cpu = 0; cpu < cpus; ++cpu)
    {
        if (!control.hasMinMax(static_cast<unsigned>(cpu)))
        {
            return false;
        }
    }
    return cpus != 0;
}

// The requests one apply() batch already wrote, per group of CPUs whose
// written registers are exact aliases, so that a register several CPUs
// name is written once per batch however many requests name it.
class RequestWrites
{
  public:
    RequestWrites() = default;
    // `minMax`: Minimum and Maximum are written with Desired (then CPUs
    // group only where all three are aliases).
    RequestWrites(const cppc::AccessPlan& plan, bool minMax);

    bool minMax() const noexcept
    {
        return minMax_;
    }

    // Writes `r` through `control` (setPerf of desired, with min and max
    // when minMax()), unless batch `batch` already wrote the same values
    // into the same registers; after a write, `written(cpu)` is called for
    // each CPU of the group. `r.cpu` must be below the plan's CPU count.
    template <typename Control, typename Written>
    std::error_code write(Control& control, std::uint64_t batch,
                          const CppcRequest& r, const Written& written) noexcept
    {
        const std::uint32_t group = groups_.groupOf(r.cpu);
        Last& last = last_[group];
        if (last.batch == batch && last.desired == r.desired &&
            (!minMax_ || (last.min == r.min && last.max == r.max)))
        {
            return {};
        }
        const std::error_code ec =
            minMax_ ? control.setPerf(r.cpu, r.desired, r.min, r.max)
                    : control.setPerf(r.cpu, r.desired);
        if (ec)
        {
            return ec;
        }
        last = {batch, r.min, r.desired, r.max};
        for (const std::uint32_t cpu : groups_.members(group))
        {
            written(cpu);
        }
        return {};
    }

  private:
    struct Last
    {
        std::uint64_t batch = 0;
        std::uint32_t min = 0;
        std::uint32_t desired = 0;
        std::uint32_t max = 0;
    };

    cppc::AliasGroups groups_;
    bool minMax_ = false;
    std::vector<Last> last_;
};

} // namespace cppcgov::daemon::internal
