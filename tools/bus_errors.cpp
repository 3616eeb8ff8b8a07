// SPDX-License-Identifier: Apache-2.0
#include "bus_errors.hpp"

#include "daemon/dbus/governor1.hpp"

#include <array>

namespace cppcgov::tools
{
namespace
{

constexpr std::string_view busError = "org.freedesktop.DBus.Error.";
constexpr std::string_view daemonError = "org.cppcgov.Error.";

bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

// `name` is org.freedesktop.DBus.Error.<one of `members`>.
template <std::size_t N>
bool isBusError(std::string_view name,
                const std::array<std::string_view, N>& members)
{
    if (!name.starts_with(busError))
    {
        return false;
    }
    name.remove_prefix(busError.size());
    for (const std::string_view m : members)
    {
        if (name == m)
        {
            return true;
        }
    }
    return false;
}

std::string notPermitted(std::string_view message, std::string_view action)
{
    const std::optional<std::string> group = groupInMessage(message);
    if (!group)
    {
        return "only root and the members of the group in permissions.group "
               "may " +
               std::string(action) +
               " (cppcgovd said: " + std::string(message) + ")";
    }
    if (contains(message, "which does not exist"))
    {
        return "only root may " + std::string(action) + ": the group '" +
               *group +
               "' (permissions.group) does not exist on this machine; create "
               "it (systemd-sysusers does, for the packaged cppcgov.conf) "
               "and restart cppcgovd";
    }
    return "only members of group '" + *group + "' (and root) may " +
           std::string(action) + "; join it with `usermod -aG " + *group +
           " USER` and log in again";
}

} // namespace

std::string busName(const BusOptions& bus)
{
    return bus.address ? "the bus at " + *bus.address : "the system bus";
}

std::optional<std::string> groupInMessage(std::string_view message)
{
    constexpr std::string_view opening = "group '";
    const std::size_t start = message.find(opening);
    if (start == std::string_view::npos)
    {
        return std::nullopt;
    }
    const std::size_t first = start + opening.size();
    const std::size_t end = message.find('\'', first);
    if (end == std::string_view::npos || end == first)
    {
        return std::nullopt;
    }
    return std::string(message.substr(first, end - first));
}

std::string describeBusError(std::string_view name, std::string_view message,
                             const BusOptions& bus, std::string_view action)
{
    const std::string where = busName(bus);
    const std::string service = cppcgov::dbus::serviceName;
    if (isBusError(name, std::array<std::string_view, 2>{"ServiceUnknown",
                                                         "NameHasNoOwner"}) ||
        contains(message, "not provided by any .service files"))
    {
        return "cppcgovd is not running: nothing owns " + service + " on " +
               where +
               (bus.address ? ""
                            : " (start it with `systemctl start cppcgovd`)");
    }
    if (isBusError(name,
                   std::array<std::string_view, 2>{"Timeout", "TimedOut"}) ||
        (isBusError(name, std::array<std::string_view, 1>{"NoReply"}) &&
         contains(message, "timed out")))
    {
        return "cppcgovd did not answer in time (it owns " + service + " on " +
               where +
               " but may be stuck or overloaded; its log says more: "
               "`journalctl -u cppcgovd`)";
    }
    if (isBusError(name, std::array<std::string_view, 1>{"NoReply"}))
    {
        return "cppcgovd went away before it answered (it stopped or "
               "crashed mid-call; `systemctl status cppcgovd` says why)";
    }
    if (isBusError(name, std::array<std::string_view, 1>{"Disconnected"}))
    {
        return "the connection to " + where + " broke before cppcgovd answered";
    }
    if (isBusError(name,
                   std::array<std::string_view, 3>{"FileNotFound", "NoServer",
                                                   "NoSocket"}) ||
        contains(message, "Failed to open") ||
        contains(message, "Failed to connect"))
    {
        return "cannot connect to " + where + " (" + std::string(message) +
               ")" + (bus.address ? "" : ": is dbus running?");
    }
    if (isBusError(name, std::array<std::string_view, 1>{"AccessDenied"}))
    {
        return "the policy of " + where + " does not let this user call " +
               service + " (" + std::string(message) + ")";
    }
    if (isBusError(name, std::array<std::string_view, 4>{
                             "UnknownObject", "UnknownInterface",
                             "UnknownMethod", "UnknownProperty"}))
    {
        return "what owns " + service + " on " + where +
               " is not the cppcgovd this cppcgovctl knows (" +
               std::string(message) + "): are both of the same version?";
    }
    if (name == cppcgov::dbus::error::notPermitted)
    {
        return notPermitted(message, action);
    }
    if (name.starts_with(daemonError))
    {
        return std::string(message) + " (" + std::string(name) + ")";
    }
    return std::string(name) + ": " + std::string(message);
}

void reportBusError(const sdbus::Error& e, const BusOptions& bus,
                    std::string_view action, std::ostream& err)
{
    err << "cppcgovctl: "
        << describeBusError(e.getName(), e.getMessage(), bus, action) << "\n";
}

void reportBusError(const client::Error& e, const BusOptions& bus,
                    std::string_view action, std::ostream& err)
{
    err << "cppcgovctl: "
        << (e.name().empty() && e.busMessage().find("Failed to connect") ==
                                    std::string::npos
                ? e.busMessage()
                : describeBusError(e.name(), e.busMessage(), bus, action))
        << "\n";
}

} // namespace cppcgov::tools
