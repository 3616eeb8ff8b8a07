// SPDX-License-Identifier: Apache-2.0
// cppcgovd's configuration: the policy YAML (config/policy.yaml, installed
// as /etc/cppcgov/policy.yaml, plus the drop-ins in /etc/cppcgov/policy.d/)
// parsed and checked into plain structs. Nothing else in the daemon sees
// YAML: the policy gets policies::SchedutilConfig values, the hint registry
// ClientLimits, and so on.
//
// Every check happens here, before anything is built from the result: a
// file with any error (YAML syntax, a wrong type, a value out of range, an
// unknown or duplicate key, a malformed CPU list) is rejected whole with a
// ConfigError that names the file, line, column and key; checkConfigFiles()
// gives every error instead of the first (cppcgovd --check-config). At
// start-up an error is fatal: cppcgovd logs each one and exits. On reload the
// daemon keeps the configuration it is running with and logs the message
// (tryReload()).
//
// This file and config.cpp are the schema: which keys exist and what they
// mean. Reading the files and walking their YAML with positions is the
// generic reader's (yaml_reader.hpp); the error is config_error.hpp's.
#pragma once

#include "daemon/config_error.hpp"
#include "lib/cpu_list.hpp"
#include "policies/policy.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cppcgov::daemon
{

// Overrides over all files together. The limits on one file's size and
// nesting are the reader's (maxConfigBytes and maxNestingDepth,
// yaml_reader.hpp).
inline constexpr std::size_t maxOverrides = 4096;

// What one CPU runs: the policy and its knobs.
struct PolicySettings
{
    policies::PolicyKind kind = policies::PolicyKind::schedutil;
    policies::SchedutilConfig schedutil;
    policies::AutonomousConfig autonomous;

    bool operator==(const PolicySettings&) const = default;
};

// The schedutil keys an override sets; the others keep their value.
struct SchedutilOverrides
{
    std::optional<double> headroom;
    std::optional<std::uint32_t> rateLimitUpUs;
    std::optional<std::uint32_t> rateLimitDownUs;
    std::optional<policies::Floor> floor;
    std::optional<bool> boost;
    std::optional<std::uint32_t> burstUs;
    std::optional<std::uint32_t> minStepPercent;

    bool operator==(const SchedutilOverrides&) const = default;
};

// The autonomous keys an override sets; the others keep their value.
struct AutonomousOverrides
{
    std::optional<std::uint8_t> energyPreference;
    std::optional<std::uint8_t> energyPreferencePerformance;
    std::optional<std::uint8_t> energyPreferenceEfficiency;
    std::optional<std::uint32_t> activityWindowUs;

    bool operator==(const AutonomousOverrides&) const = default;
};

// The largest activity window CPPC can express: a 7-bit significand times
// a power of ten up to 10^7, in microseconds.
inline constexpr std::uint32_t maxActivityWindowUs = 127U * 10'000'000U;

// A set of CPU numbers, from a Linux cpulist such as "0-3,8,10-11" (CPUs
// 0 to cppc::maxCpus - 1, lib/cpu_list.hpp).
using CpuSet = cppc::CpuSet;

// The CPUs of one _PSD domain, by its domain number.
struct PsdDomain
{
    std::uint32_t number = 0;

    bool operator==(const PsdDomain&) const = default;
};

using Selector = std::variant<CpuSet, PsdDomain>;

// One entry of `overrides:`: settings for the CPUs it selects.
struct Override
{
    Selector selector;
    std::optional<policies::PolicyKind> kind;
    SchedutilOverrides schedutil;
    AutonomousOverrides autonomous;
    // Where the entry starts: "<file>:<line>", for messages.
    std::string origin;

    bool operator==(const Override&) const = default;
};

// Limits on what one D-Bus client (one unique bus name) may hold and do,
// and on what one user (one UID) may hold and do over all its connections.
struct ClientLimits
{
    std::uint32_t maxHandles = 64;
    std::uint32_t maxCallsPerSecond = 200;
    std::uint32_t maxHandlesPerUser = 256;
    std::uint32_t maxCallsPerSecondPerUser = 1000;

    bool operator==(const ClientLimits&) const = default;
};

// Where the daemon learns each CPU's load and which hinted tasks run where
// (observation.hpp).
enum class SamplingSource : std::uint8_t
{
    // The scheduler's events (BPF) where the program loads, procfs
    // otherwise.
    automatic,
    // The scheduler's events; the daemon does not start without them.
    bpf,
    // /proc/stat and /proc/<pid>/task/<tid>/stat.
    procfs,
};

// How the tick's thread is scheduled (tick_scheduling.hpp). The D-Bus
// thread is always an ordinary one.
enum class TickScheduling : std::uint8_t
{
    // SCHED_DEADLINE where the kernel grants it, else SCHED_FIFO, else an
    // ordinary thread (with a warning).
    automatic,
    // SCHED_DEADLINE or no start.
    deadline,
    // SCHED_FIFO or no start.
    fifo,
    // An ordinary (SCHED_OTHER) thread at the process's nice value.
    other,
};

// "auto", "deadline", "fifo", "other": the configuration's names.
[[nodiscard]] std::string_view tickSchedulingName(
    TickScheduling scheduling) noexcept;

// The `tick:` section. Read at start only.
struct TickConfig
{
    TickScheduling scheduling = TickScheduling::automatic;
    // SCHED_DEADLINE's runtime in each period (the sampling period), in
    // microseconds; 0: sized from the machine's CPU count
    // (tickRuntimeUs()).
    std::uint32_t runtimeUs = 0;
    // SCHED_FIFO's priority, for `fifo` and auto's fallback.
    std::uint32_t fifoPriority = 1;

    bool operator==(const TickConfig&) const = default;
};

// "auto", "bpf", "procfs": the configuration's names.
[[nodiscard]] std::string_view samplingSourceName(
    SamplingSource source) noexcept;

// Which machine the daemon drives (see machine.hpp).
enum class BackendKind : std::uint8_t
{
    // kernel when the firmware offers CPPC to the kernel (acpi_cppc in
    // sysfs); otherwise the daemon refuses to start (never the simulator:
    // that is asked for by name).
    automatic,
    simulator,
    kernel,
    registers,
};

// "auto", "simulator", "kernel", "registers": the configuration's names.
[[nodiscard]] std::string_view backendKindName(BackendKind kind) noexcept;

// The simulated machine's shape.
struct SimulatorConfig
{
    // A name from cppc::sim::layoutNames().
    std::string layout = "rd-n2";
    // 0: the layout's own number of CPUs; else 1 to 4096, only for the
    // layouts that scale (cppc::sim::layoutScales()).
    std::uint32_t cpus = 0;
    // A platform (power or thermal) limit on every simulated CPU's
    // delivered performance, in its abstract units (YAML platform_limit);
    // 0: none.
    std::uint32_t platformLimit = 0;

    bool operator==(const SimulatorConfig&) const = default;
};

// How the kernel backend makes the accesses that wait on hardware (writes
// of scaling_setspeed, reads of feedback_ctrs): see
// machines/kernel_machine.hpp.
struct AccessConfig
{
    // Worker threads at most; 0: every access on the loop thread, one
    // after the other (for comparison only). 0 to 1024.
    std::uint32_t threads = 64;
    // How long an access may take before its CPU counts as degraded, in
    // microseconds; 0: from the firmware's PCCT where it can be read, else
    // 10000. 0 to 10000000.
    std::uint32_t deadlineUs = 0;

    bool operator==(const AccessConfig&) const = default;
};

struct BackendConfig
{
    BackendKind type = BackendKind::automatic;
    SimulatorConfig simulator;
    AccessConfig access;

    bool operator==(const BackendConfig&) const = default;
};

// The metrics' file for node_exporter's textfile collector
// (textfile_writer.hpp).
struct MetricsConfig
{
    // Where cppcgovd.prom is written: an absolute path. Debian's
    // prometheus-node-exporter reads this one.
    std::string directory = "/var/lib/prometheus/node-exporter";
    // How often, in seconds; 0: no file (GetMetrics still answers).
    std::uint32_t intervalS = 15;

    bool operator==(const MetricsConfig&) const = default;
};

// The firmware checks (firmware_watch.hpp): the `sanity:` section.
struct SanityConfig
{
    // How long a busy CPU's request must hold steady before its delivered
    // performance is judged against it, in seconds.
    std::uint32_t followWindowS = 5;
    // How far, relative, delivered performance may stray from the request,
    // and the reference counter's measured rate from the one the table
    // implies.
    double tolerance = 0.2;
    // How many successive counter readings, taken while the CPU was busy,
    // a counter may stand still before it counts as stuck.
    std::uint32_t stuckReadings = 10;

    bool operator==(const SanityConfig&) const = default;
};

// The whole configuration. Default-constructed, it is what the shipped
// config/policy.yaml says (a unit test holds the two together).
struct GovernorConfig
{
    // For the CPUs that no override selects.
    PolicySettings defaults;
    // In the order read: later entries win where they overlap.
    std::vector<Override> overrides;
    std::uint32_t samplingPeriodUs = 1000;
    // How long the tick may sleep while the machine is quiet (tick_pace.hpp;
    // the scheduler's events only); 0, or no longer than the period: never
    // longer than the period.
    std::uint32_t idlePeriodUs = 4000;
    // How long the tick may sleep once ticks stopped writing though tasks
    // run (tick_pace.hpp); only new inputs end it. 0, or no longer than
    // the period: never longer than the period.
    std::uint32_t steadyPeriodUs = 4000;
    // Read at start only.
    SamplingSource samplingSource = SamplingSource::automatic;
    // Read at start only.
    TickConfig tick;
    ClientLimits clients;
    // The group whose members may clamp other users' tasks and set latency
    // requests. Only its syntax is checked here; whether it exists is the
    // daemon's question.
    std::string group = "cppcgov";
    // The machine the daemon drives.
    BackendConfig backend;
    MetricsConfig metrics;
    SanityConfig sanity;
    // The files read, in order.
    std::vector<std::string> sources;

    bool operator==(const GovernorConfig&) const = default;
};

// What checking the files found.
struct ConfigReport
{
    // What the files give; only what the daemon would run with when there
    // are no errors.
    GovernorConfig config;
    // Every error, in the order of the files read and, in a file, of their
    // places: each top-level key, each section's key and each list entry
    // is checked on its own, so that one mistake never hides another. A
    // file that cannot be read or is not valid YAML gives one error.
    std::vector<ConfigError> errors;
    // What is valid but surely not meant, one message each: entries of the
    // drop-in directory that are not read ("'policy.d/60-site.yml': not
    // read: ...").
    std::vector<std::string> warnings;
};

// parseConfig() without the throw: every error of one file's text.
[[nodiscard]] ConfigReport checkConfigText(std::string_view yamlText,
                                           const std::string& fileName);

// loadConfig() without the throw: reads the same files the same way and
// reports every error and warning (cppcgovd --check-config, and the
// daemon's start and reload). Throws only std::bad_alloc.
[[nodiscard]] ConfigReport checkConfigFiles(
    const std::filesystem::path& mainFile,
    const std::filesystem::path& dropInDir);

// Parses one file's text on top of the defaults. `fileName` is only used
// in messages and in `sources`. The text is one YAML document; an empty
// file (or one with only comments) sets nothing, and so does a section
// left empty (`schedutil:` with no keys). Throws ConfigError, and nothing
// else for any input (tests/fuzz/fuzz_config checks that): yaml-cpp's
// exceptions and running out of memory become ConfigErrors too. Input over
// maxConfigBytes is rejected, and so is input nested deeper than
// maxNestingDepth (yaml_reader.hpp's readYaml() says how that is
// estimated). With several errors, the one thrown is the first
// (checkConfigText() gives them all).
[[nodiscard]] GovernorConfig parseConfig(std::string_view yamlText,
                                         const std::string& fileName);

// Reads `mainFile`, then every `*.yaml` in `dropInDir` in byte order of
// their names (names starting with '.' are skipped), each on top of the
// ones before: a scalar key a later file sets replaces the earlier value,
// and a later file's overrides come after the earlier ones. A missing
// `dropInDir` is fine; a missing or unreadable `mainFile` is not. Every
// file read must be a regular file, or a symlink to one: a FIFO, socket,
// device or directory among them is an error naming it and its kind
// ("'policy.d/60-x.yaml': a FIFO, not a regular file"), found without
// opening a device or waiting on a FIFO, so that loading never blocks.
// Throws ConfigError: the first of checkConfigFiles()'s errors.
[[nodiscard]] GovernorConfig loadConfig(const std::filesystem::path& mainFile,
                                        const std::filesystem::path& dropInDir);

// The settings for `cpu`, whose _PSD domain is `domain` (none when the
// firmware gives it no _PSD): the defaults, then every override that
// selects the CPU (by CPU list) or its domain, in order, each changing the
// keys it sets.
[[nodiscard]] PolicySettings settingsFor(const GovernorConfig& config,
                                         std::uint32_t cpu,
                                         std::optional<std::uint32_t> domain);

struct ReloadResult
{
    // The new configuration, or `current` when the files had an error.
    GovernorConfig config;
    // Empty when the files were loaded; else why not: every ConfigError's
    // message, one per line, or an unexpected failure's.
    std::string error;
    // checkConfigFiles()'s warnings.
    std::vector<std::string> warnings;
};

// loadConfig() for a reload: reports a bad file instead of throwing, and
// then returns `current`, so that a running daemon goes on with the policy
// it has. Any other exception from loading is reported the same way.
[[nodiscard]] ReloadResult tryReload(const GovernorConfig& current,
                                     const std::filesystem::path& mainFile,
                                     const std::filesystem::path& dropInDir);

} // namespace cppcgov::daemon
