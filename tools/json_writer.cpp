#include "json_writer.hpp"

#include <array>

namespace cppcgov::tools
{

void JsonWriter::newline()
{
    out_ << '\n' << std::string(hasElement_.size() * 2, ' ');
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
    hasElement_.pop_back();
    if (any)
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
    hasElement_.pop_back();
    if (any)
    {
        newline();
    }
    out_ << ']';
}

void JsonWriter::key(std::string_view name)
{
    separate();
    writeString(name);
    out_ << ": ";
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

void JsonWriter::writeString(std::string_view s)
{
    static constexpr std::array<char, 16> digits = {
        '0', '1', '2', '3', '4', '5', '6', '7',
        '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
    out_ << '"';
    for (char c : s)
    {
        const auto u = static_cast<unsigned char>(c);
        switch (c)
        {
            case '"':
                out_ << "\\\"";
                break;
            case '\\':
                out_ << "\\\\";
                break;
            case '\n':
                out_ << "\\n";
                break;
            case '\t':
                out_ << "\\t";
                break;
            default:
                if (u < 0x20 || u >= 0x7F)
                {
                    // Firmware strings are ASCII; anything else is escaped
                    // byte by byte so the output stays valid UTF-8.
                    out_ << "\\u00" << digits[u >> 4] << digits[u & 0xF];
                }
                else
                {
                    out_ << c;
                }
                break;
        }
    }
    out_ << '"';
}

} // namespace cppcgov::tools
