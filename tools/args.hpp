// SPDX-License-Identifier: Apache-2.0
// Command-line parsing shared by cppcgovctl's D-Bus commands: options
// written "--name VALUE" or "--name=VALUE", checked unsigned numbers, Linux
// cpulists ("0-3,8"), and the usage error every parser throws.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

// A command line that does not fit the command's usage; the message says
// why ("--min needs a value").
class UsageError : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

// The value of a decimal unsigned number that fits `max`, or nothing for
// anything else (empty, a sign, spaces, other characters, too large).
[[nodiscard]] std::optional<std::uint64_t> parseUnsigned(std::string_view text,
                                                         std::uint64_t max);

// As parseUnsigned, for the value of option `option`: throws UsageError
// ("--min: '2000' is not a number from 0 to 1024") instead of returning
// nothing.
[[nodiscard]] std::uint64_t optionNumber(std::string_view option,
                                         std::string_view text,
                                         std::uint64_t min, std::uint64_t max);

// If args[i] is option `name`, either "--name VALUE" or "--name=VALUE",
// returns VALUE and leaves `i` on the last argument it used. Returns nothing
// (and leaves `i`) when args[i] is another argument. Throws UsageError when
// the option has no value.
[[nodiscard]] std::optional<std::string_view> optionValue(
    std::span<const std::string_view> args, std::size_t& i,
    std::string_view name);

// The CPUs of a Linux cpulist ("0-3,8,10-11", lib/cpu_list.hpp's written
// syntax), sorted, each once. Throws UsageError with the list's problem
// ("malformed CPU list '0-4096': CPU 4096 is above 4095, the highest
// supported").
[[nodiscard]] std::vector<std::uint32_t> parseCpuList(std::string_view text);

// Options every D-Bus command takes.
struct BusOptions
{
    // The D-Bus address of the bus cppcgovd is on ("unix:path=..."); the
    // system bus when empty.
    std::optional<std::string> address;
};

// If args[i] is "--bus-address ADDR" (or "--bus-address=ADDR"), stores
// ADDR in `bus`, leaves `i` on the last argument used and returns true.
// Throws UsageError when ADDR is missing.
bool takeBusAddress(std::span<const std::string_view> args, std::size_t& i,
                    BusOptions& bus);

// The options of a command that takes only --bus-address and --help
// (reload, metrics).
struct BusOnlyOptions
{
    BusOptions bus;
    bool help = false;
};

// Parses such a command's arguments. Throws UsageError.
[[nodiscard]] BusOnlyOptions parseBusOnlyArgs(
    std::span<const std::string_view> args);

// Reports a usage error on `err` in two lines, "cppcgovctl: <problem>" and
// "Try 'cppcgovctl COMMAND --help'." (without COMMAND when `command` is
// empty), and returns the usage exit status, 2. Never the whole help.
int reportUsageError(std::string_view command, std::string_view problem,
                     std::ostream& err);
int reportUsageError(std::string_view command, const UsageError& e,
                     std::ostream& err);

// The start every command shares: parses `args` with `parse` into `o`.
// Returns the exit status to end with: 2 after a usage error (reported
// as reportUsageError does), 0 after writing `usage` on `out` when the
// options ask for help (`o.help`), or nothing when the command goes on.
template <class Options, class Parse>
[[nodiscard]] std::optional<int> parseCommand(
    std::string_view command, std::string_view usage,
    std::span<const std::string_view> args, std::ostream& out,
    std::ostream& err, const Parse& parse, Options& o)
{
    try
    {
        o = parse(args);
    }
    catch (const UsageError& e)
    {
        return reportUsageError(command, e, err);
    }
    if (o.help)
    {
        out << usage;
        return 0;
    }
    return std::nullopt;
}

// The CPUs of `cpus` that a machine of `cpuCount` CPUs (0 to cpuCount - 1)
// lacks, said as a sentence ("CPU 64 does not exist (this machine has CPUs
// 0-63)", "CPUs 64-99 do not exist (...)"), or nothing when it has them
// all.
[[nodiscard]] std::optional<std::string> missingCpus(
    std::span<const std::uint32_t> cpus, std::uint32_t cpuCount);

} // namespace cppcgov::tools
