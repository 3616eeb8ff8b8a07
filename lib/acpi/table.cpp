// SPDX-License-Identifier: Apache-2.0
#include "lib/acpi/table.hpp"

#include "lib/acpi/byte_reader.hpp"
#include "lib/text.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <system_error>
#include <utility>

namespace cppc::acpi
{

namespace
{

std::string message(std::string_view table, std::optional<std::size_t> offset,
                    std::string_view problem)
{
    std::string m(table);
    m += ": ";
    if (offset)
    {
        m += "offset " + hex(*offset) + ": ";
    }
    m += problem;
    return m;
}

std::string errnoText(int error)
{
    return std::system_category().message(error);
}

// Closes a file descriptor when leaving scope.
class Fd
{
  public:
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd()
    {
        if (fd_ >= 0)
        {
            ::close(fd_);
        }
    }
    int get() const noexcept
    {
        return fd_;
    }

  private:
    int fd_;
};

std::vector<std::uint8_t> readFile(const std::filesystem::path& path)
{
    const std::string name = path.string();
    Fd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0)
    {
        throw AcpiError(name, "cannot open: " + errnoText(errno));
    }
    // Read to the end rather than trusting st_size: sysfs files may report
    // a size that is not the content's.
    std::vector<std::uint8_t> bytes;
    constexpr std::size_t chunk = std::size_t{64} * 1024;
    for (;;)
    {
        std::size_t have = bytes.size();
        if (have > maxTableFileSize)
        {
            throw AcpiError(name,
                            "larger than " + std::to_string(maxTableFileSize) +
                                " bytes");
        }
        bytes.resize(have + chunk);
        ssize_t n = ::read(fd.get(), bytes.data() + have, chunk);
        if (n < 0)
        {
            int error = errno;
            bytes.resize(have);
            if (error == EINTR)
            {
                continue;
            }
            throw AcpiError(name, "cannot read: " + errnoText(error));
        }
        bytes.resize(have + static_cast<std::size_t>(n));
        if (n == 0)
        {
            return bytes;
        }
    }
}

// "SSDT" -> 0, "SSDT7" -> 7, anything else -> nullopt.
std::optional<unsigned> ssdtInstance(const std::string& name)
{
    constexpr std::string_view prefix = "SSDT";
    if (name.size() < prefix.size() || name.compare(0, 4, prefix) != 0)
    {
        return std::nullopt;
    }
    if (name.size() == prefix.size())
    {
        return 0U;
    }
    unsigned value = 0;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    auto [end, ec] = std::from_chars(first, last, value);
    // No leading zeros: "SSDT01" is not a name Linux gives.
    if (ec != std::errc{} || end != last || *first == '0')
    {
        return std::nullopt;
    }
    return value;
}

Table loadExpecting(const std::filesystem::path& path,
                    std::string_view signature)
{
    Table t = loadTableFile(path);
    if (t.header.signature != signature)
    {
        throw AcpiError(t.label(), 0,
                        "expected signature " + std::string(signature) +
                            " from the file name");
    }
    return t;
}

} // namespace

AcpiError::AcpiError(std::string_view table, std::size_t offset,
                     std::string_view problem) :
    std::runtime_error(message(table, offset, problem)),
    table_(table), offset_(offset)
{}

AcpiError::AcpiError(std::string_view table, std::string_view problem) :
    std::runtime_error(message(table, std::nullopt, problem)), table_(table)
{}

std::string tableLabel(std::string_view signature, std::string_view source)
{
    if (signature.empty())
    {
        return std::string(source);
    }
    std::string label;
    for (char c : signature)
    {
        auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7F)
        {
            label += c;
        }
        else
        {
            constexpr std::string_view digits = "0123456789abcdef";
            label += "\\x";
            label += digits[byte >> 4];
            label += digits[byte & 0xF];
        }
    }
    label += " table ";
    label += source;
    return label;
}

Table parseTable(std::span<const std::uint8_t> bytes, std::string source)
{
    if (bytes.size() < tableHeaderSize)
    {
        throw AcpiError(source, bytes.size(),
                        "only " + std::to_string(bytes.size()) +
                            " bytes, the table header needs " +
                            std::to_string(tableHeaderSize));
    }
    ByteReader r(bytes, source);
    TableHeader h;
    h.signature = r.chars(4);
    h.length = r.u32();
    h.revision = r.u8();
    h.checksum = r.u8();
    h.oemId = r.chars(6);
    h.oemTableId = r.chars(8);
    h.oemRevision = r.u32();
    h.creatorId = r.chars(4);
    h.creatorRevision = r.u32();

    const std::string label = tableLabel(h.signature, source);
    if (h.length < tableHeaderSize)
    {
        throw AcpiError(label, 4,
                        "table length " + std::to_string(h.length) +
                            " is shorter than the header");
    }
    if (h.length > bytes.size())
    {
        throw AcpiError(label, 4,
                        "table length " + std::to_string(h.length) +
                            " exceeds the " + std::to_string(bytes.size()) +
                            " bytes available");
    }
    auto table = bytes.first(h.length);
    unsigned sum = 0;
    for (std::uint8_t b : table)
    {
        sum += b;
    }
    if (sum % 256 != 0)
    {
        throw AcpiError(label, 9,
                        "bad checksum " + hex(h.checksum) +
                            ": the table's bytes sum to " + hex(sum % 256) +
                            " modulo 256, not 0");
    }
    return {std::move(source), std::move(h), {table.begin(), table.end()}};
}

Table loadTableFile(const std::filesystem::path& path)
{
    std::vector<std::uint8_t> bytes = readFile(path);
    return parseTable(bytes, path.string());
}

std::vector<Table> loadTableDirectory(const std::filesystem::path& dir)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec)
    {
        throw AcpiError(dir.string(), "cannot list: " + ec.message());
    }
    bool haveDsdt = false;
    bool havePcct = false;
    bool haveApic = false;
    std::map<unsigned, fs::path> ssdts;
    for (; it != fs::directory_iterator(); it.increment(ec))
    {
        if (ec)
        {
            break;
        }
        const std::string name = it->path().filename().string();
        if (name == "DSDT")
        {
            haveDsdt = true;
        }
        else if (name == "PCCT")
        {
            havePcct = true;
        }
        else if (name == "APIC")
        {
            haveApic = true;
        }
        else if (auto n = ssdtInstance(name))
        {
            ssdts.emplace(*n, it->path());
        }
    }
    if (ec)
    {
        throw AcpiError(dir.string(), "cannot list: " + ec.message());
    }
    if (!haveDsdt)
    {
        throw AcpiError(dir.string(), "no DSDT");
    }
    std::vector<Table> tables;
    tables.push_back(loadExpecting(dir / "DSDT", "DSDT"));
    for (const auto& [n, path] : ssdts)
    {
        tables.push_back(loadExpecting(path, "SSDT"));
    }
    if (havePcct)
    {
        tables.push_back(loadExpecting(dir / "PCCT", "PCCT"));
    }
    if (haveApic)
    {
        tables.push_back(loadExpecting(dir / "APIC", "APIC"));
    }
    return tables;
}

const Table* findTable(const std::vector<Table>& tables,
                       std::string_view signature) noexcept
{
    auto it = std::find_if(tables.begin(), tables.end(), [&](const Table& t) {
        return t.header.signature == signature;
    });
    return it == tables.end() ? nullptr : &*it;
}

} // namespace cppc::acpi
