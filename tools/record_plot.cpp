// SPDX-License-Identifier: Apache-2.0
#include "record_plot.hpp"

#include "bitmap_font.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::tools
{

namespace
{

constexpr int titleY = 6;
constexpr int legendY = 20;
constexpr int hintsY = 36;
constexpr int laneHeight = 10;
constexpr std::size_t maxLanes = 8;
constexpr int stripHeight = 40;
constexpr int stripGap = 6;
constexpr int heatmapHeight = 480;
constexpr Rgb frame{200, 200, 200};
// How many empty buckets a column bridges with the one before them.
constexpr std::size_t maxHeldBuckets = 4;

// The averages of one pixel column of a row: nothing without samples.
struct Column
{
    bool any = false;
    double util = 0;
    double requested = 0;
    std::optional<double> delivered;
};

// Maps the recording's time onto the pixels of the axis.
class TimeAxis
{
  public:
    explicit TimeAxis(std::uint64_t durationUs) :
        durationUs_(std::max<std::uint64_t>(durationUs, 1))
    {}

    int x(std::uint64_t us) const noexcept
    {
        const std::uint64_t clamped = std::min(us, durationUs_);
        return plotLeft +
               static_cast<int>(clamped * (plotRight - plotLeft) / durationUs_);
    }

    // Pixel column c's time range [first, second).
    std::pair<std::uint64_t, std::uint64_t> range(int c) const noexcept
    {
        const auto width = static_cast<std::uint64_t>(plotRight - plotLeft);
        const auto uc = static_cast<std::uint64_t>(c);
        return {uc * durationUs_ / width, (uc + 1) * durationUs_ / width};
    }

    std::uint64_t durationUs() const noexcept
    {
        return durationUs_;
    }

  private:
    std::uint64_t durationUs_;
};

Column column(const RecordTimeline& t, std::size_t row, const TimeAxis& axis,
              int c)
{
    const auto [from, to] = axis.range(c);
    const auto& buckets = t.buckets(row);
    const std::size_t first = from / t.bucketUs();
    const std::size_t last = std::max<std::size_t>(
        first + 1, (to + t.bucketUs() - 1) / t.bucketUs());
    TimelineBucket sum;
    const auto add = [&sum](const TimelineBucket& b) {
        sum.util += b.util;
        sum.requested += b.requested;
        sum.delivered += b.delivered;
        sum.samples += b.samples;
        sum.deliveredSamples += b.deliveredSamples;
    };
    for (std::size_t i = first; i < last && i < buckets.size(); ++i)
    {
        add(buckets[i]);
    }
    // A sample that came late (a slow answer) leaves buckets empty: the
    // column holds the last bucket of the few before rather than show a
    // gap.
    for (std::size_t back = 1;
         sum.samples == 0 && back <= maxHeldBuckets && back <= first; ++back)
    {
        if (first - back < buckets.size())
        {
            add(buckets[first - back]);
        }
    }
    Column col;
    if (sum.samples == 0)
    {
        return col;
    }
    col.any = true;
    col.util = static_cast<double>(sum.util) / sum.samples;
    col.requested = static_cast<double>(sum.requested) / sum.samples;
    if (sum.deliveredSamples != 0)
    {
        col.delivered =
            static_cast<double>(sum.delivered) / sum.deliveredSamples;
    }
    return col;
}

Rgb blend(Rgb from, Rgb to, double f)
{
    f = std::clamp(f, 0.0, 1.0);
    const auto mix = [f](std::uint8_t a, std::uint8_t b) {
        return static_cast<std::uint8_t>(std::lround(a + (b - a) * f));
    };
    return {mix(from.r, to.r), mix(from.g, to.g), mix(from.b, to.b)};
}

void outline(Raster& image, int x, int y, int w, int h, Rgb c)
{
    image.fill(x, y, w, 1, c);
    image.fill(x, y + h - 1, w, 1, c);
    image.fill(x, y, 1, h, c);
    image.fill(x + w - 1, y, 1, h, c);
}

// Lanes for the spans so that none overlaps another in its lane (up to
// maxLanes, the last one shared): each span's lane.
std::vector<std::size_t> assignLanes(const std::vector<HintSpan>& spans,
                                     std::uint64_t durationUs,
                                     std::size_t& lanes)
{
    std::vector<std::uint64_t> freeFrom;
    std::vector<std::size_t> lane(spans.size());
    for (std::size_t i = 0; i < spans.size(); ++i)
    {
        const HintSpan& s = spans[i];
        std::size_t l = 0;
        while (l < freeFrom.size() && freeFrom[l] > s.beginUs)
        {
            ++l;
        }
        if (l == freeFrom.size())
        {
            if (freeFrom.size() < maxLanes)
            {
                freeFrom.push_back(0);
            }
            else
            {
                l = maxLanes - 1;
            }
        }
        freeFrom[l] = std::max(freeFrom[l], s.endUs.value_or(durationUs) + 1);
        lane[i] = l;
    }
    lanes = freeFrom.size();
    return lane;
}

void drawLegend(Raster& image, bool strips)
{
    struct Entry
    {
        Rgb color;
        std::string_view name;
    };
    const std::array<Entry, 5> entries = {{
        strips ? Entry{plot_colors::util, "util 0-1024"}
               : Entry{plot_colors::hotUtil, "util (upper half)"},
        strips ? Entry{plot_colors::requested, "requested perf"}
               : Entry{plot_colors::hotPerf, "requested perf (lower half)"},
        strips ? Entry{plot_colors::delivered, "delivered perf"}
               : Entry{plot_colors::stripBackground, ""},
        {plot_colors::clamp, "clamp"},
        {plot_colors::latency, "latency"},
    }};
    int x = plotLeft;
    for (const Entry& e : entries)
    {
        if (e.name.empty())
        {
            continue;
        }
        image.fill(x, legendY, 7, 7, e.color);
        drawText(image, x + 10, legendY, e.name, plot_colors::text);
        x += 10 + textWidth(e.name) + 16;
    }
}

void drawHints(Raster& image, const RecordTimeline& t, const TimeAxis& axis,
               const std::vector<std::size_t>& lanes)
{
    const auto& spans = t.spans();
    for (std::size_t i = 0; i < spans.size(); ++i)
    {
        const HintSpan& s = spans[i];
        const int x0 = axis.x(s.beginUs);
        const int x1 =
            std::max(axis.x(s.endUs.value_or(axis.durationUs())), x0 + 1);
        const int y = hintsY + static_cast<int>(lanes[i]) * laneHeight;
        const Rgb color =
            s.kind == "latency" ? plot_colors::latency : plot_colors::clamp;
        image.fill(x0, y, x1 - x0, laneHeight - 2, color);
        const std::string label = "#" + std::to_string(s.handle);
        if (textWidth(label) + 4 <= x1 - x0)
        {
            drawText(image, x0 + 2, y, label, plot_colors::background);
        }
    }
}

// Dotted lines from `top` to `bottom` where each hint begins.
void markHintStarts(Raster& image, const RecordTimeline& t,
                    const TimeAxis& axis, int top, int bottom)
{
    for (const HintSpan& s : t.spans())
    {
        const Rgb color =
            s.kind == "latency" ? plot_colors::latency : plot_colors::clamp;
        for (int y = top; y < bottom; y += 3)
        {
            image.set(axis.x(s.beginUs), y, color);
        }
    }
}

void drawStrip(Raster& image, const RecordTimeline& t, std::size_t row,
               const TimeAxis& axis, std::uint32_t perfScale, int top)
{
    image.fill(plotLeft, top, plotRight - plotLeft, stripHeight,
               plot_colors::stripBackground);
    const int bottom = top + stripHeight - 1;
    const auto perfY = [bottom, perfScale](double p) {
        const double f = std::clamp(p / perfScale, 0.0, 1.0);
        return bottom - static_cast<int>(std::lround(f * (stripHeight - 1)));
    };
    // The y of each line in the previous column; -1: no line there.
    int lastRequested = -1;
    int lastDelivered = -1;
    const auto line = [&image](int x, int& last, int y, Rgb c) {
        const int from = last < 0 ? y : last;
        image.fill(x, std::min(from, y), 1, std::abs(from - y) + 1, c);
        last = y;
    };
    for (int c = 0; c < plotRight - plotLeft; ++c)
    {
        const Column col = column(t, row, axis, c);
        const int x = plotLeft + c;
        if (!col.any)
        {
            lastRequested = -1;
            lastDelivered = -1;
            continue;
        }
        const int filled = static_cast<int>(std::lround(
            std::clamp(col.util / 1024.0, 0.0, 1.0) * (stripHeight - 1)));
        image.fill(x, bottom - filled + 1, 1, filled, plot_colors::util);
        if (col.delivered)
        {
            line(x, lastDelivered, perfY(*col.delivered),
                 plot_colors::delivered);
        }
        else
        {
            lastDelivered = -1;
        }
        line(x, lastRequested, perfY(col.requested), plot_colors::requested);
    }
    outline(image, plotLeft - 1, top - 1, plotRight - plotLeft + 2,
            stripHeight + 2, frame);
}

// A heatmap row: utilization in its upper half, requested performance in
// its lower half (all utilization for a row of one pixel).
void drawHeatRow(Raster& image, const RecordTimeline& t, std::size_t row,
                 const TimeAxis& axis, std::uint32_t perfScale, int top,
                 int height)
{
    const int utilHeight = height - height / 2;
    for (int c = 0; c < plotRight - plotLeft; ++c)
    {
        const Column col = column(t, row, axis, c);
        if (!col.any)
        {
            image.fill(plotLeft + c, top, 1, height,
                       plot_colors::stripBackground);
            continue;
        }
        image.fill(plotLeft + c, top, 1, utilHeight,
                   blend(plot_colors::background, plot_colors::hotUtil,
                         col.util / 1024.0));
        image.fill(plotLeft + c, top + utilHeight, 1, height - utilHeight,
                   blend(plot_colors::background, plot_colors::hotPerf,
                         col.requested / perfScale));
    }
}

// The time between ticks: at most ten along the axis.
std::uint64_t tickStep(std::uint64_t durationUs)
{
    constexpr std::array<std::uint64_t, 14> steps = {
        100'000,     200'000,     500'000,       1'000'000,    2'000'000,
        5'000'000,   10'000'000,  30'000'000,    60'000'000,   120'000'000,
        300'000'000, 600'000'000, 1'800'000'000, 3'600'000'000};
    for (const std::uint64_t s : steps)
    {
        if (durationUs / s <= 10)
        {
            return s;
        }
    }
    return steps.back() * (durationUs / steps.back() / 10 + 1);
}

std::string seconds(std::uint64_t us, std::uint64_t step)
{
    std::string s = std::to_string(us / 1'000'000);
    if (step < 1'000'000)
    {
        s += "." + std::to_string(us % 1'000'000 / 100'000);
    }
    return s;
}

void drawAxis(Raster& image, const TimeAxis& axis, int y)
{
    image.fill(plotLeft, y, plotRight - plotLeft, 1, plot_colors::text);
    const std::uint64_t step = tickStep(axis.durationUs());
    for (std::uint64_t us = 0; us <= axis.durationUs(); us += step)
    {
        const int x = axis.x(us);
        image.fill(x, y, 1, 4, plot_colors::text);
        const std::string label = seconds(us, step);
        drawText(image, x - textWidth(label) / 2, y + 6, label,
                 plot_colors::text);
    }
    drawText(image, plotRight - textWidth("time s"), y + 16, "time s",
             plot_colors::text);
}

} // namespace

Raster renderRecordPlot(const RecordTimeline& timeline,
                        std::span<const std::uint32_t> cpus,
                        std::uint32_t perfScale, std::string_view title)
{
    perfScale = std::max<std::uint32_t>(perfScale, 1);
    const TimeAxis axis(timeline.durationUs());
    std::size_t lanes = 0;
    const std::vector<std::size_t> lane =
        assignLanes(timeline.spans(), axis.durationUs(), lanes);

    const std::size_t rows = std::min(cpus.size(), timeline.rows());
    const bool strips = rows <= stripCpuLimit;
    const int rowHeight =
        strips
            ? stripHeight
            : std::clamp(heatmapHeight /
                             static_cast<int>(std::max<std::size_t>(rows, 1)),
                         2, 8);
    const int gap = strips ? stripGap : 0;
    const int firstRow =
        hintsY + std::max(static_cast<int>(lanes), 1) * laneHeight + 8;
    const int rowsEnd = firstRow + static_cast<int>(rows) * (rowHeight + gap);
    const int height = rowsEnd + 32;

    Raster image(plotWidth, static_cast<std::uint32_t>(height),
                 plot_colors::background);
    drawText(image, plotLeft, titleY, title, plot_colors::text);
    drawLegend(image, strips);
    drawText(image, 4, hintsY, "hints", plot_colors::text);
    if (timeline.spans().empty())
    {
        drawText(image, plotLeft, hintsY, "none", plot_colors::text);
    }
    drawHints(image, timeline, axis, lane);
    if (timeline.spansDropped() != 0)
    {
        drawText(image, 4, hintsY + laneHeight,
                 "+" + std::to_string(timeline.spansDropped()),
                 plot_colors::text);
    }

    // Heatmap rows get a label where one fits.
    const int labelEvery =
        strips ? 1 : std::max(1, (glyphHeight + 2 + rowHeight - 1) / rowHeight);
    for (std::size_t r = 0; r < rows; ++r)
    {
        const int top = firstRow + static_cast<int>(r) * (rowHeight + gap);
        if (strips)
        {
            drawStrip(image, timeline, r, axis, perfScale, top);
        }
        else
        {
            drawHeatRow(image, timeline, r, axis, perfScale, top, rowHeight);
        }
        if (static_cast<int>(r) % labelEvery == 0)
        {
            // A tick says which row a label of a thin row is for.
            if (!strips)
            {
                image.fill(plotLeft - 5, top, 3, rowHeight, plot_colors::text);
            }
            const std::string label = "cpu " + std::to_string(cpus[r]);
            drawText(image, 4, top + std::max(0, (rowHeight - glyphHeight) / 2),
                     label, plot_colors::text);
        }
    }
    markHintStarts(image, timeline, axis, firstRow, rowsEnd);
    drawAxis(image, axis, rowsEnd + 2);
    const std::string scale = "perf 0-" + std::to_string(perfScale);
    drawText(image, plotRight - textWidth(scale), titleY, scale,
             plot_colors::text);
    return image;
}

} // namespace cppcgov::tools
