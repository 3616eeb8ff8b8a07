// SPDX-License-Identifier: Apache-2.0
#include "statistics_text.hpp"

#include <array>
#include <cstdio>
#include <optional>
#include <set>
#include <string_view>

namespace cppcgov::tools
{
namespace
{

// The counters the lines below name.
constexpr std::array<std::string_view, 15> named = {
    "ticks",
    "ticks_early",
    "ticks_skipped",
    "tick_late_p50_ns",
    "tick_late_p99_ns",
    "tick_late_max_ns",
    "writes",
    "write_errors",
    "writes_landed",
    "hint_to_write_p50_ns",
    "hint_to_write_p99_ns",
    "access_errors",
    "accesses_late",
    "cpus_degraded",
    "accesses_at_once_max",
};

std::optional<std::uint64_t> get(const Statistics& s, std::string_view name)
{
    const auto it = s.find(std::string(name));
    return it == s.end() ? std::nullopt : std::optional(it->second);
}

// "1 error", "3 errors".
std::string counted(std::uint64_t n, std::string_view word)
{
    return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

// " ticks 12 (3 skipped)"-style pieces joined by `separator`.
struct Pieces
{
    std::string text;
    std::string_view separator;

    void add(const std::string& piece)
    {
        text += (text.empty() ? "" : std::string(separator)) + piece;
    }
};

// "p50 12.0 us, p99 80.0 us, max 32.1 ms" of the counters `prefix`_p50_ns
// and so on that are there.
std::string quantiles(const Statistics& s, std::string_view prefix,
                      bool withMax, std::string_view separator)
{
    Pieces p{{}, separator};
    const std::string base(prefix);
    for (const std::string_view q : {"p50", "p99", "max"})
    {
        if (q == "max" && !withMax)
        {
            continue;
        }
        if (const auto v = get(s, base + "_" + std::string(q) + "_ns"))
        {
            p.add(std::string(q) + " " + formatDuration(*v));
        }
    }
    return p.text;
}

// "<count> (<part> <word>)" of counter `count` and counter `part`, the
// part left out when missing; empty without the count.
std::string countWithPart(const Statistics& s, std::string_view count,
                          std::string_view part, std::string_view word,
                          bool plural)
{
    const auto n = get(s, count);
    if (!n)
    {
        return {};
    }
    std::string t = std::to_string(*n);
    if (const auto p = get(s, part))
    {
        t += " (" +
             (plural ? counted(*p, word)
                     : std::to_string(*p) + " " + std::string(word)) +
             ")";
    }
    return t;
}

// Whether the daemon has timed a hint yet: it reports 0 before.
bool hintsTimed(const Statistics& s)
{
    return get(s, "hint_to_write_p50_ns").value_or(0) != 0 ||
           get(s, "hint_to_write_p99_ns").value_or(0) != 0;
}

std::string ticksText(const Statistics& s)
{
    return countWithPart(s, "ticks", "ticks_skipped", "skipped", false);
}

std::string writesText(const Statistics& s)
{
    return countWithPart(s, "writes", "write_errors", "error", true);
}

} // namespace

std::string formatDuration(std::uint64_t ns)
{
    constexpr std::array<std::pair<double, std::string_view>, 3> units = {{
        {1e9, "s"},
        {1e6, "ms"},
        {1e3, "us"},
    }};
    const auto v = static_cast<double>(ns);
    for (const auto& [scale, unit] : units)
    {
        if (v >= scale)
        {
            const double x = v / scale;
            std::array<char, 32> buf{};
            std::snprintf(buf.data(), buf.size(),
                          x >= 99.95   ? "%.0f %s"
                          : x >= 9.995 ? "%.1f %s"
                                       : "%.2f %s",
                          x, std::string(unit).c_str());
            return buf.data();
        }
    }
    return std::to_string(ns) + " ns";
}

std::vector<std::string> statisticsLines(const Statistics& s)
{
    std::vector<std::string> lines;
    const auto line = [&lines](std::string_view label, const std::string& t) {
        if (!t.empty())
        {
            std::string padded(label);
            padded.resize(std::max<std::size_t>(padded.size() + 1, 16), ' ');
            lines.push_back(padded + t);
        }
    };
    line("ticks", ticksText(s));
    line("tick lateness", quantiles(s, "tick_late", true, ", "));
    std::string writes = writesText(s);
    if (const auto landed = get(s, "writes_landed"))
    {
        writes += (writes.empty() ? "" : ", ") + std::to_string(*landed) +
                  " landed";
    }
    line("writes", writes);
    line("hint to write", hintsTimed(s) || !get(s, "hint_to_write_p50_ns")
                              ? quantiles(s, "hint_to_write", false, ", ")
                              : "no hint timed yet");
    Pieces accesses{{}, ", "};
    for (const auto& [name, label] :
         std::array<std::pair<std::string_view, std::string_view>, 4>{{
             {"access_errors", "error"},
             {"accesses_late", "late"},
             {"accesses_at_once_max", "at once at most"},
             {"cpus_degraded", "CPUs degraded now"},
         }})
    {
        if (const auto v = get(s, name))
        {
            accesses.add(name == "access_errors"
                             ? counted(*v, label)
                             : std::to_string(*v) + " " + std::string(label));
        }
    }
    line("accesses", accesses.text);
    const std::set<std::string_view> known(named.begin(), named.end());
    for (const auto& [name, value] : s)
    {
        if (known.count(name) == 0)
        {
            line(name, std::to_string(value));
        }
    }
    return lines;
}

std::vector<std::string> statisticsSummary(const Statistics& s)
{
    std::vector<std::string> pieces;
    const auto add = [&pieces](std::string_view label, const std::string& t) {
        if (!t.empty())
        {
            pieces.push_back(std::string(label) + " " + t);
        }
    };
    add("ticks", ticksText(s));
    add("late", quantiles(s, "tick_late", true, " "));
    add("writes", writesText(s));
    if (hintsTimed(s))
    {
        add("hint>write", quantiles(s, "hint_to_write", false, " "));
    }
    return pieces;
}

} // namespace cppcgov::tools
