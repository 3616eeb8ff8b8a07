// SPDX-License-Identifier: Apache-2.0
#include "service_errors.hpp"

#include "daemon/handles.hpp"
#include "daemon/latency_arbiter.hpp"
#include "lib/error.hpp"

namespace cppcgov::daemon
{

namespace error = cppcgov::dbus::error;

void fail(const char* name, const std::string& message)
{
    throw sdbus::Error(name, message);
}

void failHandle(std::error_code ec, const std::string& what,
                const std::string& denied)
{
    if (ec.category() == handleErrorCategory())
    {
        switch (static_cast<HandleErrc>(ec.value()))
        {
            case HandleErrc::invalidClamp:
            case HandleErrc::notAPidfd:
                fail(error::invalidArgument, ec.message());
            case HandleErrc::noSuchTask:
                fail(error::noSuchTask, what + ": no such task, or it exited");
            case HandleErrc::notAProcess:
                fail(error::invalidArgument,
                     what + " is a thread, not a process: clamp it with "
                            "thread=true");
            case HandleErrc::threadUnsupported:
                fail(error::notSupported, what + ": " + ec.message());
            case HandleErrc::notPermitted:
                fail(error::notPermitted, denied);
            case HandleErrc::connectionFull:
            case HandleErrc::userFull:
            case HandleErrc::tableFull:
            case HandleErrc::connectionRate:
            case HandleErrc::userRate:
                fail(error::limitExceeded, ec.message());
            case HandleErrc::noSuchHandle:
                fail(error::noSuchHandle, ec.message());
            case HandleErrc::ok:
            case HandleErrc::unknownCaller:
                break;
        }
    }
    fail(error::failed, what + ": " + ec.message());
}

std::string needsPrivilege(const std::string& what, const std::string& group,
                           bool exists)
{
    return what + " needs root or membership of group '" + group +
           "' (permissions.group" + (exists ? ")" : ", which does not exist)");
}

void failLatency(std::error_code ec)
{
    if (ec == cppc::Errc::valueOutOfRange)
    {
        fail(error::invalidArgument,
             "latency_us must be at most " + std::to_string(maxLatencyUs));
    }
    if (ec == cppc::Errc::noSuchCpu)
    {
        fail(error::invalidArgument,
             "a CPU in the set does not exist or has no "
             "power/pm_qos_resume_latency_us");
    }
    if (ec == std::errc::invalid_argument)
    {
        fail(error::invalidArgument, "the CPU set is empty");
    }
    fail(error::failed, "setting the resume latency: " + ec.message());
}

} // namespace cppcgov::daemon
