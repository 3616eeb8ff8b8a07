// SPDX-License-Identifier: Apache-2.0
// The metrics' file for node_exporter's textfile collector, written on a
// thread of its own: the loop hands over the text and returns at once.
//
// Each write makes a temporary file in the same directory (a name starting
// with '.' and not ending in .prom, which the collector skips), writes the
// text, sets mode 0644 (the unit's UMask=0077 would leave it unreadable to
// node_exporter's user), then renames it over cppcgovd.prom: a reader sees
// the old file or the new one, never part of one. A directory that is
// missing or cannot be written is logged once, and once more when writing
// works again; it is never fatal. A text handed over while the thread is
// still writing the one before replaces any text waiting: only the latest
// is written.
//
// stop() removes the file (a file left behind would show a stopped daemon
// as running; after a crash node_textfile_mtime_seconds tells how old it
// is).
#pragma once

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace cppcgov::daemon
{

// The file's name in the directory.
inline constexpr std::string_view textfileName = "cppcgovd.prom";

// Writes `text` into `dir`/`name` as above, on the calling thread.
// Returns what failed ("creating a file in '/x': Permission denied"),
// empty when the file was replaced.
[[nodiscard]] std::string replaceFile(const std::filesystem::path& dir,
                                      std::string_view name,
                                      std::string_view text);

class TextfileWriter
{
  public:
    TextfileWriter() = default;
    // stop().
    ~TextfileWriter();

    TextfileWriter(const TextfileWriter&) = delete;
    TextfileWriter& operator=(const TextfileWriter&) = delete;

    // Writes `text` into `dir`/cppcgovd.prom on the thread (started at the
    // first call). A file written before in another directory is removed.
    void write(std::filesystem::path dir, std::string text);

    // Removes the file written, if any, on the thread.
    void remove();

    // Drops a text not yet written, waits for the write in progress,
    // removes the file and ends the thread. Idempotent.
    void stop();

  private:
    struct Job
    {
        // Nothing: remove the file.
        std::optional<std::filesystem::path> dir;
        std::string text;
    };

    void post(Job job);
    void loop();
    // On the thread: runs one job, logging when the outcome changes.
    void run(const Job& job);
    void removeWritten();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::optional<Job> pending_;
    bool stopping_ = false;
    std::thread thread_;
    // The thread's own.
    std::optional<std::filesystem::path> written_;
    std::string problem_;
};

} // namespace cppcgov::daemon
