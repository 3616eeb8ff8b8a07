// SPDX-License-Identifier: Apache-2.0
// Dropping capabilities the daemon needed only at start (the BPF
// program's loading, observation.hpp).
#pragma once

#include <initializer_list>
#include <system_error>

namespace cppcgov::daemon
{

// Removes `capabilities` (CAP_* numbers) from the process's effective,
// permitted and inheritable sets, for good; the others are left as they
// are. Returns the errno of capget(2)/capset(2) when that fails (nothing
// is then dropped). Dropping a capability the process does not have is not
// an error.
[[nodiscard]] std::error_code dropCapabilities(
    std::initializer_list<int> capabilities) noexcept;

} // namespace cppcgov::daemon
