// SPDX-License-Identifier: Apache-2.0
// AccessPlan: classification of every layout class, the lock rule, the
// cached PCC answer, refusal of malformed registers, and alias groups.
#include "lib/access_plan.hpp"
#include "lib/sim/layouts.hpp"

#include <array>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc
{
namespace
{

using sim::memoryRegister;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

AccessPlan planOf(std::string_view layout)
{
    return AccessPlan::build(sim::makeLayout(layout).cpus);
}

CpcSource plainCpu(unsigned cpu)
{
    CpcSource s = sim::cpcV3(cpu, 255, 200, 50, 10);
    s.path = "\\_SB.C" + std::to_string(cpu);
    s.uid = 0x100 + cpu;
    return s;
}

void setReg(CpcSource& s, CpcEntry e, const RegisterDesc& r)
{
    sim::setEntry(s, e, CpcValue::ofRegister(r));
}

AccessPlan planOfSources(std::vector<CpcSource> sources)
{
    std::vector<CpcDescriptor> cpus;
    cpus.reserve(sources.size());
    for (CpcSource& s : sources)
    {
        cpus.emplace_back(std::move(s));
    }
    return AccessPlan::build(std::move(cpus));
}

TEST(AccessPlanTest, OrionDesiredWordsAreExactAliasesWithinEachDomain)
{
    const AccessPlan plan = planOf("orion-o6");
    ASSERT_EQ(plan.cpuCount(), 12U);
    EXPECT_TRUE(plan.diagnostics().empty());
    EXPECT_TRUE(plan.locks().empty());
    // Domain sizes from the firmware's _PSD: CPU1-4 share one word, the
    // other domains two CPUs each.
    const std::array<std::uint32_t, 12> aliases = {2, 4, 4, 4, 4, 2,
                                                   2, 2, 2, 2, 2, 2};
    for (unsigned cpu = 0; cpu < 12; ++cpu)
    {
        const CpuPlan& c = plan.cpu(cpu);
        EXPECT_TRUE(c.usable);
        EXPECT_FALSE(c.pccControl);
        const RegisterPlan& desired = c.reg(CpcEntry::desiredPerf);
        EXPECT_EQ(desired.access, AccessClass::fullWidthAliased) << cpu;
        EXPECT_EQ(desired.aliases, aliases[cpu]) << cpu;
        EXPECT_EQ(desired.unitBytes, 4);
        EXPECT_FALSE(desired.lock.has_value());
        EXPECT_EQ(c.reg(CpcEntry::deliveredPerfCounter).access,
                  AccessClass::counterProvider);
        EXPECT_EQ(c.reg(CpcEntry::minPerf).access, AccessClass::absent);
        EXPECT_EQ(c.reg(CpcEntry::highestPerf).access, AccessClass::integer);
    }
}

TEST(AccessPlanTest, StandaloneLayoutNeedsNoLocks)
{
    const AccessPlan plan = planOf("rd-n2");
    EXPECT_TRUE(plan.locks().empty());
    for (unsigned cpu = 0; cpu < plan.cpuCount(); ++cpu)
    {
        EXPECT_EQ(plan.cpu(cpu).reg(CpcEntry::desiredPerf).access,
                  AccessClass::fullWidthStandalone);
        EXPECT_EQ(plan.cpu(cpu).reg(CpcEntry::perfLimited).access,
                  AccessClass::fullWidthStandalone);
    }
}

TEST(AccessPlanTest, PackedFieldsShareTheirUnitUnderOneLock)
{
    const AccessPlan plan = planOf("packed");
    ASSERT_EQ(plan.locks().size(), 8U); // one per CPU's unit, none else
    for (unsigned cpu = 0; cpu < plan.cpuCount(); ++cpu)
    {
        const CpuPlan& c = plan.cpu(cpu);
        for (CpcEntry e :
             {CpcEntry::desiredPerf, CpcEntry::minPerf, CpcEntry::maxPerf})
        {
            EXPECT_EQ(c.reg(e).access, AccessClass::sharedUnit);
            EXPECT_EQ(c.reg(e).lock, cpu);
        }
        EXPECT_EQ(plan.locks()[cpu].fields, 3U);
        EXPECT_EQ(plan.locks()[cpu].bytes, 4U);
    }
}

TEST(AccessPlanTest, AltraIsAllPccAndTheAnswerIsCached)
{
    const AccessPlan plan = planOf("altra");
    EXPECT_TRUE(plan.diagnostics().empty());
    for (unsigned cpu = 0; cpu < plan.cpuCount(); ++cpu)
    {
        const CpuPlan& c = plan.cpu(cpu);
        EXPECT_TRUE(c.pccControl);
        EXPECT_EQ(c.pccSubspace, 2);
        EXPECT_EQ(c.reg(CpcEntry::desiredPerf).access, AccessClass::pcc);
        EXPECT_EQ(c.reg(CpcEntry::deliveredPerfCounter).access,
                  AccessClass::pcc);
        EXPECT_EQ(c.reg(CpcEntry::deliveredPerfCounter).width, 64);
    }
}

TEST(AccessPlanTest, PartialFieldAloneInItsUnitHasNoLock)
{
    CpcSource s = plainCpu(0);
    setReg(s, CpcEntry::desiredPerf, memoryRegister(0x1000, 8, 8));
    const AccessPlan plan = planOfSources({s});
    EXPECT_EQ(plan.cpu(0).reg(CpcEntry::desiredPerf).access,
              AccessClass::partialField);
    EXPECT_TRUE(plan.locks().empty());
}

TEST(AccessPlanTest, PartialFieldsSharedAcrossCpusGetOneLock)
{
    // Two CPUs' Desired fields in one 32-bit word, as a packed mailbox.
    CpcSource a = plainCpu(0);
    CpcSource b = plainCpu(1);
    setReg(a, CpcEntry::desiredPerf, memoryRegister(0x1000, 8, 0));
    setReg(b, CpcEntry::desiredPerf, memoryRegister(0x1000, 8, 8));
    const AccessPlan plan = planOfSources({a, b});
    ASSERT_EQ(plan.locks().size(), 1U);
    EXPECT_EQ(plan.cpu(0).reg(CpcEntry::desiredPerf).access,
              AccessClass::sharedUnit);
    EXPECT_EQ(plan.cpu(1).reg(CpcEntry::desiredPerf).lock, 0U);
}

TEST(AccessPlanTest, OverlappingUnitsTakeTheConservativePath)
{
    // A byte field at 0x1001 inside another CPU's 32-bit unit at 0x1000.
    CpcSource a = plainCpu(0);
    CpcSource b = plainCpu(1);
    setReg(a, CpcEntry::desiredPerf, memoryRegister(0x1000, 8, 0, 3));
    setReg(b, CpcEntry::desiredPerf, memoryRegister(0x1001, 8, 0, 1));
    const AccessPlan plan = planOfSources({a, b});
    ASSERT_TRUE(plan.diagnostics().empty()) << plan.diagnostics()[0].message;
    ASSERT_EQ(plan.locks().size(), 1U);
    EXPECT_EQ(plan.locks()[0].bytes, 4U);
    EXPECT_EQ(plan.cpu(0).reg(CpcEntry::desiredPerf).access,
              AccessClass::overlappingUnits);
    EXPECT_EQ(plan.cpu(1).reg(CpcEntry::desiredPerf).access,
              AccessClass::overlappingUnits);
}

TEST(AccessPlanTest, AUnitSharedWithAFieldNeverWrittenNeedsNoLockButAWarning)
{
    // ReferencePerformance is never written: no writer of ours to lock
    // against.
    CpcSource s = plainCpu(0);
    setReg(s, CpcEntry::desiredPerf, memoryRegister(0x1000, 16, 0));
    setReg(s, CpcEntry::referencePerf, memoryRegister(0x1000, 16, 16));
    const AccessPlan plan = planOfSources({s});
    EXPECT_EQ(plan.cpu(0).reg(CpcEntry::desiredPerf).access,
              AccessClass::partialField);
    EXPECT_TRUE(plan.locks().empty());
    EXPECT_TRUE(plan.cpu(0).usable);
    ASSERT_EQ(plan.diagnostics().size(), 1U);
    EXPECT_EQ(plan.diagnostics()[0].severity, Severity::warning);
    EXPECT_THAT(plan.diagnostics()[0].message,
                AllOf(HasSubstr("DesiredPerformance: shares its access unit "
                                "with ReferencePerformance"),
                      HasSubstr("not written here"), HasSubstr("writes back")));
}

TEST(AccessPlanTest, AUnitSharedWithPerfLimitedIsLockedAndWarned)
{
    // PerformanceLimited is cleared by writing it, so two writers of ours
    // share the unit (a lock); the platform sets its bits at any time,
    // which no lock stops (a warning).
    CpcSource s = plainCpu(0);
    setReg(s, CpcEntry::desiredPerf, memoryRegister(0x1000, 16, 0));
    setReg(s, CpcEntry::perfLimited, memoryRegister(0x1000, 2, 16));
    const AccessPlan plan = planOfSources({s});
    EXPECT_EQ(plan.cpu(0).reg(CpcEntry::desiredPerf).access,
              AccessClass::sharedUnit);
    EXPECT_EQ(plan.cpu(0).reg(CpcEntry::perfLimited).access,
              AccessClass::sharedUnit);
    ASSERT_EQ(plan.locks().size(), 1U);
    EXPECT_TRUE(plan.cpu(0).usable);
    ASSERT_EQ(plan.diagnostics().size(), 1U);
    EXPECT_EQ(plan.diagnostics()[0].severity, Severity::warning);
    EXPECT_THAT(plan.diagnostics()[0].message,
                AllOf(HasSubstr("DesiredPerformance: shares its access unit "
                                "with PerformanceLimited"),
                      HasSubstr("the platform sets"),
                      HasSubstr("writes back")));
}

TEST(AccessPlanTest, PccFieldsAreCheckedForOverlapsAndMixedAliases)
{
    CpcSource a = plainCpu(0);
    setReg(a, CpcEntry::desiredPerf, sim::pccRegister(2, 0x14));
    setReg(a, CpcEntry::maxPerf, sim::pccRegister(2, 0x14)); // Desired again
    CpcSource b = plainCpu(1);
    setReg(b, CpcEntry::desiredPerf, sim::pccRegister(2, 0x94));
    setReg(b, CpcEntry::perfLimited, sim::pccRegister(2, 0x92)); // overlaps
    CpcSource c = plainCpu(2);
    setReg(c, CpcEntry::desiredPerf,
           sim::pccRegister(3, 0x14)); // other subspace
    const AccessPlan plan = planOfSources({a, b, c});
    EXPECT_FALSE(plan.cpu(0).usable);
    EXPECT_FALSE(plan.cpu(1).usable);
    EXPECT_TRUE(plan.cpu(2).usable);
    EXPECT_TRUE(plan.locks().empty());
    EXPECT_EQ(plan.cpu(2).reg(CpcEntry::desiredPerf).access, AccessClass::pcc);
}

TEST(AccessPlanTest, AddressesBeyondThePhysicalAddressSpaceAreRefused)
{
    CpcSource a = plainCpu(0);
    setReg(a, CpcEntry::desiredPerf,
           memoryRegister(0xFFFF'FFFF'FFFF'FFF8, 64, 0, 4));
    const AccessPlan plan = planOfSources({a});
    EXPECT_FALSE(plan.cpu(0).usable);
    ASSERT_FALSE(plan.diagnostics().empty());
    EXPECT_THAT(plan.diagnostics()[0].message, HasSubstr("52-bit physical"));
}

TEST(AccessPlanTest, ASharedWordOutsideOneDomainIsAWarning)
{
    CpcSource a = plainCpu(0);
    CpcSource b = plainCpu(1);
    setReg(a, CpcEntry::desiredPerf, memoryRegister(0x1000, 32));
    setReg(b, CpcEntry::desiredPerf, memoryRegister(0x1000, 32));
    a.psd = PsdInfo{1, 0xFD, 1, false};
    b.psd = PsdInfo{2, 0xFD, 1, false};
    const AccessPlan plan = planOfSources({a, b});
    EXPECT_TRUE(plan.cpu(0).usable);
    EXPECT_EQ(plan.cpu(0).reg(CpcEntry::desiredPerf).access,
              AccessClass::fullWidthAliased);
    ASSERT_EQ(plan.diagnostics().size(), 2U);
    EXPECT_THAT(plan.diagnostics()[0].message,
                HasSubstr("not in its _PSD domain"));
}

TEST(AccessPlanTest, HolesInCpuNumberingAreNotCpus)
{
    CpcSource s = plainCpu(3);
    setReg(s, CpcEntry::desiredPerf, memoryRegister(0x1000, 32));
    const AccessPlan plan = planOfSources({s});
    EXPECT_EQ(plan.cpuCount(), 4U);
    EXPECT_EQ(plan.descriptor(0), nullptr);
    EXPECT_FALSE(plan.cpu(0).usable);
    EXPECT_TRUE(plan.cpu(3).usable);
    EXPECT_FALSE(plan.anyRefused());
}

TEST(AccessPlanTest, TwoDescriptorsForOneCpuAreAProgrammingError)
{
    CpcSource s = plainCpu(0);
    setReg(s, CpcEntry::desiredPerf, memoryRegister(0x1000, 32));
    EXPECT_THROW(planOfSources({s, s}), std::invalid_argument);
}

// --- malformed layouts -------------------------------------------------

struct MalformedCase
{
    const char* name;
    CpcEntry entry;
    RegisterDesc reg;
    const char* reason;
};

class MalformedTest : public ::testing::TestWithParam<MalformedCase>
{};

TEST_P(MalformedTest, IsRefusedNamingCpuEntryAndReason)
{
    const MalformedCase& c = GetParam();
    CpcSource good = plainCpu(0);
    setReg(good, CpcEntry::desiredPerf, memoryRegister(0x2000, 32));
    CpcSource bad = plainCpu(1);
    setReg(bad, CpcEntry::desiredPerf, memoryRegister(0x3000, 32));
    setReg(bad, c.entry, c.reg);
    const AccessPlan plan = planOfSources({good, bad});

    EXPECT_TRUE(plan.cpu(0).usable);
    EXPECT_FALSE(plan.cpu(1).usable);
    EXPECT_TRUE(plan.anyRefused());
    EXPECT_EQ(plan.cpu(1).reg(c.entry).access, AccessClass::refused);
    ASSERT_FALSE(plan.diagnostics().empty());
    const Diagnostic& d = plan.diagnostics().front();
    EXPECT_EQ(d.cpu, 1U);
    EXPECT_EQ(d.entry, c.entry);
    EXPECT_EQ(d.severity, Severity::error);
    EXPECT_THAT(d.message, AllOf(HasSubstr("CPU 1 (_UID 0x101, \\_SB.C1)"),
                                 HasSubstr(std::string(entryName(c.entry))),
                                 HasSubstr(c.reason)));
}

RegisterDesc withSpace(std::uint8_t space, RegisterDesc r)
{
    r.space = space;
    return r;
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedTest,
    ::testing::Values(
        MalformedCase{"AddressZero", CpcEntry::desiredPerf,
                      memoryRegister(0, 32), "non-NULL register at address 0"},
        MalformedCase{"WiderThanAccess", CpcEntry::desiredPerf,
                      memoryRegister(0x3000, 32, 0, 2),
                      "larger than the 16-bit access size"},
        MalformedCase{"FieldPastAccess", CpcEntry::minPerf,
                      memoryRegister(0x3010, 8, 28, 3),
                      "bit width 8 at offset 28 is larger"},
        MalformedCase{"Unaligned", CpcEntry::desiredPerf,
                      memoryRegister(0x3002, 32), "not aligned to its 4-byte"},
        MalformedCase{"UnknownSpace", CpcEntry::desiredPerf,
                      withSpace(0x03, memoryRegister(0x3000, 32)),
                      "unsupported address space 0x3"},
        MalformedCase{"AccessSizeTooLarge", CpcEntry::maxPerf,
                      memoryRegister(0x3000, 32, 0, 5), "access size 5"},
        MalformedCase{"UndefinedAccessOddWidth", CpcEntry::desiredPerf,
                      memoryRegister(0x3000, 12, 0, 0),
                      "access size undefined"},
        MalformedCase{"ZeroWidth", CpcEntry::desiredPerf,
                      memoryRegister(0x3000, 0, 0, 3), "bit width 0"},
        MalformedCase{"SystemIoQword", CpcEntry::desiredPerf,
                      withSpace(1, memoryRegister(0x80, 32, 0, 4)),
                      "SystemIO access size 4"},
        MalformedCase{"SystemIoAbove16Bits", CpcEntry::desiredPerf,
                      withSpace(1, memoryRegister(0x10000, 32, 0, 3)),
                      "exceeds 16 bits"},
        MalformedCase{"PccTooWide", CpcEntry::desiredPerf,
                      sim::pccRegister(1, 0x14, 0), "PCC register bit width"}),
    [](const auto& param) { return std::string(param.param.name); });

TEST(AccessPlanTest, MismatchedPccIdsAreRefused)
{
    CpcSource s = plainCpu(4);
    setReg(s, CpcEntry::desiredPerf, sim::pccRegister(2, 0x14));
    setReg(s, CpcEntry::perfLimited, sim::pccRegister(3, 0x3C));
    const AccessPlan plan = planOfSources({s});
    ASSERT_EQ(plan.diagnostics().size(), 1U);
    EXPECT_THAT(plan.diagnostics()[0].message,
                AllOf(HasSubstr("CPU 4"), HasSubstr("PerformanceLimited"),
                      HasSubstr("mismatched PCC ids")));
    EXPECT_FALSE(plan.cpu(4).usable);
}

TEST(AccessPlanTest, DesiredThatCannotBeWrittenRefusesTheCpu)
{
    CpcSource asInteger = plainCpu(0);
    sim::setEntry(asInteger, CpcEntry::desiredPerf, CpcValue::ofInteger(5));
    CpcSource asNull = plainCpu(1);
    CpcSource asFfh = plainCpu(2);
    setReg(asFfh, CpcEntry::desiredPerf, sim::ffhRegister(3));
    const AccessPlan plan = planOfSources({asInteger, asNull, asFfh});
    ASSERT_EQ(plan.diagnostics().size(), 3U);
    EXPECT_THAT(plan.diagnostics()[0].message, HasSubstr("is an Integer"));
    EXPECT_THAT(plan.diagnostics()[1].message, HasSubstr("NULL register"));
    EXPECT_THAT(plan.diagnostics()[2].message,
                HasSubstr("Functional Fixed Hardware"));
}

TEST(AccessPlanTest, ControlsSplitBetweenPccAndMemoryAreRefused)
{
    CpcSource s = plainCpu(0);
    setReg(s, CpcEntry::desiredPerf, sim::pccRegister(2, 0x14));
    setReg(s, CpcEntry::minPerf, memoryRegister(0x3000, 32));
    setReg(s, CpcEntry::maxPerf, sim::pccRegister(2, 0x18));
    const AccessPlan plan = planOfSources({s});
    ASSERT_EQ(plan.diagnostics().size(), 1U);
    EXPECT_THAT(plan.diagnostics()[0].message,
                AllOf(HasSubstr("MinimumPerformance"),
                      HasSubstr("outside PCC while DesiredPerformance is in "
                                "PCC")));
}

TEST(AccessPlanTest, DifferentFieldsOnTheSameBitsAreRefusedOnBothCpus)
{
    CpcSource a = plainCpu(0);
    CpcSource b = plainCpu(1);
    CpcSource c = plainCpu(2);
    setReg(a, CpcEntry::desiredPerf, memoryRegister(0x1000, 16, 0));
    setReg(b, CpcEntry::desiredPerf, memoryRegister(0x1000, 16, 8));
    setReg(c, CpcEntry::desiredPerf, memoryRegister(0x1000, 8, 24));
    const AccessPlan plan = planOfSources({a, b, c});
    EXPECT_FALSE(plan.cpu(0).usable);
    EXPECT_FALSE(plan.cpu(1).usable);
    EXPECT_TRUE(plan.cpu(2).usable);
    ASSERT_EQ(plan.diagnostics().size(), 2U);
    EXPECT_THAT(plan.diagnostics()[0].message,
                AllOf(HasSubstr("CPU 0"), HasSubstr("overlaps"),
                      HasSubstr("DesiredPerformance of CPU 1")));
    // The surviving field still shares the unit with the others' bits.
    EXPECT_EQ(plan.cpu(2).reg(CpcEntry::desiredPerf).access,
              AccessClass::sharedUnit);
}

TEST(AccessPlanTest, TwoEntriesOfOneCpuOnTheSameRegisterAreRefused)
{
    CpcSource a = plainCpu(0);
    setReg(a, CpcEntry::desiredPerf, memoryRegister(0x1000, 32));
    setReg(a, CpcEntry::maxPerf, memoryRegister(0x1000, 32));
    CpcSource b = plainCpu(1);
    setReg(b, CpcEntry::desiredPerf, memoryRegister(0x2000, 32));
    CpcSource c = plainCpu(2);
    setReg(c, CpcEntry::desiredPerf, memoryRegister(0x3000, 32));
    setReg(b, CpcEntry::minPerf, memoryRegister(0x3000, 32)); // c's Desired
    const AccessPlan plan = planOfSources({a, b, c});
    EXPECT_FALSE(plan.cpu(0).usable);
    EXPECT_FALSE(plan.cpu(1).usable);
    EXPECT_FALSE(plan.cpu(2).usable); // which of 1 and 2 is wrong is unknown
    std::string all;
    for (const Diagnostic& d : plan.diagnostics())
    {
        all += d.message + "\n";
    }
    EXPECT_THAT(all, AllOf(HasSubstr("CPU 0 (_UID 0x100, \\_SB.C0): "
                                     "MaximumPerformance: register at 0x1000 "
                                     "is the same field as DesiredPerformance "
                                     "of the same CPU"),
                           HasSubstr("CPU 1 (_UID 0x101, \\_SB.C1): "
                                     "MinimumPerformance"),
                           HasSubstr("CPU 2 (_UID 0x102, \\_SB.C2): "
                                     "DesiredPerformance")));
}

TEST(AccessPlanTest, IntegerWhereOnlyARegisterIsAllowedIsAWarning)
{
    CpcSource s = plainCpu(0);
    setReg(s, CpcEntry::desiredPerf, memoryRegister(0x1000, 32));
    sim::setEntry(s, CpcEntry::minPerf, CpcValue::ofInteger(10));
    sim::setEntry(s, CpcEntry::counterWraparoundTime, CpcValue::ofInteger(0));
    const AccessPlan plan = planOfSources({s});
    EXPECT_TRUE(plan.cpu(0).usable);
    ASSERT_EQ(plan.diagnostics().size(), 1U); // CtrWrap may be an Integer
    EXPECT_EQ(plan.diagnostics()[0].severity, Severity::warning);
    EXPECT_THAT(plan.diagnostics()[0].message,
                AllOf(HasSubstr("MinimumPerformance"),
                      HasSubstr("only a register")));
}

TEST(AccessPlanTest, AliasGroupsAreTheCpusSharingEveryRegisterAskedAbout)
{
    const AccessPlan orion = planOf("orion-o6");
    EXPECT_EQ(orion.cpu(2).reg(CpcEntry::desiredPerf).aliasOf, 1U);
    EXPECT_EQ(orion.cpu(11).reg(CpcEntry::desiredPerf).aliasOf, 0U);
    EXPECT_EQ(orion.cpu(0).reg(CpcEntry::desiredPerf).aliasOf, 0U);
    const std::array desired{CpcEntry::desiredPerf};
    const AliasGroups g(orion, desired);
    ASSERT_EQ(g.cpuCount(), 12U);
    ASSERT_EQ(g.groups(), 5U);
    EXPECT_THAT(g.members(g.groupOf(3)), ElementsAre(1, 2, 3, 4));
    EXPECT_THAT(g.members(g.groupOf(11)), ElementsAre(0, 11));
    EXPECT_THAT(g.members(g.groupOf(6)), ElementsAre(5, 6));
    // Orion has no Minimum or Maximum: asking about them splits nothing.
    const std::array controls{CpcEntry::desiredPerf, CpcEntry::minPerf,
                              CpcEntry::maxPerf};
    EXPECT_EQ(AliasGroups(orion, controls).groups(), 5U);
    EXPECT_EQ(AliasGroups(planOf("rd-n2"), controls).groups(), 16U);
    EXPECT_EQ(AliasGroups(planOf("packed"), controls).groups(), 8U);
}

TEST(AccessPlanTest, AliasGroupsSplitWhereAnyRegisterDiffers)
{
    // CPUs 0 and 1 share Desired but not Minimum; CPU 3 leaves a hole at 2.
    std::vector<CpcSource> cpus;
    for (const unsigned cpu : {0U, 1U, 3U})
    {
        CpcSource s = plainCpu(cpu);
        setReg(s, CpcEntry::desiredPerf, memoryRegister(0x1000, 32));
        setReg(s, CpcEntry::minPerf, memoryRegister(0x2000 + 4 * cpu, 32));
        cpus.push_back(std::move(s));
    }
    const AccessPlan plan = planOfSources(std::move(cpus));
    const std::array desired{CpcEntry::desiredPerf};
    const AliasGroups d(plan, desired);
    ASSERT_EQ(d.cpuCount(), 4U);
    EXPECT_EQ(d.groups(), 2U); // {0, 1, 3} and the hole
    EXPECT_THAT(d.members(d.groupOf(3)), ElementsAre(0, 1, 3));
    EXPECT_THAT(d.members(d.groupOf(2)), ElementsAre(2));
    const std::array withMin{CpcEntry::desiredPerf, CpcEntry::minPerf};
    const AliasGroups m(plan, withMin);
    EXPECT_EQ(m.groups(), 4U);
    EXPECT_NE(m.groupOf(0), m.groupOf(1));
    EXPECT_EQ(AliasGroups().groups(), 0U);
}

TEST(AccessPlanTest, ClassNamesAreStable)
{
    EXPECT_EQ(className(AccessClass::fullWidthStandalone),
              "full-width standalone");
    EXPECT_EQ(className(AccessClass::fullWidthAliased), "full-width alias");
    EXPECT_EQ(className(AccessClass::refused), "refused");
}

} // namespace
} // namespace cppc
