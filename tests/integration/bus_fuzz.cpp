// A hostile client of cppcgovd's D-Bus API for the integration tests: it
// sends a seeded random stream of method calls, good and bad (wrong
// methods, interfaces, object paths, signatures, argument values and file
// descriptors), and requires every call to be answered within 5 s, either
// with a method return or with an error, and every answer to agree with the
// contract (daemon/dbus/org.cppcgov.Governor1.xml): calls that must fail do
// fail, handles returned are new and belong to valid requests. The methods
// and their signatures come from the daemon's Introspect at the start: a
// method whose arguments bus_fuzz cannot make is a failure, not a method
// skipped, and at the end every method must have been called with its own
// signature. Every few
// calls it checks that the daemon still answers Peer.Ping and a property
// read. At the end it closes its connection and checks, on a fresh one,
// that the daemon dropped every handle the first connection held.
//
// Usage: bus_fuzz --bus-address ADDRESS [--seed N] [--seconds N | --calls N]
//                 [--check-every N] [--verbose]
//
// Prints the seed, the number of calls and a histogram of the answers
// (error name -> count). Exits 0 when everything held, 1 on any failure
// (after saying which call failed and how), 2 on a usage error.
#include "lib/backend/fd.hpp"
#include "lib/backend/pidfd.hpp"
#include "tests/integration/introspection.hpp"

#include <fcntl.h>
#include <sdbus-c++/sdbus-c++.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace
{

using Clock = std::chrono::steady_clock;

constexpr const char* busName = "org.cppcgov.Governor1";
constexpr const char* objectPath = "/org/cppcgov/Governor1";
constexpr const char* governorInterface = "org.cppcgov.Governor1";
constexpr const char* propertiesInterface = "org.freedesktop.DBus.Properties";
constexpr const char* peerInterface = "org.freedesktop.DBus.Peer";
constexpr const char* introspectableInterface =
    "org.freedesktop.DBus.Introspectable";
constexpr std::uint64_t replyTimeoutUs = 5'000'000;
constexpr auto replyLimit = std::chrono::seconds(5);
constexpr auto disconnectLimit = std::chrono::seconds(1);
constexpr std::uint16_t utilScale = 1024;

using cppcgov::test::MethodShape;

// Whether bus_fuzz can make arguments of `signature`: each of its types is
// one of u, b, q, t, h and au.
bool canGenerate(std::string_view signature)
{
    for (std::size_t p = 0; p < signature.size(); ++p)
    {
        const char c = signature[p];
        if (c == 'a' && p + 1 < signature.size() && signature[p + 1] == 'u')
        {
            ++p;
        }
        else if (std::string_view("ubqth").find(c) == std::string_view::npos)
        {
            return false;
        }
    }
    return true;
}

constexpr std::array<const char*, 4> wrongPaths{
    "/", "/org/cppcgov", "/org/cppcgov/Governor1/x", "/org/cppcgov/Governor2"};

constexpr std::array<const char*, 5> wrongInterfaces{
    "org.cppcgov.Governor2", "org.cppcgov.governor1",
    "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Peer", "a.b"};

// One entry of ListHandles.
using HandleEntry =
    sdbus::Struct<std::uint64_t, std::string, std::string, std::uint32_t,
                  std::uint16_t, std::uint16_t, std::uint32_t>;

struct Options
{
    std::string address;
    std::uint64_t seed = 0;
    double seconds = 10.0;
    std::optional<std::uint64_t> calls;
    std::uint64_t checkEvery = 100;
    bool verbose = false;
};

template <class Number>
bool parseNumber(std::string_view text, Number& out)
{
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc() && ptr == end;
}

std::optional<Options> parseOptions(int argc, char** argv)
{
    Options options;
    options.seed = std::random_device{}();
    options.seed =
        (options.seed << 32) ^
        static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i];
        const bool hasValue = i + 1 < argc;
        if (arg == "--verbose")
        {
            options.verbose = true;
            continue;
        }
        if (!hasValue)
        {
            return std::nullopt;
        }
        const std::string_view value = argv[++i];
        bool ok = true;
        if (arg == "--bus-address")
        {
            options.address = value;
        }
        else if (arg == "--seed")
        {
            ok = parseNumber(value, options.seed);
        }
        else if (arg == "--seconds")
        {
            ok = parseNumber(value, options.seconds) && options.seconds > 0;
        }
        else if (arg == "--calls")
        {
            std::uint64_t n = 0;
            ok = parseNumber(value, n) && n > 0;
            options.calls = n;
        }
        else if (arg == "--check-every")
        {
            ok = parseNumber(value, options.checkEvery) &&
                 options.checkEvery > 0;
        }
        else
        {
            ok = false;
        }
        if (!ok)
        {
            return std::nullopt;
        }
    }
    if (options.address.empty())
    {
        return std::nullopt;
    }
    return options;
}

using cppc::backend::Fd;

// A pidfd of process `pid`, or of the thread `pid`; empty when it cannot be
// opened.
Fd pidfdOf(pid_t pid, cppc::backend::PidfdOf of)
{
    Fd fd;
    (void)cppc::backend::openPidfd(pid, of, fd);
    return fd;
}

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

// What a call is, for checking its answer.
enum class Kind
{
    governorRight, // a Governor1 method with its own signature
    mustFail,      // a call the daemon must refuse
    anything,      // any answer will do
};

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

std::uint32_t Fuzzer::pidValue()
{
    static constexpr std::array<std::uint32_t, 7> fixed{
        0,          1,     1024,
        1025,       65535, std::numeric_limits<std::uint32_t>::max(),
        999'999'999};
    switch (below(6))
    {
        case 0:
            return static_cast<std::uint32_t>(self_);
        case 1:
            return static_cast<std::uint32_t>(child_);
        case 2:
            return static_cast<std::uint32_t>(deadChild_);
        case 3:
            return randomOf<std::uint32_t>();
        default:
            return pick(fixed);
    }
}

std::uint16_t Fuzzer::utilValue()
{
    static constexpr std::array<std::uint16_t, 8> fixed{
        0, 1, 512, 1023, 1024, 1025, 2000, 65535};
    if (chance(30))
    {
        return static_cast<std::uint16_t>(below(utilScale + 1));
    }
    if (chance(10))
    {
        return randomOf<std::uint16_t>();
    }
    return pick(fixed);
}

std::uint32_t Fuzzer::latencyValue()
{
    static constexpr std::array<std::uint32_t, 9> fixed{
        0,
        1,
        1024,
        1025,
        65535,
        100'000'000,
        100'000'001,
        4'000'000'000,
        std::numeric_limits<std::uint32_t>::max()};
    if (chance(20))
    {
        return randomOf<std::uint32_t>();
    }
    return pick(fixed);
}

std::vector<std::uint32_t> Fuzzer::cpusValue()
{
    std::vector<std::uint32_t> cpus;
    const std::uint32_t count = std::max<std::uint32_t>(cpuCount_, 1);
    switch (below(7))
    {
        case 0:
            break; // empty
        case 1:
            cpus.push_back(static_cast<std::uint32_t>(below(count)));
            break;
        case 2:
            for (std::uint64_t i = below(8) + 1; i > 0; --i)
            {
                cpus.push_back(static_cast<std::uint32_t>(below(count)));
            }
            break;
        case 3:
            cpus = {static_cast<std::uint32_t>(below(count)), count};
            break;
        case 4:
            cpus = {4095, 4096, std::numeric_limits<std::uint32_t>::max()};
            cpus.resize(below(3) + 1);
            break;
        case 5:
            // 5000 CPUs, all of them valid numbers (repeated).
            for (std::uint32_t i = 0; i < 5000; ++i)
            {
                cpus.push_back(i % count);
            }
            break;
        default:
            for (std::uint32_t i = 0; i < 5000; ++i)
            {
                cpus.push_back(i);
            }
            break;
    }
    return cpus;
}

std::uint64_t Fuzzer::handleValue()
{
    if (!live_.empty() && chance(40))
    {
        auto it = live_.begin();
        std::advance(it, static_cast<long>(below(live_.size())));
        return it->first;
    }
    if (!seen_.empty() && chance(30))
    {
        auto it = seen_.begin();
        std::advance(it, static_cast<long>(below(seen_.size())));
        return *it + below(3); // maybe released, maybe never given
    }
    static constexpr std::array<std::uint64_t, 3> fixed{
        0, 1, std::numeric_limits<std::uint64_t>::max()};
    return chance(50) ? pick(fixed) : randomOf<std::uint64_t>();
}

std::string Fuzzer::stringValue()
{
    switch (below(5))
    {
        case 0:
            return "";
        case 1:
            return pick(properties_);
        case 2:
            return governorInterface;
        case 3:
            return std::string(below(5000) + 1, 'x');
        default:
        {
            std::string s(below(40), ' ');
            for (char& c : s)
            {
                c = static_cast<char>(' ' + below(95));
            }
            return s;
        }
    }
}

std::string Fuzzer::memberName()
{
    static constexpr std::array<const char*, 6> names{
        "SetClamp2", "setclamp", "Get", "Ping", "Set_Clamp", "X"};
    if (chance(50))
    {
        return pick(names);
    }
    static constexpr std::string_view letters =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
    std::string name(below(60) + 1, 'A');
    for (char& c : name)
    {
        c = letters[below(letters.size())];
    }
    return name;
}

std::string Fuzzer::randomType(unsigned depth, bool allowFd)
{
    static constexpr std::string_view basics = "ybnqiuxtdsogh";
    const std::uint64_t r = below(depth < 2 ? 17 : 13);
    if (r < 13)
    {
        if (basics[r] == 'h')
        {
            if (!allowFd || fdsPlanned_ >= maxFds)
            {
                return "u";
            }
            ++fdsPlanned_;
        }
        return std::string(1, basics[r]);
    }
    switch (r)
    {
        case 13:
            return "a" + randomType(depth + 1, false);
        case 14:
        {
            std::string s = "(";
            for (std::uint64_t i = below(4) + 1; i > 0; --i)
            {
                s += randomType(depth + 1, allowFd);
            }
            return s + ")";
        }
        case 15:
            return "a{" + std::string(1, basics[below(12)]) +
                   randomType(depth + 1, false) + "}";
        default:
            return "v";
    }
}

// The end of the single complete type starting at `pos` of `sig`.
std::size_t completeTypeEnd(const std::string& sig, std::size_t pos)
{
    if (sig[pos] == 'a')
    {
        return completeTypeEnd(sig, pos + 1);
    }
    if (sig[pos] == '(' || sig[pos] == '{')
    {
        const char close = sig[pos] == '(' ? ')' : '}';
        std::size_t p = pos + 1;
        while (sig[p] != close)
        {
            p = completeTypeEnd(sig, p);
        }
        return p + 1;
    }
    return pos + 1;
}

// Appends `v` to `msg` and "<type>:<v>" to the call's description.
template <class T>
void put(sdbus::Message& msg, std::string& desc, char type, T v)
{
    msg << v;
    desc += type;
    desc += ':';
    desc += std::to_string(v);
}

void Fuzzer::appendBasic(sdbus::Message& msg, char code, std::string& desc)
{
    switch (code)
    {
        case 'y':
            put(msg, desc, 'y', randomOf<std::uint8_t>());
            break;
        case 'b':
        {
            const bool v = chance(50);
            msg << v;
            desc += v ? "b:true" : "b:false";
            break;
        }
        case 'n':
            put(msg, desc, 'n', randomOf<std::int16_t>());
            break;
        case 'q':
            put(msg, desc, 'q', utilValue());
            break;
        case 'i':
            put(msg, desc, 'i',
                chance(50) ? std::int32_t{-1} : randomOf<std::int32_t>());
            break;
        case 'u':
            put(msg, desc, 'u', chance(50) ? pidValue() : latencyValue());
            break;
        case 'x':
            put(msg, desc, 'x', randomOf<std::int64_t>());
            break;
        case 't':
        {
            const auto v = handleValue();
            randomHandles_.push_back(v);
            put(msg, desc, 't', v);
            break;
        }
        case 'd':
        {
            static constexpr std::array<double, 5> fixed{
                0.0, -1.5, 1e300, std::numeric_limits<double>::quiet_NaN(),
                std::numeric_limits<double>::infinity()};
            const double v = pick(fixed);
            msg << v;
            desc += "d:" + std::to_string(v);
            break;
        }
        case 's':
        {
            const auto v = stringValue();
            msg << v;
            desc += "s:\"" + v.substr(0, 40) + (v.size() > 40 ? "...\"" : "\"");
            break;
        }
        case 'o':
        {
            const std::string v =
                chance(50) ? std::string(objectPath) : pick(wrongPaths);
            msg << sdbus::ObjectPath(v);
            desc += "o:" + v;
            break;
        }
        case 'g':
        {
            const std::string v = chance(50) ? "a{sv}" : "ubqq";
            msg << sdbus::Signature(v);
            desc += "g:" + v;
            break;
        }
        case 'h':
        {
            FdChoice& fd = pickFd();
            msg << sdbus::UnixFd(fd.fd.get());
            desc += "h:" + fd.what;
            break;
        }
        default:
            break;
    }
}

void Fuzzer::appendOf(sdbus::Message& msg, const std::string& type,
                      std::string& desc)
{
    if (type.size() == 1 && type[0] != 'v')
    {
        appendBasic(msg, type[0], desc);
        return;
    }
    if (type == "v")
    {
        const std::string inner = randomType(2, inArray_ == 0);
        msg.openVariant(inner);
        desc += "v:<";
        appendOf(msg, inner, desc);
        desc += ">";
        msg.closeVariant();
        return;
    }
    if (type[0] == '(')
    {
        const std::string inner = type.substr(1, type.size() - 2);
        msg.openStruct(inner);
        desc += "(";
        for (std::size_t p = 0; p < inner.size();)
        {
            const std::size_t end = completeTypeEnd(inner, p);
            appendOf(msg, inner.substr(p, end - p), desc);
            desc += p + (end - p) < inner.size() ? ", " : "";
            p = end;
        }
        desc += ")";
        msg.closeStruct();
        return;
    }
    // An array.
    const std::string element = type.substr(1);
    std::uint64_t n =
        chance(10) ? below(2000) : (chance(40) ? 0 : below(5) + 1);
    n = std::min(n, elementsLeft_);
    elementsLeft_ -= n;
    ++inArray_;
    msg.openContainer(element);
    desc += "a" + element + "[" + std::to_string(n) + "]";
    std::string ignored;
    for (std::uint64_t i = 0; i < n; ++i)
    {
        if (element[0] == '{')
        {
            const std::string inner = element.substr(1, element.size() - 2);
            msg.openDictEntry(inner);
            appendBasic(msg, inner[0], ignored);
            appendOf(msg, inner.substr(1), ignored);
            msg.closeDictEntry();
        }
        else
        {
            appendOf(msg, element, ignored);
        }
        ignored.clear();
    }
    --inArray_;
    msg.closeContainer();
}

sdbus::IProxy& Fuzzer::proxyFor(const std::string& path)
{
    auto& proxy = proxies_[path];
    if (!proxy)
    {
        proxy = sdbus::createProxy(*connection_, busName, path);
    }
    return *proxy;
}

// Whether an error name means the call got no answer from the daemon.
bool transportError(const sdbus::Error& e)
{
    static constexpr std::array<std::string_view, 9> names{
        "org.freedesktop.DBus.Error.NoReply",
        "org.freedesktop.DBus.Error.Timeout",
        "org.freedesktop.DBus.Error.TimedOut",
        "org.freedesktop.DBus.Error.Disconnected",
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.NoServer",
        "org.freedesktop.DBus.Error.NoNetwork",
        "org.freedesktop.DBus.Error.IOError"};
    for (const auto name : names)
    {
        if (e.getName() == name)
        {
            return true;
        }
    }
    // sdbus-c++'s own error when sd_bus_call failed without a reply.
    return e.getName() == "org.sdbuscpp.Error" &&
           e.getMessage().starts_with("Failed to call method");
}

bool Fuzzer::send(const sdbus::MethodCall& call, Answer& answer,
                  const std::string& desc)
{
    const auto start = Clock::now();
    try
    {
        answer.reply = call.send(replyTimeoutUs);
        answer.ok = true;
    }
    catch (const sdbus::Error& e)
    {
        if (transportError(e))
        {
            return failed(desc,
                          "no answer: " + e.getName() + ": " + e.getMessage());
        }
        answer.errorName = e.getName();
        answer.errorMessage = e.getMessage();
    }
    const auto took = Clock::now() - start;
    if (took > replyLimit)
    {
        return failed(
            desc,
            "answered after " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(took)
                        .count()) +
                " ms");
    }
    return true;
}

bool Fuzzer::checkGovernorReply(
    const std::string& method, const std::vector<std::uint64_t>& u,
    const std::vector<std::uint32_t>& cpus, const FdChoice* fd, Answer& answer,
    const std::string& desc)
{
    if (!answer.ok)
    {
        if (!answer.errorName.starts_with("org.cppcgov.Error."))
        {
            return failed(desc, "error " + answer.errorName + " (" +
                                    answer.errorMessage +
                                    ") is not one of the contract's");
        }
        if (method == "Release" &&
            answer.errorName == "org.cppcgov.Error.NoSuchHandle" &&
            live_.contains(u[0]))
        {
            const pid_t task = live_[u[0]].task;
            if (task != 0 && task != self_ && task != child_ && task != 1)
            {
                // Another task, which may have exited since.
                live_.erase(u[0]);
                return true;
            }
            return failed(desc, "a live handle of the caller's (from " +
                                    live_[u[0]].call +
                                    ") was refused: " + answer.errorMessage);
        }
        return true;
    }
    const bool isSet = method.starts_with("Set");
    if (method == "Release")
    {
        if (live_.erase(u[0]) == 0)
        {
            return failed(desc, "released a handle that was not the caller's "
                                "live handle");
        }
        return true;
    }
    if (!isSet)
    {
        return true;
    }
    std::uint64_t handle = 0;
    if (!newHandle(answer, desc, handle))
    {
        return false;
    }
    pid_t task = 0;
    std::string why;
    if (method == "SetClamp" || method == "SetClampPidfd")
    {
        const std::size_t q = method == "SetClamp" ? 2 : 0;
        if (!(u[q] <= u[q + 1] && u[q + 1] <= utilScale))
        {
            why = "util_min/util_max out of contract";
        }
        if (method == "SetClamp")
        {
            task = u[0] == 0 ? self_ : static_cast<pid_t>(u[0]);
            if (!taskExists(static_cast<std::uint32_t>(u[0])))
            {
                why = "no such task";
            }
        }
        else
        {
            task = fd->task;
            if (!fd->livePidfd)
            {
                why = "the descriptor is not a live pidfd";
            }
        }
    }
    else if (method == "SetLatency")
    {
        task = u[0] == 0 ? self_ : static_cast<pid_t>(u[0]);
        if (!taskExists(static_cast<std::uint32_t>(u[0])))
        {
            why = "no such task";
        }
    }
    else if (method == "SetLatencyCpus")
    {
        if (cpus.empty())
        {
            why = "empty CPU set";
        }
        for (const auto cpu : cpus)
        {
            if (cpu >= cpuCount_)
            {
                why = "CPU " + std::to_string(cpu) + " does not exist (" +
                      std::to_string(cpuCount_) + " CPUs)";
                break;
            }
        }
    }
    live_[handle] = LiveHandle{task, desc};
    if (!why.empty())
    {
        return failed(desc, "returned handle " + std::to_string(handle) +
                                " for an invalid request: " + why);
    }
    return true;
}

bool Fuzzer::fuzzOne(std::uint64_t index)
{
    index_ = index;
    std::string path = objectPath;
    std::string iface;
    std::string member;
    Kind kind = Kind::anything;
    const std::uint64_t what = below(100);
    const MethodShape* method = nullptr;
    if (what < 60)
    {
        method = &methods_[below(methods_.size())];
        iface = governorInterface;
        member = method->name;
        kind = Kind::governorRight;
        if (chance(8))
        {
            path = pick(wrongPaths);
            kind = Kind::mustFail;
        }
        else if (chance(8))
        {
            iface = pick(wrongInterfaces);
            kind = Kind::mustFail;
        }
    }
    else if (what < 80)
    {
        iface = propertiesInterface;
        static constexpr std::array<const char*, 3> members{"Get", "GetAll",
                                                            "Set"};
        member = pick(members);
        if (chance(5))
        {
            path = pick(wrongPaths);
        }
    }
    else if (what < 87)
    {
        iface = chance(50) ? introspectableInterface : peerInterface;
        member = iface == peerInterface ? "Ping" : "Introspect";
        if (chance(20))
        {
            path = pick(wrongPaths);
        }
    }
    else
    {
        iface = chance(80) ? std::string(governorInterface)
                           : std::string(pick(wrongInterfaces));
        member = memberName();
        kind = iface.starts_with("org.freedesktop.") ? Kind::anything
                                                     : Kind::mustFail;
        for (const auto& m : methods_)
        {
            if (member == m.name)
            {
                kind = Kind::anything;
            }
        }
    }

    sdbus::MethodCall call;
    std::string desc = path + " " + iface + "." + member + "(";
    std::string signature;
    std::vector<std::uint64_t> values;
    std::vector<std::uint32_t> cpus;
    FdChoice* fd = nullptr;
    const std::uint64_t argMode = below(100);
    fdsPlanned_ = 0;
    randomHandles_.clear();
    inArray_ = 0;
    elementsLeft_ = 20000;
    try
    {
        call = proxyFor(path).createMethodCall(iface, member);
        if (argMode < 65 && method != nullptr)
        {
            // The right signature, with random and boundary values.
            signature = method->signature;
            ++rightCalls_[member];
            for (std::size_t p = 0; p < signature.size(); ++p)
            {
                const char c = signature[p];
                p += c == 'a' ? 1 : 0; // "au": one argument
                if (!desc.ends_with("("))
                {
                    desc += ", ";
                }
                switch (c)
                {
                    case 'a':
                        cpus = cpusValue();
                        call << cpus;
                        desc += "au[" + std::to_string(cpus.size()) + "]";
                        if (cpus.size() <= 4)
                        {
                            for (const auto cpu : cpus)
                            {
                                desc += " " + std::to_string(cpu);
                            }
                        }
                        break;
                    case 'u':
                    {
                        const std::uint32_t v =
                            (values.empty() && member != "SetLatencyCpus")
                                ? pidValue()
                                : latencyValue();
                        values.push_back(v);
                        put(call, desc, 'u', v);
                        break;
                    }
                    case 'b':
                    {
                        const bool v = chance(30);
                        call << v;
                        values.push_back(v ? 1 : 0);
                        desc += v ? "b:true" : "b:false";
                        break;
                    }
                    case 'q':
                    {
                        const std::uint16_t v = utilValue();
                        values.push_back(v);
                        put(call, desc, 'q', v);
                        break;
                    }
                    case 't':
                    {
                        const std::uint64_t v = handleValue();
                        values.push_back(v);
                        put(call, desc, 't', v);
                        break;
                    }
                    case 'h':
                        fd = &pickFd();
                        call << sdbus::UnixFd(fd->fd.get());
                        values.push_back(0);
                        desc += "h:" + fd->what;
                        break;
                    default:
                        break;
                }
            }
        }
        else if (argMode < 70 && iface == propertiesInterface)
        {
            // Properties with plausible arguments.
            const std::string propIface =
                chance(80) ? governorInterface : stringValue();
            const std::string prop =
                chance(80) ? pick(properties_) : stringValue();
            call << propIface;
            desc += "s:" + propIface;
            if (member != "GetAll")
            {
                call << prop;
                desc += ", s:" + prop;
            }
            if (member == "Set")
            {
                desc += ", ";
                appendOf(call, "v", desc);
                kind = Kind::mustFail;
            }
            else if (member == "Get" &&
                     (propIface != governorInterface ||
                      std::find(properties_.begin(), properties_.end(), prop) ==
                          properties_.end()))
            {
                kind = Kind::mustFail;
            }
        }
        else if (argMode < 90)
        {
            // Random types and counts.
            for (std::uint64_t n = below(6) + 1; n > 0; --n)
            {
                const std::string type = randomType(0, true);
                if (!desc.ends_with("("))
                {
                    desc += ", ";
                }
                appendOf(call, type, desc);
                signature += type;
            }
        }
        // else: no arguments.
    }
    catch (const sdbus::Error& e)
    {
        return failed(desc, "building the call failed: " + e.getName() + ": " +
                                e.getMessage());
    }
    desc += ")";
    if (method != nullptr && signature != method->signature)
    {
        kind = Kind::mustFail;
    }
    if (iface == propertiesInterface && member == "Set")
    {
        kind = Kind::mustFail;
    }
    if (method != nullptr && kind == Kind::governorRight && argMode >= 65)
    {
        // Random types that happened to form the right signature: the
        // values are not tracked, so any answer will do.
        kind = Kind::anything;
    }
    if (options_.verbose)
    {
        std::cerr << "#" << index << " " << desc << '\n';
    }

    Answer answer;
    if (!send(call, answer, desc))
    {
        return false;
    }
    ++histogram_[answer.ok ? std::string("(method return)") : answer.errorName];
    switch (kind)
    {
        case Kind::mustFail:
            if (answer.ok)
            {
                return failed(desc, "succeeded but must be refused");
            }
            return true;
        case Kind::governorRight:
            return checkGovernorReply(member, values, cpus, fd, answer, desc);
        case Kind::anything:
            if (method != nullptr && signature == method->signature &&
                answer.ok)
            {
                return trackUntyped(member, answer, desc);
            }
            return true;
    }
    return true;
}

bool Fuzzer::newHandle(Answer& answer, const std::string& desc,
                       std::uint64_t& handle)
{
    answer.reply >> handle;
    if (handle == 0 || seen_.contains(handle))
    {
        return failed(desc, "returned handle " + std::to_string(handle) +
                                ", zero or given before");
    }
    seen_.insert(handle);
    return true;
}

bool Fuzzer::trackUntyped(const std::string& member, Answer& answer,
                          const std::string& desc)
{
    // Random types that formed the right signature and were accepted: the
    // handles they released or created still count.
    if (member == "Release")
    {
        if (randomHandles_.size() == 1)
        {
            live_.erase(randomHandles_.front());
        }
        return true;
    }
    if (!member.starts_with("Set"))
    {
        return true;
    }
    std::uint64_t handle = 0;
    if (!newHandle(answer, desc, handle))
    {
        return false;
    }
    // Its task is not known: it may end without a release.
    live_[handle] = LiveHandle{-1, desc};
    return true;
}

bool Fuzzer::alive(sdbus::IConnection& connection, const std::string& when)
{
    const std::string desc = "liveness check " + when;
    auto proxy = sdbus::createProxy(connection, busName, objectPath);
    Answer ping;
    if (!send(proxy->createMethodCall(peerInterface, "Ping"), ping,
              desc + ": Peer.Ping"))
    {
        return false;
    }
    if (!ping.ok)
    {
        return failed(desc,
                      "Ping: " + ping.errorName + ": " + ping.errorMessage);
    }
    auto get = proxy->createMethodCall(propertiesInterface, "Get");
    get << std::string(governorInterface) << std::string("Backend");
    Answer backend;
    if (!send(get, backend, desc + ": Get Backend"))
    {
        return false;
    }
    if (!backend.ok)
    {
        return failed(desc, "Get Backend: " + backend.errorName + ": " +
                                backend.errorMessage);
    }
    sdbus::Variant value;
    backend.reply >> value;
    if (value.get<std::string>().empty())
    {
        return failed(desc, "Backend is empty");
    }
    return true;
}

std::vector<HandleEntry> listHandles(sdbus::IProxy& proxy)
{
    auto call = proxy.createMethodCall(governorInterface, "ListHandles");
    auto reply = call.send(replyTimeoutUs);
    std::vector<HandleEntry> handles;
    reply >> handles;
    return handles;
}

std::uint32_t countProperty(sdbus::IProxy& proxy, const char* name)
{
    auto call = proxy.createMethodCall(propertiesInterface, "Get");
    call << std::string(governorInterface) << std::string(name);
    auto reply = call.send(replyTimeoutUs);
    sdbus::Variant value;
    reply >> value;
    return value.get<std::uint32_t>();
}

bool Fuzzer::finalChecks()
{
    index_ = 0;
    const std::string desc = "final checks";
    // The handles the daemon lists for this connection are the ones it
    // returned and were not released (those of live tasks all still there).
    try
    {
        auto proxy = sdbus::createProxy(*monitor_, busName, objectPath);
        std::set<std::uint64_t> listed;
        for (const auto& h : listHandles(*proxy))
        {
            if (h.get<2>() == uniqueName_)
            {
                listed.insert(h.get<0>());
            }
        }
        for (const auto handle : listed)
        {
            if (!live_.contains(handle))
            {
                return failed(desc, "ListHandles shows handle " +
                                        std::to_string(handle) +
                                        " that this client does not hold");
            }
        }
        for (const auto& [handle, info] : live_)
        {
            const bool ours = info.task == 0 || info.task == self_ ||
                              info.task == child_ || info.task == 1;
            if (!listed.contains(handle) && ours)
            {
                return failed(desc,
                              "handle " + std::to_string(handle) + " of " +
                                  info.call + " is missing from ListHandles");
            }
        }
        std::cout << "bus_fuzz: " << listed.size()
                  << " handles held at the end\n";
    }
    catch (const sdbus::Error& e)
    {
        return failed(desc,
                      "ListHandles: " + e.getName() + ": " + e.getMessage());
    }
    if (!alive(*monitor_, "at the end"))
    {
        return false;
    }
    // Leave without releasing anything.
    proxies_.clear();
    connection_.reset();
    monitor_.reset();

    std::unique_ptr<sdbus::IConnection> fresh;
    std::unique_ptr<sdbus::IProxy> proxy;
    try
    {
        fresh = sdbus::createSessionBusConnectionWithAddress(options_.address);
        proxy = sdbus::createProxy(*fresh, busName, objectPath);
    }
    catch (const sdbus::Error& e)
    {
        return failed(desc, "second connection: " + e.getName() + ": " +
                                e.getMessage());
    }
    const auto deadline = Clock::now() + disconnectLimit;
    std::size_t left = 0;
    std::uint32_t clamps = 0;
    std::uint32_t latencies = 0;
    while (true)
    {
        try
        {
            left = 0;
            for (const auto& h : listHandles(*proxy))
            {
                left += h.get<2>() == uniqueName_ ? 1 : 0;
            }
            clamps = countProperty(*proxy, "ClampCount");
            latencies = countProperty(*proxy, "LatencyCount");
        }
        catch (const sdbus::Error& e)
        {
            return failed(desc, "after the disconnect: " + e.getName() + ": " +
                                    e.getMessage());
        }
        if ((left == 0 && clamps == 0 && latencies == 0) ||
            Clock::now() > deadline)
        {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (left != 0 || clamps != 0 || latencies != 0)
    {
        return failed(desc,
                      std::to_string(left) + " handles of " + uniqueName_ +
                          " left, ClampCount " + std::to_string(clamps) +
                          ", LatencyCount " + std::to_string(latencies) + " " +
                          std::to_string(disconnectLimit.count()) +
                          " s after it closed its connection");
    }
    return alive(*fresh, "after the disconnect");
}

bool Fuzzer::run()
{
    std::cout << "bus_fuzz: seed " << options_.seed << '\n' << std::flush;
    try
    {
        connection_ =
            sdbus::createSessionBusConnectionWithAddress(options_.address);
        monitor_ =
            sdbus::createSessionBusConnectionWithAddress(options_.address);
        uniqueName_ = connection_->getUniqueName();
        auto proxy = sdbus::createProxy(*monitor_, busName, objectPath);
        cpuCount_ = countProperty(*proxy, "CpuCount");
        std::string xml;
        proxy->callMethod("Introspect")
            .onInterface(introspectableInterface)
            .storeResultsTo(xml);
        cppcgov::test::InterfaceShape shape =
            cppcgov::test::parseInterface(xml, governorInterface);
        methods_ = std::move(shape.methods);
        properties_ = std::move(shape.properties);
    }
    catch (const sdbus::Error& e)
    {
        std::cerr << "bus_fuzz: cannot reach cppcgovd: " << e.what() << '\n';
        return false;
    }
    catch (const std::runtime_error& e)
    {
        std::cerr << "bus_fuzz: reading the daemon's interface: " << e.what()
                  << '\n';
        return false;
    }
    std::cout << "bus_fuzz: connection " << uniqueName_ << ", " << cpuCount_
              << " CPUs, pid " << self_ << ", child " << child_ << '\n';
    if (methods_.empty() || properties_.empty())
    {
        std::cerr << "bus_fuzz: the daemon's " << governorInterface
                  << " has no methods or no properties\n";
        return false;
    }
    for (const MethodShape& m : methods_)
    {
        if (!canGenerate(m.signature))
        {
            std::cerr << "bus_fuzz: " << m.name << " takes '" << m.signature
                      << "', arguments bus_fuzz cannot make: teach it\n";
            return false;
        }
    }
    std::cout << "bus_fuzz: " << methods_.size() << " methods, "
              << properties_.size() << " properties\n";

    const auto start = Clock::now();
    const auto end =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(options_.seconds));
    std::uint64_t n = 0;
    bool ok = true;
    while (ok && (options_.calls ? n < *options_.calls : Clock::now() < end))
    {
        ++n;
        ok = fuzzOne(n);
        if (ok && n % options_.checkEvery == 0)
        {
            ok = alive(*monitor_, "after call #" + std::to_string(n));
        }
    }
    const double took =
        std::chrono::duration<double>(Clock::now() - start).count();
    std::cout << "bus_fuzz: " << n << " calls in " << took << " s\n";
    std::cout << "bus_fuzz: answers:\n";
    for (const auto& [name, count] : histogram_)
    {
        std::cout << "  " << name << " " << count << '\n';
    }
    std::cout << "bus_fuzz: " << seen_.size() << " handles given, "
              << live_.size() << " not released\n"
              << std::flush;
    if (ok)
    {
        ok = finalChecks();
    }
    // Every method was called with its own signature (a short run may
    // miss one by chance: only checked over enough calls).
    for (const MethodShape& m : methods_)
    {
        if (ok && n >= 100 * methods_.size() && rightCalls_[m.name] == 0)
        {
            std::cerr << "bus_fuzz: " << m.name
                      << " was never called with its signature\n";
            ok = false;
        }
    }
    if (ok)
    {
        std::cout << "bus_fuzz: OK\n";
    }
    else
    {
        std::cerr << "bus_fuzz: FAILED (rerun with --seed " << options_.seed
                  << ")\n";
    }
    return ok;
}

// Forks a child that waits to be killed (and dies with this process).
pid_t sleeper()
{
    const pid_t pid = ::fork();
    if (pid == 0)
    {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        while (true)
        {
            ::pause();
        }
    }
    return pid;
}

} // namespace

int main(int argc, char** argv)
{
    const auto options = parseOptions(argc, argv);
    if (!options)
    {
        std::cerr << "usage: bus_fuzz --bus-address ADDRESS [--seed N] "
                     "[--seconds N | --calls N] [--check-every N] "
                     "[--verbose]\n";
        return 2;
    }
    // The tasks the calls name, made before any bus connection exists.
    const pid_t child = sleeper();
    const pid_t dead = ::fork();
    if (child < 0 || dead < 0)
    {
        std::cerr << "bus_fuzz: fork: " << std::strerror(errno) << '\n';
        return 1;
    }
    if (dead == 0)
    {
        ::_exit(0);
    }
    std::vector<FdChoice> fds;
    using cppc::backend::PidfdOf;
    fds.push_back(
        {"pidfd(child)", pidfdOf(child, PidfdOf::process), true, child});
    fds.push_back({"pidfd(self)", pidfdOf(::getpid(), PidfdOf::process), true,
                   ::getpid()});
    fds.push_back(
        {"pidfd(dead child)", pidfdOf(dead, PidfdOf::process), false, dead});
    ::waitpid(dead, nullptr, 0);
    // Kernels before 6.9 cannot hold a thread.
    if (Fd thread = pidfdOf(static_cast<pid_t>(::gettid()), PidfdOf::thread);
        thread)
    {
        fds.push_back(
            {"pidfd(own thread)", std::move(thread), true, ::getpid()});
    }
    fds.push_back(
        {"plain file", Fd(::open("/proc/self/exe", O_RDONLY)), false, 0});
    fds.push_back({"/dev/null", Fd(::open("/dev/null", O_RDWR)), false, 0});
    for (auto& fd : fds)
    {
        if (fd.fd.get() < 0)
        {
            std::cerr << "bus_fuzz: cannot open " << fd.what << ": "
                      << std::strerror(errno) << '\n';
            ::kill(child, SIGKILL);
            return 1;
        }
    }

    bool ok = false;
    {
        Fuzzer fuzzer(*options, child, dead, std::move(fds));
        ok = fuzzer.run();
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return ok ? 0 : 1;
}
