// SPDX-License-Identifier: Apache-2.0
// cppcgovd: the CPPC governor daemon. See app.hpp for what it does and
// `cppcgovd --help` for how to run it.
#include "daemon/app.hpp"
#include "daemon/config_check.hpp"
#include "daemon/log.hpp"

#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#ifndef CPPCGOV_VERSION
#define CPPCGOV_VERSION "unknown"
#endif

namespace
{

constexpr const char* usage =
    "Usage: cppcgovd [OPTION]...\n"
    "       cppcgovd --check-config [--config FILE] [--config-dir DIR] "
    "[--root DIR]\n"
    "       cppcgovd --restore-only [--state-dir DIR] [--root DIR]\n"
    "The CPPC CPU-frequency governor daemon: D-Bus service\n"
    "org.cppcgov.Governor1 on the system bus.\n"
    "\n"
    "  --config FILE       the policy (default " CPPCGOV_CONFIG_DIR
    "/policy.yaml)\n"
    "  --config-dir DIR    its drop-ins (default " CPPCGOV_CONFIG_DIR
    "/policy.d)\n"
    "  --root DIR          prefix of every sysfs and procfs path (default /)\n"
    "  --state-dir DIR     crash-recovery state (default /run/cppcgov)\n"
    "  --bus-address ADDR  serve on this D-Bus address instead of the\n"
    "                      system bus\n"
    "  --log-level LEVEL   error, warning, notice, info (default) or debug:\n"
    "                      less severe lines are not written\n"
    "  -v, --verbose       --log-level debug\n"
    "  --check-config      check the policy and its drop-ins as the daemon\n"
    "                      would read them, print every error and warning,\n"
    "                      then exit (0: no errors, 1: errors); touches\n"
    "                      neither the bus nor the machine\n"
    "  --restore-only      put back what a previous run changed, then exit\n"
    "                      (1 when something could not be put back)\n"
    "  --version           print the version and exit\n"
    "  --help              this text\n";

// A command-line mistake: its message, for usageError().
class UsageError : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

struct CommandLine
{
    cppcgov::daemon::Options options;
    cppcgov::daemon::log::Level level = cppcgov::daemon::log::Level::info;
    bool checkConfig = false;
    bool help = false;
    bool version = false;
    // Options --check-config does not take, for its usage error.
    std::string daemonOnly;
};

// Parses argv; throws UsageError. Values come as `--name VALUE` or
// `--name=VALUE`.
CommandLine parse(int argc, char** argv)
{
    CommandLine c;
    for (int i = 1; i < argc; ++i)
    {
        std::string_view arg = argv[i];
        std::optional<std::string> inlineValue;
        if (arg.starts_with("--"))
        {
            if (const std::size_t eq = arg.find('='); eq != arg.npos)
            {
                inlineValue = std::string(arg.substr(eq + 1));
                arg = arg.substr(0, eq);
            }
        }
        const auto value = [&]() -> std::string {
            if (inlineValue)
            {
                return *inlineValue;
            }
            if (i + 1 >= argc)
            {
                throw UsageError(
                    "option '" + std::string(arg) + "' needs a value");
            }
            return argv[++i];
        };
        const auto flag = [&]() {
            if (inlineValue)
            {
                throw UsageError(
                    "option '" + std::string(arg) + "' takes no value");
            }
        };
        if (arg == "--help")
        {
            flag();
            c.help = true;
        }
        else if (arg == "--version")
        {
            flag();
            c.version = true;
        }
        else if (arg == "--config")
        {
            c.options.config = value();
        }
        else if (arg == "--config-dir")
        {
            c.options.configDir = value();
        }
        else if (arg == "--root")
        {
            c.options.root = value();
        }
        else if (arg == "--state-dir")
        {
            c.options.stateDir = value();
            c.daemonOnly = arg;
        }
        else if (arg == "--bus-address")
        {
            c.options.busAddress = value();
            c.daemonOnly = arg;
        }
        else if (arg == "--log-level")
        {
            const std::string name = value();
            const auto level = cppcgov::daemon::log::parseLevel(name);
            if (!level)
            {
                throw UsageError("unknown log level '" + name +
                                 "' (expected error, warning, notice, info "
                                 "or debug)");
            }
            c.level = *level;
        }
        else if (arg == "-v" || arg == "--verbose")
        {
            flag();
            c.level = cppcgov::daemon::log::Level::debug;
        }
        else if (arg == "--check-config")
        {
            flag();
            c.checkConfig = true;
        }
        else if (arg == "--restore-only")
        {
            flag();
            c.options.restoreOnly = true;
            c.daemonOnly = arg;
        }
        else
        {
            throw UsageError((arg.starts_with('-') ? "unknown option '"
                                                   : "unexpected argument '") +
                             std::string(arg) + "'");
        }
    }
    if (c.checkConfig && !c.daemonOnly.empty())
    {
        throw UsageError("--check-config does not take " + c.daemonOnly);
    }
    return c;
}

} // namespace

int main(int argc, char** argv)
{
    CommandLine c;
    try
    {
        c = parse(argc, argv);
    }
    catch (const UsageError& e)
    {
        std::cerr << "cppcgovd: " << e.what()
                  << "\nTry 'cppcgovd --help' for more information.\n";
        return 2;
    }
    if (c.help)
    {
        std::cout << usage;
        return 0;
    }
    if (c.version)
    {
        std::cout << "cppcgovd " CPPCGOV_VERSION "\n";
        return 0;
    }
    cppcgov::daemon::log::configureForStderr(c.level);
    if (c.checkConfig)
    {
        try
        {
            return cppcgov::daemon::checkConfig(
                c.options.config, c.options.configDir, c.options.root,
                std::cout);
        }
        catch (const std::exception& e)
        {
            std::cerr << "cppcgovd: checking the configuration failed: "
                      << e.what() << '\n';
            return 1;
        }
    }
    if (c.options.restoreOnly)
    {
        return cppcgov::daemon::restoreOnly(c.options);
    }
    return cppcgov::daemon::run(c.options);
}
