// SPDX-License-Identifier: Apache-2.0
// Holding a cppcgovd handle from the command line, shared by `hint` and
// `latency`, on libcppcgov-client (cppcgov/client.hpp). A handle belongs
// to the bus connection of the client::Hint that asked for it, so
// cppcgovctl stays alive, watching that connection, for as long as the
// handle should last:
//   - for a task given by PID, until the task exits or cppcgovctl gets
//     SIGINT, SIGTERM or SIGHUP, then it releases the handle;
//   - for a CPU set, until one of those signals;
//   - for a command it starts, while the command runs: the command waits
//     until the request is granted (and never runs when it is refused),
//     then cppcgovctl waits for it and exits with its status.
#pragma once

#include "args.hpp"
#include "bus_errors.hpp"
#include "lib/backend/fd.hpp"

#include <sys/types.h>

#include <cppcgov/client.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

// The task whose exit ends a hold.
struct HeldTask
{
    std::uint32_t pid = 0;
    bool thread = false; // `pid` is a thread id
};

// A pidfd that becomes readable when `task` exits: a thread pidfd
// (PIDFD_THREAD) for a thread. An empty Fd when none can be opened (no
// such task, or a kernel without thread pidfds); the daemon's HandleEnded
// signal then tells instead.
[[nodiscard]] cppc::backend::Fd openTaskPidfd(const HeldTask& task);

// `request` sent to the bus of `bus` (the system bus without an address).
// Throws client::Error.
[[nodiscard]] client::Hint requestHint(cppcgov_request request,
                                       const BusOptions& bus);

// Calls `request` (which asks cppcgovd for a hint and returns it), writes
// "handle N" to `out`, then holds the hint: until `task` exits (when
// given), the daemon ends the handle, or SIGINT/SIGTERM/SIGHUP arrives.
// Releases the handle when it is still live. Returns 0, or 1 when cppcgovd
// or the bus went away (said on `err`). client::Error from `request` or
// from the release propagates.
int requestAndHold(const std::function<client::Hint()>& request,
                   const std::optional<HeldTask>& task, std::ostream& out,
                   std::ostream& err);

// `request` for the CPUs `cpus` (its target set here), held as
// requestAndHold() holds it. CPUs the machine does not have are named on
// `err` first, all of them (the daemon's refusal names only the first),
// and nothing is requested: returns 1 then.
int requestOnCpusAndHold(cppcgov_request request,
                         std::span<const std::uint32_t> cpus,
                         const BusOptions& bus, std::ostream& out,
                         std::ostream& err);

// Starts `command` (argv[0] looked up in PATH) in a child that waits
// before exec; calls `request` with the child's PID and a pidfd for it;
// when the request succeeds, lets the child run, services the bus until it
// exits, and returns its exit status (128 + the signal when a signal killed
// it; 127 when the command was not found, 126 when it could not be run).
// When `request` throws (client::Error), kills the child (which never runs
// the command) and lets the error propagate. SIGTERM and SIGHUP sent to
// cppcgovctl (and SIGINT sent with kill(2); a terminal's Ctrl-C reaches the
// command itself) are passed on to the command.
int runHolding(std::span<const std::string> command,
               const std::function<client::Hint(pid_t pid, int pidfd)>& request,
               std::ostream& err);

// At args[i] of a holding command's arguments: "--help" or "-h" sets
// `help`; "--" or the first non-option takes the rest of `args` (after
// "--") as `command`. Returns whether either happened (parsing then
// stops). Throws UsageError for "--" with nothing after it.
[[nodiscard]] bool takeHelpOrCommand(std::span<const std::string_view> args,
                                     std::size_t i, bool& help,
                                     std::vector<std::string>& command);

// Runs command `name`: parses `args` with `parse` (a UsageError is
// reported on `err`), prints `usage` on `out` for --help, or else returns
// run(chosen, options), `chosen` being the options' bus (`bus` when they
// name none). A D-Bus error is said as a sentence (bus_errors.hpp) whose
// permission case ends with `action`, and gives exit status 1.
template <typename Options, typename Parse, typename Run>
int runHandleCommand(std::string_view name, std::string_view usage,
                     std::string_view action,
                     std::span<const std::string_view> args,
                     const BusOptions& bus, std::ostream& out,
                     std::ostream& err, const Parse& parse, const Run& run)
{
    Options o;
    if (const auto done = parseCommand(name, usage, args, out, err, parse, o))
    {
        return *done;
    }
    const BusOptions& chosen = o.bus.address ? o.bus : bus;
    return withBusErrors(chosen, action, err, [&]() { return run(chosen, o); });
}

} // namespace cppcgov::tools
