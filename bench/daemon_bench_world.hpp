// SPDX-License-Identifier: Apache-2.0
// The world the daemon benchmarks measure in: a private dbus-daemon and
// cppcgovd on it with a given policy file, started as child processes in a
// temporary directory whose fake root the caller may fill; a client
// connection with the calls the phases make; the hammer of clients calling
// back to back; and the daemon's CPU time and memory read from /proc.
// daemon_bench.cpp and pcc_sysfs_bench.cpp have the phases.
#pragma once

#include "daemon/dbus/governor1.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace cppcgov::bench
{

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

struct Options
{
    fs::path cppcgovd;
    unsigned clients = 32;
    unsigned seconds = 10;
    unsigned idleSeconds = 5;
    unsigned cpus = 128;
};

// Throws std::runtime_error(what).
[[noreturn]] void die(const std::string& what);

// The text of errno value `err`.
std::string errnoText(int err);

// The program's arguments joined with spaces, for the report.
std::string commandLine(int argc, char** argv);

// Whether `text` is all of a number of T, into `out`.
template <class T>
bool parseWhole(std::string_view text, T& out)
{
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc{} && ptr == end;
}

// "--key=value" as {"--key", "value"}; "--key" as {"--key", ""}.
std::pair<std::string_view, std::string_view> splitOption(
    std::string_view arg) noexcept;

// The options every daemon benchmark takes: --cppcgovd=PATH, --clients=N
// (1 to 256) and --cpus=N (1 to 4096), into `o`. Empty when `key` is none
// of them; else whether `value` is valid.
std::optional<bool> parseWorldOption(std::string_view key,
                                     std::string_view value, Options& o);

// `relative` from the build tree's top: the directory above the one this
// program is in ("daemon/cppcgovd" is the daemon beside the benchmarks).
fs::path inBuildTree(const fs::path& relative);

// A child process, killed (SIGKILL unless told otherwise) and reaped when
// destroyed. Started with fork and exec; the child gets SIGKILL if this
// program dies first.
class Child
{
  public:
    // Runs `argv` with stdout to `stdoutFd` and stderr to `stderrFd` (-1:
    // inherited), pinned to `cpu` when given.
    Child(const std::vector<std::string>& argv, int stdoutFd, int stderrFd,
          std::optional<unsigned> cpu = std::nullopt);

    ~Child()
    {
        stop(SIGKILL);
    }

    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    pid_t pid() const noexcept
    {
        return pid_;
    }

    // Whether it has exited (reaping it).
    bool exited()
    {
        if (pid_ <= 0)
        {
            return true;
        }
        if (::waitpid(pid_, &status_, WNOHANG) == pid_)
        {
            pid_ = -1;
            return true;
        }
        return false;
    }

    // Sends `sig` and waits for the exit; returns the wait status.
    int stop(int sig)
    {
        if (pid_ > 0)
        {
            (void)::kill(pid_, sig);
            (void)::waitpid(pid_, &status_, 0);
            pid_ = -1;
        }
        return status_;
    }

    // Sends `sig` and waits up to `patience` for the exit: the wait status,
    // or nothing when it had not exited by then (it is then killed with
    // SIGKILL and reaped).
    std::optional<int> stopWithin(int sig, milliseconds patience);

    // The wait status once exited() or a stop has reaped it.
    int status() const noexcept
    {
        return status_;
    }

  private:
    pid_t pid_ = -1;
    int status_ = 0;
};

// Starts `argv` as a Child whose stdout and stderr go to `log`, created
// afresh; throws std::runtime_error naming `log` when it cannot be.
std::unique_ptr<Child> startLogged(const std::vector<std::string>& argv,
                                   const fs::path& log);

// The whole text of a file ("" when it cannot be read).
std::string readText(const fs::path& path);

// The daemon's CPU time so far (utime + stime) and its resident set.
struct ProcessUsage
{
    nanoseconds cpu{0};
    std::uint64_t rssKb = 0;
};

// From /proc/<pid>/stat and status.
ProcessUsage usageOf(pid_t pid);

// The nearest-rank percentile p (0..100) of `v`, sorted in place.
template <class T>
T percentile(std::vector<T>& v, unsigned p)
{
    if (v.empty())
    {
        return T{};
    }
    std::sort(v.begin(), v.end());
    const std::size_t rank = (p * (v.size() - 1) + 50) / 100;
    return v[rank];
}

// A connection and a plain proxy of cppcgovd's object: no signal
// subscriptions, so the daemon's HandleEnded broadcasts do not pile up in
// connections that never read them.
class Client
{
  public:
    explicit Client(const std::string& address) :
        connection_(sdbus::createSessionBusConnectionWithAddress(address)),
        proxy_(sdbus::createProxy(*connection_, cppcgov::dbus::serviceName,
                                  cppcgov::dbus::objectPath))
    {}

    std::uint64_t setClamp(std::uint32_t pid, std::uint16_t min,
                           std::uint16_t max)
    {
        std::uint64_t handle = 0;
        proxy_->callMethod("SetClamp")
            .onInterface(cppcgov::dbus::interfaceName)
            .withArguments(pid, false, min, max)
            .storeResultsTo(handle);
        return handle;
    }

    void release(std::uint64_t handle)
    {
        proxy_->callMethod("Release")
            .onInterface(cppcgov::dbus::interfaceName)
            .withArguments(handle);
    }

    // The requested performance of every CPU (GetCpuStates).
    std::vector<std::uint32_t> requestedPerf()
    {
        std::vector<std::uint32_t> perf;
        for (const CpuState& s : cpuStates())
        {
            perf.push_back(s.requestedPerf);
        }
        return perf;
    }

    // What GetCpuStates says of one CPU that the benchmarks look at.
    struct CpuState
    {
        std::uint32_t requestedPerf = 0;
        // Empty while the CPU is fine, else why it is degraded.
        std::string degraded;
    };

    std::vector<CpuState> cpuStates()
    {
        std::vector<sdbus::Struct<
            std::uint32_t, std::uint16_t, std::uint16_t, std::uint16_t,
            std::uint32_t, std::uint32_t, std::string, std::int32_t,
            std::vector<sdbus::Struct<std::uint64_t, std::string, std::uint32_t,
                                      std::uint16_t, std::uint16_t>>,
            std::string>>
            states;
        proxy_->callMethod("GetCpuStates")
            .onInterface(cppcgov::dbus::interfaceName)
            .storeResultsTo(states);
        std::vector<CpuState> out;
        out.reserve(states.size());
        for (const auto& s : states)
        {
            out.push_back({std::get<4>(s), std::get<9>(s)});
        }
        return out;
    }

    // org.freedesktop.DBus.Peer.Ping on the daemon: answered by sd-bus in
    // the daemon's process without reaching its own code, the floor of any
    // round trip to it.
    void ping()
    {
        proxy_->callMethod("Ping").onInterface("org.freedesktop.DBus.Peer");
    }

    // The Version property: a round trip through the daemon's adaptor that
    // does no work of its own.
    std::string version()
    {
        return proxy_->getProperty("Version")
            .onInterface(cppcgov::dbus::interfaceName)
            .get<std::string>();
    }

    std::map<std::string, std::uint64_t> statistics()
    {
        std::map<std::string, std::uint64_t> stats;
        proxy_->callMethod("GetStatistics")
            .onInterface(cppcgov::dbus::interfaceName)
            .storeResultsTo(stats);
        return stats;
    }

    bool daemonOnBus()
    {
        bool has = false;
        auto bus = sdbus::createProxy(*connection_, "org.freedesktop.DBus",
                                      "/org/freedesktop/DBus");
        bus->callMethod("NameHasOwner")
            .onInterface("org.freedesktop.DBus")
            .withArguments(std::string(cppcgov::dbus::serviceName))
            .storeResultsTo(has);
        return has;
    }

  private:
    std::unique_ptr<sdbus::IConnection> connection_;
    std::unique_ptr<sdbus::IProxy> proxy_;
};

// What the table shows for one phase.
struct PhaseReport
{
    std::string name;
    double seconds = 0;
    double cpuPercent = 0;
    std::uint64_t rssKb = 0;
    std::map<std::string, std::uint64_t> stats;
};

// daemon_bench's policy file: the simulated rd-n2 machine with `cpus`
// CPUs, a 1 ms tick, and client and user limits that do not cap the
// hammer.
std::string simulatorPolicy(unsigned cpus);

// The limits of a policy file that let the hammer's clients call as fast as
// they can: "clients:" and "users:" sections.
std::string unlimitedClients();

// The bench's private world: a temporary directory with the bus config,
// the daemon's policy file (`policy`, as text), a fake root (root(), empty
// until the caller fills it) and a state directory; the bus; the daemon.
// Whatever is mounted under root() must be unmounted before the world is
// destroyed.
class World
{
  public:
    World(fs::path cppcgovd, const std::string& policy);
    ~World();

    World(const World&) = delete;
    World& operator=(const World&) = delete;

    const std::string& address() const noexcept
    {
        return address_;
    }

    pid_t daemonPid() const noexcept
    {
        return daemon_->pid();
    }

    const fs::path& root() const noexcept
    {
        return root_;
    }

    const fs::path& stateDir() const noexcept
    {
        return state_;
    }

    // What the daemon gets as --root from the next startDaemon() on: /
    // to observe the live system (the simulator then writes nothing of
    // it); root() by default.
    void setDaemonRoot(fs::path root)
    {
        daemonRoot_ = std::move(root);
    }

    // The niceness cppcgovd starts at from the next startDaemon() on: run
    // through `nice -n <nice>` when not 0 (the default: run directly, at
    // this program's own).
    void setDaemonNice(int nice) noexcept
    {
        daemonNice_ = nice;
    }

    // Starts the private dbus-daemon and learns its address.
    void startBus();
    // Starts cppcgovd on it and waits until it owns its name.
    void startDaemon();
    // Stops the daemon with SIGTERM; returns its exit status.
    int stopDaemon();
    // Stops it with SIGTERM, waiting up to `patience`: its exit status (128
    // + the signal when a signal ended it), or nothing when it had not
    // exited by then (it is killed).
    std::optional<int> stopDaemonWithin(milliseconds patience);
    std::string daemonLog() const;

  private:
    fs::path cppcgovd_;
    fs::path dir_;
    fs::path root_;
    fs::path daemonRoot_;
    int daemonNice_ = 0;
    fs::path state_;
    std::string address_;
    std::unique_ptr<Child> bus_;
    std::unique_ptr<Child> daemon_;
};

struct HammerResult
{
    std::uint64_t setClamps = 0;
    std::uint64_t releases = 0;
    std::uint64_t errors = 0;
    std::string firstError;
    double seconds = 0;
    std::vector<nanoseconds> roundTrips;
};

// What the hammer's clients call back to back: SetClamp(0: their own
// process, 0, 1024) + Release, or Peer.Ping, which sd-bus answers without
// the daemon's own code: the floor of what a call costs the daemon. Or
// nothing: the first client holds one clamp on its process and the others
// wait, so that the tick samples the same threads as under the hammer
// without any calls.
enum class HammerCall
{
    clampAndRelease,
    ping,
    hold,
};

// `clients` threads, each with its own connection to the bus at `address`,
// making `what` calls back to back for `length`; the SetClamp (or Ping)
// round trips are timed around the synchronous call with steady_clock.
HammerResult hammer(const std::string& address, unsigned clients,
                    milliseconds length, HammerCall what);

// Measures the daemon's CPU use over a phase.
class PhaseMeter
{
  public:
    PhaseMeter(pid_t pid, std::string name) :
        pid_(pid), start_(Clock::now()), before_(usageOf(pid))
    {
        report_.name = std::move(name);
    }

    PhaseReport finish(Client& client)
    {
        const ProcessUsage after = usageOf(pid_);
        const auto elapsed = Clock::now() - start_;
        report_.seconds =
            static_cast<double>(duration_cast<microseconds>(elapsed).count()) /
            1e6;
        report_.cpuPercent =
            100.0 * static_cast<double>((after.cpu - before_.cpu).count()) /
            static_cast<double>(duration_cast<nanoseconds>(elapsed).count());
        report_.rssKb = after.rssKb;
        report_.stats = client.statistics();
        return report_;
    }

  private:
    pid_t pid_;
    Clock::time_point start_;
    ProcessUsage before_;
    PhaseReport report_;
};

} // namespace cppcgov::bench
