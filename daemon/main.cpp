// SPDX-License-Identifier: Apache-2.0
// cppcgovd: the CPPC governor daemon. See app.hpp for what it does and
// `cppcgovd --help` for how to run it.
#include "daemon/app.hpp"

#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

namespace
{

constexpr const char* usage =
    "Usage: cppcgovd [OPTION]...\n"
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
    "  --restore-only      put back what a previous run changed, then exit\n"
    "                      (1 when something could not be put back)\n"
    "  --help              this text\n";

} // namespace

int main(int argc, char** argv)
{
    cppcgov::daemon::Options options;
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i];
        auto value = [&](const char* name) -> const char* {
            if (i + 1 >= argc)
            {
                std::cerr << "cppcgovd: " << name << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (arg == "--help")
        {
            std::cout << usage;
            return 0;
        }
        if (arg == "--config")
        {
            options.config = value("--config");
        }
        else if (arg == "--config-dir")
        {
            options.configDir = value("--config-dir");
        }
        else if (arg == "--root")
        {
            options.root = value("--root");
        }
        else if (arg == "--state-dir")
        {
            options.stateDir = value("--state-dir");
        }
        else if (arg == "--bus-address")
        {
            options.busAddress = value("--bus-address");
        }
        else if (arg == "--restore-only")
        {
            options.restoreOnly = true;
        }
        else
        {
            std::cerr << "cppcgovd: unknown argument '" << arg << "'\n"
                      << usage;
            return 2;
        }
    }
    if (options.restoreOnly)
    {
        return cppcgov::daemon::restoreOnly(options);
    }
    return cppcgov::daemon::run(options);
}
