// SPDX-License-Identifier: Apache-2.0
#include "bench/png_plot.hpp"

#include "tools/bitmap_font.hpp"
#include "tools/png_encoder.hpp"

#include <algorithm>
#include <array>
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

using cppcgov::tools::Raster;

// One pixel; nothing outside the image.
void put(Raster& image, std::int64_t x, std::int64_t y, Rgb colour) noexcept
{
    if (x >= 0 && y >= 0 && x < image.width() && y < image.height())
    {
        image.set(static_cast<int>(x), static_cast<int>(y), colour);
    }
}

// Draws `text` with its top left at (x, y), each font pixel a square of
// `scale`, on a white box one font pixel wider all round.
void drawText(Raster& image, std::int64_t x, std::int64_t y,
              const std::string& text, Rgb colour, std::int64_t scale)
{
    using cppcgov::tools::glyphAdvance;
    using cppcgov::tools::glyphHeight;
    using cppcgov::tools::glyphWidth;
    const auto length = static_cast<std::int64_t>(text.size());
    image.fill(static_cast<int>(x - scale), static_cast<int>(y - scale),
               static_cast<int>(length * glyphAdvance * scale + scale),
               static_cast<int>((glyphHeight + 1) * scale + scale),
               {255, 255, 255});
    for (std::size_t i = 0; i < text.size(); ++i)
    {
        const auto rows = cppcgov::tools::glyph(text[i]);
        const std::int64_t left =
            x + static_cast<std::int64_t>(i) * glyphAdvance * scale;
        for (std::int64_t row = 0; row < glyphHeight; ++row)
        {
            for (std::int64_t col = 0; col < glyphWidth; ++col)
            {
                if ((rows[static_cast<std::size_t>(row)] >>
                         (glyphWidth - 1 - col) &
                     1U) == 0)
                {
                    continue;
                }
                image.fill(static_cast<int>(left + col * scale),
                           static_cast<int>(y + row * scale),
                           static_cast<int>(scale), static_cast<int>(scale),
                           colour);
            }
        }
    }
}

} // namespace

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
    Raster image(static_cast<std::uint32_t>(width),
                 titleHeight + panels * panelHeight + (panels + 1) * gap,
                 {255, 255, 255});
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
                put(image, static_cast<std::int64_t>(x), y, {grey, grey, grey});
            }
        }
        for (const double level : levels)
        {
            const std::int64_t y = yOf(top, level);
            for (std::size_t x = 0; x < width; x += 4)
            {
                put(image, static_cast<std::int64_t>(x), y, {120, 120, 120});
            }
        }
        // The panel's frame.
        for (std::size_t x = 0; x < width; ++x)
        {
            put(image, static_cast<std::int64_t>(x), top - 1, {0, 0, 0});
            put(image, static_cast<std::int64_t>(x), top + panelHeight,
                {0, 0, 0});
            if (x % markEvery == 0)
            {
                for (std::uint32_t d = 1; d <= 4; ++d)
                {
                    put(image, static_cast<std::int64_t>(x),
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
                put(image, static_cast<std::int64_t>(x), yy, s.colour);
                put(image, static_cast<std::int64_t>(x), yy - 1, s.colour);
            }
            previous = y;
        }
        drawText(image, 6, top + 4, s.name, s.colour, 2);
    }
    const std::string bytes = cppcgov::tools::encodePng(image);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out)
    {
        throw std::runtime_error(
            "cannot write the plot '" + file.string() + "'");
    }
}

} // namespace cppc::bench
