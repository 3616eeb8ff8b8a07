// SPDX-License-Identifier: Apache-2.0
// CpcDescriptor: the NumEntries/Revision rules and entry access.
#include "lib/cpc_descriptor.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc
{
namespace
{

using ::testing::HasSubstr;

CpcSource source(std::uint64_t numEntries, std::uint64_t revision,
                 std::size_t elements)
{
    CpcSource s;
    s.cpu = 7;
    s.uid = 0x107;
    s.path = "\\_SB.CPU7";
    s.numEntries = numEntries;
    s.revision = revision;
    for (std::size_t i = 0; i < elements; ++i)
    {
        s.entries.push_back(CpcValue::ofInteger(100 + i));
    }
    return s;
}

struct RevisionCase
{
    std::uint64_t numEntries;
    std::uint64_t revision;
    std::size_t elements; // after NumEntries and Revision
    bool accepted;
    unsigned readRevision;
};

class RevisionTest : public ::testing::TestWithParam<RevisionCase>
{};

TEST_P(RevisionTest, FollowsLinuxRules)
{
    const RevisionCase& c = GetParam();
    if (!c.accepted)
    {
        try
        {
            CpcDescriptor d(source(c.numEntries, c.revision, c.elements));
            FAIL() << "accepted NumEntries " << c.numEntries << " revision "
                   << c.revision;
        }
        catch (const DescriptorError& e)
        {
            EXPECT_THAT(e.what(), HasSubstr("CPU 7 (_UID 0x107, \\_SB.CPU7)"));
        }
        return;
    }
    CpcDescriptor d(source(c.numEntries, c.revision, c.elements));
    EXPECT_EQ(d.revision(), c.readRevision);
    EXPECT_EQ(d.entry(CpcEntry::highestPerf).integer, 100U);
    if (c.readRevision == 2)
    {
        EXPECT_EQ(d.entry(CpcEntry::lowestFreq).kind, CpcValue::Kind::absent);
    }
    else
    {
        EXPECT_EQ(d.entry(CpcEntry::nominalFreq).integer, 120U);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, RevisionTest,
    ::testing::Values(
        RevisionCase{21, 2, 19, true, 2}, RevisionCase{23, 3, 21, true, 3},
        RevisionCase{25, 4, 23, true, 3}, // read as revision 3
        RevisionCase{23, 2, 21, false, 0}, RevisionCase{21, 3, 19, false, 0},
        RevisionCase{23, 4, 21, false, 0}, // needs more than 23
        RevisionCase{23, 1, 21, false, 0}, RevisionCase{0, 0, 0, false, 0},
        RevisionCase{23, 3, 15, false, 0})); // too few elements

TEST(CpcDescriptorTest, RejectsAnElementThatIsNeitherIntegerNorBuffer)
{
    CpcSource s = source(23, 3, 21);
    s.entries[5] = CpcValue{};
    try
    {
        CpcDescriptor d(std::move(s));
        FAIL();
    }
    catch (const DescriptorError& e)
    {
        EXPECT_THAT(e.what(), HasSubstr("DesiredPerformance"));
    }
}

TEST(CpcDescriptorTest, NullRegisterIsRecognised)
{
    EXPECT_TRUE(RegisterDesc{}.isNull());
    RegisterDesc r{};
    r.bitWidth = 32;
    EXPECT_FALSE(r.isNull());
    r = RegisterDesc{};
    r.space = static_cast<std::uint8_t>(AddressSpace::pcc);
    EXPECT_FALSE(r.isNull());
}

TEST(CpcDescriptorTest, ReportsPccSubspaceOfFirstPccRegister)
{
    CpcSource s = source(23, 3, 21);
    EXPECT_FALSE(CpcDescriptor(s).pccSubspace().has_value());
    s.entries[5] = CpcValue::ofRegister(
        {static_cast<std::uint8_t>(AddressSpace::pcc), 32, 0, 2, 0x14});
    EXPECT_EQ(CpcDescriptor(s).pccSubspace(), 2);
}

TEST(CpcDescriptorTest, EntryNamesFollowTheSpecification)
{
    EXPECT_EQ(entryName(CpcEntry::desiredPerf), "DesiredPerformance");
    EXPECT_EQ(entryName(CpcEntry::nominalFreq), "NominalFrequency");
    EXPECT_EQ(entryName(static_cast<CpcEntry>(99)), "unknown");
}

} // namespace
} // namespace cppc
