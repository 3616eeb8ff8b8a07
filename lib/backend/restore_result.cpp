// SPDX-License-Identifier: Apache-2.0
#include "restore_result.hpp"

#include <algorithm>
#include <utility>

namespace cppc::backend
{
namespace
{

std::string quoted(const std::filesystem::path& file)
{
    return "'" + file.string() + "'";
}

bool isStateFileStep(RestoreStep step) noexcept
{
    return step == RestoreStep::readStateFile ||
           step == RestoreStep::parseStateFile ||
           step == RestoreStep::keepStateFile ||
           step == RestoreStep::removeStateFile;
}

void addOnce(std::vector<std::filesystem::path>& files,
             const std::filesystem::path& file)
{
    if (std::find(files.begin(), files.end(), file) == files.end())
    {
        files.push_back(file);
    }
}

} // namespace

std::string describe(const RestoreEntry& entry)
{
    const std::string file = quoted(entry.file);
    const std::string error = entry.error ? entry.error.message() : "";
    switch (entry.step)
    {
        case RestoreStep::readCurrent:
            return "reading the current value of " + file +
                   " failed: " + error + "; writing the saved value regardless";
        case RestoreStep::writeSaved:
            return "writing the saved value '" + entry.detail + "' to " + file +
                   " failed: " + error;
        case RestoreStep::readStateFile:
            return "reading the state file " + file + " failed: " + error +
                   "; it is kept";
        case RestoreStep::parseStateFile:
            return "the state file cannot be parsed: " + entry.detail +
                   "; it is kept for inspection";
        case RestoreStep::keepStateFile:
            if (entry.severity == RestoreSeverity::notice)
            {
                return file + " now holds what is not back: " + entry.detail;
            }
            return "rewriting the state file " + file + " to hold what is " +
                   "not back (" + entry.detail + ") failed: " + error +
                   "; it still holds what it held";
        case RestoreStep::removeStateFile:
            return "removing the state file " + file + " failed: " + error +
                   "; everything it recorded is back";
        case RestoreStep::putBack:
            return "restored " + entry.detail +
                   " that a previous run left changed, as recorded in " + file;
    }
    return file + ": " + error;
}

std::string quotedList(const std::vector<std::filesystem::path>& files)
{
    std::string out;
    for (const std::filesystem::path& f : files)
    {
        out += (out.empty() ? "" : ", ") + quoted(f);
    }
    return out;
}

void RestoreResult::add(RestoreEntry entry)
{
    entries_.push_back(std::move(entry));
}

void RestoreResult::fail(RestoreStep step, const std::filesystem::path& file,
                         std::error_code error, std::string record,
                         std::string detail, RestoreSeverity severity)
{
    add({severity, step, file, error, std::move(record), std::move(detail)});
}

void RestoreResult::note(RestoreStep step, const std::filesystem::path& file,
                         std::string detail)
{
    add({RestoreSeverity::notice, step, file, {}, {}, std::move(detail)});
}

void RestoreResult::merge(const RestoreResult& other)
{
    entries_.insert(entries_.end(), other.entries_.begin(),
                    other.entries_.end());
}

bool RestoreResult::anythingLeft() const noexcept
{
    return std::any_of(entries_.begin(), entries_.end(),
                       [](const RestoreEntry& e) {
        return e.severity == RestoreSeverity::failure;
    });
}

bool RestoreResult::isLeft(std::string_view record) const noexcept
{
    return std::any_of(entries_.begin(), entries_.end(),
                       [record](const RestoreEntry& e) {
        return e.severity == RestoreSeverity::failure && e.record == record;
    });
}

std::vector<RestoreEntry> RestoreResult::failures() const
{
    std::vector<RestoreEntry> out;
    std::copy_if(entries_.begin(), entries_.end(), std::back_inserter(out),
                 [](const RestoreEntry& e) {
        return e.severity == RestoreSeverity::failure;
    });
    return out;
}

std::vector<std::filesystem::path> RestoreResult::leftFiles() const
{
    std::vector<std::filesystem::path> files;
    for (const RestoreEntry& e : entries_)
    {
        if (e.severity == RestoreSeverity::failure && !isStateFileStep(e.step))
        {
            addOnce(files, e.file);
        }
    }
    return files;
}

std::vector<std::filesystem::path> RestoreResult::keptStateFiles() const
{
    std::vector<std::filesystem::path> files;
    for (const RestoreEntry& e : entries_)
    {
        if (isStateFileStep(e.step) &&
            (e.severity == RestoreSeverity::failure ||
             e.step == RestoreStep::keepStateFile))
        {
            addOnce(files, e.file);
        }
    }
    return files;
}

} // namespace cppc::backend
