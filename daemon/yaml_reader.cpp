// SPDX-License-Identifier: Apache-2.0
#include "daemon/yaml_reader.hpp"

#include "lib/backend/fd.hpp"
#include "lib/text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <new>
#include <optional>
#include <sstream>
#include <system_error>

namespace cppcgov::daemon
{
namespace
{

std::string join(const std::string& path, std::string_view key)
{
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// A quoted scalar is a string in YAML, whatever it looks like.
bool isQuoted(const YAML::Node& node)
{
    return node.Tag() == "!";
}

// Where the estimated nesting of `text` first goes deeper than
// maxNestingDepth, if it does. Block levels are counted from the stack of
// indentations and the "- ", "? " and ": " indicators that open a line,
// each as two levels (a map's value may be a list at the same
// indentation); flow levels are the brackets open, counted outside
// comments but regardless of quotes.
std::optional<Position> tooDeep(std::string_view text)
{
    std::vector<std::size_t> indents;
    std::size_t flow = 0;
    std::uint32_t line = 1;
    for (std::size_t start = 0; start < text.size(); ++line)
    {
        const std::size_t newline = text.find('\n', start);
        const std::string_view row = text.substr(
            start, newline == std::string_view::npos ? std::string_view::npos
                                                     : newline - start);
        start = newline == std::string_view::npos ? text.size() : newline + 1;
        const std::size_t indent = row.find_first_not_of(' ');
        if (indent == std::string_view::npos || row[indent] == '#')
        {
            continue;
        }
        while (!indents.empty() && indents.back() > indent)
        {
            indents.pop_back();
        }
        if (indents.empty() || indents.back() < indent)
        {
            indents.push_back(indent);
        }
        std::size_t block = indents.size();
        for (std::size_t i = indent; i < row.size();)
        {
            const bool indicator = row[i] == '-' || row[i] == '?' ||
                                   row[i] == ':';
            if (!indicator || (i + 1 < row.size() && row[i + 1] != ' '))
            {
                break;
            }
            ++block;
            i = row.find_first_not_of(' ', i + 1);
        }
        for (std::size_t i = indent; i < row.size(); ++i)
        {
            const char c = row[i];
            if (c == '#' && (row[i - 1] == ' ' || row[i - 1] == '\t'))
            {
                break;
            }
            if (c == '[' || c == '{')
            {
                ++flow;
            }
            else if ((c == ']' || c == '}') && flow > 0)
            {
                --flow;
            }
            if (2 * block + flow > maxNestingDepth)
            {
                return Position{line, static_cast<std::uint32_t>(i + 1)};
            }
        }
    }
    return std::nullopt;
}

// Where each document of a YAML stream starts, for the first few.
class DocumentStarts : public YAML::EventHandler
{
  public:
    const std::vector<YAML::Mark>& marks() const
    {
        return marks_;
    }

    void OnDocumentStart(const YAML::Mark& mark) override
    {
        marks_.push_back(mark);
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override
    {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override
    {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override
    {}
    void OnMapEnd() override {}

  private:
    std::vector<YAML::Mark> marks_;
};

// Fails unless `yaml` holds at most one document. Not YAML::LoadAll():
// in yaml-cpp 0.7 it loops forever, allocating, on a token the parser
// cannot place, such as a ',' outside brackets: each call of
// HandleNextDocument() then starts a new empty document on that same
// token (jbeder/yaml-cpp#1040). A document that starts where the one
// before it did is that token.
void checkOneDocument(const YamlReader& reader, const std::string& yaml)
{
    std::istringstream in(yaml);
    YAML::Parser parser(in);
    DocumentStarts starts;
    for (int i = 0; i < 3 && parser.HandleNextDocument(starts); ++i)
    {}
    const std::vector<YAML::Mark>& marks = starts.marks();
    for (std::size_t i = 1; i < marks.size(); ++i)
    {
        if (marks[i].pos == marks[i - 1].pos)
        {
            const auto at = static_cast<std::size_t>(marks[i].pos);
            reader.fail(marks[i], "",
                        "YAML syntax error: unexpected " +
                            (marks[i].pos >= 0 && at < yaml.size()
                                 ? quote(yaml.substr(at, 1))
                                 : std::string("token")));
        }
    }
    if (marks.size() > 1)
    {
        reader.fail(marks[1], "",
                    "a second YAML document; a policy file holds one");
    }
}

// `value` as the shortest decimal that reads back as it, with ".0" for
// a whole number: "1.0", "1.25".
std::string decimal(double value)
{
    std::array<char, 32> buffer{};
    const auto [end, ec] =
        std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    std::string out(buffer.data(), ec == std::errc{} ? end : buffer.data());
    if (out.find_first_of(".en") == std::string::npos)
    {
        out += ".0";
    }
    return out;
}

std::string errnoText(int err)
{
    return std::generic_category().message(err);
}

// What a file that is not a regular one is, for messages.
std::string_view kindOfFile(mode_t mode)
{
    if (S_ISFIFO(mode))
    {
        return "a FIFO";
    }
    if (S_ISCHR(mode))
    {
        return "a character device";
    }
    if (S_ISBLK(mode))
    {
        return "a block device";
    }
    if (S_ISSOCK(mode))
    {
        return "a socket";
    }
    if (S_ISDIR(mode))
    {
        return "a directory";
    }
    return "a special file";
}

void requireRegular(mode_t mode, const std::string& name)
{
    if (!S_ISREG(mode))
    {
        throw ConfigError(name, 0, 0, "",
                          std::string(kindOfFile(mode)) +
                              ", not a regular file");
    }
}

} // namespace

Position positionOf(const YAML::Mark& mark)
{
    if (mark.is_null() || mark.line < 0 || mark.column < 0)
    {
        return {};
    }
    return {static_cast<std::uint32_t>(mark.line) + 1,
            static_cast<std::uint32_t>(mark.column) + 1};
}

std::string quote(std::string_view text)
{
    return "'" + cppc::printable(text) + "'";
}

std::string listNames(std::span<const std::string_view> names)
{
    std::string out;
    for (const std::string_view name : names)
    {
        out += out.empty() ? "" : ", ";
        out += name;
    }
    return out;
}

std::string describe(const YAML::Node& node)
{
    if (node.IsSequence())
    {
        return "a list";
    }
    if (node.IsMap())
    {
        return "a map";
    }
    if (node.IsScalar())
    {
        return (isQuoted(node) ? "the string " : "") + quote(node.Scalar());
    }
    return "nothing";
}

void YamlReader::fail(const YAML::Mark& mark, const std::string& path,
                      std::string problem) const
{
    const Position where = positionOf(mark);
    throw ConfigError(file_, where.line, where.column, path,
                      std::move(problem));
}

void YamlReader::checkTag(const Item& item) const
{
    const std::string& tag = item.node.Tag();
    if (!tag.empty() && tag != "?" && tag != "!")
    {
        fail(item.mark, item.path,
             "YAML tags are not supported (" + quote(tag) + ")");
    }
}

std::vector<Entry> YamlReader::entries(
    const Item& map, std::span<const std::string_view> known) const
{
    std::vector<ConfigError> errors;
    std::vector<Entry> out = entries(map, known, errors);
    throwFirst(errors);
    return out;
}

std::vector<Entry> YamlReader::entries(const Item& map,
                                       std::span<const std::string_view> known,
                                       std::vector<ConfigError>& errors) const
{
    std::vector<Entry> out;
    for (auto it = map.node.begin(); it != map.node.end(); ++it)
    {
        const YAML::Node key = it->first;
        const YAML::Node value = it->second;
        const Item keyItem{key, key.Mark(), map.path};
        try
        {
            out.push_back(checkedEntry(keyItem, value, known, out));
        }
        catch (const ConfigError& e)
        {
            errors.push_back(e);
        }
    }
    return out;
}

Entry YamlReader::checkedEntry(const Item& keyItem, const YAML::Node& value,
                               std::span<const std::string_view> known,
                               const std::vector<Entry>& before) const
{
    const YAML::Node& key = keyItem.node;
    const std::string& mapPath = keyItem.path;
    checkTag(keyItem);
    if (!key.IsScalar())
    {
        fail(keyItem.mark, mapPath,
             "a key must be a string, got " + describe(key));
    }
    const std::string& name = key.Scalar();
    if (std::find(known.begin(), known.end(), name) == known.end())
    {
        fail(keyItem.mark, join(mapPath, cppc::printable(name)),
             name == "<<" ? "merge keys ('<<') are not supported"
                          : "unknown key; expected one of " + listNames(known));
    }
    const std::string path = join(mapPath, name);
    for (const Entry& previous : before)
    {
        if (previous.key == name)
        {
            fail(keyItem.mark, path,
                 "duplicate key, first set on line " +
                     std::to_string(positionOf(previous.keyMark).line));
        }
    }
    return {name,
            key.Mark(),
            {value, value.IsNull() ? key.Mark() : value.Mark(), path}};
}

std::vector<Entry> YamlReader::section(
    const Item& item, std::span<const std::string_view> known) const
{
    std::vector<ConfigError> errors;
    std::vector<Entry> out = section(item, known, errors);
    throwFirst(errors);
    return out;
}

std::vector<Entry> YamlReader::section(const Item& item,
                                       std::span<const std::string_view> known,
                                       std::vector<ConfigError>& errors) const
{
    checkTag(item);
    if (item.node.IsNull())
    {
        return {};
    }
    if (!item.node.IsMap())
    {
        fail(item.mark, item.path,
             "expected a map, got " + describe(item.node));
    }
    return entries(item, known, errors);
}

std::size_t YamlReader::choiceValue(
    const Item& item, std::span<const std::string_view> names) const
{
    const std::string expected =
        names.size() == 2
            ? std::string(names[0]) + " or " + std::string(names[1])
            : "one of " + listNames(names);
    const std::string& text = scalar(item, expected);
    const auto found = std::find(names.begin(), names.end(), text);
    if (found == names.end())
    {
        fail(item.mark, item.path,
             "expected " + expected + ", got " + describe(item.node));
    }
    return static_cast<std::size_t>(found - names.begin());
}

cppc::CpuSet YamlReader::cpuListValue(const Item& item) const
{
    const std::string& text = scalar(item, "a CPU list such as \"0-3,8\"");
    const cppc::CpuListResult list = cppc::parseCpuList(text);
    if (list.error)
    {
        fail(item.mark, item.path, cppc::describe(list.error, text));
    }
    return list.cpus;
}

void YamlReader::forEachElement(
    const Item& list, const std::string& expected,
    const std::function<void(const Item&)>& each) const
{
    checkTag(list);
    if (list.node.IsNull())
    {
        return;
    }
    if (!list.node.IsSequence())
    {
        fail(list.mark, list.path,
             "expected " + expected + ", got " + describe(list.node));
    }
    std::size_t index = 0;
    for (auto it = list.node.begin(); it != list.node.end(); ++it, ++index)
    {
        const YAML::Node node = *it;
        each({node, node.IsNull() ? list.mark : node.Mark(),
              list.path + "[" + std::to_string(index) + "]"});
    }
}

const std::string& YamlReader::scalar(const Item& item,
                                      const std::string& expected) const
{
    checkTag(item);
    if (!item.node.IsScalar())
    {
        fail(item.mark, item.path,
             "expected " + expected + ", got " + describe(item.node));
    }
    return item.node.Scalar();
}

const std::string& YamlReader::plainScalar(const Item& item,
                                           const std::string& expected) const
{
    const std::string& text = scalar(item, expected);
    if (isQuoted(item.node))
    {
        fail(item.mark, item.path,
             "expected " + expected + ", got " + describe(item.node) +
                 " (numbers and booleans take no quotes)");
    }
    return text;
}

std::uint32_t YamlReader::unsignedValue(const Item& item, std::uint32_t min,
                                        std::uint32_t max) const
{
    const std::string expected = "a whole number from " + std::to_string(min) +
                                 " to " + std::to_string(max);
    const std::string& text = plainScalar(item, expected);
    const char* end = text.data() + text.size();
    std::uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || text[0] < '0' || text[0] > '9' || ptr != end)
    {
        fail(item.mark, item.path,
             "expected " + expected + ", got " + describe(item.node));
    }
    if (ec == std::errc::result_out_of_range || value < min || value > max)
    {
        fail(item.mark, item.path,
             quote(text) + " is out of range: expected " + expected);
    }
    return static_cast<std::uint32_t>(value);
}

double YamlReader::numberValue(const Item& item, double min, double max) const
{
    const std::string expected =
        "a number from " + decimal(min) + " to " + decimal(max);
    const std::string& text = plainScalar(item, expected);
    const char* end = text.data() + text.size();
    double value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    const bool numeric = !text.empty() && ((text[0] >= '0' && text[0] <= '9') ||
                                           text[0] == '-' || text[0] == '.');
    if (!numeric || ptr != end ||
        (ec != std::errc{} && ec != std::errc::result_out_of_range) ||
        std::isnan(value))
    {
        fail(item.mark, item.path,
             "expected " + expected + ", got " + describe(item.node));
    }
    if (ec == std::errc::result_out_of_range || !(value >= min) ||
        !(value <= max))
    {
        fail(item.mark, item.path,
             quote(text) + " is out of range: expected " + expected);
    }
    return value;
}

bool YamlReader::boolValue(const Item& item) const
{
    const std::string expected = "true or false";
    const std::string& text = plainScalar(item, expected);
    if (text == "true" || text == "True" || text == "TRUE")
    {
        return true;
    }
    if (text == "false" || text == "False" || text == "FALSE")
    {
        return false;
    }
    fail(item.mark, item.path,
         "expected " + expected + ", got " + describe(item.node));
}

void readYaml(std::string_view text, const std::string& file,
              const std::function<void(const YamlReader&, const Item&)>& visit)
{
    if (text.size() > maxConfigBytes)
    {
        throw ConfigError(file, 0, 0, "",
                          "larger than " + std::to_string(maxConfigBytes) +
                              " bytes");
    }
    if (const auto deep = tooDeep(text))
    {
        throw ConfigError(file, deep->line, deep->column, "",
                          "nested deeper than " +
                              std::to_string(maxNestingDepth) + " levels");
    }
    try
    {
        const YamlReader reader(file);
        const std::string yaml(text);
        checkOneDocument(reader, yaml);
        const YAML::Node root = YAML::Load(yaml);
        if (root.IsNull())
        {
            return;
        }
        const Item top{root, root.Mark(), ""};
        reader.checkTag(top);
        if (!root.IsMap())
        {
            reader.fail(top.mark, "",
                        "expected a map of settings at the top level, got " +
                            describe(root));
        }
        visit(reader, top);
    }
    catch (const YAML::ParserException& e)
    {
        const Position where = positionOf(e.mark);
        throw ConfigError(file, where.line, where.column, "",
                          "YAML syntax error: " + e.msg);
    }
    catch (const YAML::Exception& e)
    {
        const Position where = positionOf(e.mark);
        throw ConfigError(file, where.line, where.column, "",
                          "YAML error: " + e.msg);
    }
    catch (const std::bad_alloc&)
    {
        throw ConfigError(file, 0, 0, "", "out of memory");
    }
}

std::string readConfigFile(const std::filesystem::path& path,
                           const std::string& name)
{
    struct stat status
    {};
    if (::stat(path.c_str(), &status) != 0)
    {
        throw ConfigError(name, 0, 0, "", "cannot open: " + errnoText(errno));
    }
    requireRegular(status.st_mode, name);
    const cppc::backend::Fd fd(
        ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd)
    {
        throw ConfigError(name, 0, 0, "", "cannot open: " + errnoText(errno));
    }
    if (::fstat(fd.get(), &status) != 0)
    {
        throw ConfigError(name, 0, 0, "", "cannot read: " + errnoText(errno));
    }
    requireRegular(status.st_mode, name);
    std::string text;
    std::array<char, 16384> buffer{};
    while (text.size() <= maxConfigBytes)
    {
        const ssize_t n =
            ::read(fd.get(), buffer.data(),
                   std::min(buffer.size(), maxConfigBytes + 1 - text.size()));
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0)
        {
            throw ConfigError(name, 0, 0, "",
                              "cannot read: " + errnoText(errno));
        }
        if (n == 0)
        {
            break;
        }
        text.append(buffer.data(), static_cast<std::size_t>(n));
    }
    return text;
}

} // namespace cppcgov::daemon
