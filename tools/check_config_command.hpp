// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl check-config`: checks the policy files without a running
// daemon by running `cppcgovd --check-config` with the same options, so
// that the files are read exactly as the daemon reads them. Its exit
// status is cppcgovd's.
#pragma once

#include "args.hpp"

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

extern const std::string_view checkConfigUsage;

struct CheckConfigOptions
{
    // The options passed on to cppcgovd, each as "--name", "VALUE".
    std::vector<std::string> passed;
    bool help = false;
};

// Parses the arguments after "check-config": --config FILE, --config-dir
// DIR and --root DIR (each at most once), --help. Throws UsageError.
[[nodiscard]] CheckConfigOptions parseCheckConfigArgs(
    std::span<const std::string_view> args);

// The cppcgovd to run: $CPPCGOVD when set and not empty, else the one
// installed beside this build (sbindir, compiled in).
[[nodiscard]] std::string cppcgovdPath();

// Runs the command: replaces this process with `cppcgovd --check-config
// ...`. Returns only for --help (0), a usage error (2), or when cppcgovd
// cannot be run (said on `err`; 127 when it does not exist, else 126).
int runCheckConfig(std::span<const std::string_view> args, std::ostream& out,
                   std::ostream& err);

} // namespace cppcgov::tools
