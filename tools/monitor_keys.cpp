// SPDX-License-Identifier: Apache-2.0
#include "monitor_keys.hpp"

#include <array>
#include <optional>
#include <utility>

namespace cppcgov::tools
{
namespace
{

// What follows ESC for the keys with sequences (xterm's and the VT220's).
constexpr std::array<std::pair<std::string_view, MonitorKey>, 12> sequences = {{
    {"[6~", MonitorKey::next},
    {"[5~", MonitorKey::previous},
    {"[C", MonitorKey::next},
    {"[B", MonitorKey::next},
    {"[D", MonitorKey::previous},
    {"[A", MonitorKey::previous},
    {"[H", MonitorKey::first},
    {"[1~", MonitorKey::first},
    {"OH", MonitorKey::first},
    {"[F", MonitorKey::last},
    {"[4~", MonitorKey::last},
    {"OF", MonitorKey::last},
}};

std::optional<MonitorKey> plainKey(char c)
{
    switch (c)
    {
        case 'q':
        case 'Q':
        case '\x03':
            return MonitorKey::quit;
        case 'n':
        case ' ':
        case 'j':
            return MonitorKey::next;
        case 'p':
        case 'b':
        case 'k':
            return MonitorKey::previous;
        case 'g':
            return MonitorKey::first;
        case 'G':
            return MonitorKey::last;
        default:
            return std::nullopt;
    }
}

} // namespace

std::vector<MonitorKey> parseKeys(std::string_view bytes)
{
    std::vector<MonitorKey> keys;
    for (std::size_t i = 0; i < bytes.size();)
    {
        if (bytes[i] != '\x1b')
        {
            if (const auto k = plainKey(bytes[i]))
            {
                keys.push_back(*k);
            }
            ++i;
            continue;
        }
        const std::string_view rest = bytes.substr(i + 1);
        std::size_t used = 1;
        for (const auto& [sequence, key] : sequences)
        {
            if (rest.substr(0, sequence.size()) == sequence)
            {
                keys.push_back(key);
                used += sequence.size();
                break;
            }
        }
        if (used == 1 && (rest.starts_with('[') || rest.starts_with('O')))
        {
            // Another sequence: skip to its final byte.
            std::size_t end = 1;
            while (end < rest.size() && !(rest[end] >= '@' && rest[end] <= '~'))
            {
                ++end;
            }
            used += std::min(end + 1, rest.size());
        }
        i += used;
    }
    return keys;
}

} // namespace cppcgov::tools
