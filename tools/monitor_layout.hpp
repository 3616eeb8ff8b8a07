// SPDX-License-Identifier: Apache-2.0
// The monitor's screen as plain values, with no terminal and no bus: the
// header (the daemon, its policy, its statistics), the per-CPU rows
// grouped by domain and cut into pages that fit the terminal, a footer
// saying which page and which keys, and the most recent events. Every line
// fits the terminal's width; a page fits its height whenever the header,
// the column names and one CPU row do.
#pragma once

#include "cpu_rows.hpp"
#include "governor_state.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cppcgov::tools
{

// A terminal's size; 0 in either means unlimited (not a terminal).
struct TerminalSize
{
    std::size_t columns = 0;
    std::size_t rows = 0;
};

// "[#####               ]": `util` (0..1024, more is shown full) as a bar
// of `width` cells, rounded to the nearest cell.
[[nodiscard]] std::string utilBar(std::uint16_t util, std::size_t width);

// The header's lines: the daemon and its handles, the policy in force
// (policySummary), and the statistics when there are any, on as many
// lines as `columns` (0: unlimited) needs.
[[nodiscard]] std::vector<std::string> monitorHeader(const GovernorSnapshot& s,
                                                     std::size_t columns);

// `rows` ordered by domain, then by CPU.
[[nodiscard]] std::vector<CpuRow> groupByDomain(std::vector<CpuRow> rows);

// How many of the most recent events a terminal of `size` shows under the
// table: none without a height limit.
[[nodiscard]] std::size_t eventRows(TerminalSize size);

class MonitorLayout
{
  public:
    // Lays out `header` and `rows` (in the order shown) on `size`.
    // `interactive`: a footer with the page and the keys, and room for
    // eventRows(size) events; otherwise one page of every row, each
    // degraded CPU's reason under the table, and no events.
    // `totalCpus`: how many CPUs the daemon has (the rows may be fewer).
    MonitorLayout(std::vector<std::string> header, std::vector<CpuRow> rows,
                  TerminalSize size, bool interactive, std::size_t totalCpus);

    [[nodiscard]] std::size_t pageCount() const noexcept
    {
        return pages_.size();
    }

    // The rows of page `page` (0-based; pageCount() - 1 at most).
    [[nodiscard]] std::span<const CpuRow> page(std::size_t page) const;

    // The lines of page `page` (the last one when `page` is beyond it),
    // with the last of `events` (oldest first) that fit under it.
    [[nodiscard]] std::vector<std::string> render(
        std::size_t page, std::span<const std::string> events) const;

  private:
    struct Range
    {
        std::size_t begin = 0;
        std::size_t end = 0;
    };

    [[nodiscard]] std::string fit(std::string line) const;
    [[nodiscard]] std::string footer(std::size_t page) const;

    std::vector<std::string> header_;
    std::vector<CpuRow> rows_;
    TerminalSize size_;
    bool interactive_;
    std::size_t totalCpus_;
    std::string columnLine_;
    std::vector<std::string> rowLines_;
    std::vector<Range> pages_;
};

} // namespace cppcgov::tools
