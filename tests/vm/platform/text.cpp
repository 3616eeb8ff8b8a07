// SPDX-License-Identifier: Apache-2.0
#include "tests/vm/platform/text.hpp"

#include <charconv>

namespace cppcgov::platform
{

namespace
{

constexpr std::string_view blanks = " \t\r\n";

std::optional<std::uint64_t> parse(std::string_view text, int base) noexcept
{
    std::uint64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
    if (text.empty() || ec != std::errc{} || ptr != end)
    {
        return std::nullopt;
    }
    return value;
}

} // namespace

std::vector<std::string_view> words(std::string_view line)
{
    std::vector<std::string_view> result;
    std::size_t at = 0;
    while (at < line.size())
    {
        const std::size_t start = line.find_first_not_of(blanks, at);
        if (start == std::string_view::npos)
        {
            break;
        }
        const std::size_t end = line.find_first_of(blanks, start);
        result.push_back(line.substr(start, end - start));
        at = end == std::string_view::npos ? line.size() : end;
    }
    return result;
}

std::optional<std::uint64_t> parseWhole(std::string_view text) noexcept
{
    return parse(text, 10);
}

std::optional<std::uint64_t> parseNumber(std::string_view text) noexcept
{
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    {
        return parse(text.substr(2), 16);
    }
    return parse(text, 10);
}

} // namespace cppcgov::platform
