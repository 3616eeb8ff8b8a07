// SPDX-License-Identifier: Apache-2.0
#include "raster.hpp"

#include <algorithm>
#include <stdexcept>

namespace cppcgov::tools
{

namespace
{

constexpr std::uint32_t maxSide = 16384;

} // namespace

Raster::Raster(std::uint32_t width, std::uint32_t height, Rgb background) :
    width_(width), height_(height)
{
    if (width == 0 || height == 0 || width > maxSide || height > maxSide)
    {
        throw std::invalid_argument("an image of " + std::to_string(width) +
                                    " x " + std::to_string(height) + " pixels");
    }
    pixels_.resize(std::size_t{width} * height * 3);
    for (std::size_t i = 0; i < pixels_.size(); i += 3)
    {
        pixels_[i] = background.r;
        pixels_[i + 1] = background.g;
        pixels_[i + 2] = background.b;
    }
}

Rgb Raster::at(std::uint32_t x, std::uint32_t y) const noexcept
{
    const std::size_t i = (std::size_t{y} * width_ + x) * 3;
    return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

std::span<const std::uint8_t> Raster::row(std::uint32_t y) const noexcept
{
    return std::span(pixels_).subspan(std::size_t{y} * width_ * 3,
                                      std::size_t{width_} * 3);
}

void Raster::set(int x, int y, Rgb c) noexcept
{
    if (x < 0 || y < 0 || static_cast<std::uint32_t>(x) >= width_ ||
        static_cast<std::uint32_t>(y) >= height_)
    {
        return;
    }
    const std::size_t i =
        (static_cast<std::size_t>(y) * width_ + static_cast<std::size_t>(x)) *
        3;
    pixels_[i] = c.r;
    pixels_[i + 1] = c.g;
    pixels_[i + 2] = c.b;
}

void Raster::fill(int x, int y, int w, int h, Rgb c) noexcept
{
    const int x0 = std::max(x, 0);
    const int y0 = std::max(y, 0);
    const int x1 = std::min(x + w, static_cast<int>(width_));
    const int y1 = std::min(y + h, static_cast<int>(height_));
    for (int yy = y0; yy < y1; ++yy)
    {
        for (int xx = x0; xx < x1; ++xx)
        {
            set(xx, yy, c);
        }
    }
}

} // namespace cppcgov::tools
