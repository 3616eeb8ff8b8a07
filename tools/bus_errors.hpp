// SPDX-License-Identifier: Apache-2.0
// What a failed D-Bus call to cppcgovd means, said as a sentence for the
// operator rather than as the bus's error name: the daemon is not running,
// the caller lacks the group the daemon asks for (named, with how to join
// it), the daemon did not answer in time, or it went away mid-call. The
// daemon's own errors keep its message and their name.
#pragma once

#include "args.hpp"
#include "bus_client.hpp"

#include <sdbus-c++/Error.h>

#include <cppcgov/client.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace cppcgov::tools
{

// "the system bus", or "the bus at ADDR" for `bus.address`.
[[nodiscard]] std::string busName(const BusOptions& bus);

// The group named in a NotPermitted message of cppcgovd: the text between
// the first "group '" and the next "'" ("... membership of group 'cppcgov'
// (permissions.group)" gives "cppcgov"); nothing when there is none.
[[nodiscard]] std::optional<std::string> groupInMessage(
    std::string_view message);

// The sentence for D-Bus error `name` with `message` from a call to
// cppcgovd on `bus`, made while doing `action` (the verb phrase a
// permission error ends with: "set resume-latency limits"). One line, no
// trailing newline.
[[nodiscard]] std::string describeBusError(
    std::string_view name, std::string_view message, const BusOptions& bus,
    std::string_view action);

// Writes "cppcgovctl: " and describeBusError() of `e` to `err`, with a
// newline.
void reportBusError(const sdbus::Error& e, const BusOptions& bus,
                    std::string_view action, std::ostream& err);

// As reportBusError, for a failed call of libcppcgov-client: its D-Bus
// error as a sentence, or its own message when it has no D-Bus name.
void reportBusError(const client::Error& e, const BusOptions& bus,
                    std::string_view action, std::ostream& err);

// Runs `body` (a D-Bus command's work on `bus`) and returns what it
// returns; an sdbus::Error or client::Error from it is reported
// (reportBusError) and gives exit status 1.
template <class Body>
int withBusErrors(const BusOptions& bus, std::string_view action,
                  std::ostream& err, const Body& body)
{
    try
    {
        return body();
    }
    catch (const sdbus::Error& e)
    {
        reportBusError(e, bus, action, err);
        return 1;
    }
    catch (const client::Error& e)
    {
        reportBusError(e, bus, action, err);
        return 1;
    }
}

// Connects to the command's own bus (`own`, from its --bus-address) or
// else to the global choice (`global`), and runs body(client) as
// withBusErrors() does.
template <class Body>
int onBus(const BusOptions& own, const BusOptions& global,
          std::string_view action, std::ostream& err, const Body& body)
{
    const BusOptions& chosen = own.address ? own : global;
    return withBusErrors(chosen, action, err, [&]() {
        BusClient client(chosen.address);
        return body(client);
    });
}

} // namespace cppcgov::tools
