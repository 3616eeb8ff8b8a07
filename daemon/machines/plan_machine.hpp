// SPDX-License-Identifier: Apache-2.0
// What the machines that execute an access plan share (the simulator and
// the registers backend): capabilities from each CPU's _CPC, domains from
// its _PSD, and writing a batch's requests once per group of CPUs whose
// registers are exact aliases (AccessPlan's AliasGroups).
#pragma once

#include "daemon/machine.hpp"
#include "lib/access_plan.hpp"
#include "lib/activity_window.hpp"
#include "lib/cpc_descriptor.hpp"
#include "lib/error.hpp"
#include "policies/policy.hpp"

#include <array>
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

// The controls of a plan machine: Desired always, Minimum and Maximum
// together, and each of the three ControlWrites offers.
Controls planControls(bool minMax, bool epp, bool autonomous,
                      bool activityWindow) noexcept;

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

// Whether every CPU of `control` (a cppc::BasicPerfControl) has `entry` as
// a register it reaches (hasRegister).
template <typename Control>
bool everyCpuHas(const Control& control, std::size_t cpus,
                 cppc::CpcEntry entry) noexcept
{
    for (std::size_t cpu = 0; cpu < cpus; ++cpu)
    {
        if (!control.hasRegister(static_cast<unsigned>(cpu), entry))
        {
            return false;
        }
    }
    return cpus != 0;
}

// The controls written one register at a time besides a request's
// performance: EnergyPerformancePreference, AutonomousSelectionEnable and
// AutonomousActivityWindow, each offered only where every CPU has it as a
// register. A value is written only when it differs from the one last
// written into the same register (CPUs whose register is an exact alias
// share it: one write per group), so autonomous selection and its window
// are written when they change and not on every tick.
class ControlWrites
{
  public:
    ControlWrites() = default;
    template <typename Control>
    ControlWrites(const cppc::AccessPlan& plan, const Control& control)
    {
        const std::size_t cpus = plan.cpuCount();
        for (std::size_t k = 0; k < entries.size(); ++k)
        {
            present_[k] = everyCpuHas(control, cpus, entries[k]);
            if (!present_[k])
            {
                continue;
            }
            last_[k].assign(cpus, std::nullopt);
            aliasOf_[k].resize(cpus);
            for (std::size_t cpu = 0; cpu < cpus; ++cpu)
            {
                aliasOf_[k][cpu] = plan.cpu(static_cast<unsigned>(cpu))
                                       .reg(entries[k])
                                       .aliasOf;
            }
        }
    }

    // Whether the control (epp, autonomous or activityWindow) is written.
    bool has(Control c) const noexcept
    {
        switch (c)
        {
            case Control::epp:
                return present_[0];
            case Control::autonomous:
                return present_[1];
            case Control::activityWindow:
                return present_[2];
            default:
                return false;
        }
    }

    // Writes what `r` asks of the three controls offered: EPP and the
    // window where the request gives them, then autonomous selection (so
    // the platform has its preference and window when it takes over).
    // Errc::valueOutOfRange for a window the register cannot hold (nothing
    // of the three written then). The first error; the rest still tried.
    template <typename PerfControl>
    std::error_code write(PerfControl& control, const CppcRequest& r) noexcept
    {
        std::optional<std::uint64_t> window;
        if (present_[2] && r.activityWindowUs)
        {
            const auto encoded =
                cppc::encodeActivityWindow(*r.activityWindowUs);
            if (!encoded)
            {
                return cppc::Errc::valueOutOfRange;
            }
            window = *encoded;
        }
        std::error_code first;
        const auto one = [&](std::size_t k, std::optional<std::uint64_t> v) {
            if (!present_[k] || !v)
            {
                return;
            }
            std::optional<std::uint64_t>& last = last_[k][aliasOf_[k][r.cpu]];
            if (last == v)
            {
                return;
            }
            if (const std::error_code ec =
                    control.writeControl(r.cpu, entries[k], *v))
            {
                last.reset(); // unknown now: written again next time
                if (!first)
                {
                    first = ec;
                }
                return;
            }
            last = v;
        };
        one(0, r.epp ? std::optional<std::uint64_t>(*r.epp) : std::nullopt);
        one(2, window);
        one(1, std::optional<std::uint64_t>(r.autonomous ? 1 : 0));
        return first;
    }

    // Forgets what was written: everything is written again (after the
    // registers were put back by someone else).
    void forget() noexcept
    {
        for (auto& values : last_)
        {
            for (auto& v : values)
            {
                v.reset();
            }
        }
    }

  private:
    static constexpr std::array<cppc::CpcEntry, 3> entries = {
        cppc::CpcEntry::energyPerfPreference,
        cppc::CpcEntry::autonomousSelectionEnable,
        cppc::CpcEntry::autonomousActivityWindow,
    };

    std::array<bool, 3> present_{};
    std::array<std::vector<std::optional<std::uint64_t>>, 3> last_;
    std::array<std::vector<std::uint32_t>, 3> aliasOf_;
};

} // namespace cppcgov::daemon::internal
