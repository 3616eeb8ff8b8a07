// SPDX-License-Identifier: Apache-2.0
// A tiny built-in 5 x 7 bitmap font for the labels of the record plot:
// digits, capital letters (small letters are drawn as capitals) and the
// punctuation labels use; any other character is drawn as '?'.
#pragma once

#include "raster.hpp"

#include <array>
#include <cstdint>
#include <string_view>

namespace cppcgov::tools
{

// A glyph's size, and the advance from one character to the next.
constexpr int glyphWidth = 5;
constexpr int glyphHeight = 7;
constexpr int glyphAdvance = glyphWidth + 1;

// The rows of character `c`'s glyph, top first; bit 4 is the leftmost
// column.
[[nodiscard]] std::array<std::uint8_t, glyphHeight> glyph(char c) noexcept;

// The width in pixels of `text` drawn by drawText.
[[nodiscard]] int textWidth(std::string_view text) noexcept;

// Draws `text` with its top left corner at (x, y), clipped to the image.
void drawText(Raster& image, int x, int y, std::string_view text, Rgb color);

} // namespace cppcgov::tools
