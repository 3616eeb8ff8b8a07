// SPDX-License-Identifier: Apache-2.0
#include "log.hpp"

#include "log_queue.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cppcgov::daemon::log
{
namespace
{

struct Name
{
    std::string_view name;
    Level level;
};

constexpr std::array<Name, 5> levelNames = {{
    {"error", Level::error},
    {"warning", Level::warning},
    {"notice", Level::notice},
    {"info", Level::info},
    {"debug", Level::debug},
}};

std::atomic<Level> currentLevel{Level::info};
std::atomic<bool> withPrefix{false};

// A decimal number that takes all of `text`.
std::optional<std::uint64_t> wholeNumber(std::string_view text) noexcept
{
    std::uint64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end)
    {
        return std::nullopt;
    }
    return value;
}

// Where this thread's lines go instead of stderr, if anywhere.
thread_local LogQueue* deferred = nullptr;

void writeLine(Level level, std::string_view message) noexcept
{
    try
    {
        std::string line;
        if (withPrefix.load(std::memory_order_relaxed))
        {
            line = "<" + std::to_string(static_cast<int>(level)) + ">";
        }
        line.append(message);
        line.push_back('\n');
        // One write(2) per line, so that lines never interleave.
        (void)!::write(STDERR_FILENO, line.data(), line.size());
    }
    catch (...)
    {
        // Out of memory while logging: nothing better to do.
    }
}

void write(Level level, std::string_view message) noexcept
{
    if (!enabled(level))
    {
        return;
    }
    if (deferred != nullptr)
    {
        (void)deferred->push(level, message);
        return;
    }
    writeLine(level, message);
}

} // namespace

void deferTo(LogQueue* queue) noexcept
{
    deferred = queue;
}

void writeQueued(LogQueue& queue) noexcept
{
    queue.drain([](Level level, std::string_view text) {
        writeLine(level, text);
    });
    if (const std::uint64_t lost = queue.takeDropped(); lost != 0)
    {
        try
        {
            writeLine(Level::warning,
                      std::to_string(lost) +
                          " log lines of the tick were lost: they came faster "
                          "than they were written out");
        }
        catch (...)
        {
            // Out of memory while logging: nothing better to do.
        }
    }
}

std::optional<Level> parseLevel(std::string_view name) noexcept
{
    for (const Name& n : levelNames)
    {
        if (n.name == name)
        {
            return n.level;
        }
    }
    return std::nullopt;
}

bool isJournalStream(const char* journalStream, int fd) noexcept
{
    if (journalStream == nullptr)
    {
        return false;
    }
    const std::string_view text(journalStream);
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos)
    {
        return false;
    }
    const std::optional<std::uint64_t> dev = wholeNumber(text.substr(0, colon));
    const std::optional<std::uint64_t> ino =
        wholeNumber(text.substr(colon + 1));
    struct stat st
    {};
    if (!dev || !ino || ::fstat(fd, &st) != 0)
    {
        return false;
    }
    return static_cast<std::uint64_t>(st.st_dev) == *dev &&
           static_cast<std::uint64_t>(st.st_ino) == *ino;
}

void configure(Level level, bool priorityPrefix) noexcept
{
    currentLevel.store(level, std::memory_order_relaxed);
    withPrefix.store(priorityPrefix, std::memory_order_relaxed);
}

void configureForStderr(Level level) noexcept
{
    configure(level,
              isJournalStream(std::getenv("JOURNAL_STREAM"), STDERR_FILENO));
}

bool enabled(Level level) noexcept
{
    return static_cast<std::uint8_t>(level) <=
           static_cast<std::uint8_t>(
               currentLevel.load(std::memory_order_relaxed));
}

void error(std::string_view message) noexcept
{
    write(Level::error, message);
}

void warning(std::string_view message) noexcept
{
    write(Level::warning, message);
}

void notice(std::string_view message) noexcept
{
    write(Level::notice, message);
}

void info(std::string_view message) noexcept
{
    write(Level::info, message);
}

void debug(std::string_view message) noexcept
{
    write(Level::debug, message);
}

} // namespace cppcgov::daemon::log
