// SPDX-License-Identifier: Apache-2.0
#include "text_table.hpp"

#include <algorithm>

namespace cppcgov::tools
{

void TextTable::addRow(std::vector<std::string> cells)
{
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out) const
{
    std::vector<std::size_t> widths;
    for (const Column& c : columns_)
    {
        widths.push_back(c.header.size());
    }
    for (const auto& row : rows_)
    {
        for (std::size_t i = 0; i < row.size(); ++i)
        {
            widths[i] = std::max(widths[i], row[i].size());
        }
    }
    const auto printLine =
        [this, &widths, &out](const std::vector<std::string>& cells) {
        std::string line;
        for (std::size_t i = 0; i < cells.size(); ++i)
        {
            if (i != 0)
            {
                line += "  ";
            }
            const std::string pad(widths[i] - cells[i].size(), ' ');
            line += columns_[i].align == Align::right ? pad + cells[i]
                                                      : cells[i] + pad;
        }
        line.erase(line.find_last_not_of(' ') + 1);
        out << line << '\n';
    };
    std::vector<std::string> headers;
    for (const Column& c : columns_)
    {
        headers.push_back(c.header);
    }
    printLine(headers);
    for (const auto& row : rows_)
    {
        printLine(row);
    }
}

} // namespace cppcgov::tools
