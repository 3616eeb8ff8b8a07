// SPDX-License-Identifier: Apache-2.0
// The backends behind machine.hpp's seam, and what picks and starts one
// from the configuration's `backend:` section: a table with one
// registration per backend (machines.cpp), each a factory and, for the
// backends `auto` may pick, a probe. The backends, one per file:
//
//   machines/simulator_machine.hpp  a simulated CPPC machine (lib/sim)
//   machines/kernel_machine.hpp     cppc_cpufreq's userspace governor
//   machines/registers_machine.hpp  the _CPC registers through /dev/mem
//
// Start-up throws with a message naming what is missing or refused; the
// per-tick paths (sample, apply) return error codes, never allocate after
// their first call and build no paths.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machine.hpp"

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

// What `auto` checks: <root>/sys/devices/system/cpu/cpu0/acpi_cppc, which
// the kernel creates when the firmware gives CPU 0 a usable _CPC.
std::filesystem::path cppcProbePath(const std::filesystem::path& root);

// What a backend's probe says about the system under a root, for `auto`.
struct BackendProbe
{
    bool fits = false;
    // Why, for the start-up message ("'<path>' exists"); may be empty.
    std::string why;
};

// One registration: a backend kind, how to start it and, for the backends
// `auto` may pick, how to tell whether it fits.
struct BackendEntry
{
    BackendKind kind = BackendKind::simulator;
    // Starts the backend (see makeMachine for root and stateDir); throws
    // what its constructor throws.
    std::unique_ptr<Machine> (*start)(
        const BackendConfig& config, const std::filesystem::path& root,
        const std::filesystem::path& stateDir) = nullptr;
    // Null: never picked by `auto`.
    BackendProbe (*probe)(const std::filesystem::path& root) = nullptr;
};

// The registered backends; `auto` tries their probes in this order. Only
// the kernel has one (it fits when the firmware gave CPU 0 a usable
// _CPC): `auto` never picks the simulator, so that a real host is never
// governed by a simulated machine.
std::span<const BackendEntry> backends() noexcept;

// The backend `kind` stands for under `root`: for automatic, the first
// registered backend whose probe fits (kernel when cppcProbePath(root)
// exists), and when none does a std::runtime_error with noCppcFound(root);
// any other kind itself.
[[nodiscard]] BackendKind resolveBackend(BackendKind kind,
                                         const std::filesystem::path& root);

// Why `auto` refuses under `root`: what it looked for (cppcProbePath(),
// and whether the ACPI tables under <root>/sys/firmware/acpi/tables are
// there), ending "set backend: simulator to run the simulator on purpose".
[[nodiscard]] std::string noCppcFound(const std::filesystem::path& root);

// Where the kernel machine records what it changed: <stateDir>/kernel.state.
std::filesystem::path kernelStateFile(const std::filesystem::path& stateDir);

// Starts the machine `config` names, on the system under `root` ("/" in
// production). `stateDir` holds the state files through which a crashed
// run's changes are undone (empty: none are written). Throws
// std::runtime_error whose message starts with the backend's name (and,
// for auto, why it was chosen) and names what is missing or refused: a
// previous run's state file not restored first (see restoreMachineState),
// no cpufreq policy, no ACPI tables, registers in PCC, /dev/mem refused,
// an unreadable /proc/stat, ...
[[nodiscard]] std::unique_ptr<Machine> makeMachine(
    const BackendConfig& config, const std::filesystem::path& root,
    const std::filesystem::path& stateDir);

// Undoes what a run that did not stop cleanly changed, from the state files
// in `stateDir` (empty: none): KernelBackend::restoreFromFile() of
// kernelStateFile(), every access bounded (BoundedIo, with
// KernelMachine's restore limits: a policy whose files do not answer is
// left in the file), and RegistersMachine::restoreFromFile() of
// registersStateFile(). Empty when there was nothing to undo; a state file
// that is bad, unreadable or not all put back is kept (holding what is
// left) and reported as failures. Throws only std::bad_alloc.
[[nodiscard]] cppc::backend::RestoreResult restoreMachineState(
    const std::filesystem::path& root, const std::filesystem::path& stateDir);

} // namespace cppcgov::daemon
