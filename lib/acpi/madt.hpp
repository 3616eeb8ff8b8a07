// SPDX-License-Identifier: Apache-2.0
// The MADT ("APIC" table) reader: the GIC CPU interface (GICC) entries of
// an Arm system, which tell which ACPI processor UIDs exist and in which
// order Linux numbers them as logical CPUs.
#pragma once

#include "lib/acpi/table.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cppc::acpi
{

// Bytes before the first interrupt controller entry: the table header, the
// local interrupt controller address and the flags.
inline constexpr std::size_t madtEntriesOffset = tableHeaderSize + 8;

// The entry type of a GIC CPU interface structure.
inline constexpr std::uint8_t madtGiccType = 0x0B;

// The shortest GICC entry (ACPI 5.1); ACPI 6.0 made it 80 bytes and 6.5
// 82. Longer entries are read as far as the fields below go.
inline constexpr std::size_t giccMinLength = 76;

// One GICC entry.
struct GiccEntry
{
    std::size_t offset = 0; // of the entry, from the start of the table
    std::uint8_t length = 0;
    std::uint32_t cpuInterfaceNumber = 0;
    std::uint32_t acpiProcessorUid = 0;
    std::uint32_t flags = 0;
    std::uint64_t mpidr = 0;
    // Processor power efficiency class (ACPI 6.0, entries of 80 bytes or
    // more); 0 in shorter entries.
    std::uint8_t efficiencyClass = 0;

    // Flags bit 0: the processor is usable now.
    bool enabled() const noexcept
    {
        return (flags & 0x1U) != 0;
    }
    // Flags bit 3 (ACPI 6.5): a disabled processor that may be brought
    // online later.
    bool onlineCapable() const noexcept
    {
        return (flags & 0x8U) != 0;
    }
};

struct Madt
{
    std::uint32_t localInterruptControllerAddress = 0;
    std::uint32_t flags = 0;
    std::vector<GiccEntry> gicc; // in table order
};

// Reads the MADT's GICC entries, skipping other entry types by their
// length. Throws AcpiError naming the offset for a signature other than
// "APIC", a table too short for its fixed fields, an entry length below 2
// or running past the table, or a GICC entry shorter than 76 bytes.
[[nodiscard]] Madt parseMadt(const Table& table);

// The ACPI processor UIDs of the enabled GICC entries in table order:
// logical CPU n is the n-th enabled entry (as Linux numbers them).
[[nodiscard]] std::vector<std::uint32_t> logicalCpuUids(const Madt& madt);

} // namespace cppc::acpi
