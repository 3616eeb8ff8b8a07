// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the parsers of the daemon's crash-recovery state files
// (the cpufreq policies' kernel.state, the registers backend's
// registers.state, latency.state), on the same bytes. None may crash or
// accept anything but by throwing std::system_error; what one accepts,
// written out again, reads back as the same records (and for
// registers.state, whose parser takes only what it writes, as the same
// text).
#include "daemon/latency_arbiter.hpp"
#include "daemon/machines/registers_state.hpp"
#include "lib/backend/kernel.hpp"
#include "tests/fuzz/fuzz_input.hpp"

#include <string_view>
#include <system_error>

namespace
{

// Parses `text` with `parse`; when it is accepted, `format` of the records
// must parse back to them.
template <typename Parse, typename Format>
void roundTrip(std::string_view text, Parse parse, Format format)
{
    try
    {
        const auto records = parse(text, "state");
        cppc::acpi::fuzz::require(parse(format(records), "state") == records);
    }
    catch (const std::system_error&)
    {
        // Refused, as malformed text must be.
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size)
{
    using namespace cppcgov::daemon;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    roundTrip(text, cppc::backend::parseState, cppc::backend::formatState);
    roundTrip(text, parseRegistersState, formatRegistersState);
    try
    {
        cppc::acpi::fuzz::require(
            formatRegistersState(parseRegistersState(text, "state")) == text);
    }
    catch (const std::system_error&)
    {
        // Refused.
    }
    roundTrip(text, parseLatencyState, formatLatencyState);
    return 0;
}
