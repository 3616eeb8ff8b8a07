// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include <charconv>
#include <limits>
#include <stdexcept>
#include <string_view>

namespace pccfs
{
namespace
{

constexpr unsigned maxCpus = 4096;
constexpr std::uint64_t maxMicroseconds = 10'000'000;

std::uint64_t number(std::string_view option, std::string_view text,
                     std::uint64_t low, std::uint64_t high)
{
    std::uint64_t v = 0;
    const auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || v < low ||
        v > high)
    {
        throw std::invalid_argument(
            std::string(option) + ": '" + std::string(text) +
            "' is not a whole number in " + std::to_string(low) + ".." +
            std::to_string(high));
    }
    return v;
}

} // namespace

std::string usage()
{
    return "usage: pccfs --cpus N [--cpus-per-policy K] [--latency-us US]\n"
           "             [--turnaround-us US] [--ready-fd FD] MOUNTPOINT\n";
}

Options parseOptions(int argc, char** argv)
{
    Options o;
    bool haveCpus = false;
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i];
        if (arg.substr(0, 2) != "--")
        {
            if (!o.mountpoint.empty())
            {
                throw std::invalid_argument(
                    "'" + std::string(arg) + "': one mount point only");
            }
            o.mountpoint = arg;
            continue;
        }
        if (i + 1 >= argc)
        {
            throw std::invalid_argument(std::string(arg) + " needs a value");
        }
        const std::string_view value = argv[++i];
        if (arg == "--cpus")
        {
            o.cpus = static_cast<unsigned>(number(arg, value, 1, maxCpus));
            haveCpus = true;
        }
        else if (arg == "--cpus-per-policy")
        {
            o.cpusPerPolicy =
                static_cast<unsigned>(number(arg, value, 1, maxCpus));
        }
        else if (arg == "--latency-us")
        {
            o.latency = std::chrono::microseconds{
                number(arg, value, 0, maxMicroseconds)};
        }
        else if (arg == "--turnaround-us")
        {
            o.turnaround = std::chrono::microseconds{
                number(arg, value, 0, maxMicroseconds)};
        }
        else if (arg == "--ready-fd")
        {
            o.readyFd = static_cast<int>(
                number(arg, value, 0, std::numeric_limits<int>::max()));
        }
        else
        {
            throw std::invalid_argument(
                "unknown option '" + std::string(arg) + "'");
        }
    }
    if (!haveCpus)
    {
        throw std::invalid_argument("--cpus is required");
    }
    if (o.mountpoint.empty())
    {
        throw std::invalid_argument("no mount point given");
    }
    return o;
}

} // namespace pccfs
