// SPDX-License-Identifier: Apache-2.0
// State files: the small text files through which a later start (or an
// ExecStopPost) undoes what a crashed process changed on the machine.
//
// A state file is a header line naming its format and version, then one
// record per line. It is written atomically (a temporary beside it,
// flushed, renamed over, the directory flushed), so a crash leaves the old
// file or the new one, whole. A restore from it (restoreFromStateFile)
// leaves it holding exactly the records that are not back, and removes it
// only when all are.
#pragma once

#include "lib/backend/restore_result.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
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

// The last step of a restore: the state file made to hold exactly what is
// not back. `leftText` is the state file's text for the records left, or
// empty when nothing is left; the file is then removed (a failure to
// remove it is a removeStateFile failure). Otherwise it is rewritten
// atomically with `leftText`, and `leftRecords` (their names, for the log)
// goes into a keepStateFile notice, or a keepStateFile failure when the
// rewrite fails (the file then holds what it held). Throws only
// std::bad_alloc.
void settleStateFile(const std::filesystem::path& file,
                     std::string_view leftText, std::string leftRecords,
                     RestoreResult& result);

// The restores below are written once for every kind of state file; a
// Codec says how one kind spells its records:
//   typename Codec::Records              the records, a container;
//   Codec::parse(text, file) -> Records  throws std::system_error for bad
//                                        text (see stateLines());
//   Codec::format(records) -> string     the file's text for them;
//   Codec::name(record) -> string        the record's name in a
//                                        RestoreResult ("policy1", "cpu3").

// Drops from `saved` the records `result` put back, then settles `file`
// with the rest (see settleStateFile). Throws only std::bad_alloc.
template <typename Codec>
void keepWhatIsLeft(const std::filesystem::path& file,
                    typename Codec::Records& saved, RestoreResult& result)
{
    std::erase_if(saved, [&result](const auto& record) {
        return !result.isLeft(Codec::name(record));
    });
    std::string names;
    for (const auto& record : saved)
    {
        names += (names.empty() ? "" : ", ") + Codec::name(record);
    }
    settleStateFile(file, saved.empty() ? std::string() : Codec::format(saved),
                    std::move(names), result);
}

// Restores from the state file `file`: reads and parses it, puts its
// records back with `putBack(records) -> RestoreResult`, and settles the
// file with what is left. When everything is back the result ends with a
// putBack notice naming `what` ("the cpufreq settings"). An empty result
// when there is no file; a readStateFile or parseStateFile failure (the
// file left alone) when it cannot be read or parsed. Throws only
// std::bad_alloc.
template <typename Codec, typename PutBack>
RestoreResult restoreFromStateFile(const std::filesystem::path& file,
                                   std::string_view what, PutBack&& putBack)
{
    RestoreResult result;
    std::optional<typename Codec::Records> saved;
    try
    {
        std::optional<std::string> text = readStateFile(file);
        if (!text)
        {
            return result;
        }
        try
        {
            saved = Codec::parse(std::string_view(*text), file);
        }
        catch (const std::system_error& e)
        {
            result.fail(RestoreStep::parseStateFile, file, e.code(), {},
                        e.what());
            return result;
        }
    }
    catch (const std::system_error& e)
    {
        result.fail(RestoreStep::readStateFile, file, e.code());
        return result;
    }
    result.merge(putBack(std::as_const(*saved)));
    keepWhatIsLeft<Codec>(file, *saved, result);
    if (!result.anythingLeft())
    {
        result.note(RestoreStep::putBack, file, std::string(what));
    }
    return result;
}

} // namespace cppc::backend
