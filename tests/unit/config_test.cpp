// cppcgovd's configuration: the shipped policy.yaml against the defaults in
// the code, every knob, every kind of error with its position and key,
// drop-ins, per-CPU settings and reload.
#include "daemon/config.hpp"
#include "daemon/yaml_reader.hpp"
#include "temp_tree.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::test::TempTree;
using policies::Floor;
using policies::PolicyKind;

constexpr const char* testFile = "test.yaml";

std::string readText(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in)
    {
        throw std::runtime_error("cannot read " + path.string());
    }
    return text.str();
}

// What parseConfig() gives for a file that sets nothing.
GovernorConfig defaultsFrom(const std::string& file)
{
    GovernorConfig config;
    config.sources = {file};
    return config;
}

CpuSet cpus(std::initializer_list<std::uint32_t> numbers)
{
    CpuSet set;
    for (const std::uint32_t cpu : numbers)
    {
        set.set(cpu);
    }
    return set;
}

// ---- The shipped file ----

TEST(ShippedConfigTest, DefaultsAreTheDocumentedOnes)
{
    const GovernorConfig config;
    EXPECT_EQ(config.defaults.kind, PolicyKind::schedutil);
    EXPECT_EQ(config.defaults.schedutil.headroom, 1.25);
    EXPECT_EQ(config.defaults.schedutil.rateLimitUpUs, 0U);
    EXPECT_EQ(config.defaults.schedutil.rateLimitDownUs, 0U);
    EXPECT_EQ(config.defaults.schedutil.floor, Floor::lowestNonlinear);
    EXPECT_FALSE(config.defaults.schedutil.boost);
    EXPECT_EQ(config.samplingPeriodUs, 1000U);
    EXPECT_EQ(config.clients.maxHandles, 64U);
    EXPECT_EQ(config.clients.maxCallsPerSecond, 200U);
    EXPECT_EQ(config.clients.maxHandlesPerUser, 256U);
    EXPECT_EQ(config.clients.maxCallsPerSecondPerUser, 1000U);
    EXPECT_EQ(config.group, "cppcgov");
    EXPECT_EQ(config.backend.type, BackendKind::automatic);
    EXPECT_EQ(config.backend.simulator.layout, "rd-n2");
    EXPECT_EQ(config.backend.simulator.cpus, 0U);
    EXPECT_TRUE(config.overrides.empty());
    EXPECT_TRUE(config.sources.empty());
}

TEST(ShippedConfigTest, ParsesToTheDefaultsOfTheCode)
{
    const std::string text = readText(CPPCGOV_POLICY_YAML);
    EXPECT_EQ(parseConfig(text, "policy.yaml"), defaultsFrom("policy.yaml"));
}

TEST(ShippedConfigTest, SetsEveryKnobExplicitly)
{
    // The file documents each knob next to a line that sets it, so that
    // no knob is left to the code's default unseen.
    const std::string text = readText(CPPCGOV_POLICY_YAML);
    for (const char* line :
         {"\npolicy: schedutil\n",
          "\nschedutil:\n",
          "\n  headroom: 1.25\n",
          "\n  rate_limit_up_us: 0\n",
          "\n  rate_limit_down_us: 0\n",
          "\n  floor: lowest_nonlinear\n",
          "\n  boost: false\n",
          "\nsampling:\n",
          "\n  period_us: 1000\n",
          "\nclients:\n",
          "\n  max_handles: 64\n",
          "\n  max_calls_per_second: 200\n",
          "\npermissions:\n",
          "\n  group: cppcgov\n",
          "\nbackend:\n",
          "\n  type: auto\n",
          "\n  simulator:\n",
          "\n    layout: rd-n2\n",
          "\n    cpus: 0\n",
          "\noverrides: []\n"})
    {
        EXPECT_NE(text.find(line), std::string::npos) << line;
    }
}

TEST(ShippedConfigTest, LoadsFromItsInstalledLayout)
{
    const TempTree dir;
    const fs::path main =
        dir.write("policy.yaml", readText(CPPCGOV_POLICY_YAML));
    EXPECT_EQ(loadConfig(main, dir.path() / "policy.d"),
              defaultsFrom(main.string()));
}

// ---- Every knob ----

struct KnobCase
{
    std::string yaml;
    // Turns the defaults into what the YAML should give.
    std::function<void(GovernorConfig&)> expect;
};

void PrintTo(const KnobCase& c, std::ostream* out)
{
    *out << ::testing::PrintToString(c.yaml);
}

class KnobTest : public ::testing::TestWithParam<KnobCase>
{};

TEST_P(KnobTest, ParsesToItsField)
{
    const KnobCase& c = GetParam();
    GovernorConfig expected = defaultsFrom(testFile);
    c.expect(expected);
    EXPECT_EQ(parseConfig(c.yaml, testFile), expected) << c.yaml;
}

Override overrideAt(Selector selector, std::uint32_t line)
{
    Override o;
    o.selector = selector;
    o.origin = std::string(testFile) + ":" + std::to_string(line);
    return o;
}

INSTANTIATE_TEST_SUITE_P(
    Table, KnobTest,
    ::testing::Values(
        KnobCase{"", [](GovernorConfig&) {}},
        KnobCase{"# nothing but a comment\n", [](GovernorConfig&) {}},
        KnobCase{"---\n...\n", [](GovernorConfig&) {}},
        KnobCase{"schedutil:\nsampling:\nclients:\npermissions:\noverrides:\n",
                 [](GovernorConfig&) {}},
        KnobCase{"policy: performance\n",
                 [](GovernorConfig& c) {
    c.defaults.kind = PolicyKind::performance;
                 }},
        KnobCase{"policy: \"powersave\"\n",
                 [](GovernorConfig& c) {
    c.defaults.kind = PolicyKind::powersave;
                 }},
    KnobCase{"policy: schedutil\n", [](GovernorConfig&) {}},
    KnobCase{"schedutil:\n  headroom: 2.5\n",
             [](GovernorConfig& c) { c.defaults.schedutil.headroom = 2.5; }},
    KnobCase{"schedutil: {headroom: 1}\n",
             [](GovernorConfig& c) { c.defaults.schedutil.headroom = 1.0; }},
    KnobCase{"schedutil:\n  headroom: 4.0\n",
             [](GovernorConfig& c) { c.defaults.schedutil.headroom = 4.0; }},
    KnobCase{"schedutil:\n  rate_limit_up_us: 500\n",
             [](GovernorConfig& c) {
    c.defaults.schedutil.rateLimitUpUs = 500;
             }},
    KnobCase{"schedutil:\n  rate_limit_down_us: 1000000\n",
             [](GovernorConfig& c) {
    c.defaults.schedutil.rateLimitDownUs = 1000000;
             }},
    KnobCase{"schedutil:\n  floor: lowest\n",
             [](GovernorConfig& c) {
    c.defaults.schedutil.floor = Floor::lowest;
             }},
    KnobCase{"schedutil:\n  floor: lowest_nonlinear\n", [](GovernorConfig&) {}},
    KnobCase{"schedutil:\n  boost: true\n",
             [](GovernorConfig& c) { c.defaults.schedutil.boost = true; }},
    KnobCase{"schedutil:\n  boost: TRUE\n",
             [](GovernorConfig& c) { c.defaults.schedutil.boost = true; }},
    KnobCase{"schedutil:\n  boost: False\n", [](GovernorConfig&) {}},
    KnobCase{"sampling:\n  period_us: 100\n",
             [](GovernorConfig& c) { c.samplingPeriodUs = 100; }},
    KnobCase{"sampling:\n  period_us: 1000000\n",
             [](GovernorConfig& c) { c.samplingPeriodUs = 1000000; }},
    KnobCase{"clients:\n  max_handles: 4096\n",
             [](GovernorConfig& c) { c.clients.maxHandles = 4096; }},
    KnobCase{"clients:\n  max_calls_per_second: 1\n",
             [](GovernorConfig& c) { c.clients.maxCallsPerSecond = 1; }},
    KnobCase{"users:\n  max_handles: 16384\n",
             [](GovernorConfig& c) { c.clients.maxHandlesPerUser = 16384; }},
    KnobCase{"users:\n  max_calls_per_second: 7\n",
             [](GovernorConfig& c) { c.clients.maxCallsPerSecondPerUser = 7; }},
    KnobCase{"permissions:\n  group: _cpu-admins2\n",
             [](GovernorConfig& c) { c.group = "_cpu-admins2"; }},
    KnobCase{"overrides:\n  - cpus: \"0-3,8,10-11\"\n",
             [](GovernorConfig& c) {
    c.overrides = {overrideAt(cpus({0, 1, 2, 3, 8, 10, 11}), 2)};
             }},
    KnobCase{"overrides:\n  - cpus: 5\n  - cpus: \" 1 , 4095 \"\n",
             [](GovernorConfig& c) {
    c.overrides = {overrideAt(cpus({5}), 2), overrideAt(cpus({1, 4095}), 3)};
             }},
    KnobCase{"overrides:\n"
             "  - domain: 3\n"
             "    policy: powersave\n"
             "    schedutil:\n"
             "      headroom: 1.5\n"
             "      floor: lowest\n",
             [](GovernorConfig& c) {
    Override o = overrideAt(PsdDomain{3}, 2);
    o.kind = PolicyKind::powersave;
    o.schedutil.headroom = 1.5;
    o.schedutil.floor = Floor::lowest;
    c.overrides = {o};
             }},
    KnobCase{"overrides:\n"
             "- domain: 4294967295\n"
             "  schedutil: {rate_limit_up_us: 7, rate_limit_down_us: 9, "
             "boost: true}\n",
             [](GovernorConfig& c) {
    Override o = overrideAt(PsdDomain{4294967295U}, 2);
    o.schedutil.rateLimitUpUs = 7;
    o.schedutil.rateLimitDownUs = 9;
    o.schedutil.boost = true;
    c.overrides = {o};
             }},
    KnobCase{"backend:\n", [](GovernorConfig&) {}},
    KnobCase{"backend:\n  type: simulator\n",
             [](GovernorConfig& c) {
    c.backend.type = BackendKind::simulator;
             }},
    KnobCase{"backend: {type: kernel}\n",
             [](GovernorConfig& c) { c.backend.type = BackendKind::kernel; }},
    KnobCase{"backend:\n  type: \"registers\"\n",
             [](GovernorConfig& c) {
    c.backend.type = BackendKind::registers;
             }},
    KnobCase{"backend:\n  type: auto\n  simulator:\n", [](GovernorConfig&) {}},
    KnobCase{"backend:\n  simulator:\n    layout: altra\n    cpus: 0\n",
             [](GovernorConfig& c) { c.backend.simulator.layout = "altra"; }},
    KnobCase{"backend:\n  simulator:\n    layout: orion-o6\n",
             [](GovernorConfig& c) {
    c.backend.simulator.layout = "orion-o6";
             }},
    KnobCase{"backend:\n  simulator:\n    cpus: 4096\n",
             [](GovernorConfig& c) { c.backend.simulator.cpus = 4096; }},
    KnobCase{"backend:\n  simulator: {layout: packed, cpus: 1}\n",
             [](GovernorConfig& c) {
    c.backend.simulator.layout = "packed";
    c.backend.simulator.cpus = 1;
             }},
    // An anchor and an alias stand for the same map.
    KnobCase{"overrides:\n  - &fast {cpus: \"2\", policy: performance}\n"
             "  - *fast\n",
             [](GovernorConfig& c) {
    Override o = overrideAt(cpus({2}), 2);
    o.kind = PolicyKind::performance;
    c.overrides = {o, o};
             }}));

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
const std::string topKeyList =
    "policy, schedutil, sampling, clients, users, permissions, backend, "
    "overrides";
const std::string backendList = "auto, simulator, kernel, registers";
const std::string layoutList = "orion-o6, rd-n2, packed, altra";
const std::string layoutCpusRange = "a whole number from 0 to 4096";
const std::string fixedLayout =
    "layout 'orion-o6' has a fixed number of CPUs and cannot have ";
const std::string scalable = "; the layouts that scale: rd-n2, packed";
const std::string schedutilKeyList =
    "headroom, rate_limit_up_us, rate_limit_down_us, floor, boost";
const std::string policyList = "schedutil, performance, powersave";
const std::string groupRule = " is not a group name (1 to 31 letters, digits, "
                              "'_' or '-', not starting with a digit or '-')";

INSTANTIATE_TEST_SUITE_P(
    Types, ConfigErrorTest,
    ::testing::Values(
        ErrorCase{"schedutil:\n  headroom: fast\n", 2, 13, "schedutil.headroom",
                  "expected " + headroomRange + ", got 'fast'"},
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
                  "unknown key; expected one of period_us"},
        ErrorCase{"clients:\n  max_handle: 5\n", 2, 3, "clients.max_handle",
                  "unknown key; expected one of max_handles, "
                  "max_calls_per_second"},
        ErrorCase{"permissions:\n  groups: x\n", 2, 3, "permissions.groups",
                  "unknown key; expected one of group"},
        ErrorCase{"overrides:\n  - cpus: \"1\"\n    cpu: \"2\"\n", 3, 5,
                  "overrides[0].cpu",
                  "unknown key; expected one of cpus, domain, policy, "
                  "schedutil"},
        ErrorCase{"overrides:\n  - domain: 1\n  - domain: 2\n    schedutil:\n"
                  "      boots: true\n",
                  5, 7, "overrides[1].schedutil.boots",
                  "unknown key; expected one of " + schedutilKeyList},
        ErrorCase{"\"bad\\x01key\": 1\n", 1, 1, "bad\\x01key",
                  "unknown key; expected one of " + topKeyList},
        ErrorCase{"<<: {policy: schedutil}\n", 1, 1, "<<",
                  "merge keys ('<<') are not supported"},
        ErrorCase{"backend:\n  typ: kernel\n", 2, 3, "backend.typ",
                  "unknown key; expected one of type, simulator"},
        ErrorCase{"backend:\n  simulator:\n    cpu: 4\n", 3, 5,
                  "backend.simulator.cpu",
                  "unknown key; expected one of layout, cpus"},
        ErrorCase{"backend:\n  layout: rd-n2\n", 2, 3, "backend.layout",
                  "unknown key; expected one of type, simulator"},
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
    // Copies share the details.
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

// ---- Drop-ins ----

TEST(LoadConfigTest, MergesDropInsInNameOrder)
{
    const TempTree dir;
    const fs::path main = dir.write(
        "policy.yaml",
        "policy: schedutil\n"
        "schedutil:\n"
        "  headroom: 1.5\n"
        "  boost: true\n"
        "overrides:\n"
        "  - cpus: \"0\"\n"
        "    policy: performance\n");
    const fs::path second = dir.write(
        "policy.d/20-rack.yaml",
        "schedutil:\n"
        "  headroom: 3.0\n"
        "overrides:\n"
        "  - domain: 2\n"
        "    policy: powersave\n");
    const fs::path first = dir.write(
        "policy.d/10-site.yaml",
        "schedutil:\n"
        "  headroom: 2.0\n"
        "  floor: lowest\n"
        "sampling:\n"
        "  period_us: 2000\n"
        "overrides:\n"
        "  - cpus: \"1\"\n"
        "    policy: powersave\n");
    // Not drop-ins: hidden, another extension.
    dir.write("policy.d/.hidden.yaml", "policy: nonsense\n");
    dir.write("policy.d/30-notes.txt", "policy: nonsense\n");

    const GovernorConfig config = loadConfig(main, dir.path() / "policy.d");

    GovernorConfig expected;
    expected.defaults.schedutil.headroom = 3.0; // the last file wins
    expected.defaults.schedutil.boost = true;   // set by the first only
    expected.defaults.schedutil.floor = Floor::lowest;
    expected.samplingPeriodUs = 2000;
    Override o0;
    o0.selector = cpus({0});
    o0.kind = PolicyKind::performance;
    o0.origin = main.string() + ":6";
    Override o1;
    o1.selector = cpus({1});
    o1.kind = PolicyKind::powersave;
    o1.origin = first.string() + ":7";
    Override o2;
    o2.selector = PsdDomain{2};
    o2.kind = PolicyKind::powersave;
    o2.origin = second.string() + ":4";
    expected.overrides = {o0, o1, o2};
    expected.sources = {main.string(), first.string(), second.string()};
    EXPECT_EQ(config, expected);
}

TEST(LoadConfigTest, DropInsSetBackendKeysOneByOne)
{
    const TempTree dir;
    const fs::path main = dir.write(
        "policy.yaml",
        "backend:\n"
        "  type: simulator\n"
        "  simulator:\n"
        "    layout: packed\n"
        "    cpus: 64\n");
    const fs::path dropIn =
        dir.write("policy.d/10-cpus.yaml", "backend:\n"
                                           "  simulator:\n"
                                           "    cpus: 128\n");
    GovernorConfig expected;
    expected.backend.type = BackendKind::simulator;
    expected.backend.simulator.layout = "packed";
    expected.backend.simulator.cpus = 128;
    expected.sources = {main.string(), dropIn.string()};
    EXPECT_EQ(loadConfig(main, dir.path() / "policy.d"), expected);
}

TEST(LoadConfigTest, AMissingDropInDirIsFine)
{
    const TempTree dir;
    const fs::path main = dir.write("policy.yaml", "policy: powersave\n");
    GovernorConfig expected = defaultsFrom(main.string());
    expected.defaults.kind = PolicyKind::powersave;
    EXPECT_EQ(loadConfig(main, dir.path() / "policy.d"), expected);
}

struct LoadErrorCase
{
    std::string name;
    // Writes the files; returns the error expected, with "@" for the
    // directory.
    std::function<std::string(const TempTree&)> setUp;
};

void PrintTo(const LoadErrorCase& c, std::ostream* out)
{
    *out << c.name;
}

class LoadErrorTest : public ::testing::TestWithParam<LoadErrorCase>
{};

TEST_P(LoadErrorTest, NamesTheFile)
{
    const TempTree dir;
    std::string expected = GetParam().setUp(dir);
    expected.replace(expected.find('@'), 1, dir.path().string());
    try
    {
        (void)loadConfig(dir.path() / "policy.yaml", dir.path() / "policy.d");
        ADD_FAILURE() << "no error";
    }
    catch (const ConfigError& e)
    {
        EXPECT_EQ(e.what(), expected);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, LoadErrorTest,
    ::testing::Values(LoadErrorCase{"MissingMainFile",
                                    [](const TempTree&) {
    return std::string("'@/policy.yaml': cannot open: "
                       "No such file or directory");
                                    }},
                      LoadErrorCase{"MainFileIsADirectory",
                                    [](const TempTree& d) {
    fs::create_directory(d.path() / "policy.yaml");
    return std::string("'@/policy.yaml': a directory, not a regular "
                       "file");
                                    }},
    LoadErrorCase{"BadDropIn",
                  [](const TempTree& d) {
    d.write("policy.yaml", "policy: schedutil\n");
    d.write("policy.d/10-ok.yaml", "policy: powersave\n");
    d.write("policy.d/20-bad.yaml", "\nclients:\n  max_handles: lots\n");
    return std::string("'@/policy.d/20-bad.yaml':3:16: "
                       "clients.max_handles: expected a whole number "
                       "from 1 to 4096, got 'lots'");
                  }},
    LoadErrorCase{"DropInFixesTheLayoutUnderAnEarlierCpuCount",
                  [](const TempTree& d) {
    d.write("policy.yaml", "backend:\n  simulator:\n    cpus: 64\n");
    d.write("policy.d/10-orion.yaml",
            "backend:\n  simulator:\n    layout: altra\n");
    return std::string("'@/policy.d/10-orion.yaml':3:13: "
                       "backend.simulator.layout: layout 'altra' has a fixed "
                       "number of CPUs and cannot have the 64 that "
                       "backend.simulator.cpus sets; the layouts that scale: "
                       "rd-n2, packed");
                  }},
    LoadErrorCase{"DropInDirIsAFile",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    d.write("policy.d", "");
    return std::string("'@/policy.d': not a directory");
                  }},
    LoadErrorCase{"TooManyOverridesOverAllFiles",
                  [](const TempTree& d) {
    std::string many = "overrides:\n- &o {domain: 1}\n";
    for (std::size_t i = 1; i < maxOverrides; ++i)
    {
        many += "- *o\n";
    }
    d.write("policy.yaml", many);
    d.write("policy.d/a.yaml", "overrides: [{cpus: \"1\"}]\n");
    return std::string("'@/policy.d/a.yaml':1:13: overrides[0]: more "
                       "than 4096 overrides");
                  }}),
    [](const ::testing::TestParamInfo<LoadErrorCase>& param) {
    return param.param.name;
    });

// ---- Only regular files ----

// A FIFO, a socket or a device opened like a file would block (a FIFO
// with no writer), fail with a bare errno (a socket) or run the device's
// open; each is refused by its kind, without waiting for anything.
void makeFifo(const fs::path& path)
{
    fs::create_directories(path.parent_path());
    if (::mkfifo(path.c_str(), 0600) != 0)
    {
        throw std::system_error(errno, std::system_category(), path);
    }
}

void makeSocket(const fs::path& path)
{
    fs::create_directories(path.parent_path());
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string name = path.string();
    if (name.size() >= sizeof(address.sun_path))
    {
        throw std::runtime_error("socket path too long: " + name);
    }
    std::copy(name.begin(), name.end(), address.sun_path);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
    {
        throw std::system_error(errno, std::system_category(), "socket");
    }
    // The socket file stays once bound, listening or not.
    const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&address),
                          sizeof(address));
    const int err = errno;
    ::close(fd);
    if (rc != 0)
    {
        throw std::system_error(err, std::system_category(), name);
    }
}

INSTANTIATE_TEST_SUITE_P(
    NotARegularFile, LoadErrorTest,
    ::testing::Values(LoadErrorCase{"FifoDropIn",
                                    [](const TempTree& d) {
    d.write("policy.yaml", "policy: schedutil\n");
    d.write("policy.d/50-ok.yaml", "policy: powersave\n");
    makeFifo(d.path() / "policy.d/60-x.yaml");
    return std::string("'@/policy.d/60-x.yaml': a FIFO, not a regular file");
                                    }},
                      LoadErrorCase{"FifoMainFile",
                                    [](const TempTree& d) {
    makeFifo(d.path() / "policy.yaml");
    return std::string("'@/policy.yaml': a FIFO, not a regular file");
                                    }},
    LoadErrorCase{"SocketDropIn",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    makeSocket(d.path() / "policy.d/60-s.yaml");
    return std::string("'@/policy.d/60-s.yaml': a socket, not a regular file");
                  }},
    LoadErrorCase{"DeviceBehindASymlink",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    d.symlink("policy.d/60-null.yaml", "/dev/null");
    return std::string(
        "'@/policy.d/60-null.yaml': a character device, not a regular file");
                  }},
    LoadErrorCase{"DirectoryNamedLikeADropIn",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    d.write("policy.d/40-dir.yaml/x.yaml", "policy: powersave\n");
    return std::string("'@/policy.d/40-dir.yaml': a directory, not a "
                       "regular file");
                  }},
    LoadErrorCase{"DanglingSymlink",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    d.symlink("policy.d/60-gone.yaml", d.path() / "gone.yaml");
    return std::string("'@/policy.d/60-gone.yaml': cannot open: No such "
                       "file or directory");
                  }}),
    [](const ::testing::TestParamInfo<LoadErrorCase>& param) {
    return param.param.name;
    });

TEST(LoadConfigTest, ReadsNoMoreThanItAccepts)
{
    const TempTree dir;
    const fs::path big =
        dir.write("big.yaml", std::string(2 * maxConfigBytes, '#'));
    // One byte more than readYaml() takes, so that it can say so.
    EXPECT_EQ(readConfigFile(big, "big.yaml").size(), maxConfigBytes + 1);
    const fs::path main =
        dir.write("policy.yaml", std::string(maxConfigBytes + 1, '#'));
    try
    {
        (void)loadConfig(main, dir.path() / "policy.d");
        ADD_FAILURE() << "no error";
    }
    catch (const ConfigError& e)
    {
        EXPECT_EQ(e.what(),
                  "'" + main.string() + "': larger than 1048576 bytes");
    }
    dir.write("policy.yaml", std::string(maxConfigBytes, '#'));
    EXPECT_NO_THROW((void)loadConfig(main, dir.path() / "policy.d"));
}

TEST(LoadConfigTest, FollowsSymlinksToRegularFiles)
{
    // /etc often links its files elsewhere: what counts is what they name.
    const TempTree dir;
    const fs::path target =
        dir.write("shared/site.yaml", "policy: powersave\n");
    dir.symlink("policy.yaml", target);
    dir.symlink("policy.d/10-site.yaml", target);
    const fs::path main = dir.path() / "policy.yaml";
    const fs::path dropIn = dir.path() / "policy.d/10-site.yaml";
    GovernorConfig expected;
    expected.defaults.kind = PolicyKind::powersave;
    expected.sources = {main.string(), dropIn.string()};
    EXPECT_EQ(loadConfig(main, dir.path() / "policy.d"), expected);
}

// ---- Per-CPU settings ----

TEST(SettingsForTest, AppliesMatchingOverridesInOrder)
{
    const GovernorConfig config = parseConfig(
        "schedutil:\n"
        "  headroom: 1.5\n"
        "overrides:\n"
        "  - cpus: \"0-3\"\n"
        "    policy: performance\n"
        "  - domain: 2\n"
        "    schedutil:\n"
        "      headroom: 2.0\n"
        "      boost: true\n"
        "  - cpus: \"3,4095\"\n"
        "    policy: schedutil\n"
        "    schedutil:\n"
        "      headroom: 3.0\n",
        testFile);
    struct Case
    {
        std::uint32_t cpu;
        std::optional<std::uint32_t> domain;
        PolicyKind kind;
        double headroom;
        bool boost;
    };
    const std::vector<Case> cases = {
        {0, std::nullopt, PolicyKind::performance, 1.5, false},
        {2, 1, PolicyKind::performance, 1.5, false},
        {2, 2, PolicyKind::performance, 2.0, true},
        // The later override wins for the keys it sets, not for the others.
        {3, 2, PolicyKind::schedutil, 3.0, true},
        {3, std::nullopt, PolicyKind::schedutil, 3.0, false},
        {4, std::nullopt, PolicyKind::schedutil, 1.5, false},
        {4, 2, PolicyKind::schedutil, 2.0, true},
        {4095, std::nullopt, PolicyKind::schedutil, 3.0, false},
        // Beyond any CPU list: only domain overrides can match.
        {4096, std::nullopt, PolicyKind::schedutil, 1.5, false},
        {5000, 2, PolicyKind::schedutil, 2.0, true},
    };
    for (const Case& c : cases)
    {
        PolicySettings expected = config.defaults;
        expected.kind = c.kind;
        expected.schedutil.headroom = c.headroom;
        expected.schedutil.boost = c.boost;
        EXPECT_EQ(settingsFor(config, c.cpu, c.domain), expected)
            << "cpu " << c.cpu << " domain " << c.domain.value_or(999);
    }
}

TEST(SettingsForTest, ComparesEveryField)
{
    const PolicySettings base;
    std::vector<std::function<void(PolicySettings&)>> changes = {
        [](PolicySettings& s) { s.kind = PolicyKind::powersave; },
        [](PolicySettings& s) { s.schedutil.headroom = 2.0; },
        [](PolicySettings& s) { s.schedutil.rateLimitUpUs = 1; },
        [](PolicySettings& s) { s.schedutil.rateLimitDownUs = 1; },
        [](PolicySettings& s) { s.schedutil.floor = Floor::lowest; },
        [](PolicySettings& s) { s.schedutil.boost = true; },
    };
    for (std::size_t i = 0; i < changes.size(); ++i)
    {
        PolicySettings changed;
        changes[i](changed);
        EXPECT_FALSE(changed == base) << i;
    }
    EXPECT_TRUE(PolicySettings{} == base);
}

TEST(BackendKindTest, NamesAreTheConfigurationsOwn)
{
    EXPECT_EQ(backendKindName(BackendKind::automatic), "auto");
    EXPECT_EQ(backendKindName(BackendKind::simulator), "simulator");
    EXPECT_EQ(backendKindName(BackendKind::kernel), "kernel");
    EXPECT_EQ(backendKindName(BackendKind::registers), "registers");
}

TEST(BackendKindTest, ComparesEveryField)
{
    const BackendConfig base;
    BackendConfig type;
    type.type = BackendKind::kernel;
    BackendConfig layout;
    layout.simulator.layout = "packed";
    BackendConfig cpus;
    cpus.simulator.cpus = 8;
    EXPECT_FALSE(type == base);
    EXPECT_FALSE(layout == base);
    EXPECT_FALSE(cpus == base);
    GovernorConfig config;
    config.backend = cpus;
    EXPECT_FALSE(config == GovernorConfig{});
}

// ---- Reload ----

TEST(TryReloadTest, KeepsTheRunningConfigOnABadFile)
{
    const TempTree dir;
    const fs::path main = dir.write("policy.yaml", "policy: performance\n");
    const fs::path dropIns = dir.path() / "policy.d";
    const GovernorConfig running = loadConfig(main, dropIns);

    dir.write("policy.yaml", "policy: powersave\n");
    const ReloadResult good = tryReload(running, main, dropIns);
    EXPECT_EQ(good.error, "");
    EXPECT_EQ(good.config.defaults.kind, PolicyKind::powersave);

    dir.write("policy.d/50-typo.yaml", "polcy: schedutil\n");
    const ReloadResult bad = tryReload(good.config, main, dropIns);
    EXPECT_EQ(bad.error,
              "'" + (dropIns / "50-typo.yaml").string() +
                  "':1:1: polcy: unknown key; expected one of " + topKeyList);
    EXPECT_EQ(bad.config, good.config);

    fs::remove(main);
    const ReloadResult missing = tryReload(good.config, main, dropIns);
    EXPECT_THAT(missing.error, ::testing::HasSubstr("cannot open"));
    EXPECT_EQ(missing.config, good.config);
}

} // namespace
} // namespace cppcgov::daemon
