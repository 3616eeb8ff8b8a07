// SPDX-License-Identifier: Apache-2.0
// The project's one CPU-list parser (lib/cpu_list.hpp): both syntaxes,
// every problem with where it is and the message for it, and the way back
// from a set to a list.
#include "lib/cpu_list.hpp"

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc
{
namespace
{

using ::testing::ElementsAre;
using ::testing::IsEmpty;

CpuSet setOf(std::initializer_list<std::uint32_t> numbers)
{
    CpuSet set;
    for (const std::uint32_t cpu : numbers)
    {
        set.set(cpu);
    }
    return set;
}

// The set `text` names; a test failure, and no CPUs, when it is malformed.
CpuSet parsed(std::string_view text,
              CpuListSyntax syntax = CpuListSyntax::written)
{
    const CpuListResult r = parseCpuList(text, syntax);
    EXPECT_FALSE(r.error) << "'" << text << "': " << describe(r.error, text);
    return r.cpus;
}

TEST(CpuListTest, WrittenListsTakeNumbersRangesAndSpacesAroundItems)
{
    EXPECT_EQ(parsed("0"), setOf({0}));
    EXPECT_EQ(parsed("0-3,8,10-11"), setOf({0, 1, 2, 3, 8, 10, 11}));
    EXPECT_EQ(parsed(" 1 , 4095 "), setOf({1, 4095}));
    EXPECT_EQ(parsed("9,2-3,3,1"), setOf({1, 2, 3, 9}));
    EXPECT_EQ(parsed("5-5"), setOf({5}));
    EXPECT_EQ(parsed("007"), setOf({7}));
    EXPECT_EQ(parsed("0-4095").count(), maxCpus);
}

TEST(CpuListTest, KernelListsTakeSpacesOrCommasAndMayBeEmpty)
{
    const auto kernel = CpuListSyntax::kernel;
    EXPECT_EQ(parsed("0 1 2 3", kernel), setOf({0, 1, 2, 3}));
    EXPECT_EQ(parsed("0-2,8", kernel), setOf({0, 1, 2, 8}));
    EXPECT_EQ(parsed("5", kernel), setOf({5}));
    EXPECT_EQ(parsed("", kernel), CpuSet());
}

struct ProblemCase
{
    std::string text;
    CpuListSyntax syntax;
    CpuListProblem problem;
    std::size_t offset;
    std::size_t length;
    // describe()'s reason, after "malformed CPU list '<text>': ".
    std::string reason;
};

void PrintTo(const ProblemCase& c, std::ostream* out)
{
    *out << "'" << c.text << "' ("
         << (c.syntax == CpuListSyntax::written ? "written" : "kernel") << ")";
}

class CpuListProblemTest : public ::testing::TestWithParam<ProblemCase>
{};

TEST_P(CpuListProblemTest, SaysWhereAndWhy)
{
    const ProblemCase& c = GetParam();
    const CpuListResult r = parseCpuList(c.text, c.syntax);
    EXPECT_EQ(r.error, (CpuListError{c.problem, c.offset, c.length}));
    EXPECT_TRUE(r.cpus.none()) << "a malformed list names no CPUs";
    EXPECT_EQ(describe(r.error, c.text),
              "malformed CPU list '" + c.text + "': " + c.reason);
}

constexpr auto written = CpuListSyntax::written;
constexpr auto kernel = CpuListSyntax::kernel;
using P = CpuListProblem;
const std::string above = " is above 4095, the highest supported";

INSTANTIATE_TEST_SUITE_P(
    Written, CpuListProblemTest,
    ::testing::Values(
        ProblemCase{"", written, P::empty, 0, 0, "the list is empty"},
        ProblemCase{"  ", written, P::empty, 0, 2, "the list is empty"},
        ProblemCase{"1,,2", written, P::emptyItem, 2, 0, "an empty item"},
        ProblemCase{"1, ,2", written, P::emptyItem, 2, 1, "an empty item"},
        ProblemCase{"1,", written, P::emptyItem, 2, 0, "an empty item"},
        ProblemCase{",1", written, P::emptyItem, 0, 0, "an empty item"},
        ProblemCase{"1-", written, P::missingNumber, 2, 0,
                    "a CPU number is missing"},
        ProblemCase{"4, -1", written, P::missingNumber, 3, 0,
                    "a CPU number is missing"},
        ProblemCase{"x", written, P::notANumber, 0, 1,
                    "'x' is not a CPU number"},
        ProblemCase{"+1", written, P::notANumber, 0, 2,
                    "'+1' is not a CPU number"},
        ProblemCase{"1-2-3", written, P::notANumber, 2, 3,
                    "'2-3' is not a CPU number"},
        ProblemCase{"0-7:2/4", written, P::notANumber, 2, 5,
                    "'7:2/4' is not a CPU number"},
        ProblemCase{"0-4096", written, P::aboveLimit, 2, 4, "CPU 4096" + above},
        ProblemCase{"1,99999999999", written, P::aboveLimit, 2, 11,
                    "CPU 99999999999" + above},
        ProblemCase{"99999999999999999999999", written, P::aboveLimit, 0, 23,
                    "CPU 99999999999999999999999" + above},
        ProblemCase{"0, 3-1 ,5", written, P::backwards, 3, 3,
                    "the range '3-1' ends before it starts"},
        // The first problem from the left is the one reported.
        ProblemCase{"x,5000,3-1", written, P::notANumber, 0, 1,
                    "'x' is not a CPU number"}));

INSTANTIATE_TEST_SUITE_P(
    Kernel, CpuListProblemTest,
    ::testing::Values(
        ProblemCase{"0 1 ", kernel, P::emptyItem, 4, 0, "an empty item"},
        ProblemCase{"0  1", kernel, P::emptyItem, 2, 0, "an empty item"},
        ProblemCase{" 1", kernel, P::emptyItem, 0, 0, "an empty item"},
        ProblemCase{"0,,1", kernel, P::emptyItem, 2, 0, "an empty item"},
        ProblemCase{"a", kernel, P::notANumber, 0, 1,
                    "'a' is not a CPU number"},
        ProblemCase{"-1", kernel, P::missingNumber, 0, 0,
                    "a CPU number is missing"},
        ProblemCase{"3-1", kernel, P::backwards, 0, 3,
                    "the range '3-1' ends before it starts"},
        ProblemCase{"0 99999999", kernel, P::aboveLimit, 2, 8,
                    "CPU 99999999" + above}));

TEST(CpuListTest, MessagesQuoteOnlyPrintableText)
{
    EXPECT_EQ(describe(parseCpuList("1\t").error, "1\t"),
              "malformed CPU list '1\\x09': '1\\x09' is not a CPU number");
    // A newline is not stripped: that is the caller's business.
    const CpuListResult newline = parseCpuList("0\n", CpuListSyntax::kernel);
    EXPECT_EQ(newline.error, (CpuListError{CpuListProblem::notANumber, 0, 2}));
    EXPECT_EQ(describe(newline.error, "0\n"),
              "malformed CPU list '0\\x0a': '0\\x0a' is not a CPU number");
    const std::string text = "0,\x01" + std::string(50, '7');
    const CpuListResult r = parseCpuList(text);
    ASSERT_EQ(r.error.problem, CpuListProblem::notANumber);
    const std::string message = describe(r.error, text);
    EXPECT_EQ(message.find('\x01'), std::string::npos) << message;
    EXPECT_NE(message.find("'\\x01777"), std::string::npos) << message;
    // Quoted text is cut after 40 characters.
    EXPECT_NE(message.find("777...'"), std::string::npos) << message;
}

TEST(CpuListTest, NumbersAreInIncreasingOrder)
{
    EXPECT_THAT(cpuNumbers(setOf({4095, 8, 0, 3})),
                ElementsAre(0U, 3U, 8U, 4095U));
    EXPECT_THAT(cpuNumbers(CpuSet()), IsEmpty());
}

TEST(CpuListTest, FormatsRunsAsRangesThatParseBack)
{
    EXPECT_EQ(formatCpuList(setOf({0, 1, 2, 3, 8, 10, 11})), "0-3,8,10-11");
    EXPECT_EQ(formatCpuList(setOf({4095})), "4095");
    EXPECT_EQ(formatCpuList(setOf({4094, 4095})), "4094-4095");
    EXPECT_EQ(formatCpuList(CpuSet()), "");
    CpuSet all;
    all.set();
    EXPECT_EQ(formatCpuList(all), "0-4095");
    for (const CpuSet& set : {setOf({1, 2, 4, 7}), all, setOf({0})})
    {
        const std::string text = formatCpuList(set);
        EXPECT_EQ(parsed(text), set) << text;
        EXPECT_EQ(parsed(text, CpuListSyntax::kernel), set) << text;
    }
}

} // namespace
} // namespace cppc
