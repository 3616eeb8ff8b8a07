// SPDX-License-Identifier: Apache-2.0
#include "json_writer.hpp"

#include <array>
#include <cmath>
#include <iomanip>
#include <ios>

namespace cppcgov::tools
{

void JsonWriter::newline()
{
    if (breaksLines())
    {
        out_ << '\n' << std::string(hasElement_.size() * 2, ' ');
    }
}

void JsonWriter::separate()
{
    if (afterKey_)
    {
        afterKey_ = false;
        return;
    }
    if (!hasElement_.empty())
    {
        if (hasElement_.back())
        {
            out_ << ',';
        }
        hasElement_.back() = true;
        newline();
    }
}

void JsonWriter::beginObject()
{
    separate();
    out_ << '{';
    hasElement_.push_back(false);
}

void JsonWriter::endObject()
{
    const bool any = hasElement_.back();
    const bool broken = breaksLines();
    hasElement_.pop_back();
    if (any && broken)
    {
        newline();
    }
    out_ << '}';
    if (hasElement_.empty())
    {
        out_ << '\n';
    }
}

void JsonWriter::beginArray()
{
    separate();
    out_ << '[';
    hasElement_.push_back(false);
}

void JsonWriter::endArray()
{
    const bool any = hasElement_.back();
    const bool broken = breaksLines();
    hasElement_.pop_back();
    if (any && broken)
    {
        newline();
    }
    out_ << ']';
}

void JsonWriter::key(std::string_view name)
{
    separate();
    writeString(name);
    out_ << (breaksLines() ? ": " : ":");
    afterKey_ = true;
}

void JsonWriter::value(std::string_view s)
{
    separate();
    writeString(s);
}

void JsonWriter::value(std::uint64_t n)
{
    separate();
    out_ << n;
}

void JsonWriter::number(double d, int decimals)
{
    if (!std::isfinite(d))
    {
        null();
        return;
    }
    separate();
    const std::ios_base::fmtflags flags = out_.flags();
    const std::streamsize precision = out_.precision();
    out_ << std::fixed << std::setprecision(decimals) << d;
    out_.flags(flags);
    out_.precision(precision);
}

void JsonWriter::value(bool b)
{
    separate();
    out_ << (b ? "true" : "false");
}

void JsonWriter::null()
{
    separate();
    out_ << "null";
}

namespace
{

// The length of the valid UTF-8 sequence starting at s[i], or 0.
std::size_t utf8Length(std::string_view s, std::size_t i)
{
    const auto lead = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t min = 0;
    if (lead >= 0xC2 && lead <= 0xDF)
    {
        n = 2;
        min = 0x80;
    }
    else if (lead >= 0xE0 && lead <= 0xEF)
    {
        n = 3;
        min = 0x800;
    }
    else if (lead >= 0xF0 && lead <= 0xF4)
    {
        n = 4;
        min = 0x10000;
    }
    if (n == 0 || i + n > s.size())
    {
        return 0;
    }
    std::uint32_t cp = lead & (0x7FU >> n);
    for (std::size_t k = 1; k < n; ++k)
    {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if ((c & 0xC0) != 0x80)
        {
            return 0;
        }
        cp = (cp << 6) | (c & 0x3FU);
    }
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    return cp < min || cp > 0x10FFFF || surrogate ? 0 : n;
}

} // namespace

void JsonWriter::writeString(std::string_view s)
{
    static constexpr std::array<char, 16> digits = {
        '0', '1', '2', '3', '4', '5', '6', '7',
        '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
    out_ << '"';
    for (std::size_t i = 0; i < s.size(); ++i)
    {
        const char c = s[i];
        const auto u = static_cast<unsigned char>(c);
        switch (c)
        {
            case '"':
                out_ << "\\\"";
                continue;
            case '\\':
                out_ << "\\\\";
                continue;
            case '\n':
                out_ << "\\n";
                continue;
            case '\t':
                out_ << "\\t";
                continue;
            default:
                break;
        }
        if (u < 0x20 || u == 0x7F)
        {
            out_ << "\\u00" << digits[u >> 4] << digits[u & 0xF];
        }
        else if (u < 0x80)
        {
            out_ << c;
        }
        else if (const std::size_t n = utf8Length(s, i); n != 0)
        {
            out_ << s.substr(i, n); // valid UTF-8 passes through
            i += n - 1;
        }
        else
        {
            out_ << "\\ufffd"; // a byte that is not UTF-8
        }
    }
    out_ << '"';
}

} // namespace cppcgov::tools
