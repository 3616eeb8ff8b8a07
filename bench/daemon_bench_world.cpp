// SPDX-License-Identifier: Apache-2.0
#include "daemon_bench_world.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace cppcgov::bench
{
namespace
{

void writeFile(const fs::path& path, const std::string& text)
{
    std::ofstream out(path);
    out << text;
    if (!out.flush())
    {
        die("cannot write '" + path.string() + "'");
    }
}

} // namespace

[[noreturn]] void die(const std::string& what)
{
    throw std::runtime_error(what);
}

std::string errnoText(int err)
{
    return std::error_code(err, std::generic_category()).message();
}

std::string commandLine(int argc, char** argv)
{
    std::string text;
    for (int i = 0; i < argc; ++i)
    {
        text += (i == 0 ? "" : " ") + std::string(argv[i]);
    }
    return text;
}

std::pair<std::string_view, std::string_view> splitOption(
    std::string_view arg) noexcept
{
    const auto eq = arg.find('=');
    return {arg.substr(0, eq),
            eq == std::string_view::npos ? "" : arg.substr(eq + 1)};
}

std::optional<bool> parseWorldOption(std::string_view key,
                                     std::string_view value, Options& o)
{
    if (key == "--cppcgovd")
    {
        o.cppcgovd = std::string(value);
        return !value.empty();
    }
    if (key == "--clients")
    {
        return parseWhole(value, o.clients) && o.clients > 0 &&
               o.clients <= 256;
    }
    if (key == "--cpus")
    {
        return parseWhole(value, o.cpus) && o.cpus > 0 && o.cpus <= 4096;
    }
    return std::nullopt;
}

fs::path inBuildTree(const fs::path& relative)
{
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return self.parent_path().parent_path() / relative;
}

Child::Child(const std::vector<std::string>& argv, int stdoutFd, int stderrFd,
             std::optional<unsigned> cpu)
{
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
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

std::optional<int> Child::stopWithin(int sig, milliseconds patience)
{
    if (pid_ <= 0)
    {
        return status_;
    }
    (void)::kill(pid_, sig);
    const auto deadline = Clock::now() + patience;
    while (Clock::now() < deadline)
    {
        if (exited())
        {
            return status_;
        }
        std::this_thread::sleep_for(milliseconds(1));
    }
    if (exited())
    {
        return status_;
    }
    (void)stop(SIGKILL);
    return std::nullopt;
}

std::unique_ptr<Child> startLogged(const std::vector<std::string>& argv,
                                   const fs::path& log)
{
    const int fd =
        ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
    {
        die("cannot create '" + log.string() + "': " + errnoText(errno));
    }
    auto child = std::make_unique<Child>(argv, fd, fd);
    ::close(fd);
    return child;
}

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

std::string unlimitedClients()
{
    return "clients:\n"
           "  max_handles: 64\n"
           "  max_calls_per_second: 100000\n"
           "users:\n"
           "  max_handles: 16384\n"
           "  max_calls_per_second: 100000\n";
}

std::string simulatorPolicy(unsigned cpus)
{
    return "backend:\n"
           "  type: simulator\n"
           "  simulator:\n"
           "    layout: rd-n2\n"
           "    cpus: " +
           std::to_string(cpus) +
           "\n"
           "sampling:\n"
           "  period_us: 1000\n" +
           unlimitedClients();
}

World::World(fs::path cppcgovd, const std::string& policy) :
    cppcgovd_(std::move(cppcgovd))
{
    char pattern[] = "/tmp/cppcgov-bench-XXXXXX";
    if (::mkdtemp(pattern) == nullptr)
    {
        die("mkdtemp: " + errnoText(errno));
    }
    dir_ = pattern;
    root_ = dir_ / "root";
    state_ = dir_ / "state";
    fs::create_directories(root_);
    fs::create_directories(state_);
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
    writeFile(dir_ / "policy.yaml", policy);
}

World::~World()
{
    daemon_.reset();
    bus_.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
}

void World::startBus()
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

void World::startDaemon()
{
    std::vector<std::string> argv;
    if (daemonNice_ != 0)
    {
        argv = {"nice", "-n", std::to_string(daemonNice_)};
    }
    argv.insert(argv.end(),
                {cppcgovd_.string(), "--config",
                 (dir_ / "policy.yaml").string(), "--config-dir",
                 (dir_ / "policy.d").string(), "--root",
                 (daemonRoot_.empty() ? root_ : daemonRoot_).string(),
                 "--state-dir", state_.string(), "--bus-address", address_});
    daemon_ = startLogged(argv, dir_ / "cppcgovd.log");
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

namespace
{

int exitStatus(int waitStatus)
{
    return WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus)
                                 : 128 + WTERMSIG(waitStatus);
}

} // namespace

int World::stopDaemon()
{
    return exitStatus(daemon_->stop(SIGTERM));
}

std::optional<int> World::stopDaemonWithin(milliseconds patience)
{
    const std::optional<int> status = daemon_->stopWithin(SIGTERM, patience);
    if (!status)
    {
        return std::nullopt;
    }
    return exitStatus(*status);
}

std::string World::daemonLog() const
{
    return readText(dir_ / "cppcgovd.log");
}

HammerResult hammer(const std::string& address, unsigned clients,
                    milliseconds length, HammerCall what)
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
        threads.emplace_back(
            [&address, &go, &stop, &ready, what, t, &out = results[t]]() {
            Client client(address);
            out.roundTrips.reserve(100000);
            ++ready;
            while (!go.load())
            {
                std::this_thread::yield();
            }
            if (what == HammerCall::hold)
            {
                const std::uint64_t h =
                    t == 0 ? client.setClamp(0, 0, 1024) : 0;
                while (!stop.load())
                {
                    std::this_thread::sleep_for(milliseconds(10));
                }
                if (h != 0)
                {
                    client.release(h);
                }
                return;
            }
            while (!stop.load(std::memory_order_relaxed))
            {
                try
                {
                    const auto start = Clock::now();
                    if (what == HammerCall::ping)
                    {
                        client.ping();
                        out.roundTrips.push_back(Clock::now() - start);
                        continue;
                    }
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

} // namespace cppcgov::bench
