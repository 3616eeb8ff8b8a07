// SPDX-License-Identifier: Apache-2.0
// The AutonomousActivityWindow register's encoding (ACPI 6.5, 8.4.6.1,
// "Autonomous Activity Window Register"): bits 6:0 are a significand and
// bits 9:7 an exponent, and the window is significand x 10^exponent
// microseconds, so 0 to 127 x 10^7 us (1270 s) in 1 to 3 significant
// digits. 0 leaves the choice of window to the platform.
#pragma once

#include <cstdint>
#include <optional>

namespace cppc
{

inline constexpr std::uint32_t activityWindowMaxSignificand = 127;
inline constexpr std::uint32_t activityWindowMaxExponent = 7;
// The longest window the register can hold, in microseconds.
inline constexpr std::uint64_t activityWindowMaxUs = 1'270'000'000;
// The register's field: 10 bits.
inline constexpr std::uint32_t activityWindowBits = 10;

// The register value closest to `us` microseconds: the smallest exponent
// whose significand can hold it, the significand rounded to nearest (so
// 1234 us is written as 123 x 10). Nothing when `us` is above
// activityWindowMaxUs.
[[nodiscard]] std::optional<std::uint16_t> encodeActivityWindow(
    std::uint64_t us) noexcept;

// The window a register value stands for, in microseconds (only the low
// 10 bits are looked at).
[[nodiscard]] std::uint64_t decodeActivityWindow(std::uint64_t value) noexcept;

} // namespace cppc
