// SPDX-License-Identifier: Apache-2.0
// Synthetic ACPI tables built byte by byte: MADTs with GICC and other
// entries, and PCCTs with every subspace type, all with correct checksums.
// The unit tests check the readers against them and the fuzzers start from
// them (fuzz_seeds writes them out as the seed corpus).
#pragma once

#include "lib/acpi/madt.hpp"
#include "lib/acpi/pcct.hpp"
#include "lib/acpi/table.hpp"
#include "lib/cpc_descriptor.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cppc::acpi::samples
{

using Bytes = std::vector<std::uint8_t>;

// Appends little-endian values to a byte vector.
class Writer
{
  public:
    Writer& u8(std::uint64_t v)
    {
        return little(v, 1);
    }
    Writer& u16(std::uint64_t v)
    {
        return little(v, 2);
    }
    Writer& u32(std::uint64_t v)
    {
        return little(v, 4);
    }
    Writer& u64(std::uint64_t v)
    {
        return little(v, 8);
    }
    Writer& zeros(std::size_t count)
    {
        bytes_.insert(bytes_.end(), count, 0);
        return *this;
    }
    // `text` padded with spaces (or cut) to `width` bytes.
    Writer& chars(std::string_view text, std::size_t width)
    {
        for (std::size_t i = 0; i < width; ++i)
        {
            bytes_.push_back(
                static_cast<std::uint8_t>(i < text.size() ? text[i] : ' '));
        }
        return *this;
    }
    Writer& gas(const RegisterDesc& r)
    {
        return u8(r.space)
            .u8(r.bitWidth)
            .u8(r.bitOffset)
            .u8(r.accessSize)
            .u64(r.address);
    }
    Writer& append(const Bytes& more)
    {
        bytes_.insert(bytes_.end(), more.begin(), more.end());
        return *this;
    }
    const Bytes& bytes() const
    {
        return bytes_;
    }

  private:
    Writer& little(std::uint64_t v, std::size_t count)
    {
        for (std::size_t i = 0; i < count; ++i)
        {
            bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
        }
        return *this;
    }

    Bytes bytes_;
};

// Sets the checksum byte (offset 9) so that all bytes sum to 0 mod 256.
inline void fixChecksum(Bytes& table)
{
    if (table.size() < 10)
    {
        return;
    }
    table[9] = 0;
    unsigned sum = 0;
    for (std::uint8_t b : table)
    {
        sum += b;
    }
    table[9] = static_cast<std::uint8_t>(256 - sum % 256);
}

// Sets the header's length field (offset 4) and fixes the checksum.
inline void setLength(Bytes& table, std::uint32_t length)
{
    for (std::size_t i = 0; i < 4 && 4 + i < table.size(); ++i)
    {
        table[4 + i] = static_cast<std::uint8_t>(length >> (8 * i));
    }
    fixChecksum(table);
}

// A table: the 36-byte header (length and checksum correct) and `body`.
inline Bytes makeTable(std::string_view signature, const Bytes& body,
                       std::uint8_t revision = 1)
{
    Writer w;
    w.chars(signature, 4)
        .u32(tableHeaderSize + body.size())
        .u8(revision)
        .u8(0)
        .chars("CPPCGV", 6)
        .chars("SAMPLES", 8)
        .u32(1)
        .chars("TEST", 4)
        .u32(0x20260101)
        .append(body);
    Bytes table = w.bytes();
    fixChecksum(table);
    return table;
}

// ---- MADT ----

struct GiccSpec
{
    std::uint32_t uid = 0;
    std::uint32_t flags = 1; // enabled
    std::uint64_t mpidr = 0;
    std::uint8_t length = 80;
    std::uint32_t cpuInterfaceNumber = 0;
    std::uint8_t efficiencyClass = 0;
};

// A GICC entry of spec.length bytes (76, 80 or 82 in real tables; shorter
// ones are cut, for error tests). Fields the readers skip get
// recognisable non-zero values.
inline Bytes giccEntry(const GiccSpec& spec)
{
    Writer w;
    w.u8(madtGiccType)
        .u8(spec.length)
        .u16(0)
        .u32(spec.cpuInterfaceNumber)
        .u32(spec.uid)
        .u32(spec.flags)
        .u32(0)                   // parking protocol version
        .u32(0x17)                // performance interrupt
        .u64(0)                   // parked address
        .u64(0xE010000)           // physical base address
        .u64(0xAAAA0000)          // GICV
        .u64(0xBBBB0000)          // GICH
        .u32(0x19)                // VGIC maintenance interrupt
        .u64(0xCCCC0000)          // GICR base address
        .u64(spec.mpidr)          // offset 68
        .u8(spec.efficiencyClass) // offset 76
        .u8(0)                    // reserved
        .u16(0x15)                // SPE overflow interrupt
        .u16(0x16);               // TRBE interrupt (ACPI 6.5)
    Bytes b = w.bytes();
    b.resize(spec.length < 2 ? 2 : spec.length, 0);
    return b;
}

// A GIC distributor entry (type 0x0C, 24 bytes).
inline Bytes gicdEntry()
{
    Writer w;
    w.u8(0x0C).u8(24).u16(0).u32(0).u64(0x30000000).u32(0).u8(3).zeros(3);
    return w.bytes();
}

// A GIC redistributor entry (type 0x0E, 16 bytes).
inline Bytes gicrEntry()
{
    Writer w;
    w.u8(0x0E).u8(16).u16(0).u64(0x30100000).u32(0x100000);
    return w.bytes();
}

// A GIC ITS entry (type 0x0F, 20 bytes).
inline Bytes itsEntry(std::uint32_t id)
{
    Writer w;
    w.u8(0x0F).u8(20).u16(0).u32(id).u64(0x30040000 + 0x20000 * id).u32(0);
    return w.bytes();
}

// A MADT with the given entries after its 8 fixed bytes.
inline Bytes madtTable(const std::vector<Bytes>& entries,
                       std::uint32_t flags = 0)
{
    Writer body;
    body.u32(0).u32(flags);
    for (const Bytes& e : entries)
    {
        body.append(e);
    }
    return makeTable("APIC", body.bytes(), 5);
}

// A MADT like a small Arm server's: four GICC entries of the three lengths
// (one disabled, one online capable), then distributor, redistributor and
// ITS entries.
inline Bytes sampleMadt()
{
    return madtTable({
        giccEntry({.uid = 0x100, .mpidr = 0x10000, .length = 76}),
        giccEntry({.uid = 0x101,
                   .mpidr = 0x10100,
                   .length = 80,
                   .cpuInterfaceNumber = 1,
                   .efficiencyClass = 1}),
        giccEntry({.uid = 0x200, .flags = 0, .mpidr = 0x20000, .length = 82}),
        giccEntry({.uid = 0x201, .flags = 0x8, .mpidr = 0x20100}),
        giccEntry({.uid = 0x202, .flags = 0x9, .mpidr = 0x20200}),
        gicdEntry(),
        gicrEntry(),
        itsEntry(0),
        itsEntry(1),
    });
}

// ---- PCCT ----

// A register with values derived from `seed`, distinct per register.
inline RegisterDesc sampleRegister(std::uint8_t seed)
{
    return {.space = 0,
            .bitWidth = 32,
            .bitOffset = static_cast<std::uint8_t>(seed & 7),
            .accessSize = 3,
            .address = 0x100001540000ULL + 0x100ULL * seed};
}

// A subspace of `type` with every field that type has set to a distinct
// value (derived from the type and `id`) and the others zero. For a
// reserved type only the header fields are set, with `length`.
inline PccSubspace sampleSubspace(std::uint8_t type, std::uint8_t id,
                                  std::uint8_t length = 8)
{
    PccSubspace s;
    s.id = id;
    s.type = type;
    s.knownType = type < pccSubspaceLengths.size();
    if (!s.knownType)
    {
        s.length = length;
        return s;
    }
    s.length = pccSubspaceLengths[type];
    const auto t = static_cast<std::uint64_t>(type) << 8 | id;
    const bool extended = type == 3 || type == 4;
    if (type >= 1 && type <= 4)
    {
        s.platformInterrupt = static_cast<std::uint32_t>(0x38 + t);
        s.platformInterruptFlags = 0x3;
    }
    s.baseAddress = 0x807F8100000ULL + (t << 14);
    s.addressLength = extended ? 0x4000 : 0x123456789ULL;
    s.doorbell = sampleRegister(static_cast<std::uint8_t>(1 + 8 * type));
    s.doorbellPreserveMask = 0xFFFF0000FFFF0000ULL | t;
    s.doorbellWriteMask = 0x53800140ULL | t << 32;
    s.nominalLatencyUs = static_cast<std::uint32_t>(100 + t);
    if (type <= 4)
    {
        s.maxPeriodicAccessRate = static_cast<std::uint32_t>(6000 + t);
    }
    s.minRequestTurnaroundUs =
        static_cast<std::uint32_t>(type >= 3 ? 0x10000 + t : 110 + t);
    if (type >= 2 && type <= 4)
    {
        s.platformAck = sampleRegister(static_cast<std::uint8_t>(2 + 8 * type));
        s.platformAckPreserveMask = 0xF0F0F0F0ULL << 8 | t;
        s.platformAckWriteMask = 0x10001ULL << 16 | t;
    }
    if (type >= 3)
    {
        s.commandComplete =
            sampleRegister(static_cast<std::uint8_t>(3 + 8 * type));
        s.commandCompleteMask = 0x1ULL << 40 | t;
        s.errorStatus = sampleRegister(static_cast<std::uint8_t>(4 + 8 * type));
        s.errorStatusMask = 0x4ULL << 48 | t;
    }
    if (extended)
    {
        s.commandUpdate =
            sampleRegister(static_cast<std::uint8_t>(5 + 8 * type));
        s.commandUpdatePreserveMask = 0xFFULL << 24 | t;
        s.commandUpdateSetMask = 0x2ULL << 56 | t;
    }
    if (type == 5)
    {
        s.version = static_cast<std::uint16_t>(0x0100 + id);
    }
    return s;
}

// The bytes of `s` as the PCCT stores them (ACPI 6.5 section 14.1). A
// reserved type gets its header and zeros up to s.length.
inline Bytes encodeSubspace(const PccSubspace& s)
{
    Writer w;
    w.u8(s.type).u8(s.length);
    if (!s.knownType || s.type >= pccSubspaceLengths.size())
    {
        w.zeros(s.length < 2 ? 0 : s.length - 2U);
        return w.bytes();
    }
    const bool extended = s.type == 3 || s.type == 4;
    if (s.type == 0)
    {
        w.zeros(6);
    }
    else if (s.type <= 4)
    {
        w.u32(s.platformInterrupt).u8(s.platformInterruptFlags).u8(0);
    }
    else
    {
        w.u16(s.version);
    }
    w.u64(s.baseAddress);
    if (extended)
    {
        w.u32(s.addressLength);
    }
    else
    {
        w.u64(s.addressLength);
    }
    w.gas(s.doorbell).u64(s.doorbellPreserveMask).u64(s.doorbellWriteMask);
    if (s.type == 5)
    {
        w.gas(s.commandComplete)
            .u64(s.commandCompleteMask)
            .gas(s.errorStatus)
            .u64(s.errorStatusMask)
            .u32(s.nominalLatencyUs)
            .u32(s.minRequestTurnaroundUs);
        return w.bytes();
    }
    w.u32(s.nominalLatencyUs).u32(s.maxPeriodicAccessRate);
    if (extended)
    {
        w.u32(s.minRequestTurnaroundUs);
    }
    else
    {
        w.u16(s.minRequestTurnaroundUs);
    }
    if (s.type >= 2)
    {
        w.gas(s.platformAck)
            .u64(s.platformAckPreserveMask)
            .u64(s.platformAckWriteMask);
    }
    if (extended)
    {
        w.u64(0) // reserved
            .gas(s.commandComplete)
            .u64(s.commandCompleteMask)
            .gas(s.commandUpdate)
            .u64(s.commandUpdatePreserveMask)
            .u64(s.commandUpdateSetMask)
            .gas(s.errorStatus)
            .u64(s.errorStatusMask);
    }
    return w.bytes();
}

// A PCCT holding `subspaces` (raw bytes) after its 12 fixed bytes.
inline Bytes pcctTable(const std::vector<Bytes>& subspaces,
                       std::uint32_t flags = 1)
{
    Writer body;
    body.u32(flags).u64(0);
    for (const Bytes& s : subspaces)
    {
        body.append(s);
    }
    return makeTable("PCCT", body.bytes(), 2);
}

// sampleSubspace(0..5) then a reserved type 7, in that order (ids 0-6).
inline std::vector<PccSubspace> allSampleSubspaces()
{
    std::vector<PccSubspace> all;
    all.reserve(pccSubspaceLengths.size() + 1);
    for (std::size_t i = 0; i < pccSubspaceLengths.size(); ++i)
    {
        const auto type = static_cast<std::uint8_t>(i);
        all.push_back(sampleSubspace(type, type));
    }
    all.push_back(sampleSubspace(7, 6, 12));
    return all;
}

inline Bytes pcctOf(const std::vector<PccSubspace>& subspaces)
{
    std::vector<Bytes> raw;
    raw.reserve(subspaces.size());
    for (const PccSubspace& s : subspaces)
    {
        raw.push_back(encodeSubspace(s));
    }
    return pcctTable(raw);
}

// Every sample table, named, for seed corpora: the sample MADT, a PCCT with
// all subspace types, and a PCCT per type.
inline std::vector<std::pair<std::string, Bytes>> seedTables()
{
    std::vector<std::pair<std::string, Bytes>> seeds;
    seeds.emplace_back("madt-sample", sampleMadt());
    seeds.emplace_back("madt-empty", madtTable({}));
    seeds.emplace_back("pcct-all-types", pcctOf(allSampleSubspaces()));
    for (std::size_t i = 0; i < pccSubspaceLengths.size(); ++i)
    {
        const auto type = static_cast<std::uint8_t>(i);
        seeds.emplace_back("pcct-type" + std::to_string(type),
                           pcctOf({sampleSubspace(type, 0)}));
    }
    return seeds;
}

} // namespace cppc::acpi::samples
