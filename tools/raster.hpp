// SPDX-License-Identifier: Apache-2.0
// Raster: an 8-bit RGB image in memory and the few drawing operations the
// record plot needs (pixels and filled rectangles, clipped to the image).
// Plain values, no I/O: png_encoder.hpp writes one out.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cppcgov::tools
{

struct Rgb
{
    std::uint8_t r = 0;
    std::uint8_t g = 0;
    std::uint8_t b = 0;

    bool operator==(const Rgb&) const = default;
};

class Raster
{
  public:
    // A width x height image filled with `background`. Throws
    // std::invalid_argument for an empty or oversized (above 16384 on a
    // side) image.
    Raster(std::uint32_t width, std::uint32_t height, Rgb background);

    std::uint32_t width() const noexcept
    {
        return width_;
    }
    std::uint32_t height() const noexcept
    {
        return height_;
    }

    // The pixel at (x, y), which must be inside the image.
    [[nodiscard]] Rgb at(std::uint32_t x, std::uint32_t y) const noexcept;

    // Row y's pixels, 3 bytes (R, G, B) each, left to right.
    [[nodiscard]] std::span<const std::uint8_t> row(
        std::uint32_t y) const noexcept;

    // Sets one pixel; nothing outside the image.
    void set(int x, int y, Rgb c) noexcept;

    // Fills the rectangle of `w` x `h` pixels at (x, y), clipped.
    void fill(int x, int y, int w, int h, Rgb c) noexcept;

  private:
    std::uint32_t width_;
    std::uint32_t height_;
    std::vector<std::uint8_t> pixels_;
};

} // namespace cppcgov::tools
