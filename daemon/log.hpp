// SPDX-License-Identifier: Apache-2.0
// cppcgovd's log: one line per message on stderr. When stderr is the
// journal (systemd's JOURNAL_STREAM names it), each line starts with the
// sd-daemon(3) priority prefix ("<3>"), which the journal turns into the
// entry's priority; anywhere else (a terminal, a pipe, a file) the lines
// are plain. Lines below the level set are not written. A thread that
// must not wait on stderr logs into a queue that another writes out
// (deferTo()). Only the daemon logs; lib/ and policies/ return errors
// instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cppcgov::daemon::log
{

// syslog's priorities, most severe first.
enum class Level : std::uint8_t
{
    error = 3,
    warning = 4,
    notice = 5,
    info = 6,
    debug = 7,
};

// "error", "warning", "notice", "info", "debug"; nothing for anything else.
[[nodiscard]] std::optional<Level> parseLevel(std::string_view name) noexcept;

// Whether `fd` is the stream `journalStream` names: systemd's documented
// rule, JOURNAL_STREAM's "DEV:INODE" (decimal) equal to fstat(fd)'s st_dev
// and st_ino. False for null, malformed text or an fd fstat() refuses.
[[nodiscard]] bool isJournalStream(const char* journalStream, int fd) noexcept;

// Sets the level (lines less severe are dropped; default info) and whether
// lines carry the priority prefix (default: no). Call before the daemon's
// threads start; safe to call again.
void configure(Level level, bool priorityPrefix) noexcept;

// configure(level, isJournalStream(getenv("JOURNAL_STREAM"), stderr)).
void configureForStderr(Level level) noexcept;

// Whether a line at `level` is written.
[[nodiscard]] bool enabled(Level level) noexcept;

class LogQueue;

// Lines logged on the calling thread from now on go into `queue`
// (log_queue.hpp) instead of stderr, unless nullptr (stderr again). The
// level filter applies when they are logged; the prefix when written.
void deferTo(LogQueue* queue) noexcept;

// Writes the lines `queue` holds, in order, then (when the queue refused
// any since the last call) a warning saying how many lines were lost. On
// the reader's thread, which may wait on stderr.
void writeQueued(LogQueue& queue) noexcept;

void error(std::string_view message) noexcept;
void warning(std::string_view message) noexcept;
void notice(std::string_view message) noexcept;
void info(std::string_view message) noexcept;
void debug(std::string_view message) noexcept;

} // namespace cppcgov::daemon::log
