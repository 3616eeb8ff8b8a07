// SPDX-License-Identifier: Apache-2.0
// vm_workload: the workloads of bench/vm (README.md there), run in the
// arm64 guest on the CPPC platform. Each prints one JSON object on
// standard output and measures latency against the intended start of the
// work, never against when it happened to begin.
//
//   vm_workload calibrate MS
//       spins MS milliseconds: {"loops_per_ms": N} at the current speed
//   vm_workload server --rate HZ --work LOOPS --seconds S [--threads N]
//                      [--seed N] [HINT]
//       an open-loop request server: requests arrive on a Poisson schedule
//       of HZ a second, each LOOPS loops of work, served by N worker
//       threads (2) in arrival order; rate 0 saturates it (every worker
//       always busy) and reports the throughput
//   vm_workload periodic --work LOOPS --period-us P --seconds S [HINT]
//       LOOPS of work every P microseconds; a miss is a period whose work
//       ends after the next period's start
//   vm_workload batch --seconds S [HINT]
//       spins S seconds: the loops it did
//   vm_workload burst --mark ADDRESS --ms MS --value V [--idle-ms 2000]
//       sleeps IDLE milliseconds once started, waking for 100 us every
//       50 ms (its own start-up, slow under emulation, would otherwise
//       raise the CPU's level and the kernel's estimate of the task
//       before the burst), writes V to the 64-bit word at guest-physical
//       ADDRESS
//       (/dev/mem) at its first instruction of work, then spins MS
//       milliseconds; the platform logs the mark with its own clock
//
// HINT (the latency-critical threads: the server's workers, the periodic
// task, the batch task) is one of
//   --hint MIN:MAX    a clamp of each thread through libcppcgov-client
//                     (the system bus, or $DBUS_SYSTEM_BUS_ADDRESS)
//   --uclamp MIN:MAX  the kernel's own clamp, sched_setattr(2)
// Exits 2 on bad arguments, 1 when a hint or the work could not be had.
#include "tools/client/cppcgov/client.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace
{

class UsageError : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

std::int64_t nowNs()
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleepUntil(std::int64_t ns)
{
    const timespec ts{static_cast<time_t>(ns / 1'000'000'000),
                      static_cast<long>(ns % 1'000'000'000)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
           EINTR)
    {}
}

// A fixed amount of work the compiler cannot drop or shorten.
std::uint64_t work(std::uint64_t loops)
{
    std::uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (std::uint64_t i = 0; i < loops; ++i)
    {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        asm volatile("" : "+r"(x));
    }
    return x;
}

// A whole number, decimal or 0x-prefixed hexadecimal.
std::uint64_t whole(std::string_view text, std::string_view what)
{
    std::uint64_t value = 0;
    const bool hex = text.size() > 2 && text.substr(0, 2) == "0x";
    const std::string_view digits = hex ? text.substr(2) : text;
    const auto [end, ec] = std::from_chars(
        digits.data(), digits.data() + digits.size(), value, hex ? 16 : 10);
    if (ec != std::errc() || end != digits.data() + digits.size() ||
        digits.empty())
    {
        throw UsageError(std::string(what) + ": '" + std::string(text) +
                         "' is not a whole number");
    }
    return value;
}

struct Bounds
{
    std::uint16_t min = 0;
    std::uint16_t max = 1024;
};

Bounds bounds(std::string_view text, std::string_view what)
{
    const auto colon = text.find(':');
    if (colon == std::string_view::npos)
    {
        throw UsageError(std::string(what) + ": MIN:MAX");
    }
    const auto min = whole(text.substr(0, colon), what);
    const auto max = whole(text.substr(colon + 1), what);
    if (min > max || max > 1024)
    {
        throw UsageError(std::string(what) + ": 0 <= MIN <= MAX <= 1024");
    }
    return {static_cast<std::uint16_t>(min), static_cast<std::uint16_t>(max)};
}

// The options after the subcommand: --name VALUE pairs.
struct Options
{
    std::map<std::string, std::string, std::less<>> values;

    [[nodiscard]] std::optional<std::string_view> get(std::string_view n) const
    {
        const auto it = values.find(n);
        if (it == values.end())
        {
            return std::nullopt;
        }
        return it->second;
    }
    [[nodiscard]] std::uint64_t number(std::string_view n) const
    {
        const auto v = get(n);
        if (!v)
        {
            throw UsageError(std::string(n) + " is needed");
        }
        return whole(*v, n);
    }
    [[nodiscard]] std::uint64_t number(std::string_view n,
                                       std::uint64_t otherwise) const
    {
        const auto v = get(n);
        return v ? whole(*v, n) : otherwise;
    }
};

Options parseOptions(int argc, char** argv, int first)
{
    Options o;
    for (int i = first; i < argc; i += 2)
    {
        const std::string_view name = argv[i];
        if (name.substr(0, 2) != "--" || i + 1 >= argc)
        {
            throw UsageError(
                "'" + std::string(name) + "': options are --name VALUE");
        }
        o.values.emplace(name, argv[i + 1]);
    }
    return o;
}

// sched_setattr(2)'s argument, as <linux/sched/types.h> has it (that
// header cannot be had beside glibc's <sched.h>).
struct SchedAttr
{
    std::uint32_t size;
    std::uint32_t policy;
    std::uint64_t flags;
    std::int32_t nice;
    std::uint32_t priority;
    std::uint64_t runtime;
    std::uint64_t deadline;
    std::uint64_t period;
    std::uint32_t utilMin;
    std::uint32_t utilMax;
};

// The hint every latency-critical thread takes on itself as it starts.
class Hint
{
  public:
    explicit Hint(const Options& o)
    {
        if (const auto h = o.get("--hint"))
        {
            kind_ = Kind::client;
            bounds_ = bounds(*h, "--hint");
        }
        if (const auto u = o.get("--uclamp"))
        {
            if (kind_ != Kind::none)
            {
                throw UsageError("--hint and --uclamp: one or the other");
            }
            kind_ = Kind::uclamp;
            bounds_ = bounds(*u, "--uclamp");
        }
    }

    // On the calling thread; the client's object, held until the end of
    // the thread, in `held`. Throws std::runtime_error when refused.
    void apply(cppcgov_hint** held) const
    {
        if (kind_ == Kind::client)
        {
            cppcgov_error error{};
            const int rc =
                cppcgov_clamp_thread(bounds_.min, bounds_.max, held, &error);
            if (rc < 0)
            {
                throw std::runtime_error(
                    std::string("--hint: ") + error.description);
            }
        }
        else if (kind_ == Kind::uclamp)
        {
            SchedAttr attr{};
            attr.size = sizeof attr;
            attr.flags = SCHED_FLAG_KEEP_ALL | SCHED_FLAG_UTIL_CLAMP;
            attr.utilMin = bounds_.min;
            attr.utilMax = bounds_.max;
            if (::syscall(SYS_sched_setattr, 0, &attr, 0U) != 0)
            {
                throw std::runtime_error(
                    std::string("--uclamp: sched_setattr: ") +
                    std::strerror(errno) +
                    (errno == EOPNOTSUPP
                         ? " (a kernel without CONFIG_UCLAMP_TASK)"
                         : ""));
            }
        }
    }

  private:
    enum class Kind
    {
        none,
        client,
        uclamp,
    };
    Kind kind_ = Kind::none;
    Bounds bounds_;
};

// A thread's hint, released when it ends.
struct HeldHint
{
    cppcgov_hint* hint = nullptr;
    HeldHint() = default;
    HeldHint(const HeldHint&) = delete;
    HeldHint& operator=(const HeldHint&) = delete;
    ~HeldHint()
    {
        cppcgov_hint_free(hint);
    }
};

double percentile(std::vector<std::int64_t> v, double p)
{
    if (v.empty())
    {
        return 0;
    }
    const auto k =
        static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k),
                     v.end());
    return static_cast<double>(v[k]) / 1000.0;
}

// ---- calibrate ----------------------------------------------------------

int calibrate(std::uint64_t ms)
{
    std::uint64_t loops = 0;
    const std::int64_t start = nowNs();
    const std::int64_t end = start + static_cast<std::int64_t>(ms) * 1'000'000;
    std::int64_t now = start;
    while (now < end)
    {
        (void)work(10'000);
        loops += 10'000;
        now = nowNs();
    }
    std::printf("{\"loops_per_ms\": %.1f}\n",
                static_cast<double>(loops) /
                    (static_cast<double>(now - start) / 1e6));
    return 0;
}

// ---- server ------------------------------------------------------------

struct Served
{
    std::int64_t intended; // ns
    std::int64_t latency;  // ns, from the intended arrival to the end
};

int server(const Options& o)
{
    const std::uint64_t rate = o.number("--rate");
    const std::uint64_t loops = o.number("--work");
    const std::uint64_t seconds = o.number("--seconds");
    const auto threads = static_cast<unsigned>(o.number("--threads", 2));
    const Hint hint(o);
    if (threads == 0 || threads > 64 || seconds == 0 || loops == 0)
    {
        throw UsageError("--threads 1..64, --seconds and --work above 0");
    }
    std::mutex lock;
    std::condition_variable arrived;
    std::deque<std::int64_t> queue; // intended arrivals
    bool closed = false;
    std::vector<std::vector<Served>> served(threads);
    std::atomic<int> failures{0};
    std::string failure;
    const std::int64_t start = nowNs() + 200'000'000; // all threads up
    const std::int64_t end =
        start + static_cast<std::int64_t>(seconds) * 1'000'000'000;

    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t)
    {
        workers.emplace_back([&, t] {
            HeldHint held;
            try
            {
                hint.apply(&held.hint);
            }
            catch (const std::exception& e)
            {
                std::lock_guard g(lock);
                failure = e.what();
                ++failures;
            }
            auto& mine = served[t];
            mine.reserve(rate == 0 ? 100'000 : rate * seconds / threads * 2);
            for (;;)
            {
                std::int64_t intended = 0;
                if (rate == 0)
                {
                    intended = nowNs();
                    if (intended < start)
                    {
                        sleepUntil(start);
                        continue;
                    }
                    if (intended >= end)
                    {
                        break;
                    }
                }
                else
                {
                    std::unique_lock g(lock);
                    arrived.wait(g, [&] { return closed || !queue.empty(); });
                    if (queue.empty())
                    {
                        break;
                    }
                    intended = queue.front();
                    queue.pop_front();
                }
                (void)work(loops);
                mine.push_back({intended, nowNs() - intended});
            }
        });
    }
    if (rate != 0)
    {
        std::mt19937_64 random(o.number("--seed", 1));
        std::exponential_distribution<double> gap(static_cast<double>(rate));
        for (auto at = static_cast<double>(start);;)
        {
            at += gap(random) * 1e9;
            const auto when = static_cast<std::int64_t>(at);
            if (when >= end)
            {
                break;
            }
            sleepUntil(when);
            {
                std::lock_guard g(lock);
                queue.push_back(when);
            }
            arrived.notify_one();
        }
        {
            std::lock_guard g(lock);
            closed = true;
        }
        arrived.notify_all();
    }
    for (auto& w : workers)
    {
        w.join();
    }
    if (failures != 0)
    {
        std::fprintf(stderr, "vm_workload: %s\n", failure.c_str());
        return 1;
    }
    std::vector<std::int64_t> all;
    std::map<std::int64_t, std::vector<std::int64_t>> windows;
    for (const auto& mine : served)
    {
        for (const Served& s : mine)
        {
            all.push_back(s.latency);
            windows[(s.intended - start) / 1'000'000'000].push_back(s.latency);
        }
    }
    std::printf("{\"requests\": %zu, \"seconds\": %.3f, \"p50_us\": %.1f, "
                "\"p99_us\": %.1f, \"window_p99_us\": [",
                all.size(), static_cast<double>(end - start) / 1e9,
                percentile(all, 0.5), percentile(all, 0.99));
    const char* comma = "";
    for (auto& [window, latencies] : windows)
    {
        std::printf("%s%.1f", comma, percentile(latencies, 0.99));
        comma = ", ";
    }
    std::printf("]}\n");
    return 0;
}

// ---- periodic, batch ------------------------------------------------------

int periodic(const Options& o)
{
    const std::uint64_t loops = o.number("--work");
    const auto periodNs =
        static_cast<std::int64_t>(o.number("--period-us")) * 1000;
    const auto seconds = static_cast<std::int64_t>(o.number("--seconds"));
    if (periodNs <= 0 || seconds <= 0)
    {
        throw UsageError("--period-us and --seconds above 0");
    }
    HeldHint held;
    Hint(o).apply(&held.hint);
    const std::int64_t start = nowNs() + 100'000'000;
    const std::int64_t periods = seconds * 1'000'000'000 / periodNs;
    std::int64_t misses = 0;
    std::vector<std::int64_t> lateness;
    for (std::int64_t n = 0; n < periods; ++n)
    {
        const std::int64_t begin = start + n * periodNs;
        sleepUntil(begin);
        (void)work(loops);
        const std::int64_t done = nowNs();
        lateness.push_back(done - begin);
        if (done > begin + periodNs)
        {
            ++misses;
        }
    }
    std::printf("{\"periods\": %lld, \"misses\": %lld, \"p50_us\": %.1f, "
                "\"p99_us\": %.1f}\n",
                static_cast<long long>(periods), static_cast<long long>(misses),
                percentile(lateness, 0.5), percentile(lateness, 0.99));
    return 0;
}

int batch(const Options& o)
{
    const auto seconds = static_cast<std::int64_t>(o.number("--seconds"));
    HeldHint held;
    Hint(o).apply(&held.hint);
    const std::int64_t end = nowNs() + seconds * 1'000'000'000;
    std::uint64_t loops = 0;
    while (nowNs() < end)
    {
        (void)work(10'000);
        loops += 10'000;
    }
    std::printf("{\"loops\": %llu}\n", static_cast<unsigned long long>(loops));
    return 0;
}

// ---- burst ---------------------------------------------------------------

int burst(const Options& o)
{
    const std::uint64_t address = o.number("--mark");
    const std::uint64_t ms = o.number("--ms");
    const std::uint64_t value = o.number("--value");
    const long page = ::sysconf(_SC_PAGESIZE);
    const int fd = ::open("/dev/mem", O_RDWR | O_SYNC | O_CLOEXEC);
    if (fd < 0)
    {
        std::fprintf(stderr, "vm_workload: /dev/mem: %s\n",
                     std::strerror(errno));
        return 1;
    }
    const auto base = address & ~static_cast<std::uint64_t>(page - 1);
    void* map =
        ::mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE,
               MAP_SHARED, fd, static_cast<off_t>(base));
    ::close(fd);
    if (map == MAP_FAILED || address % 8 != 0)
    {
        std::fprintf(stderr, "vm_workload: --mark %#llx: %s\n",
                     static_cast<unsigned long long>(address),
                     map == MAP_FAILED ? std::strerror(errno)
                                       : "not 8-byte aligned");
        return 1;
    }
    auto* word = reinterpret_cast<volatile std::uint64_t*>(
        static_cast<char*>(map) + (address - base));
    // Mostly asleep, with 100 us of work every 50 ms: the kernel's
    // estimate of this task's utilization (util_est, kept from one
    // activation to the next) is that of a light task, as a server's
    // thread that waits for requests has, and not what its start-up left.
    const std::int64_t idleEnd =
        nowNs() +
        static_cast<std::int64_t>(o.number("--idle-ms", 2000)) * 1'000'000;
    while (nowNs() + 50'000'000 < idleEnd)
    {
        sleepUntil(nowNs() + 50'000'000);
        for (const std::int64_t until = nowNs() + 100'000; nowNs() < until;)
        {
            (void)work(100);
        }
    }
    sleepUntil(idleEnd);
    const std::int64_t start = nowNs();
    *word = value;
    const std::int64_t end = start + static_cast<std::int64_t>(ms) * 1'000'000;
    std::uint64_t loops = 0;
    while (nowNs() < end)
    {
        (void)work(1000);
        loops += 1000;
    }
    ::munmap(map, static_cast<std::size_t>(page));
    std::printf("{\"loops\": %llu}\n", static_cast<unsigned long long>(loops));
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    try
    {
        const std::string_view what = argc > 1 ? argv[1] : "";
        if (what == "calibrate" && argc == 3)
        {
            return calibrate(whole(argv[2], "MS"));
        }
        const Options o = parseOptions(argc, argv, 2);
        if (what == "server")
        {
            return server(o);
        }
        if (what == "periodic")
        {
            return periodic(o);
        }
        if (what == "batch")
        {
            return batch(o);
        }
        if (what == "burst")
        {
            return burst(o);
        }
        throw UsageError("calibrate, server, periodic, batch or burst "
                         "(see the source's header)");
    }
    catch (const UsageError& e)
    {
        std::fprintf(stderr, "vm_workload: %s\n", e.what());
        return 2;
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "vm_workload: %s\n", e.what());
        return 1;
    }
}
