// SPDX-License-Identifier: Apache-2.0
#include "daemon/prometheus_text.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace cppcgov::daemon
{
namespace
{

// Help text: backslash and newline escaped; label values: double quote
// too.
void appendEscaped(std::string& out, std::string_view text, bool quote)
{
    for (const char c : text)
    {
        if (c == '\\')
        {
            out += "\\\\";
        }
        else if (c == '\n')
        {
            out += "\\n";
        }
        else if (quote && c == '"')
        {
            out += "\\\"";
        }
        else
        {
            out += c;
        }
    }
}

std::string_view typeName(PrometheusText::Type type) noexcept
{
    switch (type)
    {
        case PrometheusText::Type::counter:
            return "counter";
        case PrometheusText::Type::gauge:
            return "gauge";
        case PrometheusText::Type::histogram:
            return "histogram";
    }
    return "untyped";
}

} // namespace

std::string prometheusNumber(double value)
{
    if (std::isnan(value))
    {
        return "NaN";
    }
    if (std::isinf(value))
    {
        return value > 0 ? "+Inf" : "-Inf";
    }
    std::array<char, 32> buf{};
    const auto [end, ec] =
        std::to_chars(buf.data(), buf.data() + buf.size(), value);
    (void)ec; // 32 characters hold any double's shortest form
    return {buf.data(), end};
}

void PrometheusText::family(std::string_view name, std::string_view help,
                            Type type)
{
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    appendEscaped(out_, help, false);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += typeName(type);
    out_ += '\n';
}

void PrometheusText::labels(std::span<const Label> labels, std::string_view le)
{
    if (labels.empty() && le.empty())
    {
        return;
    }
    out_ += '{';
    bool first = true;
    for (const auto& [name, value] : labels)
    {
        if (!first)
        {
            out_ += ',';
        }
        first = false;
        out_ += name;
        out_ += "=\"";
        appendEscaped(out_, value, true);
        out_ += '"';
    }
    if (!le.empty())
    {
        out_ += first ? "le=\"" : ",le=\"";
        out_ += le;
        out_ += '"';
    }
    out_ += '}';
}

void PrometheusText::sample(std::string_view name,
                            std::span<const Label> labelSet, double value)
{
    out_ += name;
    labels(labelSet);
    out_ += ' ';
    out_ += prometheusNumber(value);
    out_ += '\n';
}

void PrometheusText::sample(std::string_view name,
                            std::span<const Label> labelSet,
                            std::uint64_t value)
{
    out_ += name;
    labels(labelSet);
    out_ += ' ';
    out_ += std::to_string(value);
    out_ += '\n';
}

void PrometheusText::histogram(std::string_view name,
                               std::span<const Label> labelSet,
                               const HistogramValues& values)
{
    const std::string bucket = std::string(name) + "_bucket";
    for (std::size_t i = 0; i < values.bounds.size(); ++i)
    {
        out_ += bucket;
        labels(labelSet, prometheusNumber(values.bounds[i]));
        out_ += ' ';
        out_ += std::to_string(
            i < values.cumulative.size() ? values.cumulative[i] : 0);
        out_ += '\n';
    }
    out_ += bucket;
    labels(labelSet, "+Inf");
    out_ += ' ';
    out_ += std::to_string(values.count);
    out_ += '\n';
    sample(std::string(name) + "_sum", labelSet, values.sum);
    sample(std::string(name) + "_count", labelSet, values.count);
}

} // namespace cppcgov::daemon
