#include "daemon/config.hpp"

#include "lib/backend/fd.hpp"
#include "lib/sim/layouts.hpp"
#include "lib/text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <new>
#include <span>
#include <sstream>
#include <system_error>
#include <utility>

namespace cppcgov::daemon
{

namespace
{

using policies::Floor;
using policies::PolicyKind;

constexpr double minHeadroom = 1.0;
constexpr double maxHeadroom = 4.0;
constexpr std::uint32_t maxRateLimitUs = 1'000'000;
constexpr std::uint32_t minSamplingPeriodUs = 100;
constexpr std::uint32_t maxSamplingPeriodUs = 1'000'000;
constexpr std::uint32_t maxHandlesLimit = 4096;
constexpr std::uint32_t maxCallsPerSecondLimit = 100'000;
// A user's handles over all its connections: at most the daemon's total.
constexpr std::uint32_t maxUserHandlesLimit = 16384;
constexpr std::size_t maxGroupNameLength = 31;

constexpr std::array<std::string_view, 8> topKeys = {
    "policy", "schedutil",   "sampling", "clients",
    "users",  "permissions", "backend",  "overrides",
};
constexpr std::array<std::string_view, 5> schedutilKeys = {
    "headroom", "rate_limit_up_us", "rate_limit_down_us", "floor", "boost",
};
constexpr std::array<std::string_view, 1> samplingKeys = {"period_us"};
constexpr std::array<std::string_view, 2> clientKeys = {
    "max_handles",
    "max_calls_per_second",
};
constexpr std::array<std::string_view, 1> permissionKeys = {"group"};
constexpr std::array<std::string_view, 2> backendKeys = {"type", "simulator"};
constexpr std::array<std::string_view, 2> simulatorKeys = {"layout", "cpus"};
constexpr std::array<std::string_view, 4> overrideKeys = {
    "cpus",
    "domain",
    "policy",
    "schedutil",
};

constexpr std::array<PolicyKind, 3> policyKinds = {
    PolicyKind::schedutil,
    PolicyKind::performance,
    PolicyKind::powersave,
};
constexpr std::array<std::pair<std::string_view, Floor>, 2> floorNames = {{
    {"lowest_nonlinear", Floor::lowestNonlinear},
    {"lowest", Floor::lowest},
}};
constexpr std::array<BackendKind, 4> backendKinds = {
    BackendKind::automatic,
    BackendKind::simulator,
    BackendKind::kernel,
    BackendKind::registers,
};

struct Position
{
    std::uint32_t line = 0;
    std::uint32_t column = 0;
};

// What one file sets.
struct Layer
{
    std::optional<PolicyKind> kind;
    SchedutilOverrides schedutil;
    std::optional<std::uint32_t> samplingPeriodUs;
    std::optional<std::uint32_t> maxHandles;
    std::optional<std::uint32_t> maxCallsPerSecond;
    std::optional<std::uint32_t> maxHandlesPerUser;
    std::optional<std::uint32_t> maxCallsPerSecondPerUser;
    std::optional<std::string> group;
    std::optional<BackendKind> backendType;
    std::optional<std::string> simulatorLayout;
    std::optional<std::uint32_t> simulatorCpus;
    // Where the two simulator values are, for the check that needs both
    // (which may come from different files).
    Position simulatorLayoutAt;
    Position simulatorCpusAt;
    std::vector<Override> overrides;
};

Position positionOf(const YAML::Mark& mark)
{
    if (mark.is_null() || mark.line < 0 || mark.column < 0)
    {
        return {};
    }
    return {static_cast<std::uint32_t>(mark.line) + 1,
            static_cast<std::uint32_t>(mark.column) + 1};
}

using cppc::printable;

std::string quote(std::string_view text)
{
    return "'" + printable(text) + "'";
}

std::string join(const std::string& path, std::string_view key)
{
    return path.empty() ? std::string(key) : path + "." + std::string(key);
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

// A quoted scalar is a string in YAML, whatever it looks like.
bool isQuoted(const YAML::Node& node)
{
    return node.Tag() == "!";
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

// A node and what a message about it says: where and which key.
struct Item
{
    YAML::Node node;
    // The node's position; for an empty value, its key's.
    YAML::Mark mark;
    std::string path;
};

struct Entry
{
    std::string key;
    YAML::Mark keyMark;
    Item value;
};

// The checks of one file's YAML, into a Layer.
class FileParser
{
  public:
    FileParser(std::string file, std::size_t overridesBefore) :
        file_(std::move(file)), overridesBefore_(overridesBefore)
    {}

    Layer parse(std::string_view text) const
    {
        const std::string yaml(text);
        checkOneDocument(yaml);
        const YAML::Node root = YAML::Load(yaml);
        Layer layer;
        if (root.IsNull())
        {
            return layer;
        }
        const Item top{root, root.Mark(), ""};
        checkTag(top);
        if (!root.IsMap())
        {
            fail(top.mark, "",
                 "expected a map of settings at the top level, got " +
                     describe(root));
        }
        for (const Entry& e : entries(top, topKeys))
        {
            parseTopEntry(e, layer);
        }
        return layer;
    }

  private:
    // Fails unless `yaml` holds at most one document. Not YAML::LoadAll():
    // in yaml-cpp 0.7 it loops forever, allocating, on a token the parser
    // cannot place, such as a ',' outside brackets: each call of
    // HandleNextDocument() then starts a new empty document on that same
    // token (jbeder/yaml-cpp#1040). A document that starts where the one
    // before it did is that token.
    void checkOneDocument(const std::string& yaml) const
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
                fail(marks[i], "",
                     "YAML syntax error: unexpected " +
                         (marks[i].pos >= 0 && at < yaml.size()
                              ? quote(yaml.substr(at, 1))
                              : std::string("token")));
            }
        }
        if (marks.size() > 1)
        {
            fail(marks[1], "",
                 "a second YAML document; a policy file holds one");
        }
    }

    [[noreturn]] void fail(const YAML::Mark& mark, const std::string& path,
                           std::string problem) const
    {
        const Position where = positionOf(mark);
        throw ConfigError(file_, where.line, where.column, path,
                          std::move(problem));
    }

    void checkTag(const Item& item) const
    {
        const std::string& tag = item.node.Tag();
        if (!tag.empty() && tag != "?" && tag != "!")
        {
            fail(item.mark, item.path,
                 "YAML tags are not supported (" + quote(tag) + ")");
        }
    }

    // The entries of a map, in file order, after checking their keys:
    // strings, each known and set once.
    std::vector<Entry> entries(const Item& map,
                               std::span<const std::string_view> known) const
    {
        std::vector<Entry> out;
        for (auto it = map.node.begin(); it != map.node.end(); ++it)
        {
            const YAML::Node key = it->first;
            const YAML::Node value = it->second;
            const Item keyItem{key, key.Mark(), map.path};
            checkTag(keyItem);
            if (!key.IsScalar())
            {
                fail(keyItem.mark, map.path,
                     "a key must be a string, got " + describe(key));
            }
            const std::string& name = key.Scalar();
            if (std::find(known.begin(), known.end(), name) == known.end())
            {
                fail(keyItem.mark, join(map.path, printable(name)),
                     name == "<<"
                         ? "merge keys ('<<') are not supported"
                         : "unknown key; expected one of " + listNames(known));
            }
            const std::string path = join(map.path, name);
            for (const Entry& previous : out)
            {
                if (previous.key == name)
                {
                    fail(keyItem.mark, path,
                         "duplicate key, first set on line " +
                             std::to_string(positionOf(previous.keyMark).line));
                }
            }
            out.push_back(
                {name,
                 key.Mark(),
                 {value, value.IsNull() ? key.Mark() : value.Mark(), path}});
        }
        return out;
    }

    // The entries of a section: a map, or nothing.
    std::vector<Entry> section(const Item& item,
                               std::span<const std::string_view> known) const
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
        return entries(item, known);
    }

    const std::string& scalar(const Item& item,
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

    // A number or a boolean: a scalar with no quotes.
    const std::string& plainScalar(const Item& item,
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

    std::uint32_t unsignedValue(const Item& item, std::uint32_t min,
                                std::uint32_t max) const
    {
        const std::string expected =
            "a whole number from " + std::to_string(min) + " to " +
            std::to_string(max);
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

    double headroomValue(const Item& item) const
    {
        const std::string expected = "a number from 1.0 to 4.0";
        const std::string& text = plainScalar(item, expected);
        const char* end = text.data() + text.size();
        double value = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        const bool numeric = !text.empty() &&
                             ((text[0] >= '0' && text[0] <= '9') ||
                              text[0] == '-' || text[0] == '.');
        if (!numeric || ptr != end ||
            (ec != std::errc{} && ec != std::errc::result_out_of_range) ||
            std::isnan(value))
        {
            fail(item.mark, item.path,
                 "expected " + expected + ", got " + describe(item.node));
        }
        if (ec == std::errc::result_out_of_range || !(value >= minHeadroom) ||
            !(value <= maxHeadroom))
        {
            fail(item.mark, item.path,
                 quote(text) + " is out of range: expected " + expected);
        }
        return value;
    }

    bool boolValue(const Item& item) const
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

    PolicyKind kindValue(const Item& item) const
    {
        std::array<std::string_view, policyKinds.size()> names{};
        std::transform(policyKinds.begin(), policyKinds.end(), names.begin(),
                       policies::policyName);
        const std::string expected = "one of " + listNames(names);
        const std::string& text = scalar(item, expected);
        for (const PolicyKind kind : policyKinds)
        {
            if (text == policies::policyName(kind))
            {
                return kind;
            }
        }
        fail(item.mark, item.path,
             "expected " + expected + ", got " + describe(item.node));
    }

    Floor floorValue(const Item& item) const
    {
        const std::string expected = "lowest_nonlinear or lowest";
        const std::string& text = scalar(item, expected);
        for (const auto& [name, floor] : floorNames)
        {
            if (text == name)
            {
                return floor;
            }
        }
        fail(item.mark, item.path,
             "expected " + expected + ", got " + describe(item.node));
    }

    BackendKind backendValue(const Item& item) const
    {
        std::array<std::string_view, backendKinds.size()> names{};
        std::transform(backendKinds.begin(), backendKinds.end(), names.begin(),
                       backendKindName);
        const std::string expected = "one of " + listNames(names);
        const std::string& text = scalar(item, expected);
        for (const BackendKind kind : backendKinds)
        {
            if (text == backendKindName(kind))
            {
                return kind;
            }
        }
        fail(item.mark, item.path,
             "expected " + expected + ", got " + describe(item.node));
    }

    std::string layoutValue(const Item& item) const
    {
        std::array<std::string_view, cppc::sim::layoutTable.size()> names{};
        std::transform(cppc::sim::layoutTable.begin(),
                       cppc::sim::layoutTable.end(), names.begin(),
                       [](const cppc::sim::LayoutName& l) { return l.name; });
        const std::string expected = "one of " + listNames(names);
        const std::string& text = scalar(item, expected);
        if (std::find(names.begin(), names.end(), text) == names.end())
        {
            fail(item.mark, item.path,
                 "expected " + expected + ", got " + describe(item.node));
        }
        return text;
    }

    void parseBackend(const Item& item, Layer& layer) const
    {
        for (const Entry& e : section(item, backendKeys))
        {
            if (e.key == "type")
            {
                layer.backendType = backendValue(e.value);
                continue;
            }
            for (const Entry& s : section(e.value, simulatorKeys))
            {
                const Position at = positionOf(s.value.mark);
                if (s.key == "layout")
                {
                    layer.simulatorLayout = layoutValue(s.value);
                    layer.simulatorLayoutAt = at;
                }
                else
                {
                    layer.simulatorCpus =
                        unsignedValue(s.value, 0, cppc::sim::maxLayoutCpus);
                    layer.simulatorCpusAt = at;
                }
            }
        }
    }

    // A group name as useradd/groupadd accept it by default.
    std::string groupValue(const Item& item) const
    {
        const std::string& text = scalar(item, "a group name");
        const auto valid = [](char c, bool first) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   c == '_' || (!first && ((c >= '0' && c <= '9') || c == '-'));
        };
        bool ok = !text.empty() && text.size() <= maxGroupNameLength;
        for (std::size_t i = 0; ok && i < text.size(); ++i)
        {
            ok = valid(text[i], i == 0);
        }
        if (!ok)
        {
            fail(item.mark, item.path,
                 quote(text) + " is not a group name (1 to " +
                     std::to_string(maxGroupNameLength) +
                     " letters, digits, '_' or '-', not starting with a "
                     "digit or '-')");
        }
        return text;
    }

    CpuSet cpuListValue(const Item& item) const
    {
        const std::string& text = scalar(item, "a CPU list such as \"0-3,8\"");
        const cppc::CpuListResult list = cppc::parseCpuList(text);
        if (list.error)
        {
            fail(item.mark, item.path, cppc::describe(list.error, text));
        }
        return list.cpus;
    }

    void parseSchedutil(const Item& item, SchedutilOverrides& out) const
    {
        for (const Entry& e : section(item, schedutilKeys))
        {
            if (e.key == "headroom")
            {
                out.headroom = headroomValue(e.value);
            }
            else if (e.key == "rate_limit_up_us")
            {
                out.rateLimitUpUs = unsignedValue(e.value, 0, maxRateLimitUs);
            }
            else if (e.key == "rate_limit_down_us")
            {
                out.rateLimitDownUs = unsignedValue(e.value, 0, maxRateLimitUs);
            }
            else if (e.key == "floor")
            {
                out.floor = floorValue(e.value);
            }
            else
            {
                out.boost = boolValue(e.value);
            }
        }
    }

    Override parseOverride(const Item& item) const
    {
        checkTag(item);
        if (!item.node.IsMap())
        {
            fail(item.mark, item.path,
                 "expected a map with 'cpus' or 'domain', got " +
                     describe(item.node));
        }
        Override out;
        bool byCpus = false;
        bool byDomain = false;
        for (const Entry& e : entries(item, overrideKeys))
        {
            if (e.key == "cpus")
            {
                out.selector = cpuListValue(e.value);
                byCpus = true;
            }
            else if (e.key == "domain")
            {
                out.selector = PsdDomain{unsignedValue(e.value, 0, UINT32_MAX)};
                byDomain = true;
            }
            else if (e.key == "policy")
            {
                out.kind = kindValue(e.value);
            }
            else
            {
                parseSchedutil(e.value, out.schedutil);
            }
        }
        if (byCpus && byDomain)
        {
            fail(item.mark, item.path,
                 "sets both 'cpus' and 'domain'; an override selects by one "
                 "of them");
        }
        if (!byCpus && !byDomain)
        {
            fail(item.mark, item.path,
                 "selects no CPUs; set 'cpus' or 'domain'");
        }
        out.origin = file_ + ":" + std::to_string(positionOf(item.mark).line);
        return out;
    }

    void parseOverrides(const Item& item, std::vector<Override>& out) const
    {
        checkTag(item);
        if (item.node.IsNull())
        {
            return;
        }
        if (!item.node.IsSequence())
        {
            fail(item.mark, item.path,
                 "expected a list of overrides, got " + describe(item.node));
        }
        std::size_t index = 0;
        for (auto it = item.node.begin(); it != item.node.end(); ++it, ++index)
        {
            const YAML::Node node = *it;
            const Item entry{node, node.IsNull() ? item.mark : node.Mark(),
                             item.path + "[" + std::to_string(index) + "]"};
            if (overridesBefore_ + out.size() >= maxOverrides)
            {
                fail(entry.mark, entry.path,
                     "more than " + std::to_string(maxOverrides) +
                         " overrides");
            }
            out.push_back(parseOverride(entry));
        }
    }

    void parseTopEntry(const Entry& e, Layer& layer) const
    {
        if (e.key == "policy")
        {
            layer.kind = kindValue(e.value);
        }
        else if (e.key == "schedutil")
        {
            parseSchedutil(e.value, layer.schedutil);
        }
        else if (e.key == "sampling")
        {
            for (const Entry& s : section(e.value, samplingKeys))
            {
                layer.samplingPeriodUs = unsignedValue(
                    s.value, minSamplingPeriodUs, maxSamplingPeriodUs);
            }
        }
        else if (e.key == "clients")
        {
            for (const Entry& c : section(e.value, clientKeys))
            {
                auto& field = c.key == "max_handles" ? layer.maxHandles
                                                     : layer.maxCallsPerSecond;
                field = unsignedValue(c.value, 1,
                                      c.key == "max_handles"
                                          ? maxHandlesLimit
                                          : maxCallsPerSecondLimit);
            }
        }
        else if (e.key == "users")
        {
            for (const Entry& c : section(e.value, clientKeys))
            {
                auto& field = c.key == "max_handles"
                                  ? layer.maxHandlesPerUser
                                  : layer.maxCallsPerSecondPerUser;
                field = unsignedValue(c.value, 1,
                                      c.key == "max_handles"
                                          ? maxUserHandlesLimit
                                          : maxCallsPerSecondLimit);
            }
        }
        else if (e.key == "permissions")
        {
            for (const Entry& p : section(e.value, permissionKeys))
            {
                layer.group = groupValue(p.value);
            }
        }
        else if (e.key == "backend")
        {
            parseBackend(e.value, layer);
        }
        else
        {
            parseOverrides(e.value, layer.overrides);
        }
    }

    std::string file_;
    std::size_t overridesBefore_;
};

Layer parseLayer(std::string_view text, const std::string& file,
                 std::size_t overridesBefore)
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
        return FileParser(file, overridesBefore).parse(text);
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

void apply(const SchedutilOverrides& from, policies::SchedutilConfig& to)
{
    to.headroom = from.headroom.value_or(to.headroom);
    to.rateLimitUpUs = from.rateLimitUpUs.value_or(to.rateLimitUpUs);
    to.rateLimitDownUs = from.rateLimitDownUs.value_or(to.rateLimitDownUs);
    to.floor = from.floor.value_or(to.floor);
    to.boost = from.boost.value_or(to.boost);
}

void apply(Layer&& layer, GovernorConfig& config)
{
    config.defaults.kind = layer.kind.value_or(config.defaults.kind);
    apply(layer.schedutil, config.defaults.schedutil);
    config.samplingPeriodUs =
        layer.samplingPeriodUs.value_or(config.samplingPeriodUs);
    config.clients.maxHandles =
        layer.maxHandles.value_or(config.clients.maxHandles);
    config.clients.maxCallsPerSecond =
        layer.maxCallsPerSecond.value_or(config.clients.maxCallsPerSecond);
    config.clients.maxHandlesPerUser =
        layer.maxHandlesPerUser.value_or(config.clients.maxHandlesPerUser);
    config.clients.maxCallsPerSecondPerUser =
        layer.maxCallsPerSecondPerUser.value_or(
            config.clients.maxCallsPerSecondPerUser);
    if (layer.group)
    {
        config.group = std::move(*layer.group);
    }
    config.backend.type = layer.backendType.value_or(config.backend.type);
    if (layer.simulatorLayout)
    {
        config.backend.simulator.layout = std::move(*layer.simulatorLayout);
    }
    config.backend.simulator.cpus =
        layer.simulatorCpus.value_or(config.backend.simulator.cpus);
    std::move(layer.overrides.begin(), layer.overrides.end(),
              std::back_inserter(config.overrides));
}

std::string scalableLayouts()
{
    std::string out;
    for (const cppc::sim::LayoutName& l : cppc::sim::layoutTable)
    {
        if (l.scalable)
        {
            out += (out.empty() ? "" : ", ") + std::string(l.name);
        }
    }
    return out;
}

// A CPU count for a layout that cannot be scaled is refused where the
// file that makes the combination sets it: at its cpus if it sets them,
// else at its layout (the count then came from an earlier file). `config`
// is what the files before this one gave.
void checkSimulator(const Layer& layer, const GovernorConfig& config,
                    const std::string& file)
{
    const SimulatorConfig& before = config.backend.simulator;
    const std::string layout = layer.simulatorLayout.value_or(before.layout);
    const std::uint32_t cpus = layer.simulatorCpus.value_or(before.cpus);
    if (cpus == 0 || cppc::sim::layoutScales(layout) ||
        (!layer.simulatorCpus && !layer.simulatorLayout))
    {
        return;
    }
    const std::string scale = "; the layouts that scale: " + scalableLayouts();
    const std::string fixed = "layout " + quote(layout) +
                              " has a fixed number of CPUs and cannot have ";
    if (layer.simulatorCpus)
    {
        throw ConfigError(
            file, layer.simulatorCpusAt.line, layer.simulatorCpusAt.column,
            "backend.simulator.cpus", fixed + std::to_string(cpus) + scale);
    }
    throw ConfigError(file, layer.simulatorLayoutAt.line,
                      layer.simulatorLayoutAt.column,
                      "backend.simulator.layout",
                      fixed + "the " + std::to_string(cpus) +
                          " that backend.simulator.cpus sets" + scale);
}

// Checks what needs several keys together, then applies one file's layer.
void addLayer(Layer&& layer, GovernorConfig& config, const std::string& file)
{
    checkSimulator(layer, config, file);
    apply(std::move(layer), config);
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

// A regular file's text, at most maxConfigBytes + 1 bytes of it (one more
// than parseLayer() accepts, so that it can say the file is too large).
// Symlinks are followed: what counts is the file they name. Nothing here
// waits: the kind is checked with stat() before the open, so that a device
// is never opened (opening one runs its driver), and again with fstat() on
// what was opened, which is opened O_NONBLOCK, so that a FIFO swapped in
// between is refused instead of waited on. A regular file's read does not
// block.
std::string readFile(const std::filesystem::path& path, const std::string& name)
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

// The drop-ins in `dir`, in the order they apply.
std::vector<std::filesystem::path> dropIns(const std::filesystem::path& dir)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(dir, ec);
    if (status.type() == fs::file_type::not_found)
    {
        return {};
    }
    if (ec || !fs::is_directory(status))
    {
        throw ConfigError(dir.string(), 0, 0, "",
                          ec ? "cannot read: " + ec.message()
                             : std::string("not a directory"));
    }
    std::vector<fs::path> files;
    fs::directory_iterator it(dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec))
    {
        const fs::path& path = it->path();
        const std::string name = path.filename().string();
        if (path.extension() == ".yaml" && !name.starts_with('.'))
        {
            files.push_back(path);
        }
    }
    if (ec)
    {
        throw ConfigError(dir.string(), 0, 0, "",
                          "cannot read: " + ec.message());
    }
    std::sort(files.begin(), files.end(),
              [](const fs::path& a, const fs::path& b) {
        return a.filename().string() < b.filename().string();
    });
    return files;
}

bool selects(const Selector& selector, std::uint32_t cpu,
             std::optional<std::uint32_t> domain)
{
    if (const auto* cpus = std::get_if<CpuSet>(&selector))
    {
        return cpu < cppc::maxCpus && (*cpus)[cpu];
    }
    return domain && std::get<PsdDomain>(selector).number == *domain;
}

std::string errorMessage(const std::string& file, std::uint32_t line,
                         std::uint32_t column, const std::string& keyPath,
                         const std::string& problem)
{
    std::string out = "'" + file + "'";
    if (line != 0)
    {
        out += ":" + std::to_string(line) + ":" + std::to_string(column);
    }
    out += ": ";
    if (!keyPath.empty())
    {
        out += keyPath + ": ";
    }
    return out + problem;
}

} // namespace

std::string_view backendKindName(BackendKind kind) noexcept
{
    switch (kind)
    {
        case BackendKind::automatic:
            return "auto";
        case BackendKind::simulator:
            return "simulator";
        case BackendKind::kernel:
            return "kernel";
        case BackendKind::registers:
            return "registers";
    }
    return "unknown";
}

ConfigError::ConfigError(std::string file, std::uint32_t line,
                         std::uint32_t column, std::string keyPath,
                         std::string problem) :
    std::runtime_error(errorMessage(file, line, column, keyPath, problem)),
    details_(std::make_shared<const Details>(Details{
        std::move(file), line, column, std::move(keyPath), std::move(problem)}))
{}

const std::string& ConfigError::file() const noexcept
{
    return details_->file;
}

std::uint32_t ConfigError::line() const noexcept
{
    return details_->line;
}

std::uint32_t ConfigError::column() const noexcept
{
    return details_->column;
}

const std::string& ConfigError::keyPath() const noexcept
{
    return details_->keyPath;
}

const std::string& ConfigError::problem() const noexcept
{
    return details_->problem;
}

GovernorConfig parseConfig(std::string_view yamlText,
                           const std::string& fileName)
{
    GovernorConfig config;
    addLayer(parseLayer(yamlText, fileName, 0), config, fileName);
    config.sources.push_back(fileName);
    return config;
}

namespace
{

void addFile(GovernorConfig& config, const std::filesystem::path& path)
{
    const std::string name = path.string();
    addLayer(parseLayer(readFile(path, name), name, config.overrides.size()),
             config, name);
    config.sources.push_back(name);
}

} // namespace

GovernorConfig loadConfig(const std::filesystem::path& mainFile,
                          const std::filesystem::path& dropInDir)
{
    GovernorConfig config;
    addFile(config, mainFile);
    for (const std::filesystem::path& path : dropIns(dropInDir))
    {
        addFile(config, path);
    }
    return config;
}

PolicySettings settingsFor(const GovernorConfig& config, std::uint32_t cpu,
                           std::optional<std::uint32_t> domain)
{
    PolicySettings settings = config.defaults;
    for (const Override& o : config.overrides)
    {
        if (selects(o.selector, cpu, domain))
        {
            settings.kind = o.kind.value_or(settings.kind);
            apply(o.schedutil, settings.schedutil);
        }
    }
    return settings;
}

ReloadResult tryReload(const GovernorConfig& current,
                       const std::filesystem::path& mainFile,
                       const std::filesystem::path& dropInDir)
{
    try
    {
        return {loadConfig(mainFile, dropInDir), {}};
    }
    catch (const ConfigError& e)
    {
        return {current, e.what()};
    }
    catch (const std::exception& e)
    {
        return {current, std::string("unexpected error: ") + e.what()};
    }
}

} // namespace cppcgov::daemon
