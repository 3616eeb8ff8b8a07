// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as a policy file. parseConfig() must
// return a configuration within the documented ranges or throw a
// ConfigError that points into the input; any other exception escapes and
// is a finding, like a crash or a sanitizer report.
#include "daemon/config.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace
{

using namespace cppcgov::daemon;

// Traps (a crash libFuzzer reports) unless `condition` holds.
void require(bool condition)
{
    if (!condition)
    {
        __builtin_trap();
    }
}

void checkSettings(const PolicySettings& s)
{
    require(s.schedutil.headroom >= 1.0 && s.schedutil.headroom <= 4.0);
    require(s.schedutil.rateLimitUpUs <= 1'000'000);
    require(s.schedutil.rateLimitDownUs <= 1'000'000);
}

void checkConfig(const GovernorConfig& config)
{
    checkSettings(config.defaults);
    require(config.samplingPeriodUs >= 100 &&
            config.samplingPeriodUs <= 1'000'000);
    require(config.clients.maxHandles >= 1 &&
            config.clients.maxHandles <= 4096);
    require(config.clients.maxCallsPerSecond >= 1 &&
            config.clients.maxCallsPerSecond <= 100'000);
    require(!config.group.empty() && config.group.size() <= 31);
    require(config.overrides.size() <= maxOverrides);
    for (const std::uint32_t cpu : {0U, 1U, cppc::maxCpus - 1, cppc::maxCpus})
    {
        checkSettings(settingsFor(config, cpu, cpu % 3));
        checkSettings(settingsFor(config, cpu, std::nullopt));
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try
    {
        checkConfig(parseConfig(text, "fuzz.yaml"));
    }
    catch (const ConfigError& e)
    {
        // A position names a line of the input, or the one after its end.
        const auto lines = static_cast<std::uint32_t>(
            std::count(text.begin(), text.end(), '\n'));
        require(e.file() == "fuzz.yaml");
        require(e.line() <= lines + 1);
        require((e.line() == 0) == (e.column() == 0));
    }
    return 0;
}
