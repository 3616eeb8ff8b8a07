// SPDX-License-Identifier: Apache-2.0
// What pccfs's tree holds and accepts (kernel_model.hpp), as cppc_cpufreq
// and the cpufreq core answer, and the counters against the set speed.
#include "kernel_model.hpp"

#include <cerrno>

#include <gtest/gtest.h>

namespace pccfs
{
namespace
{

using std::chrono::milliseconds;
const KernelModel::Clock::time_point t0{std::chrono::seconds(100)};

TEST(KernelModel, SetspeedOnlyUnderUserspace)
{
    KernelModel m(4, 2, 110000, t0);
    EXPECT_EQ(m.show(Role::setspeed, 2, t0), "<unsupported>\n");
    EXPECT_EQ(m.check(Role::setspeed, 2, "1000000\n").value(), EINVAL);
    EXPECT_EQ(m.check(Role::governor, 2, "turbo\n").value(), EINVAL);
    ASSERT_FALSE(m.check(Role::governor, 2, "userspace\n"));
    m.store(Role::governor, 2, "userspace\n", t0);
    EXPECT_EQ(m.show(Role::setspeed, 2, t0), "2500000\n");
    EXPECT_FALSE(m.check(Role::setspeed, 2, "1000000\n"));
    EXPECT_EQ(m.check(Role::setspeed, 2, "fast\n").value(), EINVAL);
    EXPECT_EQ(m.show(Role::relatedCpus, 2, t0), "2 3\n");
    EXPECT_EQ(m.cpusOf(Role::setspeed, 2), (std::vector<unsigned>{2, 3}));
    EXPECT_EQ(m.cpusOf(Role::feedbackCtrs, 3), std::vector<unsigned>{3});
}

TEST(KernelModel, SpeedsAndLimitsAreClamped)
{
    KernelModel m(2, 1, 110000, t0);
    m.store(Role::governor, 1, "userspace\n", t0);
    m.store(Role::setspeed, 1, "9999999\n", t0);
    EXPECT_EQ(m.show(Role::setspeed, 1, t0), "2500000\n");
    m.store(Role::scalingMaxFreq, 1, "2000000\n", t0);
    EXPECT_EQ(m.show(Role::setspeed, 1, t0), "2000000\n");
    m.store(Role::scalingMinFreq, 1, "100\n", t0);
    EXPECT_EQ(m.show(Role::scalingMinFreq, 1, t0), "500000\n");
    m.store(Role::setspeed, 1, "1\n", t0);
    EXPECT_EQ(m.show(Role::scalingCurFreq, 1, t0), "500000\n");
    // A minimum above the maximum reads as the maximum.
    m.store(Role::scalingMinFreq, 1, "2400000\n", t0);
    EXPECT_EQ(m.show(Role::scalingMinFreq, 1, t0), "2000000\n");
    EXPECT_EQ(m.show(Role::setspeed, 1, t0), "2000000\n");
    EXPECT_EQ(m.show(Role::setspeed, 0, t0), "<unsupported>\n");
}

TEST(KernelModel, CountersFollowThePerformanceInForce)
{
    KernelModel m(2, 1, 110000, t0);
    // CPU 1 starts at ref 1000, del 2000, at the full 2500000 kHz.
    EXPECT_EQ(m.show(Role::feedbackCtrs, 1, t0), "ref:1000 del:2000\n");
    EXPECT_EQ(m.show(Role::feedbackCtrs, 1, t0 + milliseconds(10)),
              "ref:1001000 del:1002000\n");
    m.store(Role::governor, 1, "userspace\n", t0);
    m.store(Role::setspeed, 1, "1000000\n", t0 + milliseconds(10));
    // perf 100 of reference 250: delivered at 0.4 the reference rate.
    EXPECT_EQ(m.show(Role::feedbackCtrs, 1, t0 + milliseconds(20)),
              "ref:2001000 del:1402000\n");
    // CPU 0 is another policy: unchanged rate.
    EXPECT_EQ(m.show(Role::feedbackCtrs, 0, t0 + milliseconds(20)),
              "ref:2000000 del:2000000\n");
}

TEST(KernelModel, ResumeLatencyAsTheKernelTakesIt)
{
    KernelModel m(1, 1, 110000, t0);
    EXPECT_EQ(m.show(Role::resumeLatency, 0, t0), "0\n");
    EXPECT_FALSE(m.check(Role::resumeLatency, 0, "n/a\n"));
    EXPECT_EQ(m.check(Role::resumeLatency, 0, "-1\n").value(), EINVAL);
    EXPECT_EQ(m.check(Role::resumeLatency, 0, "2147483647\n").value(), EINVAL);
    m.store(Role::resumeLatency, 0, "n/a\n", t0);
    EXPECT_EQ(m.show(Role::resumeLatency, 0, t0), "n/a\n");
    m.store(Role::resumeLatency, 0, "200\n", t0);
    EXPECT_EQ(m.show(Role::resumeLatency, 0, t0), "200\n");
    EXPECT_EQ(m.check(Role::feedbackCtrs, 0, "1\n").value(), EACCES);
}

} // namespace
} // namespace pccfs
