// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl acpi-inspect`: reads the firmware's ACPI tables and shows, per
// logical CPU, every _CPC entry, the access class the plan chose, the PCC
// subspace, the _PSD domain and every diagnostic. The JSON form
// (--json) is a stable interface documented in tools/README.md.
#pragma once

#include <iosfwd>
#include <span>
#include <string_view>

namespace cppcgov::tools
{

// Runs the command with its arguments (after "acpi-inspect"). Returns the
// exit status: 0 when no present CPU's _CPC was refused (a CPU for which
// the firmware offers no _CPC at all is listed, not refused), 1 when any
// was refused, 2 for a usage error; unreadable or damaged tables are
// reported on `err` with status 1.
int runAcpiInspect(std::span<const std::string_view> args, std::ostream& out,
                   std::ostream& err);

} // namespace cppcgov::tools
