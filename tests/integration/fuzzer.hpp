// SPDX-License-Identifier: Apache-2.0
// bus_fuzz's client: a seeded random stream of method calls, good and bad,
// on one connection to cppcgovd, each answer checked against the contract
// (daemon/dbus/org.cppcgov.Governor1.xml), and at the end the handles it
// holds and their end when it leaves. Its members are defined by concern:
// fuzzer.cpp makes and sends the calls and runs the whole test,
// fuzz_arguments.cpp makes the random and boundary arguments, and
// fuzz_checks.cpp checks the answers, the daemon's liveness and the
// handles at the end.
#pragma once

#include "lib/backend/fd.hpp"
#include "tests/integration/fuzz_options.hpp"
#include "tests/integration/introspection.hpp"

#include <sdbus-c++/sdbus-c++.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::test::fuzz
{

using Clock = std::chrono::steady_clock;

inline constexpr const char* busName = "org.cppcgov.Governor1";
inline constexpr const char* objectPath = "/org/cppcgov/Governor1";
inline constexpr const char* governorInterface = "org.cppcgov.Governor1";
inline constexpr const char* propertiesInterface =
    "org.freedesktop.DBus.Properties";
inline constexpr const char* peerInterface = "org.freedesktop.DBus.Peer";
inline constexpr const char* introspectableInterface =
    "org.freedesktop.DBus.Introspectable";
inline constexpr std::uint64_t replyTimeoutUs = 5'000'000;
inline constexpr std::uint16_t utilScale = 1024;

// Whether bus_fuzz can make arguments of `signature`: each of its types is
// one of u, b, q, t, h and au.
bool canGenerate(std::string_view signature);

inline constexpr std::array<const char*, 4> wrongPaths{
    "/", "/org/cppcgov", "/org/cppcgov/Governor1/x", "/org/cppcgov/Governor2"};

using cppc::backend::Fd;

// A descriptor to send, and what the daemon may make of it.
struct FdChoice
{
    std::string what;
    Fd fd;
    bool livePidfd = false; // a pidfd of a live task the caller may clamp
    pid_t task = 0;
};

// A handle this process was given and has not released.
struct LiveHandle
{
    // The task it hints, 0 for a CPU-set latency request, -1 when not known.
    pid_t task = 0;
    std::string call;
};

// The outcome of one call.
struct Answer
{
    bool ok = false;
    std::string errorName;
    std::string errorMessage;
    sdbus::MethodReply reply;
};

// Appends `v` to `msg` and "<type>:<v>" to the call's description.
template <class T>
void put(sdbus::Message& msg, std::string& desc, char type, T v)
{
    msg << v;
    desc += type;
    desc += ':';
    desc += std::to_string(v);
}

// The value of the uint32 property `name` of the daemon behind `proxy`;
// throws sdbus::Error.
std::uint32_t countProperty(sdbus::IProxy& proxy, const char* name);

class Fuzzer
{
  public:
    Fuzzer(const Options& options, pid_t child, pid_t deadChild,
           std::vector<FdChoice>&& fds) :
        options_(options),
        rng_(options.seed), child_(child), deadChild_(deadChild),
        self_(::getpid()), fds_(std::move(fds))
    {}

    // Runs the whole test; returns whether everything held.
    bool run();

  private:
    // --- random values -------------------------------------------------
    std::uint64_t below(std::uint64_t n)
    {
        return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_);
    }
    bool chance(unsigned percent)
    {
        return below(100) < percent;
    }
    template <class T, std::size_t N>
    const T& pick(const std::array<T, N>& items)
    {
        return items[below(N)];
    }
    const std::string& pick(const std::vector<std::string>& items)
    {
        return items[below(items.size())];
    }
    template <class T>
    T randomOf()
    {
        return static_cast<T>(rng_());
    }

    std::uint32_t pidValue();
    std::uint16_t utilValue();
    std::uint32_t latencyValue();
    std::vector<std::uint32_t> cpusValue();
    std::uint64_t handleValue();
    std::string stringValue();
    std::string memberName();
    // A random single complete type; 'h' only outside arrays, and at most
    // maxFds per message (the bus drops a client sending more).
    std::string randomType(unsigned depth, bool allowFd);

    // Appends a random value of the single complete type `type`.
    void appendOf(sdbus::Message& msg, const std::string& type,
                  std::string& desc);
    void appendBasic(sdbus::Message& msg, char code, std::string& desc);
    FdChoice& pickFd()
    {
        return fds_[below(fds_.size())];
    }

    // --- calls ---------------------------------------------------------
    [[nodiscard]] bool fuzzOne(std::uint64_t index);
    [[nodiscard]] bool send(const sdbus::MethodCall& call, Answer& answer,
                            const std::string& desc);
    // Reads the handle a Set* call returned into `handle`; fails when it
    // is 0 or was returned before.
    [[nodiscard]] bool newHandle(Answer& answer, const std::string& desc,
                                 std::uint64_t& handle);
    // Keeps live_ right after a call of random types that happened to have
    // a Governor1 method's signature and succeeded.
    [[nodiscard]] bool trackUntyped(const std::string& member, Answer& answer,
                                    const std::string& desc);
    // A headroom query that was answered: its window was in range and its
    // numbers are percentages of CPUs that exist.
    [[nodiscard]] bool checkHeadroom(const std::string& method,
                                     const std::vector<std::uint64_t>& u,
                                     Answer& answer, const std::string& desc);
    [[nodiscard]] bool checkGovernorReply(
        const std::string& method, const std::vector<std::uint64_t>& u,
        const std::vector<std::uint32_t>& cpus, const FdChoice* fd,
        Answer& answer, const std::string& desc);
    [[nodiscard]] bool alive(sdbus::IConnection& connection,
                             const std::string& when);
    [[nodiscard]] bool finalChecks();
    bool taskExists(std::uint32_t pid) const
    {
        return pid == 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 ||
               errno == EPERM;
    }
    bool failed(const std::string& desc, const std::string& why)
    {
        std::cerr << "bus_fuzz: FAILURE (seed " << options_.seed << ", call #"
                  << index_ << "): " << desc << ": " << why << '\n';
        return false;
    }
    sdbus::IProxy& proxyFor(const std::string& path);

    const Options& options_;
    std::mt19937_64 rng_;
    pid_t child_;
    pid_t deadChild_;
    pid_t self_;
    std::vector<FdChoice> fds_;
    // The interface as the daemon describes it.
    std::vector<MethodShape> methods_;
    std::vector<std::string> properties_;
    // Calls of each method with its own signature.
    std::map<std::string, std::uint64_t> rightCalls_;
    std::uint32_t cpuCount_ = 0;
    std::unique_ptr<sdbus::IConnection> connection_;
    std::unique_ptr<sdbus::IConnection> monitor_;
    std::map<std::string, std::unique_ptr<sdbus::IProxy>> proxies_;
    std::string uniqueName_;
    std::map<std::uint64_t, LiveHandle> live_;
    // The 't' values a call of random types carried.
    std::vector<std::uint64_t> randomHandles_;
    std::set<std::uint64_t> seen_;
    std::map<std::string, std::uint64_t> histogram_;
    std::uint64_t index_ = 0;
    // Limits on one message's random arguments.
    static constexpr unsigned maxFds = 8;
    unsigned fdsPlanned_ = 0;
    unsigned inArray_ = 0;
    std::uint64_t elementsLeft_ = 0;
};

} // namespace cppcgov::test::fuzz
