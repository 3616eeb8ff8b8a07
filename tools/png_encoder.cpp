// SPDX-License-Identifier: Apache-2.0
#include "png_encoder.hpp"

#include <zlib.h>

#include <stdexcept>
#include <vector>

namespace cppcgov::tools
{

namespace
{

void putBigEndian(std::string& out, std::uint32_t v)
{
    for (int shift = 24; shift >= 0; shift -= 8)
    {
        out.push_back(static_cast<char>((v >> shift) & 0xFFU));
    }
}

// Appends the chunk `type` holding `data`: length, type, data, CRC.
void putChunk(std::string& out, std::string_view type, std::string_view data)
{
    putBigEndian(out, static_cast<std::uint32_t>(data.size()));
    std::string body(type);
    body += data;
    out += body;
    putBigEndian(out, pngChunkCrc(body));
}

} // namespace

std::uint32_t pngChunkCrc(std::string_view typeAndData)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(typeAndData.data()),
                static_cast<uInt>(typeAndData.size()));
    return static_cast<std::uint32_t>(crc);
}

std::string encodePng(const Raster& image)
{
    // Each row: the filter type (0, none), then its pixels.
    const std::size_t stride = std::size_t{image.width()} * 3;
    std::vector<Bytef> raw;
    raw.reserve((stride + 1) * image.height());
    for (std::uint32_t y = 0; y < image.height(); ++y)
    {
        raw.push_back(0);
        const auto row = image.row(y);
        raw.insert(raw.end(), row.begin(), row.end());
    }
    uLongf packedSize = compressBound(static_cast<uLong>(raw.size()));
    std::vector<Bytef> packed(packedSize);
    if (const int rc =
            compress2(packed.data(), &packedSize, raw.data(),
                      static_cast<uLong>(raw.size()), Z_BEST_COMPRESSION);
        rc != Z_OK)
    {
        throw std::runtime_error(
            "zlib's compress2 failed with " + std::to_string(rc));
    }

    std::string header;
    putBigEndian(header, image.width());
    putBigEndian(header, image.height());
    header += std::string("\x08\x02\x00\x00\x00", 5); // 8-bit RGB

    std::string png("\x89PNG\r\n\x1a\n", 8);
    putChunk(png, "IHDR", header);
    putChunk(png, "IDAT",
             std::string_view(reinterpret_cast<const char*>(packed.data()),
                              packedSize));
    putChunk(png, "IEND", {});
    return png;
}

} // namespace cppcgov::tools
