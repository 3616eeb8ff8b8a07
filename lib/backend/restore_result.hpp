// SPDX-License-Identifier: Apache-2.0
// What putting a machine back did: the one result that every restore
// (the kernel backend's, the latency arbiter's, a machine's, a crashed
// run's state file) returns, from the library up to the daemon's log.
//
// Each entry names the file, the step that was taken on it (reading the
// value in place, writing the saved value, reading, parsing, rewriting or
// removing the state file), the error, and how bad it is:
//   failure  something is not back (or a state file that should be gone is
//            still there): the daemon logs it as an error, a start refuses
//            over it and `cppcgovd --restore-only` exits non-zero;
//   warning  something went wrong that left nothing behind (reading the
//            value in place failed, and the saved value was written
//            regardless);
//   notice   for information: what was put back, what a kept state file
//            now holds.
// Entries about one saved record (a cpufreq policy, a CPU's resume
// latency) carry the record's name as the state file spells it
// ("policy1", "cpu3"), so that the restore can rewrite its state file to
// hold exactly the records that are not back.
//
// Library code: no logging; describe() gives the text to log.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppc::backend
{

enum class RestoreSeverity
{
    notice,
    warning,
    failure,
};

enum class RestoreStep
{
    readCurrent,     // reading the value in place, to decide what to write
    writeSaved,      // writing the saved value back
    readStateFile,   // reading the state file
    parseStateFile,  // making sense of its text
    keepStateFile,   // rewriting it to hold what is not back
    removeStateFile, // removing it once everything is back
    putBack,         // everything the state file recorded is back
};

struct RestoreEntry
{
    RestoreSeverity severity = RestoreSeverity::failure;
    RestoreStep step = RestoreStep::writeSaved;
    std::filesystem::path file;
    std::error_code error; // none for notices
    // The saved record concerned ("policy1", "cpu3"); empty for entries
    // about a state file as a whole.
    std::string record;
    // writeSaved: the value written. parseStateFile: what is wrong, naming
    // the file.
    // keepStateFile: the records it holds. putBack: what was put back.
    std::string detail;
};

// The entry as one log line: what was done to which file and what came of
// it, e.g. "writing the saved value 'schedutil' to
// '/sys/.../policy1/scaling_governor' failed: Device or resource busy".
std::string describe(const RestoreEntry& entry);

// "'a', 'b'": paths for messages.
std::string quotedList(const std::vector<std::filesystem::path>& files);

class RestoreResult
{
  public:
    void add(RestoreEntry entry);
    // Adds a failure (or, with `severity`, a warning) of `step` on `file`.
    void fail(RestoreStep step, const std::filesystem::path& file,
              std::error_code error, std::string record = {},
              std::string detail = {},
              RestoreSeverity severity = RestoreSeverity::failure);
    // Adds a notice of `step` on `file`.
    void note(RestoreStep step, const std::filesystem::path& file,
              std::string detail);
    // Appends `other`'s entries.
    void merge(const RestoreResult& other);

    // Whether anything is left to put back: any failure.
    [[nodiscard]] bool anythingLeft() const noexcept;
    // Whether `record` has a failure: it is not back.
    [[nodiscard]] bool isLeft(std::string_view record) const noexcept;

    // Every entry, in the order they happened.
    const std::vector<RestoreEntry>& entries() const noexcept
    {
        return entries_;
    }
    // The failures only.
    std::vector<RestoreEntry> failures() const;

    // The files whose saved value is not back (the failures that are not
    // about a state file). Each once, in order.
    std::vector<std::filesystem::path> leftFiles() const;
    // The state files still there because something is left: rewritten to
    // hold what is not back, or kept as they were because they could not be
    // read, parsed, rewritten or removed. Each once, in order.
    std::vector<std::filesystem::path> keptStateFiles() const;

  private:
    std::vector<RestoreEntry> entries_;
};

} // namespace cppc::backend
