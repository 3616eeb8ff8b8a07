// State files: the small text files through which a later start (or an
// ExecStopPost) undoes what a crashed process changed on the machine.
//
// A state file is a header line naming its format and version, then one
// record per line. It is written atomically (a temporary beside it,
// flushed, renamed over, the directory flushed), so a crash leaves the old
// file or the new one, whole.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppc::backend
{

// Writes `text` to `file` atomically. On failure the file is as it was
// and the temporary is removed.
[[nodiscard]] std::error_code writeStateFile(const std::filesystem::path& file,
                                             std::string_view text) noexcept;

// The file's text, or nothing when there is no file. Throws
// std::system_error naming the file when it cannot be read or is larger
// than 1 MiB.
[[nodiscard]] std::optional<std::string> readStateFile(
    const std::filesystem::path& file);

// The record lines of a state file's text (views into `text`). Throws
// std::system_error (cppc::Errc::malformedAttribute) naming `file` when the
// text does not end with a newline or does not start with `header`.
[[nodiscard]] std::vector<std::string_view> stateLines(
    std::string_view text, std::string_view header,
    const std::filesystem::path& file);

// Throws std::system_error (std::errc::file_exists) when `file` exists:
// a previous run's changes, `what`, were not undone and must be restored
// from it first.
void requireNoStateFile(const std::filesystem::path& file,
                        std::string_view what);

// Throws std::system_error (cppc::Errc::malformedAttribute) naming `file`
// and saying `why`: for the record parsers.
[[noreturn]] void badStateFile(const std::filesystem::path& file,
                               std::string_view why);

} // namespace cppc::backend
