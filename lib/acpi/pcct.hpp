// SPDX-License-Identifier: Apache-2.0
// The PCCT (Platform Communications Channel Table) reader: every PCC
// subspace with all of its fields, for the PCC channels through which
// firmware such as the Ampere Altra's exposes _CPC registers.
//
// Layouts follow ACPI 6.5 section 14.1 (types 0 to 5).
#pragma once

#include "lib/acpi/table.hpp"
#include "lib/cpc_descriptor.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cppc::acpi
{

// Bytes before the first subspace: the table header, the flags (4) and a
// reserved field (8).
inline constexpr std::size_t pcctSubspacesOffset = tableHeaderSize + 12;

// Subspace ids are a byte (a PCC register's access-size field), so a PCCT
// holds at most this many subspaces.
inline constexpr std::size_t maxPccSubspaces = 256;

// PCC subspace types.
enum class PccType : std::uint8_t
{
    generic = 0,        // ACPI 5.0
    hwReduced = 1,      // ACPI 5.1
    hwReducedType2 = 2, // ACPI 6.1, adds the platform ack register
    extendedMaster = 3, // ACPI 6.2 (initiator)
    extendedSlave = 4,  // ACPI 6.2 (responder)
    hwRegisters = 5,    // ACPI 6.4, register-based
};

// The Length every subspace of a known type must have, indexed by type.
inline constexpr std::array<std::uint8_t, 6> pccSubspaceLengths{
    62, 62, 90, 164, 164, 96};

// One subspace. Fields a type does not have stay zero (registers: the NULL
// register); which ones a type has is noted per field.
struct PccSubspace
{
    std::uint8_t id = 0;    // its index in the table, which is its id
    std::uint8_t type = 0;  // PccType, or a reserved value above 5
    std::size_t offset = 0; // of the subspace, from the start of the table
    std::uint8_t length = 0;
    // False for a reserved type: only id, type, offset and length are set.
    bool knownType = true;

    // Types 1-4.
    std::uint32_t platformInterrupt = 0;
    // Types 1-4: bit 0 polarity (1 active low), bit 1 mode (1 edge).
    std::uint8_t platformInterruptFlags = 0;

    // All known types. The address length is 8 bytes in the table for types
    // 0-2 and 5, 4 bytes for types 3 and 4.
    std::uint64_t baseAddress = 0;
    std::uint64_t addressLength = 0;
    RegisterDesc doorbell;
    std::uint64_t doorbellPreserveMask = 0;
    std::uint64_t doorbellWriteMask = 0;
    std::uint32_t nominalLatencyUs = 0;
    // Types 0-4: commands per minute at most; 0 is no limit.
    std::uint32_t maxPeriodicAccessRate = 0;
    // 2 bytes in the table for types 0-2, 4 bytes for types 3-5.
    std::uint32_t minRequestTurnaroundUs = 0;

    // Types 2-4. For types 3 and 4 the write mask is the "ack set mask".
    RegisterDesc platformAck;
    std::uint64_t platformAckPreserveMask = 0;
    std::uint64_t platformAckWriteMask = 0;

    // Types 3-5.
    RegisterDesc commandComplete;
    std::uint64_t commandCompleteMask = 0;

    // Types 3 and 4.
    RegisterDesc commandUpdate;
    std::uint64_t commandUpdatePreserveMask = 0;
    std::uint64_t commandUpdateSetMask = 0;

    // Types 3-5.
    RegisterDesc errorStatus;
    std::uint64_t errorStatusMask = 0;

    // Type 5.
    std::uint16_t version = 0;

    bool isType(PccType t) const noexcept
    {
        return type == static_cast<std::uint8_t>(t);
    }
};

struct Pcct
{
    std::uint32_t flags = 0;
    std::vector<PccSubspace> subspaces; // subspaces[i].id == i

    // Flags bit 0: the platform interrupts the OS on command completion.
    bool platformInterrupt() const noexcept
    {
        return (flags & 0x1U) != 0;
    }
};

// Reads every subspace. A reserved type (above 5) is kept with knownType
// false and no fields. Throws AcpiError naming the offset (and the
// subspace index where there is one) for a signature other than "PCCT", a
// table too short for its fixed fields, a subspace whose length is below 2,
// is not its type's length or runs past the table, or more than 256
// subspaces.
[[nodiscard]] Pcct parsePcct(const Table& table);

} // namespace cppc::acpi
