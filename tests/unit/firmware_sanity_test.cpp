// SPDX-License-Identifier: Apache-2.0
// The firmware checks (lib/firmware_sanity.hpp): each fires on numbers
// made to fail it and stays quiet on the real Orion O6 and Ampere Altra
// tables (read from the shared dumps; skipped when they are absent).
#include "lib/acpi/firmware.hpp"
#include "lib/cpc_descriptor.hpp"
#include "lib/firmware_sanity.hpp"

#include <filesystem>
#include <initializer_list>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc
{
namespace
{

using ::testing::HasSubstr;
using ::testing::Optional;

// A revision 3 descriptor of Integers (an entry given as nothing is the
// NULL register); the counters are AMU registers.
CpcDescriptor descriptor(std::optional<std::uint64_t> highest,
                         std::uint64_t nominal, std::uint64_t lowest,
                         std::optional<std::uint64_t> reference,
                         std::uint64_t lowestMhz, std::uint64_t nominalMhz)
{
    CpcSource s;
    s.cpu = 3;
    s.uid = 3;
    s.numEntries = 23;
    s.revision = 3;
    s.entries.assign(cpcEntryCount, CpcValue::ofRegister({}));
    const auto set = [&s](CpcEntry e, CpcValue v) {
        s.entries[static_cast<std::size_t>(e)] = v;
    };
    set(CpcEntry::highestPerf,
        highest ? CpcValue::ofInteger(*highest)
                : CpcValue::ofRegister({0x0A, 32, 0, 2, 0x10}));
    set(CpcEntry::nominalPerf, CpcValue::ofInteger(nominal));
    set(CpcEntry::lowestNonlinearPerf, CpcValue::ofInteger(lowest));
    set(CpcEntry::lowestPerf, CpcValue::ofInteger(lowest));
    set(CpcEntry::desiredPerf,
        CpcValue::ofRegister({0x00, 32, 0, 3, 0x2A410000}));
    set(CpcEntry::referencePerfCounter,
        CpcValue::ofRegister({0x7F, 64, 0, 4, 1}));
    set(CpcEntry::deliveredPerfCounter,
        CpcValue::ofRegister({0x7F, 64, 0, 4, 0}));
    set(CpcEntry::counterWraparoundTime, CpcValue::ofInteger(0));
    set(CpcEntry::autonomousSelectionEnable, CpcValue::ofInteger(0));
    if (reference)
    {
        set(CpcEntry::referencePerf, CpcValue::ofInteger(*reference));
    }
    set(CpcEntry::lowestFreq, CpcValue::ofInteger(lowestMhz));
    set(CpcEntry::nominalFreq, CpcValue::ofInteger(nominalMhz));
    return CpcDescriptor(std::move(s));
}

// An Orion O6 big core: 0x2000 at 2500 MHz, 0xA3D at 800 MHz, reference
// performance 1000.
PerfScale orionBig()
{
    return {0x2000, 0x2000, 0xA3D, 1000, 800'000, 2'500'000};
}

TEST(PerfScaleTest, FromIntegers)
{
    const std::optional<PerfScale> s =
        perfScaleOf(descriptor(0x2000, 0x2000, 0xA3D, 1000, 800, 2500));
    ASSERT_TRUE(s);
    EXPECT_EQ(s->highest, 0x2000U);
    EXPECT_EQ(s->lowest, 0xA3DU);
    EXPECT_EQ(s->referencePerf, 1000U);
    EXPECT_EQ(s->lowestKhz, 800'000U);
    EXPECT_EQ(s->nominalKhz, 2'500'000U);
}

TEST(PerfScaleTest, NoReferencePerformanceFallsBackToNominal)
{
    const std::optional<PerfScale> s =
        perfScaleOf(descriptor(250, 200, 40, std::nullopt, 400, 2000));
    ASSERT_TRUE(s);
    EXPECT_EQ(s->referencePerf, 0U);
    EXPECT_EQ(s->effectiveReference(), 200U);
    EXPECT_THAT(referenceHz(*s), Optional(2e9));
}

TEST(PerfScaleTest, RegistersDecideNothing)
{
    EXPECT_FALSE(
        perfScaleOf(descriptor(std::nullopt, 200, 40, 200, 400, 2000)));
}

TEST(ReferencePerfCheckTest, QuietOnAConsistentScale)
{
    EXPECT_EQ(checkReferencePerf({250, 200, 40, 200, 400'000, 2'000'000}),
              std::nullopt);
    // A reference counter slower than the lowest performance is legitimate
    // (a 25 MHz system counter).
    EXPECT_EQ(checkReferencePerf({250, 200, 40, 3, 400'000, 2'000'000}),
              std::nullopt);
    // Unknown frequencies: the range alone.
    EXPECT_EQ(checkReferencePerf({250, 200, 40, 100, 0, 0}), std::nullopt);
    EXPECT_EQ(checkReferencePerf(orionBig()), std::nullopt);
}

TEST(ReferencePerfCheckTest, AboveHighest)
{
    const auto r = checkReferencePerf({250, 200, 40, 300, 400'000, 2'000'000});
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("ReferencePerformance 300 is above "
                              "HighestPerformance 250"));
}

TEST(ReferencePerfCheckTest, NominalStandingInAboveHighest)
{
    const auto r = checkReferencePerf({150, 200, 40, 0, 0, 0});
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("NominalPerformance 200 (no "
                              "ReferencePerformance) is above "
                              "HighestPerformance 150"));
}

TEST(ReferencePerfCheckTest, ZeroIsNoLevel)
{
    const auto r = checkReferencePerf({150, 0, 0, 0, 0, 0});
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("is no performance level"));
}

TEST(ReferencePerfCheckTest, AtNoPositiveFrequency)
{
    // 16 MHz per unit through (100, 400 MHz): 0 MHz at 75.
    const auto r = checkReferencePerf({250, 200, 100, 50, 400'000, 2'000'000});
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("ReferencePerformance 50 lies at or below 0 MHz "
                              "on the line through (100, 400 MHz) and (200, "
                              "2000 MHz)"));
    EXPECT_EQ(checkReferencePerf({250, 200, 100, 76, 400'000, 2'000'000}),
              std::nullopt);
}

TEST(CounterRateCheckTest, OrionAgainstTheArchitecturalGigahertz)
{
    EXPECT_NEAR(*referenceHz(orionBig()), 305.17578e6, 1e3);
    const auto r = checkCounterRate(orionBig(), 1e9, 0.2);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "ReferencePerformance 1000 stands for a 305.2 MHz reference "
                  "counter at NominalFrequency 2500 MHz / NominalPerformance "
                  "8192, but the counter counts at 1000.0 MHz: delivered "
                  "performance reads 3.28x too low");
    // The little cores: 2321 at 1801 MHz.
    const auto little = checkCounterRate(
        {2321, 2321, 1031, 1000, 800'000, 1'801'000}, 1e9, 0.2);
    ASSERT_TRUE(little);
    EXPECT_THAT(*little, HasSubstr("776.0 MHz reference counter"));
    EXPECT_THAT(*little, HasSubstr("1.29x too low"));
}

TEST(CounterRateCheckTest, QuietWhenTheCounterMatches)
{
    EXPECT_EQ(checkCounterRate(orionBig(), 305.2e6, 0.2), std::nullopt);
    // Within the tolerance either way.
    EXPECT_EQ(checkCounterRate(orionBig(), 305.2e6 * 1.19, 0.2), std::nullopt);
    EXPECT_EQ(checkCounterRate(orionBig(), 305.2e6 / 1.19, 0.2), std::nullopt);
    EXPECT_TRUE(checkCounterRate(orionBig(), 305.2e6 * 1.25, 0.2));
}

TEST(CounterRateCheckTest, TooHigh)
{
    // A counter slower than the table says: figures read high.
    const auto r =
        checkCounterRate({250, 200, 40, 200, 400'000, 2'000'000}, 1e9, 0.2);
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("2.00x too high"));
}

TEST(CounterRateCheckTest, UndecidableWithoutFrequencyOrRate)
{
    EXPECT_EQ(checkCounterRate({250, 200, 40, 200, 0, 0}, 1e9, 0.2),
              std::nullopt);
    EXPECT_EQ(checkCounterRate(orionBig(), 0, 0.2), std::nullopt);
}

TEST(FollowCheckTest, BelowWithoutAnExcursion)
{
    FollowWindow w{8192, 2600, 5'000'000, false, false, false};
    EXPECT_THAT(checkFollow(w, 0.2),
                Optional(std::string("delivered 2600 while 8192 requested for "
                                     "5 s (PerformanceLimited not "
                                     "readable)")));
    w.limitedReadable = true;
    EXPECT_THAT(checkFollow(w, 0.2),
                Optional(std::string("delivered 2600 while 8192 requested for "
                                     "5 s, no PerformanceLimited excursion")));
}

TEST(FollowCheckTest, AnExcursionExplainsBelow)
{
    const FollowWindow w{8192, 2600, 5'000'000, true, true, false};
    EXPECT_EQ(checkFollow(w, 0.2), std::nullopt);
}

TEST(FollowCheckTest, Above)
{
    FollowWindow w{1000, 2000, 2'500'000, false, true, false};
    EXPECT_THAT(
        checkFollow(w, 0.2),
        Optional(std::string("delivered 2000 while 1000 requested for 2.5 s")));
    w.aboveAllowed = true;
    EXPECT_EQ(checkFollow(w, 0.2), std::nullopt);
}

TEST(FollowCheckTest, WithinTheTolerance)
{
    EXPECT_EQ(checkFollow({1000, 810, 5'000'000, false, true, false}, 0.2),
              std::nullopt);
    EXPECT_EQ(checkFollow({1000, 1190, 5'000'000, false, true, false}, 0.2),
              std::nullopt);
    EXPECT_TRUE(checkFollow({1000, 790, 5'000'000, false, true, false}, 0.2));
    // Nothing delivered known, nothing requested: no verdict.
    EXPECT_EQ(checkFollow({1000, 0, 5'000'000, false, true, false}, 0.2),
              std::nullopt);
    EXPECT_EQ(checkFollow({0, 500, 5'000'000, false, true, false}, 0.2),
              std::nullopt);
}

TEST(CountersStuckCheckTest, ReachesTheLimit)
{
    EXPECT_EQ(checkCountersStuck("reference", 9, 10), std::nullopt);
    EXPECT_THAT(checkCountersStuck("delivered", 10, 10),
                Optional(std::string("the delivered counter did not move over "
                                     "10 readings while the CPU was busy")));
    EXPECT_EQ(checkCountersStuck("delivered", 11, 10),
              checkCountersStuck("delivered", 10, 10));
    EXPECT_EQ(checkCountersStuck("delivered", 10, 0), std::nullopt);
}

TEST(SanityCheckTest, Names)
{
    EXPECT_EQ(checkName(SanityCheck::referencePerf), "reference-perf");
    EXPECT_EQ(checkName(SanityCheck::counterRate), "counter-rate");
    EXPECT_EQ(checkName(SanityCheck::follow), "follow");
    EXPECT_EQ(checkName(SanityCheck::countersStuck), "counters-stuck");
}

// --- the real dumps --------------------------------------------------

std::filesystem::path dumps()
{
    return CPPCGOV_ACPI_FIXTURES;
}

acpi::FirmwareReport readDumps(std::initializer_list<const char*> names)
{
    std::vector<acpi::Table> tables;
    for (const char* n : names)
    {
        tables.push_back(acpi::loadTableFile(dumps() / n));
    }
    return acpi::readFirmware(tables);
}

TEST(FirmwareSanityDumpTest, OrionO6QuietFromTablesFoundAtOneGigahertz)
{
    if (!std::filesystem::exists(dumps() / "orion-o6-ssdt2.dat"))
    {
        GTEST_SKIP() << "no real ACPI dumps at " << dumps();
    }
    const acpi::FirmwareReport r =
        readDumps({"orion-o6-dsdt.dat", "orion-o6-ssdt1.dat",
                   "orion-o6-ssdt2.dat", "orion-o6-apic.dat"});
    ASSERT_EQ(r.cpus.size(), 12U);
    for (const acpi::FirmwareCpu& c : r.cpus)
    {
        ASSERT_TRUE(c.descriptor);
        const std::optional<PerfScale> s = perfScaleOf(*c.descriptor);
        ASSERT_TRUE(s) << "CPU " << c.cpu;
        EXPECT_EQ(s->referencePerf, 1000U);
        // Tables alone: quiet.
        EXPECT_EQ(checkReferencePerf(*s), std::nullopt) << "CPU " << c.cpu;
        // With the architectural 1 GHz counter of Armv8.6 and later, every
        // CPU's delivered figures read low: 3.28x on the 305.2 MHz CPUs,
        // 1.29x on the 776.0 MHz ones (CPUs 1-4).
        const bool little = c.cpu >= 1 && c.cpu <= 4;
        EXPECT_NEAR(*referenceHz(*s), little ? 776.0e6 : 305.2e6, 0.1e6);
        const auto found = checkCounterRate(*s, 1e9, 0.2);
        ASSERT_TRUE(found) << "CPU " << c.cpu;
        EXPECT_THAT(*found,
                    HasSubstr(little ? "1.29x too low" : "3.28x too low"));
        // A counter at the rate the table implies would be quiet.
        EXPECT_EQ(checkCounterRate(*s, *referenceHz(*s), 0.2), std::nullopt);
    }
}

TEST(FirmwareSanityDumpTest, AmpereAltraUndecidedFromTables)
{
    if (!std::filesystem::exists(dumps() / "ampere-altra-dsdt.dat"))
    {
        GTEST_SKIP() << "no real ACPI dumps at " << dumps();
    }
    const acpi::FirmwareReport r =
        readDumps({"ampere-altra-dsdt.dat", "ampere-altra-pcct.dat",
                   "ampere-altra-apic.dat"});
    ASSERT_EQ(r.cpus.size(), 32U);
    for (const acpi::FirmwareCpu& c : r.cpus)
    {
        ASSERT_TRUE(c.descriptor);
        // Every figure is in a PCC register: nothing to decide from the
        // tables, so nothing is found.
        EXPECT_FALSE(perfScaleOf(*c.descriptor)) << "CPU " << c.cpu;
    }
}

} // namespace
} // namespace cppc
