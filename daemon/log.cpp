// SPDX-License-Identifier: Apache-2.0
#include "log.hpp"

#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <string>

namespace cppcgov::daemon::log
{
namespace
{

void write(const char* prefix, std::string_view message) noexcept
{
    try
    {
        std::string line(prefix);
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

} // namespace

void error(std::string_view message) noexcept
{
    write(SD_ERR, message);
}

void warning(std::string_view message) noexcept
{
    write(SD_WARNING, message);
}

void notice(std::string_view message) noexcept
{
    write(SD_NOTICE, message);
}

void info(std::string_view message) noexcept
{
    write(SD_INFO, message);
}

} // namespace cppcgov::daemon::log
