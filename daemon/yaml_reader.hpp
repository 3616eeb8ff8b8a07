// SPDX-License-Identifier: Apache-2.0
// A position-aware reader of YAML configuration files, on yaml-cpp: the
// generic half of the configuration, which knows files, lines, columns and
// key paths but not which keys exist (that is the schema, config.cpp).
//
// readConfigFile() reads a file without ever blocking and only if it is a
// regular file; readYaml() checks the text before yaml-cpp sees it (size,
// nesting, one document) and hands the top-level map to the schema; a
// YamlReader walks the nodes with typed readers (maps of known keys, lists,
// numbers in a range, booleans, choices, CPU lists). Every failure is a
// ConfigError naming the file, line, column and key path.
#pragma once

#include "daemon/config_error.hpp"
#include "lib/cpu_list.hpp"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cppcgov::daemon
{

// Limits on what a file may hold, checked before it is parsed.
inline constexpr std::size_t maxConfigBytes = std::size_t{1} << 20;
// Nesting deeper than this is rejected by a cheap scan before yaml-cpp sees
// the text, so that its recursive parser never goes deep (see readYaml).
// A file the schema accepts nests 5 levels at most, and the scan's
// estimate for it stays far below the limit.
inline constexpr std::size_t maxNestingDepth = 64;

// A place in a file: 1-based, or 0 and 0 when unknown.
struct Position
{
    std::uint32_t line = 0;
    std::uint32_t column = 0;
};

[[nodiscard]] Position positionOf(const YAML::Mark& mark);

// A node and what a message about it says: where and which key.
struct Item
{
    YAML::Node node;
    // The node's position; for an empty value, its key's.
    YAML::Mark mark;
    std::string path;
};

// One key of a map and its value.
struct Entry
{
    std::string key;
    YAML::Mark keyMark;
    Item value;
};

// `text` between single quotes, printable (lib/text.hpp): how messages
// repeat a value or key.
[[nodiscard]] std::string quote(std::string_view text);

// "a, b, c".
[[nodiscard]] std::string listNames(std::span<const std::string_view> names);

// What a node is, for "expected X, got Y": "a list", "a map", "nothing",
// "'5'", or "the string '5'" for a quoted scalar.
[[nodiscard]] std::string describe(const YAML::Node& node);

// The typed readers of one file's nodes. Each checks the node (no YAML
// tags, the right kind, the range) and throws ConfigError at the node's
// position and path when it is wrong.
class YamlReader
{
  public:
    explicit YamlReader(std::string file) : file_(std::move(file)) {}

    // The file as named in messages.
    const std::string& file() const noexcept
    {
        return file_;
    }

    // Throws ConfigError(file, position of `mark`, path, problem).
    [[noreturn]] void fail(const YAML::Mark& mark, const std::string& path,
                           std::string problem) const;

    // Fails when the node carries a YAML tag ("!!str").
    void checkTag(const Item& item) const;

    // The entries of a map, in file order, after checking their keys:
    // strings, each one of `known` ("unknown key; expected one of ...")
    // and set once ("duplicate key, first set on line N"); merge keys
    // ('<<') are refused.
    [[nodiscard]] std::vector<Entry> entries(
        const Item& map, std::span<const std::string_view> known) const;

    // As entries(), but a key that is wrong is added to `errors` and left
    // out, and the others are returned: how a check reports every mistake.
    [[nodiscard]] std::vector<Entry> entries(
        const Item& map, std::span<const std::string_view> known,
        std::vector<ConfigError>& errors) const;

    // The entries of a section: a map, or nothing (an empty section).
    [[nodiscard]] std::vector<Entry> section(
        const Item& item, std::span<const std::string_view> known) const;

    // As section(), with wrong keys added to `errors` as entries() does;
    // a section that is not a map still throws.
    [[nodiscard]] std::vector<Entry> section(
        const Item& item, std::span<const std::string_view> known,
        std::vector<ConfigError>& errors) const;

    // Calls `each` with every element of a list, in order, its path
    // "<path>[<index>]"; nothing for an empty value. Fails with "expected
    // <expected>, got ..." for anything but a list.
    void forEachElement(const Item& list, const std::string& expected,
                        const std::function<void(const Item&)>& each) const;

    // A scalar's text; fails with "expected <expected>, got ..." for a list,
    // a map or nothing.
    [[nodiscard]] const std::string& scalar(const Item& item,
                                            const std::string& expected) const;

    // A whole number from `min` to `max`, without quotes.
    [[nodiscard]] std::uint32_t unsignedValue(
        const Item& item, std::uint32_t min, std::uint32_t max) const;

    // A number from `min` to `max` ("a number from 1.0 to 4.0"), without
    // quotes; not NaN.
    [[nodiscard]] double numberValue(const Item& item, double min,
                                     double max) const;

    // true or false (also True, TRUE, False, FALSE), without quotes.
    [[nodiscard]] bool boolValue(const Item& item) const;

    // The index in `names` of the scalar's text: "expected a or b" for two
    // names, "expected one of a, b, c" for more.
    [[nodiscard]] std::size_t choiceValue(
        const Item& item, std::span<const std::string_view> names) const;

    // A Linux cpulist such as "0-3,8" (lib/cpu_list.hpp's written syntax).
    [[nodiscard]] cppc::CpuSet cpuListValue(const Item& item) const;

  private:
    // The entry of `keyItem` (its path: the map's) and `value`, after
    // checking the key against `known` and the entries `before` it.
    Entry checkedEntry(const Item& keyItem, const YAML::Node& value,
                       std::span<const std::string_view> known,
                       const std::vector<Entry>& before) const;

    // A number or a boolean: a scalar with no quotes.
    const std::string& plainScalar(const Item& item,
                                   const std::string& expected) const;

    std::string file_;
};

// Reads `text`, a file named `file` in messages, as one YAML document and
// calls `visit` with its top-level map (path ""); an empty document (or one
// with only comments) calls nothing. Before yaml-cpp sees it, the text is
// refused when larger than maxConfigBytes, when nested deeper than
// maxNestingDepth by a scan that over-estimates (it counts brackets even
// inside quotes, and an indentation step may count as two levels: this
// only matters far from anything a schema accepts), and when it holds more
// than one document. Throws ConfigError and nothing else: yaml-cpp's
// exceptions and running out of memory, in the parser or in `visit`,
// become ConfigErrors too.
void readYaml(std::string_view text, const std::string& file,
              const std::function<void(const YamlReader&, const Item&)>& visit);

// The text of the file at `path` (named `name` in messages), at most
// maxConfigBytes + 1 bytes of it: one more than readYaml() accepts, so
// that it can say the file is too large. The file must be a regular file
// or a symlink to one (symlinks are followed: links to regular files are
// normal in /etc); anything else is refused with its kind, "a FIFO, not a
// regular file" (likewise a socket, a character or block device, a
// directory). Nothing here waits: the kind is checked with stat() before
// the open, so that a device is never opened (opening one runs its
// driver), and with fstat() on what was opened, O_NONBLOCK, so that a FIFO
// swapped in between is refused instead of waited on; a regular file's
// read does not block. Throws ConfigError ("cannot open: ...", "cannot
// read: ...").
[[nodiscard]] std::string readConfigFile(const std::filesystem::path& path,
                                         const std::string& name);

} // namespace cppcgov::daemon
