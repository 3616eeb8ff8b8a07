// SPDX-License-Identifier: Apache-2.0
// The ACPI table readers' common ground: ByteReader, the table header and
// checksum, file and directory loading, on synthetic tables and on real
// firmware dumps (when ../shared/fixtures/acpi exists).
#include "acpi_test_support.hpp"
#include "lib/acpi/byte_reader.hpp"
#include "lib/acpi/madt.hpp"
#include "lib/acpi/pcct.hpp"
#include "lib/acpi/table.hpp"
#include "lib/text.hpp"
#include "temp_tree.hpp"
#include "tests/fuzz/acpi_samples.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::acpi
{
namespace
{

namespace fs = std::filesystem;
using cppc::test::TempTree;
using samples::Bytes;
using test::acpiErrorOf;
using test::chars;
using test::expectOffset;
using test::table;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// ---- ByteReader ----

TEST(ByteReaderTest, ReadsLittleEndianAndTracksOffset)
{
    const Bytes b{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                  0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F};
    ByteReader r(b, "bytes");
    EXPECT_EQ(r.u8(), 0x01U);
    EXPECT_EQ(r.u16(), 0x0302U);
    EXPECT_EQ(r.u32(), 0x07060504U);
    EXPECT_EQ(r.offset(), 7U);
    r.seek(0);
    EXPECT_EQ(r.u64(), 0x0807060504030201ULL);
    EXPECT_EQ(r.remaining(), 7U);
    EXPECT_EQ(r.chars(2), "\x09\x0A");
}

TEST(ByteReaderTest, OverrunNamesLabelAndOffset)
{
    const Bytes b{1, 2, 3, 4, 5};
    ByteReader r(b, "XSDT table here");
    r.skip(2);
    auto e = acpiErrorOf([&] { (void)r.u32(); });
    expectOffset(e, 2);
    EXPECT_THAT(e->what(), HasSubstr("XSDT table here"));
    EXPECT_EQ(r.offset(), 2U) << "a failed read does not move";
    expectOffset(acpiErrorOf([&] { r.seek(6); }), 6);
    expectOffset(acpiErrorOf([&] { r.skip(4); }), 2);
    expectOffset(acpiErrorOf([&] { (void)r.gas(); }), 2);
}

TEST(ByteReaderTest, WindowsKeepAbsoluteOffsets)
{
    const Bytes b(32, 0xAB);
    ByteReader r(b, "t");
    r.skip(10);
    ByteReader w = r.window(6);
    EXPECT_EQ(r.offset(), 16U);
    EXPECT_EQ(w.offset(), 10U);
    EXPECT_EQ(w.end(), 16U);
    EXPECT_EQ(w.u32(), 0xABABABABU);
    expectOffset(acpiErrorOf([&] { (void)w.u32(); }), 14);
    expectOffset(acpiErrorOf([&] { w.seek(9); }), 9);
    expectOffset(acpiErrorOf([&] { (void)r.window(17); }), 16);
}

TEST(ByteReaderTest, ReadsGenericAddressStructure)
{
    samples::Writer w;
    w.gas({.space = 0x0A,
           .bitWidth = 64,
           .bitOffset = 8,
           .accessSize = 2,
           .address = 0x1122334455667788});
    ByteReader r(w.bytes(), "t");
    RegisterDesc g = r.gas();
    EXPECT_EQ(g.space, 0x0AU);
    EXPECT_EQ(g.bitWidth, 64U);
    EXPECT_EQ(g.bitOffset, 8U);
    EXPECT_EQ(g.accessSize, 2U);
    EXPECT_EQ(g.address, 0x1122334455667788U);
    EXPECT_TRUE(r.atEnd());
}

// ---- table header ----

TEST(TableTest, ParsesHeader)
{
    Table t = table(samples::makeTable("PCCT", Bytes(12, 0), 2), "/x/PCCT");
    EXPECT_EQ(t.source, "/x/PCCT");
    EXPECT_EQ(t.header.signature, "PCCT");
    EXPECT_EQ(t.header.length, 48U);
    EXPECT_EQ(t.header.revision, 2U);
    EXPECT_EQ(t.header.oemId, "CPPCGV");
    EXPECT_EQ(t.header.oemTableId, "SAMPLES ");
    EXPECT_EQ(t.header.oemRevision, 1U);
    EXPECT_EQ(t.header.creatorId, "TEST");
    EXPECT_EQ(t.header.creatorRevision, 0x20260101U);
    EXPECT_EQ(t.bytes.size(), 48U);
    EXPECT_EQ(t.label(), "PCCT table /x/PCCT");
}

TEST(TableTest, IgnoresBytesBeyondLength)
{
    Bytes b = samples::makeTable("APIC", Bytes(8, 0));
    b.insert(b.end(), {1, 2, 3});
    Table t = table(b);
    EXPECT_EQ(t.bytes.size(), 44U);
    EXPECT_EQ(t.header.length, 44U);
}

TEST(TableTest, ShortBufferAtEveryLength)
{
    const Bytes full = samples::makeTable("DSDT", Bytes(20, 0x5A));
    for (std::size_t n = 0; n < full.size(); ++n)
    {
        SCOPED_TRACE(n);
        Bytes cut(full.begin(), full.begin() + static_cast<long>(n));
        auto e = acpiErrorOf([&] { (void)table(cut, "cut.dat"); });
        // Too short for the header: the error is where the data ends;
        // otherwise the length field (offset 4) claims too much.
        expectOffset(e, n < tableHeaderSize ? n : 4);
        EXPECT_THAT(e->what(), HasSubstr("cut.dat"));
    }
}

struct BadHeaderCase
{
    const char* name;
    std::uint32_t length;
    std::size_t offset;
    const char* text;
};

class BadHeaderTest : public ::testing::TestWithParam<BadHeaderCase>
{};

TEST_P(BadHeaderTest, IsAnAcpiError)
{
    const BadHeaderCase& c = GetParam();
    Bytes b = samples::makeTable("SSDT", Bytes(16, 0));
    samples::setLength(b, c.length);
    auto e = acpiErrorOf([&] { (void)table(b, "t.dat"); });
    expectOffset(e, c.offset);
    EXPECT_THAT(e->what(), HasSubstr("SSDT table t.dat"));
    EXPECT_THAT(e->what(), HasSubstr(c.text));
}

INSTANTIATE_TEST_SUITE_P(
    Lengths, BadHeaderTest,
    ::testing::Values(BadHeaderCase{"zero", 0, 4, "shorter than the header"},
                      BadHeaderCase{"below", 35, 4, "shorter than the header"},
                      BadHeaderCase{"beyond", 53, 4, "exceeds the 52 bytes"},
                      BadHeaderCase{"huge", 0xFFFFFFFF, 4, "exceeds"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(TableTest, BadChecksumNamesTheChecksumByte)
{
    const Bytes good = samples::makeTable("APIC", Bytes(30, 0x11));
    for (std::size_t i = 0; i < good.size(); ++i)
    {
        if (i >= 4 && i < 8)
        {
            continue; // the length field: see BadHeaderTest
        }
        SCOPED_TRACE(i);
        Bytes b = good;
        b[i] = static_cast<std::uint8_t>(b[i] + 1);
        auto e = acpiErrorOf([&] { (void)table(b); });
        expectOffset(e, 9);
        EXPECT_THAT(e->what(), HasSubstr("checksum"));
    }
}

TEST(TableTest, LabelEscapesUnprintableSignatures)
{
    Bytes b = samples::makeTable("A\x01\xFFZ", {});
    samples::setLength(b, 3);
    auto e = acpiErrorOf([&] { (void)table(b, "f"); });
    EXPECT_THAT(e->what(), HasSubstr("A\\x01\\xffZ table f: offset 0x4"));
}

// ---- files and directories ----

TEST(TableFileTest, LoadsAFile)
{
    TempTree dir;
    fs::path p = dir.write("APIC", chars(samples::sampleMadt()));
    Table t = loadTableFile(p);
    EXPECT_EQ(t.source, p.string());
    EXPECT_EQ(t.header.signature, "APIC");
    EXPECT_EQ(t.bytes, samples::sampleMadt());
}

TEST(TableFileTest, MissingFileNamesPathAndErrno)
{
    TempTree dir;
    auto e = acpiErrorOf([&] { (void)loadTableFile(dir.path() / "NONE"); });
    ASSERT_TRUE(e);
    EXPECT_FALSE(e->offset());
    EXPECT_THAT(e->what(), HasSubstr((dir.path() / "NONE").string()));
    EXPECT_THAT(e->what(), HasSubstr("No such file or directory"));
}

TEST(TableFileTest, DirectoryIsNotATable)
{
    TempTree dir;
    auto e = acpiErrorOf([&] { (void)loadTableFile(dir.path()); });
    ASSERT_TRUE(e);
    EXPECT_THAT(e->what(), HasSubstr("Is a directory"));
}

TEST(TableFileTest, EndlessFileIsCapped)
{
    auto e = acpiErrorOf([&] { (void)loadTableFile("/dev/zero"); });
    ASSERT_TRUE(e);
    EXPECT_THAT(e->what(), HasSubstr("/dev/zero: larger than 67108864"));
}

TEST(TableFileTest, EmptyFileIsTooShort)
{
    TempTree dir;
    fs::path p = dir.write("DSDT", {});
    auto e = acpiErrorOf([&] { (void)loadTableFile(p); });
    expectOffset(e, 0);
    EXPECT_THAT(e->what(), HasSubstr(p.string()));
}

std::vector<std::string> signaturesAndSources(const std::vector<Table>& ts)
{
    std::vector<std::string> out;
    out.reserve(ts.size());
    for (const Table& t : ts)
    {
        out.push_back(
            t.header.signature + " " + fs::path(t.source).filename().string());
    }
    return out;
}

TEST(TableDirectoryTest, LoadsWhatCppcgovNeedsInOrder)
{
    TempTree dir;
    const Bytes ssdt = samples::makeTable("SSDT", Bytes(4, 0));
    dir.write("SSDT10", chars(ssdt));
    dir.write("SSDT2", chars(ssdt));
    dir.write("APIC", chars(samples::sampleMadt()));
    dir.write("SSDT1", chars(ssdt));
    dir.write("PCCT", chars(samples::pcctOf(samples::allSampleSubspaces())));
    dir.write("DSDT", chars(samples::makeTable("DSDT", Bytes(4, 0))));
    dir.write("FACP", chars(samples::makeTable("FACP", {})));
    dir.write("SSDTx", chars(ssdt));
    dir.write("SSDT01", chars(ssdt));
    fs::create_directory(dir.path() / "dynamic");
    std::vector<Table> ts = loadTableDirectory(dir.path());
    EXPECT_THAT(signaturesAndSources(ts),
                ElementsAre("DSDT DSDT", "SSDT SSDT1", "SSDT SSDT2",
                            "SSDT SSDT10", "PCCT PCCT", "APIC APIC"));
    ASSERT_NE(findTable(ts, "PCCT"), nullptr);
    EXPECT_EQ(findTable(ts, "PCCT")->header.signature, "PCCT");
    EXPECT_EQ(findTable(ts, "FACP"), nullptr);
}

TEST(TableDirectoryTest, OptionalTablesMayBeMissing)
{
    TempTree dir;
    dir.write("DSDT", chars(samples::makeTable("DSDT", {})));
    dir.write("SSDT", chars(samples::makeTable("SSDT", {})));
    EXPECT_THAT(signaturesAndSources(loadTableDirectory(dir.path())),
                ElementsAre("DSDT DSDT", "SSDT SSDT"));
}

TEST(TableDirectoryTest, MissingDsdtIsAnError)
{
    TempTree dir;
    dir.write("APIC", chars(samples::sampleMadt()));
    auto e = acpiErrorOf([&] { (void)loadTableDirectory(dir.path()); });
    ASSERT_TRUE(e);
    EXPECT_THAT(e->what(), HasSubstr(dir.path().string() + ": no DSDT"));
}

TEST(TableDirectoryTest, MissingDirectoryIsAnError)
{
    TempTree dir;
    auto e = acpiErrorOf([&] { (void)loadTableDirectory(dir.path() / "x"); });
    ASSERT_TRUE(e);
    EXPECT_THAT(e->what(), HasSubstr("cannot list"));
}

TEST(TableDirectoryTest, SignatureMustMatchFileName)
{
    TempTree dir;
    dir.write("DSDT", chars(samples::makeTable("DSDT", {})));
    dir.write("PCCT", chars(samples::sampleMadt()));
    auto e = acpiErrorOf([&] { (void)loadTableDirectory(dir.path()); });
    expectOffset(e, 0);
    EXPECT_THAT(e->what(), HasSubstr("APIC table"));
    EXPECT_THAT(e->what(), HasSubstr("expected signature PCCT"));
}

TEST(TableDirectoryTest, BadTableInDirectoryNamesTheFile)
{
    TempTree dir;
    dir.write("DSDT", chars(samples::makeTable("DSDT", {})));
    Bytes ssdt = samples::makeTable("SSDT", Bytes(8, 0));
    ssdt[40] = 1; // checksum now wrong
    fs::path p = dir.write("SSDT3", chars(ssdt));
    auto e = acpiErrorOf([&] { (void)loadTableDirectory(dir.path()); });
    expectOffset(e, 9);
    EXPECT_THAT(e->what(), HasSubstr("SSDT table " + p.string()));
}

// ---- real firmware dumps ----

fs::path fixtureDir()
{
    if (const char* env = std::getenv("CPPCGOV_ACPI_FIXTURES"))
    {
        return env;
    }
    return CPPCGOV_ACPI_FIXTURES;
}

class RealTablesTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        dir_ = fixtureDir();
        if (!fs::is_directory(dir_))
        {
            GTEST_SKIP() << "no real ACPI tables at " << dir_.string();
        }
    }

    Table load(const std::string& name) const
    {
        return loadTableFile(dir_ / name);
    }

    fs::path dir_;
};

TEST_F(RealTablesTest, AllDumpsHaveValidHeaders)
{
    std::size_t count = 0;
    for (const auto& entry : fs::directory_iterator(dir_))
    {
        if (entry.path().extension() != ".dat")
        {
            continue;
        }
        SCOPED_TRACE(entry.path().string());
        Table t = loadTableFile(entry.path());
        EXPECT_EQ(t.bytes.size(), fs::file_size(entry.path()));
        ++count;
    }
    EXPECT_GE(count, 7U);
}

TEST_F(RealTablesTest, AltraPcctSubspace2)
{
    Table t = load("ampere-altra-pcct.dat");
    EXPECT_EQ(t.header.signature, "PCCT");
    EXPECT_EQ(t.header.oemId, "Ampere");
    Pcct p = parsePcct(t);
    EXPECT_EQ(p.flags, 1U);
    ASSERT_EQ(p.subspaces.size(), 15U);
    for (const PccSubspace& s : p.subspaces)
    {
        EXPECT_TRUE(s.isType(PccType::hwReducedType2)) << unsigned{s.id};
        EXPECT_EQ(s.length, 90U);
        EXPECT_EQ(s.addressLength, 0x4000U);
        EXPECT_EQ(s.platformAckWriteMask, 0x10001U);
    }
    const PccSubspace& s = p.subspaces[2];
    EXPECT_EQ(s.id, 2U);
    EXPECT_EQ(s.offset, 0xE4U);
    EXPECT_EQ(s.platformInterrupt, 0x3AU);
    EXPECT_EQ(s.platformInterruptFlags, 0U);
    EXPECT_EQ(s.baseAddress, 0x807F8108000U);
    EXPECT_EQ(s.addressLength, 0x4000U);
    EXPECT_EQ(s.doorbell, (RegisterDesc{.space = 0,
                                        .bitWidth = 32,
                                        .bitOffset = 0,
                                        .accessSize = 3,
                                        .address = 0x100001542010}));
    EXPECT_EQ(s.doorbellPreserveMask, 0U);
    EXPECT_EQ(s.doorbellWriteMask, 0x53800140U);
    EXPECT_EQ(s.nominalLatencyUs, 100U);
    EXPECT_EQ(s.maxPeriodicAccessRate, 0U);
    EXPECT_EQ(s.minRequestTurnaroundUs, 110U);
    EXPECT_EQ(s.platformAck, (RegisterDesc{.space = 0,
                                           .bitWidth = 32,
                                           .bitOffset = 0,
                                           .accessSize = 3,
                                           .address = 0x100001542020}));
    EXPECT_EQ(s.platformAckPreserveMask, 0U);
    EXPECT_TRUE(s.commandComplete.isNull());
    // Subspaces 0 and 1 differ: a 1000 us latency and no turnaround.
    EXPECT_EQ(p.subspaces[0].baseAddress, 0x807F8100000U);
    EXPECT_EQ(p.subspaces[0].nominalLatencyUs, 1000U);
    EXPECT_EQ(p.subspaces[0].minRequestTurnaroundUs, 0U);
}

TEST_F(RealTablesTest, AltraMadtHas32Cpus)
{
    Madt m = parseMadt(load("ampere-altra-apic.dat"));
    ASSERT_EQ(m.gicc.size(), 32U);
    for (const GiccEntry& g : m.gicc)
    {
        EXPECT_EQ(g.length, 80U);
        EXPECT_EQ(g.flags, 1U);
        // The UID is MPIDR Aff2:Aff1.
        EXPECT_EQ(g.acpiProcessorUid, g.mpidr >> 8);
    }
    EXPECT_EQ(m.gicc[0].offset, 0x2CU);
    EXPECT_EQ(m.gicc[0].mpidr, 0x100000U);
    EXPECT_EQ(m.gicc[31].mpidr, 0x270100U);
    EXPECT_THAT(
        logicalCpuUids(m),
        ElementsAreArray<std::uint32_t>(
            {0x1000, 0x1800, 0x1600, 0x1E00, 0x0800, 0x2000, 0x0E00, 0x2600,
             0x1100, 0x1900, 0x1700, 0x1F00, 0x0900, 0x2100, 0x0F00, 0x2700,
             0x1001, 0x1801, 0x1601, 0x1E01, 0x0801, 0x2001, 0x0E01, 0x2601,
             0x1101, 0x1901, 0x1701, 0x1F01, 0x0901, 0x2101, 0x0F01, 0x2701}));
}

TEST_F(RealTablesTest, OrionMadtHas12Cpus)
{
    Madt m = parseMadt(load("orion-o6-apic.dat"));
    ASSERT_EQ(m.gicc.size(), 12U);
    EXPECT_THAT(logicalCpuUids(m),
                ElementsAre(0U, 1U, 2U, 3U, 4U, 5U, 6U, 7U, 8U, 9U, 10U, 11U));
    // The boot CPU (UID 0) is core 10; UIDs 1-9 are cores 0-8.
    EXPECT_EQ(m.gicc[0].mpidr, 0xA00U);
    EXPECT_EQ(m.gicc[1].mpidr, 0x000U);
    EXPECT_EQ(m.gicc[10].mpidr, 0x900U);
    EXPECT_EQ(m.gicc[11].mpidr, 0xB00U);
    for (const GiccEntry& g : m.gicc)
    {
        EXPECT_EQ(g.length, 80U);
        EXPECT_EQ(g.efficiencyClass, 0U);
    }
}

TEST_F(RealTablesTest, OrionDirectoryLoads)
{
    TempTree dir;
    fs::create_symlink(dir_ / "orion-o6-dsdt.dat", dir.path() / "DSDT");
    fs::create_symlink(dir_ / "orion-o6-ssdt2.dat", dir.path() / "SSDT2");
    fs::create_symlink(dir_ / "orion-o6-ssdt1.dat", dir.path() / "SSDT1");
    fs::create_symlink(dir_ / "orion-o6-apic.dat", dir.path() / "APIC");
    std::vector<Table> ts = loadTableDirectory(dir.path());
    EXPECT_THAT(signaturesAndSources(ts),
                ElementsAre("DSDT DSDT", "SSDT SSDT1", "SSDT SSDT2",
                            "APIC APIC"));
    EXPECT_EQ(findTable(ts, "PCCT"), nullptr);
}

} // namespace
} // namespace cppc::acpi
