// SPDX-License-Identifier: Apache-2.0
// The MADT reader on synthetic tables: GICC entries and the others it
// skips, malformed entries naming their offset, and a table cut at every
// length.
#include "acpi_test_support.hpp"
#include "lib/acpi/madt.hpp"
#include "lib/acpi/table.hpp"
#include "tests/fuzz/acpi_samples.hpp"

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::acpi
{
namespace
{

using samples::Bytes;
using test::acpiErrorOf;
using test::cutEverywhere;
using test::expectOffset;
using test::table;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- MADT ----

TEST(MadtTest, ReadsGiccEntriesAndSkipsOthers)
{
    Madt m = parseMadt(table(samples::sampleMadt()));
    ASSERT_EQ(m.gicc.size(), 5U);
    const GiccEntry& a = m.gicc[0];
    EXPECT_EQ(a.offset, 44U);
    EXPECT_EQ(a.length, 76U);
    EXPECT_EQ(a.acpiProcessorUid, 0x100U);
    EXPECT_EQ(a.mpidr, 0x10000U);
    EXPECT_EQ(a.efficiencyClass, 0U);
    EXPECT_TRUE(a.enabled());
    EXPECT_FALSE(a.onlineCapable());
    const GiccEntry& b = m.gicc[1];
    EXPECT_EQ(b.offset, 44U + 76U);
    EXPECT_EQ(b.cpuInterfaceNumber, 1U);
    EXPECT_EQ(b.acpiProcessorUid, 0x101U);
    EXPECT_EQ(b.mpidr, 0x10100U);
    EXPECT_EQ(b.efficiencyClass, 1U);
    EXPECT_EQ(m.gicc[2].length, 82U);
    EXPECT_FALSE(m.gicc[2].enabled());
    EXPECT_FALSE(m.gicc[3].enabled());
    EXPECT_TRUE(m.gicc[3].onlineCapable());
    EXPECT_TRUE(m.gicc[4].enabled());
    EXPECT_TRUE(m.gicc[4].onlineCapable());
    EXPECT_THAT(logicalCpuUids(m), ElementsAre(0x100U, 0x101U, 0x202U));
}

TEST(MadtTest, EmptyMadtHasNoCpus)
{
    Madt m = parseMadt(table(samples::madtTable({}, 1)));
    EXPECT_EQ(m.flags, 1U);
    EXPECT_TRUE(m.gicc.empty());
    EXPECT_TRUE(logicalCpuUids(m).empty());
}

struct BadMadtCase
{
    const char* name;
    std::vector<Bytes> entries;
    std::size_t offset;
    const char* text;
};

class BadMadtTest : public ::testing::TestWithParam<BadMadtCase>
{};

TEST_P(BadMadtTest, IsAnAcpiErrorNamingTheOffset)
{
    const BadMadtCase& c = GetParam();
    Table t = table(samples::madtTable(c.entries), "apic.dat");
    auto e = acpiErrorOf([&] { (void)parseMadt(t); });
    expectOffset(e, c.offset);
    EXPECT_THAT(e->what(), HasSubstr("APIC table apic.dat"));
    EXPECT_THAT(e->what(), HasSubstr(c.text));
}

const Bytes gicc80 = samples::giccEntry({.uid = 1});

INSTANTIATE_TEST_SUITE_P(
    Entries, BadMadtTest,
    ::testing::Values(
        BadMadtCase{"ShortGicc75",
                    {gicc80, samples::giccEntry({.length = 75})},
                    124,
                    "GICC entry length 75 is shorter than 76"},
        BadMadtCase{"ShortGicc2",
                    {samples::giccEntry({.length = 2})},
                    44,
                    "shorter than 76"},
        BadMadtCase{"LengthZero", {gicc80, {0x0C, 0}}, 124, "length 0"},
        BadMadtCase{"LengthOne", {{0x0F, 1}}, 44, "length 1, below 2"},
        BadMadtCase{"PastEnd",
                    {gicc80, {0x0E, 16, 0, 0}},
                    124,
                    "runs past the end of the table at 0x80"},
        BadMadtCase{"GiccPastEnd",
                    {Bytes(gicc80.begin(), gicc80.begin() + 70)},
                    44,
                    "runs past"},
        BadMadtCase{"LoneByte", {gicc80, {0x0B}}, 124, "entry header"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(MadtTest, WrongSignatureOrShortTable)
{
    expectOffset(acpiErrorOf([] {
                     (void)parseMadt(table(samples::makeTable("APIX", {})));
                 }),
                 0);
    expectOffset(
        acpiErrorOf([] {
            (void)parseMadt(table(samples::makeTable("APIC", {0, 0, 0, 0, 0})));
        }),
        40);
    // A Table built by hand, shorter than its own header.
    Table t;
    t.header.signature = "APIC";
    t.bytes.assign(10, 0);
    expectOffset(acpiErrorOf([&] { (void)parseMadt(t); }), 10);
}

TEST(MadtTest, TruncatedAtEveryLength)
{
    const Bytes full = samples::sampleMadt();
    std::vector<std::size_t> boundaries{madtEntriesOffset};
    std::vector<std::size_t> giccEnds;
    std::size_t at = madtEntriesOffset;
    for (std::size_t len :
         std::initializer_list<std::size_t>{76, 80, 82, 80, 80, 24, 16, 20, 20})
    {
        at += len;
        boundaries.push_back(at);
        if (len >= giccMinLength)
        {
            giccEnds.push_back(at);
        }
    }
    ASSERT_EQ(at, full.size());
    cutEverywhere(full, boundaries, giccEnds,
                  [](const Table& t) { return parseMadt(t).gicc.size(); });
}

} // namespace
} // namespace cppc::acpi
