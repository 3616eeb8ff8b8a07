// SPDX-License-Identifier: Apache-2.0
// A small streaming JSON writer for cppcgovctl's machine-readable output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

// Writes one JSON document to a stream, pretty-printed with two-space
// indentation down to `lineDepth` open containers; what is nested deeper
// stays on one line without spaces (lineDepth 2 puts each element of a
// top-level object's array on a line of its own). Calls must nest
// correctly (key() only directly inside an object, before its value); the
// writer does not validate that.
class JsonWriter
{
  public:
    explicit JsonWriter(std::ostream& out, std::size_t lineDepth = SIZE_MAX) :
        out_(out), lineDepth_(lineDepth)
    {}

    void beginObject();
    void endObject();
    void beginArray();
    void endArray();
    void key(std::string_view name);

    void value(std::string_view s);
    void value(const char* s)
    {
        value(std::string_view(s));
    }
    void value(std::uint64_t n);
    void value(bool b);
    void null();
    // A number with `decimals` digits after the point; null when it is
    // not finite (JSON has no NaN).
    void number(double d, int decimals);

    // key(name) followed by value(v).
    template <class T>
    void field(std::string_view name, const T& v)
    {
        key(name);
        value(v);
    }

  private:
    void separate();
    void newline();
    // Whether the innermost open container breaks lines.
    bool breaksLines() const noexcept
    {
        return hasElement_.size() <= lineDepth_;
    }
    void writeString(std::string_view s);

    std::ostream& out_;
    std::size_t lineDepth_;
    // Per open container: whether it has an element yet.
    std::vector<bool> hasElement_;
    bool afterKey_ = false;
};

} // namespace cppcgov::tools
