// SPDX-License-Identifier: Apache-2.0
#include "daemon/capabilities.hpp"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace cppcgov::daemon
{

std::error_code dropCapabilities(
    std::initializer_list<int> capabilities) noexcept
{
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capget, &header, data) != 0)
    {
        return {errno, std::generic_category()};
    }
    for (const int cap : capabilities)
    {
        const auto word = static_cast<unsigned>(cap) / 32;
        if (cap < 0 || word >= _LINUX_CAPABILITY_U32S_3)
        {
            continue;
        }
        const auto bit = ~(1U << (static_cast<unsigned>(cap) % 32));
        data[word].effective &= bit;
        data[word].permitted &= bit;
        data[word].inheritable &= bit;
    }
    if (::syscall(SYS_capset, &header, data) != 0)
    {
        return {errno, std::generic_category()};
    }
    return {};
}

} // namespace cppcgov::daemon
