// The simulated machine's register side: the register file, PCC subspaces
// and the named layouts.
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
        EXPECT_THAT(e.what(), HasSubstr("orion-o6, rd-n2, packed, altra"));
    }
}

} // namespace
} // namespace cppc::sim
