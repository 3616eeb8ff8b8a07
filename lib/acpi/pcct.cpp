// SPDX-License-Identifier: Apache-2.0
#include "lib/acpi/pcct.hpp"

#include "lib/acpi/byte_reader.hpp"
#include "lib/text.hpp"

#include <algorithm>
#include <string>

namespace cppc::acpi
{

namespace
{

// Types 1-4 start with the platform interrupt, its flags and a reserved
// byte.
void readInterrupt(ByteReader& e, PccSubspace& s)
{
    s.platformInterrupt = e.u32();
    s.platformInterruptFlags = e.u8();
    e.skip(1);
}

// The doorbell register and its masks, shared by all known types.
void readDoorbell(ByteReader& e, PccSubspace& s)
{
    s.doorbell = e.gas();
    s.doorbellPreserveMask = e.u64();
    s.doorbellWriteMask = e.u64();
}

// Types 0-2: base, 8-byte length, doorbell, latency, rate, 2-byte
// turnaround.
void readClassic(ByteReader& e, PccSubspace& s)
{
    s.baseAddress = e.u64();
    s.addressLength = e.u64();
    readDoorbell(e, s);
    s.nominalLatencyUs = e.u32();
    s.maxPeriodicAccessRate = e.u32();
    s.minRequestTurnaroundUs = e.u16();
}

void readPlatformAck(ByteReader& e, PccSubspace& s)
{
    s.platformAck = e.gas();
    s.platformAckPreserveMask = e.u64();
    s.platformAckWriteMask = e.u64();
}

void readErrorStatus(ByteReader& e, PccSubspace& s)
{
    s.errorStatus = e.gas();
    s.errorStatusMask = e.u64();
}

void readExtended(ByteReader& e, PccSubspace& s)
{
    readInterrupt(e, s);
    s.baseAddress = e.u64();
    s.addressLength = e.u32();
    readDoorbell(e, s);
    s.nominalLatencyUs = e.u32();
    s.maxPeriodicAccessRate = e.u32();
    s.minRequestTurnaroundUs = e.u32();
    readPlatformAck(e, s);
    e.skip(8); // reserved
    s.commandComplete = e.gas();
    s.commandCompleteMask = e.u64();
    s.commandUpdate = e.gas();
    s.commandUpdatePreserveMask = e.u64();
    s.commandUpdateSetMask = e.u64();
    readErrorStatus(e, s);
}

void readHwRegisters(ByteReader& e, PccSubspace& s)
{
    s.version = e.u16();
    s.baseAddress = e.u64();
    s.addressLength = e.u64();
    readDoorbell(e, s);
    s.commandComplete = e.gas();
    s.commandCompleteMask = e.u64();
    readErrorStatus(e, s);
    s.nominalLatencyUs = e.u32();
    s.minRequestTurnaroundUs = e.u32();
}

// Reads the fields after Type and Length; `e` covers exactly them.
void readFields(ByteReader& e, PccSubspace& s)
{
    switch (static_cast<PccType>(s.type))
    {
        case PccType::generic:
            e.skip(6); // reserved
            readClassic(e, s);
            break;
        case PccType::hwReduced:
            readInterrupt(e, s);
            readClassic(e, s);
            break;
        case PccType::hwReducedType2:
            readInterrupt(e, s);
            readClassic(e, s);
            readPlatformAck(e, s);
            break;
        case PccType::extendedMaster:
        case PccType::extendedSlave:
            readExtended(e, s);
            break;
        case PccType::hwRegisters:
            readHwRegisters(e, s);
            break;
    }
    if (!e.atEnd())
    {
        e.fail("subspace " + std::to_string(s.id) + ": " +
               std::to_string(e.remaining()) + " bytes left unread");
    }
}

} // namespace

Pcct parsePcct(const Table& table)
{
    ByteReader r(table);
    if (table.header.signature != "PCCT")
    {
        r.failAt(0, "not a PCCT (signature PCCT)");
    }
    r.seek(std::min(tableHeaderSize, r.end()));
    Pcct pcct;
    pcct.flags = r.u32();
    r.skip(8); // reserved
    for (std::size_t index = 0; !r.atEnd(); ++index)
    {
        const std::size_t at = r.offset();
        const std::string name = "subspace " + std::to_string(index);
        if (index >= maxPccSubspaces)
        {
            r.fail(name + ": more than " + std::to_string(maxPccSubspaces) +
                   " subspaces");
        }
        if (r.remaining() < 2)
        {
            r.fail(name + ": header needs 2 bytes but only 1 remains");
        }
        PccSubspace s;
        s.id = static_cast<std::uint8_t>(index);
        s.offset = at;
        s.type = r.u8();
        s.length = r.u8();
        s.knownType = s.type < pccSubspaceLengths.size();
        if (s.knownType && s.length != pccSubspaceLengths[s.type])
        {
            r.failAt(at, name + ": length " + std::to_string(s.length) +
                             " is not " +
                             std::to_string(pccSubspaceLengths[s.type]) +
                             ", the length of type " + std::to_string(s.type));
        }
        if (s.length < 2)
        {
            r.failAt(at, name + ": length " + std::to_string(s.length) +
                             " is below 2");
        }
        if (s.length - 2U > r.remaining())
        {
            r.failAt(at,
                     name + " (type " + std::to_string(s.type) + ", length " +
                         std::to_string(s.length) +
                         ") runs past the end of the table at " + hex(r.end()));
        }
        ByteReader e = r.window(s.length - 2U);
        if (s.knownType)
        {
            readFields(e, s);
        }
        pcct.subspaces.push_back(s);
    }
    return pcct;
}

} // namespace cppc::acpi
