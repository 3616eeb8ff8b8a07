// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the daemon's procfs parsers, /proc/stat
// (parseProcStat) and a task's stat line (parseTaskStat), on the same
// bytes. Neither may crash, read out of bounds or report a CPU it was not
// given room for.
#include "daemon/proc_stat.hpp"
#include "daemon/task_info.hpp"
#include "tests/fuzz/fuzz_input.hpp"

#include <array>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size)
{
    using namespace cppcgov::daemon;
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    std::array<CpuTimes, 8> cpus{};
    std::uint32_t count = 0;
    if (!parseProcStat(text, cpus, count))
    {
        for (const CpuTimes& c : cpus)
        {
            cppc::acpi::fuzz::require(!c.present || c.busy <= c.total);
        }
    }

    TaskStat stat;
    if (parseTaskStat(text, stat))
    {
        cppc::acpi::fuzz::require((stat.state >= 'A' && stat.state <= 'Z') ||
                                  (stat.state >= 'a' && stat.state <= 'z'));
    }
    return 0;
}
