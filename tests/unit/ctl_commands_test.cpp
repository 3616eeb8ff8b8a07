// SPDX-License-Identifier: Apache-2.0
// cppcgovctl's command-line hygiene without a bus: the usage error's two
// lines, the offline commands' parsing (check-config, sim-demo,
// sim-layouts), status --handle, headroom's options and output, a CPU set
// the machine lacks, and the
// sentences D-Bus failures become, the permission one from the daemon's
// own message.
#include "daemon/service_errors.hpp"
#include "lib/sim/layouts.hpp"
#include "tests/unit/usage_error_support.hpp"
#include "tools/args.hpp"
#include "tools/bus_errors.hpp"
#include "tools/check_config_command.hpp"
#include "tools/headroom_command.hpp"
#include "tools/sim_commands.hpp"
#include "tools/status_command.hpp"

#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::tools
{
namespace
{

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using test::Args;
using test::usageError;

TEST(UsageErrorTest, OneLineAndAPointerToTheCommandsHelp)
{
    std::ostringstream err;
    EXPECT_EQ(reportUsageError("hint", UsageError("--min needs a value"), err),
              2);
    EXPECT_EQ(err.str(), "cppcgovctl: --min needs a value\n"
                         "Try 'cppcgovctl hint --help'.\n");
    std::ostringstream global;
    EXPECT_EQ(reportUsageError("", "no command given", global), 2);
    EXPECT_EQ(global.str(), "cppcgovctl: no command given\n"
                            "Try 'cppcgovctl --help'.\n");
}

TEST(UsageErrorTest, EveryCommandsErrorIsTwoLinesAndHelpIsItsUsage)
{
    const std::vector<std::pair<std::string_view, std::string_view>> usages{
        {"check-config", checkConfigUsage}, {"sim-demo", simDemoUsage}};
    for (const auto& [name, usage] : usages)
    {
        std::ostringstream out;
        std::ostringstream err;
        const Args bad{"--no-such-option"};
        const Args help{"--help"};
        const int status = name == "sim-demo" ? runSimDemoCommand(bad, out, err)
                                              : runCheckConfig(bad, out, err);
        EXPECT_EQ(status, 2) << name;
        EXPECT_EQ(out.str(), "") << name;
        EXPECT_EQ(err.str(), "cppcgovctl: unknown option '--no-such-option'\n"
                             "Try 'cppcgovctl " +
                                 std::string(name) + " --help'.\n")
            << name;
        std::ostringstream helpOut;
        std::ostringstream helpErr;
        EXPECT_EQ(name == "sim-demo" ? runSimDemoCommand(help, helpOut, helpErr)
                                     : runCheckConfig(help, helpOut, helpErr),
                  0);
        EXPECT_EQ(helpOut.str(), usage);
        EXPECT_EQ(helpErr.str(), "");
    }
}

TEST(CheckConfigArgsTest, PassesTheOptionsOnInOneForm)
{
    const CheckConfigOptions o = parseCheckConfigArgs(
        Args{"--config", "/a.yaml", "--root=/r", "--config-dir=/d"});
    EXPECT_THAT(o.passed, ElementsAre("--config", "/a.yaml", "--root", "/r",
                                      "--config-dir", "/d"));
    EXPECT_TRUE(parseCheckConfigArgs(Args{"-h"}).help);
    EXPECT_TRUE(parseCheckConfigArgs(Args{}).passed.empty());
}

TEST(CheckConfigArgsTest, UsageErrors)
{
    const auto parse = parseCheckConfigArgs;
    EXPECT_EQ(usageError(parse, {"--config"}), "--config needs a value");
    EXPECT_EQ(usageError(parse, {"--config="}),
              "--config needs a non-empty value");
    EXPECT_EQ(usageError(parse, {"--root", "/a", "--root", "/b"}),
              "--root is given twice");
    EXPECT_EQ(usageError(parse, {"policy.yaml"}),
              "unexpected argument 'policy.yaml'");
    EXPECT_EQ(usageError(parse, {"--no-such-option"}),
              "unknown option '--no-such-option'");
}

TEST(CheckConfigArgsTest, CppcgovdFromTheEnvironmentWhenSet)
{
    ::setenv("CPPCGOVD", "/opt/test/cppcgovd", 1);
    EXPECT_EQ(cppcgovdPath(), "/opt/test/cppcgovd");
    ::setenv("CPPCGOVD", "", 1);
    EXPECT_THAT(cppcgovdPath(), Not(""));
    EXPECT_THAT(cppcgovdPath(), ::testing::EndsWith("/cppcgovd"));
    ::unsetenv("CPPCGOVD");
    EXPECT_THAT(cppcgovdPath(), ::testing::EndsWith("/cppcgovd"));
}

TEST(CheckConfigArgsTest, AMissingCppcgovdIsSaidAndExits127)
{
    ::setenv("CPPCGOVD", "/nonexistent/cppcgovd", 1);
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(runCheckConfig(Args{}, out, err), 127);
    ::unsetenv("CPPCGOVD");
    EXPECT_THAT(err.str(), HasSubstr("cannot run /nonexistent/cppcgovd: No "
                                     "such file or directory"));
}

TEST(SimDemoArgsTest, LayoutsByNameOrAll)
{
    const std::vector<std::string_view> all = cppc::sim::layoutNames();
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(parseSimDemoArgs(Args{}).layouts, all);
    EXPECT_THAT(parseSimDemoArgs(Args{all.back(), "--", all.front()}).layouts,
                ElementsAre(all.back(), all.front()));
    EXPECT_TRUE(parseSimDemoArgs(Args{"--help"}).help);
    EXPECT_EQ(usageError(parseSimDemoArgs, {"no-such-layout"}),
              "unknown layout 'no-such-layout' (`cppcgovctl sim-layouts` "
              "lists them)");
    EXPECT_EQ(usageError(parseSimDemoArgs, {"--", "--help"}),
              "unknown layout '--help' (`cppcgovctl sim-layouts` lists them)");
}

TEST(SimLayoutsTest, ListsEveryLayoutAndTakesOnlyHelp)
{
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(runSimLayouts(Args{}, out, err), 0);
    std::string expected;
    for (const std::string_view name : cppc::sim::layoutNames())
    {
        expected += std::string(name) + "\t" +
                    cppc::sim::makeLayout(name).summary + "\n";
    }
    EXPECT_EQ(out.str(), expected);

    std::ostringstream help;
    EXPECT_EQ(runSimLayouts(Args{"--help"}, help, err), 0);
    EXPECT_EQ(help.str(), simLayoutsUsage);
    std::ostringstream bad;
    EXPECT_EQ(runSimLayouts(Args{"x"}, help, bad), 2);
    EXPECT_EQ(bad.str(), "cppcgovctl: unexpected argument 'x'\n"
                         "Try 'cppcgovctl sim-layouts --help'.\n");
}

TEST(MissingCpusTest, NamesTheCpusAndTheMachines)
{
    EXPECT_EQ(missingCpus(std::vector<std::uint32_t>{0, 63}, 64), std::nullopt);
    EXPECT_EQ(missingCpus(std::vector<std::uint32_t>{0, 64}, 64),
              "CPU 64 does not exist (this machine has CPUs 0-63)");
    std::vector<std::uint32_t> many;
    for (std::uint32_t cpu = 0; cpu < 100; ++cpu)
    {
        many.push_back(cpu);
    }
    EXPECT_EQ(missingCpus(many, 64),
              "CPUs 64-99 do not exist (this machine has CPUs 0-63)");
    EXPECT_EQ(missingCpus(std::vector<std::uint32_t>{1, 5, 7, 7}, 4),
              "CPUs 5,7 do not exist (this machine has CPUs 0-3)");
    EXPECT_EQ(missingCpus(std::vector<std::uint32_t>{1}, 1),
              "CPU 1 does not exist (this machine has CPU 0)");
}

const BusOptions systemBus{};
const BusOptions privateBus{std::string("unix:path=/run/test-bus")};

TEST(BusErrorTest, NoDaemon)
{
    const std::string sentence =
        "cppcgovd is not running: nothing owns org.cppcgov.Governor1 on the "
        "system bus (start it with `systemctl start cppcgovd`)";
    EXPECT_EQ(describeBusError("org.freedesktop.DBus.Error.ServiceUnknown",
                               "The name org.cppcgov.Governor1 was not "
                               "provided by any .service files",
                               systemBus, "x"),
              sentence);
    EXPECT_EQ(describeBusError("org.freedesktop.DBus.Error.NameHasNoOwner",
                               "Could not get owner of name", systemBus, "x"),
              sentence);
    // The text alone, under another name.
    EXPECT_EQ(describeBusError("org.freedesktop.DBus.Error.Other",
                               "The name org.cppcgov.Governor1 was not "
                               "provided by any .service files",
                               systemBus, "x"),
              sentence);
    EXPECT_EQ(describeBusError("org.freedesktop.DBus.Error.ServiceUnknown", "",
                               privateBus, "x"),
              "cppcgovd is not running: nothing owns org.cppcgov.Governor1 on "
              "the bus at unix:path=/run/test-bus");
}

TEST(BusErrorTest, PermissionNamesTheGroupAndHowToJoin)
{
    EXPECT_EQ(groupInMessage("a latency request needs root or membership of "
                             "group 'cppcgov' (permissions.group)"),
              "cppcgov");
    EXPECT_EQ(groupInMessage("no group here"), std::nullopt);
    EXPECT_EQ(groupInMessage("group ''"), std::nullopt);

    EXPECT_EQ(describeBusError("org.cppcgov.Error.NotPermitted",
                               "a latency request needs root or membership of "
                               "group 'power' (permissions.group)",
                               systemBus, "set resume-latency limits"),
              "only members of group 'power' (and root) may set "
              "resume-latency limits; join it with `usermod -aG power USER` "
              "and log in again");
    const std::string missing = describeBusError(
        "org.cppcgov.Error.NotPermitted",
        "reloading the policy needs root or membership of group 'power' "
        "(permissions.group, which does not exist)",
        systemBus, "reload the policy");
    EXPECT_THAT(missing,
                ::testing::StartsWith("only root may reload the policy: the "
                                      "group 'power' (permissions.group) does "
                                      "not exist on this machine"));
    EXPECT_THAT(describeBusError("org.cppcgov.Error.NotPermitted", "needs root",
                                 systemBus, "reload the policy"),
                HasSubstr("permissions.group may reload the policy"));
}

TEST(BusErrorTest, TheGroupComesFromTheDaemonsOwnMessage)
{
    EXPECT_EQ(groupInMessage(daemon::needsPrivilege("a latency request",
                                                    "power-users", true)),
              "power-users");
    EXPECT_THAT(
        describeBusError(
            "org.cppcgov.Error.NotPermitted",
            "process 42 belongs to another user; " +
                daemon::needsPrivilege("clamping it", "cppcgov", true),
            systemBus, "clamp other users' tasks"),
        HasSubstr("only members of group 'cppcgov' (and root) may clamp "
                  "other users' tasks; join it with `usermod -aG cppcgov "
                  "USER`"));
    EXPECT_THAT(describeBusError("org.cppcgov.Error.NotPermitted",
                                 daemon::needsPrivilege("reloading the policy",
                                                        "ghost", false),
                                 systemBus, "reload the policy"),
                ::testing::StartsWith("only root may reload the policy: the "
                                      "group 'ghost' (permissions.group) does "
                                      "not exist"));
}

TEST(BusErrorTest, TimeoutsAndADaemonGoneMidCall)
{
    EXPECT_THAT(describeBusError("org.freedesktop.DBus.Error.NoReply",
                                 "Method call timed out", systemBus, "x"),
                ::testing::StartsWith("cppcgovd did not answer in time"));
    EXPECT_THAT(describeBusError("org.freedesktop.DBus.Error.Timeout",
                                 "Connection timed out", systemBus, "x"),
                ::testing::StartsWith("cppcgovd did not answer in time"));
    EXPECT_THAT(describeBusError("org.freedesktop.DBus.Error.NoReply",
                                 "Message recipient disconnected from message "
                                 "bus without replying",
                                 systemBus, "x"),
                ::testing::StartsWith("cppcgovd went away before it answered"));
    EXPECT_EQ(describeBusError("org.freedesktop.DBus.Error.Disconnected",
                               "Connection reset by peer", privateBus, "x"),
              "the connection to the bus at unix:path=/run/test-bus broke "
              "before cppcgovd answered");
}

TEST(BusErrorTest, OtherErrorsKeepTheirWords)
{
    EXPECT_EQ(describeBusError("org.cppcgov.Error.InvalidConfig",
                               "'/etc/cppcgov/policy.yaml':1:9: policy: bad",
                               systemBus, "x"),
              "'/etc/cppcgov/policy.yaml':1:9: policy: bad "
              "(org.cppcgov.Error.InvalidConfig)");
    EXPECT_EQ(describeBusError("org.example.Error", "what", systemBus, "x"),
              "org.example.Error: what");
    EXPECT_THAT(describeBusError("org.sdbuscpp.Error",
                                 "Failed to open bus (No such file or "
                                 "directory)",
                                 systemBus, "x"),
                ::testing::StartsWith("cannot connect to the system bus"));
    EXPECT_THAT(describeBusError("org.freedesktop.DBus.Error.AccessDenied",
                                 "Rejected send message", systemBus, "x"),
                ::testing::StartsWith("the policy of the system bus does not "
                                      "let this user call"));
}

GovernorSnapshot twoHandles()
{
    GovernorSnapshot s;
    CpuState c0;
    c0.cpu = 0;
    c0.handles = {{3, ":1.42", 1234, 600, 1024}};
    CpuState c1;
    c1.cpu = 1;
    CpuState c2;
    c2.cpu = 2;
    c2.handles = {{3, ":1.42", 1234, 600, 1024}};
    s.cpus = {c0, c1, c2};
    s.handles = {{3, "clamp", ":1.42", 1234, 600, 1024, 0},
                 {5, "latency", ":1.43", 0, 0, 0, 50}};
    return s;
}

TEST(StatusHandleTest, ParsesTheHandle)
{
    EXPECT_EQ(parseStatusArgs(Args{"--handle", "7"}).handle, 7U);
    EXPECT_EQ(parseStatusArgs(Args{"--handle=9", "--json"}).handle, 9U);
    EXPECT_EQ(parseStatusArgs(Args{}).handle, std::nullopt);
    EXPECT_EQ(usageError(parseStatusArgs, {"--handle"}),
              "--handle needs a value");
    EXPECT_EQ(usageError(parseStatusArgs, {"--handle", "x"}),
              "--handle: 'x' is not a number from 1 to 18446744073709551615");
}

TEST(StatusHandleTest, OneHandleWithItsCpus)
{
    const GovernorSnapshot s = twoHandles();
    const auto clamp = findHandle(s, 3);
    ASSERT_TRUE(clamp);
    EXPECT_THAT(clamp->activeCpus, ElementsAre(0U, 2U));
    std::ostringstream text;
    printHandleText(*clamp, text);
    EXPECT_EQ(text.str(),
              "handle    3\n"
              "kind      clamp\n"
              "owner     :1.42\n"
              "task      1234\n"
              "clamp     600..1024\n"
              "latency   -\n"
              "cpus      0,2\n");
    std::ostringstream json;
    printHandleJson(*findHandle(s, 5), json);
    EXPECT_EQ(json.str(),
              "{\n"
              "  \"format\": \"cppcgov-handle\",\n"
              "  \"version\": 1,\n"
              "  \"handle\": 5,\n"
              "  \"kind\": \"latency\",\n"
              "  \"owner\": \":1.43\",\n"
              "  \"task\": 0,\n"
              "  \"utilMin\": 0,\n"
              "  \"utilMax\": 0,\n"
              "  \"latencyUs\": 50,\n"
              "  \"activeCpus\": []\n"
              "}\n");

    EXPECT_EQ(findHandle(s, 4), std::nullopt);
    EXPECT_EQ(noSuchHandle(s, 4),
              "no live handle 4 (the live handles are 3, 5)");
    EXPECT_EQ(noSuchHandle(GovernorSnapshot{}, 4),
              "no live handle 4 (there are none)");
}

TEST(HeadroomArgsTest, DefaultsCpuListPidAndCalculation)
{
    const HeadroomOptions d = parseHeadroomArgs(Args{});
    EXPECT_EQ(d.windowMs, 1000U);
    EXPECT_EQ(d.calculation, "average");
    EXPECT_FALSE(d.cpus);
    EXPECT_FALSE(d.pid);
    const HeadroomOptions o =
        parseHeadroomArgs(Args{"--window", "250", "--min", "--json", "0-2,5"});
    EXPECT_EQ(o.windowMs, 250U);
    EXPECT_EQ(o.calculation, "min");
    EXPECT_TRUE(o.json);
    ASSERT_TRUE(o.cpus);
    EXPECT_THAT(*o.cpus, ElementsAre(0U, 1U, 2U, 5U));
    const HeadroomOptions p = parseHeadroomArgs(Args{"--pid=42", "--average"});
    EXPECT_EQ(p.pid, 42U);
    EXPECT_EQ(p.calculation, "average");
    EXPECT_TRUE(parseHeadroomArgs(Args{"--help"}).help);
}

TEST(HeadroomArgsTest, UsageErrors)
{
    EXPECT_EQ(usageError(parseHeadroomArgs, Args{"--window", "49"}),
              "--window: '49' is not a number from 50 to 10000");
    EXPECT_EQ(usageError(parseHeadroomArgs, Args{"--window", "10001"}),
              "--window: '10001' is not a number from 50 to 10000");
    EXPECT_EQ(usageError(parseHeadroomArgs, Args{"--min", "--average"}),
              "give one of --min and --average");
    EXPECT_EQ(usageError(parseHeadroomArgs, Args{"0", "--pid", "1"}),
              "give a CPU list or --pid, not both");
    EXPECT_EQ(usageError(parseHeadroomArgs, Args{"0", "1"}),
              "give one CPU list");
    EXPECT_EQ(usageError(parseHeadroomArgs, Args{"--max"}),
              "unknown option '--max'");
    EXPECT_THAT(usageError(parseHeadroomArgs, Args{"3-1"}),
                HasSubstr("malformed CPU list '3-1'"));
}

TEST(HeadroomOutputTest, TextSaysTheWindowWhatItCoversAndEachCpu)
{
    HeadroomOptions o = parseHeadroomArgs(Args{"--window", "2000", "0-1,4"});
    const HeadroomAnswer a{60.25, {{0, 100.0}, {1, 21.3}, {4, 59.45}}, 1500};
    std::ostringstream out;
    printHeadroom(o, a, out);
    EXPECT_EQ(out.str(),
              "headroom 60.2% (average over 2000 ms; the daemon's "
              "history covers 1500 ms) of CPUs 0-1,4\n"
              "cpu   headroom\n"
              "0     100.0%\n"
              "1      21.3%\n"
              "4      59.5%\n");
    o.json = true;
    o.pid = 7;
    std::ostringstream json;
    printHeadroom(o, a, json);
    EXPECT_THAT(json.str(), HasSubstr("\"calculation\": \"average\""));
    EXPECT_THAT(json.str(), HasSubstr("\"covered_ms\": 1500"));
    EXPECT_THAT(json.str(), HasSubstr("\"pid\": 7"));
    EXPECT_THAT(json.str(), HasSubstr("\"headroom\": 60.25"));
    EXPECT_THAT(json.str(), HasSubstr("{\"cpu\":1,\"headroom\":21.30}"));
}

} // namespace
} // namespace cppcgov::tools
