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

} // namespace
} // namespace cppc
