// SPDX-License-Identifier: Apache-2.0
// The PCCT reader on synthetic tables: every field of every subspace type
// at its specified offset, reserved types, bad lengths naming subspace and
// offset, the subspace limit and a table cut at every length.
#include "acpi_test_support.hpp"
#include "lib/acpi/pcct.hpp"
#include "lib/acpi/table.hpp"
#include "lib/text.hpp"
#include "tests/fuzz/acpi_samples.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::acpi
{
namespace
{

using samples::Bytes;
using test::acpiErrorOf;
using test::cutEverywhere;
using test::expectOffset;
using test::little;
using test::table;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

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

} // namespace
} // namespace cppc::acpi
