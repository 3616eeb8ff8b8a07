// SPDX-License-Identifier: Apache-2.0
#include "check_config_command.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#ifndef CPPCGOV_CPPCGOVD_PATH
#error "the build defines CPPCGOV_CPPCGOVD_PATH (tools/meson.build)"
#endif

namespace cppcgov::tools
{

const std::string_view checkConfigUsage =
    "usage: cppcgovctl check-config [--config FILE] [--config-dir DIR] "
    "[--root DIR]\n"
    "\n"
    "Checks the policy file and its drop-ins as cppcgovd would read them,\n"
    "without a running daemon, by running `cppcgovd --check-config`: every\n"
    "error as 'error: FILE:LINE:COLUMN: KEY: PROBLEM', every warning (files\n"
    "in the drop-in directory that are ignored, overrides naming CPUs or\n"
    "domains this machine lacks), then a summary. Exit status 0 when there\n"
    "are no errors, 1 when there are, 2 for a usage error.\n"
    "\n"
    "  --config FILE      the main policy file (default\n"
    "                     /etc/cppcgov/policy.yaml)\n"
    "  --config-dir DIR   the drop-in directory (default: policy.d beside\n"
    "                     the main file)\n"
    "  --root DIR         the machine's /sys and /proc under DIR, for the\n"
    "                     CPUs and domains overrides may name\n"
    "\n"
    "The CPPCGOVD environment variable names another cppcgovd to run.\n";

CheckConfigOptions parseCheckConfigArgs(std::span<const std::string_view> args)
{
    constexpr std::array<std::string_view, 3> names{"--config", "--config-dir",
                                                    "--root"};
    CheckConfigOptions o;
    std::array<bool, names.size()> seen{};
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h")
        {
            o.help = true;
            return o;
        }
        bool taken = false;
        for (std::size_t n = 0; n < names.size() && !taken; ++n)
        {
            if (const auto v = optionValue(args, i, names[n]))
            {
                if (v->empty())
                {
                    throw UsageError(
                        std::string(names[n]) + " needs a non-empty value");
                }
                if (seen[n])
                {
                    throw UsageError(std::string(names[n]) + " is given twice");
                }
                seen[n] = true;
                o.passed.emplace_back(names[n]);
                o.passed.emplace_back(*v);
                taken = true;
            }
        }
        if (!taken)
        {
            throw UsageError((a.starts_with("-") ? "unknown option '"
                                                 : "unexpected argument '") +
                             std::string(a) + "'");
        }
    }
    return o;
}

std::string cppcgovdPath()
{
    const char* env = std::getenv("CPPCGOVD");
    return env != nullptr && *env != '\0' ? env : CPPCGOV_CPPCGOVD_PATH;
}

int runCheckConfig(std::span<const std::string_view> args, std::ostream& out,
                   std::ostream& err)
{
    CheckConfigOptions o;
    if (const auto done = parseCommand("check-config", checkConfigUsage, args,
                                       out, err, parseCheckConfigArgs, o))
    {
        return *done;
    }
    const std::string path = cppcgovdPath();
    std::vector<std::string> words{path, "--check-config"};
    words.insert(words.end(), o.passed.begin(), o.passed.end());
    std::vector<char*> argv;
    argv.reserve(words.size() + 1);
    for (std::string& w : words)
    {
        argv.push_back(w.data());
    }
    argv.push_back(nullptr);
    out.flush();
    err.flush();
    std::cout.flush();
    ::execv(path.c_str(), argv.data());
    const int e = errno;
    err << "cppcgovctl: cannot run " << path << ": " << std::strerror(e)
        << " (the CPPCGOVD environment variable names another cppcgovd)\n";
    return e == ENOENT ? 127 : 126;
}

} // namespace cppcgov::tools
