// SPDX-License-Identifier: Apache-2.0
// A small streaming JSON writer for cppcgovctl's machine-readable output.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

// Writes one JSON document to a stream, pretty-printed with two-space
// indentation, or compact on one line (JSON Lines: one document a line).
// Either way the document ends with a newline. Calls must nest correctly
// (key() only directly inside an object, before its value); the writer
// does not validate that.
class JsonWriter
{
  public:
    enum class Style
    {
        pretty,
        oneLine,
    };

    explicit JsonWriter(std::ostream& out, Style style = Style::pretty) :
        out_(out), style_(style)
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
    void writeString(std::string_view s);

    std::ostream& out_;
    Style style_;
    // Per open container: whether it has an element yet.
    std::vector<bool> hasElement_;
    bool afterKey_ = false;
};

} // namespace cppcgov::tools
