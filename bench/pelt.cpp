// SPDX-License-Identifier: Apache-2.0
#include "bench/pelt.hpp"

#include <cmath>

namespace cppc::bench
{
namespace
{

constexpr std::uint64_t unitNs = 1024;
constexpr std::uint32_t period = 1024; // units
// y, with y^32 = 1/2.
const double y = std::exp2(-1.0 / 32.0);
// The sum's limit when running all the time.
const double sumMax = period / (1.0 - y);

} // namespace

bool PeltSignal::update(std::uint64_t clockNs, bool running) noexcept
{
    if (clockNs <= lastNs_)
    {
        return false;
    }
    const std::uint64_t units = (clockNs - lastNs_) / unitNs;
    if (units == 0)
    {
        return false;
    }
    lastNs_ += units * unitNs;
    const std::uint64_t total = units + periodContrib_;
    const std::uint64_t periods = total / period;
    double contrib = static_cast<double>(units);
    if (periods != 0)
    {
        const double decay = std::pow(y, static_cast<double>(periods));
        sum_ *= decay;
        // The rest of the old period, decayed; the whole periods between;
        // what has passed of the new one.
        const double d1 = static_cast<double>(period - periodContrib_);
        const double d3 = static_cast<double>(total % period);
        const double whole =
            period * y *
            (1.0 - std::pow(y, static_cast<double>(periods) - 1.0)) / (1.0 - y);
        contrib = d1 * decay + whole + d3;
    }
    periodContrib_ = static_cast<std::uint32_t>(total % period);
    if (running)
    {
        sum_ += contrib * 1024.0;
    }
    if (periods != 0)
    {
        util_ = sum_ / (sumMax - period + periodContrib_);
    }
    return periods != 0;
}

} // namespace cppc::bench
