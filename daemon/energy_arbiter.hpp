// SPDX-License-Identifier: Apache-2.0
// Per-CPU arbitration of energy-preference hints: many clients ask
// "prefer performance" or "prefer efficiency" on sets of CPUs, and each
// CPU takes the strongest live request covering it (performance beats
// efficiency, which beats no request). The governor turns each CPU's
// result into its domain's EPP (policies::domainEpp()); nothing here
// touches the hardware, so there is nothing to restore: the machine puts
// EPP back at stop.
//
// CPUs are the governed machine's (as GetCpuStates numbers them).
//
// No D-Bus, no logging. Not thread-safe.
#pragma once

#include "policies/policy.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <system_error>
#include <vector>

namespace cppcgov::daemon
{

class EnergyArbiter
{
  public:
    // Arbitrates CPUs 0 to cpus - 1.
    explicit EnergyArbiter(std::size_t cpus);

    // Adds request `id` preferring `preference` on every CPU of `cpus`
    // (duplicates are ignored). Errors, after which nothing has changed:
    //   std::errc::invalid_argument   `cpus` empty, or `preference` none;
    //   std::errc::file_exists        `id` is already live;
    //   cppc::Errc::noSuchCpu         a CPU at or above the CPU count.
    [[nodiscard]] std::error_code add(std::uint64_t id,
                                      std::span<const unsigned> cpus,
                                      policies::EnergyPreference preference);

    // Ends request `id`; std::errc::invalid_argument when it is not live.
    [[nodiscard]] std::error_code remove(std::uint64_t id);

    // Each CPU's strongest live preference, one per CPU.
    std::span<const policies::EnergyPreference> perCpu() const noexcept
    {
        return effective_;
    }

    // The live requests.
    std::size_t size() const noexcept
    {
        return requests_.size();
    }

  private:
    struct Request
    {
        std::vector<unsigned> cpus; // sorted, unique
        policies::EnergyPreference preference{};
    };
    // Per CPU, how many live requests of each kind cover it.
    struct Counts
    {
        std::uint32_t performance = 0;
        std::uint32_t efficiency = 0;
    };

    void update(unsigned cpu) noexcept;

    std::map<std::uint64_t, Request> requests_;
    std::vector<Counts> counts_;
    std::vector<policies::EnergyPreference> effective_;
};

} // namespace cppcgov::daemon
