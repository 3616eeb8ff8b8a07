// SPDX-License-Identifier: Apache-2.0
// Error codes returned by libcppc's hot paths.
//
// Start-up code (building descriptors and plans, mapping registers) throws;
// the per-request paths (setPerf and friends) return a std::error_code from
// the category below so callers can react without unwinding.
#pragma once

#include <system_error>

namespace cppc
{

enum class Errc
{
    ok = 0,
    noSuchCpu = 1,       // the CPU index is not in the plan
    cpuRefused,          // the CPU's _CPC was refused when the plan was built
    notWritable,         // the entry is absent, an Integer, or not writable
    valueOutOfRange,     // the value does not fit the register field
    pccUnavailable,      // the CPU is controlled through PCC but no channel
    pccFailed,           // the PCC channel reported an error
    malformedAttribute,  // a sysfs attribute or state file holds bad text
    governorUnavailable, // cpufreq does not offer the userspace governor
    pccOwnedByKernel,    // the kernel drives the PCC subspace: hands off
    backendStopped,      // the backend restored the saved state and stopped
    pccTimeout,          // the PCC platform did not complete in time
    pccPlatformError,    // the PCC platform set the error bit in status
    pccRateLimited,      // over the subspace's commands-per-minute limit
    pccBadRegister,      // a PCC register outside the payload or malformed
    cppcDriverLoaded,    // cppc_cpufreq writes the registers: hands off
    accessTimedOut,      // a blocking access did not return by its deadline
    accessPending,       // an earlier access to the same place has not returned
    registerMoved,       // the firmware describes the register otherwise now
};

// The category of Errc values; its name is "cppc".
const std::error_category& errorCategory() noexcept;

inline std::error_code make_error_code(Errc e) noexcept
{
    return {static_cast<int>(e), errorCategory()};
}

} // namespace cppc

template <>
struct std::is_error_code_enum<cppc::Errc> : std::true_type
{};
