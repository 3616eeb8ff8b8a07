// SPDX-License-Identifier: Apache-2.0
#include "lib/acpi/madt.hpp"

#include "lib/acpi/byte_reader.hpp"
#include "lib/text.hpp"

#include <algorithm>
#include <string>

namespace cppc::acpi
{

namespace
{

GiccEntry readGicc(ByteReader& e, std::size_t offset, std::uint8_t length)
{
    if (length < giccMinLength)
    {
        e.failAt(offset,
                 "GICC entry length " + std::to_string(length) +
                     " is shorter than " + std::to_string(giccMinLength));
    }
    GiccEntry g;
    g.offset = offset;
    g.length = length;
    e.skip(2); // reserved
    g.cpuInterfaceNumber = e.u32();
    g.acpiProcessorUid = e.u32();
    g.flags = e.u32();
    // Parking protocol version, performance interrupt, parked address,
    // physical base address, GICV, GICH, VGIC maintenance interrupt and
    // GICR base address: 52 bytes up to the MPIDR at entry offset 68.
    e.skip(52);
    g.mpidr = e.u64();
    if (length >= 80)
    {
        g.efficiencyClass = e.u8();
    }
    return g;
}

} // namespace

Madt parseMadt(const Table& table)
{
    ByteReader r(table);
    if (table.header.signature != "APIC")
    {
        r.failAt(0, "not a MADT (signature APIC)");
    }
    r.seek(std::min(tableHeaderSize, r.end()));
    Madt madt;
    madt.localInterruptControllerAddress = r.u32();
    madt.flags = r.u32();
    while (!r.atEnd())
    {
        const std::size_t at = r.offset();
        if (r.remaining() < 2)
        {
            r.fail("entry header needs 2 bytes but only 1 remains");
        }
        const std::uint8_t type = r.u8();
        const std::uint8_t length = r.u8();
        if (length < 2)
        {
            r.failAt(at, "entry of type " + hex(type) + " has length " +
                             std::to_string(length) + ", below 2");
        }
        if (length - 2U > r.remaining())
        {
            r.failAt(at,
                     "entry of type " + hex(type) + " and length " +
                         std::to_string(length) +
                         " runs past the end of the table at " + hex(r.end()));
        }
        ByteReader e = r.window(length - 2U);
        if (type == madtGiccType)
        {
            madt.gicc.push_back(readGicc(e, at, length));
        }
    }
    return madt;
}

std::vector<std::uint32_t> logicalCpuUids(const Madt& madt)
{
    std::vector<std::uint32_t> uids;
    for (const GiccEntry& g : madt.gicc)
    {
        if (g.enabled())
        {
            uids.push_back(g.acpiProcessorUid);
        }
    }
    return uids;
}

} // namespace cppc::acpi
