// SPDX-License-Identifier: Apache-2.0
// A D-Bus client of cppcgovd for the integration tests: one bus connection,
// driven through stdin one command a line, answering each command with one
// line on stdout. The tests use it where busctl and dbus-send cannot help:
// a connection that holds handles while the test does other things (a
// handle ends with its connection), many calls on one connection (the
// per-client limits), and waiting for the daemon's signals.
//
// Usage: session_client ADDRESS
//
// Commands (numbers in decimal):
//   name                      ok <this connection's unique bus name>
//   pid                       ok <this process's PID>
//   clamp PID THREAD MIN MAX  ok <handle>   (SetClamp; THREAD is 0 or 1)
//   latency PID US            ok <handle>   (SetLatency)
//   latency-cpus US [CPU...]  ok <handle>   (SetLatencyCpus)
//   prefer PID PREF           ok <handle>   (SetEnergyPreference)
//   prefer-cpus PREF [CPU...] ok <handle>   (SetEnergyPreferenceCpus)
//   release HANDLE            ok            (Release)
//   reload                    ok <file,file,...>  (Reload)
//   burst N                   ok <answered> <limit-exceeded> <other errors>
//                             after N ListHandles calls back to back
//   kill PID SIGNAL           ok            (kill(2), with a pidfd of PID
//                                           opened first; wait-ended
//                                           measures from here)
//   wait-ended HANDLE MS      ok <us> <owner> <reason> <exit us>
//                             once HandleEnded named HANDLE (also when it
//                             came before the command): <us> is the time
//                             from the last kill to the signal's arrival,
//                             <exit us> from the kill to the killed task's
//                             pidfd becoming readable, seen while waiting
//                             (-1 when not seen)
//   started                   ok <handle,kind,owner,task,min,max,latency>...
//                             for every HandleStarted so far (the bus
//                             serviced once first)
//   wait-policy MS            ok <policy> <file,file,...> for the next
//                             PolicyChanged not yet reported
//   spoof NAME unicast|broadcast
//                             ok after sending a forged bus-driver signal
//                             NameOwnerChanged(NAME, NAME, "") (to the
//                             daemon, or to all) and a Peer.Ping to the
//                             daemon, which it answers after the signal
//   spoof-burst N             as burst, with a forged NameOwnerChanged
//                             naming this connection before each call
//   connect N                 ok after opening N more connections to the
//                             bus, kept until the program exits
//   each-clamp PID MIN MAX    ok <held> <limit-exceeded> <other errors>
//                             after SetClamp(PID, false, MIN, MAX) on each
//                             extra connection until one is refused
//   each-list                 ok <answered> <limit-exceeded> <other errors>
//                             after one ListHandles on each extra connection
//   headroom MS CALC CPU...   ok <headroom> <covered ms> <cpu>:<headroom>...
//                             (GetCpuHeadroom)
//   each-headroom MS CALC CPU ok <answered> <limit-exceeded> <other errors>
//                             after one GetCpuHeadroom on each extra
//                             connection
// A failed call answers "error <D-Bus error name> <message>", a wait that
// runs out "error timeout", a malformed command "error usage <why>". The
// program exits at the end of stdin, or when killed: either way the daemon
// sees the connection go.
#include "daemon/dbus/governor1.hpp"
#include "lib/backend/fd.hpp"
#include "lib/backend/pidfd.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <deque>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace
{

using Clock = std::chrono::steady_clock;

struct Ended
{
    std::uint64_t handle = 0;
    std::string owner;
    std::string reason;
    Clock::time_point seen;
};

struct PolicyEvent
{
    std::string policy;
    std::vector<std::string> files;
};

// The generated proxy, keeping the signals it receives for the wait
// commands.
class Governor final :
    public sdbus::ProxyInterfaces<org::cppcgov::Governor1_proxy>
{
  public:
    explicit Governor(sdbus::IConnection& connection) :
        ProxyInterfaces(connection, cppcgov::dbus::serviceName,
                        cppcgov::dbus::objectPath)
    {
        registerProxy();
    }

    ~Governor()
    {
        unregisterProxy();
    }

    Governor(const Governor&) = delete;
    Governor& operator=(const Governor&) = delete;

    std::vector<Ended> ended;
    std::deque<PolicyEvent> policyEvents;
    // Every HandleStarted, as "handle,kind,owner,task,min,max,latency".
    std::vector<std::string> started;

  private:
    void onHandleStarted(const std::uint64_t& handle, const std::string& kind,
                         const std::string& owner, const std::uint32_t& task,
                         const std::uint16_t& utilMin,
                         const std::uint16_t& utilMax,
                         const std::uint32_t& latencyUs) override
    {
        started.push_back(
            std::to_string(handle) + "," + kind + "," + owner + "," +
            std::to_string(task) + "," + std::to_string(utilMin) + "," +
            std::to_string(utilMax) + "," + std::to_string(latencyUs));
    }

    void onHandleEnded(const std::uint64_t& handle, const std::string& owner,
                       const std::string& reason) override
    {
        ended.push_back({handle, owner, reason, Clock::now()});
    }

    void onPolicyChanged(const std::string& policy,
                         const std::vector<std::string>& files) override
    {
        policyEvents.push_back({policy, files});
    }
};

// A bad command line; its message is the answer's text.
struct UsageError
{
    std::string why;
};

std::uint64_t number(std::string_view text, std::uint64_t max)
{
    std::uint64_t v = 0;
    const auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v > max)
    {
        throw UsageError{"'" + std::string(text) + "' is not a number up to " +
                         std::to_string(max)};
    }
    return v;
}

// One line for the answer: newlines in D-Bus messages become spaces.
std::string oneLine(std::string text)
{
    for (char& c : text)
    {
        if (c == '\n' || c == '\r')
        {
            c = ' ';
        }
    }
    return text;
}

class Session
{
  public:
    explicit Session(const std::string& address) :
        address_(address),
        connection_(sdbus::createSessionBusConnectionWithAddress(address)),
        governor_(*connection_)
    {}

    // Runs one command line; returns the answer.
    std::string run(const std::vector<std::string>& words);

  private:
    void need(const std::vector<std::string>& words, std::size_t n) const
    {
        if (words.size() != n)
        {
            throw UsageError{words.front() + " takes " + std::to_string(n - 1) +
                             " arguments"};
        }
    }

    // Dispatches what the bus has delivered, then waits on the connection
    // at most until `deadline` or 10 ms, whichever is first.
    void serviceBus(Clock::time_point deadline);

    std::string waitEnded(std::uint64_t handle, Clock::time_point deadline);
    std::string waitPolicy(Clock::time_point deadline);
    // Calls ListHandles `calls` times, each after `before()`.
    template <class Before>
    std::string burst(std::uint64_t calls, Before before);
    // Sends NameOwnerChanged(name, name, "") as if from the bus driver, to
    // the daemon only when `unicast`, then pings the daemon.
    void spoof(const std::string& name, bool unicast);
    std::string eachClamp(std::uint32_t pid, std::uint16_t utilMin,
                          std::uint16_t utilMax);
    std::string eachList();
    std::string eachHeadroom(std::uint32_t windowMs,
                             const std::string& calculation, std::uint32_t cpu);

    // An extra connection and a plain proxy of the daemon on it.
    struct Extra
    {
        std::unique_ptr<sdbus::IConnection> connection;
        std::unique_ptr<sdbus::IProxy> proxy;
    };

    std::string address_;
    std::unique_ptr<sdbus::IConnection> connection_;
    Governor governor_;
    // A forged object at the bus driver's path, for the spoof commands.
    std::unique_ptr<sdbus::IObject> driverPath_;
    std::unique_ptr<sdbus::IProxy> pinger_;
    std::vector<Extra> extras_;
    Clock::time_point killedAt_ = Clock::now();
    // A pidfd of the task last killed, until its exit is seen.
    cppc::backend::Fd killedPidfd_;
    std::optional<Clock::time_point> exitedAt_;
};

void Session::serviceBus(Clock::time_point deadline)
{
    while (connection_->processPendingRequest())
    {}
    const sdbus::IConnection::PollData data =
        connection_->getEventLoopPollData();
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    wait = std::clamp(wait, std::chrono::milliseconds(0),
                      std::chrono::milliseconds(10));
    pollfd p[2] = {{data.fd, data.events, 0}, {killedPidfd_.get(), POLLIN, 0}};
    (void)::poll(p, killedPidfd_ ? 2 : 1, static_cast<int>(wait.count()));
    if (killedPidfd_ && (p[1].revents & POLLIN) != 0)
    {
        exitedAt_ = Clock::now();
        killedPidfd_.reset();
    }
    while (connection_->processPendingRequest())
    {}
}

std::string Session::waitEnded(std::uint64_t handle, Clock::time_point deadline)
{
    for (;;)
    {
        for (const Ended& e : governor_.ended)
        {
            if (e.handle == handle)
            {
                const auto us =
                    std::chrono::duration_cast<std::chrono::microseconds>(
                        e.seen - killedAt_)
                        .count();
                const auto exitUs =
                    exitedAt_
                        ? std::chrono::duration_cast<std::chrono::microseconds>(
                              *exitedAt_ - killedAt_)
                              .count()
                        : -1;
                return "ok " + std::to_string(us) + " " + e.owner + " " +
                       e.reason + " " + std::to_string(exitUs);
            }
        }
        if (Clock::now() >= deadline)
        {
            return "error timeout";
        }
        serviceBus(deadline);
    }
}

std::string Session::waitPolicy(Clock::time_point deadline)
{
    for (;;)
    {
        if (!governor_.policyEvents.empty())
        {
            const PolicyEvent e = governor_.policyEvents.front();
            governor_.policyEvents.pop_front();
            std::string files;
            for (const std::string& f : e.files)
            {
                files += (files.empty() ? "" : ",") + f;
            }
            return "ok " + e.policy + " " + files;
        }
        if (Clock::now() >= deadline)
        {
            return "error timeout";
        }
        serviceBus(deadline);
    }
}

// Tallies calls as answered, refused with LimitExceeded, or refused
// otherwise.
struct Tally
{
    std::uint64_t answered = 0;
    std::uint64_t limited = 0;
    std::uint64_t other = 0;

    // Runs `call` and counts how it went; false when it was refused.
    template <class Call>
    bool count(Call&& call)
    {
        try
        {
            call();
            ++answered;
            return true;
        }
        catch (const sdbus::Error& e)
        {
            ++(e.getName() == cppcgov::dbus::error::limitExceeded ? limited
                                                                  : other);
            return false;
        }
    }

    std::string answer() const
    {
        return "ok " + std::to_string(answered) + " " +
               std::to_string(limited) + " " + std::to_string(other);
    }
};

template <class Before>
std::string Session::burst(std::uint64_t calls, Before before)
{
    Tally tally;
    for (std::uint64_t i = 0; i < calls; ++i)
    {
        before();
        (void)tally.count([this]() { (void)governor_.ListHandles(); });
    }
    return tally.answer();
}

void Session::spoof(const std::string& name, bool unicast)
{
    if (!driverPath_)
    {
        driverPath_ =
            sdbus::createObject(*connection_, "/org/freedesktop/DBus");
        pinger_ = sdbus::createProxy(*connection_, cppcgov::dbus::serviceName,
                                     cppcgov::dbus::objectPath);
    }
    sdbus::Signal signal =
        driverPath_->createSignal("org.freedesktop.DBus", "NameOwnerChanged");
    signal << name << name << std::string();
    if (unicast)
    {
        signal.setDestination(cppcgov::dbus::serviceName);
    }
    signal.send();
    // The bus keeps one connection's messages to the daemon in order: once
    // the ping is answered, the daemon has handled the signal.
    pinger_->callMethod("Ping").onInterface("org.freedesktop.DBus.Peer");
}

std::string Session::eachClamp(std::uint32_t pid, std::uint16_t utilMin,
                               std::uint16_t utilMax)
{
    Tally tally;
    for (Extra& e : extras_)
    {
        while (tally.count([&]() {
            std::uint64_t handle = 0;
            e.proxy->callMethod("SetClamp")
                .onInterface(cppcgov::dbus::interfaceName)
                .withArguments(pid, false, utilMin, utilMax)
                .storeResultsTo(handle);
        }))
        {}
    }
    return tally.answer();
}

std::string Session::eachList()
{
    Tally tally;
    for (Extra& e : extras_)
    {
        (void)tally.count([&]() {
            e.proxy->callMethod("ListHandles")
                .onInterface(cppcgov::dbus::interfaceName);
        });
    }
    return tally.answer();
}

std::string Session::eachHeadroom(
    std::uint32_t windowMs, const std::string& calculation, std::uint32_t cpu)
{
    Tally tally;
    const std::vector<std::uint32_t> cpus{cpu};
    for (Extra& e : extras_)
    {
        (void)tally.count([&]() {
            e.proxy->callMethod("GetCpuHeadroom")
                .onInterface(cppcgov::dbus::interfaceName)
                .withArguments(cpus, windowMs, calculation);
        });
    }
    return tally.answer();
}

std::string Session::run(const std::vector<std::string>& words)
{
    const std::string& command = words.front();
    const auto msArg = [&words](std::size_t i) {
        return Clock::now() +
               std::chrono::milliseconds(number(words[i], 600000));
    };
    try
    {
        if (command == "name")
        {
            need(words, 1);
            return "ok " + connection_->getUniqueName();
        }
        if (command == "pid")
        {
            need(words, 1);
            return "ok " + std::to_string(::getpid());
        }
        if (command == "clamp")
        {
            need(words, 5);
            const auto handle = governor_.SetClamp(
                static_cast<std::uint32_t>(number(words[1], UINT32_MAX)),
                number(words[2], 1) == 1,
                static_cast<std::uint16_t>(number(words[3], UINT16_MAX)),
                static_cast<std::uint16_t>(number(words[4], UINT16_MAX)));
            return "ok " + std::to_string(handle);
        }
        if (command == "latency")
        {
            need(words, 3);
            const auto handle = governor_.SetLatency(
                static_cast<std::uint32_t>(number(words[1], UINT32_MAX)),
                static_cast<std::uint32_t>(number(words[2], UINT32_MAX)));
            return "ok " + std::to_string(handle);
        }
        if (command == "latency-cpus")
        {
            if (words.size() < 2)
            {
                throw UsageError{"latency-cpus takes US and CPUs"};
            }
            std::vector<std::uint32_t> cpus;
            for (std::size_t i = 2; i < words.size(); ++i)
            {
                cpus.push_back(
                    static_cast<std::uint32_t>(number(words[i], UINT32_MAX)));
            }
            const auto handle = governor_.SetLatencyCpus(
                cpus, static_cast<std::uint32_t>(number(words[1], UINT32_MAX)));
            return "ok " + std::to_string(handle);
        }
        if (command == "prefer")
        {
            need(words, 3);
            const auto handle = governor_.SetEnergyPreference(
                static_cast<std::uint32_t>(number(words[1], UINT32_MAX)),
                words[2]);
            return "ok " + std::to_string(handle);
        }
        if (command == "prefer-cpus")
        {
            if (words.size() < 2)
            {
                throw UsageError{"prefer-cpus takes PREF and CPUs"};
            }
            std::vector<std::uint32_t> cpus;
            for (std::size_t i = 2; i < words.size(); ++i)
            {
                cpus.push_back(
                    static_cast<std::uint32_t>(number(words[i], UINT32_MAX)));
            }
            const auto handle =
                governor_.SetEnergyPreferenceCpus(cpus, words[1]);
            return "ok " + std::to_string(handle);
        }
        if (command == "release")
        {
            need(words, 2);
            governor_.Release(number(words[1], UINT64_MAX));
            return "ok";
        }
        if (command == "reload")
        {
            need(words, 1);
            std::string files;
            for (const std::string& f : governor_.Reload())
            {
                files += (files.empty() ? "" : ",") + f;
            }
            return "ok " + files;
        }
        if (command == "burst")
        {
            need(words, 2);
            return burst(number(words[1], 1000000), []() {});
        }
        if (command == "spoof-burst")
        {
            need(words, 2);
            const std::string self = connection_->getUniqueName();
            return burst(number(words[1], 1000000),
                         [&]() { spoof(self, true); });
        }
        if (command == "spoof")
        {
            need(words, 3);
            if (words[2] != "unicast" && words[2] != "broadcast")
            {
                throw UsageError{"spoof takes unicast or broadcast"};
            }
            spoof(words[1], words[2] == "unicast");
            return "ok";
        }
        if (command == "connect")
        {
            need(words, 2);
            const std::uint64_t n = number(words[1], 4096);
            for (std::uint64_t i = 0; i < n; ++i)
            {
                Extra e;
                e.connection =
                    sdbus::createSessionBusConnectionWithAddress(address_);
                e.proxy = sdbus::createProxy(*e.connection,
                                             cppcgov::dbus::serviceName,
                                             cppcgov::dbus::objectPath);
                extras_.push_back(std::move(e));
            }
            return "ok";
        }
        if (command == "each-clamp")
        {
            need(words, 4);
            return eachClamp(
                static_cast<std::uint32_t>(number(words[1], UINT32_MAX)),
                static_cast<std::uint16_t>(number(words[2], UINT16_MAX)),
                static_cast<std::uint16_t>(number(words[3], UINT16_MAX)));
        }
        if (command == "each-list")
        {
            need(words, 1);
            return eachList();
        }
        if (command == "headroom")
        {
            if (words.size() < 4)
            {
                throw UsageError{"headroom takes MS, CALC and CPUs"};
            }
            std::vector<std::uint32_t> cpus;
            for (std::size_t i = 3; i < words.size(); ++i)
            {
                cpus.push_back(
                    static_cast<std::uint32_t>(number(words[i], UINT32_MAX)));
            }
            const auto [headroom, perCpu, coveredMs] = governor_.GetCpuHeadroom(
                cpus, static_cast<std::uint32_t>(number(words[1], UINT32_MAX)),
                words[2]);
            std::ostringstream out;
            out << "ok " << headroom << " " << coveredMs;
            for (const auto& c : perCpu)
            {
                out << " " << c.get<0>() << ":" << c.get<1>();
            }
            return out.str();
        }
        if (command == "each-headroom")
        {
            need(words, 4);
            return eachHeadroom(
                static_cast<std::uint32_t>(number(words[1], UINT32_MAX)),
                words[2],
                static_cast<std::uint32_t>(number(words[3], UINT32_MAX)));
        }
        if (command == "kill")
        {
            need(words, 3);
            const auto pid = static_cast<pid_t>(number(words[1], INT32_MAX));
            const auto sig = static_cast<int>(number(words[2], 64));
            killedPidfd_.reset();
            (void)cppc::backend::openPidfd(pid, cppc::backend::PidfdOf::process,
                                           killedPidfd_);
            exitedAt_.reset();
            killedAt_ = Clock::now();
            if (::kill(pid, sig) != 0)
            {
                return "error kill " +
                       std::error_code(errno, std::generic_category())
                           .message();
            }
            return "ok";
        }
        if (command == "wait-ended")
        {
            need(words, 3);
            return waitEnded(number(words[1], UINT64_MAX), msArg(2));
        }
        if (command == "started")
        {
            need(words, 1);
            serviceBus(Clock::now());
            std::string out = "ok";
            for (const std::string& e : governor_.started)
            {
                out += " " + e;
            }
            return out;
        }
        if (command == "wait-policy")
        {
            need(words, 2);
            return waitPolicy(msArg(1));
        }
        throw UsageError{"unknown command '" + command + "'"};
    }
    catch (const sdbus::Error& e)
    {
        return "error " + e.getName() + " " + oneLine(e.getMessage());
    }
    catch (const UsageError& e)
    {
        return "error usage " + e.why;
    }
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2)
    {
        std::cerr << "usage: session_client ADDRESS\n";
        return 2;
    }
    try
    {
        Session session(argv[1]);
        std::string line;
        while (std::getline(std::cin, line))
        {
            std::istringstream in(line);
            std::vector<std::string> words;
            for (std::string w; in >> w;)
            {
                words.push_back(w);
            }
            if (words.empty())
            {
                continue;
            }
            std::cout << session.run(words) << std::endl;
        }
        return 0;
    }
    catch (const std::exception& e)
    {
        std::cerr << "session_client: " << e.what() << "\n";
        return 1;
    }
}
