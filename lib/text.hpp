// SPDX-License-Identifier: Apache-2.0
// Small string helpers for diagnostics (g++ 12 has no std::format).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cppc
{

// "0x1f": lower-case hexadecimal with a 0x prefix.
std::string hex(std::uint64_t value);

// `text` fit for a one-line message: control characters, bytes outside
// ASCII and backslashes as \xNN, cut after `maxChars` characters with "..."
// appended when it was longer.
std::string printable(std::string_view text, std::size_t maxChars = 40);

} // namespace cppc
