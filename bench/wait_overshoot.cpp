// SPDX-License-Identifier: Apache-2.0
// How late a waiter notices, with precise waits against millisecond sleep
// loops, measured side by side in one run.
//
// Three waits poll the same thing:
//   precise  the channel's waits: CLOCK_MONOTONIC absolute sleeps, timer
//            slack 1 ns, a poll interval derived from the nominal latency;
//   usleep   "sleep 1 ms, look again": usleep(1000) until the deadline has
//            passed, started from the request, with the default timer slack;
//   ms-tick  a jiffy-style wait: sleep to the next whole millisecond of
//            CLOCK_MONOTONIC (a 1000 Hz tick grid), look again, with the
//            default timer slack.
// usleep's phase follows the request, so a platform that answers in just
// under a whole number of its periods looks good to it; ms-tick's grid does
// not know when the request started, as a kernel tick does not.
//
// Part 1, completion: the simulated Altra-like platform takes a target
// time T (100 us, 1 ms, 5 ms; its nominal latency says the same) to
// complete each write command, and three pcc::Channels over it differ only
// in their WaitClock. The overshoot of a sample is the time write()
// returned minus the time the platform recorded just before it set command
// complete.
//
// Part 2, deadline: waitUntil() with a condition that never holds and a
// deadline T ahead, with the same three clocks; the overshoot is the return
// time minus the deadline. A negative overshoot would be an early return.
//
// Before each sample the main thread sleeps a random 0-1 ms (a fixed
// seed), so that sample start times do not keep one phase against the
// millisecond grid. Samples rotate between the waits, each in a thread of
// its own created
// with the default timer slack (a thread's slack is inherited, and the
// precise wait sets its own on its first sleep). The program fails if a
// precise wait returned early.
#include "lib/pcc/channel.hpp"
#include "lib/sim/pcc_platform.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace
{

using cppc::pcc::monotonicNow;
using cppc::pcc::Nanos;
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr unsigned samples = 200;
constexpr std::uint8_t subspace = 2;

// usleep(1000) until the deadline has passed.
class UsleepClock final : public cppc::pcc::WaitClock
{
  public:
    Nanos now() const noexcept override
    {
        return monotonicNow();
    }
    void sleepUntil(Nanos deadline) noexcept override
    {
        do
        {
            ::usleep(1000);
        } while (monotonicNow() < deadline);
    }
};

// To the next whole millisecond until the deadline has passed.
class TickClock final : public cppc::pcc::WaitClock
{
  public:
    Nanos now() const noexcept override
    {
        return monotonicNow();
    }
    void sleepUntil(Nanos deadline) noexcept override
    {
        do
        {
            cppc::pcc::sleepUntil(
                std::chrono::floor<milliseconds>(monotonicNow()) +
                milliseconds{1});
        } while (monotonicNow() < deadline);
    }
};

struct Series
{
    std::vector<double> overshootUs;
    unsigned early = 0;
    unsigned failed = 0;

    void add(Nanos overshoot)
    {
        overshootUs.push_back(static_cast<double>(overshoot.count()) / 1e3);
        if (overshoot < Nanos{0})
        {
            ++early;
        }
    }
    // Nearest-rank percentile.
    double percentile(double p) const
    {
        std::vector<double> v = overshootUs;
        std::sort(v.begin(), v.end());
        const auto rank = static_cast<std::size_t>(
            std::ceil(p * static_cast<double>(v.size())));
        return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
    }
};

// Runs `f` in a new thread, which starts with the default timer slack,
// after a random pause.
template <class F>
void inFreshThread(F&& f)
{
    static std::mt19937 random(20260);
    std::uniform_int_distribution<long> phase(0, 999);
    cppc::pcc::sleepUntil(monotonicNow() + microseconds{phase(random)});
    std::thread(std::forward<F>(f)).join();
}

void completionSample(cppc::pcc::Channel& channel,
                      cppc::sim::PccPlatform& platform, std::uint32_t value,
                      Series& series)
{
    inFreshThread([&] {
        const cppc::PccWrite w{{0x14, 0, 32}, value};
        const std::error_code ec = channel.write(subspace, std::span(&w, 1));
        const Nanos returned = monotonicNow();
        if (ec)
        {
            ++series.failed;
            return;
        }
        series.add(returned - platform.history().back().completedAt);
    });
}

void deadlineSample(cppc::pcc::WaitClock& clock, Nanos target, Nanos interval,
                    Series& series)
{
    inFreshThread([&] {
        const Nanos deadline = monotonicNow() + target;
        const bool held = cppc::pcc::waitUntil(
            clock, [] { return false; }, deadline, interval);
        const Nanos returned = monotonicNow();
        if (held)
        {
            ++series.failed;
            return;
        }
        series.add(returned - deadline);
    });
}

void printRow(const char* target, const char* name, const Series& s)
{
    std::printf("%-8s %-9s %9.1f %9.1f %9.1f %9.1f\n", target, name,
                s.percentile(0.5), s.percentile(0.9), s.percentile(0.99),
                s.percentile(1.0));
}

void printRatio(const char* name, const Series& slow, const Series& precise)
{
    std::printf("%-8s %-9s %8.1fx %8.1fx %8.1fx %8.1fx\n", "", name,
                slow.percentile(0.5) / precise.percentile(0.5),
                slow.percentile(0.9) / precise.percentile(0.9),
                slow.percentile(0.99) / precise.percentile(0.99),
                slow.percentile(1.0) / precise.percentile(1.0));
}

struct Trio
{
    Series precise;
    Series usleep;
    Series tick;

    void print(const char* target) const
    {
        printRow(target, "precise", precise);
        printRow("", "usleep", usleep);
        printRow("", "ms-tick", tick);
        printRatio("usleep/p", usleep, precise);
        printRatio("tick/p", tick, precise);
    }
};

void printHeader()
{
    std::printf("%-8s %-9s %9s %9s %9s %9s\n", "target", "wait", "p50", "p90",
                "p99", "max");
}

struct Target
{
    const char* label;
    Nanos wait;
};

} // namespace

int main()
{
    const Target targets[] = {{"100 us", microseconds{100}},
                              {"1 ms", milliseconds{1}},
                              {"5 ms", milliseconds{5}}};
    UsleepClock usleepClock;
    TickClock tickClock;
    unsigned preciseEarly = 0;
    unsigned preciseTotal = 0;
    unsigned otherEarly = 0;
    unsigned failed = 0;
    auto tally = [&](const Trio& t) {
        preciseEarly += t.precise.early;
        preciseTotal += static_cast<unsigned>(t.precise.overshootUs.size());
        otherEarly += t.usleep.early + t.tick.early;
        failed += t.precise.failed + t.usleep.failed + t.tick.failed;
    };

    std::printf("Part 1: completion wait overshoot, us after the platform "
                "set command complete\n(%u samples per wait and target; "
                "ratios are the slower wait over precise)\n\n",
                samples);
    printHeader();
    std::vector<Nanos> intervals;
    for (const Target& t : targets)
    {
        cppc::sim::PccPlatformConfig config;
        config.latency = t.wait;
        config.nominalLatencyUs = static_cast<std::uint32_t>(
            std::chrono::duration_cast<microseconds>(t.wait).count());
        config.minRequestTurnaroundUs = 0;
        cppc::sim::PccPlatform platform(config);
        auto channel = [&](cppc::pcc::WaitClock* clock) {
            cppc::pcc::ChannelOptions o;
            o.clock = clock;
            return std::make_unique<cppc::pcc::Channel>(
                platform.subspace(), platform.region(), platform.registers(),
                o);
        };
        const auto precise = channel(nullptr);
        const auto usleepChannel = channel(&usleepClock);
        const auto tickChannel = channel(&tickClock);
        intervals.push_back(precise->pollInterval());
        Trio trio;
        for (unsigned i = 0; i < samples; ++i)
        {
            completionSample(*precise, platform, 3 * i, trio.precise);
            completionSample(*usleepChannel, platform, 3 * i + 1, trio.usleep);
            completionSample(*tickChannel, platform, 3 * i + 2, trio.tick);
        }
        trio.print(t.label);
        tally(trio);
    }
    std::printf("\nprecise poll interval (nominal latency / 8, 2-50 us): "
                "%.1f, %.1f, %.1f us\n",
                static_cast<double>(intervals[0].count()) / 1e3,
                static_cast<double>(intervals[1].count()) / 1e3,
                static_cast<double>(intervals[2].count()) / 1e3);

    std::printf("\nPart 2: deadline wait overshoot, us after the deadline "
                "(condition never true)\n\n");
    printHeader();
    for (std::size_t k = 0; k < std::size(targets); ++k)
    {
        const Target& t = targets[k];
        Trio trio;
        for (unsigned i = 0; i < samples; ++i)
        {
            deadlineSample(cppc::pcc::monotonicClock(), t.wait, intervals[k],
                           trio.precise);
            deadlineSample(usleepClock, t.wait, intervals[k], trio.usleep);
            deadlineSample(tickClock, t.wait, intervals[k], trio.tick);
        }
        trio.print(t.label);
        tally(trio);
    }

    std::printf("\nprecise waits that returned early: %u of %u%s\n",
                preciseEarly, preciseTotal,
                preciseEarly == 0 ? " (never)" : "  <-- FAILURE");
    std::printf("usleep and ms-tick waits that returned early: %u; failed "
                "samples: %u\n",
                otherEarly, failed);
    return preciseEarly == 0 && failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
