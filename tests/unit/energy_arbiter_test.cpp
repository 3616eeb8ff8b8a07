// SPDX-License-Identifier: Apache-2.0
// Energy-preference arbitration per CPU: performance beats efficiency,
// which beats none; a request's end gives its CPUs the strongest left.
#include "daemon/energy_arbiter.hpp"
#include "lib/error.hpp"

#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using policies::EnergyPreference;

std::vector<EnergyPreference> now(const EnergyArbiter& a)
{
    return {a.perCpu().begin(), a.perCpu().end()};
}

TEST(EnergyArbiter, TheStrongestLivePreferenceWinsPerCpu)
{
    constexpr auto none = EnergyPreference::none;
    constexpr auto eff = EnergyPreference::efficiency;
    constexpr auto perf = EnergyPreference::performance;
    EnergyArbiter a(4);
    EXPECT_EQ(now(a), (std::vector{none, none, none, none}));
    const std::vector<unsigned> low = {0, 1, 1, 2};
    ASSERT_FALSE(a.add(1, low, eff));
    EXPECT_EQ(now(a), (std::vector{eff, eff, eff, none}));
    const std::vector<unsigned> mid = {2, 1};
    ASSERT_FALSE(a.add(2, mid, perf));
    EXPECT_EQ(now(a), (std::vector{eff, perf, perf, none}));
    const std::vector<unsigned> again = {1};
    ASSERT_FALSE(a.add(3, again, eff));
    EXPECT_EQ(a.size(), 3U);
    // Performance leaves: efficiency is left on CPUs 1 and 2.
    ASSERT_FALSE(a.remove(2));
    EXPECT_EQ(now(a), (std::vector{eff, eff, eff, none}));
    ASSERT_FALSE(a.remove(1));
    EXPECT_EQ(now(a), (std::vector{none, eff, none, none}));
    ASSERT_FALSE(a.remove(3));
    EXPECT_EQ(now(a), (std::vector{none, none, none, none}));
    EXPECT_EQ(a.size(), 0U);
}

TEST(EnergyArbiter, RefusesBadRequestsChangingNothing)
{
    EnergyArbiter a(2);
    const std::vector<unsigned> one = {1};
    const std::vector<unsigned> outside = {0, 2};
    EXPECT_EQ(a.add(1, {}, EnergyPreference::performance),
              std::errc::invalid_argument);
    EXPECT_EQ(a.add(1, one, EnergyPreference::none),
              std::errc::invalid_argument);
    EXPECT_EQ(a.add(1, outside, EnergyPreference::performance),
              cppc::make_error_code(cppc::Errc::noSuchCpu));
    EXPECT_EQ(a.perCpu()[0], EnergyPreference::none);
    ASSERT_FALSE(a.add(1, one, EnergyPreference::efficiency));
    EXPECT_EQ(a.add(1, one, EnergyPreference::performance),
              std::errc::file_exists);
    EXPECT_EQ(a.perCpu()[1], EnergyPreference::efficiency);
    EXPECT_EQ(a.remove(7), std::errc::invalid_argument);
}

} // namespace
} // namespace cppcgov::daemon
