// SPDX-License-Identifier: Apache-2.0
#include "text.hpp"

#include <array>
#include <charconv>

namespace cppc
{

std::string hex(std::uint64_t value)
{
    std::array<char, 2 + 16> buf{'0', 'x'};
    auto [end, ec] =
        std::to_chars(buf.data() + 2, buf.data() + buf.size(), value, 16);
    (void)ec; // 16 hex digits always fit
    return {buf.data(), end};
}

std::string printable(std::string_view text, std::size_t maxChars)
{
    constexpr std::string_view digits = "0123456789abcdef";
    std::string out;
    for (const char c : text.substr(0, maxChars))
    {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte >= 0x7f || c == '\\')
        {
            out += "\\x";
            out += digits[byte >> 4];
            out += digits[byte & 0xf];
        }
        else
        {
            out += c;
        }
    }
    if (text.size() > maxChars)
    {
        out += "...";
    }
    return out;
}

} // namespace cppc
