// SPDX-License-Identifier: Apache-2.0
#include "activity_window.hpp"

namespace cppc
{

std::optional<std::uint16_t> encodeActivityWindow(std::uint64_t us) noexcept
{
    if (us > activityWindowMaxUs)
    {
        return std::nullopt;
    }
    std::uint64_t scale = 1;
    std::uint32_t exponent = 0;
    while (us > activityWindowMaxSignificand * scale)
    {
        scale *= 10;
        ++exponent;
    }
    // us <= 127 x scale, so the rounded significand is at most 127.
    const std::uint64_t significand = (us + scale / 2) / scale;
    return static_cast<std::uint16_t>(significand | (exponent << 7));
}

std::uint64_t decodeActivityWindow(std::uint64_t value) noexcept
{
    std::uint64_t us = value & activityWindowMaxSignificand;
    for (std::uint64_t e = (value >> 7) & activityWindowMaxExponent; e != 0;
         --e)
    {
        us *= 10;
    }
    return us;
}

} // namespace cppc
