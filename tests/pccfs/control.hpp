// SPDX-License-Identifier: Apache-2.0
// The commands written to pccfs/control, one per write: "hang N",
// "release N", "fail N", "clear N" and "clear".
#pragma once

#include <optional>
#include <string_view>

namespace pccfs
{

struct Command
{
    enum class Kind
    {
        hang,    // hold every access to CPU N's files and its policy's
        release, // answer the held ones as if they arrived now; hold no more
        fail,    // answer CPU N's accesses with EIO after the usual latency
        clear,   // release and stop failing, for CPU N or (no N) every CPU
    };
    Kind kind = Kind::clear;
    std::optional<unsigned> cpu; // only "clear" goes without
};

// The command in `text` (a trailing newline allowed), or nullopt when it
// is not one.
std::optional<Command> parseCommand(std::string_view text);

} // namespace pccfs
