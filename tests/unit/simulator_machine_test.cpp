// SPDX-License-Identifier: Apache-2.0
// The simulator backend: its load model, its register writes through the
// access plan (once per aliased register per batch), the controls it
// offers, and the layouts' start-up errors.
#include "daemon/machines/simulator_machine.hpp"
#include "lib/error.hpp"
#include "machine_test_support.hpp"
#include "pcc_test_support.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using cppc::test::TempTree;
using policies::Coordination;
using test::desiredOf;
using test::errorOf;
using test::sim;
using test::writeProcStat;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(SimulatorMachineTest, TopologyAndCapabilitiesComeFromTheLayout)
{
    const TempTree root;
    const SimulatorMachine m(sim("rd-n2", 4), root.path());
    EXPECT_EQ(m.name(), "simulator:rd-n2");
    const auto& t = m.topology();
    ASSERT_THAT(t.cpus, SizeIs(4));
    EXPECT_EQ(t.cpus[3].highest, 3300U);
    EXPECT_EQ(t.cpus[3].nominal, 2600U);
    EXPECT_EQ(t.cpus[3].lowestNonlinear, 1000U);
    EXPECT_EQ(t.cpus[3].lowest, 800U);
    // LowestFrequency and NominalFrequency, Integers in MHz.
    EXPECT_EQ(t.cpus[3].lowestKhz, 1'000'000U);
    EXPECT_EQ(t.cpus[3].nominalKhz, 3'000'000U);
    ASSERT_THAT(t.domains, SizeIs(4)); // one SW_ANY domain per CPU
    EXPECT_THAT(t.domains[2].cpus, ElementsAre(2));
    EXPECT_EQ(m.psdDomain(2), 2U);
    EXPECT_EQ(m.psdDomain(4), std::nullopt);
    EXPECT_EQ(m.cpuOfHostCpu(3), 3U);
    EXPECT_EQ(m.cpuOfHostCpu(4), std::nullopt);
    EXPECT_EQ(m.hostCpus(), 0U); // no /proc/stat
    EXPECT_EQ(m.counts(), SimulatorCounts{});
}

TEST(SimulatorMachineTest, UtilFollowsHostLoadCappedByDeliveredPerformance)
{
    TempTree root;
    writeProcStat(root, {{0, 0}, {0, 0}});
    SimulatorMachine m(sim("rd-n2", 4), root.path());
    ASSERT_EQ(m.hostCpus(), 2U);
    std::array<CpuSample, 4> out{};
    ASSERT_FALSE(m.sample(1000, out));
    for (const CpuSample& s : out)
    {
        EXPECT_EQ(s.util, 0);
        EXPECT_EQ(s.deliveredPerf, 0U); // the first call reports zeros
    }

    // Host CPU 0 half busy, host CPU 1 busy; simulated CPU n follows host
    // CPU n mod 2. Before any request the CPUs run at nominal (2600 of
    // 3300): a busy CPU can show at most 1024 x 2600 / 3300 = 806.
    writeProcStat(root, {{50, 50}, {100, 0}});
    ASSERT_FALSE(m.sample(2000, out));
    EXPECT_EQ(out[0].util, 512);
    EXPECT_EQ(out[1].util, 806);
    EXPECT_EQ(out[2].util, 512);
    EXPECT_EQ(out[3].util, 806);
    EXPECT_EQ(out[1].deliveredPerf, 2600U);

    // Highest performance on CPU 1 lets it show all its demand; the lowest
    // level (requests below it deliver it) caps CPU 2 at 1024 x 800 / 3300.
    ASSERT_FALSE(
        m.apply(std::array{desiredOf(m, 1, 3300), desiredOf(m, 2, 1)}));
    EXPECT_EQ(m.registerValue(1), 3300U);
    EXPECT_EQ(m.registerValue(2), 1U); // the register holds the request
    writeProcStat(root, {{100, 100}, {200, 0}});
    ASSERT_FALSE(m.sample(3000, out));
    EXPECT_EQ(out[1].util, 1024);
    EXPECT_EQ(out[1].deliveredPerf, 3300U);
    EXPECT_EQ(out[2].util, 248);
    EXPECT_EQ(out[2].deliveredPerf, 800U);
    EXPECT_EQ(out[0].util, 512);

    std::array<CpuSample, 3> wrong{};
    EXPECT_EQ(m.sample(4000, wrong), std::errc::invalid_argument);
}

TEST(SimulatorMachineTest, ApplyWritesTheDesiredRegisterAndCountsIt)
{
    const TempTree root;
    SimulatorMachine m(sim("rd-n2"), root.path());
    ASSERT_EQ(m.topology().cpus.size(), 16U);
    EXPECT_EQ(m.registerValue(7), 0U);
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 7, 1234)}));
    EXPECT_EQ(m.registerValue(7), 1234U);
    // One full-width store, nothing read, nothing locked.
    EXPECT_EQ(m.counts(), (SimulatorCounts{0, 1, 0, 0, 0}));

    // Errors: the first is returned, the other requests still go out.
    EXPECT_EQ(m.apply(std::array{desiredOf(m, 16, 1), desiredOf(m, 3, 900)}),
              cppc::Errc::noSuchCpu);
    EXPECT_EQ(m.registerValue(3), 900U);
    EXPECT_THROW((void)m.registerValue(16), std::out_of_range);

    // After restore() nothing more is written.
    EXPECT_THAT(m.restore().entries(), IsEmpty());
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 7, 2000)}));
    EXPECT_EQ(m.registerValue(7), 1234U);
}

TEST(SimulatorMachineTest, PackedFieldsGoThroughTheirLockedUnit)
{
    const TempTree root;
    SimulatorMachine m(sim("packed", 3), root.path());
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 1, 200)}));
    EXPECT_EQ(m.registerValue(1), 200U);
    EXPECT_EQ(m.counts(), (SimulatorCounts{1, 1, 1, 0, 0}));
    EXPECT_EQ(m.topology().cpus[0].highest, 255U);
}

TEST(SimulatorMachineTest, TakesTheWholeRequestAndWritesMinAndMaxRegisters)
{
    const TempTree root;
    const Controls all{Control::desired, Control::min, Control::max,
                       Control::epp};
    SimulatorMachine packed(sim("packed", 3), root.path());
    EXPECT_EQ(packed.controls(), all);
    EXPECT_FALSE(packed.controls().has(Control::autonomous));
    const CppcRequest r{1, 50, 100, 200, 7, false, {}};
    ASSERT_FALSE(packed.apply(std::array{r}));
    EXPECT_EQ(packed.registerValue(1, cppc::CpcEntry::desiredPerf), 100U);
    EXPECT_EQ(packed.registerValue(1, cppc::CpcEntry::minPerf), 50U);
    EXPECT_EQ(packed.registerValue(1, cppc::CpcEntry::maxPerf), 200U);
    EXPECT_EQ(packed.counts(), (SimulatorCounts{1, 1, 1, 0, 0})); // one unit
    EXPECT_EQ(packed.lastRequest(1), r);
    EXPECT_EQ(packed.lastRequest(0), CppcRequest{});

    // A layout without Minimum and Maximum registers keeps them in the
    // model only.
    SimulatorMachine rd(sim("rd-n2", 2), root.path());
    EXPECT_EQ(rd.controls(), all);
    const CppcRequest q{1, 900, 1000, 3000, 3, false, {}};
    ASSERT_FALSE(rd.apply(std::array{q}));
    EXPECT_EQ(rd.registerValue(1), 1000U);
    EXPECT_EQ(rd.lastRequest(1), q);
    EXPECT_THROW((void)rd.registerValue(1, cppc::CpcEntry::minPerf),
                 std::out_of_range);
    EXPECT_EQ(rd.counts().registerWrites, 1U);
}

TEST(SimulatorMachineTest, AnUnorderedRequestIsRefusedAndNothingWritten)
{
    const TempTree root;
    SimulatorMachine m(sim("packed", 2), root.path());
    EXPECT_EQ(m.apply(std::array{CppcRequest{1, 120, 100, 200, {}, false, {}},
                                 CppcRequest{0, 50, 210, 200, {}, false, {}}}),
              cppc::Errc::valueOutOfRange);
    EXPECT_EQ(m.counts(), SimulatorCounts{});
    EXPECT_EQ(m.lastRequest(1), CppcRequest{});
}

TEST(SimulatorMachineTest, AnAliasedDesiredWordIsWrittenOncePerBatch)
{
    const TempTree root;
    SimulatorMachine m(sim("orion-o6"), root.path());
    const auto& t = m.topology();
    ASSERT_THAT(t.cpus, SizeIs(12));
    ASSERT_THAT(t.domains, SizeIs(5));
    for (const auto& d : t.domains)
    {
        EXPECT_EQ(d.coordination, Coordination::shared);
    }
    EXPECT_THAT(t.domains[0].cpus, ElementsAre(0, 11)); // domain 4
    EXPECT_THAT(t.domains[1].cpus, ElementsAre(1, 2, 3, 4));
    EXPECT_EQ(m.psdDomain(11), 4U);
    EXPECT_EQ(t.cpus[1].highest, 0x911U);

    // Domain 2 (CPUs 1-4) shares one Desired word: one store for the four
    // requests the daemon makes for it.
    ASSERT_FALSE(
        m.apply(std::array{desiredOf(m, 1, 0x800), desiredOf(m, 2, 0x800),
                           desiredOf(m, 3, 0x800), desiredOf(m, 4, 0x800)}));
    EXPECT_EQ(m.counts().registerWrites, 1U);
    for (std::uint32_t cpu = 1; cpu <= 4; ++cpu)
    {
        EXPECT_EQ(m.registerValue(cpu), 0x800U);
    }
    // The next batch writes again.
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 2, 0x800)}));
    EXPECT_EQ(m.counts().registerWrites, 2U);
}

TEST(SimulatorMachineTest, AltraReadsItsCapabilitiesAndWritesThroughPcc)
{
    const TempTree root;
    SimulatorMachine m(sim("altra"), root.path());
    ASSERT_THAT(m.topology().cpus, SizeIs(32));
    EXPECT_EQ(m.topology().cpus[5].highest, 3000U);
    EXPECT_EQ(m.topology().cpus[5].lowest, 1000U);
    // The frequency registers, in PCC too.
    EXPECT_EQ(m.topology().cpus[5].lowestKhz, 1'000'000U);
    EXPECT_EQ(m.topology().cpus[5].nominalKhz, 3'000'000U);
    EXPECT_EQ(m.counts(), SimulatorCounts{}); // reading them is set-up
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 5, 1500)}));
    EXPECT_EQ(m.registerValue(5), 1500U);
    const SimulatorCounts c = m.counts();
    EXPECT_EQ(c.pccCommands, 1U);
    EXPECT_EQ(c.pccDoorbells, 1U);
    EXPECT_EQ(c.registerWrites, 1U);
}

TEST(SimulatorMachineTest, ScalesToFourThousandCpusWithoutAllocatingPerTick)
{
    TempTree root;
    writeProcStat(root, {{0, 0}, {0, 0}, {0, 0}});
    SimulatorMachine m(sim("rd-n2", 4096), root.path());
    ASSERT_THAT(m.topology().cpus, SizeIs(4096));
    std::vector<CpuSample> out(4096);
    std::vector<CppcRequest> requests;
    for (std::uint32_t cpu = 0; cpu < 4096; ++cpu)
    {
        requests.push_back(desiredOf(m, cpu, 1000 + cpu % 2000));
    }
    ASSERT_FALSE(m.sample(0, out));
    ASSERT_FALSE(m.apply(requests));
    writeProcStat(root, {{10, 0}, {5, 5}, {0, 10}});

    const std::size_t before = allocations;
    const std::error_code s = m.sample(1000, out);
    const std::error_code a = m.apply(requests);
    const std::size_t after = allocations;
    EXPECT_FALSE(s);
    EXPECT_FALSE(a);
    EXPECT_EQ(after, before);
    EXPECT_EQ(m.counts().registerWrites, 2U * 4096);
    EXPECT_EQ(m.registerValue(4095), 1000U + 4095 % 2000);
    // Simulated CPU 4095 follows host CPU 0 (4095 mod 3), which is busy, and
    // can show no more than its performance allows.
    EXPECT_EQ(out[4095].util, 1024 * (1000 + 4095 % 2000) / 3300);
}

TEST(SimulatorMachineTest, FixedLayoutsRefuseOtherCounts)
{
    const TempTree root;
    EXPECT_THAT(
        errorOf([&] { SimulatorMachine m(sim("altra", 64), root.path()); }),
        AllOf(HasSubstr("'altra'"), HasSubstr("64"),
              HasSubstr("rd-n2, packed, neoverse")));
    EXPECT_THAT(
        errorOf([&] { SimulatorMachine m(sim("cray-1"), root.path()); }),
        HasSubstr("'cray-1'"));
}

// An autonomous request: the platform chooses within [min, max].
CppcRequest autonomousOf(std::uint32_t cpu, std::uint32_t min,
                         std::uint32_t max, std::uint8_t epp,
                         std::uint32_t windowUs)
{
    return {cpu, min, min, max, epp, true, windowUs};
}

TEST(SimulatorMachineTest, AutonomousDeliveryFollowsLoadWithinBoundsNotDesired)
{
    TempTree root;
    writeProcStat(root, {{0, 0}, {0, 0}});
    SimulatorMachine m(sim("neoverse", 2), root.path());
    std::array<CpuSample, 2> out{};
    ASSERT_FALSE(m.sample(0, out));
    // A 1 us window: the platform is where it aims at every sample.
    ASSERT_FALSE(m.apply(std::array{autonomousOf(0, 40, 255, 128, 1),
                                    autonomousOf(1, 40, 200, 128, 1)}));
    EXPECT_EQ(m.registerValue(0, cppc::CpcEntry::autonomousSelectionEnable),
              1U);
    EXPECT_EQ(m.registerValue(0, cppc::CpcEntry::energyPerfPreference), 128U);
    EXPECT_EQ(m.registerValue(0, cppc::CpcEntry::autonomousActivityWindow), 1U);
    // Host CPU 0 half busy, host CPU 1 busy. EPP 128: lowest nonlinear (60)
    // + 195 x load; CPU 1 is held at its Maximum. Desired (40) is ignored.
    writeProcStat(root, {{50, 50}, {100, 0}});
    ASSERT_FALSE(m.sample(1'000'000, out));
    EXPECT_EQ(out[0].deliveredPerf, 158U);
    EXPECT_EQ(out[1].deliveredPerf, 200U);
    EXPECT_EQ(out[0].perfLimited, 0U);

    // EPP moves it: 0 reaches highest at half load, 255 stays near lowest
    // nonlinear; a Minimum above that holds it up.
    ASSERT_FALSE(m.apply(std::array{autonomousOf(0, 40, 255, 0, 1),
                                    autonomousOf(1, 40, 255, 255, 1)}));
    writeProcStat(root, {{100, 100}, {200, 0}});
    ASSERT_FALSE(m.sample(2'000'000, out));
    EXPECT_EQ(out[0].deliveredPerf, 255U);
    EXPECT_EQ(out[1].deliveredPerf, 62U); // 60 + 195 x 1 x 1/128
    ASSERT_FALSE(m.apply(std::array{autonomousOf(1, 150, 255, 255, 1)}));
    writeProcStat(root, {{150, 150}, {300, 0}});
    ASSERT_FALSE(m.sample(3'000'000, out));
    EXPECT_EQ(out[1].deliveredPerf, 150U);

    // Autonomous selection off: Desired again, at once.
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 0, 90)}));
    EXPECT_EQ(m.registerValue(0, cppc::CpcEntry::autonomousSelectionEnable),
              0U);
    ASSERT_FALSE(m.sample(4'000'000, out));
    EXPECT_EQ(out[0].deliveredPerf, 90U);
}

TEST(SimulatorMachineTest, AutonomousPlatformReactsOverTheActivityWindow)
{
    TempTree root;
    writeProcStat(root, {{0, 0}});
    SimulatorMachine m(sim("neoverse", 1), root.path());
    std::array<CpuSample, 1> out{};
    ASSERT_FALSE(m.sample(0, out));
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 0, 60)}));
    ASSERT_FALSE(m.sample(1000, out));
    EXPECT_EQ(out[0].deliveredPerf, 60U);
    // Fully busy at EPP 0 aims at 255; a 100 ms window moves a tenth of
    // the way in 10 ms, and most of it in 500 ms.
    ASSERT_FALSE(m.apply(std::array{autonomousOf(0, 40, 255, 0, 100'000)}));
    writeProcStat(root, {{100, 0}});
    ASSERT_FALSE(m.sample(11'000, out));
    EXPECT_EQ(out[0].deliveredPerf, 80U); // 60 + (255 - 60) / 10
    writeProcStat(root, {{200, 0}});
    ASSERT_FALSE(m.sample(511'000, out));
    EXPECT_EQ(out[0].deliveredPerf, 255U);
}

TEST(SimulatorMachineTest, AutonomousControlsAreWrittenOnlyWhenTheyChange)
{
    const TempTree root;
    SimulatorMachine neoverse(sim("neoverse", 2), root.path());
    EXPECT_TRUE(neoverse.controls().has(Control::autonomous));
    EXPECT_TRUE(neoverse.controls().has(Control::activityWindow));
    EXPECT_TRUE(neoverse.readsPerfLimited());
    const CppcRequest r = autonomousOf(0, 50, 200, 64, 1234);
    ASSERT_FALSE(neoverse.apply(std::array{r}));
    // Desired's store, the bounds' read-modify-write, then EPP's, the
    // window's and autonomous selection's in their shared units.
    EXPECT_EQ(neoverse.counts().registerWrites, 5U);
    EXPECT_EQ(
        neoverse.registerValue(0, cppc::CpcEntry::autonomousActivityWindow),
        (1U << 7) | 123U); // 1230 us
    ASSERT_FALSE(neoverse.apply(std::array{r}));
    EXPECT_EQ(neoverse.counts().registerWrites, 7U); // Desired and bounds
    CppcRequest tooLong = r;
    tooLong.activityWindowUs = 2'000'000'000;
    EXPECT_EQ(neoverse.apply(std::array{tooLong}), cppc::Errc::valueOutOfRange);
    EXPECT_EQ(
        neoverse.registerValue(0, cppc::CpcEntry::autonomousActivityWindow),
        (1U << 7) | 123U);

    // Where the layout has no such registers they are not offered.
    SimulatorMachine rd(sim("rd-n2", 2), root.path());
    EXPECT_FALSE(rd.controls().has(Control::autonomous));
    EXPECT_FALSE(rd.controls().has(Control::activityWindow));
    EXPECT_TRUE(rd.readsPerfLimited());
    SimulatorMachine orion(sim("orion-o6"), root.path());
    EXPECT_FALSE(orion.controls().has(Control::autonomous));
    EXPECT_FALSE(orion.readsPerfLimited());
    ASSERT_FALSE(orion.apply(std::array{autonomousOf(0, 0x407, 0x2000, 0, 5)}));
    EXPECT_EQ(orion.counts().registerWrites, 1U); // Desired only
}

TEST(SimulatorMachineTest, PlatformLimitHoldsDeliveryAndSetsExcursionBits)
{
    TempTree root;
    writeProcStat(root, {{0, 0}, {0, 0}});
    SimulatorMachine m(sim("rd-n2", 2), root.path());
    std::array<CpuSample, 2> out{};
    ASSERT_FALSE(m.sample(0, out));
    m.setPlatformLimit(1, 2000);
    EXPECT_THROW(m.setPlatformLimit(2, 1), std::out_of_range);
    ASSERT_FALSE(
        m.apply(std::array{desiredOf(m, 0, 3300), desiredOf(m, 1, 3300)}));
    ASSERT_FALSE(m.sample(1000, out));
    EXPECT_EQ(out[0].deliveredPerf, 3300U);
    EXPECT_EQ(out[0].perfLimited, 0U);
    EXPECT_EQ(out[1].deliveredPerf, 2000U);
    EXPECT_EQ(out[1].perfLimited, desiredExcursion);
    // Read and cleared by the sample.
    EXPECT_EQ(m.registerValue(1, cppc::CpcEntry::perfLimited), 0U);
    // Below the cap nothing is limited; the bit is not set again.
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 1, 1500)}));
    ASSERT_FALSE(m.sample(2000, out));
    EXPECT_EQ(out[1].deliveredPerf, 1500U);
    EXPECT_EQ(out[1].perfLimited, 0U);
    m.setPlatformLimit(1, 0);
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 1, 3300)}));
    ASSERT_FALSE(m.sample(3000, out));
    EXPECT_EQ(out[1].deliveredPerf, 3300U);
    EXPECT_EQ(out[1].perfLimited, 0U);
}

TEST(SimulatorMachineTest, AutonomousModeUnderALimitReportsOnlyMinimumExcursion)
{
    TempTree root;
    writeProcStat(root, {{0, 0}});
    SimulatorConfig config;
    config.layout = "neoverse";
    config.cpus = 1;
    config.platformLimit = 100; // for every CPU, from the configuration
    SimulatorMachine m(config, root.path());
    std::array<CpuSample, 1> out{};
    ASSERT_FALSE(m.sample(0, out));
    ASSERT_FALSE(m.apply(std::array{autonomousOf(0, 150, 255, 0, 1)}));
    writeProcStat(root, {{100, 0}});
    ASSERT_FALSE(m.sample(1000, out));
    EXPECT_EQ(out[0].deliveredPerf, 100U);
    EXPECT_EQ(out[0].perfLimited, minimumExcursion);
    // Sticky until read: set at the platform's next look as long as it
    // lasts, cleared each time the sample reads it.
    ASSERT_FALSE(m.sample(2000, out));
    EXPECT_EQ(out[0].perfLimited, minimumExcursion);
    EXPECT_EQ(m.registerValue(0, cppc::CpcEntry::perfLimited), 0U);
}

TEST(SimulatorMachineTest, AltraPerfLimitedIsReadAndClearedThroughPcc)
{
    TempTree root;
    SimulatorMachine m(sim("altra"), root.path());
    EXPECT_TRUE(m.readsPerfLimited());
    EXPECT_FALSE(m.controls().has(Control::autonomous));
    std::vector<CpuSample> out(32);
    ASSERT_FALSE(m.sample(0, out));
    m.setPlatformLimit(5, 2000);
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 5, 3000)}));
    const SimulatorCounts before = m.counts();
    ASSERT_FALSE(m.sample(1000, out));
    EXPECT_EQ(out[5].deliveredPerf, 2000U);
    EXPECT_EQ(out[5].perfLimited, desiredExcursion);
    EXPECT_EQ(out[4].perfLimited, 0U);
    EXPECT_EQ(m.registerValue(5, cppc::CpcEntry::perfLimited), 0U);
    // A read command per CPU, and one write command to clear CPU 5's bit.
    EXPECT_EQ(m.counts().pccCommands - before.pccCommands, 33U);
}

} // namespace
} // namespace cppcgov::daemon
