// SPDX-License-Identifier: Apache-2.0
// libcppcgov-client without a bus: every malformed request is refused with
// EINVAL (or EBADF) and a message before anything is sent, *ret stays as it
// was, a NULL error is allowed, the functions take NULL objects, a bus
// that cannot be reached is said with its address; and the C++ wrapper's
// Error and Hint. Built as C++17 (tests/unit/meson.build), the standard
// the wrapper promises applications. What needs cppcgovd is in
// tests/integration/client_test.py.
#include <cppcgov/client.h>

#include <cppcgov/client.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

namespace
{

cppcgov_hint* const untouched = reinterpret_cast<cppcgov_hint*>(0x1);

// `request` is refused with `code`, its message containing `part`, and
// *ret untouched.
void expectRefused(const cppcgov_request& request, int code,
                   const std::string& part)
{
    cppcgov_hint* hint = untouched;
    cppcgov_error error{};
    EXPECT_EQ(cppcgov_hint_request(&request, &hint, &error), code);
    EXPECT_EQ(hint, untouched);
    EXPECT_EQ(error.code, code);
    EXPECT_STREQ(error.name, "");
    EXPECT_NE(std::string(error.message).find(part), std::string::npos)
        << error.message;
    EXPECT_STREQ(error.description, error.message);
    // Without a place for the error: the same answer.
    EXPECT_EQ(cppcgov_hint_request(&request, &hint, nullptr), code);
}

// An enum field set to a value outside its enumerators, as C code may.
template <class Enum>
void setRaw(Enum& field, int value)
{
    static_assert(sizeof(Enum) == sizeof(int));
    std::memcpy(&field, &value, sizeof(value));
}

cppcgov_request clamp(std::uint16_t min, std::uint16_t max)
{
    cppcgov_request r{};
    r.kind = CPPCGOV_CLAMP;
    r.target = CPPCGOV_TARGET_PROCESS;
    r.util_min = min;
    r.util_max = max;
    return r;
}

TEST(ClientRequest, ClampBoundsOutOfRange)
{
    expectRefused(clamp(512, 256), -EINVAL, "512..256");
    expectRefused(clamp(0, 1025), -EINVAL, "0..1025");
    expectRefused(clamp(1025, 1025), -EINVAL, "within 0..1024");
}

TEST(ClientRequest, TargetsThatDoNotFitTheKind)
{
    cppcgov_request r = clamp(0, 1024);
    const std::uint32_t cpu = 0;
    r.target = CPPCGOV_TARGET_CPUS;
    r.cpus = &cpu;
    r.n_cpus = 1;
    expectRefused(r, -EINVAL, "not a CPU set");

    cppcgov_request l{};
    l.kind = CPPCGOV_LATENCY;
    l.target = CPPCGOV_TARGET_THREAD;
    expectRefused(l, -EINVAL, "a process or a CPU set");
    l.target = CPPCGOV_TARGET_PIDFD;
    l.pidfd = 0;
    expectRefused(l, -EINVAL, "a process or a CPU set");
}

TEST(ClientRequest, MalformedFields)
{
    cppcgov_request r = clamp(0, 1024);
    r.pid = -5;
    expectRefused(r, -EINVAL, "pid -5");

    r = clamp(0, 1024);
    r.target = CPPCGOV_TARGET_PIDFD;
    r.pidfd = -1;
    expectRefused(r, -EBADF, "pidfd -1");

    r = clamp(0, 1024);
    r.reserved[2] = 1;
    expectRefused(r, -EINVAL, "reserved");

    r = clamp(0, 1024);
    r.kind = CPPCGOV_ENERGY;
    expectRefused(r, -EINVAL, "needs its preference");
    r.preference = "performance";
    r.target = CPPCGOV_TARGET_THREAD;
    expectRefused(r, -EINVAL, "for a process or a CPU set");

    r = clamp(0, 1024);
    setRaw(r.kind, 7);
    expectRefused(r, -EINVAL, "unknown kind 7");

    r = clamp(0, 1024);
    setRaw(r.target, 9);
    expectRefused(r, -EINVAL, "unknown target 9");
}

TEST(ClientRequest, CpuSetSizes)
{
    cppcgov_request r{};
    r.kind = CPPCGOV_LATENCY;
    r.target = CPPCGOV_TARGET_CPUS;
    expectRefused(r, -EINVAL, "1 to 4096 CPUs (got 0)");
    const std::vector<std::uint32_t> many(4097, 0);
    r.cpus = many.data();
    r.n_cpus = many.size();
    expectRefused(r, -EINVAL, "(got 4097)");

    cppcgov_hint* hint = untouched;
    EXPECT_EQ(cppcgov_latency_cpus(nullptr, 3, 10, &hint, nullptr), -EINVAL);
    EXPECT_EQ(hint, untouched);
}

TEST(ClientRequest, NoRequestOrNoPlaceForTheHint)
{
    cppcgov_error error{};
    cppcgov_hint* hint = untouched;
    EXPECT_EQ(cppcgov_hint_request(nullptr, &hint, &error), -EINVAL);
    EXPECT_EQ(hint, untouched);
    const cppcgov_request r = clamp(0, 1024);
    EXPECT_EQ(cppcgov_hint_request(&r, nullptr, &error), -EINVAL);
    EXPECT_EQ(cppcgov_clamp_process(0, 1024, nullptr, nullptr), -EINVAL);
}

TEST(ClientRequest, UnreachableBusNamesItsAddress)
{
    cppcgov_request r = clamp(0, 1024);
    r.bus_address = "unix:path=/nonexistent/cppcgov-bus";
    cppcgov_hint* hint = untouched;
    cppcgov_error error{};
    const int code = cppcgov_hint_request(&r, &hint, &error);
    EXPECT_EQ(code, -ENOENT);
    EXPECT_EQ(hint, untouched);
    EXPECT_EQ(error.code, code);
    EXPECT_STREQ(error.name, "");
    EXPECT_EQ(std::string(error.message),
              "Failed to connect to the bus at "
              "unix:path=/nonexistent/cppcgov-bus: No such file or directory");
}

TEST(ClientRequest, SystemBusFromTheEnvironment)
{
    const char* before = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
    const std::string saved = before ? before : "";
    ::setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/cppcgov-sys",
             1);
    cppcgov_hint* hint = untouched;
    cppcgov_error error{};
    EXPECT_EQ(cppcgov_clamp_thread(0, 512, &hint, &error), -ENOENT);
    EXPECT_EQ(hint, untouched);
    EXPECT_EQ(std::string(error.message),
              "Failed to connect to the system bus: No such file or directory");
    if (before)
    {
        ::setenv("DBUS_SYSTEM_BUS_ADDRESS", saved.c_str(), 1);
    }
    else
    {
        ::unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
    }
}

TEST(ClientHint, NullObjects)
{
    EXPECT_EQ(cppcgov_hint_free(nullptr), nullptr);
    EXPECT_EQ(cppcgov_hint_get_handle(nullptr), 0U);
    EXPECT_EQ(cppcgov_hint_get_owner(nullptr), nullptr);
    EXPECT_EQ(cppcgov_hint_is_live(nullptr), 0);
    EXPECT_EQ(cppcgov_hint_get_end_reason(nullptr), nullptr);
    EXPECT_EQ(cppcgov_hint_get_fd(nullptr), -EINVAL);
    EXPECT_EQ(cppcgov_hint_get_events(nullptr), -EINVAL);
    std::uint64_t usec = 0;
    EXPECT_EQ(cppcgov_hint_get_timeout(nullptr, &usec), -EINVAL);
    EXPECT_EQ(cppcgov_hint_process(nullptr), -EINVAL);
    EXPECT_EQ(cppcgov_hint_wait(nullptr, 0), -EINVAL);
    cppcgov_error error{};
    EXPECT_EQ(cppcgov_hint_release(nullptr, &error), -EINVAL);
    EXPECT_EQ(error.code, -EINVAL);
}

TEST(ClientCpp, ErrorCarriesTheParts)
{
    cppcgov_error e{};
    e.code = -EPERM;
    std::snprintf(e.name, sizeof(e.name), "org.cppcgov.Error.NotPermitted");
    std::snprintf(e.message, sizeof(e.message), "not yours");
    std::snprintf(e.description, sizeof(e.description),
                  "org.cppcgov.Error.NotPermitted: not yours");
    const cppcgov::client::Error error(e);
    EXPECT_EQ(error.code(), std::errc::operation_not_permitted);
    EXPECT_EQ(error.name(), "org.cppcgov.Error.NotPermitted");
    EXPECT_EQ(error.busMessage(), "not yours");
    EXPECT_NE(std::string(error.what())
                  .find("org.cppcgov.Error.NotPermitted: not yours"),
              std::string::npos)
        << error.what();
}

TEST(ClientCpp, RequestThrowsTheRefusal)
{
    try
    {
        (void)cppcgov::client::Hint::clampTask(0, false, 900, 100);
        FAIL() << "no exception";
    }
    catch (const cppcgov::client::Error& e)
    {
        EXPECT_EQ(e.code(), std::errc::invalid_argument);
        EXPECT_EQ(e.name(), "");
        EXPECT_NE(e.busMessage().find("900..100"), std::string::npos);
    }
    EXPECT_THROW((void)cppcgov::client::Hint::latencyCpus({}, 10),
                 cppcgov::client::Error);
}

TEST(ClientCpp, HintIsMoveOnlyAndEmptyByDefault)
{
    static_assert(!std::is_copy_constructible_v<cppcgov::client::Hint>);
    static_assert(!std::is_copy_assignable_v<cppcgov::client::Hint>);
    static_assert(std::is_nothrow_move_constructible_v<cppcgov::client::Hint>);
    static_assert(std::is_nothrow_move_assignable_v<cppcgov::client::Hint>);
    cppcgov::client::Hint a;
    EXPECT_FALSE(a);
    EXPECT_EQ(a.handle(), 0U);
    EXPECT_FALSE(a.live());
    EXPECT_EQ(a.endReason(), std::nullopt);
    EXPECT_EQ(a.owner(), "");
    cppcgov::client::Hint b(std::move(a));
    EXPECT_FALSE(b);
    a = std::move(b);
    EXPECT_FALSE(a);
    EXPECT_THROW(a.release(), cppcgov::client::Error);
    EXPECT_THROW((void)a.process(), std::system_error);
    a.reset();
    EXPECT_EQ(a.get(), nullptr);
}

} // namespace
