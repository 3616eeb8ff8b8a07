// cppcgovd end to end: the real daemon on a private dbus-daemon, on the
// simulated rd-n2 machine with 128 CPUs (no <root>/proc/stat, so the
// simulated load is 0 and every CPU idles at the floor unless a hint raises
// it), measured from outside in one run. Three phases, one after the other
// on one daemon:
//
//   idle        nothing but the 1 ms sampling tick, for --idle-seconds.
//   hint-write  one busy child pinned to each host CPU (up to 128); rounds
//               of SetClamp(child, 1024, 1024) -> poll GetCpuStates until
//               the child's CPU asks for more than before -> Release ->
//               poll until it is back (polls 100 us apart). Each clamp raises
//               an idle CPU from the floor to nominal, so each causes a
//               register write: the daemon's hint_to_write percentiles
//               (GetStatistics: from the call's arrival to that write) are then
//               about these clamps. The client-side time from the call's start
//               until GetCpuStates shows the raise is an upper bound of the
//               same (it adds the reply and the polling).
//   hammer      --clients threads, each with its own bus connection,
//               calling SetClamp(0: its own process, 0, 1024) and Release
//               back to back for --seconds. A 0..1024 clamp changes no
//               request, so this is the cost of the calls alone. The
//               SetClamp round trip is timed around the synchronous call
//               with steady_clock.
//
// After each phase: the daemon's tick lateness (GetStatistics, over its
// last 4096 ticks, so phases last at least 5 s), its CPU use over the phase
// (utime + stime from /proc/<pid>/stat, as a percentage of one CPU) and its
// RSS at the end (VmRSS from /proc/<pid>/status).
//
// Usage: daemon_bench [--cppcgovd=PATH] [--clients=N] [--seconds=S]
//                     [--idle-seconds=S] [--cpus=N]
// cppcgovd defaults to ../daemon/cppcgovd from this program's directory
// (the build tree's layout). dbus-daemon is looked up in PATH. The config
// sets clients.max_calls_per_second and users.max_calls_per_second to their
// maximum (100000), so that the rate limits per client and per user do not
// cap the hammer.
#include "daemon/dbus/governor1.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace
{

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// Between two GetCpuStates polls: each one has the daemon marshal every
// CPU's state, which back to back would load the loop being measured.
constexpr microseconds pollGap{100};

struct Options
{
    fs::path cppcgovd;
    unsigned clients = 32;
    unsigned seconds = 10;
    unsigned idleSeconds = 5;
    unsigned cpus = 128;
};

[[noreturn]] void die(const std::string& what)
{
    throw std::runtime_error(what);
}

std::string errnoText(int err)
{
    return std::error_code(err, std::generic_category()).message();
}

// A child process, killed (SIGKILL unless told otherwise) and reaped when
// destroyed. Started with fork and exec; the child gets SIGKILL if this
// program dies first.
class Child
{
  public:
    // Runs `argv` with stdout to `stdoutFd` and stderr to `stderrFd` (-1:
    // inherited), pinned to `cpu` when given.
    Child(const std::vector<std::string>& argv, int stdoutFd, int stderrFd,
          std::optional<unsigned> cpu = std::nullopt)
    {
        std::vector<char*> args;
        for (const std::string& a : argv)
        {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ < 0)
        {
            die("fork: " + errnoText(errno));
        }
        if (pid_ == 0)
        {
            (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent)
            {
                ::_exit(127);
            }
            if (stdoutFd >= 0)
            {
                (void)::dup2(stdoutFd, STDOUT_FILENO);
            }
            if (stderrFd >= 0)
            {
                (void)::dup2(stderrFd, STDERR_FILENO);
            }
            if (cpu)
            {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(*cpu, &set);
                (void)::sched_setaffinity(0, sizeof(set), &set);
            }
            ::execvp(args[0], args.data());
            ::_exit(127);
        }
    }

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

  private:
    pid_t pid_ = -1;
    int status_ = 0;
};

// The whole text of a file ("" when it cannot be read).
std::string readText(const fs::path& path)
{
    std::string text;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
    {
        return text;
    }
    char buffer[4096];
    for (;;)
    {
        const ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n <= 0)
        {
            break;
        }
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

// The daemon's CPU time so far (utime + stime) and its resident set.
struct ProcessUsage
{
    nanoseconds cpu{0};
    std::uint64_t rssKb = 0;
};

ProcessUsage usageOf(pid_t pid)
{
    ProcessUsage u;
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string text = readText(proc + "/stat");
    // Fields after the command name, which ends at the last ')': state is
    // field 3, utime 14 and stime 15.
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos)
    {
        die("cannot read " + proc + "/stat");
    }
    std::istringstream fields(text.substr(close + 2));
    std::vector<std::string> f;
    for (std::string w; fields >> w;)
    {
        f.push_back(w);
    }
    if (f.size() < 13)
    {
        die("short " + proc + "/stat");
    }
    const std::uint64_t ticks = std::stoull(f[11]) + std::stoull(f[12]);
    const auto hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
    u.cpu = nanoseconds(static_cast<std::int64_t>(ticks * 1'000'000'000 / hz));

    std::istringstream status(readText(proc + "/status"));
    for (std::string line; std::getline(status, line);)
    {
        if (line.starts_with("VmRSS:"))
        {
            u.rssKb = std::stoull(line.substr(6));
        }
    }
    return u;
}

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
        std::vector<sdbus::Struct<
            std::uint32_t, std::uint16_t, std::uint16_t, std::uint16_t,
            std::uint32_t, std::uint32_t, std::string, std::int32_t,
            std::vector<sdbus::Struct<std::uint64_t, std::string, std::uint32_t,
                                      std::uint16_t, std::uint16_t>>>>
            states;
        proxy_->callMethod("GetCpuStates")
            .onInterface(cppcgov::dbus::interfaceName)
            .storeResultsTo(states);
        std::vector<std::uint32_t> perf;
        perf.reserve(states.size());
        for (const auto& s : states)
        {
            perf.push_back(std::get<4>(s));
        }
        return perf;
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

void writeFile(const fs::path& path, const std::string& text)
{
    std::ofstream out(path);
    out << text;
    if (!out.flush())
    {
        die("cannot write '" + path.string() + "'");
    }
}

// The bench's private world: a temporary directory with the bus config,
// the daemon's config, a fake root and a state directory; the bus; the
// daemon.
class World
{
  public:
    World(const Options& o) : options_(o)
    {
        char pattern[] = "/tmp/cppcgov-bench-XXXXXX";
        if (::mkdtemp(pattern) == nullptr)
        {
            die("mkdtemp: " + errnoText(errno));
        }
        dir_ = pattern;
        fs::create_directories(dir_ / "root");
        fs::create_directories(dir_ / "state");
        fs::create_directories(dir_ / "policy.d");
        writeFile(dir_ / "bus.conf",
                  "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus "
                  "Bus Configuration 1.0//EN\"\n"
                  " \"http://www.freedesktop.org/standards/dbus/1.0/"
                  "busconfig.dtd\">\n"
                  "<busconfig>\n"
                  "  <type>session</type>\n"
                  "  <listen>unix:path=" +
                      (dir_ / "bus").string() +
                      "</listen>\n"
                      "  <auth>EXTERNAL</auth>\n"
                      "  <limit name=\"max_replies_per_connection\">"
                      "1024</limit>\n"
                      "  <policy context=\"default\">\n"
                      "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
                      "    <allow eavesdrop=\"true\"/>\n"
                      "    <allow own=\"*\"/>\n"
                      "  </policy>\n"
                      "</busconfig>\n");
        writeFile(dir_ / "policy.yaml",
                  "backend:\n"
                  "  type: simulator\n"
                  "  simulator:\n"
                  "    layout: rd-n2\n"
                  "    cpus: " +
                      std::to_string(o.cpus) +
                      "\n"
                      "sampling:\n"
                      "  period_us: 1000\n"
                      "clients:\n"
                      "  max_handles: 64\n"
                      "  max_calls_per_second: 100000\n"
                      "users:\n"
                      "  max_calls_per_second: 100000\n");
    }

    ~World()
    {
        daemon_.reset();
        bus_.reset();
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

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

    void startBus()
    {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0)
        {
            die("pipe: " + errnoText(errno));
        }
        const fs::path log = dir_ / "dbus-daemon.log";
        const int logFd =
            ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        bus_ = std::make_unique<Child>(
            std::vector<std::string>{
                "dbus-daemon", "--config-file=" + (dir_ / "bus.conf").string(),
                "--nofork", "--print-address=1"},
            fds[1], logFd);
        ::close(fds[1]);
        if (logFd >= 0)
        {
            ::close(logFd);
        }
        std::string line;
        char c = 0;
        pollfd p{fds[0], POLLIN, 0};
        const auto deadline = Clock::now() + std::chrono::seconds(10);
        while (Clock::now() < deadline && ::poll(&p, 1, 100) >= 0)
        {
            if ((p.revents & (POLLIN | POLLHUP)) == 0)
            {
                continue;
            }
            if (::read(fds[0], &c, 1) != 1 || c == '\n')
            {
                break;
            }
            line += c;
        }
        ::close(fds[0]);
        if (line.empty())
        {
            die("dbus-daemon did not print its address");
        }
        address_ = line;
    }

    void startDaemon()
    {
        const fs::path log = dir_ / "cppcgovd.log";
        const int fd =
            ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
        {
            die("cannot create '" + log.string() + "'");
        }
        daemon_ = std::make_unique<Child>(
            std::vector<std::string>{
                options_.cppcgovd.string(), "--config",
                (dir_ / "policy.yaml").string(), "--config-dir",
                (dir_ / "policy.d").string(), "--root",
                (dir_ / "root").string(), "--state-dir",
                (dir_ / "state").string(), "--bus-address", address_},
            fd, fd);
        ::close(fd);
        Client probe(address_);
        const auto deadline = Clock::now() + std::chrono::seconds(15);
        while (!probe.daemonOnBus())
        {
            if (daemon_->exited() || Clock::now() > deadline)
            {
                die("cppcgovd did not start:\n" + daemonLog());
            }
            std::this_thread::sleep_for(milliseconds(10));
        }
    }

    // Stops the daemon with SIGTERM; returns its exit status.
    int stopDaemon()
    {
        const int status = daemon_->stop(SIGTERM);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

    std::string daemonLog() const
    {
        return readText(dir_ / "cppcgovd.log");
    }

  private:
    const Options& options_;
    fs::path dir_;
    std::string address_;
    std::unique_ptr<Child> bus_;
    std::unique_ptr<Child> daemon_;
};

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

struct HintWriteResult
{
    unsigned rounds = 0;
    unsigned timeouts = 0;
    std::vector<microseconds> callToRaise;
};

// Polls until `cpu`'s requested perf satisfies `done`, every pollGap;
// false after 1 s.
template <class Done>
bool pollPerf(Client& client, unsigned cpu, Done&& done)
{
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < deadline)
    {
        if (done(client.requestedPerf().at(cpu)))
        {
            return true;
        }
        std::this_thread::sleep_for(pollGap);
    }
    return false;
}

HintWriteResult hintToWrite(World& world, unsigned simCpus,
                            std::chrono::seconds minimum)
{
    const unsigned hostCpus = std::min(
        static_cast<unsigned>(std::thread::hardware_concurrency()), simCpus);
    std::vector<std::unique_ptr<Child>> busy;
    for (unsigned cpu = 0; cpu < std::max(hostCpus, 1U); ++cpu)
    {
        busy.push_back(std::make_unique<Child>(
            std::vector<std::string>{"sh", "-c", "while :; do :; done"}, -1, -1,
            cpu));
    }
    Client client(world.address());
    HintWriteResult r;
    const auto end = Clock::now() + minimum;
    for (unsigned i = 0; Clock::now() < end || i < 64; ++i)
    {
        const unsigned cpu = i % static_cast<unsigned>(busy.size());
        const std::uint32_t before = client.requestedPerf().at(cpu);
        const auto start = Clock::now();
        const std::uint64_t handle = client.setClamp(
            static_cast<std::uint32_t>(busy[cpu]->pid()), 1024, 1024);
        const bool raised = pollPerf(client, cpu, [before](std::uint32_t p) {
            return p > before;
        });
        const auto raisedAt = Clock::now();
        client.release(handle);
        ++r.rounds;
        if (!raised)
        {
            ++r.timeouts;
            continue;
        }
        r.callToRaise.push_back(duration_cast<microseconds>(raisedAt - start));
        // Back at the floor, so that the next clamp writes again.
        (void)pollPerf(client, cpu,
                       [before](std::uint32_t p) { return p <= before; });
    }
    return r;
}

struct HammerResult
{
    std::uint64_t setClamps = 0;
    std::uint64_t releases = 0;
    std::uint64_t errors = 0;
    std::string firstError;
    double seconds = 0;
    std::vector<nanoseconds> roundTrips;
};

HammerResult hammer(World& world, unsigned clients, std::chrono::seconds length)
{
    struct PerThread
    {
        std::vector<nanoseconds> roundTrips;
        std::uint64_t releases = 0;
        std::uint64_t errors = 0;
        std::string firstError;
    };
    std::vector<PerThread> results(clients);
    std::atomic<bool> go{false};
    std::atomic<bool> stop{false};
    std::atomic<unsigned> ready{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < clients; ++t)
    {
        threads.emplace_back([&world, &go, &stop, &ready, &out = results[t]]() {
            Client client(world.address());
            out.roundTrips.reserve(100000);
            ++ready;
            while (!go.load())
            {
                std::this_thread::yield();
            }
            while (!stop.load(std::memory_order_relaxed))
            {
                try
                {
                    const auto start = Clock::now();
                    const std::uint64_t h = client.setClamp(0, 0, 1024);
                    out.roundTrips.push_back(Clock::now() - start);
                    client.release(h);
                    ++out.releases;
                }
                catch (const sdbus::Error& e)
                {
                    if (out.errors++ == 0)
                    {
                        out.firstError = e.getName() + ": " + e.getMessage();
                    }
                }
            }
        });
    }
    while (ready.load() < clients)
    {
        std::this_thread::sleep_for(milliseconds(1));
    }
    const auto start = Clock::now();
    go = true;
    std::this_thread::sleep_for(length);
    stop = true;
    for (std::thread& t : threads)
    {
        t.join();
    }
    HammerResult r;
    r.seconds = static_cast<double>(
                    duration_cast<microseconds>(Clock::now() - start).count()) /
                1e6;
    for (PerThread& p : results)
    {
        r.setClamps += p.roundTrips.size();
        r.releases += p.releases;
        r.errors += p.errors;
        if (r.firstError.empty())
        {
            r.firstError = p.firstError;
        }
        r.roundTrips.insert(r.roundTrips.end(), p.roundTrips.begin(),
                            p.roundTrips.end());
    }
    return r;
}

template <class T>
bool parse(std::string_view text, T& out)
{
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc{} && ptr == end;
}

std::optional<Options> parseArgs(int argc, char** argv)
{
    Options o;
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    o.cppcgovd = self.parent_path().parent_path() / "daemon" / "cppcgovd";
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg(argv[i]);
        const auto eq = arg.find('=');
        const std::string_view key = arg.substr(0, eq);
        const std::string_view value =
            eq == std::string_view::npos ? "" : arg.substr(eq + 1);
        bool ok = false;
        if (key == "--cppcgovd")
        {
            o.cppcgovd = std::string(value);
            ok = !value.empty();
        }
        else if (key == "--clients")
        {
            ok = parse(value, o.clients) && o.clients > 0 && o.clients <= 256;
        }
        else if (key == "--seconds")
        {
            ok = parse(value, o.seconds) && o.seconds > 0 && o.seconds <= 3600;
        }
        else if (key == "--idle-seconds")
        {
            ok = parse(value, o.idleSeconds) && o.idleSeconds > 0 &&
                 o.idleSeconds <= 3600;
        }
        else if (key == "--cpus")
        {
            ok = parse(value, o.cpus) && o.cpus > 0 && o.cpus <= 4096;
        }
        if (!ok)
        {
            std::cerr << "daemon_bench: bad argument '" << arg
                      << "'\nusage: daemon_bench [--cppcgovd=PATH] "
                         "[--clients=N] [--seconds=S] [--idle-seconds=S] "
                         "[--cpus=N]\n";
            return std::nullopt;
        }
    }
    return o;
}

std::string us(nanoseconds ns)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f",
                  static_cast<double>(ns.count()) / 1000.0);
    return text;
}

std::string usFromNs(std::uint64_t ns)
{
    return us(nanoseconds(static_cast<std::int64_t>(ns)));
}

void printPhases(const std::vector<PhaseReport>& phases)
{
    std::printf("\n%-11s %7s %8s %8s %11s %11s %11s %7s %8s\n", "phase", "secs",
                "CPU %", "RSS MiB", "late p50 us", "late p99 us", "late max us",
                "early", "skipped");
    for (const PhaseReport& p : phases)
    {
        const auto stat = [&p](const char* key) {
            const auto it = p.stats.find(key);
            return it == p.stats.end() ? std::uint64_t{0} : it->second;
        };
        std::printf("%-11s %7.1f %8.2f %8.1f %11s %11s %11s %7llu %8llu\n",
                    p.name.c_str(), p.seconds, p.cpuPercent,
                    static_cast<double>(p.rssKb) / 1024.0,
                    usFromNs(stat("tick_late_p50_ns")).c_str(),
                    usFromNs(stat("tick_late_p99_ns")).c_str(),
                    usFromNs(stat("tick_late_max_ns")).c_str(),
                    static_cast<unsigned long long>(stat("ticks_early")),
                    static_cast<unsigned long long>(stat("ticks_skipped")));
    }
}

int runBench(const Options& o, const std::string& commandLine)
{
    std::printf("cppcgovd end to end\ncommand: %s\n", commandLine.c_str());
    std::printf("cppcgovd: %s\nsimulator rd-n2, %u CPUs, sampling 1000 us; "
                "host: %u CPUs\n",
                o.cppcgovd.c_str(), o.cpus,
                std::thread::hardware_concurrency());
    std::printf("load average at start: %s", readText("/proc/loadavg").c_str());
    std::fflush(stdout);

    World world(o);
    world.startBus();
    world.startDaemon();
    Client control(world.address());
    std::vector<PhaseReport> phases;

    // Let start-up settle, then the idle phase.
    std::this_thread::sleep_for(milliseconds(500));
    {
        PhaseMeter meter(world.daemonPid(), "idle");
        std::this_thread::sleep_for(std::chrono::seconds(o.idleSeconds));
        phases.push_back(meter.finish(control));
    }

    HintWriteResult hw;
    {
        PhaseMeter meter(world.daemonPid(), "hint-write");
        hw = hintToWrite(world, o.cpus, std::chrono::seconds(o.idleSeconds));
        phases.push_back(meter.finish(control));
    }
    const PhaseReport hwPhase = phases.back();

    HammerResult hr;
    {
        PhaseMeter meter(world.daemonPid(), "hammer");
        hr = hammer(world, o.clients, std::chrono::seconds(o.seconds));
        phases.push_back(meter.finish(control));
    }

    const int status = world.stopDaemon();

    const std::uint64_t calls = hr.setClamps + hr.releases;
    std::printf("\nhint round trip: %u client thread(s), each its own "
                "connection, SetClamp(own process, 0, 1024) + Release for "
                "%.1f s\n",
                o.clients, hr.seconds);
    std::printf("  SetClamp round trip p50 %s us, p99 %s us (%llu calls)\n",
                us(percentile(hr.roundTrips, 50)).c_str(),
                us(percentile(hr.roundTrips, 99)).c_str(),
                static_cast<unsigned long long>(hr.setClamps));
    std::printf(
        "  calls (SetClamp + Release): %llu, %.0f calls/s; "
        "errors: %llu%s%s\n",
        static_cast<unsigned long long>(calls),
        static_cast<double>(calls) / hr.seconds,
        static_cast<unsigned long long>(hr.errors),
        hr.firstError.empty() ? "" : ", first: ", hr.firstError.c_str());

    std::vector<nanoseconds> raise;
    for (microseconds m : hw.callToRaise)
    {
        raise.push_back(m);
    }
    const auto hwStat = [&hwPhase](const char* key) {
        const auto it = hwPhase.stats.find(key);
        return it == hwPhase.stats.end() ? std::uint64_t{0} : it->second;
    };
    std::printf("\nhint to register write: %u clamps 1024..1024 on busy "
                "children (%u not seen within 1 s)\n",
                hw.rounds, hw.timeouts);
    std::printf("  daemon (call arrival -> write): p50 %s us, p99 %s us\n",
                usFromNs(hwStat("hint_to_write_p50_ns")).c_str(),
                usFromNs(hwStat("hint_to_write_p99_ns")).c_str());
    std::printf("  client (call start -> GetCpuStates shows it): p50 %s us, "
                "p99 %s us\n",
                us(percentile(raise, 50)).c_str(),
                us(percentile(raise, 99)).c_str());

    printPhases(phases);
    std::printf("\n(tick lateness over the daemon's last 4096 ticks of each "
                "phase; CPU %% of one CPU over the phase; RSS at its end)\n");
    std::printf("cppcgovd exit status after SIGTERM: %d\n", status);
    std::printf("load average at end: %s", readText("/proc/loadavg").c_str());
    if (status != 0 || hr.errors != 0 || hw.timeouts != 0)
    {
        std::printf("\ncppcgovd log:\n%s", world.daemonLog().c_str());
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    const std::optional<Options> options = parseArgs(argc, argv);
    if (!options)
    {
        return 2;
    }
    std::string commandLine;
    for (int i = 0; i < argc; ++i)
    {
        commandLine += (i == 0 ? "" : " ") + std::string(argv[i]);
    }
    try
    {
        return runBench(*options, commandLine);
    }
    catch (const std::exception& e)
    {
        std::cerr << "daemon_bench: " << e.what() << "\n";
        return 1;
    }
}
