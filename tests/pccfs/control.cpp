// SPDX-License-Identifier: Apache-2.0
#include "control.hpp"

#include <array>
#include <charconv>
#include <utility>

namespace pccfs
{

std::optional<Command> parseCommand(std::string_view text)
{
    if (!text.empty() && text.back() == '\n')
    {
        text.remove_suffix(1);
    }
    const std::size_t space = text.find(' ');
    const std::string_view verb = text.substr(0, space);
    constexpr std::array<std::pair<std::string_view, Command::Kind>, 4> verbs{
        {{"hang", Command::Kind::hang},
         {"release", Command::Kind::release},
         {"fail", Command::Kind::fail},
         {"clear", Command::Kind::clear}}};
    Command c;
    bool known = false;
    for (const auto& [name, kind] : verbs)
    {
        if (verb == name)
        {
            c.kind = kind;
            known = true;
        }
    }
    if (!known)
    {
        return std::nullopt;
    }
    if (space == std::string_view::npos)
    {
        return c.kind == Command::Kind::clear ? std::optional(c) : std::nullopt;
    }
    const std::string_view number = text.substr(space + 1);
    unsigned cpu = 0;
    const auto [end, ec] =
        std::from_chars(number.data(), number.data() + number.size(), cpu);
    if (number.empty() || ec != std::errc{} ||
        end != number.data() + number.size())
    {
        return std::nullopt;
    }
    c.cpu = cpu;
    return c;
}

} // namespace pccfs
