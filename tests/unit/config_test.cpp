// SPDX-License-Identifier: Apache-2.0
// cppcgovd's configuration: the shipped policy.yaml against the defaults in
// the code, every knob, and the per-CPU settings the overrides make.
#include "config_test_support.hpp"
#include "daemon/config.hpp"
#include "temp_tree.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
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
using test::cpus;
using test::defaultsFrom;
using test::testFile;

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
    EXPECT_EQ(config.idlePeriodUs, 4000U);
    EXPECT_EQ(config.steadyPeriodUs, 4000U);
    EXPECT_EQ(config.clients.maxHandles, 64U);
    EXPECT_EQ(config.clients.maxCallsPerSecond, 200U);
    EXPECT_EQ(config.clients.maxHandlesPerUser, 256U);
    EXPECT_EQ(config.clients.maxCallsPerSecondPerUser, 1000U);
    EXPECT_EQ(config.group, "cppcgov");
    EXPECT_EQ(config.backend.type, BackendKind::automatic);
    EXPECT_EQ(config.backend.simulator.layout, "rd-n2");
    EXPECT_EQ(config.backend.simulator.cpus, 0U);
    EXPECT_EQ(config.metrics.directory, "/var/lib/prometheus/node-exporter");
    EXPECT_EQ(config.metrics.intervalS, 15U);
    EXPECT_EQ(config.defaults.autonomous.energyPreference, 128U);
    EXPECT_EQ(config.defaults.autonomous.energyPreferencePerformance, 0U);
    EXPECT_EQ(config.defaults.autonomous.energyPreferenceEfficiency, 255U);
    EXPECT_EQ(config.defaults.autonomous.activityWindowUs, std::nullopt);
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
          "\ntick:\n",
          "\n  scheduling: auto\n",
          "\n  runtime_us: 0\n",
          "\n  fifo_priority: 1\n",
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
          "\nmetrics:\n",
          "\n  directory: /var/lib/prometheus/node-exporter\n",
          "\n  interval_s: 15\n",
          "\nautonomous:\n",
          "\n  energy_preference: 128\n",
          "\n  energy_preference_performance: 0\n",
          "\n  energy_preference_efficiency: 255\n",
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
    KnobCase{"policy: autonomous\n",
             [](GovernorConfig& c) {
    c.defaults.kind = PolicyKind::autonomous;
             }},
    KnobCase{"autonomous:\n  energy_preference: 0\n"
             "  energy_preference_performance: 5\n"
             "  energy_preference_efficiency: 200\n"
             "  activity_window_us: 1270000000\n",
             [](GovernorConfig& c) {
    c.defaults.autonomous.energyPreference = 0;
    c.defaults.autonomous.energyPreferencePerformance = 5;
    c.defaults.autonomous.energyPreferenceEfficiency = 200;
    c.defaults.autonomous.activityWindowUs = 1270000000;
             }},
    KnobCase{"autonomous:\n", [](GovernorConfig&) {}},
    KnobCase{"overrides:\n  - domain: 3\n    policy: autonomous\n"
             "    autonomous:\n      energy_preference: 255\n"
             "      activity_window_us: 0\n",
             [](GovernorConfig& c) {
    Override o = overrideAt(PsdDomain{3}, 2);
    o.kind = PolicyKind::autonomous;
    o.autonomous.energyPreference = 255;
    o.autonomous.activityWindowUs = 0;
    c.overrides.push_back(o);
             }},
    KnobCase{"schedutil:\n  boost: true\n",
             [](GovernorConfig& c) { c.defaults.schedutil.boost = true; }},
    KnobCase{"schedutil:\n  boost: TRUE\n",
             [](GovernorConfig& c) { c.defaults.schedutil.boost = true; }},
    KnobCase{"schedutil:\n  boost: False\n", [](GovernorConfig&) {}},
    KnobCase{"sampling:\n  period_us: 100\n",
             [](GovernorConfig& c) { c.samplingPeriodUs = 100; }},
    KnobCase{"sampling:\n  period_us: 1000000\n",
             [](GovernorConfig& c) { c.samplingPeriodUs = 1000000; }},
    KnobCase{"sampling:\n  idle_period_us: 0\n",
             [](GovernorConfig& c) { c.idlePeriodUs = 0; }},
    KnobCase{"sampling:\n  idle_period_us: 1000000\n",
             [](GovernorConfig& c) { c.idlePeriodUs = 1000000; }},
    KnobCase{"sampling:\n  steady_period_us: 0\n",
             [](GovernorConfig& c) { c.steadyPeriodUs = 0; }},
    KnobCase{"sampling:\n  steady_period_us: 1000000\n",
             [](GovernorConfig& c) { c.steadyPeriodUs = 1000000; }},
    KnobCase{"sampling:\n  source: bpf\n",
             [](GovernorConfig& c) { c.samplingSource = SamplingSource::bpf; }},
    KnobCase{"sampling:\n  source: procfs\n",
             [](GovernorConfig& c) {
    c.samplingSource = SamplingSource::procfs;
             }},
    KnobCase{"sampling:\n  source: auto\n", [](GovernorConfig&) {}},
    KnobCase{"tick:\n  scheduling: deadline\n",
             [](GovernorConfig& c) {
    c.tick.scheduling = TickScheduling::deadline;
             }},
    KnobCase{"tick:\n  scheduling: fifo\n",
             [](GovernorConfig& c) {
    c.tick.scheduling = TickScheduling::fifo;
             }},
    KnobCase{"tick:\n  scheduling: other\n",
             [](GovernorConfig& c) {
    c.tick.scheduling = TickScheduling::other;
             }},
    KnobCase{"tick:\n  scheduling: auto\n", [](GovernorConfig&) {}},
    KnobCase{"tick:\n  runtime_us: 250\n",
             [](GovernorConfig& c) { c.tick.runtimeUs = 250; }},
    KnobCase{"tick:\n  fifo_priority: 49\n",
             [](GovernorConfig& c) { c.tick.fifoPriority = 49; }},
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
    KnobCase{"backend:\n  simulator:\n    layout: neoverse\n"
             "    platform_limit: 150\n",
             [](GovernorConfig& c) {
    c.backend.simulator.layout = "neoverse";
    c.backend.simulator.platformLimit = 150;
             }},
    KnobCase{"backend:\n  simulator: {layout: packed, cpus: 1}\n",
             [](GovernorConfig& c) {
    c.backend.simulator.layout = "packed";
    c.backend.simulator.cpus = 1;
             }},
    KnobCase{"metrics:\n  directory: /srv/ne\n  interval_s: 0\n",
             [](GovernorConfig& c) {
    c.metrics.directory = "/srv/ne";
    c.metrics.intervalS = 0;
             }},
    KnobCase{"metrics: {interval_s: 86400}\n",
             [](GovernorConfig& c) { c.metrics.intervalS = 86400; }},
    // An anchor and an alias stand for the same map.
    KnobCase{"overrides:\n  - &fast {cpus: \"2\", policy: performance}\n"
             "  - *fast\n",
             [](GovernorConfig& c) {
    Override o = overrideAt(cpus({2}), 2);
    o.kind = PolicyKind::performance;
    c.overrides = {o, o};
             }}));

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

} // namespace
} // namespace cppcgov::daemon
