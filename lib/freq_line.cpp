// SPDX-License-Identifier: Apache-2.0
#include "lib/freq_line.hpp"

#include <limits>

namespace cppc
{

std::optional<std::uint32_t> FreqLine::khz(std::uint32_t perf) const noexcept
{
    if (lowestKhz == 0 || nominalKhz == 0 || nominalPerf == 0 ||
        nominalKhz < lowestKhz ||
        (nominalKhz != lowestKhz && nominalPerf <= lowestPerf))
    {
        return std::nullopt;
    }
    long double value = 0;
    if (nominalKhz == lowestKhz)
    {
        value = static_cast<long double>(perf) * nominalKhz / nominalPerf;
    }
    else
    {
        const long double slope =
            static_cast<long double>(nominalKhz - lowestKhz) /
            (nominalPerf - lowestPerf);
        value = lowestKhz + slope * (static_cast<long double>(perf) -
                                     static_cast<long double>(lowestPerf));
    }
    if (value < 0)
    {
        return 0;
    }
    value += 0.5L;
    if (value >
        static_cast<long double>(std::numeric_limits<std::uint32_t>::max()))
    {
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(value);
}

} // namespace cppc
