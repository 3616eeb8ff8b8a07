// SPDX-License-Identifier: Apache-2.0
// Reading and writing sysfs attributes under a root prefix.
//
// Every path is built as root / "sys" / ..., so tests run the real code on
// a fake tree in a temporary directory and production passes "/". Values
// are written with one write(2) on an unbuffered descriptor and the result
// is checked: a buffered write would report the kernel's EINVAL late or not
// at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppc::backend
{

// root / "sys" / relative.
std::filesystem::path sysPath(const std::filesystem::path& root,
                              std::string_view relative);

// The most an attribute read returns: sysfs attributes are one page.
inline constexpr std::size_t maxAttributeBytes = 4096;

// The contents of a small file, one trailing newline removed. Throws
// std::system_error naming the path when it cannot be opened or read, or
// Errc::malformedAttribute when it is longer than maxAttributeBytes.
std::string readAttribute(const std::filesystem::path& file);

// As readAttribute, but nothing when the file does not exist.
std::optional<std::string> readAttributeIfExists(
    const std::filesystem::path& file);

// Writes `value` as it is (sysfs accepts a trailing newline, as echo sends)
// with one write(2) on a descriptor opened O_WRONLY | O_TRUNC | O_CLOEXEC:
// never O_CREAT, so a missing attribute is an error rather than a new file.
// O_TRUNC is what the shell's redirection does; sysfs ignores it and a
// plain file (a test tree) then holds exactly the value. Returns the errno
// of open, write or close, or EIO for a short write.
[[nodiscard]] std::error_code writeAttribute(const std::filesystem::path& file,
                                             std::string_view value) noexcept;

// writeAttribute, throwing std::system_error naming the path on failure.
void writeAttributeOrThrow(const std::filesystem::path& file,
                           std::string_view value);

// "'path': message of ec", how errors name the file.
std::string describe(const std::filesystem::path& file, std::error_code ec);

// A whole decimal number (digits only, no sign, space or newline), or
// nothing.
std::optional<std::uint64_t> parseDecimal(std::string_view text) noexcept;

// parseDecimal, throwing Errc::malformedAttribute naming `file`.
std::uint64_t parseDecimal(std::string_view text,
                           const std::filesystem::path& file);

// A CPU list as sysfs prints one (lib/cpu_list.hpp's kernel syntax):
// numbers separated by single spaces (cpufreq's related_cpus), or ranges
// and commas ("0-3,8"), each CPU below cppc::maxCpus. Empty text is the
// empty list. Sorted, each CPU once. Throws Errc::malformedAttribute naming
// `file` and the problem.
std::vector<unsigned> parseCpuList(std::string_view text,
                                   const std::filesystem::path& file);

} // namespace cppc::backend
