// SPDX-License-Identifier: Apache-2.0
// Shared by the fuzz targets: makes arbitrary fuzzer bytes into a table
// that passes parseTable()'s header checks, so that mutations reach the
// MADT and PCCT readers instead of failing on the checksum, and checks
// what every reader promises about its errors.
#pragma once

#include "lib/acpi/table.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cppc::acpi::fuzz
{

// A copy of `data`; when it holds a whole header, with `signature`, the
// length set to `size` and a correct checksum.
inline std::vector<std::uint8_t> asTable(
    const std::uint8_t* data, std::size_t size, std::string_view signature)
{
    std::vector<std::uint8_t> bytes(data, data + size);
    if (bytes.size() < tableHeaderSize || bytes.size() > UINT32_MAX)
    {
        return bytes;
    }
    std::copy_n(signature.begin(), std::min<std::size_t>(signature.size(), 4),
                bytes.begin());
    const auto length = static_cast<std::uint32_t>(bytes.size());
    for (std::size_t i = 0; i < 4; ++i)
    {
        bytes[4 + i] = static_cast<std::uint8_t>(length >> (8 * i));
    }
    bytes[9] = 0;
    unsigned sum = 0;
    for (std::uint8_t b : bytes)
    {
        sum += b;
    }
    bytes[9] = static_cast<std::uint8_t>(256 - sum % 256);
    return bytes;
}

// Traps (a crash libFuzzer reports) unless `condition` holds.
inline void require(bool condition)
{
    if (!condition)
    {
        __builtin_trap();
    }
}

// Every AcpiError from parsing `size` bytes must name an offset inside
// them (or just past them, where the data ended).
inline void checkError(const AcpiError& e, std::size_t size)
{
    require(e.offset().has_value() && *e.offset() <= size);
}

} // namespace cppc::acpi::fuzz
