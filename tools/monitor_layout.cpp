// SPDX-License-Identifier: Apache-2.0
#include "monitor_layout.hpp"

#include "lib/cpu_list.hpp"
#include "statistics_text.hpp"
#include "text_table.hpp"

#include <algorithm>
#include <sstream>

namespace cppcgov::tools
{
namespace
{

// The bar's cells at most, and the fewest worth showing.
constexpr std::size_t widestBar = 20;
constexpr std::size_t narrowestBar = 5;

// The table's lines (the column names first), with a utilization bar of
// `bar` cells after UTIL, or none for 0.
std::vector<std::string> tableLines(const std::vector<CpuRow>& rows,
                                    std::size_t bar)
{
    using Align = TextTable::Align;
    std::vector<TextTable::Column> columns{{"CPU", Align::right},
                                           {"DOM", Align::right},
                                           {"POLICY", Align::left},
                                           {"UTIL", Align::right}};
    if (bar != 0)
    {
        columns.push_back({"", Align::left});
    }
    for (TextTable::Column c : std::vector<TextTable::Column>{
             {"CLAMP", Align::left},
             {"REQ", Align::right},
             {"MHZ", Align::right},
             {"DLV", Align::right},
             {"MHZ", Align::right},
             {"REASON", Align::left},
             {"LATENCY", Align::right},
             {"HANDLES", Align::left}})
    {
        columns.push_back(std::move(c));
    }
    TextTable table(std::move(columns));
    for (const CpuRow& r : rows)
    {
        std::vector<std::string> cells{std::to_string(r.cpu), r.domainText,
                                       r.policy, r.utilText};
        if (bar != 0)
        {
            cells.push_back(utilBar(r.util, bar));
        }
        for (const std::string* c :
             {&r.clamp, &r.requested, &r.requestedMhz, &r.delivered,
              &r.deliveredMhz, &r.reason, &r.latency, &r.handles})
        {
            cells.push_back(*c);
        }
        table.addRow(std::move(cells));
    }
    std::ostringstream text;
    table.print(text);
    std::vector<std::string> lines;
    std::istringstream in(text.str());
    for (std::string line; std::getline(in, line);)
    {
        lines.push_back(std::move(line));
    }
    return lines;
}

std::size_t widest(const std::vector<std::string>& lines)
{
    std::size_t w = 0;
    for (const std::string& l : lines)
    {
        w = std::max(w, l.size());
    }
    return w;
}

// The table at `columns` (0: unlimited): with the widest bar that fits
// beside the rest, or without one.
std::vector<std::string> fittedTable(const std::vector<CpuRow>& rows,
                                     std::size_t columns)
{
    if (columns == 0)
    {
        return tableLines(rows, widestBar);
    }
    std::vector<std::string> lines = tableLines(rows, 0);
    // A bar takes its cells, its brackets and a separator.
    const std::size_t used = widest(lines);
    if (used + 2 + 2 + narrowestBar <= columns)
    {
        return tableLines(rows, std::min(widestBar, columns - used - 4));
    }
    return lines;
}

} // namespace

std::string utilBar(std::uint16_t util, std::size_t width)
{
    const std::size_t scaled = (std::size_t{util} * width + 512) / 1024;
    const std::size_t filled = std::min(scaled, width);
    return "[" + std::string(filled, '#') + std::string(width - filled, ' ') +
           "]";
}

std::vector<std::string> monitorHeader(const GovernorSnapshot& s,
                                       std::size_t columns)
{
    const DaemonInfo& d = s.daemon;
    std::vector<std::string> lines{
        "cppcgovd " + d.version + "  " + d.backend + "  " +
            std::to_string(d.cpuCount) + " CPUs  period " +
            std::to_string(d.samplingPeriodUs) + " us  handles " +
            std::to_string(d.clampCount) + " clamp, " +
            std::to_string(d.latencyCount) + " latency",
        "policy " + policySummary(s)};
    // The statistics' pieces, as many a line as fit.
    std::string line;
    for (const std::string& piece : statisticsSummary(s.statistics))
    {
        if (!line.empty() && columns != 0 &&
            line.size() + 2 + piece.size() > columns)
        {
            lines.push_back(std::move(line));
            line.clear();
        }
        line += (line.empty() ? "" : "  ") + piece;
    }
    if (!line.empty())
    {
        lines.push_back(std::move(line));
    }
    return lines;
}

std::vector<CpuRow> groupByDomain(std::vector<CpuRow> rows)
{
    std::stable_sort(rows.begin(), rows.end(),
                     [](const CpuRow& a, const CpuRow& b) {
        return a.domain != b.domain ? a.domain < b.domain : a.cpu < b.cpu;
    });
    return rows;
}

std::size_t eventRows(TerminalSize size)
{
    if (size.rows == 0)
    {
        return 0;
    }
    if (size.rows >= 24)
    {
        return 6;
    }
    if (size.rows >= 16)
    {
        return 3;
    }
    return size.rows >= 10 ? 1 : 0;
}

MonitorLayout::MonitorLayout(std::vector<std::string> header,
                             std::vector<CpuRow> rows, TerminalSize size,
                             bool interactive, std::size_t totalCpus) :
    header_(std::move(header)),
    rows_(std::move(rows)), size_(size), interactive_(interactive),
    totalCpus_(totalCpus)
{
    std::vector<std::string> lines = fittedTable(rows_, size_.columns);
    columnLine_ = lines.front();
    rowLines_.assign(lines.begin() + 1, lines.end());

    std::size_t perPage = rows_.size();
    if (interactive_ && size_.rows != 0)
    {
        const std::size_t fixed = header_.size() + 1 + 1 + eventRows(size_);
        perPage = size_.rows > fixed ? size_.rows - fixed : 1;
    }
    perPage = std::max<std::size_t>(perPage, 1);
    // Pages break between domains where a domain fits on the next page.
    Range current;
    for (std::size_t i = 0; i < rows_.size();)
    {
        std::size_t end = i + 1;
        while (end < rows_.size() && rows_[end].domain == rows_[i].domain)
        {
            ++end;
        }
        const std::size_t domainRows = end - i;
        const std::size_t used = current.end - current.begin;
        if (used != 0 && used + domainRows > perPage && domainRows <= perPage)
        {
            pages_.push_back(current);
            current = {i, i};
        }
        for (; i < end; ++i)
        {
            if (current.end - current.begin == perPage)
            {
                pages_.push_back(current);
                current = {i, i};
            }
            current.end = i + 1;
        }
    }
    if (current.end != current.begin || pages_.empty())
    {
        pages_.push_back(current);
    }
}

std::span<const CpuRow> MonitorLayout::page(std::size_t page) const
{
    const Range r = pages_.at(std::min(page, pages_.size() - 1));
    return std::span<const CpuRow>(rows_).subspan(r.begin, r.end - r.begin);
}

std::string MonitorLayout::fit(std::string line) const
{
    if (size_.columns != 0 && line.size() > size_.columns)
    {
        line.resize(size_.columns);
    }
    while (!line.empty() && line.back() == ' ')
    {
        line.pop_back();
    }
    return line;
}

std::string MonitorLayout::footer(std::size_t page) const
{
    cppc::CpuSet shown;
    for (const CpuRow& r : this->page(page))
    {
        if (r.cpu < cppc::maxCpus)
        {
            shown.set(r.cpu);
        }
    }
    std::string text = "page " + std::to_string(page + 1) + "/" +
                       std::to_string(pages_.size()) + "  CPUs " +
                       (shown.none() ? "-" : cppc::formatCpuList(shown));
    if (rows_.size() != totalCpus_)
    {
        text += " (" + std::to_string(rows_.size()) + " of " +
                std::to_string(totalCpus_) + " shown)";
    }
    return text + "  n/space: next  p/b: previous  q: quit";
}

std::vector<std::string> MonitorLayout::render(
    std::size_t page, std::span<const std::string> events) const
{
    page = std::min(page, pages_.size() - 1);
    std::vector<std::string> lines;
    for (const std::string& h : header_)
    {
        lines.push_back(fit(h));
    }
    lines.push_back(fit(columnLine_));
    const Range r = pages_[page];
    for (std::size_t i = r.begin; i < r.end; ++i)
    {
        lines.push_back(fit(rowLines_[i]));
    }
    if (!interactive_)
    {
        for (std::size_t i = r.begin; i < r.end; ++i)
        {
            if (rows_[i].degraded)
            {
                lines.push_back(fit(degradedLine(rows_[i])));
            }
        }
        return lines;
    }
    lines.push_back(fit(footer(page)));
    const std::size_t shown = std::min(events.size(), eventRows(size_));
    for (const std::string& e : events.subspan(events.size() - shown))
    {
        lines.push_back(fit(e));
    }
    return lines;
}

} // namespace cppcgov::tools
