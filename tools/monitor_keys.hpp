// SPDX-License-Identifier: Apache-2.0
// The keys of `cppcgovctl monitor`'s terminal view, from the bytes a
// terminal sends: q quits (Ctrl-C too, when it arrives as a byte); n,
// space, j, Page Down and the right or down arrow show the next page; p,
// b, k, Page Up and the left or up arrow the previous one; g and Home the
// first, G and End the last. Anything else is ignored.
#pragma once

#include <string_view>
#include <vector>

namespace cppcgov::tools
{

enum class MonitorKey
{
    quit,
    next,
    previous,
    first,
    last,
};

// The keys in `bytes`, in order. An escape sequence cut at the end of
// `bytes` is dropped.
[[nodiscard]] std::vector<MonitorKey> parseKeys(std::string_view bytes);

} // namespace cppcgov::tools
