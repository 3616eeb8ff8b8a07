// SPDX-License-Identifier: Apache-2.0
// One poll(2) round of a command's wait loop: its own descriptors first,
// then those of a bus connection it services.
#pragma once

#include <poll.h>

#include <cstddef>
#include <optional>
#include <span>

namespace cppcgov::tools
{

// Polls `polled` for up to `timeoutMs` (-1: no limit), the first `watched`
// entries being the caller's descriptors. Returns the index of the first of
// those that is ready (readable, or hung up), or nothing when none is (the
// time passed, a signal came, or only the others are ready). Throws
// std::system_error when poll fails otherwise.
[[nodiscard]] std::optional<std::size_t> pollWatched(
    std::span<pollfd> polled, std::size_t watched, int timeoutMs);

} // namespace cppcgov::tools
