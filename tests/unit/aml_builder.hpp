// SPDX-License-Identifier: Apache-2.0
// Builds AML byte code and whole ACPI tables in tests, so parser cases are
// written as structure rather than hex.
#pragma once

#include "lib/acpi/table.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace cppc::acpi::testing
{

using Bytes = std::vector<std::uint8_t>;

inline Bytes cat(std::initializer_list<Bytes> parts)
{
    Bytes out;
    for (const Bytes& p : parts)
    {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

// PkgLength followed by the body; the length counts its own bytes.
inline Bytes pkg(const Bytes& body)
{
    Bytes out;
    std::size_t n = body.size() + 1;
    if (n < 0x40)
    {
        out.push_back(static_cast<std::uint8_t>(n));
    }
    else
    {
        n = body.size() + 2;
        if (n >= 0x1000)
        {
            n = body.size() + 3;
            out.push_back(static_cast<std::uint8_t>(0x80 | (n & 0x0F)));
            out.push_back(static_cast<std::uint8_t>(n >> 4));
            out.push_back(static_cast<std::uint8_t>(n >> 12));
        }
        else
        {
            out.push_back(static_cast<std::uint8_t>(0x40 | (n & 0x0F)));
            out.push_back(static_cast<std::uint8_t>(n >> 4));
        }
    }
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

inline Bytes seg(std::string_view s)
{
    Bytes out(s.begin(), s.end());
    out.resize(4, '_');
    return out;
}

// "\\_SB.CPU0", "^X", "A.B.C" as a NameString.
inline Bytes name(std::string_view path)
{
    Bytes out;
    while (!path.empty() && (path.front() == '\\' || path.front() == '^'))
    {
        out.push_back(static_cast<std::uint8_t>(path.front()));
        path.remove_prefix(1);
    }
    std::vector<std::string_view> segs;
    while (!path.empty())
    {
        const std::size_t dot = path.find('.');
        segs.push_back(path.substr(0, dot));
        path = dot == std::string_view::npos ? "" : path.substr(dot + 1);
    }
    if (segs.empty())
    {
        out.push_back(0x00);
    }
    else if (segs.size() == 2)
    {
        out.push_back(0x2E);
    }
    else if (segs.size() > 2)
    {
        out.push_back(0x2F);
        out.push_back(static_cast<std::uint8_t>(segs.size()));
    }
    for (std::string_view s : segs)
    {
        const Bytes b = seg(s);
        out.insert(out.end(), b.begin(), b.end());
    }
    return out;
}

inline Bytes integer(std::uint64_t v)
{
    if (v == 0)
    {
        return {0x00};
    }
    if (v == 1)
    {
        return {0x01};
    }
    Bytes out;
    unsigned bytes = v <= 0xFF ? 1 : v <= 0xFFFF ? 2 : v <= 0xFFFF'FFFF ? 4 : 8;
    out.push_back(bytes == 1   ? 0x0A
                  : bytes == 2 ? 0x0B
                  : bytes == 4 ? 0x0C
                               : 0x0E);
    for (unsigned i = 0; i < bytes; ++i)
    {
        out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    return out;
}

inline Bytes string(std::string_view s)
{
    Bytes out{0x0D};
    out.insert(out.end(), s.begin(), s.end());
    out.push_back(0);
    return out;
}

inline Bytes buffer(const Bytes& data)
{
    return cat({{0x11}, pkg(cat({integer(data.size()), data}))});
}

inline Bytes package(std::initializer_list<Bytes> elements)
{
    Bytes body{static_cast<std::uint8_t>(elements.size())};
    for (const Bytes& e : elements)
    {
        body.insert(body.end(), e.begin(), e.end());
    }
    return cat({{0x12}, pkg(body)});
}

// A Generic Register descriptor and End Tag, as ResourceTemplate emits.
inline Bytes reg(std::uint8_t space, std::uint8_t width, std::uint8_t offset,
                 std::uint8_t access, std::uint64_t address)
{
    Bytes d{0x82, 0x0C, 0x00, space, width, offset, access};
    for (unsigned i = 0; i < 8; ++i)
    {
        d.push_back(static_cast<std::uint8_t>(address >> (8 * i)));
    }
    d.push_back(0x79);
    d.push_back(0x00);
    return buffer(d);
}

inline Bytes nameOp(std::string_view n, const Bytes& value)
{
    return cat({{0x08}, name(n), value});
}

inline Bytes scope(std::string_view n, const Bytes& body)
{
    return cat({{0x10}, pkg(cat({name(n), body}))});
}

inline Bytes device(std::string_view n, const Bytes& body)
{
    return cat({{0x5B, 0x82}, pkg(cat({name(n), body}))});
}

inline Bytes processor(std::string_view n, std::uint8_t id, const Bytes& body)
{
    return cat({{0x5B, 0x83}, pkg(cat({name(n), {id, 0, 0, 0, 0, 0}, body}))});
}

inline Bytes method(std::string_view n, std::uint8_t args, const Bytes& body)
{
    return cat({{0x14}, pkg(cat({name(n), {args}, body}))});
}

inline Bytes ret(const Bytes& v)
{
    return cat({{0xA4}, v});
}

inline Bytes lequal(const Bytes& a, const Bytes& b)
{
    return cat({{0x93}, a, b});
}

inline Bytes ifOp(const Bytes& predicate, const Bytes& body)
{
    return cat({{0xA0}, pkg(cat({predicate, body}))});
}

inline Bytes elseOp(const Bytes& body)
{
    return cat({{0xA1}, pkg(body)});
}

inline Bytes external(std::string_view n, std::uint8_t type,
                      std::uint8_t args = 0)
{
    return cat({{0x15}, name(n), {type, args}});
}

// OperationRegion (n, SystemMemory, offset, 4) + Field with one field unit.
inline Bytes regionField(std::string_view region, std::string_view unit)
{
    return cat({{0x5B, 0x80},
                name(region),
                {0x00},
                integer(0x1000),
                integer(4),
                {0x5B, 0x81},
                pkg(cat({name(region), {0x01}, seg(unit), {0x20}}))});
}

// A processor device with _HID "ACPI0007", a _UID and extra contents.
inline Bytes cpuDevice(std::string_view n, std::uint64_t uid, const Bytes& body)
{
    return device(n, cat({nameOp("_HID", string("ACPI0007")),
                          nameOp("_UID", integer(uid)), body}));
}

// A whole table with a valid header and checksum.
inline Table table(std::string_view signature, const Bytes& body,
                   std::uint8_t revision = 2, std::string source = "test")
{
    Bytes t(36, 0);
    for (std::size_t i = 0; i < 4 && i < signature.size(); ++i)
    {
        t[i] = static_cast<std::uint8_t>(signature[i]);
    }
    t.insert(t.end(), body.begin(), body.end());
    const auto length = static_cast<std::uint32_t>(t.size());
    for (unsigned i = 0; i < 4; ++i)
    {
        t[4 + i] = static_cast<std::uint8_t>(length >> (8 * i));
    }
    t[8] = revision;
    std::uint8_t sum = 0;
    for (std::uint8_t b : t)
    {
        sum = static_cast<std::uint8_t>(sum + b);
    }
    t[9] = static_cast<std::uint8_t>(0x100 - sum);
    return parseTable(t, std::move(source));
}

// A _CPC revision 3 package: 4 integer perf levels, Desired as `desired`,
// Minimum and Maximum as `min` and `max` (NULL registers when empty), NULL
// registers elsewhere, then the three revision-3 integers.
inline Bytes cpcPackage(const Bytes& desired, const Bytes& min = {},
                        const Bytes& max = {})
{
    const Bytes null = reg(0, 0, 0, 0, 0);
    Bytes body = cat(
        {{23},
         integer(23),
         integer(3),
         integer(300),
         integer(250),
         integer(100),
         integer(50),
         null,
         desired,
         min.empty() ? null : min,
         max.empty() ? null : max});
    for (int i = 0; i < 10; ++i)
    {
        body = cat({body, null});
    }
    body = cat({body, integer(100), integer(800), integer(2500)});
    return cat({{0x12}, pkg(body)});
}

inline Bytes psdPackage(std::uint64_t domain, std::uint64_t coordination,
                        std::uint64_t processors)
{
    return package({package({integer(5), integer(0), integer(domain),
                             integer(coordination), integer(processors)})});
}

} // namespace cppc::acpi::testing

namespace cppc::acpi::testing
{

inline void putLe(Bytes& b, std::size_t at, std::uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; ++i)
    {
        b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
    }
}

struct GiccSpec
{
    std::uint32_t uid;
    bool enabled = true;
};

// A MADT with one 80-byte GICC entry per spec, in order.
inline Table madt(std::initializer_list<GiccSpec> cpus)
{
    Bytes body(8, 0); // local interrupt controller address, flags
    std::uint32_t n = 0;
    for (const GiccSpec& c : cpus)
    {
        Bytes e(80, 0);
        e[0] = 0x0B;
        e[1] = 80;
        putLe(e, 4, n++, 4);
        putLe(e, 8, c.uid, 4);
        putLe(e, 12, c.enabled ? 1 : 0, 4);
        body.insert(body.end(), e.begin(), e.end());
    }
    return table("APIC", body, 5);
}

// A PCCT whose subspaces are all type 2 (HW-reduced with platform ack),
// each with a payload of `length` - 8 bytes.
inline Table pcctType2(std::size_t count, std::uint64_t length)
{
    Bytes body(12, 0); // flags, reserved
    for (std::size_t i = 0; i < count; ++i)
    {
        Bytes s(90, 0);
        s[0] = 2;
        s[1] = 90;
        putLe(s, 8, 0x8000'0000 + i * 0x10000, 8); // base
        putLe(s, 16, length, 8);
        s[24] = 0; // doorbell: SystemMemory, 32 bits, dword
        s[25] = 32;
        s[27] = 3;
        putLe(s, 28, 0x1000'0000 + i * 0x100, 8);
        putLe(s, 44, 0x1, 8); // write mask
        putLe(s, 52, 100, 4); // latency
        putLe(s, 60, 110, 2); // turnaround
        body.insert(body.end(), s.begin(), s.end());
    }
    return table("PCCT", body, 2);
}

} // namespace cppc::acpi::testing
