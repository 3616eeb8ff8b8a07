// SPDX-License-Identifier: Apache-2.0
// The simulated machine's register side: the register file, PCC subspaces
// and the named layouts.
#include "lib/access_plan.hpp"
#include "lib/error.hpp"
#include "lib/sim/layouts.hpp"
#include "lib/sim/pcc_subspace.hpp"
#include "lib/sim/register_file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::sim
{
namespace
{

using ::testing::HasSubstr;

TEST(RegisterFileTest, MapsNaturallyAlignedUnitsOnly)
{
    RegisterFile file;
    EXPECT_NE(file.map(AddressSpace::systemMemory, 0x1000, 4), nullptr);
    EXPECT_THROW(file.map(AddressSpace::systemMemory, 0x1002, 4),
                 std::invalid_argument);
    EXPECT_THROW(file.map(AddressSpace::systemMemory, 0x1000, 0),
                 std::invalid_argument);
    EXPECT_THROW(file.map(AddressSpace::pcc, 0x1000, 4), std::invalid_argument);
}

TEST(RegisterFileTest, SpacesAreSeparateAndLittleEndian)
{
    RegisterFile file;
    file.poke(AddressSpace::systemMemory, 0x80, 4, 0x11223344);
    EXPECT_EQ(file.peek(AddressSpace::systemIo, 0x80, 4), 0U);
    EXPECT_EQ(file.peek(AddressSpace::systemMemory, 0x80, 1), 0x44U);
    EXPECT_EQ(file.peek(AddressSpace::systemMemory, 0x82, 2), 0x1122U);
    // Peeking never counts.
    EXPECT_EQ(file.totalCounts(), AccessCounts{});
}

TEST(RegisterFileTest, CountsAreKeptPerUnitAndPerRegister)
{
    RegisterFile file;
    CountingIo io(file);
    const RegisterDesc reg = memoryRegister(0x40, 32);
    const auto ref = io.bind(reg, 4, 3, CpcEntry::desiredPerf);
    io.store<std::uint32_t>(ref, 7);
    (void)io.load(ref, 4);
    std::mutex m;
    io.lock(m, ref);
    io.unlock(m, ref);
    EXPECT_EQ(file.unitCounts(AddressSpace::systemMemory, 0x40),
              (AccessCounts{1, 1, 1}));
    EXPECT_EQ(file.registerCounts(3, CpcEntry::desiredPerf),
              (AccessCounts{1, 1, 1}));
    EXPECT_EQ(file.registerCounts(3, CpcEntry::minPerf), AccessCounts{});
    file.resetCounts();
    EXPECT_EQ(file.totalCounts(), AccessCounts{});
}

TEST(PccSubspacesTest, RejectsRegistersOutsideThePayload)
{
    PccSubspaces pcc;
    pcc.add(2, 0x40);
    const std::array<PccWrite, 1> inside{{{{0x3C, 0, 32}, 5}}};
    const std::array<PccWrite, 1> outside{{{{0x3C, 0, 64}, 5}}};
    EXPECT_FALSE(pcc.write(2, inside));
    EXPECT_EQ(pcc.write(2, outside), Errc::pccFailed);
    EXPECT_EQ(pcc.write(3, inside), Errc::pccUnavailable);
    EXPECT_EQ(pcc.peek(2, {0x3C, 0, 32}), 5U);
    EXPECT_THROW(pcc.add(2, 8), std::invalid_argument);
}

TEST(LayoutsTest, EveryNamedLayoutBuilds)
{
    for (std::string_view name : layoutNames())
    {
        const Layout l = makeLayout(name);
        EXPECT_EQ(l.name, name);
        EXPECT_FALSE(l.cpus.empty());
    }
}

TEST(LayoutsTest, OrionMatchesTheFirmware)
{
    const Layout l = makeLayout("orion-o6");
    ASSERT_EQ(l.cpus.size(), 12U);
    const std::array<std::uint64_t, 12> desired = {
        0x659009C, 0x6590094, 0x6590094, 0x6590094, 0x6590094, 0x65900A0,
        0x65900A0, 0x65900A4, 0x65900A4, 0x6590098, 0x6590098, 0x659009C};
    for (unsigned cpu = 0; cpu < 12; ++cpu)
    {
        EXPECT_EQ(l.cpus[cpu].entry(CpcEntry::desiredPerf).reg.address,
                  desired[cpu]);
        EXPECT_EQ(l.cpus[cpu].psd()->coordination, 0xFD);
    }
    EXPECT_EQ(l.cpus[0].entry(CpcEntry::highestPerf).integer, 0x2000U);
    EXPECT_EQ(l.cpus[0].entry(CpcEntry::lowestNonlinearPerf).integer, 0xA3DU);
    EXPECT_EQ(l.cpus[11].path(), "\\_SB.CPUB");
}

TEST(LayoutsTest, UnknownNameListsTheKnownOnes)
{
    try
    {
        makeLayout("cray-1");
        FAIL();
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_THAT(e.what(), HasSubstr("'cray-1'"));
        EXPECT_THAT(e.what(),
                    HasSubstr("orion-o6, rd-n2, packed, altra, neoverse"));
    }
}

TEST(LayoutsTest, TheOneArgumentFormIsTheLayoutsOwnCount)
{
    EXPECT_EQ(makeLayout("rd-n2").cpus.size(), 16U);
    EXPECT_EQ(makeLayout("packed").cpus.size(), 8U);
    EXPECT_EQ(makeLayout("orion-o6", 0).cpus.size(), 12U);
    EXPECT_EQ(makeLayout("altra", 0).cpus.size(), 32U);
    EXPECT_EQ(makeLayout("rd-n2", 0).cpus.size(), 16U);
}

TEST(LayoutsTest, SyntheticLayoutsScaleWithTheSamePatternPerCpu)
{
    const Layout small = makeLayout("rd-n2");
    const Layout big = makeLayout("rd-n2", maxLayoutCpus);
    ASSERT_EQ(big.cpus.size(), maxLayoutCpus);
    // The CPUs the layout has anyway are as they were.
    for (unsigned cpu = 0; cpu < small.cpus.size(); ++cpu)
    {
        EXPECT_EQ(big.cpus[cpu].entry(CpcEntry::desiredPerf).reg,
                  small.cpus[cpu].entry(CpcEntry::desiredPerf).reg);
    }
    const CpcDescriptor& last = big.cpus.back();
    EXPECT_EQ(last.cpu(), maxLayoutCpus - 1);
    EXPECT_EQ(last.entry(CpcEntry::desiredPerf).reg.address,
              0x2A9C0000U + (maxLayoutCpus - 1) * 0x1000U);
    EXPECT_EQ(last.entry(CpcEntry::perfLimited).reg.address,
              0x2A9C0000U + (maxLayoutCpus - 1) * 0x1000U + 4);
    EXPECT_EQ(last.psd()->domain, maxLayoutCpus - 1);
    EXPECT_EQ(last.psd()->numProcessors, 1U);
    EXPECT_EQ(last.entry(CpcEntry::highestPerf).integer, 3300U);

    const Layout one = makeLayout("packed", 1);
    ASSERT_EQ(one.cpus.size(), 1U);
    Layout many = makeLayout("packed", 100);
    ASSERT_EQ(many.cpus.size(), 100U);
    EXPECT_EQ(many.cpus[99].entry(CpcEntry::maxPerf).reg,
              memoryRegister(0x50000000 + 99 * 0x10, 8, 16));
    // Every CPU's Desired is its own: the plan keeps one unit lock per CPU.
    EXPECT_EQ(AccessPlan::build(std::move(many.cpus)).locks().size(), 100U);
}

TEST(LayoutsTest, RealFirmwareLayoutsKeepTheirCount)
{
    EXPECT_EQ(makeLayout("orion-o6", 12).cpus.size(), 12U);
    for (const auto& [name, count] :
         {std::pair<std::string_view, unsigned>{"orion-o6", 16},
          {"altra", 64},
          {"altra", 1}})
    {
        try
        {
            (void)makeLayout(name, count);
            ADD_FAILURE() << name << " " << count;
        }
        catch (const std::invalid_argument& e)
        {
            EXPECT_THAT(e.what(), HasSubstr("'" + std::string(name) + "'"));
            EXPECT_THAT(e.what(), HasSubstr(std::to_string(count)));
            EXPECT_THAT(e.what(), HasSubstr("scale: rd-n2, packed, neoverse"));
        }
    }
    EXPECT_THROW((void)makeLayout("rd-n2", maxLayoutCpus + 1),
                 std::invalid_argument);
    EXPECT_THROW((void)makeLayout("cray-1", 4), std::invalid_argument);
}

TEST(LayoutsTest, TheNameTableSaysWhichScale)
{
    EXPECT_THAT(layoutNames(),
                ::testing::ElementsAre("orion-o6", "rd-n2", "packed", "altra",
                                       "neoverse"));
    EXPECT_TRUE(layoutScales("rd-n2"));
    EXPECT_TRUE(layoutScales("packed"));
    EXPECT_FALSE(layoutScales("orion-o6"));
    EXPECT_FALSE(layoutScales("altra"));
    EXPECT_FALSE(layoutScales("cray-1"));
}

TEST(LayoutsTest, AltraPresetsItsCapabilitiesInPcc)
{
    const Layout l = makeLayout("altra");
    // The four performance levels, GuaranteedPerformance and the two
    // frequencies of each of the 32 CPUs.
    EXPECT_EQ(l.pccPresets.size(), 32U * 7);
    PccSubspaces pcc;
    for (const PccSubspaceSpec& s : l.pccSubspaces)
    {
        pcc.add(s.id, s.payloadBytes);
    }
    for (const PccPreset& p : l.pccPresets)
    {
        const PccWrite w{p.reg, p.value};
        ASSERT_FALSE(pcc.write(p.subspace, {&w, 1}));
    }
    // CPU 7's HighestPerformance and LowestPerformance registers.
    const RegisterDesc highest = l.cpus[7].entry(CpcEntry::highestPerf).reg;
    const RegisterDesc lowest = l.cpus[7].entry(CpcEntry::lowestPerf).reg;
    EXPECT_EQ(pcc.peek(2, {highest.address, 0, 32}), 3000U);
    EXPECT_EQ(pcc.peek(2, {lowest.address, 0, 32}), 1000U);
    // Its frequencies in MHz, as Altra's are the levels.
    const RegisterDesc lowestFreq = l.cpus[7].entry(CpcEntry::lowestFreq).reg;
    const RegisterDesc nominalFreq = l.cpus[7].entry(CpcEntry::nominalFreq).reg;
    EXPECT_EQ(pcc.peek(2, {lowestFreq.address, 0, 32}), 1000U);
    EXPECT_EQ(pcc.peek(2, {nominalFreq.address, 0, 32}), 3000U);
    EXPECT_TRUE(makeLayout("rd-n2").pccPresets.empty());
}

} // namespace
} // namespace cppc::sim
