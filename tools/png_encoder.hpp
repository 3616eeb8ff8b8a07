// SPDX-License-Identifier: Apache-2.0
// encodePng: a Raster as a PNG file (8-bit RGB, no interlace, filter 0 on
// every row), deflated with zlib: the signature, IHDR, one IDAT and IEND,
// each chunk with its CRC-32.
#pragma once

#include "raster.hpp"

#include <string>
#include <string_view>

namespace cppcgov::tools
{

// The PNG file's bytes. Throws std::runtime_error when zlib fails.
[[nodiscard]] std::string encodePng(const Raster& image);

// The CRC-32 of a chunk's type and data, as PNG stores it.
[[nodiscard]] std::uint32_t pngChunkCrc(std::string_view typeAndData);

} // namespace cppcgov::tools
