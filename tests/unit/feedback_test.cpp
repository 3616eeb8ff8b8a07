// SPDX-License-Identifier: Apache-2.0
// Delivered performance from feedback counters: the estimator's exact
// results and its rejections with their reasons, on the simulated counters
// in virtual time, and the round robin that reads a large machine's CPUs in
// turn. (Linux's method: feedback_baseline_test.cpp.)
#include "feedback_test_support.hpp"
#include "lib/error.hpp"
#include "lib/feedback.hpp"
#include "lib/sim/counters.hpp"
#include "lib/sim/layouts.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace cppc
{
namespace
{

using namespace std::chrono_literals;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

using test::partCounters;
using test::partLimits;
using test::readSample;
using test::two32;
using test::two48;

// --- exact results --------------------------------------------------------

struct SteadyCase
{
    const char* name;
    std::uint32_t referencePerf;
    std::uint32_t deliveredPerf;
    std::uint32_t highest;
    std::uint32_t lowest;
    microseconds window;
    nanoseconds readCost;
    sim::ReadOrder order;
};

TEST(FeedbackTest, SteadyLoadIsExact)
{
    const SteadyCase cases[] = {
        {"nominal", 1000, 2000, 3000, 1000, 10ms, 250ns,
         sim::ReadOrder::deliveredFirst},
        {"highest", 1000, 3000, 3000, 1000, 10ms, 250ns,
         sim::ReadOrder::referenceFirst},
        {"lowest", 1000, 1000, 3000, 1000, 20ms, 0ns,
         sim::ReadOrder::deliveredFirst},
        {"odd ratio", 1000, 1234, 3000, 1000, 10ms, 400ns,
         sim::ReadOrder::deliveredFirst},
        {"small scale", 100, 255, 255, 40, 10ms, 250ns,
         sim::ReadOrder::referenceFirst},
        {"1 ms window", 1000, 2718, 3000, 1000, 1ms, 250ns,
         sim::ReadOrder::deliveredFirst},
    };
    for (const SteadyCase& c : cases)
    {
        SCOPED_TRACE(c.name);
        sim::CounterConfig cc;
        cc.referencePerf = c.referencePerf;
        cc.deliveredPerf = c.deliveredPerf;
        cc.readCost = c.readCost;
        cc.order = c.order;
        sim::VirtualCounters counters(cc);
        FeedbackLimits l;
        l.referencePerf = c.referencePerf;
        l.highestPerf = c.highest;
        l.lowestPerf = c.lowest;
        DeliveredPerfEstimator estimator(l, {c.window});
        const auto start = counters.now();
        EXPECT_EQ(estimator.update(readSample(counters)).verdict,
                  FeedbackVerdict::notYet);
        for (int k = 1; k <= 5; ++k)
        {
            counters.advanceTo(start + k * c.window);
            const FeedbackResult r = estimator.update(readSample(counters));
            ASSERT_TRUE(r.published()) << describe(r);
            EXPECT_DOUBLE_EQ(r.deliveredPerf, c.deliveredPerf);
            EXPECT_EQ(r.elapsed(), c.window);
            // The counters' own account: reference at referencePerf per
            // microsecond of the window.
            EXPECT_EQ(r.referenceDelta,
                      std::uint64_t{c.referencePerf} *
                          static_cast<std::uint64_t>(c.window.count()));
        }
        EXPECT_EQ(estimator.count(FeedbackVerdict::published), 5U);
    }
}

TEST(FeedbackTest, ChangingLoadGivesTheWindowsAverage)
{
    sim::VirtualCounters counters(partCounters());
    DeliveredPerfEstimator estimator(partLimits(), {10ms});
    const auto start = counters.now();
    ASSERT_FALSE(estimator.update(readSample(counters)).published());
    counters.advanceTo(start + 2500us);
    counters.setDeliveredPerf(0, 3000);
    counters.advanceTo(start + 10ms);
    const FeedbackResult r = estimator.update(readSample(counters));
    ASSERT_TRUE(r.published()) << describe(r);
    // 2.5 ms at 2000 and 7.5 ms at 3000 is 2750. The delivered counter is
    // latched 250 ns into each read, so it covers 250 ns less at 2000 and
    // 250 ns more at 3000: 27'500'250 ticks against 10'000'000.
    EXPECT_DOUBLE_EQ(counters.trueDeliveredPerf(0, r.from, r.to), 2750.0);
    EXPECT_EQ(r.deliveredDelta, 27'500'250U);
    EXPECT_DOUBLE_EQ(r.deliveredPerf, 2750.025);
}

// --- wraparound -----------------------------------------------------------

struct WrapCase
{
    const char* name;
    unsigned counterBits;  // the hardware's
    unsigned declaredBits; // what the estimator is told
    std::uint64_t referenceStart;
    std::uint64_t deliveredStart;
    FeedbackVerdict verdict;
};

TEST(FeedbackTest, WraparoundFromTheCounterWidth)
{
    const WrapCase cases[] = {
        {"32-bit reference wraps", 32, 32, two32 - 4'000'000, 5,
         FeedbackVerdict::published},
        {"32-bit both wrap", 32, 32, two32 - 1'000'000, two32 - 7'777,
         FeedbackVerdict::published},
        {"48-bit both wrap", 48, 48, two48 - 5'000'000, two48 - 19'999'999,
         FeedbackVerdict::published},
        {"64-bit both wrap", 64, 64, ~std::uint64_t{0} - 5'000'000,
         ~std::uint64_t{0} - 9'000'000, FeedbackVerdict::published},
        // A 32-bit counter taken for a 64-bit one: the wrapped delta is
        // nonsense, and the plausibility check catches it.
        {"32-bit counter declared 64", 32, 64, two32 - 4'000'000, 5,
         FeedbackVerdict::implausible},
    };
    for (const WrapCase& c : cases)
    {
        SCOPED_TRACE(c.name);
        sim::CounterConfig cc = partCounters();
        cc.counterBits = c.counterBits;
        cc.referenceStart = c.referenceStart;
        cc.deliveredStart = c.deliveredStart;
        sim::VirtualCounters counters(cc);
        FeedbackLimits l = partLimits();
        l.referenceCounterBits = c.declaredBits;
        l.deliveredCounterBits = c.declaredBits;
        DeliveredPerfEstimator estimator(l, {10ms});
        const auto start = counters.now();
        const CounterSample first = readSample(counters);
        ASSERT_FALSE(estimator.update(first).published());
        counters.advanceTo(start + 10ms);
        const CounterSample second = readSample(counters);
        // The case must really cross a wrap, or it tests nothing.
        ASSERT_TRUE(second.reference < first.reference ||
                    second.delivered < first.delivered);
        const FeedbackResult r = estimator.update(second);
        EXPECT_EQ(r.verdict, c.verdict) << describe(r);
        if (c.verdict == FeedbackVerdict::published)
        {
            EXPECT_DOUBLE_EQ(r.deliveredPerf, 2000.0);
            EXPECT_EQ(r.referenceDelta, 10'000'000U);
            EXPECT_EQ(r.deliveredDelta, 20'000'000U);
        }
    }
}

struct CtrWrapCase
{
    const char* name;
    unsigned counterBits;
    std::uint64_t wrapSeconds;
    nanoseconds gap; // between the two samples' starts
    FeedbackVerdict verdict;
};

TEST(FeedbackTest, CounterWraparoundTimeBoundsTheGap)
{
    const CtrWrapCase cases[] = {
        {"within", 64, 1, 999ms, FeedbackVerdict::published},
        // The second read ends 500 ns after it starts: the counters may
        // have been latched 1 s after the first sample.
        {"reaching it during the read", 64, 1, 1s - 400ns,
         FeedbackVerdict::counterWrap},
        {"exceeded", 64, 1, 1500ms, FeedbackVerdict::counterWrap},
        {"absent: never wraps", 64, 0, 100s, FeedbackVerdict::published},
        // A 32-bit counter at 1 GHz wraps every 4.29 s; 5 s later its
        // delta is one wrap short, which only CounterWraparoundTime tells.
        {"32-bit, 4 s wrap time", 32, 4, 5s, FeedbackVerdict::counterWrap},
    };
    for (const CtrWrapCase& c : cases)
    {
        SCOPED_TRACE(c.name);
        sim::CounterConfig cc = partCounters();
        cc.counterBits = c.counterBits;
        sim::VirtualCounters counters(cc);
        FeedbackLimits l = partLimits();
        l.referenceCounterBits = c.counterBits;
        l.deliveredCounterBits = c.counterBits;
        l.counterWraparoundSeconds = c.wrapSeconds;
        DeliveredPerfEstimator estimator(l, {10ms});
        const auto start = counters.now();
        ASSERT_FALSE(estimator.update(readSample(counters)).published());
        counters.advanceTo(start + c.gap);
        const FeedbackResult r = estimator.update(readSample(counters));
        EXPECT_EQ(r.verdict, c.verdict) << describe(r);
        EXPECT_EQ(r.elapsed(), c.gap);
        if (c.verdict == FeedbackVerdict::counterWrap)
        {
            EXPECT_EQ(r.wraparoundTime, std::chrono::seconds(c.wrapSeconds));
            EXPECT_EQ(r.deliveredPerf, 0.0);
            // The rejected sample starts a new window.
            counters.advanceTo(r.to + 10ms);
            const FeedbackResult next = estimator.update(readSample(counters));
            EXPECT_TRUE(next.published()) << describe(next);
            EXPECT_EQ(next.elapsed(), 10ms);
            EXPECT_DOUBLE_EQ(next.deliveredPerf, 2000.0);
        }
        else
        {
            EXPECT_DOUBLE_EQ(r.deliveredPerf, 2000.0);
        }
    }
}

// --- the window -----------------------------------------------------------

TEST(FeedbackTest, NoValueUntilTheWindowHasElapsed)
{
    sim::VirtualCounters counters(partCounters());
    DeliveredPerfEstimator estimator(partLimits(), {10ms});
    const auto start = counters.now();
    const FeedbackResult first = estimator.update(readSample(counters));
    EXPECT_EQ(first.verdict, FeedbackVerdict::notYet);
    EXPECT_EQ(first.elapsed(), 0ns);
    for (const nanoseconds at :
         {nanoseconds(1ms), nanoseconds(5ms), nanoseconds(9999us), 10ms - 1ns})
    {
        counters.advanceTo(start + at);
        const FeedbackResult r = estimator.update(readSample(counters));
        EXPECT_EQ(r.verdict, FeedbackVerdict::notYet) << describe(r);
        EXPECT_FALSE(r.rejected());
        EXPECT_EQ(r.deliveredPerf, 0.0);
        // Measured from the first sample: early samples do not move it.
        EXPECT_EQ(r.elapsed(), at);
    }
    // The last read ended 499 ns after the window; the next sample starts
    // there.
    const FeedbackResult r = estimator.update(readSample(counters));
    EXPECT_TRUE(r.published()) << describe(r);
    EXPECT_EQ(r.elapsed(), 10ms + 499ns);
    EXPECT_EQ(estimator.count(FeedbackVerdict::notYet), 5U);

    estimator.reset();
    EXPECT_EQ(estimator.update(readSample(counters)).verdict,
              FeedbackVerdict::notYet);
}

// --- slow reads -----------------------------------------------------------

struct SlowReadCase
{
    const char* name;
    microseconds window;
    nanoseconds maxReadTime;
    unsigned windowPerReadTime;
    nanoseconds stall; // on the second counter read of the second sample
    nanoseconds bound;
    FeedbackVerdict verdict;
};

TEST(FeedbackTest, SlowReadsAreRejectedWithTheirReadTime)
{
    // Two reads of 250 ns each plus the stall.
    const SlowReadCase cases[] = {
        {"the DESIGN's 255 us", 10ms, 20us, 250, 255us, 20us,
         FeedbackVerdict::slowRead},
        {"300 us", 20ms, 20us, 250, 300us, 20us, FeedbackVerdict::slowRead},
        {"at the bound", 10ms, 20us, 250, 19500ns, 20us,
         FeedbackVerdict::published},
        {"just over", 10ms, 20us, 250, 19501ns, 20us,
         FeedbackVerdict::slowRead},
        // window / K is the tighter bound: 2 ms / 250 = 8 us.
        {"short window", 2ms, 20us, 250, 10us, 8us, FeedbackVerdict::slowRead},
        {"short window, fast", 2ms, 20us, 250, 7us, 8us,
         FeedbackVerdict::published},
        {"K = 100", 1ms, 20us, 100, 9us, 10us, FeedbackVerdict::published},
    };
    for (const SlowReadCase& c : cases)
    {
        SCOPED_TRACE(c.name);
        sim::VirtualCounters counters(partCounters());
        DeliveredPerfEstimator estimator(
            partLimits(), {c.window, c.maxReadTime, c.windowPerReadTime});
        EXPECT_EQ(estimator.readBound(), c.bound);
        const auto start = counters.now();
        ASSERT_FALSE(estimator.update(readSample(counters)).published());
        counters.advanceTo(start + c.window);
        const nanoseconds stalls[] = {0ns, c.stall};
        counters.queueStalls(0, stalls);
        const FeedbackResult r = estimator.update(readSample(counters));
        EXPECT_EQ(r.verdict, c.verdict) << describe(r);
        EXPECT_EQ(r.readTime, 500ns + c.stall);
        EXPECT_EQ(r.readBound, c.bound);
        if (c.verdict != FeedbackVerdict::slowRead)
        {
            // A read that passes is within the promised error.
            EXPECT_NEAR(r.deliveredPerf, 2000.0, 2000.0 * 0.01);
            continue;
        }
        EXPECT_TRUE(r.rejected());
        EXPECT_EQ(r.deliveredPerf, 0.0);
        // The slow sample is dropped; the next fast one is measured from
        // the first sample.
        counters.advanceTo(start + 2 * c.window);
        const FeedbackResult next = estimator.update(readSample(counters));
        EXPECT_TRUE(next.published()) << describe(next);
        EXPECT_EQ(next.elapsed(), 2 * c.window);
        EXPECT_DOUBLE_EQ(next.deliveredPerf, 2000.0);
        EXPECT_EQ(estimator.count(FeedbackVerdict::slowRead), 1U);
    }
}

TEST(FeedbackTest, SlowFirstSampleIsNotABaseline)
{
    sim::VirtualCounters counters(partCounters());
    DeliveredPerfEstimator estimator(partLimits(), {10ms});
    const nanoseconds stalls[] = {100us, 0ns};
    counters.queueStalls(0, stalls);
    EXPECT_EQ(estimator.update(readSample(counters)).verdict,
              FeedbackVerdict::slowRead);
    counters.advance(10ms);
    EXPECT_EQ(estimator.update(readSample(counters)).verdict,
              FeedbackVerdict::notYet);
}

TEST(FeedbackTest, DescribeGivesTheOffendingNumbers)
{
    sim::VirtualCounters counters(partCounters());
    DeliveredPerfEstimator estimator(partLimits(), {10ms});
    ASSERT_FALSE(estimator.update(readSample(counters)).published());
    counters.advance(10ms);
    const nanoseconds stalls[] = {255us};
    counters.queueStalls(0, stalls);
    const std::string text = describe(estimator.update(readSample(counters)));
    EXPECT_NE(text.find("slow-read"), std::string::npos) << text;
    EXPECT_NE(text.find("255.500 us"), std::string::npos) << text;
    EXPECT_NE(text.find("20.000 us"), std::string::npos) << text;
}

// --- implausible and stopped counters ------------------------------------

struct PlausibleCase
{
    std::uint32_t deliveredPerf;
    FeedbackVerdict verdict;
};

TEST(FeedbackTest, ImplausibleValuesAreRejectedNeverPublished)
{
    // Plausible: [1000 / 2, 1.1 x 3000] = [500, 3300], bounds included.
    const PlausibleCase cases[] = {
        {499, FeedbackVerdict::implausible},
        {500, FeedbackVerdict::published},
        {3300, FeedbackVerdict::published},
        {3301, FeedbackVerdict::implausible},
        {922'989, FeedbackVerdict::implausible},
        {0, FeedbackVerdict::implausible},
    };
    for (const PlausibleCase& c : cases)
    {
        SCOPED_TRACE(c.deliveredPerf);
        sim::VirtualCounters counters(partCounters());
        counters.setDeliveredPerf(0, c.deliveredPerf);
        DeliveredPerfEstimator estimator(partLimits(), {10ms});
        const auto start = counters.now();
        ASSERT_FALSE(estimator.update(readSample(counters)).published());
        counters.advanceTo(start + 10ms);
        const FeedbackResult r = estimator.update(readSample(counters));
        EXPECT_EQ(r.verdict, c.verdict) << describe(r);
        // Reported either way, so a caller can log what it rejected.
        EXPECT_DOUBLE_EQ(r.deliveredPerf, c.deliveredPerf);
        EXPECT_DOUBLE_EQ(r.plausibleMin, 500.0);
        EXPECT_DOUBLE_EQ(r.plausibleMax, 3300.0);
        if (c.verdict == FeedbackVerdict::implausible)
        {
            const std::string text = describe(r);
            EXPECT_NE(text.find("[500.00, 3300.00]"), std::string::npos)
                << text;
            // The next window is measured from the rejected sample. (Its
            // counters were latched before the load changed back, hence
            // the tolerance.)
            counters.setDeliveredPerf(0, 2000);
            counters.advanceTo(r.to + 10ms);
            const FeedbackResult next = estimator.update(readSample(counters));
            EXPECT_TRUE(next.published()) << describe(next);
            EXPECT_EQ(next.elapsed(), 10ms);
            EXPECT_NEAR(next.deliveredPerf, 2000.0, 2000.0 * 0.02);
        }
    }
}

TEST(FeedbackTest, StoppedReferenceCounterIsRejected)
{
    sim::VirtualCounters counters(partCounters());
    DeliveredPerfEstimator estimator(partLimits(), {10ms});
    ASSERT_FALSE(estimator.update(readSample(counters)).published());
    counters.setIdle(0, true);
    counters.advance(10ms);
    FeedbackResult r = estimator.update(readSample(counters));
    EXPECT_EQ(r.verdict, FeedbackVerdict::referenceStopped) << describe(r);
    EXPECT_EQ(r.referenceDelta, 0U);

    // Idle for part of a window: the counters average over the busy part.
    counters.advance(4ms);
    counters.setIdle(0, false);
    counters.setDeliveredPerf(0, 2500);
    counters.advance(6ms);
    r = estimator.update(readSample(counters));
    EXPECT_TRUE(r.published()) << describe(r);
    EXPECT_NEAR(r.deliveredPerf, 2500.0, 2500.0 * 1e-3);
}

TEST(FeedbackTest, SampleOlderThanTheBaselineIsRejected)
{
    DeliveredPerfEstimator estimator(partLimits(), {10ms});
    CounterSample first;
    first.at = std::chrono::steady_clock::time_point(1s);
    first.reference = 1'000'000;
    first.delivered = 2'000'000;
    ASSERT_EQ(estimator.update(first).verdict, FeedbackVerdict::notYet);
    CounterSample earlier = first;
    earlier.at -= 20ms;
    const FeedbackResult r = estimator.update(earlier);
    EXPECT_EQ(r.verdict, FeedbackVerdict::outOfOrder);
    EXPECT_EQ(r.elapsed(), -20ms);
    CounterSample negative = first;
    negative.at += 20ms;
    negative.readTime = -1ns;
    EXPECT_EQ(estimator.update(negative).verdict, FeedbackVerdict::slowRead);
}

// --- configuration --------------------------------------------------------

TEST(FeedbackTest, UnusableConfigurationsThrow)
{
    struct Bad
    {
        const char* name;
        FeedbackLimits limits;
        FeedbackOptions options;
    };
    auto limits = [](auto change) {
        FeedbackLimits l = partLimits();
        change(l);
        return l;
    };
    auto options = [](auto change) {
        FeedbackOptions o;
        change(o);
        return o;
    };
    const Bad cases[] = {
        {"no reference perf",
         limits([](FeedbackLimits& l) { l.referencePerf = 0; }),
         {}},
        {"no highest perf",
         limits([](FeedbackLimits& l) { l.highestPerf = 0; }),
         {}},
        {"lowest above highest",
         limits([](FeedbackLimits& l) { l.lowestPerf = 3001; }),
         {}},
        {"0-bit counter",
         limits([](FeedbackLimits& l) { l.referenceCounterBits = 0; }),
         {}},
        {"65-bit counter",
         limits([](FeedbackLimits& l) { l.deliveredCounterBits = 65; }),
         {}},
        {"zero window", partLimits(),
         options([](FeedbackOptions& o) { o.window = 0us; })},
        {"zero read bound", partLimits(),
         options([](FeedbackOptions& o) { o.maxReadTime = 0ns; })},
        {"K = 0", partLimits(),
         options([](FeedbackOptions& o) { o.windowPerReadTime = 0; })},
    };
    for (const Bad& c : cases)
    {
        EXPECT_THROW(DeliveredPerfEstimator(c.limits, c.options),
                     std::invalid_argument)
            << c.name;
    }
}

struct DescriptorCase
{
    const char* layout;
    bool expected;
    std::uint32_t referencePerf;
    std::uint32_t highest;
    std::uint32_t lowest;
    unsigned bits;
};

TEST(FeedbackTest, LimitsFromTheDescriptorsIntegers)
{
    const DescriptorCase cases[] = {
        // ReferencePerformance 1000, CounterWraparoundTime Integer 0, FFH
        // counters of 64 bits.
        {"orion-o6", true, 1000, 0, 0, 64},
        {"rd-n2", true, 100, 3300, 800, 64},
        // Every level is a PCC register: the caller has to read them.
        {"altra", false, 0, 0, 0, 0},
        // ReferencePerformance is the Integer 0, "not supported":
        // NominalPerformance stands in, as in Linux.
        {"packed", true, 200, 255, 40, 64},
    };
    for (const DescriptorCase& c : cases)
    {
        SCOPED_TRACE(c.layout);
        const sim::Layout layout = sim::makeLayout(c.layout);
        const std::optional<FeedbackLimits> l =
            limitsFromDescriptor(layout.cpus.at(0));
        ASSERT_EQ(l.has_value(), c.expected);
        if (!l)
        {
            continue;
        }
        EXPECT_EQ(l->referencePerf, c.referencePerf);
        if (c.highest != 0)
        {
            EXPECT_EQ(l->highestPerf, c.highest);
            EXPECT_EQ(l->lowestPerf, c.lowest);
        }
        EXPECT_EQ(l->referenceCounterBits, c.bits);
        EXPECT_EQ(l->deliveredCounterBits, c.bits);
        EXPECT_EQ(l->counterWraparoundSeconds, 0U);
        EXPECT_NO_THROW(DeliveredPerfEstimator{*l});
    }

    // No counters, no delivered performance.
    CpcSource s = sim::cpcV3(0, 255, 200, 60, 40);
    EXPECT_FALSE(limitsFromDescriptor(CpcDescriptor(s)).has_value());

    // 32-bit counters and an Integer wraparound time carry over.
    sim::setEntry(s, CpcEntry::referencePerfCounter,
                  CpcValue::ofRegister(sim::memoryRegister(0x1000, 32)));
    sim::setEntry(s, CpcEntry::deliveredPerfCounter,
                  CpcValue::ofRegister(sim::memoryRegister(0x1008, 32)));
    sim::setEntry(s, CpcEntry::counterWraparoundTime, CpcValue::ofInteger(4));
    const std::optional<FeedbackLimits> l =
        limitsFromDescriptor(CpcDescriptor(s));
    ASSERT_TRUE(l.has_value());
    EXPECT_EQ(l->referencePerf, 200U);
    EXPECT_EQ(l->highestPerf, 255U);
    EXPECT_EQ(l->lowestPerf, 40U);
    EXPECT_EQ(l->referenceCounterBits, 32U);
    EXPECT_EQ(l->counterWraparoundSeconds, 4U);

    // A wraparound time in a register has to be read first.
    sim::setEntry(s, CpcEntry::counterWraparoundTime,
                  CpcValue::ofRegister(sim::memoryRegister(0x1010, 32)));
    EXPECT_FALSE(limitsFromDescriptor(CpcDescriptor(s)).has_value());
}

// --- the round robin -------------------------------------------------------

// Counters that run at twice the reference on every CPU, one reference tick
// per microsecond of `now`, and say which CPUs were read. CPUs in `failing`
// fail to read.
struct ScriptedCounters final : CounterSource
{
    std::error_code read(unsigned cpu, CounterSample& out) noexcept override
    {
        reads.push_back(cpu);
        if (cpu < failing.size() && failing[cpu])
        {
            return std::make_error_code(std::errc::no_such_device);
        }
        const auto ticks = static_cast<std::uint64_t>(now.count());
        out.reference = ticks;
        out.delivered = 2 * ticks;
        out.at = std::chrono::steady_clock::time_point(now);
        out.readTime = 500ns;
        return {};
    }

    microseconds now{0};
    std::vector<unsigned> reads;
    std::vector<bool> failing;
};

// Puts off the reads of the CPUs in `idle`, and reads the others.
struct PuttingOff final : CounterSource
{
    std::error_code read(unsigned cpu, CounterSample& out) noexcept override
    {
        if (cpu < idle.size() && idle[cpu])
        {
            putOff.push_back(cpu);
            return std::make_error_code(std::errc::operation_would_block);
        }
        return inner.read(cpu, out);
    }

    ScriptedCounters inner;
    std::vector<bool> idle;
    std::vector<unsigned> putOff;
};

std::vector<std::optional<DeliveredPerfEstimator>> estimators(
    const std::vector<bool>& which)
{
    std::vector<std::optional<DeliveredPerfEstimator>> out(which.size());
    for (std::size_t cpu = 0; cpu < which.size(); ++cpu)
    {
        if (which[cpu])
        {
            out[cpu].emplace(partLimits());
        }
    }
    return out;
}

TEST(FeedbackRoundRobinTest, ReadsAtMostTheBudgetOfDueCpusInTurn)
{
    ScriptedCounters c;
    FeedbackRoundRobin rr(estimators({true, true, true, false, true}),
                          {10ms, 2});
    ASSERT_EQ(rr.cpuCount(), 5U);
    c.now = 0us;
    rr.poll(c, c.now);
    EXPECT_EQ(c.reads, (std::vector<unsigned>{0, 1}));
    // It goes on where it stopped; CPU 3 has no estimator and is skipped.
    c.now = 1us;
    rr.poll(c, c.now);
    EXPECT_EQ(c.reads, (std::vector<unsigned>{0, 1, 2, 4}));
    // Nobody is due again before a period has passed since their read.
    c.now = 2us;
    rr.poll(c, c.now);
    EXPECT_EQ(c.reads.size(), 4U);
    c.now = 10ms;
    rr.poll(c, c.now);
    EXPECT_EQ(c.reads, (std::vector<unsigned>{0, 1, 2, 4, 0, 1}));
    c.now = 10ms + 1us;
    rr.poll(c, c.now);
    EXPECT_EQ(c.reads, (std::vector<unsigned>{0, 1, 2, 4, 0, 1, 2, 4}));
    EXPECT_EQ(rr.estimator(3), nullptr);
    ASSERT_NE(rr.estimator(4), nullptr);
    EXPECT_EQ(rr.estimator(4)->count(FeedbackVerdict::published), 1U);
}

TEST(FeedbackRoundRobinTest, PublishesAndAFailedReadMakesItUnknown)
{
    ScriptedCounters c;
    FeedbackRoundRobin rr(estimators({true, true}), {10ms, 16});
    rr.poll(c, c.now);
    EXPECT_EQ(rr.deliveredPerf(0), 0U); // one sample: not yet
    c.now = 10ms;
    rr.poll(c, c.now);
    EXPECT_EQ(rr.deliveredPerf(0), 2000U); // 1000 x 2
    EXPECT_EQ(rr.deliveredPerf(1), 2000U);

    c.failing = {false, true};
    c.now = 20ms;
    rr.poll(c, c.now);
    EXPECT_EQ(rr.deliveredPerf(0), 2000U);
    EXPECT_EQ(rr.deliveredPerf(1), 0U);
    // Back online: unknown until two good reads a window apart.
    c.failing.clear();
    c.now = 30ms;
    rr.poll(c, c.now);
    EXPECT_EQ(rr.deliveredPerf(1), 0U);
    c.now = 40ms;
    rr.poll(c, c.now);
    EXPECT_EQ(rr.deliveredPerf(1), 2000U);
}

// Counters read off the caller's thread, two in flight at a time: a read
// started at one poll is in at the next, handed out when the CPU is asked.
struct AsyncCounters final : public CounterSource
{
    std::error_code read(unsigned cpu, CounterSample& out) noexcept override
    {
        if (std::find(started.begin(), started.end(), cpu) != started.end())
        {
            if (std::find(ready.begin(), ready.end(), cpu) == ready.end())
            {
                return std::make_error_code(std::errc::operation_in_progress);
            }
            std::erase(started, cpu);
            std::erase(ready, cpu);
            ++readsOf[cpu];
            return inner.read(cpu, out);
        }
        // Those in are no longer in flight (the kernel machine takes them
        // before each poll).
        if (started.size() - ready.size() >= 2)
        {
            return std::make_error_code(std::errc::operation_in_progress);
        }
        started.push_back(cpu);
        return std::make_error_code(std::errc::operation_in_progress);
    }
    // Between polls: what was started is in.
    void complete()
    {
        ready = started;
    }

    ScriptedCounters inner;
    std::vector<unsigned> started;
    std::vector<unsigned> ready;
    std::map<unsigned, unsigned> readsOf;
};

TEST(FeedbackRoundRobinTest, ASourceWithFewReadsInFlightStillGoesRound)
{
    AsyncCounters c;
    constexpr unsigned cpus = 64;
    FeedbackRoundRobin rr(estimators(std::vector<bool>(cpus, true)),
                          {10ms, 16});
    // Polls 1 ms apart for 200 ms, two reads a poll at most: going round
    // the 64 CPUs takes 32 ms, longer than their 10 ms period, so the first
    // CPUs are due again long before the last had a turn. Each must still
    // be read about every 32 ms.
    for (int ms = 0; ms < 200; ++ms)
    {
        c.inner.now = std::chrono::milliseconds(ms);
        rr.poll(c, c.inner.now);
        c.complete();
    }
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
    {
        EXPECT_GE(c.readsOf[cpu], 5U) << "CPU " << cpu;
        EXPECT_NE(rr.deliveredPerf(cpu), 0U) << "CPU " << cpu;
    }
}

TEST(FeedbackRoundRobinTest, AReadPutOffTakesNoneOfTheBudget)
{
    PuttingOff c;
    c.idle = {false, true, false};
    FeedbackRoundRobin rr(estimators({true, true, true}), {10ms, 2});
    rr.poll(c, c.inner.now);
    EXPECT_EQ(c.putOff, (std::vector<unsigned>{1}));
    EXPECT_EQ(c.inner.reads, (std::vector<unsigned>{0, 2}));
}

TEST(FeedbackRoundRobinTest, AReadPutOffKeepsTheEstimateAndIsAskedAPeriodOn)
{
    PuttingOff c;
    FeedbackRoundRobin rr(estimators({true, true, true}), {10ms, 16});
    for (const auto t : {0ms, 10ms})
    {
        c.inner.now = t;
        rr.poll(c, c.inner.now);
    }
    ASSERT_EQ(rr.deliveredPerf(1), 2000U);
    const std::uint64_t window = rr.lastWindow(1).sequence;
    // CPU 1 goes idle: its reads are put off, not failed.
    c.idle = {false, true, false};
    c.inner.reads.clear();
    c.inner.now = 20ms;
    rr.poll(c, c.inner.now);
    EXPECT_EQ(c.putOff, (std::vector<unsigned>{1}));
    EXPECT_EQ(c.inner.reads, (std::vector<unsigned>{0, 2}));
    EXPECT_EQ(rr.deliveredPerf(1), 2000U);
    EXPECT_EQ(rr.lastWindow(1).sequence, window);
    // Not asked again within the period.
    c.inner.now = 25ms;
    rr.poll(c, c.inner.now);
    EXPECT_EQ(c.putOff.size(), 1U);
    c.inner.now = 30ms;
    rr.poll(c, c.inner.now);
    EXPECT_EQ(c.putOff, (std::vector<unsigned>{1, 1}));
    // Busy again: read, and its window spans the time it was put off.
    c.idle.clear();
    c.inner.now = 40ms;
    rr.poll(c, c.inner.now);
    EXPECT_EQ(rr.lastWindow(1).sequence, window + 1);
    EXPECT_EQ(rr.lastWindow(1).elapsed, 30ms);
    EXPECT_EQ(rr.deliveredPerf(1), 2000U);
}

TEST(FeedbackRoundRobinTest, UnusableOptionsThrow)
{
    EXPECT_THROW(FeedbackRoundRobin(estimators({true}), {0us, 1}),
                 std::invalid_argument);
    EXPECT_THROW(FeedbackRoundRobin(estimators({true}), {10ms, 0}),
                 std::invalid_argument);
    FeedbackRoundRobin none(estimators({}), {10ms, 1});
    ScriptedCounters c;
    none.poll(c, 0us);
    EXPECT_TRUE(c.reads.empty());
}
} // namespace
} // namespace cppc
