// SPDX-License-Identifier: Apache-2.0
// What is valid in the configuration but surely wrong on this machine:
// overrides naming CPUs or _PSD domains it lacks; and what a reload
// cannot apply (restartNote()). The daemon logs these at
// start and on reload (from the machine it runs); `cppcgovd
// --check-config` reports them with every error and warning of the files,
// learning the machine the way the daemon would under --root but without
// starting a backend (nothing is written, no bus is touched).
#pragma once

#include "daemon/config.hpp"
#include "daemon/machine.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

// The CPUs and _PSD domains the overrides are checked against.
struct MachineFacts
{
    // The CPUs are 0 to cpus - 1; nothing when they could not be learnt.
    std::optional<std::uint32_t> cpus;
    // The _PSD domain numbers; nothing when they could not be learnt. An
    // empty set: the backend knows of none (domainsWhy says why).
    std::optional<std::set<std::uint32_t>> domains;
    std::string domainsWhy;
    // What could not be learnt, one sentence each.
    std::vector<std::string> notes;
    // What the probe found surely wrong (backend auto without CPPC).
    std::vector<std::string> warnings;
};

// The running machine's CPUs (its topology) and domains (psdDomain()).
[[nodiscard]] MachineFacts factsOf(const Machine& machine);

// The machine `config` would drive under `root`, without starting it:
// the simulator's layout is built (it touches nothing); for kernel and
// registers the CPUs are those of <root>/sys/devices/system/cpu/present
// (the kernel backend knows no _PSD domains; the registers backend's are
// in firmware tables that only its start reads: a note says so). auto
// resolves as makeMachine() would; when it would refuse, a warning says
// so. Throws only std::bad_alloc.
[[nodiscard]] MachineFacts probeFacts(const BackendConfig& config,
                                      const std::filesystem::path& root);

// One warning per override that names a CPU or domain `facts` lacks:
// "<file>:<line>: overrides: CPUs 64-99 do not exist (this machine has
// CPUs 0-63), ignoring them".
[[nodiscard]] std::vector<std::string> overrideWarnings(
    const GovernorConfig& config, const MachineFacts& facts);

// What `files` set that a daemon running `running` does not apply on
// reload because it is read at start only (backend, sampling.source):
// "backend changes need a restart (systemctl restart cppcgovd)", "backend
// and sampling.source changes need ...", or empty when nothing.
[[nodiscard]] std::string restartNote(const GovernorConfig& running,
                                      const GovernorConfig& files);

// `error: ` + FILE:LINE:COLUMN: KEY: PROBLEM (parts that do not apply
// left out, as ConfigError::what() does, with the file not quoted).
[[nodiscard]] std::string checkLine(const ConfigError& error);

// cppcgovd --check-config: checkConfigFiles(), probeFacts() and
// overrideWarnings(), printed on `out` one per line (`error: `,
// `warning: `, `note: `) and then a summary line. Returns the exit
// status: 0 without errors (warnings alone too), 1 with errors.
int checkConfig(const std::filesystem::path& mainFile,
                const std::filesystem::path& dropInDir,
                const std::filesystem::path& root, std::ostream& out);

} // namespace cppcgov::daemon
