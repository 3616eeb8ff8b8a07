// SPDX-License-Identifier: Apache-2.0
// Perf control on the simulated machine: every access the plan prescribes,
// and nothing else, asserted from the register file's counters.
#include "lib/perf_control.hpp"
#include "lib/sim/layouts.hpp"
#include "lib/sim/pcc_subspace.hpp"
#include "lib/sim/register_file.hpp"

#include <random>
#include <thread>

#include <gtest/gtest.h>

namespace cppc
{
namespace
{

using sim::AccessCounts;
using sim::CountingIo;
using sim::memoryRegister;
using SimPerfControl = BasicPerfControl<CountingIo>;
using SimConservative = BasicConservativePerfControl<CountingIo>;

constexpr auto mem = AddressSpace::systemMemory;

std::vector<CpcDescriptor> descriptors(std::vector<CpcSource> sources)
{
    std::vector<CpcDescriptor> cpus;
    cpus.reserve(sources.size());
    for (CpcSource& s : sources)
    {
        cpus.emplace_back(std::move(s));
    }
    return cpus;
}

CpcSource cpuWithDesired(unsigned cpu, const RegisterDesc& desired)
{
    CpcSource s = sim::cpcV3(cpu, 255, 200, 50, 10);
    sim::setEntry(s, CpcEntry::desiredPerf, CpcValue::ofRegister(desired));
    return s;
}

// A plan, its register file and both perf controls over it.
struct Machine
{
    explicit Machine(std::vector<CpcDescriptor> cpus) :
        plan(AccessPlan::build(std::move(cpus))), control(plan, io(), &pcc),
        conservative(plan, io(), &pcc)
    {
        file.resetCounts();
    }
    explicit Machine(std::string_view layout) :
        Machine(sim::makeLayout(layout).cpus)
    {}

    CountingIo io()
    {
        return CountingIo(file);
    }
    AccessCounts desiredCounts(unsigned cpu) const
    {
        return file.registerCounts(cpu, CpcEntry::desiredPerf);
    }

    sim::RegisterFile file;
    sim::PccSubspaces pcc;
    AccessPlan plan;
    SimPerfControl control;
    SimConservative conservative;
};

TEST(PerfControlTest, StandaloneFullWidthIsOneStoreNoReadNoLock)
{
    Machine m("rd-n2");
    ASSERT_EQ(m.control.setPerf(3, 2000), std::error_code{});
    EXPECT_EQ(m.desiredCounts(3), (AccessCounts{0, 1, 0}));
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{0, 1, 0}));
    EXPECT_EQ(m.file.peek(mem, 0x2A9C3000, 4), 2000U);
}

TEST(PerfControlTest, AliasedFullWidthIsOneStoreNoReadNoLock)
{
    Machine m("orion-o6");
    ASSERT_FALSE(m.control.setPerf(2, 0x800));
    ASSERT_FALSE(m.control.setPerf(3, 0x900));
    EXPECT_EQ(m.file.unitCounts(mem, 0x6590094), (AccessCounts{0, 2, 0}));
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{0, 2, 0}));
    // Both CPUs name the domain's word: the last request is the domain's.
    EXPECT_EQ(m.file.peek(mem, 0x6590094, 4), 0x900U);
}

TEST(PerfControlTest, PartialFieldInASharedUnitIsOneReadOneWriteOneLock)
{
    Machine m("packed");
    m.file.poke(mem, 0x50000010, 4, 0xAA'BB'CC'DD);
    ASSERT_FALSE(m.control.setPerf(1, 0x42));
    EXPECT_EQ(m.desiredCounts(1), (AccessCounts{1, 1, 1}));
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{1, 1, 1}));
    EXPECT_EQ(m.file.peek(mem, 0x50000010, 4), 0xAA'BB'CC'42U);
}

TEST(PerfControlTest, PartialFieldAloneInItsUnitIsReadModifyWriteWithoutLock)
{
    Machine m(descriptors({cpuWithDesired(0, memoryRegister(0x1000, 8, 8))}));
    m.file.poke(mem, 0x1000, 4, 0x1234'5678);
    ASSERT_FALSE(m.control.setPerf(0, 0x9A));
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{1, 1, 0}));
    EXPECT_EQ(m.file.peek(mem, 0x1000, 4), 0x1234'9A78U);
}

TEST(PerfControlTest, MergeNeverOrsInTheOldFieldValue)
{
    // The old field holds all ones; a smaller value must replace it, not
    // be ORed with it, and the neighbours must stay as they were.
    Machine m("packed");
    m.file.poke(mem, 0x50000000, 4, 0x00'C8'28'FF);
    ASSERT_FALSE(m.control.setPerf(0, 0x01));
    EXPECT_EQ(m.file.peek(mem, 0x50000000, 4), 0x00'C8'28'01U);
    ASSERT_FALSE(m.control.setPerf(0, 0x80, 0x10, 0xF0));
    EXPECT_EQ(m.file.peek(mem, 0x50000000, 4), 0x00'F0'10'80U);
    ASSERT_FALSE(m.conservative.setPerf(0, 0x02));
    EXPECT_EQ(m.file.peek(mem, 0x50000000, 4), 0x00'F0'10'02U);
}

TEST(PerfControlTest, DesiredMinAndMaxInOneUnitAreOneReadModifyWrite)
{
    Machine m("packed");
    ASSERT_TRUE(m.control.hasMinMax(2));
    ASSERT_FALSE(m.control.setPerf(2, 100, 50, 200));
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{1, 1, 1}));
    EXPECT_EQ(m.file.peek(mem, 0x50000020, 4), 0x00'C8'32'64U);
}

TEST(PerfControlTest, ReadRegisterTakesTheFieldOutOfItsUnit)
{
    Machine m("packed");
    ASSERT_FALSE(m.control.setPerf(2, 100, 50, 200));
    EXPECT_EQ(readRegister(m.plan, 2, CpcEntry::desiredPerf, m.file), 100U);
    EXPECT_EQ(readRegister(m.plan, 2, CpcEntry::minPerf, m.file), 50U);
    EXPECT_EQ(readRegister(m.plan, 2, CpcEntry::maxPerf, m.file), 200U);
    EXPECT_EQ(readRegister(m.plan, 2, CpcEntry::highestPerf, m.file),
              std::nullopt); // an Integer
    EXPECT_EQ(readRegister(m.plan, 99, CpcEntry::desiredPerf, m.file),
              std::nullopt);
    Machine altra("altra");
    EXPECT_EQ(readRegister(altra.plan, 0, CpcEntry::desiredPerf, altra.file),
              std::nullopt); // PCC
}

TEST(PerfControlTest, MinAndMaxAreSkippedWhereTheCpuHasNone)
{
    Machine m("rd-n2");
    EXPECT_FALSE(m.control.hasMinMax(0));
    ASSERT_FALSE(m.control.setPerf(0, 1500, 1000, 2000));
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{0, 1, 0}));
}

TEST(PerfControlTest, MinAndMaxInFfhAreNotWrittenByEitherPath)
{
    CpcSource s = cpuWithDesired(0, memoryRegister(0x1000, 32));
    sim::setEntry(s, CpcEntry::minPerf,
                  CpcValue::ofRegister(sim::ffhRegister(5)));
    sim::setEntry(s, CpcEntry::maxPerf,
                  CpcValue::ofRegister(sim::ffhRegister(6)));
    Machine m(descriptors({s}));
    EXPECT_FALSE(m.control.hasMinMax(0));
    ASSERT_FALSE(m.control.setPerf(0, 7, 1, 9));
    ASSERT_FALSE(m.conservative.setPerf(0, 8, 1, 9));
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{1, 2, 1}));
    EXPECT_EQ(m.file.peek(mem, 0x1000, 4), 8U);
}

TEST(PerfControlTest, OutOfRangeValuesWriteNothing)
{
    Machine m("packed");
    EXPECT_EQ(m.control.setPerf(0, 0x100), Errc::valueOutOfRange);
    EXPECT_EQ(m.control.setPerf(0, 10, 0x100, 20), Errc::valueOutOfRange);
    EXPECT_EQ(m.control.setPerf(0, 10, 5, 0x1FF), Errc::valueOutOfRange);
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{0, 0, 0}));
    Machine n("rd-n2");
    EXPECT_EQ(n.control.setPerf(0, 0x1'0000'0000), Errc::valueOutOfRange);
    EXPECT_EQ(n.file.totalCounts(), (AccessCounts{0, 0, 0}));
}

TEST(PerfControlTest, UnknownAndRefusedCpusAreErrors)
{
    CpcSource bad = cpuWithDesired(2, memoryRegister(0x1002, 32));
    Machine m(descriptors(
        {cpuWithDesired(0, memoryRegister(0x1000, 32)), std::move(bad)}));
    EXPECT_EQ(m.control.setPerf(1, 5), Errc::noSuchCpu);  // a hole
    EXPECT_EQ(m.control.setPerf(9, 5), Errc::noSuchCpu);  // past the end
    EXPECT_EQ(m.control.setPerf(2, 5), Errc::cpuRefused); // unaligned
    EXPECT_EQ(m.conservative.setPerf(2, 5), Errc::cpuRefused);
    EXPECT_EQ(m.conservative.setPerf(9, 5), Errc::noSuchCpu);
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{0, 0, 0}));
    EXPECT_EQ(std::error_code(Errc::cpuRefused).message(),
              "the CPU's _CPC was refused");
}

TEST(PerfControlTest, PccCpusGoThroughTheirSubspaceWithOneDoorbell)
{
    sim::Layout layout = sim::makeLayout("altra");
    Machine m(std::move(layout.cpus));
    m.pcc.add(2, 0x4000 - 8);
    ASSERT_FALSE(m.control.setPerf(5, 1234));
    EXPECT_EQ(m.pcc.counts(), (sim::PccCounts{1, 1, 1, 1}));
    EXPECT_EQ(m.pcc.peek(2, {5 * 0x80 + 0x14, 0, 32}), 1234U);
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{0, 0, 0}));
}

TEST(PerfControlTest, PccWithoutAChannelIsReportedNotIgnored)
{
    sim::Layout layout = sim::makeLayout("altra");
    sim::RegisterFile file;
    const AccessPlan plan = AccessPlan::build(std::move(layout.cpus));
    SimPerfControl control(plan, CountingIo(file), nullptr);
    EXPECT_EQ(control.setPerf(0, 10), Errc::pccUnavailable);
    SimConservative conservative(plan, CountingIo(file), nullptr);
    EXPECT_EQ(conservative.setPerf(0, 10), Errc::pccUnavailable);
}

TEST(PerfControlTest, CpuWithoutPccControlNeverTouchesPccState)
{
    // A mixed machine: CPU 0 in SystemMemory, CPU 1 in PCC subspace 2.
    CpcSource memCpu = cpuWithDesired(0, memoryRegister(0x1000, 32));
    CpcSource pccCpu = cpuWithDesired(1, sim::pccRegister(2, 0x14));
    Machine m(descriptors({memCpu, pccCpu}));
    m.pcc.add(2, 0x100);
    ASSERT_FALSE(m.plan.cpu(0).pccControl);
    ASSERT_TRUE(m.plan.cpu(1).pccControl);
    for (int i = 0; i < 100; ++i)
    {
        ASSERT_FALSE(m.control.setPerf(0, 100 + static_cast<unsigned>(i)));
        ASSERT_FALSE(m.control.setPerf(0, 1, 2, 3));
        ASSERT_FALSE(m.conservative.setPerf(0, 7));
    }
    EXPECT_EQ(m.pcc.counts(), sim::PccCounts{});
    ASSERT_FALSE(m.control.setPerf(1, 9));
    EXPECT_EQ(m.pcc.counts().doorbells, 1U);
}

TEST(PerfControlTest, ConservativePathAlwaysReadsMergesAndLocks)
{
    Machine m("rd-n2");
    ASSERT_FALSE(m.conservative.setPerf(3, 2000));
    EXPECT_EQ(m.desiredCounts(3), (AccessCounts{1, 1, 1}));
    EXPECT_EQ(m.file.peek(mem, 0x2A9C3000, 4), 2000U);
    m.file.resetCounts();
    Machine p("packed");
    ASSERT_FALSE(p.conservative.setPerf(0, 1, 2, 3));
    EXPECT_EQ(p.file.totalCounts(), (AccessCounts{3, 3, 3}));
}

// Both variants must leave the registers in the same state for the same
// sequence of requests, on every layout that both can drive.
TEST(PerfControlTest, OptimisedAndConservativeAgreeOnRandomRequests)
{
    for (std::string_view name : {"orion-o6", "rd-n2", "packed"})
    {
        Machine fast(name);
        Machine slow(name);
        std::mt19937_64 rng(42);
        for (int i = 0; i < 2000; ++i)
        {
            const auto cpu =
                static_cast<unsigned>(rng() % fast.plan.cpuCount());
            const std::uint64_t d = rng() % 256;
            const std::uint64_t lo = rng() % 256;
            const std::uint64_t hi = rng() % 256;
            if (rng() % 2 == 0)
            {
                ASSERT_EQ(fast.control.setPerf(cpu, d),
                          slow.conservative.setPerf(cpu, d));
            }
            else
            {
                ASSERT_EQ(fast.control.setPerf(cpu, d, lo, hi),
                          slow.conservative.setPerf(cpu, d, lo, hi));
            }
        }
        for (const CpcDescriptor& d : fast.plan.descriptors())
        {
            const RegisterDesc& r = d.entry(CpcEntry::desiredPerf).reg;
            EXPECT_EQ(fast.file.peek(mem, r.address, 4),
                      slow.file.peek(mem, r.address, 4))
                << name << " CPU " << d.cpu();
        }
    }
}

// Two threads hammering different fields of one unit must never lose each
// other's last value: the unit lock makes each read-modify-write atomic.
TEST(PerfControlTest, ConcurrentWritersOfOneSharedUnitLoseNoField)
{
    CpcSource a = cpuWithDesired(0, memoryRegister(0x1000, 8, 0));
    CpcSource b = cpuWithDesired(1, memoryRegister(0x1000, 8, 8));
    Machine m(descriptors({a, b}));
    constexpr int rounds = 20000;
    auto writer = [&m](unsigned cpu) {
        for (int i = 0; i < rounds; ++i)
        {
            const auto v = static_cast<std::uint64_t>(i % 200);
            if (m.control.setPerf(cpu, v))
            {
                return;
            }
        }
    };
    std::thread t0(writer, 0U);
    std::thread t1(writer, 1U);
    t0.join();
    t1.join();
    const std::uint64_t last = (rounds - 1) % 200;
    EXPECT_EQ(m.file.peek(mem, 0x1000, 4), last | (last << 8));
    EXPECT_EQ(m.file.totalCounts().locks, 2U * rounds);
}

// The neoverse layout's units, CPU 0.
constexpr std::uint64_t neoverseBounds = 0x60000004;   // Min, Max, EPP
constexpr std::uint64_t neoverseAutonomy = 0x60000008; // AutoSel, window

TEST(PerfControlTest, EppSharingTheBoundsUnitIsALockedReadModifyWrite)
{
    Machine m("neoverse");
    m.file.poke(mem, neoverseBounds, 4, 0x00C8'3C28); // EPP 0, Max 0x3C...
    ASSERT_TRUE(m.control.hasRegister(0, CpcEntry::energyPerfPreference));
    ASSERT_FALSE(
        m.control.writeControl(0, CpcEntry::energyPerfPreference, 0x7F));
    EXPECT_EQ(m.file.peek(mem, neoverseBounds, 4), 0x007F'3C28U);
    EXPECT_EQ(m.file.registerCounts(0, CpcEntry::energyPerfPreference),
              (AccessCounts{1, 1, 1}));
    // Min and Max through setPerf keep the EPP just written.
    ASSERT_FALSE(m.control.setPerf(0, 100, 50, 150));
    EXPECT_EQ(m.file.peek(mem, neoverseBounds, 4), 0x007F'9632U);
    EXPECT_EQ(m.file.peek(mem, 0x60000000, 4), 100U);
    EXPECT_EQ(m.file.unitCounts(mem, neoverseBounds), (AccessCounts{2, 2, 2}));
    std::uint64_t epp = 0;
    ASSERT_FALSE(m.control.readControl(0, CpcEntry::energyPerfPreference, epp));
    EXPECT_EQ(epp, 0x7FU);
    EXPECT_EQ(m.control.writeControl(0, CpcEntry::energyPerfPreference, 256),
              Errc::valueOutOfRange);
    EXPECT_EQ(m.file.peek(mem, neoverseBounds, 4), 0x007F'9632U);
}

TEST(PerfControlTest, DesiredAloneStaysOneStoreWhereEveryControlIsARegister)
{
    Machine m("neoverse");
    EXPECT_EQ(m.plan.cpu(0).reg(CpcEntry::desiredPerf).access,
              AccessClass::fullWidthStandalone);
    ASSERT_FALSE(m.control.setPerf(3, 77));
    EXPECT_EQ(m.desiredCounts(3), (AccessCounts{0, 1, 0}));
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{0, 1, 0}));
}

TEST(PerfControlTest, AutonomousSelectionAndWindowShareAUnitUnderItsLock)
{
    Machine m("neoverse");
    const RegisterPlan& autoSel =
        m.plan.cpu(0).reg(CpcEntry::autonomousSelectionEnable);
    EXPECT_EQ(autoSel.access, AccessClass::sharedUnit);
    ASSERT_TRUE(autoSel.lock);
    EXPECT_EQ(m.plan.cpu(0).reg(CpcEntry::autonomousActivityWindow).lock,
              autoSel.lock);
    ASSERT_FALSE(
        m.control.writeControl(0, CpcEntry::autonomousActivityWindow, 0x3FF));
    ASSERT_FALSE(
        m.control.writeControl(0, CpcEntry::autonomousSelectionEnable, 1));
    EXPECT_EQ(m.file.peek(mem, neoverseAutonomy, 4), 0x3FF01U);
    EXPECT_EQ(m.control.writeControl(0, CpcEntry::autonomousSelectionEnable, 2),
              Errc::valueOutOfRange);
    EXPECT_EQ(
        m.control.writeControl(0, CpcEntry::autonomousActivityWindow, 0x400),
        Errc::valueOutOfRange);
    ASSERT_FALSE(
        m.control.writeControl(0, CpcEntry::autonomousSelectionEnable, 0));
    EXPECT_EQ(m.file.peek(mem, neoverseAutonomy, 4), 0x3FF00U);
    EXPECT_EQ(m.file.unitCounts(mem, neoverseAutonomy).locks, 3U);
}

TEST(PerfControlTest, IntegerAndNullControlsAreAbsent)
{
    Machine orion("orion-o6"); // AutonomousSelectionEnable is Integer 0
    Machine rdN2("rd-n2");     // no EPP, no autonomous registers
    for (Machine* m : {&orion, &rdN2})
    {
        for (CpcEntry e : {CpcEntry::energyPerfPreference,
                           CpcEntry::autonomousSelectionEnable,
                           CpcEntry::autonomousActivityWindow})
        {
            EXPECT_FALSE(m->control.hasRegister(0, e));
            EXPECT_EQ(m->control.writeControl(0, e, 0), Errc::notWritable);
            std::uint64_t v = 0;
            EXPECT_EQ(m->control.readControl(0, e, v), Errc::notWritable);
        }
        EXPECT_EQ(m->file.totalCounts(), (AccessCounts{0, 0, 0}));
    }
    EXPECT_TRUE(rdN2.control.hasRegister(0, CpcEntry::perfLimited));
    EXPECT_FALSE(orion.control.hasRegister(0, CpcEntry::perfLimited));
    EXPECT_FALSE(rdN2.control.hasRegister(0, CpcEntry::desiredPerf));
    EXPECT_EQ(rdN2.control.writeControl(99, CpcEntry::minPerf, 1),
              Errc::noSuchCpu);
    // PerformanceLimited is cleared by takePerfLimited only.
    EXPECT_EQ(rdN2.control.writeControl(0, CpcEntry::perfLimited, 0),
              Errc::notWritable);
}

TEST(PerfControlTest, PccControlsGoThroughTheSubspaceOneCommandEach)
{
    CpcSource s = cpuWithDesired(0, sim::pccRegister(2, 0x14));
    sim::setEntry(s, CpcEntry::energyPerfPreference,
                  CpcValue::ofRegister(sim::pccRegister(2, 0x18, 8)));
    sim::setEntry(s, CpcEntry::autonomousSelectionEnable,
                  CpcValue::ofRegister(sim::pccRegister(2, 0x1C, 1)));
    Machine m(descriptors({s}));
    m.pcc.add(2, 0x100);
    ASSERT_FALSE(
        m.control.writeControl(0, CpcEntry::energyPerfPreference, 200));
    ASSERT_FALSE(
        m.control.writeControl(0, CpcEntry::autonomousSelectionEnable, 1));
    EXPECT_EQ(m.pcc.peek(2, {0x18, 0, 8}), 200U);
    EXPECT_EQ(m.pcc.peek(2, {0x1C, 0, 1}), 1U);
    EXPECT_EQ(m.pcc.counts().doorbells, 2U);
    std::uint64_t v = 0;
    ASSERT_FALSE(m.control.readControl(0, CpcEntry::energyPerfPreference, v));
    EXPECT_EQ(v, 200U);
    EXPECT_EQ(m.file.totalCounts(), (AccessCounts{0, 0, 0}));

    sim::RegisterFile file;
    const AccessPlan plan = AccessPlan::build(descriptors({s}));
    SimPerfControl portless(plan, CountingIo(file), nullptr);
    EXPECT_EQ(portless.writeControl(0, CpcEntry::energyPerfPreference, 1),
              Errc::pccUnavailable);
}

TEST(PerfControlTest, PerfLimitedIsReadAndClearedByWritingZeroToTheBitsRead)
{
    Machine m("rd-n2");
    const std::uint64_t reg = 0x2A9C0004;
    // A reserved bit of the platform's stays as it is.
    m.file.poke(mem, reg, 4, 0x100 | perfLimitedDesiredExcursion);
    std::uint8_t bits = 0xFF;
    ASSERT_FALSE(m.control.takePerfLimited(0, bits));
    EXPECT_EQ(bits, perfLimitedDesiredExcursion);
    EXPECT_EQ(m.file.peek(mem, reg, 4), 0x100U);
    const AccessCounts afterClear =
        m.file.registerCounts(0, CpcEntry::perfLimited);
    // Nothing set: read, not written.
    ASSERT_FALSE(m.control.takePerfLimited(0, bits));
    EXPECT_EQ(bits, 0U);
    const AccessCounts quiet = m.file.registerCounts(0, CpcEntry::perfLimited);
    EXPECT_EQ(quiet.writes, afterClear.writes);
    EXPECT_EQ(quiet.reads, afterClear.reads + 1);
    // Sticky: set again later, reported again.
    m.file.poke(mem, reg, 4, 0x100 | perfLimitedBits);
    ASSERT_FALSE(m.control.takePerfLimited(0, bits));
    EXPECT_EQ(bits, perfLimitedBits);
    EXPECT_EQ(m.file.peek(mem, reg, 4), 0x100U);
}

TEST(PerfControlTest, PerfLimitedBitSetBetweenReadAndClearIsNotLost)
{
    Machine m("rd-n2");
    const std::uint64_t reg = 0x2A9C0004;
    m.file.poke(mem, reg, 4, perfLimitedDesiredExcursion);
    int interferences = 0;
    // The platform sets Minimum Excursion after the read, before the
    // clearing write.
    m.file.setInterference([&](std::byte* unit) {
        if (interferences++ == 0)
        {
            auto* word = reinterpret_cast<std::uint32_t*>(unit);
            *word |= perfLimitedMinimumExcursion;
        }
    });
    std::uint8_t bits = 0;
    ASSERT_FALSE(m.control.takePerfLimited(0, bits));
    EXPECT_EQ(interferences, 2); // the first exchange failed, the second held
    EXPECT_EQ(bits, perfLimitedBits);
    EXPECT_EQ(m.file.peek(mem, reg, 4), 0U);
}

TEST(PerfControlTest, PerfLimitedInPccIsAReadCommandThenAWriteCommand)
{
    sim::Layout layout = sim::makeLayout("altra");
    Machine m(std::move(layout.cpus));
    m.pcc.add(2, 0x4000 - 8);
    const PccRegister limited{3 * 0x80 + 0x3C, 0, 32};
    const PccWrite set{limited, perfLimitedMinimumExcursion};
    ASSERT_FALSE(m.pcc.write(2, {&set, 1}));
    m.pcc.resetCounts();
    std::uint8_t bits = 0;
    ASSERT_FALSE(m.control.takePerfLimited(3, bits));
    EXPECT_EQ(bits, perfLimitedMinimumExcursion);
    EXPECT_EQ(m.pcc.peek(2, limited), 0U);
    EXPECT_EQ(m.pcc.counts().commands, 2U);
    ASSERT_FALSE(m.control.takePerfLimited(3, bits));
    EXPECT_EQ(bits, 0U);
    EXPECT_EQ(m.pcc.counts().commands, 3U); // a read, nothing to clear
    EXPECT_FALSE(m.control.hasRegister(3, CpcEntry::energyPerfPreference));
}

TEST(PerfControlTest, ConcurrentEppAndBoundsWritersLoseNoField)
{
    Machine m("neoverse");
    constexpr int rounds = 20000;
    std::thread bounds([&m] {
        for (int i = 0; i < rounds; ++i)
        {
            const auto v = static_cast<std::uint64_t>(40 + i % 100);
            if (m.control.setPerf(0, v, v, v))
            {
                return;
            }
        }
    });
    std::thread epp([&m] {
        for (int i = 0; i < rounds; ++i)
        {
            if (m.control.writeControl(0, CpcEntry::energyPerfPreference,
                                       static_cast<std::uint64_t>(i % 256)))
            {
                return;
            }
        }
    });
    bounds.join();
    epp.join();
    const std::uint64_t v = 40 + (rounds - 1) % 100;
    const std::uint64_t e = (rounds - 1) % 256;
    EXPECT_EQ(m.file.peek(mem, neoverseBounds, 4), v | (v << 8) | (e << 16));
}

} // namespace
} // namespace cppc
