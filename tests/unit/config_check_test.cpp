// SPDX-License-Identifier: Apache-2.0
// cppcgovd --check-config and what it is made of: every error of every
// file (each top-level key, section key and list entry on its own), each
// as FILE:LINE:COLUMN: KEY: PROBLEM; the drop-ins that are not read; the
// overrides naming CPUs or domains the machine lacks; and the exit status.
#include "daemon/config_check.hpp"
#include "daemon/machines/simulator_machine.hpp"
#include "temp_tree.hpp"

#include <sstream>
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
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> linesOf(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
    {
        out.push_back(line);
    }
    return out;
}

struct Checked
{
    int status;
    std::vector<std::string> lines;
};

Checked check(const TempTree& tree)
{
    std::ostringstream out;
    const int status =
        checkConfig(tree.path() / "policy.yaml", tree.path() / "policy.d",
                    tree.path() / "root", out);
    return {status, linesOf(out.str())};
}

// A machine the kernel backend would see with CPUs 0-63.
void sixtyFourCpus(const TempTree& tree)
{
    (void)tree.write("root/sys/devices/system/cpu/present", "0-63\n");
    fs::create_directories(
        tree.path() / "root/sys/devices/system/cpu/cpu0/acpi_cppc");
}

TEST(CheckConfigTest, ReportsEveryMistakeOfEveryFile)
{
    const TempTree tree;
    sixtyFourCpus(tree);
    const fs::path main = tree.write(
        "policy.yaml",
        "policy: schedutil\n"
        "schedutil:\n"
        "  headroom: 9\n"
        "  rate_limit_upp_us: 5\n"
        "sampling:\n"
        "  period_us: 1000\n"
        "bogus: 1\n"
        "overrides:\n"
        "  - cpus: 0-3\n"
        "    policy: performance\n"
        "  - cpus: 100-200\n"
        "  - domain: 999\n"
        "  - cpus: 4-x\n"
        "  - cpus: 60-70\n"
        "    domain: 1\n"
        "  - policy: fast\n");
    const fs::path drop =
        tree.write("policy.d/10-site.yaml",
                   "clients:\n"
                   "  max_handles: 0\n"
                   "permissions:\n"
                   "  group: 9wheel\n");
    const fs::path broken =
        tree.write("policy.d/20-broken.yaml", "policy: [performance\n");
    const fs::path yml = tree.write("policy.d/60-site.yml", "policy: x\n");
    const fs::path backup = tree.write("policy.d/10-site.yaml~", "");
    const fs::path swap = tree.write("policy.d/.10-site.yaml.swp", "");
    const fs::path old = tree.write("policy.d/10-site.yaml.dpkg-old", "");
    fs::create_directories(tree.path() / "policy.d/old");

    const Checked c = check(tree);
    EXPECT_EQ(c.status, 1);
    const std::string m = main.string();
    const std::string d = drop.string();
    const std::string b = broken.string();
    const std::string dir = (tree.path() / "policy.d").string();
    EXPECT_THAT(
        c.lines,
        ElementsAre(
            "error: " + m +
                ":3:13: schedutil.headroom: '9' is out of range: expected a "
                "number from 1.0 to 4.0",
            "error: " + m +
                ":4:3: schedutil.rate_limit_upp_us: unknown key; expected one "
                "of headroom, rate_limit_up_us, rate_limit_down_us, floor, "
                "boost, burst_us, min_step_percent",
            "error: " + m +
                ":7:1: bogus: unknown key; expected one of policy, schedutil, "
                "sampling, clients, users, permissions, backend, overrides, "
                "metrics, sanity, autonomous, tick",
            "error: " + m +
                ":13:11: overrides[3].cpus: malformed CPU list '4-x': 'x' is "
                "not a CPU number",
            "error: " + m +
                ":14:5: overrides[4]: sets both 'cpus' and 'domain'; an "
                "override selects by one of them",
            "error: " + m +
                ":16:5: overrides[5]: selects no CPUs; set 'cpus' or 'domain'",
            "error: " + m +
                ":16:13: overrides[5].policy: expected one of schedutil, "
                "performance, powersave, autonomous, got 'fast'",
            "error: " + d +
                ":2:16: clients.max_handles: '0' is out of range: expected a "
                "whole number from 1 to 4096",
            AllOf(HasSubstr("error: " + d + ":4:10: permissions.group: "),
                  HasSubstr("'9wheel' is not a group name")),
            HasSubstr("error: " + b + ":2:1: YAML syntax error: "),
            AllOf(HasSubstr("warning: '" + dir + "/.10-site.yaml.swp': "),
                  HasSubstr("not read")),
            HasSubstr("warning: '" + dir + "/10-site.yaml.dpkg-old': not read"),
            HasSubstr("warning: '" + dir + "/10-site.yaml~': not read"),
            HasSubstr("warning: '" + dir + "/60-site.yml': not read"),
            HasSubstr("warning: '" + dir + "/old': a directory, not read"),
            "warning: " + m +
                ":11: overrides: CPUs 100-200 do not exist (this machine has "
                "CPUs 0-63): the override changes nothing",
            AllOf(HasSubstr("warning: " + m +
                            ":12: overrides: domain 999 does not exist"),
                  HasSubstr("the kernel backend knows none")),
            "3 files read: 10 errors, 7 warnings"));
}

TEST(CheckConfigTest, WarningsAloneAreSuccess)
{
    const TempTree tree;
    sixtyFourCpus(tree);
    (void)tree.write("policy.yaml", "overrides:\n"
                                    "  - cpus: 60-70\n"
                                    "    policy: powersave\n");
    (void)tree.write("policy.d/60-site.yml", "");
    const Checked c = check(tree);
    EXPECT_EQ(c.status, 0);
    EXPECT_THAT(c.lines,
                ElementsAre(HasSubstr("60-site.yml': not read"),
                            HasSubstr(":2: overrides: CPUs 64-70 do not exist "
                                      "(this machine has CPUs 0-63), ignoring "
                                      "them"),
                            "1 file read: 0 errors, 2 warnings"));
}

TEST(CheckConfigTest, AValidConfigSaysSo)
{
    const TempTree tree;
    sixtyFourCpus(tree);
    (void)tree.write("policy.yaml", "policy: performance\n"
                                    "overrides:\n"
                                    "  - cpus: 0-63\n");
    (void)tree.write("policy.d/10-site.yaml", "policy: powersave\n");
    const Checked c = check(tree);
    EXPECT_EQ(c.status, 0);
    EXPECT_THAT(c.lines, ElementsAre("2 files read: 0 errors, 0 warnings"));
}

TEST(CheckConfigTest, AutoWithoutCppcWarnsThatTheDaemonWillNotStart)
{
    const TempTree tree;
    (void)tree.write("policy.yaml", "");
    const Checked c = check(tree);
    EXPECT_EQ(c.status, 0);
    EXPECT_THAT(c.lines,
                ElementsAre(AllOf(HasSubstr("warning: backend auto "
                                            "found no CPPC"),
                                  HasSubstr("set backend: simulator to run "
                                            "the simulator on purpose"),
                                  HasSubstr("cppcgovd will not start")),
                            "1 file read: 0 errors, 1 warning"));
}

TEST(CheckConfigTest, UnreadableCpusAreANoteNotAnError)
{
    const TempTree tree;
    (void)tree.write("policy.yaml", "backend:\n  type: registers\n"
                                    "overrides:\n  - cpus: 100\n");
    const Checked c = check(tree);
    EXPECT_EQ(c.status, 0);
    EXPECT_THAT(c.lines,
                ElementsAre(HasSubstr("note: cannot tell this machine's CPUs"),
                            HasSubstr("note: overrides by domain are not "
                                      "checked"),
                            "1 file read: 0 errors, 0 warnings"));
}

TEST(CheckConfigTest, MissingMainFileIsAnError)
{
    const TempTree tree;
    std::ostringstream out;
    EXPECT_EQ(checkConfig(tree.path() / "none.yaml", tree.path() / "policy.d",
                          tree.path(), out),
              1);
    EXPECT_THAT(out.str(),
                HasSubstr("error: " + (tree.path() / "none.yaml").string() +
                          ": cannot open: "));
}

TEST(OverrideWarningsTest, FromTheSimulatedMachine)
{
    const TempTree tree;
    SimulatorConfig sim;
    sim.layout = "rd-n2";
    sim.cpus = 8;
    const SimulatorMachine machine(sim, tree.path());
    const MachineFacts facts = factsOf(machine);
    EXPECT_EQ(facts.cpus, 8U);
    GovernorConfig config;
    config.overrides.push_back({CpuSet().set(8), {}, {}, {}, "f.yaml:3"});
    config.overrides.push_back({CpuSet().set(7), {}, {}, {}, "f.yaml:5"});
    std::vector<std::string> warnings = overrideWarnings(config, facts);
    EXPECT_THAT(warnings, ElementsAre("f.yaml:3: overrides: CPU 8 does not "
                                      "exist (this machine has CPUs 0-7): the "
                                      "override changes nothing"));
    ASSERT_TRUE(facts.domains.has_value());
    ASSERT_FALSE(facts.domains->empty());
    const std::uint32_t absent = *facts.domains->rbegin() + 1;
    config.overrides = {{PsdDomain{absent}, {}, {}, {}, "f.yaml:9"},
                        {PsdDomain{*facts.domains->begin()}, {}, {}, {}, "x"}};
    EXPECT_THAT(
        overrideWarnings(config, facts),
        ElementsAre(AllOf(HasSubstr("f.yaml:9: overrides: domain " +
                                    std::to_string(absent) + " does not exist"),
                          HasSubstr("this machine's domains are "))));
    config.overrides.clear();
    EXPECT_THAT(overrideWarnings(config, facts), IsEmpty());
}

TEST(RestartNoteTest, NamesWhatIsReadAtStartOnly)
{
    const GovernorConfig running;
    GovernorConfig files;
    files.defaults.kind = policies::PolicyKind::performance;
    files.samplingPeriodUs = 2000;
    EXPECT_EQ(restartNote(running, files), "");
    files.backend.simulator.cpus = 8;
    EXPECT_EQ(restartNote(running, files),
              "backend changes need a restart (systemctl restart cppcgovd)");
    files.samplingSource = SamplingSource::procfs;
    EXPECT_EQ(restartNote(running, files),
              "backend and sampling.source changes need a restart (systemctl "
              "restart cppcgovd)");
    files.tick.fifoPriority = 3;
    EXPECT_EQ(restartNote(running, files),
              "backend, sampling.source and tick changes need a restart "
              "(systemctl restart cppcgovd)");
    files.backend = running.backend;
    files.tick = running.tick;
    EXPECT_EQ(restartNote(running, files),
              "sampling.source changes need a restart (systemctl restart "
              "cppcgovd)");
    files.samplingSource = running.samplingSource;
    files.tick.scheduling = TickScheduling::other;
    EXPECT_EQ(restartNote(running, files),
              "tick changes need a restart (systemctl restart cppcgovd)");
}

} // namespace
} // namespace cppcgov::daemon
