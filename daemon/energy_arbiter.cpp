// SPDX-License-Identifier: Apache-2.0
#include "energy_arbiter.hpp"

#include "lib/error.hpp"

#include <algorithm>

namespace cppcgov::daemon
{

using policies::EnergyPreference;

EnergyArbiter::EnergyArbiter(std::size_t cpus) :
    counts_(cpus), effective_(cpus, EnergyPreference::none)
{}

std::error_code EnergyArbiter::add(std::uint64_t id,
                                   std::span<const unsigned> cpus,
                                   EnergyPreference preference)
{
    if (cpus.empty() || preference == EnergyPreference::none)
    {
        return std::make_error_code(std::errc::invalid_argument);
    }
    if (requests_.contains(id))
    {
        return std::make_error_code(std::errc::file_exists);
    }
    Request r;
    r.cpus.assign(cpus.begin(), cpus.end());
    std::sort(r.cpus.begin(), r.cpus.end());
    r.cpus.erase(std::unique(r.cpus.begin(), r.cpus.end()), r.cpus.end());
    if (r.cpus.back() >= counts_.size())
    {
        return cppc::make_error_code(cppc::Errc::noSuchCpu);
    }
    r.preference = preference;
    for (const unsigned cpu : r.cpus)
    {
        Counts& c = counts_[cpu];
        ++(preference == EnergyPreference::performance ? c.performance
                                                       : c.efficiency);
        update(cpu);
    }
    requests_.emplace(id, std::move(r));
    return {};
}

std::error_code EnergyArbiter::remove(std::uint64_t id)
{
    const auto it = requests_.find(id);
    if (it == requests_.end())
    {
        return std::make_error_code(std::errc::invalid_argument);
    }
    const bool performance =
        it->second.preference == EnergyPreference::performance;
    for (const unsigned cpu : it->second.cpus)
    {
        Counts& c = counts_[cpu];
        --(performance ? c.performance : c.efficiency);
        update(cpu);
    }
    requests_.erase(it);
    return {};
}

void EnergyArbiter::update(unsigned cpu) noexcept
{
    const Counts& c = counts_[cpu];
    effective_[cpu] = c.performance != 0  ? EnergyPreference::performance
                      : c.efficiency != 0 ? EnergyPreference::efficiency
                                          : EnergyPreference::none;
}

} // namespace cppcgov::daemon
