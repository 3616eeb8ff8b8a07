// SPDX-License-Identifier: Apache-2.0
// CPU lists: the one parser of the project's CPU lists, and the one limit
// on CPU numbers. Linux cpulists as people write them ("0-3,8,10-11" in
// the configuration and on cppcgovctl's command line) and as sysfs prints
// them (cpufreq's related_cpus, "0 1 2 3"), into a set of CPU numbers, and
// back. No logging, and parsing throws nothing: a malformed list is a
// CpuListError that says where and why, and describe() turns it into a
// message.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cppc
{

// CPU numbers go from 0 to maxCpus - 1. 4096 is the largest NR_CPUS that
// Linux's arm64 Kconfig accepts ("Maximum number of CPUs (2-4096)"), so no
// arm64 kernel numbers a CPU at or above it. CPU numbers from
// configuration files, command lines, D-Bus calls, state files and sysfs
// are checked against it before anything is sized from them.
inline constexpr std::uint32_t maxCpus = 4096;

// A set of CPU numbers.
using CpuSet = std::bitset<maxCpus>;

enum class CpuListSyntax : std::uint8_t
{
    // As people write them: items separated by commas, spaces allowed
    // around an item ("0-3, 8"); at least one item.
    written,
    // As the kernel prints them: items separated by one comma or one space
    // ("0-3,8", "0 1 2 3"), nothing else; empty text is the empty list.
    kernel,
};

enum class CpuListProblem : std::uint8_t
{
    none,
    empty,         // no item at all ("", "  "), in the written syntax
    emptyItem,     // ",1", "1,,2", "1,"; in the kernel syntax also "0  1"
    missingNumber, // a range without one of its ends: "1-", "-1"
    notANumber,    // a part that is not a decimal number: "x", "+1", "2-3"
    aboveLimit,    // a CPU number at or above maxCpus
    backwards,     // a range that ends before it starts: "3-1"
};

// Where and why a CPU list is malformed. The part at fault is
// text.substr(offset, length) of the list parsed: the whole text for
// `empty`, the item (as written, spaces included) for `emptyItem` and
// `backwards`, the number for `notANumber` and `aboveLimit`, and the
// empty place where a number should be for `missingNumber`.
struct CpuListError
{
    CpuListProblem problem = CpuListProblem::none;
    std::size_t offset = 0;
    std::size_t length = 0;

    explicit operator bool() const noexcept
    {
        return problem != CpuListProblem::none;
    }

    bool operator==(const CpuListError&) const = default;
};

struct CpuListResult
{
    // The CPUs the list names; none when `error` is set.
    CpuSet cpus;
    CpuListError error;
};

// The CPUs of `text`: items that are a CPU number or an inclusive range
// "low-high" of them, in decimal, each below maxCpus, in any order and
// overlapping as they like. The first problem found, from the left, is
// the error.
[[nodiscard]] CpuListResult parseCpuList(
    std::string_view text,
    CpuListSyntax syntax = CpuListSyntax::written) noexcept;

// A message for `error`, found in `text`: "malformed CPU list '0-4096':
// CPU 4096 is above 4095, the highest supported". The reasons are "the
// list is empty", "an empty item", "a CPU number is missing", "'x' is not
// a CPU number", "CPU N is above 4095, the highest supported" and "the
// range '3-1' ends before it starts". Quoted text is printable() (text.hpp).
[[nodiscard]] std::string describe(const CpuListError& error,
                                   std::string_view text);

// The CPUs of `cpus`, in increasing order.
[[nodiscard]] std::vector<std::uint32_t> cpuNumbers(const CpuSet& cpus);

// The shortest list naming `cpus` in both syntaxes: runs as ranges, in
// increasing order ("0-3,8,10-11"); "" for none.
[[nodiscard]] std::string formatCpuList(const CpuSet& cpus);

} // namespace cppc
