// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition format (version 0.0.4, what node_exporter's
// textfile collector and promtool read): one family at a time, each with
// its # HELP and # TYPE lines, then its samples. Label values and help
// texts are escaped as the format says (backslash, double quote in label
// values, newline); numbers are written exactly (integers as integers,
// others in the shortest form that reads back the same, +Inf/-Inf/NaN).
//
// Names are the caller's: they must match [a-zA-Z_:][a-zA-Z0-9_:]* (label
// names [a-zA-Z_][a-zA-Z0-9_]*), which is not checked. No I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cppcgov::daemon
{

// A label's name and value.
using Label = std::pair<std::string_view, std::string_view>;

// A histogram as Prometheus has it: the upper bounds of the buckets
// (ascending, without +Inf), the count of observations at or below each
// bound (cumulative), the count of all and their sum.
struct HistogramValues
{
    std::vector<double> bounds;
    std::vector<std::uint64_t> cumulative; // one per bound
    std::uint64_t count = 0;
    double sum = 0;
};

class PrometheusText
{
  public:
    enum class Type : std::uint8_t
    {
        counter,
        gauge,
        histogram,
    };

    // Starts family `name`: its # HELP and # TYPE lines. A counter's name
    // ends in _total (given here with it).
    void family(std::string_view name, std::string_view help, Type type);

    // One sample of the family started last (a counter's or gauge's).
    void sample(std::string_view name, std::span<const Label> labels,
                double value);
    void sample(std::string_view name, std::span<const Label> labels,
                std::uint64_t value);

    // A histogram family's samples: name_bucket{le=...} per bound and +Inf,
    // name_sum and name_count.
    void histogram(std::string_view name, std::span<const Label> labels,
                   const HistogramValues& values);

    const std::string& text() const noexcept
    {
        return out_;
    }

  private:
    void labels(std::span<const Label> labels, std::string_view le = {});

    std::string out_;
};

// A number as the format writes it.
[[nodiscard]] std::string prometheusNumber(double value);

} // namespace cppcgov::daemon
