// SPDX-License-Identifier: Apache-2.0
// How far delivered performance is from the truth when counter reads
// stall: our estimator against Linux's 2 us method, side by side.
//
// Runs on the simulated counters in virtual time, so it is fast and the
// same seed gives the same table. Several CPUs change their delivered
// performance at staggered times; each counter read stalls with a fixed
// probability for a time drawn uniformly from [0, D]. Every window, each
// CPU (at its own offset in the period) is sampled once for our estimator
// and then read Linux's way (two samples 2 us apart), under the same
// stalls. Each published value is compared with the simulator's exact
// average over the interval it claims to cover. Prints one row per stall
// bound D and window: the error (mean, 99th percentile, maximum, in %) of
// ours and of Linux's, and what our estimator did with its samples; then
// the same samples through an estimator with no read-time bound, to show
// what the window's length alone achieves.
#include "lib/feedback.hpp"
#include "lib/sim/counters.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace
{

namespace sim = cppc::sim;
using namespace std::chrono_literals;
using std::chrono::microseconds;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;

// A 3 GHz-class part in MHz-like units; the reference counter ticks at
// 1 GHz.
constexpr std::uint32_t referencePerf = 1000;
constexpr std::uint32_t highestPerf = 3000;
constexpr std::uint32_t lowestPerf = 1000;

struct Options
{
    unsigned cpus = 4;
    double seconds = 20; // virtual time per row
    double stallProbability = 0.1;
    std::uint64_t seed = 1;
};

struct Errors
{
    std::vector<double> percent;

    void add(double estimate, double truth)
    {
        percent.push_back(std::abs(estimate - truth) / truth * 100.0);
    }
    double mean() const
    {
        double sum = 0;
        for (double e : percent)
        {
            sum += e;
        }
        return percent.empty() ? 0 : sum / static_cast<double>(percent.size());
    }
    // Nearest-rank percentile.
    double percentile(double p) const
    {
        if (percent.empty())
        {
            return 0;
        }
        std::vector<double> sorted = percent;
        std::sort(sorted.begin(), sorted.end());
        const auto rank = static_cast<std::size_t>(
            std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
        return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
    }
    double max() const
    {
        return percent.empty()
                   ? 0
                   : *std::max_element(percent.begin(), percent.end());
    }
};

struct Row
{
    nanoseconds stall{0};
    microseconds window{0};
    nanoseconds readBound{0};
    Errors ours;
    Errors windowOnly;
    Errors baseline;
    std::uint64_t samples = 0;
    std::uint64_t published = 0;
    std::uint64_t slowRead = 0;
    std::uint64_t otherRejected = 0;
    std::uint64_t windowOnlyPublished = 0;
    std::uint64_t windowOnlyRejected = 0;
    std::uint64_t stalledReads = 0;
};

// A small deterministic generator for the load schedule (SplitMix64).
class Schedule
{
  public:
    explicit Schedule(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next()
    {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    // A level in [lowestPerf, highestPerf] in steps of 100.
    std::uint32_t level()
    {
        return lowestPerf +
               100 * static_cast<std::uint32_t>(
                         next() % ((highestPerf - lowestPerf) / 100 + 1));
    }
    // 20 to 80 ms.
    nanoseconds hold()
    {
        return 20ms +
               nanoseconds(static_cast<nanoseconds::rep>(next() % 60'000'000));
    }

  private:
    std::uint64_t state_;
};

Row run(const Options& o, nanoseconds stall, microseconds window)
{
    sim::CounterConfig config;
    config.cpus = o.cpus;
    config.referencePerf = referencePerf;
    config.deliveredPerf = 2000;
    config.stalls = {stall > 0ns ? o.stallProbability : 0.0, 0ns, stall,
                     o.seed};
    sim::VirtualCounters counters(config);

    cppc::FeedbackLimits limits;
    limits.referencePerf = referencePerf;
    limits.highestPerf = highestPerf;
    limits.lowestPerf = lowestPerf;
    const cppc::DeliveredPerfEstimator fresh(limits, {window});
    std::vector<cppc::DeliveredPerfEstimator> estimators(o.cpus, fresh);
    // The same estimator with the read-time bound opened up to the whole
    // window: what the window's length alone achieves.
    std::vector<cppc::DeliveredPerfEstimator> windowOnly(
        o.cpus, cppc::DeliveredPerfEstimator(limits, {window, window, 1}));

    Row row;
    row.stall = stall;
    row.window = window;
    row.readBound = fresh.readBound();

    Schedule schedule(o.seed ^ 0x5EEDULL);
    const steady_clock::time_point start = counters.now();
    std::vector<steady_clock::time_point> nextChange(o.cpus, start);
    const auto length = std::chrono::duration_cast<nanoseconds>(
        std::chrono::duration<double>(o.seconds));
    for (steady_clock::time_point tick = start; tick < start + length;
         tick += window)
    {
        for (unsigned cpu = 0; cpu < o.cpus; ++cpu)
        {
            counters.advanceTo(tick + cpu * window / o.cpus);
            for (unsigned c = 0; c < o.cpus; ++c)
            {
                while (nextChange[c] <= counters.now())
                {
                    counters.setDeliveredPerf(c, schedule.level());
                    nextChange[c] += schedule.hold();
                }
            }

            cppc::CounterSample sample;
            if (counters.read(cpu, sample))
            {
                throw std::runtime_error("simulated read failed");
            }
            const cppc::FeedbackResult r = estimators[cpu].update(sample);
            ++row.samples;
            if (r.published())
            {
                ++row.published;
                row.ours.add(r.deliveredPerf,
                             counters.trueDeliveredPerf(cpu, r.from, r.to));
            }
            else if (r.verdict == cppc::FeedbackVerdict::slowRead)
            {
                ++row.slowRead;
            }
            else if (r.rejected())
            {
                ++row.otherRejected;
            }
            const cppc::FeedbackResult w = windowOnly[cpu].update(sample);
            if (w.published())
            {
                ++row.windowOnlyPublished;
                row.windowOnly.add(w.deliveredPerf, counters.trueDeliveredPerf(
                                                        cpu, w.from, w.to));
            }
            row.windowOnlyRejected += w.rejected() ? 1 : 0;

            cppc::BaselineReading reading;
            if (cppc::baselineDeliveredPerf(counters, counters, cpu,
                                            referencePerf, 0, reading))
            {
                throw std::runtime_error("simulated read failed");
            }
            row.baseline.add(static_cast<double>(reading.deliveredPerf),
                             counters.trueDeliveredPerf(
                                 cpu, reading.first.at,
                                 reading.second.at + reading.second.readTime));
        }
    }
    row.stalledReads = counters.stalledReads();
    return row;
}

std::string fixed(double v, int precision)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

void print(const Options& o, const std::vector<Row>& rows)
{
    std::cout << "Delivered-performance error: ours vs Linux's 2 us method "
                 "(virtual time)\n"
              << o.cpus << " CPUs, delivered performance " << lowestPerf << "-"
              << highestPerf
              << " changing every 20-80 ms, reference performance "
              << referencePerf << " (1 GHz reference counter)\n"
              << "each counter read: 250 ns, and with probability "
              << fixed(o.stallProbability, 2) << " a stall uniform in [0, D]; "
              << fixed(o.seconds, 1) << " s of virtual time per row; seed "
              << o.seed << "\n\n";
    std::printf("%7s %7s %7s | %9s %7s %7s | %8s %8s %8s | %10s %10s %10s\n",
                "D us", "window", "bound", "published", "slow", "other",
                "mean %", "p99 %", "max %", "linux mean", "linux p99",
                "linux max");
    for (const Row& r : rows)
    {
        std::printf(
            "%7s %7s %7s | %9llu %7llu %7llu | %8s %8s %8s | %10s %10s "
            "%10s\n",
            fixed(static_cast<double>(r.stall.count()) / 1e3, 0).c_str(),
            (fixed(static_cast<double>(r.window.count()) / 1e3, 0) + " ms")
                .c_str(),
            (fixed(static_cast<double>(r.readBound.count()) / 1e3, 0) + " us")
                .c_str(),
            static_cast<unsigned long long>(r.published),
            static_cast<unsigned long long>(r.slowRead),
            static_cast<unsigned long long>(r.otherRejected),
            fixed(r.ours.mean(), 3).c_str(),
            fixed(r.ours.percentile(99), 3).c_str(),
            fixed(r.ours.max(), 3).c_str(), fixed(r.baseline.mean(), 2).c_str(),
            fixed(r.baseline.percentile(99), 2).c_str(),
            fixed(r.baseline.max(), 2).c_str());
    }
    std::cout << "\nours: samples published / dropped as slow reads / other "
                 "rejections (the first sample of each CPU is neither); "
                 "error against the exact average over the window.\n"
                 "linux: one reading per sample of ours; error against the "
                 "exact average over its two samples.\n"
                 "\nThe same samples with no read-time bound (the window "
                 "alone):\n\n";
    std::printf("%7s %7s | %9s %8s | %8s %8s %8s\n", "D us", "window",
                "published", "rejected", "mean %", "p99 %", "max %");
    for (const Row& r : rows)
    {
        std::printf(
            "%7s %7s | %9llu %8llu | %8s %8s %8s\n",
            fixed(static_cast<double>(r.stall.count()) / 1e3, 0).c_str(),
            (fixed(static_cast<double>(r.window.count()) / 1e3, 0) + " ms")
                .c_str(),
            static_cast<unsigned long long>(r.windowOnlyPublished),
            static_cast<unsigned long long>(r.windowOnlyRejected),
            fixed(r.windowOnly.mean(), 3).c_str(),
            fixed(r.windowOnly.percentile(99), 3).c_str(),
            fixed(r.windowOnly.max(), 3).c_str());
    }
    for (const Row& r : rows)
    {
        if (r.stall > 0ns && r.stalledReads == 0)
        {
            std::cout << "warning: no read stalled in the D = "
                      << r.stall.count() / 1000 << " us row\n";
        }
    }
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
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg(argv[i]);
        const auto eq = arg.find('=');
        const std::string_view key = arg.substr(0, eq);
        const std::string_view value =
            eq == std::string_view::npos ? "" : arg.substr(eq + 1);
        bool ok = false;
        if (key == "--cpus")
        {
            ok = parse(value, o.cpus) && o.cpus > 0 && o.cpus <= 256;
        }
        else if (key == "--seconds")
        {
            ok = parse(value, o.seconds) && o.seconds > 0 && o.seconds <= 3600;
        }
        else if (key == "--stall-probability")
        {
            ok = parse(value, o.stallProbability) && o.stallProbability >= 0 &&
                 o.stallProbability <= 1;
        }
        else if (key == "--seed")
        {
            ok = parse(value, o.seed);
        }
        if (!ok)
        {
            std::cerr << "feedback_error: bad argument '" << arg
                      << "'\nusage: feedback_error [--cpus=N] [--seconds=S] "
                         "[--stall-probability=P] [--seed=N]\n";
            return std::nullopt;
        }
    }
    return o;
}

} // namespace

int main(int argc, char** argv)
{
    const std::optional<Options> options = parseArgs(argc, argv);
    if (!options)
    {
        return 2;
    }
    try
    {
        std::vector<Row> rows;
        for (const nanoseconds stall :
             {0ns, nanoseconds(10us), nanoseconds(50us), nanoseconds(100us),
              nanoseconds(300us)})
        {
            for (const microseconds window :
                 {microseconds(10ms), microseconds(20ms)})
            {
                rows.push_back(run(*options, stall, window));
            }
        }
        print(*options, rows);
    }
    catch (const std::exception& e)
    {
        std::cerr << "feedback_error: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
