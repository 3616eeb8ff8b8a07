// SPDX-License-Identifier: Apache-2.0
// ByteReader: bounds-checked little-endian reads from an ACPI table, for
// the table readers (header, MADT, PCCT, AML). Every overrun and every
// problem a reader reports becomes an AcpiError that names the table and
// the byte offset from the table's start.
#pragma once

#include "lib/acpi/table.hpp"
#include "lib/cpc_descriptor.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace cppc::acpi
{

// Bytes of an ACPI Generic Address Structure.
inline constexpr std::size_t gasSize = 12;

// A cursor over a window of a byte buffer. Offsets (offset(), end(), those
// in errors) always count from the start of the whole buffer, also in
// readers made by window().
class ByteReader
{
  public:
    // Reads all of `bytes`; `label` names them in errors (see tableLabel()).
    ByteReader(std::span<const std::uint8_t> bytes, std::string label);
    // Reads a table's bytes, named by its label.
    explicit ByteReader(const Table& table);

    // Where the next read starts.
    std::size_t offset() const noexcept
    {
        return pos_;
    }
    // One past the last byte this reader may read.
    std::size_t end() const noexcept
    {
        return end_;
    }
    std::size_t remaining() const noexcept
    {
        return end_ - pos_;
    }
    bool atEnd() const noexcept
    {
        return pos_ == end_;
    }
    const std::string& label() const noexcept
    {
        return *label_;
    }

    // Moves to `offset`, which must lie in this reader's window (end()
    // included). Throws AcpiError.
    void seek(std::size_t offset);
    // Advances `count` bytes. Throws AcpiError if fewer remain.
    void skip(std::size_t count);
    // A reader over the next `count` bytes, with the same label and
    // offsets; this reader moves past them. Throws AcpiError if fewer
    // remain.
    [[nodiscard]] ByteReader window(std::size_t count);

    // Little-endian unsigned reads; each throws AcpiError, naming the
    // offset, if the value does not fit before end().
    std::uint8_t u8();
    std::uint16_t u16();
    std::uint32_t u32();
    std::uint64_t u64();
    // The next `count` bytes, as a view into the buffer.
    std::span<const std::uint8_t> bytes(std::size_t count);
    // The next `count` bytes as characters, unchanged.
    std::string chars(std::size_t count);
    // A Generic Address Structure (12 bytes: space id, bit width, bit
    // offset, access size, 64-bit address).
    RegisterDesc gas();

    // Throws AcpiError naming this reader's label, `offset` and `problem`.
    [[noreturn]] void failAt(std::size_t offset,
                             std::string_view problem) const;
    // failAt(offset(), problem).
    [[noreturn]] void fail(std::string_view problem) const;

  private:
    ByteReader(std::span<const std::uint8_t> data,
               std::shared_ptr<const std::string> label, std::size_t begin,
               std::size_t end);

    // Throws unless `count` bytes remain; returns the offset they start at.
    std::size_t need(std::size_t count, std::string_view what) const;
    std::uint64_t little(std::size_t count, std::string_view what);

    std::span<const std::uint8_t> data_;
    std::shared_ptr<const std::string> label_;
    std::size_t begin_;
    std::size_t pos_;
    std::size_t end_;
};

} // namespace cppc::acpi
