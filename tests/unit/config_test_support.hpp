// SPDX-License-Identifier: Apache-2.0
// What the configuration tests share: the file name parse errors carry,
// the configuration a file that sets nothing gives, a CPU set from a list,
// and the top-level keys an unknown key's message lists.
#pragma once

#include "daemon/config.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace cppcgov::daemon::test
{

inline constexpr const char* testFile = "test.yaml";

// What parseConfig() gives for a file that sets nothing.
inline GovernorConfig defaultsFrom(const std::string& file)
{
    GovernorConfig config;
    config.sources = {file};
    return config;
}

inline CpuSet cpus(std::initializer_list<std::uint32_t> numbers)
{
    CpuSet set;
    for (const std::uint32_t cpu : numbers)
    {
        set.set(cpu);
    }
    return set;
}

// The top-level keys, as an unknown key's message lists them.
inline const std::string topKeyList =
    "policy, schedutil, sampling, clients, users, permissions, backend, "
    "overrides, metrics, sanity, autonomous, tick";

} // namespace cppcgov::daemon::test
