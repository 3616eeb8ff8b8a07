// The ACPI table readers: ByteReader, the table header and checksum, file
// and directory loading, MADT and PCCT, on synthetic tables and on real
// firmware dumps (when ../shared/fixtures/acpi exists).
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
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::acpi
{
namespace
{

namespace fs = std::filesystem;
using samples::Bytes;
using test::TempTree;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Runs `f`, which must throw AcpiError; returns it (or nullopt after
// recording a failure).
std::optional<AcpiError> acpiErrorOf(const std::function<void()>& f)
{
    try
    {
        f();
    }
    catch (const AcpiError& e)
    {
        return e;
    }
    ADD_FAILURE() << "no AcpiError";
    return std::nullopt;
}

// Checks that `e` names `offset`, both in offset() and in the message.
void expectOffset(const std::optional<AcpiError>& e, std::size_t offset)
{
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->offset(), offset) << e->what();
    EXPECT_THAT(e->what(), HasSubstr("offset " + hex(offset) + ":"));
}

Table table(const Bytes& bytes, std::string source = "sample")
{
    return parseTable(bytes, std::move(source));
}

std::uint64_t little(const Bytes& b, std::size_t at, std::size_t size)
{
    std::uint64_t v = 0;
    for (std::size_t i = size; i-- > 0;)
    {
        v = v << 8 | b.at(at + i);
    }
    return v;
}

// The bytes of `b` as characters, for TempTree::write().
std::string_view chars(const Bytes& b)
{
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

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

// Cuts a table at every length from the header on and fixes up the
// header: the reader must succeed where the cut falls on a boundary
// (returning as many items as end before the cut) and elsewhere throw
// AcpiError naming an offset inside the cut table.
template <typename Parse>
void cutEverywhere(const Bytes& full,
                   const std::vector<std::size_t>& boundaries,
                   const std::vector<std::size_t>& itemEnds, Parse parse)
{
    for (std::size_t n = tableHeaderSize; n <= full.size(); ++n)
    {
        SCOPED_TRACE(n);
        Bytes cut(full.begin(), full.begin() + static_cast<long>(n));
        samples::setLength(cut, static_cast<std::uint32_t>(n));
        Table t = table(cut);
        if (std::find(boundaries.begin(), boundaries.end(), n) !=
            boundaries.end())
        {
            auto complete = static_cast<std::size_t>(
                std::count_if(itemEnds.begin(), itemEnds.end(),
                              [n](std::size_t end) { return end <= n; }));
            EXPECT_EQ(parse(t), complete);
            continue;
        }
        auto e = acpiErrorOf([&] { (void)parse(t); });
        ASSERT_TRUE(e && e->offset());
        EXPECT_LE(*e->offset(), n);
        EXPECT_THAT(e->what(), HasSubstr("offset 0x"));
    }
}

TEST(MadtTest, TruncatedAtEveryLength)
{
    const Bytes full = samples::sampleMadt();
    std::vector<std::size_t> boundaries{madtEntriesOffset};
    std::vector<std::size_t> giccEnds;
    std::size_t at = madtEntriesOffset;
    for (std::size_t len : {76, 80, 82, 80, 80, 24, 16, 20, 20})
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

// ---- PCCT ----

void expectSameRegister(const RegisterDesc& got, const RegisterDesc& want,
                        const char* name)
{
    EXPECT_EQ(got, want) << name << ": address " << hex(got.address) << " want "
                         << hex(want.address);
}

void expectSameSubspace(const PccSubspace& got, const PccSubspace& want)
{
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.length, want.length);
    EXPECT_EQ(got.knownType, want.knownType);
    EXPECT_EQ(got.platformInterrupt, want.platformInterrupt);
    EXPECT_EQ(got.platformInterruptFlags, want.platformInterruptFlags);
    EXPECT_EQ(got.baseAddress, want.baseAddress);
    EXPECT_EQ(got.addressLength, want.addressLength);
    expectSameRegister(got.doorbell, want.doorbell, "doorbell");
    EXPECT_EQ(got.doorbellPreserveMask, want.doorbellPreserveMask);
    EXPECT_EQ(got.doorbellWriteMask, want.doorbellWriteMask);
    EXPECT_EQ(got.nominalLatencyUs, want.nominalLatencyUs);
    EXPECT_EQ(got.maxPeriodicAccessRate, want.maxPeriodicAccessRate);
    EXPECT_EQ(got.minRequestTurnaroundUs, want.minRequestTurnaroundUs);
    expectSameRegister(got.platformAck, want.platformAck, "platformAck");
    EXPECT_EQ(got.platformAckPreserveMask, want.platformAckPreserveMask);
    EXPECT_EQ(got.platformAckWriteMask, want.platformAckWriteMask);
    expectSameRegister(got.commandComplete, want.commandComplete,
                       "commandComplete");
    EXPECT_EQ(got.commandCompleteMask, want.commandCompleteMask);
    expectSameRegister(got.commandUpdate, want.commandUpdate, "commandUpdate");
    EXPECT_EQ(got.commandUpdatePreserveMask, want.commandUpdatePreserveMask);
    EXPECT_EQ(got.commandUpdateSetMask, want.commandUpdateSetMask);
    expectSameRegister(got.errorStatus, want.errorStatus, "errorStatus");
    EXPECT_EQ(got.errorStatusMask, want.errorStatusMask);
    EXPECT_EQ(got.version, want.version);
}

class PcctTypeTest : public ::testing::TestWithParam<std::uint8_t>
{};

TEST_P(PcctTypeTest, ReadsEveryField)
{
    const std::uint8_t type = GetParam();
    PccSubspace filler = samples::sampleSubspace(2, 0);
    PccSubspace want = samples::sampleSubspace(type, 1);
    Pcct p = parsePcct(table(samples::pcctOf({filler, want})));
    EXPECT_EQ(p.flags, 1U);
    EXPECT_TRUE(p.platformInterrupt());
    ASSERT_EQ(p.subspaces.size(), 2U);
    EXPECT_EQ(p.subspaces[1].offset, pcctSubspacesOffset + 90);
    expectSameSubspace(p.subspaces[1], want);
    EXPECT_TRUE(p.subspaces[1].isType(static_cast<PccType>(type)));
}

INSTANTIATE_TEST_SUITE_P(Types, PcctTypeTest,
                         ::testing::Values(0, 1, 2, 3, 4, 5));

// Where each field sits in its subspace, as ACPI and ACPICA's actbl2.h lay
// them out; the values the reader returns must be the bytes found there.
struct FieldAt
{
    unsigned type;
    std::size_t offset; // in the subspace
    std::size_t size;   // bytes; a GAS is checked by its 8-byte address
    const char* name;
    std::function<std::uint64_t(const PccSubspace&)> get;
};

std::vector<FieldAt> fieldLayout()
{
    using S = const PccSubspace&;
    std::vector<FieldAt> f;
    auto add = [&f](unsigned t, std::size_t off, std::size_t size,
                    const char* name, auto get) {
        f.push_back({t, off, size, name, get});
    };
    for (unsigned t : {0U, 1U, 2U})
    {
        add(t, 8, 8, "base", [](S s) { return s.baseAddress; });
        add(t, 16, 8, "length", [](S s) { return s.addressLength; });
        add(t, 28, 8, "doorbell", [](S s) { return s.doorbell.address; });
        add(t, 36, 8, "preserve", [](S s) { return s.doorbellPreserveMask; });
        add(t, 44, 8, "write", [](S s) { return s.doorbellWriteMask; });
        add(t, 52, 4, "latency", [](S s) { return s.nominalLatencyUs; });
        add(t, 56, 4, "rate", [](S s) { return s.maxPeriodicAccessRate; });
        add(t, 60, 2, "turnaround",
            [](S s) { return s.minRequestTurnaroundUs; });
    }
    for (unsigned t : {1U, 2U, 3U, 4U})
    {
        add(t, 2, 4, "interrupt", [](S s) { return s.platformInterrupt; });
        add(t, 6, 1, "flags", [](S s) { return s.platformInterruptFlags; });
    }
    add(2, 66, 8, "ack", [](S s) { return s.platformAck.address; });
    add(2, 74, 8, "ackPreserve", [](S s) { return s.platformAckPreserveMask; });
    add(2, 82, 8, "ackWrite", [](S s) { return s.platformAckWriteMask; });
    for (unsigned t : {3U, 4U})
    {
        add(t, 8, 8, "base", [](S s) { return s.baseAddress; });
        add(t, 16, 4, "length", [](S s) { return s.addressLength; });
        add(t, 24, 8, "doorbell", [](S s) { return s.doorbell.address; });
        add(t, 32, 8, "preserve", [](S s) { return s.doorbellPreserveMask; });
        add(t, 40, 8, "write", [](S s) { return s.doorbellWriteMask; });
        add(t, 48, 4, "latency", [](S s) { return s.nominalLatencyUs; });
        add(t, 52, 4, "rate", [](S s) { return s.maxPeriodicAccessRate; });
        add(t, 56, 4, "turnaround",
            [](S s) { return s.minRequestTurnaroundUs; });
        add(t, 64, 8, "ack", [](S s) { return s.platformAck.address; });
        add(t, 72, 8, "ackPreserve",
            [](S s) { return s.platformAckPreserveMask; });
        add(t, 80, 8, "ackSet", [](S s) { return s.platformAckWriteMask; });
        add(t, 100, 8, "complete",
            [](S s) { return s.commandComplete.address; });
        add(t, 108, 8, "completeMask",
            [](S s) { return s.commandCompleteMask; });
        add(t, 120, 8, "update", [](S s) { return s.commandUpdate.address; });
        add(t, 128, 8, "updatePreserve",
            [](S s) { return s.commandUpdatePreserveMask; });
        add(t, 136, 8, "updateSet", [](S s) { return s.commandUpdateSetMask; });
        add(t, 148, 8, "error", [](S s) { return s.errorStatus.address; });
        add(t, 156, 8, "errorMask", [](S s) { return s.errorStatusMask; });
    }
    add(5, 2, 2, "version", [](S s) { return s.version; });
    add(5, 4, 8, "base", [](S s) { return s.baseAddress; });
    add(5, 12, 8, "length", [](S s) { return s.addressLength; });
    add(5, 24, 8, "doorbell", [](S s) { return s.doorbell.address; });
    add(5, 32, 8, "preserve", [](S s) { return s.doorbellPreserveMask; });
    add(5, 40, 8, "write", [](S s) { return s.doorbellWriteMask; });
    add(5, 52, 8, "complete", [](S s) { return s.commandComplete.address; });
    add(5, 60, 8, "completeMask", [](S s) { return s.commandCompleteMask; });
    add(5, 72, 8, "error", [](S s) { return s.errorStatus.address; });
    add(5, 80, 8, "errorMask", [](S s) { return s.errorStatusMask; });
    add(5, 88, 4, "latency", [](S s) { return s.nominalLatencyUs; });
    add(5, 92, 4, "turnaround", [](S s) { return s.minRequestTurnaroundUs; });
    return f;
}

TEST(PcctTest, FieldsSitAtTheirSpecifiedOffsets)
{
    const Bytes bytes = samples::pcctOf(samples::allSampleSubspaces());
    const Pcct p = parsePcct(table(bytes));
    for (const FieldAt& f : fieldLayout())
    {
        SCOPED_TRACE(
            std::string("type ") + std::to_string(f.type) + " " + f.name);
        const PccSubspace& s = p.subspaces.at(f.type);
        ASSERT_EQ(s.type, f.type);
        std::uint64_t value = f.get(s);
        EXPECT_NE(value, 0U) << "sample values are non-zero";
        EXPECT_EQ(little(bytes, s.offset + f.offset, f.size), value);
    }
}

TEST(PcctTest, SubspaceIdsAreTableIndexes)
{
    const auto all = samples::allSampleSubspaces();
    Pcct p = parsePcct(table(samples::pcctOf(all)));
    ASSERT_EQ(p.subspaces.size(), all.size());
    std::size_t offset = pcctSubspacesOffset;
    for (std::size_t i = 0; i < all.size(); ++i)
    {
        SCOPED_TRACE(i);
        EXPECT_EQ(p.subspaces[i].id, i);
        EXPECT_EQ(p.subspaces[i].offset, offset);
        expectSameSubspace(p.subspaces[i], all[i]);
        offset += all[i].length;
    }
}

TEST(PcctTest, ReservedTypesAreKeptWithoutFields)
{
    std::vector<Bytes> raw;
    for (std::uint8_t type :
         {std::uint8_t{6}, std::uint8_t{0x80}, std::uint8_t{0xFF}})
    {
        for (std::uint8_t length :
             {std::uint8_t{2}, std::uint8_t{13}, std::uint8_t{255}})
        {
            raw.push_back(samples::encodeSubspace(
                samples::sampleSubspace(type, 0, length)));
            if (raw.back().size() > 5)
            {
                raw.back()[5] = 0xEE; // junk in the body
            }
        }
    }
    raw.push_back(samples::encodeSubspace(samples::sampleSubspace(3, 0)));
    Pcct p = parsePcct(table(samples::pcctTable(raw, 0)));
    EXPECT_FALSE(p.platformInterrupt());
    ASSERT_EQ(p.subspaces.size(), 10U);
    for (std::size_t i = 0; i < 9; ++i)
    {
        const PccSubspace& s = p.subspaces[i];
        EXPECT_FALSE(s.knownType);
        EXPECT_EQ(s.baseAddress, 0U);
        EXPECT_TRUE(s.doorbell.isNull());
    }
    EXPECT_EQ(p.subspaces[8].type, 0xFFU);
    EXPECT_EQ(p.subspaces[8].length, 255U);
    EXPECT_TRUE(p.subspaces[9].knownType);
    EXPECT_EQ(p.subspaces[9].id, 9U);
    expectSameSubspace(p.subspaces[9], [] {
        PccSubspace s = samples::sampleSubspace(3, 0);
        s.id = 9;
        return s;
    }());
}

struct BadLengthCase
{
    std::uint8_t type;
    int delta;
};

class PcctBadLengthTest : public ::testing::TestWithParam<BadLengthCase>
{};

TEST_P(PcctBadLengthTest, NamesSubspaceAndOffset)
{
    const BadLengthCase& c = GetParam();
    PccSubspace first = samples::sampleSubspace(1, 0);
    Bytes bad = samples::encodeSubspace(samples::sampleSubspace(c.type, 1));
    bad[1] = static_cast<std::uint8_t>(bad[1] + c.delta);
    bad.resize(bad[1] < 2 ? 2 : bad[1], 0);
    Table t = table(samples::pcctTable({samples::encodeSubspace(first), bad}),
                    "pcct.dat");
    auto e = acpiErrorOf([&] { (void)parsePcct(t); });
    expectOffset(e, pcctSubspacesOffset + 62);
    EXPECT_THAT(e->what(), HasSubstr("PCCT table pcct.dat"));
    EXPECT_THAT(e->what(), HasSubstr("subspace 1: length"));
    EXPECT_THAT(e->what(),
                HasSubstr("the length of type " + std::to_string(c.type)));
}

INSTANTIATE_TEST_SUITE_P(
    Lengths, PcctBadLengthTest,
    ::testing::Values(
        BadLengthCase{0, -1}, BadLengthCase{0, 1}, BadLengthCase{1, -60},
        BadLengthCase{1, 28}, BadLengthCase{2, -28}, BadLengthCase{2, 1},
        BadLengthCase{3, -1}, BadLengthCase{3, 1}, BadLengthCase{4, -74},
        BadLengthCase{4, 91}, BadLengthCase{5, -1}, BadLengthCase{5, 2}));

struct BadPcctCase
{
    const char* name;
    std::vector<Bytes> subspaces;
    std::size_t offset;
    const char* text;
};

class BadPcctTest : public ::testing::TestWithParam<BadPcctCase>
{};

TEST_P(BadPcctTest, IsAnAcpiErrorNamingTheOffset)
{
    const BadPcctCase& c = GetParam();
    Table t = table(samples::pcctTable(c.subspaces));
    auto e = acpiErrorOf([&] { (void)parsePcct(t); });
    expectOffset(e, c.offset);
    EXPECT_THAT(e->what(), HasSubstr(c.text));
}

const Bytes type2 = samples::encodeSubspace(samples::sampleSubspace(2, 0));

INSTANTIATE_TEST_SUITE_P(
    Subspaces, BadPcctTest,
    ::testing::Values(
        BadPcctCase{"ReservedLengthZero",
                    {type2, {9, 0}},
                    138,
                    "subspace 1: length 0 is below 2"},
        BadPcctCase{"ReservedLengthOne",
                    {{6, 1}},
                    48,
                    "subspace 0: length 1 is below 2"},
        BadPcctCase{"ReservedPastEnd",
                    {type2, {6, 10, 0}},
                    138,
                    "subspace 1 (type 6, length 10) runs past"},
        BadPcctCase{"KnownPastEnd",
                    {type2, Bytes(type2.begin(), type2.begin() + 89)},
                    138,
                    "subspace 1 (type 2, length 90) runs past"},
        BadPcctCase{
            "LoneByte", {type2, {2}}, 138, "subspace 1: header needs 2 bytes"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(PcctTest, AtMost256Subspaces)
{
    std::vector<Bytes> raw(256, Bytes{0x42, 2});
    Pcct p = parsePcct(table(samples::pcctTable(raw)));
    ASSERT_EQ(p.subspaces.size(), 256U);
    EXPECT_EQ(p.subspaces.back().id, 255U);
    raw.push_back({0x42, 2});
    auto e =
        acpiErrorOf([&] { (void)parsePcct(table(samples::pcctTable(raw))); });
    expectOffset(e, pcctSubspacesOffset + 512);
    EXPECT_THAT(e->what(), HasSubstr("subspace 256: more than 256"));
}

TEST(PcctTest, WrongSignatureOrShortTable)
{
    expectOffset(
        acpiErrorOf([] { (void)parsePcct(table(samples::sampleMadt())); }), 0);
    expectOffset(acpiErrorOf([] {
                     (void)parsePcct(
                         table(samples::makeTable("PCCT", Bytes(11, 0))));
                 }),
                 40);
}

TEST(PcctTest, TruncatedAtEveryLength)
{
    const auto all = samples::allSampleSubspaces();
    const Bytes full = samples::pcctOf(all);
    std::vector<std::size_t> ends;
    std::size_t at = pcctSubspacesOffset;
    for (const PccSubspace& s : all)
    {
        at += s.length;
        ends.push_back(at);
    }
    ASSERT_EQ(at, full.size());
    std::vector<std::size_t> boundaries = ends;
    boundaries.push_back(pcctSubspacesOffset);
    cutEverywhere(full, boundaries, ends,
                  [](const Table& t) { return parsePcct(t).subspaces.size(); });
    // Cut without fixing the header: the table itself is refused.
    for (std::size_t n = 0; n < full.size(); ++n)
    {
        Bytes cut(full.begin(), full.begin() + static_cast<long>(n));
        auto e = acpiErrorOf([&] { (void)table(cut); });
        ASSERT_TRUE(e && e->offset());
    }
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
