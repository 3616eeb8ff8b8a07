// SPDX-License-Identifier: Apache-2.0
// A small PNG writer and the plot policy_eval draws with it: no image
// library, the file is written by hand (8-bit RGB, one zlib stream of
// stored deflate blocks, CRC-32 per chunk and Adler-32 over the data).
//
// The plot stacks one panel per policy, top to bottom in the order given,
// over the same stretch of time: each column's grey level is how busy the
// CPU was then (white idle, grey busy), and the policy's requested
// performance is a line in its colour, 0 at the panel's foot and the
// plot's top performance at its head; thin dotted lines mark the levels
// given (nominal, the floor). Labels use a small built-in font.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cppc::bench
{

struct Rgb
{
    std::uint8_t r = 0;
    std::uint8_t g = 0;
    std::uint8_t b = 0;
};

class Image
{
  public:
    Image(std::uint32_t width, std::uint32_t height,
          Rgb fill = {255, 255, 255});

    std::uint32_t width() const noexcept
    {
        return width_;
    }
    std::uint32_t height() const noexcept
    {
        return height_;
    }
    // Pixels outside the image are ignored.
    void set(std::int64_t x, std::int64_t y, Rgb colour) noexcept;
    Rgb at(std::uint32_t x, std::uint32_t y) const;

    // The PNG file's bytes.
    std::vector<std::uint8_t> png() const;

  private:
    std::uint32_t width_;
    std::uint32_t height_;
    std::vector<std::uint8_t> rgb_;
};

// CRC-32 (ISO-HDLC, as PNG uses) and Adler-32 (as zlib uses).
std::uint32_t crc32(const std::uint8_t* data, std::size_t size,
                    std::uint32_t crc = 0) noexcept;
std::uint32_t adler32(const std::uint8_t* data, std::size_t size) noexcept;

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
