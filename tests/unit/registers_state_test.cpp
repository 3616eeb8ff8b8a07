// SPDX-License-Identifier: Apache-2.0
// The registers backend's state file format: what it writes reads back as
// it was, and only that: every malformed or merely unusual spelling is
// refused with the file and the line named.
#include "daemon/machines/registers_state.hpp"
#include "lib/error.hpp"

#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using cppc::CpcEntry;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(RegistersStateTest, WhatIsWrittenReadsBack)
{
    const std::vector<SavedRegister> saved{
        {0, CpcEntry::desiredPerf, 0x1000, 0, 32, 180},
        {0, CpcEntry::energyPerfPreference, 0x1004, 16, 8, 255},
        {4095, CpcEntry::autonomousActivityWindow, 0xffffffffffffffff, 0, 64,
         18446744073709551615U},
    };
    const std::string text = formatRegistersState(saved);
    EXPECT_EQ(text.substr(0, text.find('\n')), "cppcgov-registers-state 2");
    EXPECT_THAT(text, HasSubstr("\ncpu0 DesiredPerformance 0x1000 0 32 180\n"));
    EXPECT_EQ(parseRegistersState(text, "f"), saved);
    EXPECT_THAT(parseRegistersState(formatRegistersState({}), "f"), IsEmpty());
    EXPECT_EQ(registersStateFile("/var/lib/cppcgov"),
              "/var/lib/cppcgov/registers.state");
    EXPECT_EQ(registersRecord(7), "cpu7");
}

TEST(RegistersStateTest, MalformedLinesAreRefusedNamingTheFileAndTheLine)
{
    const std::string header = "cppcgov-registers-state 2\n";
    const std::vector<std::pair<std::string, std::string>> bad{
        {"cpu0 DesiredPerformance 0x10 0 32 1", "does not end"},
        {"cpu0 DesiredPerformance 0x10 0 32\n", "not 'cpu<N>"},
        {"cpu0 DesiredPerformance 0x10 0 32 1 2\n", "not 'cpu<N>"},
        {"cpu0  DesiredPerformance 0x10 0 32 1\n", "not 'cpu<N>"},
        {"cpu0 DesiredPerformance 0x10 0 32 1 \n", "not 'cpu<N>"},
        {"cpu DesiredPerformance 0x10 0 32 1\n", "no CPU number"},
        {"cpu4096 DesiredPerformance 0x10 0 32 1\n", "no CPU number"},
        {"cpu07 DesiredPerformance 0x10 0 32 1\n", "no CPU number"},
        {"cpux DesiredPerformance 0x10 0 32 1\n", "no CPU number"},
        {"policy0 DesiredPerformance 0x10 0 32 1\n", "no CPU number"},
        {"cpu0 HighestPerformance 0x10 0 32 1\n", "not a control register"},
        {"cpu0 PerformanceLimited 0x10 0 32 1\n", "not a control register"},
        {"cpu0 DesiredPerformance 10 0 32 1\n", "not 0x"},
        {"cpu0 DesiredPerformance 0x 0 32 1\n", "not 0x"},
        {"cpu0 DesiredPerformance 0x010 0 32 1\n", "not 0x"},
        {"cpu0 DesiredPerformance 0xAB 0 32 1\n", "not 0x"},
        {"cpu0 DesiredPerformance 0x10000000000000000 0 32 1\n", "not 0x"},
        {"cpu0 DesiredPerformance 0xfg 0 32 1\n", "not 0x"},
        {"cpu0 DesiredPerformance 0x10 0 0 1\n", "field of 64 bits"},
        {"cpu0 DesiredPerformance 0x10 0 65 1\n", "field of 64 bits"},
        {"cpu0 DesiredPerformance 0x10 40 32 1\n", "field of 64 bits"},
        {"cpu0 DesiredPerformance 0x10 00 32 1\n", "field of 64 bits"},
        {"cpu0 DesiredPerformance 0x10 0 32 -1\n", "not a decimal"},
        {"cpu0 DesiredPerformance 0x10 0 32 042\n", "not a decimal"},
        {"cpu0 DesiredPerformance 0x10 0 64 18446744073709551616\n",
         "not a decimal"},
        {"cpu0 EnergyPerformancePreference 0x10 16 8 256\n", "does not fit"},
        {"cpu0 DesiredPerformance 0x10 0 32 1\n"
         "cpu0 DesiredPerformance 0x10 0 32 2\n",
         "appears twice"},
    };
    for (const auto& [body, why] : bad)
    {
        try
        {
            (void)parseRegistersState(header + body, "/state/registers.state");
            ADD_FAILURE() << "accepted: " << body;
        }
        catch (const std::system_error& e)
        {
            EXPECT_EQ(e.code(), cppc::Errc::malformedAttribute) << body;
            EXPECT_THAT(e.what(), AllOf(HasSubstr("/state/registers.state"),
                                        HasSubstr(why)))
                << body;
        }
    }
    // Another state file, or this one's first format.
    EXPECT_THROW((void)parseRegistersState("cppcgov-latency-state 1\n", "f"),
                 std::system_error);
    EXPECT_THROW((void)parseRegistersState(
                     "cppcgov-registers-state 1\ncpu0 DesiredPerformance "
                     "0x10 1\n",
                     "f"),
                 std::system_error);
}

} // namespace
} // namespace cppcgov::daemon
