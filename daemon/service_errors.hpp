// SPDX-License-Identifier: Apache-2.0
// How the service's handlers fail: every failure becomes a named
// org.cppcgov.Error.* (daemon/dbus/governor1.hpp) with a message, and no
// other exception reaches sd-bus. The names for the handle table's
// (handles.hpp) and the latency arbiter's errors, and replies that never
// throw.
#pragma once

#include "daemon/dbus/governor1.hpp"

#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>

namespace cppcgov::daemon
{

// Throws sdbus::Error `name` with `message`.
[[noreturn]] void fail(const char* name, const std::string& message);

// Throws the D-Bus error for a failed call of the handle table about
// `what` (a task, "process 42"); `denied` is the message for notPermitted.
[[noreturn]] void failHandle(std::error_code ec, const std::string& what,
                             const std::string& denied);

// The NotPermitted message for `what` ("a latency request") asked by a
// caller who is neither root nor in the group `group` (permissions.group):
// "a latency request needs root or membership of group 'cppcgov'
// (permissions.group)", with ", which does not exist" when `exists` is
// false. Clients find the group's name in the first "group '...'".
[[nodiscard]] std::string needsPrivilege(const std::string& what,
                                         const std::string& group, bool exists);

// Throws the D-Bus error for a failed LatencyArbiter::add().
[[noreturn]] void failLatency(std::error_code ec);

// Runs a handler's body and lets only sdbus::Error out of it: sdbus-c++
// 1.2 turns those into D-Bus errors, anything else would unwind through
// sd-bus's C frames.
template <class Body>
auto guarded(const char* method, Body&& body) -> decltype(body())
{
    try
    {
        return body();
    }
    catch (const sdbus::Error&)
    {
        throw;
    }
    catch (const std::bad_alloc&)
    {
        fail(cppcgov::dbus::error::failed,
             std::string(method) + ": out of memory");
    }
    catch (const std::exception& e)
    {
        fail(cppcgov::dbus::error::failed,
             std::string(method) + ": " + e.what());
    }
    catch (...)
    {
        fail(cppcgov::dbus::error::failed,
             std::string(method) + ": unexpected failure");
    }
}

// Sends `error` as the reply to `result`. Never throws: a reply that cannot
// be sent is dropped (the caller left).
template <class... R>
void replyError(const sdbus::Result<R...>& result, const sdbus::Error& error)
{
    try
    {
        result.returnError(error);
    }
    catch (...)
    {
        // The caller cannot be answered.
    }
}

// Replies to `result` with what `fn` returns (a std::tuple of the
// results for a method with several), or with the error it throws (see
// guarded()). Never throws.
template <class... R, class Fn>
void replyWith(const char* method, const sdbus::Result<R...>& result, Fn&& fn)
{
    try
    {
        if constexpr (sizeof...(R) == 1)
        {
            result.returnResults(guarded(method, std::forward<Fn>(fn)));
        }
        else
        {
            std::apply(
                [&result](const auto&... values) {
                result.returnResults(values...);
                },
                guarded(method, std::forward<Fn>(fn)));
        }
    }
    catch (const sdbus::Error& e)
    {
        replyError(result, e);
    }
    catch (...)
    {
        // The caller cannot be answered.
    }
}

} // namespace cppcgov::daemon
