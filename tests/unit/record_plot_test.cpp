// SPDX-License-Identifier: Apache-2.0
// The record command's picture without a bus: the PNG encoder (decoded
// back here with zlib: signature, chunk CRCs, IHDR, inflated rows), the
// bitmap font, the bounded timeline and the plot drawn from it.
#include "tools/bitmap_font.hpp"
#include "tools/png_encoder.hpp"
#include "tools/raster.hpp"
#include "tools/record_plot.hpp"
#include "tools/record_timeline.hpp"

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::tools
{
namespace
{

std::uint32_t bigEndian(const std::string& s, std::size_t at)
{
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i)
    {
        v = (v << 8) | static_cast<unsigned char>(s.at(at + i));
    }
    return v;
}

struct Chunk
{
    std::string type;
    std::string data;
};

struct DecodedPng
{
    std::uint32_t width = 0;
    std::uint32_t height = 0;
    std::vector<Chunk> chunks;
    std::string rows; // inflated: per row a filter byte and RGB pixels

    Rgb at(std::uint32_t x, std::uint32_t y) const
    {
        const std::size_t i = std::size_t{y} * (1 + std::size_t{width} * 3) +
                              1 + std::size_t{x} * 3;
        return {static_cast<std::uint8_t>(rows.at(i)),
                static_cast<std::uint8_t>(rows.at(i + 1)),
                static_cast<std::uint8_t>(rows.at(i + 2))};
    }
};

// Decodes what encodePng writes, checking every CRC on the way.
DecodedPng decode(const std::string& png)
{
    DecodedPng d;
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    std::size_t at = 8;
    std::string idat;
    while (at + 12 <= png.size())
    {
        const std::uint32_t length = bigEndian(png, at);
        Chunk c{png.substr(at + 4, 4), png.substr(at + 8, length)};
        const std::uint32_t stored = bigEndian(png, at + 8 + length);
        uLong crc = crc32(0L, Z_NULL, 0);
        const std::string body = c.type + c.data;
        crc = crc32(crc, reinterpret_cast<const Bytef*>(body.data()),
                    static_cast<uInt>(body.size()));
        EXPECT_EQ(stored, static_cast<std::uint32_t>(crc)) << c.type;
        if (c.type == "IDAT")
        {
            idat += c.data;
        }
        d.chunks.push_back(std::move(c));
        at += 12 + length;
    }
    EXPECT_EQ(at, png.size());
    if (d.chunks.empty() || d.chunks.front().type != "IHDR")
    {
        ADD_FAILURE() << "no IHDR first";
        return d;
    }
    const std::string& h = d.chunks.front().data;
    EXPECT_EQ(h.size(), 13U);
    d.width = bigEndian(h, 0);
    d.height = bigEndian(h, 4);
    EXPECT_EQ(h.substr(8), std::string("\x08\x02\x00\x00\x00", 5));
    uLongf size = (1 + std::size_t{d.width} * 3) * d.height;
    d.rows.resize(size + 1);
    const int rc = uncompress(reinterpret_cast<Bytef*>(d.rows.data()), &size,
                              reinterpret_cast<const Bytef*>(idat.data()),
                              static_cast<uLong>(idat.size()));
    EXPECT_EQ(rc, Z_OK);
    EXPECT_EQ(size, (1 + std::size_t{d.width} * 3) * d.height);
    d.rows.resize(size);
    return d;
}

TEST(Png, DecodesToThePixelsDrawn)
{
    constexpr Rgb red{255, 0, 0};
    constexpr Rgb grey{10, 20, 30};
    Raster image(7, 5, grey);
    image.set(0, 0, red);
    image.set(6, 4, red);
    image.fill(2, 1, 3, 2, Rgb{1, 2, 3});
    image.set(-1, 0, red); // outside: nothing
    image.set(7, 4, red);
    const DecodedPng d = decode(encodePng(image));
    ASSERT_EQ(d.width, 7U);
    ASSERT_EQ(d.height, 5U);
    std::vector<std::string> types;
    for (const Chunk& c : d.chunks)
    {
        types.push_back(c.type);
    }
    EXPECT_EQ(types, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));
    for (std::uint32_t y = 0; y < 5; ++y)
    {
        EXPECT_EQ(d.rows.at(std::size_t{y} * (1 + 7 * 3)), '\0')
            << "filter of row " << y;
        for (std::uint32_t x = 0; x < 7; ++x)
        {
            EXPECT_EQ(d.at(x, y), image.at(x, y)) << x << "," << y;
        }
    }
    EXPECT_EQ(d.at(0, 0), red);
    EXPECT_EQ(d.at(6, 4), red);
    EXPECT_EQ(d.at(3, 2), (Rgb{1, 2, 3}));
    EXPECT_EQ(d.at(1, 0), grey);
}

TEST(Png, ChunkCrcIsPngs)
{
    // IEND's CRC, as every PNG file ends.
    EXPECT_EQ(pngChunkCrc("IEND"), 0xAE426082U);
}

TEST(Raster, RefusesEmptyAndHugeImages)
{
    EXPECT_THROW(Raster(0, 10, {}), std::invalid_argument);
    EXPECT_THROW(Raster(10, 20000, {}), std::invalid_argument);
}

TEST(BitmapFont, DrawsGlyphBits)
{
    Raster image(20, 10, {});
    constexpr Rgb white{255, 255, 255};
    drawText(image, 1, 1, "1-", white);
    const auto one = glyph('1');
    for (int r = 0; r < glyphHeight; ++r)
    {
        for (int c = 0; c < glyphWidth; ++c)
        {
            const bool on =
                (one[static_cast<std::size_t>(r)] >> (glyphWidth - 1 - c)) & 1U;
            EXPECT_EQ(image.at(static_cast<std::uint32_t>(1 + c),
                               static_cast<std::uint32_t>(1 + r)) == white,
                      on)
                << r << "," << c;
        }
    }
    // '-' is the middle row of the second cell.
    EXPECT_EQ(image.at(1 + glyphAdvance, 1 + 3), white);
    EXPECT_EQ(image.at(1 + glyphAdvance, 1 + 2), Rgb{});
    EXPECT_EQ(textWidth("1-"), 2 * glyphAdvance - 1);
    EXPECT_EQ(glyph('a'), glyph('A'));
    EXPECT_EQ(glyph('~'), glyph('?'));
    EXPECT_NE(glyph('0'), glyph('O'));
}

TEST(RecordTimeline, MergesBucketsToStayBounded)
{
    RecordTimeline t(2, 1000, 10);
    for (std::uint64_t i = 0; i < 5000; ++i)
    {
        t.add(0, 1000 + i * 10, 100, 2000, i % 2 == 0 ? 1000 : 0);
    }
    t.add(1, 1000 + 4999 * 10, 1024, 3000, 3000);
    EXPECT_LE(t.buckets(0).size(), RecordTimeline::bucketCapacity);
    EXPECT_EQ(t.bucketUs(), 80U); // 5000 samples of 10 us in 1024 buckets
    std::uint64_t samples = 0;
    std::uint64_t util = 0;
    std::uint64_t delivered = 0;
    for (const TimelineBucket& b : t.buckets(0))
    {
        samples += b.samples;
        util += b.util;
        delivered += b.deliveredSamples;
    }
    EXPECT_EQ(samples, 5000U);
    EXPECT_EQ(util, 5000U * 100);
    EXPECT_EQ(delivered, 2500U);
    EXPECT_EQ(t.buckets(1).back().util, 1024U);
    EXPECT_EQ(t.durationUs(), 49'990U);
    EXPECT_EQ(t.maxPerf(), 3000U);
    // A sample before the start counts at the start.
    t.add(1, 0, 5, 5, 5);
    EXPECT_EQ(t.buckets(1).front().util, 5U);
}

TEST(RecordTimeline, KeepsAtMostSpanCapacitySpans)
{
    RecordTimeline t(1, 100, 10);
    t.hintEnded(99, 150); // never began: ignored
    for (std::uint64_t h = 1; h <= RecordTimeline::spanCapacity + 5; ++h)
    {
        t.hintBegan(h, "clamp", 100 + h);
    }
    t.hintEnded(3, 200);
    EXPECT_EQ(t.spans().size(), RecordTimeline::spanCapacity);
    EXPECT_EQ(t.spansDropped(), 5U);
    EXPECT_EQ(t.spans()[2], (HintSpan{3, "clamp", 3, 100}));
    EXPECT_FALSE(t.spans()[0].endUs);
}

// How many pixels of `image` inside the rectangle have colour `c`.
std::size_t count(const Raster& image, Rgb c, std::uint32_t x0,
                  std::uint32_t y0, std::uint32_t x1, std::uint32_t y1)
{
    std::size_t n = 0;
    for (std::uint32_t y = y0; y < y1 && y < image.height(); ++y)
    {
        for (std::uint32_t x = x0; x < x1 && x < image.width(); ++x)
        {
            n += image.at(x, y) == c ? 1 : 0;
        }
    }
    return n;
}

TEST(RecordPlot, StripsShowUtilPerfAndHints)
{
    // CPU 0 idle at perf 1000 (delivering 900), CPU 1 busy at 3000 during the
    // second half, under a clamp; a latency request still live at the end.
    RecordTimeline t(2, 0, 10'000);
    for (std::uint64_t ms = 0; ms <= 2000; ms += 10)
    {
        t.add(0, ms * 1000, 0, 1000, 900);
        const bool busy = ms >= 1000;
        t.add(1, ms * 1000, busy ? 1024 : 0, busy ? 3000 : 1000, 0);
    }
    t.hintBegan(7, "clamp", 1'000'000);
    t.hintEnded(7, 1'500'000);
    t.hintBegan(8, "latency", 1'200'000);
    t.end(2'000'000);
    const std::vector<std::uint32_t> cpus{0, 1};
    const Raster image = renderRecordPlot(t, cpus, 3000, "test plot");
    EXPECT_EQ(image.width(), static_cast<std::uint32_t>(plotWidth));
    const std::uint32_t mid = (plotLeft + plotRight) / 2;
    const std::uint32_t h = image.height();
    // Below the legend: util fills only the busy half of the picture.
    const std::uint32_t top = 30;
    EXPECT_EQ(count(image, plot_colors::util, plotLeft, top, mid - 2, h), 0U);
    EXPECT_GT(count(image, plot_colors::util, mid + 2, top, plotRight, h),
              1000U);
    // Both perf lines are drawn, delivered only where it is known (CPU 0).
    EXPECT_GT(count(image, plot_colors::requested, plotLeft, top, plotRight, h),
              2 * 800U);
    const std::size_t delivered =
        count(image, plot_colors::delivered, plotLeft, top, plotRight, h);
    EXPECT_GT(delivered, 800U);
    EXPECT_LT(delivered, 1000U);
    // The clamp's bar covers a quarter of the axis, the latency's 40 %.
    const std::size_t clampPixels =
        count(image, plot_colors::clamp, 0, 0, plotWidth, h);
    const std::size_t latencyPixels =
        count(image, plot_colors::latency, 0, 0, plotWidth, h);
    EXPECT_GT(clampPixels, (plotRight - plotLeft) / 4 * 6);
    EXPECT_GT(latencyPixels, clampPixels);
    // Labels are drawn in the text colour left of the axis.
    EXPECT_GT(count(image, plot_colors::text, 0, 0, plotLeft - 4, h), 50U);
}

TEST(RecordPlot, ManyCpusGetAHeatmap)
{
    constexpr std::size_t n = 192;
    RecordTimeline t(n, 0, 10'000);
    std::vector<std::uint32_t> cpus;
    for (std::size_t cpu = 0; cpu < n; ++cpu)
    {
        cpus.push_back(static_cast<std::uint32_t>(cpu));
        for (std::uint64_t ms = 0; ms <= 1000; ms += 10)
        {
            t.add(cpu, ms * 1000, cpu == 100 ? 1024 : 0, 1000, 1000);
        }
    }
    const Raster image = renderRecordPlot(t, cpus, 3000, "many");
    EXPECT_LT(image.height(), 700U);
    // One row's util half is dark, the idle ones white; every row's perf
    // half a third of the way to its full colour; no strip lines.
    EXPECT_GT(count(image, plot_colors::hotUtil, plotLeft, 30, plotRight,
                    image.height()),
              800U);
    constexpr Rgb third{225, 188, 171}; // white a third to hotPerf
    EXPECT_GT(count(image, third, plotLeft, 30, plotRight, image.height()),
              n * 800U);
    EXPECT_EQ(count(image, plot_colors::requested, 0, 30, plotWidth,
                    image.height()),
              0U);
}

TEST(RecordPlot, EmptyRecordingStillDraws)
{
    const RecordTimeline t(1, 0, 10'000);
    const std::vector<std::uint32_t> cpus{3};
    const Raster image = renderRecordPlot(t, cpus, 0, "");
    EXPECT_GT(image.height(), 50U);
}

} // namespace
} // namespace cppcgov::tools
