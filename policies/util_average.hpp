// SPDX-License-Identifier: Apache-2.0
// A PELT-like running average of a CPU's utilization.
//
// The kernel's schedutil does not act on one sampling window's busy time
// but on a geometrically decaying average (PELT, half-life 32 ms), so a
// periodic load reads as its average, not as alternating busy and idle
// windows. UtilAverage does the same over the daemon's samples: pure
// arithmetic, the elapsed time comes in as a number.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cppcgov::policies
{

class UtilAverage
{
  public:
    // `halfLifeUs` 0 disables averaging: value() is the last sample.
    explicit UtilAverage(std::uint32_t halfLifeUs = 32000) noexcept :
        halfLifeUs_(halfLifeUs)
    {}

    // Folds in a window of `dtUs` whose utilization was `sample` (0..1024)
    // and returns the new average.
    std::uint16_t update(std::uint16_t sample, std::uint64_t dtUs) noexcept;

    // Lifts the average to at least `floor` (a burst's request, so that
    // the average does not pull it back down the moment the burst ends).
    void raiseTo(std::uint16_t floor) noexcept
    {
        value_ = std::max(value_, static_cast<double>(floor));
    }

    std::uint16_t value() const noexcept
    {
        return static_cast<std::uint16_t>(std::lround(value_));
    }

  private:
    std::uint32_t halfLifeUs_;
    double value_ = 0;
};

} // namespace cppcgov::policies
