// SPDX-License-Identifier: Apache-2.0
// cppc_platform: the CPPC platform behind the VM suite's guest (platform.hpp
// says what it plays). Started by the rig beside QEMU once the guest has
// booted:
//
//   cppc_platform --memory FILE --ram-base ADDR --layout FILE
//                 --control SOCKET --qemu-pid PID --vcpu-tids T0,T1,...
//                 [--cgroup auto|none|v1:DIR|v2:DIR] [--cgroup-name NAME]
//                 [--period-us 10000] [--share-at-highest 1.0]
//                 [--share-floor 0]
//                 [--latency-us 1000] [--pcc-latency-us 100]
//                 [--curve vf|linear] [--step-us 500] [--pcc-poll-us 20]
//                 [--log FILE]
//
// FILE of --memory is QEMU's shared memory backend (its offset 0 is
// guest-physical --ram-base); the layout is layout.hpp's text; each
// virtual CPU's thread (QMP query-cpus-fast's thread-id, in CPU order)
// gets a cgroup of its own with a CPU quota (vcpu.hpp) unless --cgroup
// none. The control socket takes platform.hpp's commands, a line each,
// and answers a line each. Prints "ready" on standard output once the
// registers are reset and the socket listens. SIGTERM or SIGINT ends it:
// every thread goes back to its cgroup and the cgroups are removed; the
// exit status is 1 when that failed (each failure on standard error).
#include "tests/vm/platform/guest_memory.hpp"
#include "tests/vm/platform/layout.hpp"
#include "tests/vm/platform/platform.hpp"
#include "tests/vm/platform/text.hpp"
#include "tests/vm/platform/vcpu.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace
{

using namespace cppcgov::platform;

volatile std::sig_atomic_t stopRequested = 0;

void onSignal(int /*signal*/)
{
    stopRequested = 1;
}

std::uint64_t nowNs()
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000U +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

void sleepUntil(std::uint64_t ns)
{
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000U);
    ts.tv_nsec = static_cast<long>(ns % 1'000'000'000U);
    ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

struct UsageError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

std::uint64_t wholeArg(const std::string& name, const std::string& text)
{
    const auto value = parseNumber(text);
    if (!value)
    {
        throw UsageError(name + ": '" + text + "' is not a whole number");
    }
    return *value;
}

// The control socket: connections kept open, commands a line each.
class Control
{
  public:
    explicit Control(const std::string& socketPath) : path_(socketPath)
    {
        listener_ =
            ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (listener_ < 0 || path_.size() >= sizeof(addr.sun_path))
        {
            throw std::runtime_error(
                "control socket '" + path_ + "': cannot be made");
        }
        std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
        ::unlink(path_.c_str());
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), // NOLINT
                   sizeof(addr)) != 0 ||
            ::listen(listener_, 8) != 0)
        {
            throw std::runtime_error(
                "control socket '" + path_ + "': " + std::strerror(errno));
        }
    }
    ~Control()
    {
        for (const auto& [fd, buffer] : clients_)
        {
            ::close(fd);
        }
        ::close(listener_);
        ::unlink(path_.c_str());
    }
    Control(const Control&) = delete;
    Control& operator=(const Control&) = delete;

    // Accepts, reads and answers whatever is there; never waits.
    void serve(Platform& platform)
    {
        while (clients_.size() < maxClients)
        {
            const int fd = ::accept4(listener_, nullptr, nullptr,
                                     SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0)
            {
                break;
            }
            clients_.emplace(fd, std::string{});
        }
        for (auto it = clients_.begin(); it != clients_.end();)
        {
            if (!serveOne(it->first, it->second, platform))
            {
                ::close(it->first);
                it = clients_.erase(it);
            }
            else
            {
                ++it;
            }
        }
    }

  private:
    static constexpr std::size_t maxClients = 8;
    static constexpr std::size_t maxLine = 4096;

    static bool serveOne(int fd, std::string& buffer, Platform& platform)
    {
        char chunk[1024];
        while (true)
        {
            const ssize_t n = ::read(fd, chunk, sizeof(chunk));
            if (n == 0)
            {
                return false;
            }
            if (n < 0)
            {
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                {
                    return false;
                }
                break;
            }
            buffer.append(chunk, static_cast<std::size_t>(n));
            if (buffer.size() > maxLine)
            {
                return false;
            }
        }
        for (std::size_t eol = buffer.find('\n'); eol != std::string::npos;
             eol = buffer.find('\n'))
        {
            const std::string reply =
                platform.command(std::string_view(buffer).substr(0, eol)) +
                "\n";
            buffer.erase(0, eol + 1);
            // A reply fits the socket's buffer; a client whose buffer is
            // full (it stopped reading) is dropped, never waited for: the
            // loop answers doorbells.
            std::size_t sent = 0;
            while (sent < reply.size())
            {
                pollfd p{fd, POLLOUT, 0};
                if (::poll(&p, 1, 0) <= 0)
                {
                    return false;
                }
                const ssize_t n =
                    ::write(fd, reply.data() + sent, reply.size() - sent);
                if (n <= 0)
                {
                    return false;
                }
                sent += static_cast<std::size_t>(n);
            }
        }
        return true;
    }

    std::string path_;
    int listener_ = -1;
    std::map<int, std::string> clients_;
};

std::vector<int> tids(const std::string& text)
{
    std::vector<int> result;
    std::size_t start = 0;
    while (start <= text.size())
    {
        const std::size_t comma = text.find(',', start);
        const std::string part = text.substr(start, comma - start);
        result.push_back(static_cast<int>(wholeArg("--vcpu-tids", part)));
        if (comma == std::string::npos)
        {
            break;
        }
        start = comma + 1;
    }
    return result;
}

std::vector<GuestMemory::Window> windows(const Layout& layout)
{
    std::vector<GuestMemory::Window> result;
    for (const CpuLayout& cpu : layout.cpus)
    {
        for (const Field* f : registers(cpu))
        {
            if (f->space == Space::memory)
            {
                result.push_back({f->address, f->width / 8U});
            }
        }
    }
    for (const SubspaceLayout& s : layout.subspaces)
    {
        result.push_back({s.base, s.size});
        result.push_back({s.doorbell.address, s.doorbell.width / 8U});
    }
    return result;
}

int run(const std::map<std::string, std::string>& args)
{
    const auto need = [&](const std::string& name) -> const std::string& {
        const auto it = args.find(name);
        if (it == args.end())
        {
            throw UsageError(name + " is required");
        }
        return it->second;
    };
    const auto get = [&](const std::string& name, const std::string& fallback) {
        const auto it = args.find(name);
        return it == args.end() ? fallback : it->second;
    };
    const Layout layout = readLayout(need("--layout"));
    const GuestMemory memory(need("--memory"),
                             wholeArg("--ram-base", need("--ram-base")),
                             windows(layout));
    const int pid =
        static_cast<int>(wholeArg("--qemu-pid", need("--qemu-pid")));
    const std::vector<int> threads = tids(need("--vcpu-tids"));
    if (threads.size() != layout.cpus.size())
    {
        throw UsageError(
            "--vcpu-tids names " + std::to_string(threads.size()) +
            " threads for " + std::to_string(layout.cpus.size()) + " CPUs");
    }
    std::vector<std::unique_ptr<BusyClock>> clocks;
    clocks.reserve(threads.size());
    std::vector<BusyEstimate> estimates(threads.size());
    for (const int tid : threads)
    {
        clocks.push_back(std::make_unique<BusyClock>(pid, tid));
    }

    const std::string cgroup = get("--cgroup", "auto");
    std::optional<CgroupChoice> choice;
    if (cgroup == "auto")
    {
        choice = findCpuController();
        if (!choice)
        {
            throw std::runtime_error(
                "no cgroup CPU controller: neither cgroup v1's cpu "
                "hierarchy nor cgroup v2 with the cpu controller is "
                "mounted under /sys/fs/cgroup, so the virtual CPUs cannot "
                "be slowed down (--cgroup none runs without)");
        }
    }
    else if (cgroup.rfind("v1:", 0) == 0 || cgroup.rfind("v2:", 0) == 0)
    {
        choice =
            CgroupChoice{cgroup[1] == '1' ? CgroupKind::v1 : CgroupKind::v2,
                         cgroup.substr(3)};
    }
    else if (cgroup != "none")
    {
        throw UsageError("--cgroup: auto, none, v1:DIR or v2:DIR");
    }
    const std::uint64_t periodUs =
        wholeArg("--period-us", get("--period-us", "10000"));
    std::vector<std::unique_ptr<CpuQuota>> quotas;
    if (choice)
    {
        const std::string name =
            get("--cgroup-name", "cppc-platform-" + std::to_string(::getpid()));
        for (std::size_t i = 0; i < threads.size(); ++i)
        {
            quotas.push_back(std::make_unique<CpuQuota>(
                choice->kind, choice->root, name, static_cast<unsigned>(i), pid,
                threads[i], periodUs));
        }
    }

    std::ofstream logFile;
    if (const auto it = args.find("--log"); it != args.end())
    {
        logFile.open(it->second, std::ios::app);
    }
    PlatformOptions options;
    const auto curve = powerCurveNamed(get("--curve", "vf"));
    if (!curve)
    {
        throw UsageError("--curve: vf or linear");
    }
    options.curve = *curve;
    options.latencyNs =
        wholeArg("--latency-us", get("--latency-us", "1000")) * 1000;
    options.pccLatencyNs =
        wholeArg("--pcc-latency-us", get("--pcc-latency-us", "100")) * 1000;
    options.shareAtHighest = std::stod(get("--share-at-highest", "1.0"));
    if (!(options.shareAtHighest > 0 && options.shareAtHighest <= 1))
    {
        throw UsageError("--share-at-highest: above 0, at most 1");
    }
    options.shareFloor = std::stod(get("--share-floor", "0"));
    if (!(options.shareFloor >= 0 &&
          options.shareFloor < options.shareAtHighest))
    {
        throw UsageError("--share-floor: 0 or more, below --share-at-highest");
    }
    options.busyClock =
        [&clocks, &estimates](unsigned cpu) -> std::optional<std::uint64_t> {
        const auto reading = clocks[cpu]->read();
        if (!reading)
        {
            return std::nullopt;
        }
        return estimates[cpu].add(nowNs(), *reading);
    };
    options.setShare = [&quotas](unsigned cpu, double share) {
        return quotas.empty() || quotas[cpu]->set(share);
    };
    const std::uint64_t started = nowNs();
    options.log = [&logFile, started](std::string_view line) {
        if (logFile)
        {
            logFile << (nowNs() - started) / 1000 << " us " << line << '\n';
        }
    };
    Platform platform(layout, memory, options, started);
    platform.initialise();
    for (unsigned cpu = 0; cpu < quotas.size(); ++cpu)
    {
        const auto& scale = layout.cpus[cpu].scale;
        quotas[cpu]->set(shareOf(options, scale.lowest, scale.highest));
    }
    Control control(need("--control"));

    ::prctl(PR_SET_TIMERSLACK, 1000UL);
    const std::uint64_t stepNs =
        wholeArg("--step-us", get("--step-us", "500")) * 1000;
    const std::uint64_t pollNs =
        platform.hasPcc()
            ? wholeArg("--pcc-poll-us", get("--pcc-poll-us", "20")) * 1000
            : stepNs;
    std::cout << "ready" << std::endl;
    std::uint64_t nextStep = nowNs() + stepNs;
    while (stopRequested == 0)
    {
        const std::uint64_t now = nowNs();
        platform.pollPcc(now);
        if (now >= nextStep)
        {
            platform.step(now);
            control.serve(platform);
            if (logFile)
            {
                logFile.flush();
            }
            nextStep += stepNs;
            if (nextStep < now)
            {
                nextStep = now + stepNs; // fell behind: no burst to catch up
            }
        }
        sleepUntil(std::min(nextStep, now + pollNs));
    }
    int status = 0;
    for (auto& quota : quotas)
    {
        if (!quota->release())
        {
            std::cerr << "cppc_platform: " << quota->lastError() << '\n';
            status = 1;
        }
    }
    return status;
}

} // namespace

int main(int argc, char** argv)
{
    std::map<std::string, std::string> args;
    for (int i = 1; i < argc; ++i)
    {
        const std::string name = argv[i];
        if (name.rfind("--", 0) != 0 || i + 1 >= argc)
        {
            std::cerr << "cppc_platform: '" << name
                      << "': options are --name VALUE (see the source's "
                         "header)\n";
            return 2;
        }
        args[name] = argv[++i];
    }
    struct sigaction action
    {};
    action.sa_handler = onSignal;
    ::sigaction(SIGTERM, &action, nullptr);
    ::sigaction(SIGINT, &action, nullptr);
    try
    {
        return run(args);
    }
    catch (const UsageError& e)
    {
        std::cerr << "cppc_platform: " << e.what() << '\n';
        return 2;
    }
    catch (const std::exception& e)
    {
        std::cerr << "cppc_platform: " << e.what() << '\n';
        return 1;
    }
}
