// SPDX-License-Identifier: Apache-2.0
// The registers backend's state file format: what it writes reads back as
// it was, and every malformed line is refused with the file and the line
// named.
#include "daemon/machines/registers_state.hpp"
#include "lib/error.hpp"

#include <string>
#include <system_error>
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
        {0, CpcEntry::desiredPerf, 0x1000, 180},
        {0, CpcEntry::energyPerfPreference, 0x1004, 128},
        {4095, CpcEntry::autonomousActivityWindow, 0xffffffffffffffff,
         18446744073709551615U},
    };
    const std::string text = formatRegistersState(saved);
    EXPECT_EQ(text.substr(0, text.find('\n')), "cppcgov-registers-state 1");
    EXPECT_THAT(text, HasSubstr("\ncpu0 DesiredPerformance 0x1000 180\n"));
    EXPECT_EQ(parseRegistersState(text, "f"), saved);
    EXPECT_THAT(parseRegistersState(formatRegistersState({}), "f"), IsEmpty());
    EXPECT_EQ(registersStateFile("/var/lib/cppcgov"),
              "/var/lib/cppcgov/registers.state");
    EXPECT_EQ(registersRecord(7), "cpu7");
}

TEST(RegistersStateTest, MalformedLinesAreRefusedNamingTheFileAndTheLine)
{
    const std::string header = "cppcgov-registers-state 1\n";
    const std::vector<std::pair<std::string, std::string>> bad{
        {"cpu0 DesiredPerformance 0x10 1", "does not end"},
        {"cpu0 DesiredPerformance 0x10\n", "not 'cpu<N>"},
        {"cpu0 DesiredPerformance 0x10 1 2\n", "not 'cpu<N>"},
        {"cpu0  DesiredPerformance 0x10 1\n", "not 'cpu<N>"},
        {"cpu0 DesiredPerformance 0x10 1 \n", "not 'cpu<N>"},
        {"cpu DesiredPerformance 0x10 1\n", "no CPU number"},
        {"cpu4096 DesiredPerformance 0x10 1\n", "no CPU number"},
        {"cpux DesiredPerformance 0x10 1\n", "no CPU number"},
        {"policy0 DesiredPerformance 0x10 1\n", "no CPU number"},
        {"cpu0 HighestPerformance 0x10 1\n", "not a control register"},
        {"cpu0 PerformanceLimited 0x10 1\n", "not a control register"},
        {"cpu0 DesiredPerformance 10 1\n", "not hexadecimal"},
        {"cpu0 DesiredPerformance 0x 1\n", "not hexadecimal"},
        {"cpu0 DesiredPerformance 0x10000000000000000 1\n", "not hexadecimal"},
        {"cpu0 DesiredPerformance 0xfg 1\n", "not hexadecimal"},
        {"cpu0 DesiredPerformance 0x10 -1\n", "not a decimal"},
        {"cpu0 DesiredPerformance 0x10 18446744073709551616\n",
         "not a decimal"},
        {"cpu0 DesiredPerformance 0x10 1\ncpu0 DesiredPerformance 0x10 2\n",
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
    EXPECT_THROW((void)parseRegistersState("cppcgov-latency-state 1\n", "f"),
                 std::system_error);
}

} // namespace
} // namespace cppcgov::daemon
