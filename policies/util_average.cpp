// SPDX-License-Identifier: Apache-2.0
#include "util_average.hpp"

#include <algorithm>
#include <cmath>

namespace cppcgov::policies
{

std::uint16_t UtilAverage::update(std::uint16_t sample,
                                  std::uint64_t dtUs) noexcept
{
    const double s = std::min<double>(sample, 1024.0);
    if (halfLifeUs_ == 0)
    {
        value_ = s;
    }
    else
    {
        const double keep = std::exp2(
            -static_cast<double>(dtUs) / static_cast<double>(halfLifeUs_));
        value_ = value_ * keep + s * (1.0 - keep);
    }
    return value();
}

} // namespace cppcgov::policies
