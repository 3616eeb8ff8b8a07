// SPDX-License-Identifier: Apache-2.0
#include "daemon/config_check.hpp"

#include "daemon/machines.hpp"
#include "daemon/machines/simulator_machine.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/cpu_list.hpp"

#include <algorithm>
#include <exception>
#include <iterator>
#include <variant>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;

// "0-3,8" for a set of numbers.
std::string ranges(const std::set<std::uint32_t>& numbers)
{
    std::string out;
    for (auto it = numbers.begin(); it != numbers.end();)
    {
        const std::uint32_t first = *it;
        std::uint32_t last = first;
        for (++it; it != numbers.end() && last != UINT32_MAX && *it == last + 1;
             ++it)
        {
            last = *it;
        }
        out += (out.empty() ? "" : ",") + std::to_string(first) +
               (last == first ? "" : "-" + std::to_string(last));
    }
    return out;
}

std::string plural(std::size_t n, const char* one, const char* many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The CPUs the kernel counts present under `root`, into `facts`.
void presentCpus(const fs::path& root, MachineFacts& facts)
{
    const fs::path file =
        cppc::backend::sysPath(root, "devices/system/cpu/present");
    try
    {
        const std::vector<unsigned> cpus = cppc::backend::parseCpuList(
            cppc::backend::readAttribute(file), file);
        if (!cpus.empty())
        {
            facts.cpus = cpus.back() + 1;
            return;
        }
        facts.notes.push_back("'" + file.string() +
                              "' lists no CPUs: overrides by CPU are not "
                              "checked");
    }
    catch (const std::exception& e)
    {
        facts.notes.push_back(std::string("cannot tell this machine's CPUs (") +
                              e.what() + "): overrides by CPU are not checked");
    }
}

std::string cpuWarning(const Override& o, const CpuSet& cpus,
                       std::uint32_t count)
{
    CpuSet absent = cpus;
    for (std::uint32_t cpu = 0; cpu < count && cpu < cppc::maxCpus; ++cpu)
    {
        absent.reset(cpu);
    }
    if (absent.none())
    {
        return "";
    }
    const std::string have =
        count == 0 ? std::string("no CPUs")
                   : "CPUs 0" + (count == 1 ? std::string()
                                            : "-" + std::to_string(count - 1));
    const std::string list = cppc::formatCpuList(absent);
    const std::string what = absent.count() == 1
                                 ? "CPU " + list + " does not exist"
                                 : "CPUs " + list + " do not exist";
    return o.origin + ": overrides: " + what + " (this machine has " + have +
           ")" +
           (absent == cpus ? ": the override changes nothing"
                           : ", ignoring them");
}

std::string domainWarning(const Override& o, std::uint32_t domain,
                          const MachineFacts& facts)
{
    if (!facts.domains || facts.domains->contains(domain))
    {
        return "";
    }
    const std::string which =
        facts.domains->empty()
            ? "this machine has no _PSD domains" +
                  (facts.domainsWhy.empty() ? "" : ": " + facts.domainsWhy)
            : "this machine's domains are " + ranges(*facts.domains);
    return o.origin + ": overrides: domain " + std::to_string(domain) +
           " does not exist, the override changes nothing (" + which + ")";
}

} // namespace

MachineFacts factsOf(const Machine& machine)
{
    MachineFacts facts;
    const auto cpus =
        static_cast<std::uint32_t>(machine.topology().cpus.size());
    facts.cpus = cpus;
    std::set<std::uint32_t> domains;
    for (std::uint32_t cpu = 0; cpu < cpus; ++cpu)
    {
        if (const std::optional<std::uint32_t> d = machine.psdDomain(cpu))
        {
            domains.insert(*d);
        }
    }
    if (domains.empty())
    {
        facts.domainsWhy = "the " + machine.name() + " backend knows none";
    }
    facts.domains = std::move(domains);
    return facts;
}

MachineFacts probeFacts(const BackendConfig& config, const fs::path& root)
{
    MachineFacts facts;
    BackendKind kind = config.type;
    if (kind == BackendKind::automatic)
    {
        std::error_code ec;
        if (!fs::exists(cppcProbePath(root), ec))
        {
            facts.warnings.push_back(
                noCppcFound(root) + "; cppcgovd will not start");
            return facts;
        }
        kind = BackendKind::kernel;
    }
    switch (kind)
    {
        case BackendKind::simulator:
            try
            {
                const SimulatorMachine machine(config.simulator, root);
                return factsOf(machine);
            }
            catch (const std::exception& e)
            {
                facts.notes.push_back(
                    std::string("cannot build the simulated machine (") +
                    e.what() + "): overrides are not checked");
            }
            break;
        case BackendKind::kernel:
            presentCpus(root, facts);
            facts.domains.emplace();
            facts.domainsWhy = "the kernel backend knows none: cpufreq does "
                               "not publish _PSD domain numbers";
            break;
        default:
            presentCpus(root, facts);
            facts.notes.emplace_back(
                "overrides by domain are not checked: the registers "
                "backend reads the _PSD domains from the firmware's tables "
                "when it starts");
            break;
    }
    return facts;
}

std::vector<std::string> overrideWarnings(const GovernorConfig& config,
                                          const MachineFacts& facts)
{
    std::vector<std::string> out;
    for (const Override& o : config.overrides)
    {
        std::string line;
        if (const auto* cpus = std::get_if<CpuSet>(&o.selector))
        {
            if (facts.cpus)
            {
                line = cpuWarning(o, *cpus, *facts.cpus);
            }
        }
        else
        {
            line =
                domainWarning(o, std::get<PsdDomain>(o.selector).number, facts);
        }
        if (!line.empty())
        {
            out.push_back(std::move(line));
        }
    }
    return out;
}

std::string restartNote(const GovernorConfig& running,
                        const GovernorConfig& files)
{
    std::vector<std::string> keys;
    if (!(files.backend == running.backend))
    {
        keys.emplace_back("backend");
    }
    if (files.samplingSource != running.samplingSource)
    {
        keys.emplace_back("sampling.source");
    }
    if (!(files.tick == running.tick))
    {
        keys.emplace_back("tick");
    }
    if (keys.empty())
    {
        return "";
    }
    std::string list = keys[0];
    for (std::size_t i = 1; i < keys.size(); ++i)
    {
        list += (i + 1 == keys.size() ? " and " : ", ") + keys[i];
    }
    return list + " changes need a restart (systemctl restart cppcgovd)";
}

std::string checkLine(const ConfigError& error)
{
    std::string out = "error: " + error.file();
    if (error.line() != 0)
    {
        out += ":" + std::to_string(error.line()) + ":" +
               std::to_string(error.column());
    }
    out += ": ";
    if (!error.keyPath().empty())
    {
        out += error.keyPath() + ": ";
    }
    return out + error.problem();
}

int checkConfig(const fs::path& mainFile, const fs::path& dropInDir,
                const fs::path& root, std::ostream& out)
{
    const ConfigReport report = checkConfigFiles(mainFile, dropInDir);
    const MachineFacts facts = probeFacts(report.config.backend, root);
    std::vector<std::string> warnings = report.warnings;
    std::copy(facts.warnings.begin(), facts.warnings.end(),
              std::back_inserter(warnings));
    const std::vector<std::string> overrides =
        overrideWarnings(report.config, facts);
    std::copy(overrides.begin(), overrides.end(), std::back_inserter(warnings));
    for (const ConfigError& e : report.errors)
    {
        out << checkLine(e) << '\n';
    }
    for (const std::string& w : warnings)
    {
        out << "warning: " << w << '\n';
    }
    for (const std::string& n : facts.notes)
    {
        out << "note: " << n << '\n';
    }
    out << plural(report.config.sources.size(), "file", "files")
        << " read: " << plural(report.errors.size(), "error", "errors") << ", "
        << plural(warnings.size(), "warning", "warnings") << '\n';
    return report.errors.empty() ? 0 : 1;
}

} // namespace cppcgov::daemon
