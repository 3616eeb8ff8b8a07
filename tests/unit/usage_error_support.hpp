// SPDX-License-Identifier: Apache-2.0
// For cppcgovctl's tests: what a command's argument parser says of a
// command line, as the user would read it.
#pragma once

#include "tools/args.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::tools::test
{

using Args = std::vector<std::string_view>;

// The UsageError's message `parse(args)` throws, or "(accepted)" when it
// throws none.
template <class Parse>
std::string usageError(Parse parse, const Args& args)
{
    try
    {
        (void)parse(args);
    }
    catch (const UsageError& e)
    {
        return e.what();
    }
    return "(accepted)";
}

} // namespace cppcgov::tools::test
