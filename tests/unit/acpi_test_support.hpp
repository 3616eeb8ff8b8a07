// SPDX-License-Identifier: Apache-2.0
// What the ACPI table tests share: the AcpiError a call throws, checking
// the offset it names, a table parsed from sample bytes, little-endian
// fields read back from them, the bytes as characters for TempTree, and
// a table cut at every length.
#pragma once

#include "lib/acpi/table.hpp"
#include "lib/text.hpp"
#include "tests/fuzz/acpi_samples.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::acpi::test
{

using samples::Bytes;

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
inline void expectOffset(const std::optional<AcpiError>& e, std::size_t offset)
{
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->offset(), offset) << e->what();
    EXPECT_THAT(e->what(), ::testing::HasSubstr("offset " + hex(offset) + ":"));
}

inline Table table(const Bytes& bytes, std::string source = "sample")
{
    return parseTable(bytes, std::move(source));
}

inline std::uint64_t little(const Bytes& b, std::size_t at, std::size_t size)
{
    std::uint64_t v = 0;
    for (std::size_t i = size; i-- > 0;)
    {
        v = v << 8 | b.at(at + i);
    }
    return v;
}

// The bytes of `b` as characters, for TempTree::write().
inline std::string_view chars(const Bytes& b)
{
    return {reinterpret_cast<const char*>(b.data()), b.size()};
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
        EXPECT_THAT(e->what(), ::testing::HasSubstr("offset 0x"));
    }
}

} // namespace cppc::acpi::test
