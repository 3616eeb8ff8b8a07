// SPDX-License-Identifier: Apache-2.0
// bus_fuzz's command line.
#include "tests/integration/fuzz_options.hpp"

#include <charconv>
#include <chrono>
#include <random>
#include <string_view>
#include <system_error>

namespace cppcgov::test::fuzz
{
namespace
{

using Clock = std::chrono::steady_clock;

template <class Number>
bool parseNumber(std::string_view text, Number& out)
{
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc() && ptr == end;
}

} // namespace

std::optional<Options> parseOptions(int argc, char** argv)
{
    Options options;
    options.seed = std::random_device{}();
    options.seed =
        (options.seed << 32) ^
        static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i];
        const bool hasValue = i + 1 < argc;
        if (arg == "--verbose")
        {
            options.verbose = true;
            continue;
        }
        if (!hasValue)
        {
            return std::nullopt;
        }
        const std::string_view value = argv[++i];
        bool ok = true;
        if (arg == "--bus-address")
        {
            options.address = value;
        }
        else if (arg == "--seed")
        {
            ok = parseNumber(value, options.seed);
        }
        else if (arg == "--seconds")
        {
            ok = parseNumber(value, options.seconds) && options.seconds > 0;
        }
        else if (arg == "--calls")
        {
            std::uint64_t n = 0;
            ok = parseNumber(value, n) && n > 0;
            options.calls = n;
        }
        else if (arg == "--check-every")
        {
            ok = parseNumber(value, options.checkEvery) &&
                 options.checkEvery > 0;
        }
        else
        {
            ok = false;
        }
        if (!ok)
        {
            return std::nullopt;
        }
    }
    if (options.address.empty())
    {
        return std::nullopt;
    }
    return options;
}

} // namespace cppcgov::test::fuzz
