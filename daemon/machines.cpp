// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines.hpp"

#include "daemon/machines/kernel_machine.hpp"
#include "daemon/machines/registers_machine.hpp"
#include "daemon/machines/simulator_machine.hpp"
#include "lib/backend/bounded_io.hpp"
#include "lib/backend/kernel.hpp"
#include "lib/backend/sysfs.hpp"

#include <array>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;

std::string quoted(const fs::path& path)
{
    return "'" + path.string() + "'";
}

BackendProbe probeKernel(const fs::path& root)
{
    std::error_code ec;
    const fs::path probe = cppcProbePath(root);
    if (fs::exists(probe, ec))
    {
        return {true, quoted(probe) + " exists"};
    }
    return {false, "no " + quoted(probe)};
}

// One line per backend. `auto` tries the probes in this order.
constexpr std::array<BackendEntry, 3> backendTable = {{
    {BackendKind::kernel, &KernelMachine::start, &probeKernel},
    {BackendKind::simulator, &SimulatorMachine::start, nullptr},
    {BackendKind::registers, &RegistersMachine::start, nullptr},
}};

// The backend `kind` stands for and, for automatic, why.
std::pair<BackendKind, std::string> resolve(BackendKind kind,
                                            const fs::path& root)
{
    if (kind != BackendKind::automatic)
    {
        return {kind, ""};
    }
    std::string why;
    for (const BackendEntry& b : backendTable)
    {
        if (b.probe == nullptr)
        {
            continue;
        }
        const BackendProbe p = b.probe(root);
        if (!p.why.empty())
        {
            why += (why.empty() ? "" : "; ") + p.why;
        }
        if (p.fits)
        {
            return {b.kind, why};
        }
    }
    throw std::runtime_error(noCppcFound(root));
}

} // namespace

std::span<const BackendEntry> backends() noexcept
{
    return backendTable;
}

fs::path cppcProbePath(const fs::path& root)
{
    return cppc::backend::sysPath(root, "devices/system/cpu/cpu0/acpi_cppc");
}

std::string noCppcFound(const fs::path& root)
{
    const fs::path tables =
        cppc::backend::sysPath(root, "firmware/acpi/tables");
    std::error_code ec;
    const bool haveTables = fs::is_directory(tables, ec);
    return "backend auto found no CPPC: it looked for " +
           quoted(cppcProbePath(root)) +
           " (cppc_cpufreq's sysfs, there when the firmware gives the CPUs a "
           "usable _CPC), which is missing, and the ACPI tables under " +
           quoted(tables) +
           (haveTables ? ", which are there" : ", missing too") +
           " (auto never drives the _CPC registers itself: backend: "
           "registers does). It never governs a simulated machine unasked: "
           "set backend: simulator to run the simulator on purpose";
}

BackendKind resolveBackend(BackendKind kind, const fs::path& root)
{
    return resolve(kind, root).first;
}

fs::path kernelStateFile(const fs::path& stateDir)
{
    return stateDir / "kernel.state";
}

std::unique_ptr<Machine> makeMachine(
    const BackendConfig& config, const fs::path& root, const fs::path& stateDir)
{
    const auto [kind, why] = resolve(config.type, root);
    std::string context = std::string(backendKindName(kind)) + " backend";
    if (config.type == BackendKind::automatic)
    {
        context += " (auto: " + why + ")";
    }
    for (const BackendEntry& b : backendTable)
    {
        if (b.kind != kind)
        {
            continue;
        }
        try
        {
            return b.start(config, root, stateDir);
        }
        catch (const std::exception& e)
        {
            throw std::runtime_error(context + ": " + e.what());
        }
    }
    throw std::logic_error(context + " is not registered");
}

cppc::backend::RestoreResult restoreMachineState(const fs::path& root,
                                                 const fs::path& stateDir)
{
    if (stateDir.empty())
    {
        return {};
    }
    // Bounded like the stop's: a file that no longer answers stays in the
    // state file instead of holding the start or the stop hook.
    const cppc::backend::BoundedIo io(cppc::backend::sysfsIo(),
                                      KernelMachine::restorePerAccess,
                                      KernelMachine::restoreBudget);
    cppc::backend::RestoreResult result =
        cppc::backend::KernelBackend::restoreFromFile(
            root, kernelStateFile(stateDir), io);
    result.merge(
        RegistersMachine::restoreFromFile(root, registersStateFile(stateDir)));
    return result;
}

} // namespace cppcgov::daemon
