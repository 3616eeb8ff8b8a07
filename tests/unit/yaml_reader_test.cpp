// SPDX-License-Identifier: Apache-2.0
// The generic YAML reader (daemon/yaml_reader.hpp) on its own, with keys
// and ranges made up for the test: what it promises any schema. The
// policy's own keys are config_test's.
#include "daemon/yaml_reader.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using Visit = std::function<void(const YamlReader&, const Item&)>;

constexpr std::array<std::string_view, 2> knownKeys = {"a", "list"};

// The value of key `a` in `yaml`, given to `check`.
void withA(std::string_view yaml, const Visit& check)
{
    readYaml(yaml, "t.yaml", [&](const YamlReader& r, const Item& top) {
        for (const Entry& e : r.entries(top, knownKeys))
        {
            check(r, e.value);
        }
    });
}

// The ConfigError `yaml` gives with `check`; a test failure when none.
ConfigError errorOf(std::string_view yaml, const Visit& check)
{
    try
    {
        withA(yaml, check);
    }
    catch (const ConfigError& e)
    {
        return e;
    }
    ADD_FAILURE() << "no error for " << yaml;
    return ConfigError("", 0, 0, "", "");
}

TEST(YamlReaderTest, ChoicesNameTwoWithOrAndMoreWithOneOf)
{
    constexpr std::array<std::string_view, 2> two = {"p", "x"};
    constexpr std::array<std::string_view, 3> three = {"p", "q", "r"};
    std::size_t index = 9;
    withA("a: x\n", [&](const YamlReader& r, const Item& i) {
        index = r.choiceValue(i, two);
    });
    EXPECT_EQ(index, 1U);
    const ConfigError e =
        errorOf("a: x\n", [&](const YamlReader& r, const Item& i) {
            (void)r.choiceValue(i, three);
        });
    EXPECT_EQ(e.problem(), "expected one of p, q, r, got 'x'");
    EXPECT_EQ(e.keyPath(), "a");
    EXPECT_EQ(e.line(), 1U);
    EXPECT_EQ(e.column(), 4U);
    constexpr std::array<std::string_view, 2> other = {"p", "q"};
    EXPECT_EQ(errorOf("a: x\n",
                      [&](const YamlReader& r,
                          const Item& i) { (void)r.choiceValue(i, other); })
                  .problem(),
              "expected p or q, got 'x'");
}

TEST(YamlReaderTest, NumbersAreCheckedAgainstTheirRange)
{
    double value = 0;
    withA("a: 1\n", [&](const YamlReader& r, const Item& i) {
        value = r.numberValue(i, 1.0, 4.0);
    });
    EXPECT_EQ(value, 1.0);
    const auto half = [](const YamlReader& r, const Item& i) {
        (void)r.numberValue(i, 0.5, 2.25);
    };
    EXPECT_EQ(errorOf("a: 0.25\n", half).problem(),
              "'0.25' is out of range: expected a number from 0.5 to 2.25");
    EXPECT_EQ(errorOf("a: \"1\"\n", half).problem(),
              "expected a number from 0.5 to 2.25, got the string '1' "
              "(numbers and booleans take no quotes)");
    const auto whole = [](const YamlReader& r, const Item& i) {
        (void)r.unsignedValue(i, 2, 7);
    };
    EXPECT_EQ(errorOf("a: 8\n", whole).problem(),
              "'8' is out of range: expected a whole number from 2 to 7");
    EXPECT_EQ(errorOf("a: [8]\n", whole).problem(),
              "expected a whole number from 2 to 7, got a list");
}

TEST(YamlReaderTest, ListElementsHaveTheirIndexAndPosition)
{
    std::vector<std::string> paths;
    std::vector<std::uint32_t> lines;
    std::vector<std::uint32_t> values;
    readYaml("list:\n  - 1\n  -\n  - 3\n", "t.yaml",
             [&](const YamlReader& r, const Item& top) {
        for (const Entry& e : r.entries(top, knownKeys))
        {
            r.forEachElement(e.value, "a list of numbers",
                             [&](const Item& element) {
                paths.push_back(element.path);
                lines.push_back(positionOf(element.mark).line);
                values.push_back(
                    element.node.IsNull() ? 0 : r.unsignedValue(element, 1, 9));
            });
        }
    });
    EXPECT_THAT(paths, ::testing::ElementsAre("list[0]", "list[1]", "list[2]"));
    // An empty element is placed at its list.
    EXPECT_THAT(lines, ::testing::ElementsAre(2U, 2U, 4U));
    EXPECT_THAT(values, ::testing::ElementsAre(1U, 0U, 3U));
    const ConfigError e =
        errorOf("a: 5\n", [](const YamlReader& r, const Item& i) {
            r.forEachElement(i, "a list of numbers", [](const Item&) {});
        });
    EXPECT_EQ(e.problem(), "expected a list of numbers, got '5'");
}

TEST(YamlReaderTest, KeysMustBeKnownAndSetOnce)
{
    const Visit nothing = [](const YamlReader&, const Item&) {};
    const ConfigError unknown = errorOf("a: 1\nb: 2\n", nothing);
    EXPECT_EQ(unknown.keyPath(), "b");
    EXPECT_EQ(unknown.problem(), "unknown key; expected one of a, list");
    EXPECT_EQ(unknown.line(), 2U);
    const ConfigError twice = errorOf("a: 1\na: 2\n", nothing);
    EXPECT_EQ(twice.problem(), "duplicate key, first set on line 1");
}

TEST(YamlReaderTest, CpuListsAreTheLibrarysWithThePlaceOfTheValue)
{
    cppc::CpuSet cpus;
    withA("a: \"0-1,4\"\n", [&](const YamlReader& r, const Item& i) {
        cpus = r.cpuListValue(i);
    });
    EXPECT_EQ(cpus.to_string().substr(cppc::maxCpus - 5), "10011");
    const ConfigError e =
        errorOf("a: 4096\n", [](const YamlReader& r, const Item& i) {
            (void)r.cpuListValue(i);
        });
    EXPECT_EQ(e.what(), std::string("'t.yaml':1:4: a: malformed CPU list "
                                    "'4096': CPU 4096 is above 4095, the "
                                    "highest supported"));
}

TEST(YamlReaderTest, AnEmptyDocumentVisitsNothing)
{
    bool visited = false;
    readYaml("# only a comment\n", "t.yaml",
             [&](const YamlReader&, const Item&) { visited = true; });
    EXPECT_FALSE(visited);
}

} // namespace
} // namespace cppcgov::daemon
