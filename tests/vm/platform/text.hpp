// SPDX-License-Identifier: Apache-2.0
// The platform's words and numbers, for its layout file, its commands and
// its command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace cppcgov::platform
{

// The words of `line`, split at spaces, tabs, carriage returns and line
// feeds.
[[nodiscard]] std::vector<std::string_view> words(std::string_view line);

// A whole decimal number that is all of `text`; nothing otherwise.
[[nodiscard]] std::optional<std::uint64_t> parseWhole(
    std::string_view text) noexcept;

// As parseWhole, or hexadecimal after "0x" or "0X".
[[nodiscard]] std::optional<std::uint64_t> parseNumber(
    std::string_view text) noexcept;

} // namespace cppcgov::platform
