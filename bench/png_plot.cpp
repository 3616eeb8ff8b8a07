// SPDX-License-Identifier: Apache-2.0
#include "bench/png_plot.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace cppc::bench
{
namespace
{

constexpr std::uint32_t panelHeight = 90;
constexpr std::uint32_t gap = 8;
constexpr std::uint32_t titleHeight = 14;
// Time marks on each panel's foot, every this many samples.
constexpr std::size_t markEvery = 50;

void put32(std::vector<std::uint8_t>& out, std::uint32_t v)
{
    for (int shift = 24; shift >= 0; shift -= 8)
    {
        out.push_back(static_cast<std::uint8_t>(v >> shift));
    }
}

void chunk(std::vector<std::uint8_t>& out, const char (&type)[5],
           const std::vector<std::uint8_t>& data)
{
    put32(out, static_cast<std::uint32_t>(data.size()));
    const std::size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    put32(out, crc32(out.data() + start, out.size() - start));
}

// A 5 x 7 font for the labels: capitals, digits and some punctuation, one
// byte a row, the leftmost column in bit 4. Lower case is drawn as upper
// case; other characters as blanks.
struct Glyph
{
    char c;
    std::array<std::uint8_t, 7> rows;
};

constexpr Glyph font[] = {
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x06, 0x04, 0x08}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'/', {0x01, 0x02, 0x02, 0x04, 0x08, 0x08, 0x10}},
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}},
    {';', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x04, 0x08}},
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
    {'D', {0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}},
    {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}},
    {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}},
    {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}},
    {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04}},
    {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
};

// Draws `text` with its top left at (x, y), each font pixel a square of
// `scale`, on a white box one font pixel wider all round.
void drawText(Image& image, std::int64_t x, std::int64_t y,
              const std::string& text, Rgb colour, std::int64_t scale)
{
    const std::int64_t advance = 6 * scale;
    const auto length = static_cast<std::int64_t>(text.size());
    for (std::int64_t yy = y - scale; yy < y + 8 * scale; ++yy)
    {
        for (std::int64_t xx = x - scale; xx < x + length * advance; ++xx)
        {
            image.set(xx, yy, {255, 255, 255});
        }
    }
    for (std::size_t i = 0; i < text.size(); ++i)
    {
        const char c = static_cast<char>(
            std::toupper(static_cast<unsigned char>(text[i])));
        const auto* glyph =
            std::find_if(std::begin(font), std::end(font),
                         [c](const Glyph& g) { return g.c == c; });
        if (glyph == std::end(font))
        {
            continue;
        }
        const std::int64_t left = x + static_cast<std::int64_t>(i) * advance;
        for (std::int64_t row = 0; row < 7; ++row)
        {
            for (std::int64_t col = 0; col < 5; ++col)
            {
                if ((glyph->rows[static_cast<std::size_t>(row)] >> (4 - col) &
                     1U) == 0)
                {
                    continue;
                }
                for (std::int64_t dy = 0; dy < scale; ++dy)
                {
                    for (std::int64_t dx = 0; dx < scale; ++dx)
                    {
                        image.set(left + col * scale + dx, y + row * scale + dy,
                                  colour);
                    }
                }
            }
        }
    }
}

} // namespace

std::uint32_t crc32(const std::uint8_t* data, std::size_t size,
                    std::uint32_t crc) noexcept
{
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t n = 0; n < 256; ++n)
        {
            std::uint32_t c = n;
            for (int k = 0; k < 8; ++k)
            {
                c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
            }
            t[n] = c;
        }
        return t;
    }();
    crc = ~crc;
    for (std::size_t i = 0; i < size; ++i)
    {
        crc = table[(crc ^ data[i]) & 0xFFU] ^ (crc >> 8);
    }
    return ~crc;
}

std::uint32_t adler32(const std::uint8_t* data, std::size_t size) noexcept
{
    constexpr std::uint32_t mod = 65521;
    std::uint32_t a = 1;
    std::uint32_t b = 0;
    for (std::size_t i = 0; i < size; ++i)
    {
        a = (a + data[i]) % mod;
        b = (b + a) % mod;
    }
    return (b << 16) | a;
}

Image::Image(std::uint32_t width, std::uint32_t height, Rgb fill) :
    width_(width), height_(height), rgb_(std::size_t{width} * height * 3)
{
    for (std::size_t i = 0; i < rgb_.size(); i += 3)
    {
        rgb_[i] = fill.r;
        rgb_[i + 1] = fill.g;
        rgb_[i + 2] = fill.b;
    }
}

void Image::set(std::int64_t x, std::int64_t y, Rgb colour) noexcept
{
    if (x < 0 || y < 0 || x >= width_ || y >= height_)
    {
        return;
    }
    const std::size_t i =
        (static_cast<std::size_t>(y) * width_ + static_cast<std::size_t>(x)) *
        3;
    rgb_[i] = colour.r;
    rgb_[i + 1] = colour.g;
    rgb_[i + 2] = colour.b;
}

Rgb Image::at(std::uint32_t x, std::uint32_t y) const
{
    const std::size_t i = (std::size_t{y} * width_ + x) * 3;
    return {rgb_.at(i), rgb_.at(i + 1), rgb_.at(i + 2)};
}

std::vector<std::uint8_t> Image::png() const
{
    // Each row: filter type 0, then its pixels.
    std::vector<std::uint8_t> raw;
    raw.reserve(std::size_t{height_} * (1 + std::size_t{width_} * 3));
    for (std::uint32_t y = 0; y < height_; ++y)
    {
        raw.push_back(0);
        const auto row = rgb_.begin() + static_cast<std::ptrdiff_t>(
                                            std::size_t{y} * width_ * 3);
        raw.insert(raw.end(), row,
                   row + static_cast<std::ptrdiff_t>(std::size_t{width_} * 3));
    }
    // zlib: CMF/FLG (deflate, 32 K window, no dictionary), stored blocks
    // of at most 65535 bytes, Adler-32.
    std::vector<std::uint8_t> z{0x78, 0x01};
    std::size_t at = 0;
    do
    {
        const std::size_t n = std::min<std::size_t>(65535, raw.size() - at);
        const bool last = at + n == raw.size();
        z.push_back(last ? 1 : 0);
        const auto len = static_cast<std::uint16_t>(n);
        const auto nlen = static_cast<std::uint16_t>(~len);
        z.push_back(static_cast<std::uint8_t>(len & 0xFFU));
        z.push_back(static_cast<std::uint8_t>(len >> 8));
        z.push_back(static_cast<std::uint8_t>(nlen & 0xFFU));
        z.push_back(static_cast<std::uint8_t>(nlen >> 8));
        z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(at),
                 raw.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
    } while (at < raw.size());
    put32(z, adler32(raw.data(), raw.size()));

    std::vector<std::uint8_t> out{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    std::vector<std::uint8_t> header;
    put32(header, width_);
    put32(header, height_);
    // 8 bits, RGB, deflate, filter method 0, no interlace.
    header.insert(header.end(), {8, 2, 0, 0, 0});
    chunk(out, "IHDR", header);
    chunk(out, "IDAT", z);
    chunk(out, "IEND", {});
    return out;
}

void writePlot(const std::filesystem::path& file, const std::string& title,
               const std::vector<PlotSeries>& series, double topPerf,
               const std::vector<double>& levels)
{
    std::size_t width = 1;
    for (const PlotSeries& s : series)
    {
        width = std::max(width, s.requested.size());
    }
    const auto panels = static_cast<std::uint32_t>(series.size());
    Image image(static_cast<std::uint32_t>(width),
                titleHeight + panels * panelHeight + (panels + 1) * gap);
    drawText(image, 2, 4, title, {0, 0, 0}, 1);
    const auto yOf = [topPerf](std::uint32_t top, double perf) {
        const double f = std::clamp(perf / topPerf, 0.0, 1.0);
        return static_cast<std::int64_t>(
            top + panelHeight - 1 - std::lround(f * (panelHeight - 1)));
    };
    for (std::uint32_t p = 0; p < panels; ++p)
    {
        const PlotSeries& s = series[p];
        const std::uint32_t top = titleHeight + gap + p * (panelHeight + gap);
        for (std::size_t x = 0; x < s.busy.size(); ++x)
        {
            const auto grey = static_cast<std::uint8_t>(
                255 - std::lround(std::clamp(s.busy[x], 0.0, 1.0) * 85));
            for (std::uint32_t y = top; y < top + panelHeight; ++y)
            {
                image.set(static_cast<std::int64_t>(x), y, {grey, grey, grey});
            }
        }
        for (const double level : levels)
        {
            const std::int64_t y = yOf(top, level);
            for (std::size_t x = 0; x < width; x += 4)
            {
                image.set(static_cast<std::int64_t>(x), y, {120, 120, 120});
            }
        }
        // The panel's frame.
        for (std::size_t x = 0; x < width; ++x)
        {
            image.set(static_cast<std::int64_t>(x), top - 1, {0, 0, 0});
            image.set(static_cast<std::int64_t>(x), top + panelHeight,
                      {0, 0, 0});
            if (x % markEvery == 0)
            {
                for (std::uint32_t d = 1; d <= 4; ++d)
                {
                    image.set(static_cast<std::int64_t>(x),
                              top + panelHeight - d, {0, 0, 0});
                }
            }
        }
        // The request, two pixels thick, joined vertically.
        std::int64_t previous = -1;
        for (std::size_t x = 0; x < s.requested.size(); ++x)
        {
            const std::int64_t y = yOf(top, s.requested[x]);
            const std::int64_t from = previous < 0 ? y : std::min(previous, y);
            const std::int64_t to = previous < 0 ? y : std::max(previous, y);
            for (std::int64_t yy = from; yy <= to; ++yy)
            {
                image.set(static_cast<std::int64_t>(x), yy, s.colour);
                image.set(static_cast<std::int64_t>(x), yy - 1, s.colour);
            }
            previous = y;
        }
        drawText(image, 6, top + 4, s.name, s.colour, 2);
    }
    const std::vector<std::uint8_t> bytes = image.png();
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out)
    {
        throw std::runtime_error(
            "cannot write the plot '" + file.string() + "'");
    }
}

} // namespace cppc::bench
