// SPDX-License-Identifier: Apache-2.0
// ACPI system description tables as firmware hands them to the OS: the
// common 36-byte header, the checksum, and loading the tables cppcgov reads
// from single files or from a directory laid out like
// /sys/firmware/acpi/tables.
//
// Everything here runs at start-up and throws AcpiError on bad input; the
// message names the table and, where the problem is at a byte, its offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cppc::acpi
{

// Bytes of the header every table starts with.
inline constexpr std::size_t tableHeaderSize = 36;

// The largest table file loadTableFile() reads.
inline constexpr std::size_t maxTableFileSize = std::size_t{64} << 20;

// The common table header. The character fields keep their bytes as stored
// (firmware pads them with spaces or NULs).
struct TableHeader
{
    std::string signature;    // 4 characters, e.g. "APIC"
    std::uint32_t length = 0; // the whole table, header included
    std::uint8_t revision = 0;
    std::uint8_t checksum = 0;
    std::string oemId;      // 6 characters
    std::string oemTableId; // 8 characters
    std::uint32_t oemRevision = 0;
    std::string creatorId; // 4 characters
    std::uint32_t creatorRevision = 0;
};

// A table that is malformed or cannot be read. what() is
// "<label>: offset 0x30: <problem>" or, for problems not at a byte (a file
// that cannot be opened), "<label>: <problem>"; see tableLabel().
class AcpiError : public std::runtime_error
{
  public:
    AcpiError(std::string_view table, std::size_t offset,
              std::string_view problem);
    AcpiError(std::string_view table, std::string_view problem);

    // The table's label, as in the message.
    const std::string& table() const noexcept
    {
        return table_;
    }
    // The byte offset from the start of the table, if the problem has one.
    std::optional<std::size_t> offset() const noexcept
    {
        return offset_;
    }

  private:
    std::string table_;
    std::optional<std::size_t> offset_;
};

// How messages name a table: "APIC table /sys/firmware/acpi/tables/APIC".
// Signature bytes outside printable ASCII appear as \xNN; an empty signature
// (not read yet) gives just the source.
std::string tableLabel(std::string_view signature, std::string_view source);

// One table: where it came from, its header, and its bytes (exactly
// header.length of them, header included).
struct Table
{
    std::string source; // a file path, or any name the caller chose
    TableHeader header;
    std::vector<std::uint8_t> bytes;

    // tableLabel(header.signature, source).
    std::string label() const
    {
        return tableLabel(header.signature, source);
    }
};

// Reads a table from `bytes`, named `source` in errors. Requires the 36-byte
// header, a header length of at least 36 and at most bytes.size() (bytes
// beyond it are ignored), and a checksum that makes all bytes of the table
// sum to 0 modulo 256. Throws AcpiError.
[[nodiscard]] Table parseTable(std::span<const std::uint8_t> bytes,
                               std::string source);

// Reads the whole file (at most maxTableFileSize bytes) and parses it with
// the path as source. Throws AcpiError naming the path, and the errno text
// when the file cannot be read.
[[nodiscard]] Table loadTableFile(const std::filesystem::path& path);

// Loads the tables cppcgov needs from a directory laid out like
// /sys/firmware/acpi/tables, in this order: DSDT; SSDT (a lone one) or
// SSDT1, SSDT2, ... in numeric order; PCCT; APIC (the MADT). Other files
// are ignored and missing optional tables are simply absent. Each table's
// signature must match its file name. Throws AcpiError, also when the
// directory cannot be listed or has no DSDT.
[[nodiscard]] std::vector<Table> loadTableDirectory(
    const std::filesystem::path& dir);

// The first table with `signature`, or nullptr.
[[nodiscard]] const Table* findTable(const std::vector<Table>& tables,
                                     std::string_view signature) noexcept;

} // namespace cppc::acpi
