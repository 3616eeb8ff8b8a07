// SPDX-License-Identifier: Apache-2.0
#include "poll_ready.hpp"

#include <cerrno>
#include <system_error>

namespace cppcgov::tools
{

std::optional<std::size_t> pollWatched(std::span<pollfd> polled,
                                       std::size_t watched, int timeoutMs)
{
    if (::poll(polled.data(), polled.size(), timeoutMs) < 0)
    {
        if (errno == EINTR)
        {
            return std::nullopt;
        }
        throw std::system_error(errno, std::generic_category(), "poll");
    }
    for (std::size_t i = 0; i < watched && i < polled.size(); ++i)
    {
        if (polled[i].revents != 0)
        {
            return i;
        }
    }
    return std::nullopt;
}

} // namespace cppcgov::tools
