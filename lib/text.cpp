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

} // namespace cppc
