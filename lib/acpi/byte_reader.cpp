// SPDX-License-Identifier: Apache-2.0
#include "lib/acpi/byte_reader.hpp"

#include "lib/text.hpp"

#include <utility>

namespace cppc::acpi
{

ByteReader::ByteReader(std::span<const std::uint8_t> bytes, std::string label) :
    ByteReader(bytes, std::make_shared<const std::string>(std::move(label)), 0,
               bytes.size())
{}

ByteReader::ByteReader(const Table& table) :
    ByteReader(table.bytes, table.label())
{}

ByteReader::ByteReader(std::span<const std::uint8_t> data,
                       std::shared_ptr<const std::string> label,
                       std::size_t begin, std::size_t end) :
    data_(data),
    label_(std::move(label)), begin_(begin), pos_(begin), end_(end)
{}

void ByteReader::failAt(std::size_t offset, std::string_view problem) const
{
    throw AcpiError(*label_, offset, problem);
}

void ByteReader::fail(std::string_view problem) const
{
    failAt(pos_, problem);
}

std::size_t ByteReader::need(std::size_t count, std::string_view what) const
{
    if (count > remaining())
    {
        fail(std::string(what) + " needs " + std::to_string(count) +
             " bytes but only " + std::to_string(remaining()) +
             " remain before " + hex(end_));
    }
    return pos_;
}

void ByteReader::seek(std::size_t offset)
{
    if (offset < begin_ || offset > end_)
    {
        failAt(offset,
               "outside the data (" + hex(begin_) + " to " + hex(end_) + ")");
    }
    pos_ = offset;
}

void ByteReader::skip(std::size_t count)
{
    pos_ = need(count, "skipping") + count;
}

ByteReader ByteReader::window(std::size_t count)
{
    std::size_t start = need(count, "a structure");
    pos_ = start + count;
    return {data_, label_, start, start + count};
}

std::uint64_t ByteReader::little(std::size_t count, std::string_view what)
{
    std::size_t start = need(count, what);
    std::uint64_t value = 0;
    for (std::size_t i = count; i-- > 0;)
    {
        value = (value << 8) | data_[start + i];
    }
    pos_ = start + count;
    return value;
}

std::uint8_t ByteReader::u8()
{
    return static_cast<std::uint8_t>(little(1, "a byte"));
}

std::uint16_t ByteReader::u16()
{
    return static_cast<std::uint16_t>(little(2, "a 16-bit value"));
}

std::uint32_t ByteReader::u32()
{
    return static_cast<std::uint32_t>(little(4, "a 32-bit value"));
}

std::uint64_t ByteReader::u64()
{
    return little(8, "a 64-bit value");
}

std::span<const std::uint8_t> ByteReader::bytes(std::size_t count)
{
    std::size_t start = need(count, "a byte string");
    pos_ = start + count;
    return data_.subspan(start, count);
}

std::string ByteReader::chars(std::size_t count)
{
    auto b = bytes(count);
    return {b.begin(), b.end()};
}

RegisterDesc ByteReader::gas()
{
    need(gasSize, "a Generic Address Structure");
    RegisterDesc r;
    r.space = u8();
    r.bitWidth = u8();
    r.bitOffset = u8();
    r.accessSize = u8();
    r.address = u64();
    return r;
}

} // namespace cppc::acpi
