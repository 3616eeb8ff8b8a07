// SPDX-License-Identifier: Apache-2.0
// What the feedback tests share: a 3 GHz-class part's limits and its
// simulated counters.
#pragma once

#include "lib/feedback.hpp"
#include "lib/sim/counters.hpp"

#include <cstdint>
#include <system_error>

#include <gtest/gtest.h>

namespace cppc::test
{

inline constexpr std::uint64_t two32 = std::uint64_t{1} << 32;
inline constexpr std::uint64_t two48 = std::uint64_t{1} << 48;

// A 3 GHz-class part in MHz-like units: the reference counter ticks at
// 1 GHz (1000 per microsecond).
inline FeedbackLimits partLimits()
{
    FeedbackLimits l;
    l.referencePerf = 1000;
    l.highestPerf = 3000;
    l.lowestPerf = 1000;
    return l;
}

inline sim::CounterConfig partCounters()
{
    sim::CounterConfig c;
    c.referencePerf = 1000;
    c.deliveredPerf = 2000;
    return c;
}

inline CounterSample readSample(sim::VirtualCounters& counters,
                                unsigned cpu = 0)
{
    CounterSample s;
    EXPECT_EQ(counters.read(cpu, s), std::error_code{});
    return s;
}

} // namespace cppc::test
