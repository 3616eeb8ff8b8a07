// SPDX-License-Identifier: Apache-2.0
// The plot policy_eval draws, on the raster, font and PNG encoder that
// cppcgovctl record draws with (tools/raster.hpp, tools/bitmap_font.hpp,
// tools/png_encoder.hpp).
//
// The plot stacks one panel per policy, top to bottom in the order given,
// over the same stretch of time: each column's grey level is how busy the
// CPU was then (white idle, grey busy), and the policy's requested
// performance is a line in its colour, 0 at the panel's foot and the
// plot's top performance at its head; thin dotted lines mark the levels
// given (nominal, the floor). Labels use a small built-in font.
#pragma once

#include "tools/raster.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cppc::bench
{

using cppcgov::tools::Rgb;

// One panel: a policy's requested performance and the CPU's busy fraction
// (0..1), sample by sample (equal lengths).
struct PlotSeries
{
    std::string name;
    Rgb colour;
    std::vector<double> requested;
    std::vector<double> busy;
};

// Draws `title` and the panels, one pixel column per sample, each panel
// with its series' name in its colour and a mark on its foot every 50
// samples, and writes the PNG to `file`. Throws std::runtime_error naming
// the file when it cannot be written.
void writePlot(const std::filesystem::path& file, const std::string& title,
               const std::vector<PlotSeries>& series, double topPerf,
               const std::vector<double>& levels);

} // namespace cppc::bench
