// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl sim-demo`: drives libcppc on a simulated layout and shows, per
// CPU, the access class the plan chose and what one performance request
// cost in register accesses, optimised against conservative.
#pragma once

#include <iosfwd>
#include <string_view>

namespace cppcgov::tools
{

// Runs the demonstration for one named layout, writing a table to `out`.
// Returns false (after saying why on `out`) if any request failed. Throws
// std::invalid_argument for an unknown layout name.
bool runSimDemo(std::string_view layout, std::ostream& out);

} // namespace cppcgov::tools
