// SPDX-License-Identifier: Apache-2.0
// A plain-text table for cppcgovctl's human-readable output: a header row
// and rows of cells, each column as wide as its widest cell, separated by
// two spaces, no trailing blanks.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace cppcgov::tools
{

class TextTable
{
  public:
    enum class Align
    {
        left,
        right,
    };

    struct Column
    {
        std::string header;
        Align align = Align::left;
    };

    explicit TextTable(std::vector<Column> columns) :
        columns_(std::move(columns))
    {}

    // Adds a row; missing cells are blank, extra cells are dropped.
    void addRow(std::vector<std::string> cells);

    std::size_t rows() const
    {
        return rows_.size();
    }

    // Writes the header and every row, each line ending in '\n'.
    void print(std::ostream& out) const;

  private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

} // namespace cppcgov::tools
