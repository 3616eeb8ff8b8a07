// SPDX-License-Identifier: Apache-2.0
// cppcgovd as a whole: one boost::asio::io_context on one thread drives the
// bus, the sampling tick, the pidfd watches, the signals and the systemd
// watchdog; nothing in it blocks.
//
// Start: undo a crashed run's changes (state files in the state directory),
// load the configuration, build the machine, register the D-Bus object,
// own org.cppcgov.Governor1, arm the first tick, then tell systemd READY=1.
// The tick runs on absolute CLOCK_MONOTONIC deadlines (each one period after
// the previous deadline, never after the previous run), with the thread's
// timer slack at 1 ns; a tick that finds itself more than a period late
// skips the deadlines it missed rather than running a burst.
// SIGHUP re-reads the configuration (a bad file keeps the running one;
// what is read at start only, the backend and sampling.source, is kept
// and the log and the PendingRestart property say it needs a restart);
// SIGTERM and SIGINT end every handle, put back what the daemon changed and
// stop. The state directory is locked (flock on <stateDir>/lock) for the
// daemon's life: one daemon per state directory.
#pragma once

#include "lib/backend/restore_result.hpp"

#include <filesystem>
#include <string>

#ifndef CPPCGOV_CONFIG_DIR
#define CPPCGOV_CONFIG_DIR "/etc/cppcgov"
#endif

namespace cppcgov::daemon
{

struct Options
{
    std::filesystem::path config = CPPCGOV_CONFIG_DIR "/policy.yaml";
    std::filesystem::path configDir = CPPCGOV_CONFIG_DIR "/policy.d";
    // Prefix of every sysfs and procfs path the machine and the latency
    // arbiter use, and of the metrics' directory ("/" in production; a
    // fake tree in tests).
    std::filesystem::path root = "/";
    // Where the crash-recovery state lives.
    std::filesystem::path stateDir = "/run/cppcgov";
    // Empty: the system bus.
    std::string busAddress;
    // Only undo a previous run's changes, then exit.
    bool restoreOnly = false;
};

// Undoes what a previous run recorded in `options.stateDir` (the latency and
// cpufreq state files), logging every entry of the result at its severity.
// A state file whose values are not all back is kept, holding exactly
// those.
cppc::backend::RestoreResult restoreState(const Options& options);

// cppcgovd --restore-only: restoreState() under the state directory's lock
// (refused while a daemon runs with it). Returns the exit status: 1 when
// anything is left, with a last message saying what and how to fix it.
int restoreOnly(const Options& options);

// Runs the daemon until SIGTERM or SIGINT. Returns the exit status: 0
// after a clean stop, 1 when start-up failed (including a previous run's
// changes that cannot all be put back: it does not start over them), the
// bus was lost, or the stop could not put everything back (the state
// files then hold what is left).
int run(const Options& options);

} // namespace cppcgov::daemon
