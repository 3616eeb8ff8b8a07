// SPDX-License-Identifier: Apache-2.0
// cppcgovd's configuration errors: every kind of error with its file,
// line, column and key path, how the message is put together, and the
// limits on size and overrides.
#include "config_test_support.hpp"
#include "daemon/config.hpp"
#include "daemon/yaml_reader.hpp"

#include <cstdint>
#include <ostream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using test::testFile;
using test::topKeyList;

// ---- Errors: file, line, column, key path, what is wrong ----

struct ErrorCase
{
    std::string yaml;
    std::uint32_t line;
    std::uint32_t column;
    std::string keyPath;
    std::string problem;
};

void PrintTo(const ErrorCase& c, std::ostream* out)
{
    *out << ::testing::PrintToString(c.yaml);
}

class ConfigErrorTest : public ::testing::TestWithParam<ErrorCase>
{};

TEST_P(ConfigErrorTest, NamesFileLineColumnAndKey)
{
    const ErrorCase& c = GetParam();
    try
    {
        (void)parseConfig(c.yaml, testFile);
        ADD_FAILURE() << "no error for:\n" << c.yaml;
    }
    catch (const ConfigError& e)
    {
        EXPECT_EQ(e.file(), testFile);
        EXPECT_EQ(e.line(), c.line) << e.what();
        EXPECT_EQ(e.column(), c.column) << e.what();
        EXPECT_EQ(e.keyPath(), c.keyPath) << e.what();
        EXPECT_EQ(e.problem(), c.problem) << e.what();
        const std::string where = "'test.yaml':" + std::to_string(c.line) +
                                  ":" + std::to_string(c.column) + ": ";
        const std::string key = c.keyPath.empty() ? "" : c.keyPath + ": ";
        EXPECT_EQ(e.what(), where + key + c.problem);
    }
}

const std::string headroomRange = "a number from 1.0 to 4.0";
const std::string rateRange = "a whole number from 0 to 1000000";
const std::string backendList = "auto, simulator, kernel, registers";
const std::string layoutList = "orion-o6, rd-n2, packed, altra, neoverse";
const std::string layoutCpusRange = "a whole number from 0 to 4096";
const std::string fixedLayout =
    "layout 'orion-o6' has a fixed number of CPUs and cannot have ";
const std::string scalable =
    "; the layouts that scale: rd-n2, packed, neoverse";
const std::string schedutilKeyList =
    "headroom, rate_limit_up_us, rate_limit_down_us, floor, boost, burst_us, min_step_percent";
const std::string policyList = "schedutil, performance, powersave, autonomous";
const std::string groupRule = " is not a group name (1 to 31 letters, digits, "
                              "'_' or '-', not starting with a digit or '-')";

INSTANTIATE_TEST_SUITE_P(
    Types, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"schedutil:\n  headroom: fast\n", 2, 13, "schedutil.headroom",
                  "expected " + headroomRange + ", got 'fast'"},
        ErrorCase{"autonomous:\n  energy_preference: 256\n", 2, 22,
                  "autonomous.energy_preference",
                  "'256' is out of range: expected a whole number from 0 to "
                  "255"},
        ErrorCase{"overrides:\n  - domain: 1\n    autonomous:\n"
                  "      energy_preference_efficiency: high\n",
                  4, 37, "overrides[0].autonomous.energy_preference_efficiency",
                  "expected a whole number from 0 to 255, got 'high'"},
        ErrorCase{"autonomous:\n  activity_window_us: 1270000001\n", 2, 23,
                  "autonomous.activity_window_us",
                  "'1270000001' is out of range: expected a whole number "
                  "from 0 to 1270000000"},
        ErrorCase{"autonomous:\n  epp: 3\n", 2, 3, "autonomous.epp",
                  "unknown key; expected one of energy_preference, "
                  "energy_preference_performance, "
                  "energy_preference_efficiency, activity_window_us"},
        ErrorCase{"metrics:\n  directory: var/lib\n", 2, 14,
                  "metrics.directory",
                  "'var/lib' is not an absolute path (one line starting with "
                  "'/', at most 4095 characters)"},
        ErrorCase{"metrics:\n  interval_s: 86401\n", 2, 15,
                  "metrics.interval_s",
                  "'86401' is out of range: expected a whole number from 0 "
                  "to 86400"},
        ErrorCase{"schedutil:\n  headroom: \"1.5\"\n", 2, 13,
                  "schedutil.headroom",
                  "expected " + headroomRange +
                      ", got the string '1.5' (numbers and booleans take no "
                      "quotes)"},
        ErrorCase{"schedutil:\n  headroom: .nan\n", 2, 13, "schedutil.headroom",
                  "expected " + headroomRange + ", got '.nan'"},
        ErrorCase{"schedutil:\n  headroom: 1.5x\n", 2, 13, "schedutil.headroom",
                  "expected " + headroomRange + ", got '1.5x'"},
        // An empty value is reported at its key.
        ErrorCase{"schedutil:\n  headroom:\n", 2, 3, "schedutil.headroom",
                  "expected " + headroomRange + ", got nothing"},
        ErrorCase{"schedutil:\n  rate_limit_up_us: -5\n", 2, 21,
                  "schedutil.rate_limit_up_us",
                  "expected " + rateRange + ", got '-5'"},
        ErrorCase{"schedutil:\n  rate_limit_up_us: 1.5\n", 2, 21,
                  "schedutil.rate_limit_up_us",
                  "expected " + rateRange + ", got '1.5'"},
        ErrorCase{"schedutil:\n  boost: yes\n", 2, 10, "schedutil.boost",
                  "expected true or false, got 'yes'"},
        ErrorCase{"schedutil:\n  boost: \"true\"\n", 2, 10, "schedutil.boost",
                  "expected true or false, got the string 'true' (numbers "
                  "and booleans take no quotes)"},
        ErrorCase{"policy: {a: b}\n", 1, 9, "policy",
                  "expected one of " + policyList + ", got a map"},
        ErrorCase{"policy:\n", 1, 1, "policy",
                  "expected one of " + policyList + ", got nothing"},
        // A map where a list belongs, a list where a map belongs...
        ErrorCase{"overrides:\n  cpus: \"1\"\n", 2, 3, "overrides",
                  "expected a list of overrides, got a map"},
        ErrorCase{"schedutil: [1]\n", 1, 12, "schedutil",
                  "expected a map, got a list"},
        ErrorCase{"clients: 5\n", 1, 10, "clients", "expected a map, got '5'"},
        ErrorCase{"overrides:\n  - 5\n", 2, 5, "overrides[0]",
                  "expected a map with 'cpus' or 'domain', got '5'"},
        ErrorCase{"overrides:\n  - cpus: [1, 2]\n", 2, 11, "overrides[0].cpus",
                  "expected a CPU list such as \"0-3,8\", got a list"},
        ErrorCase{"permissions:\n  group: [a]\n", 2, 10, "permissions.group",
                  "expected a group name, got a list"},
        ErrorCase{"- policy\n", 1, 1, "",
                  "expected a map of settings at the top level, got a list"},
        ErrorCase{"42\n", 1, 1, "",
                  "expected a map of settings at the top level, got '42'"},
        ErrorCase{"policy: !!str schedutil\n", 1, 9, "policy",
                  "YAML tags are not supported "
                  "('tag:yaml.org,2002:str')"},
        ErrorCase{"? [a]\n: 1\n", 1, 3, "",
                  "a key must be a string, got a list"}));

INSTANTIATE_TEST_SUITE_P(
    Ranges, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"schedutil:\n  headroom: 0.5\n", 2, 13, "schedutil.headroom",
                  "'0.5' is out of range: expected " + headroomRange},
        ErrorCase{"schedutil: {headroom: 4.01}\n", 1, 23, "schedutil.headroom",
                  "'4.01' is out of range: expected " + headroomRange},
        ErrorCase{"schedutil:\n  headroom: 1e999\n", 2, 13,
                  "schedutil.headroom",
                  "'1e999' is out of range: expected " + headroomRange},
        ErrorCase{"schedutil:\n  rate_limit_down_us: 1000001\n", 2, 23,
                  "schedutil.rate_limit_down_us",
                  "'1000001' is out of range: expected " + rateRange},
        ErrorCase{"sampling:\n  period_us: 99\n", 2, 14, "sampling.period_us",
                  "'99' is out of range: expected a whole number from 100 "
                  "to 1000000"},
        ErrorCase{"sampling:\n  period_us: 99999999999999999999\n", 2, 14,
                  "sampling.period_us",
                  "'99999999999999999999' is out of range: expected a whole "
                  "number from 100 to 1000000"},
        ErrorCase{"sampling:\n  source: ebpf\n", 2, 11, "sampling.source",
                  "expected one of auto, bpf, procfs, got 'ebpf'"},
        ErrorCase{"tick:\n  scheduling: rr\n", 2, 15, "tick.scheduling",
                  "expected one of auto, deadline, fifo, other, got 'rr'"},
        ErrorCase{"tick:\n  runtime_us: 1\n", 2, 15, "tick.runtime_us",
                  "1 us is below SCHED_DEADLINE's smallest runtime: 0 (sized "
                  "by the daemon) or 2 to 1000000"},
        ErrorCase{"tick:\n  runtime_us: 1000001\n", 2, 15, "tick.runtime_us",
                  "'1000001' is out of range: expected a whole number from 0 "
                  "to 1000000"},
        ErrorCase{"tick:\n  fifo_priority: 50\n", 2, 18, "tick.fifo_priority",
                  "'50' is out of range: expected a whole number from 1 to "
                  "49"},
        ErrorCase{"tick:\n  fifo_priority: 0\n", 2, 18, "tick.fifo_priority",
                  "'0' is out of range: expected a whole number from 1 to "
                  "49"},
        ErrorCase{"clients:\n  max_handles: 0\n", 2, 16, "clients.max_handles",
                  "'0' is out of range: expected a whole number from 1 to "
                  "4096"},
        ErrorCase{"clients:\n  max_handles: 4097\n", 2, 16,
                  "clients.max_handles",
                  "'4097' is out of range: expected a whole number from 1 to "
                  "4096"},
        ErrorCase{"clients:\n  max_calls_per_second: 100001\n", 2, 25,
                  "clients.max_calls_per_second",
                  "'100001' is out of range: expected a whole number from 1 "
                  "to 100000"},
        ErrorCase{"clients:\n  max_calls_per_second: 0\n", 2, 25,
                  "clients.max_calls_per_second",
                  "'0' is out of range: expected a whole number from 1 to "
                  "100000"},
        ErrorCase{"overrides:\n  - domain: 4294967296\n", 2, 13,
                  "overrides[0].domain",
                  "'4294967296' is out of range: expected a whole number "
                  "from 0 to 4294967295"},
        ErrorCase{"permissions:\n  group: \"1abc\"\n", 2, 10,
                  "permissions.group", "'1abc'" + groupRule},
        ErrorCase{"permissions:\n  group: \"\"\n", 2, 10, "permissions.group",
                  "''" + groupRule},
        ErrorCase{"permissions:\n  group: "
                  "abcdefghijklmnopqrstuvwxyzabcdef\n",
                  2, 10, "permissions.group",
                  "'abcdefghijklmnopqrstuvwxyzabcdef'" + groupRule}));

INSTANTIATE_TEST_SUITE_P(
    EnumValues, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"policy: ondemand\n", 1, 9, "policy",
                  "expected one of " + policyList + ", got 'ondemand'"},
        ErrorCase{"policy: Performance\n", 1, 9, "policy",
                  "expected one of " + policyList + ", got 'Performance'"},
        ErrorCase{"schedutil:\n  floor: lowest_linear\n", 2, 10,
                  "schedutil.floor",
                  "expected lowest_nonlinear or lowest, got 'lowest_linear'"},
        ErrorCase{"overrides:\n  - domain: 1\n    policy: fast\n", 3, 13,
                  "overrides[0].policy",
                  "expected one of " + policyList + ", got 'fast'"},
        ErrorCase{"backend:\n  type: automatic\n", 2, 9, "backend.type",
                  "expected one of " + backendList + ", got 'automatic'"},
        ErrorCase{"backend:\n  type: Kernel\n", 2, 9, "backend.type",
                  "expected one of " + backendList + ", got 'Kernel'"},
        ErrorCase{"backend:\n  type: [kernel]\n", 2, 9, "backend.type",
                  "expected one of " + backendList + ", got a list"},
        ErrorCase{"backend:\n  simulator:\n    layout: cray-1\n", 3, 13,
                  "backend.simulator.layout",
                  "expected one of " + layoutList + ", got 'cray-1'"},
        ErrorCase{"backend:\n  simulator:\n    layout:\n", 3, 5,
                  "backend.simulator.layout",
                  "expected one of " + layoutList + ", got nothing"}));

INSTANTIATE_TEST_SUITE_P(
    SimulatorCpus, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"backend:\n  simulator:\n    cpus: 4097\n", 3, 11,
                  "backend.simulator.cpus",
                  "'4097' is out of range: expected " + layoutCpusRange},
        ErrorCase{"backend:\n  simulator:\n    cpus: -1\n", 3, 11,
                  "backend.simulator.cpus",
                  "expected " + layoutCpusRange + ", got '-1'"},
        ErrorCase{"backend:\n  simulator:\n    cpus: \"8\"\n", 3, 11,
                  "backend.simulator.cpus",
                  "expected " + layoutCpusRange +
                      ", got the string '8' (numbers and booleans take no "
                      "quotes)"},
        ErrorCase{"backend:\n  simulator:\n    cpus: 16x\n", 3, 11,
                  "backend.simulator.cpus",
                  "expected " + layoutCpusRange + ", got '16x'"},
        // The real firmware layouts keep their number of CPUs, whichever
        // key comes first.
        ErrorCase{"backend:\n  simulator:\n    layout: orion-o6\n"
                  "    cpus: 64\n",
                  4, 11, "backend.simulator.cpus",
                  fixedLayout + "64" + scalable},
        ErrorCase{"backend:\n  simulator: {cpus: 12, layout: orion-o6}\n", 2,
                  21, "backend.simulator.cpus", fixedLayout + "12" + scalable},
        ErrorCase{"backend:\n  simulator:\n    cpus: 32\n    layout: altra\n",
                  3, 11, "backend.simulator.cpus",
                  "layout 'altra' has a fixed number of CPUs and cannot have "
                  "32" +
                      scalable}));

INSTANTIATE_TEST_SUITE_P(
    UnknownKeys, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"polcy: schedutil\n", 1, 1, "polcy",
                  "unknown key; expected one of " + topKeyList},
        ErrorCase{"schedutil:\n  hedroom: 1.5\n", 2, 3, "schedutil.hedroom",
                  "unknown key; expected one of " + schedutilKeyList},
        ErrorCase{"sampling:\n  period: 5\n", 2, 3, "sampling.period",
                  "unknown key; expected one of period_us, idle_period_us, "
                  "steady_period_us, source"},
        ErrorCase{"clients:\n  max_handle: 5\n", 2, 3, "clients.max_handle",
                  "unknown key; expected one of max_handles, "
                  "max_calls_per_second"},
        ErrorCase{"permissions:\n  groups: x\n", 2, 3, "permissions.groups",
                  "unknown key; expected one of group"},
        ErrorCase{"overrides:\n  - cpus: \"1\"\n    cpu: \"2\"\n", 3, 5,
                  "overrides[0].cpu",
                  "unknown key; expected one of cpus, domain, policy, "
                  "schedutil, autonomous"},
        ErrorCase{"overrides:\n  - domain: 1\n  - domain: 2\n    schedutil:\n"
                  "      boots: true\n",
                  5, 7, "overrides[1].schedutil.boots",
                  "unknown key; expected one of " + schedutilKeyList},
        ErrorCase{"\"bad\\x01key\": 1\n", 1, 1, "bad\\x01key",
                  "unknown key; expected one of " + topKeyList},
        ErrorCase{"<<: {policy: schedutil}\n", 1, 1, "<<",
                  "merge keys ('<<') are not supported"},
        ErrorCase{"backend:\n  typ: kernel\n", 2, 3, "backend.typ",
                  "unknown key; expected one of type, simulator, access"},
        ErrorCase{"backend:\n  simulator:\n    cpu: 4\n", 3, 5,
                  "backend.simulator.cpu",
                  "unknown key; expected one of layout, cpus, platform_limit"},
        ErrorCase{"backend:\n  layout: rd-n2\n", 2, 3, "backend.layout",
                  "unknown key; expected one of type, simulator, access"},
        ErrorCase{"backend:\n  simulator: rd-n2\n", 2, 14, "backend.simulator",
                  "expected a map, got 'rd-n2'"}));

INSTANTIATE_TEST_SUITE_P(
    DuplicateKeys, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"policy: schedutil\npolicy: powersave\n", 2, 1, "policy",
                  "duplicate key, first set on line 1"},
        ErrorCase{"schedutil:\n  boost: true\n  boost: false\n", 3, 3,
                  "schedutil.boost", "duplicate key, first set on line 2"},
        ErrorCase{"schedutil: {floor: lowest, floor: lowest}\n", 1, 28,
                  "schedutil.floor", "duplicate key, first set on line 1"},
        ErrorCase{"overrides:\n  - domain: 1\n    domain: 2\n", 3, 5,
                  "overrides[0].domain", "duplicate key, first set on line 2"},
        ErrorCase{"backend:\n  simulator:\n    cpus: 1\n    cpus: 2\n", 4, 5,
                  "backend.simulator.cpus",
                  "duplicate key, first set on line 3"}));

ErrorCase cpuListCase(const std::string& list, const std::string& problem)
{
    return {"overrides:\n  - cpus: \"" + list + "\"\n", 2, 11,
            "overrides[0].cpus",
            "malformed CPU list '" + list + "': " + problem};
}

INSTANTIATE_TEST_SUITE_P(
    CpuLists, ConfigErrorTest,
    ::testing::Values(
        cpuListCase("3-1", "the range '3-1' ends before it starts"),
        cpuListCase("x", "'x' is not a CPU number"),
        cpuListCase("1,,2", "an empty item"),
        cpuListCase("1,", "an empty item"), cpuListCase(",1", "an empty item"),
        cpuListCase("", "the list is empty"),
        cpuListCase("  ", "the list is empty"),
        cpuListCase("1-", "a CPU number is missing"),
        cpuListCase("-1", "a CPU number is missing"),
        cpuListCase("1-2-3", "'2-3' is not a CPU number"),
        cpuListCase("+1", "'+1' is not a CPU number"),
        cpuListCase("0-7:2/4", "'7:2/4' is not a CPU number"),
        cpuListCase("0-4096", "CPU 4096 is above 4095, the highest supported"),
        cpuListCase("99999999999",
                    "CPU 99999999999 is above 4095, the highest supported")));

INSTANTIATE_TEST_SUITE_P(
    Selectors, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"overrides:\n  - cpus: \"1\"\n    domain: 2\n", 2, 5,
                  "overrides[0]",
                  "sets both 'cpus' and 'domain'; an override selects by "
                  "one of them"},
        ErrorCase{"overrides:\n  - policy: performance\n", 2, 5, "overrides[0]",
                  "selects no CPUs; set 'cpus' or 'domain'"},
        ErrorCase{"overrides:\n  - domain: 0\n  - {}\n", 3, 5, "overrides[1]",
                  "selects no CPUs; set 'cpus' or 'domain'"}));

INSTANTIATE_TEST_SUITE_P(
    Syntax, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"policy: a: b\n", 1, 10, "",
                  "YAML syntax error: illegal map value"},
        ErrorCase{"schedutil:\n  headroom: [1.5\n", 3, 1, "",
                  "YAML syntax error: end of sequence flow not found"},
        ErrorCase{"schedutil:\n\theadroom: 1.5\n", 2, 10, "",
                  "YAML syntax error: illegal map value"},
        ErrorCase{"sampling: {period_us: 1000\n", 2, 1, "",
                  "YAML syntax error: end of map flow not found"},
        ErrorCase{"policy: *nowhere\n", 1, 9, "",
                  "YAML syntax error: the referenced anchor is not defined"},
        ErrorCase{"policy: schedutil\n---\npolicy: powersave\n", 2, 1, "",
                  "a second YAML document; a policy file holds one"},
        ErrorCase{"policy: schedutil\n---\n", 2, 1, "",
                  "a second YAML document; a policy file holds one"},
        // yaml-cpp 0.7's LoadAll() never returns on these.
        ErrorCase{",", 1, 1, "", "YAML syntax error: unexpected ','"},
        ErrorCase{"[a], b\n", 1, 4, "", "YAML syntax error: unexpected ','"},
        // The nesting limit, checked before yaml-cpp parses anything.
        ErrorCase{std::string(100, '['), 1, 63, "",
                  "nested deeper than 64 levels"},
        ErrorCase{[] {
    std::string s;
    for (int i = 0; i < 40; ++i)
    {
        s += "- ";
    }
    return s + "x\n";
                  }(),
                  1, 1, "", "nested deeper than 64 levels"}));

TEST(ConfigErrorTest, FormatsWithQuotedFileAndOmitsWhatDoesNotApply)
{
    const ConfigError full("/etc/cppcgov/policy.yaml", 3, 14,
                           "schedutil.headroom", "bad");
    EXPECT_STREQ(full.what(),
                 "'/etc/cppcgov/policy.yaml':3:14: schedutil.headroom: bad");
    const ConfigError noKey("a.yaml", 2, 1, "", "YAML syntax error: x");
    EXPECT_STREQ(noKey.what(), "'a.yaml':2:1: YAML syntax error: x");
    const ConfigError wholeFile("a.yaml", 0, 0, "", "cannot open: nope");
    EXPECT_STREQ(wholeFile.what(), "'a.yaml': cannot open: nope");
    // Copies share the details: the copy is what is under test.
    // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
    const ConfigError copy = full;
    EXPECT_EQ(copy.keyPath(), "schedutil.headroom");
    EXPECT_EQ(copy.line(), 3U);
    EXPECT_EQ(copy.column(), 14U);
}

TEST(ConfigErrorTest, RejectsFilesOverTheSizeLimit)
{
    const std::string big(maxConfigBytes + 1, '#');
    try
    {
        (void)parseConfig(big, testFile);
        ADD_FAILURE() << "no error";
    }
    catch (const ConfigError& e)
    {
        EXPECT_STREQ(e.what(), "'test.yaml': larger than 1048576 bytes");
    }
    EXPECT_NO_THROW((void)parseConfig(big.substr(1), testFile));
}

TEST(ConfigErrorTest, LimitsTheNumberOfOverrides)
{
    // Aliases make entries cheap to write; the limit holds all the same.
    std::string yaml = "overrides:\n  - &o {domain: 1}\n";
    for (std::size_t i = 1; i < maxOverrides; ++i)
    {
        yaml += "  - *o\n";
    }
    EXPECT_EQ(parseConfig(yaml, testFile).overrides.size(), maxOverrides);
    yaml += "  - *o\n";
    try
    {
        (void)parseConfig(yaml, testFile);
        ADD_FAILURE() << "no error";
    }
    catch (const ConfigError& e)
    {
        // An alias is the node it names: the position is the anchor's.
        EXPECT_EQ(e.line(), 2U);
        EXPECT_EQ(e.keyPath(), "overrides[4096]");
        EXPECT_EQ(e.problem(), "more than 4096 overrides");
    }
}

TEST(ConfigErrorTest, SurvivesASelfReferencingAlias)
{
    EXPECT_THROW((void)parseConfig("overrides: &a [*a]\n", testFile),
                 ConfigError);
}

} // namespace
} // namespace cppcgov::daemon
