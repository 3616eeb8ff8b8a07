// SPDX-License-Identifier: Apache-2.0
// cppcgovctl's parts that need no bus: numbers and cpulists, each D-Bus
// command's argument parsing, and the text and JSON it prints for a given
// daemon state.
#include "tests/unit/usage_error_support.hpp"
#include "tools/args.hpp"
#include "tools/hint_command.hpp"
#include "tools/latency_command.hpp"
#include "tools/metrics_command.hpp"
#include "tools/monitor_command.hpp"
#include "tools/monitor_events.hpp"
#include "tools/reload_command.hpp"
#include "tools/status_command.hpp"
#include "tools/text_table.hpp"

#include <chrono>
#include <cstdint>
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

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using test::Args;
using test::usageError;

TEST(ParseUnsignedTest, AcceptsPlainDecimalsUpToTheLimit)
{
    EXPECT_EQ(parseUnsigned("0", 10), 0U);
    EXPECT_EQ(parseUnsigned("1024", 1024), 1024U);
    EXPECT_EQ(parseUnsigned("18446744073709551615", UINT64_MAX), UINT64_MAX);
}

TEST(ParseUnsignedTest, RefusesEverythingElse)
{
    for (const std::string_view bad : {"", "-1", "+1", " 1", "1 ", "1x", "0x10",
                                       "1025", "18446744073709551616"})
    {
        EXPECT_EQ(parseUnsigned(bad, 1024), std::nullopt) << "'" << bad << "'";
    }
}

TEST(OptionNumberTest, NamesTheOptionAndTheRange)
{
    EXPECT_EQ(optionNumber("--min", "7", 0, 1024), 7U);
    try
    {
        (void)optionNumber("--min", "2000", 0, 1024);
        FAIL() << "accepted";
    }
    catch (const UsageError& e)
    {
        EXPECT_STREQ(e.what(), "--min: '2000' is not a number from 0 to 1024");
    }
    EXPECT_THROW((void)optionNumber("--pid", "0", 1, 10), UsageError);
}

TEST(OptionValueTest, TakesSeparateAndJoinedValues)
{
    const Args args{"--min", "5", "--max=7", "--minimal", "--max"};
    std::size_t i = 0;
    EXPECT_EQ(optionValue(args, i, "--min"), "5");
    EXPECT_EQ(i, 1U);
    i = 2;
    EXPECT_EQ(optionValue(args, i, "--max"), "7");
    EXPECT_EQ(i, 2U);
    i = 3;
    EXPECT_EQ(optionValue(args, i, "--min"), std::nullopt);
    EXPECT_EQ(i, 3U);
    i = 4;
    EXPECT_THROW((void)optionValue(args, i, "--max"), UsageError);
}

// The lists themselves are lib/cpu_list's (tests/unit/cpu_list_test.cpp);
// here, what the command line makes of them.
TEST(CpuListTest, ParsesNumbersAndRangesSortedOnce)
{
    EXPECT_THAT(parseCpuList("0"), ElementsAre(0U));
    EXPECT_THAT(parseCpuList("0-3,8"), ElementsAre(0U, 1U, 2U, 3U, 8U));
    EXPECT_THAT(parseCpuList("9,2-3,3,1"), ElementsAre(1U, 2U, 3U, 9U));
    EXPECT_THAT(parseCpuList("5-5"), ElementsAre(5U));
    EXPECT_EQ(parseCpuList("0-4095").size(), 4096U);
}

TEST(CpuListTest, IsAUsageErrorNamingWhatIsWrong)
{
    const auto problem = [](std::string_view list) {
        try
        {
            (void)parseCpuList(list);
        }
        catch (const UsageError& e)
        {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    EXPECT_EQ(problem(""), "malformed CPU list '': the list is empty");
    EXPECT_EQ(problem("0,,1"), "malformed CPU list '0,,1': an empty item");
    EXPECT_EQ(problem("3-1"), "malformed CPU list '3-1': the range '3-1' "
                              "ends before it starts");
    EXPECT_EQ(problem("x"), "malformed CPU list 'x': 'x' is not a CPU number");
    EXPECT_EQ(problem("0-4096"), "malformed CPU list '0-4096': CPU 4096 is "
                                 "above 4095, the highest supported");
}

TEST(HintArgsTest, PidForm)
{
    const HintOptions o = parseHintArgs(
        Args{"--min", "100", "--max=800", "--pid", "42", "--thread"});
    EXPECT_EQ(o.utilMin, 100);
    EXPECT_EQ(o.utilMax, 800);
    EXPECT_EQ(o.pid, 42U);
    EXPECT_TRUE(o.thread);
    EXPECT_TRUE(o.command.empty());
    EXPECT_FALSE(o.bus.address);
}

TEST(HintArgsTest, CommandFormKeepsTheCommandsOwnOptions)
{
    HintOptions o =
        parseHintArgs(Args{"--max", "300", "--", "ls", "-l", "--min", "5"});
    EXPECT_EQ(o.utilMin, 0);
    EXPECT_EQ(o.utilMax, 300);
    EXPECT_FALSE(o.pid);
    EXPECT_THAT(o.command, ElementsAre("ls", "-l", "--min", "5"));

    o = parseHintArgs(
        Args{"--min", "5", "--bus-address", "unix:path=/b", "make", "-j2"});
    EXPECT_EQ(o.utilMax, 1024);
    EXPECT_EQ(o.bus.address, "unix:path=/b");
    EXPECT_THAT(o.command, ElementsAre("make", "-j2"));
}

TEST(HintArgsTest, Help)
{
    EXPECT_TRUE(parseHintArgs(Args{"--help"}).help);
    EXPECT_TRUE(parseHintArgs(Args{"--min", "1", "-h"}).help);
}

TEST(HintArgsTest, UsageErrors)
{
    const auto parse = [](const Args& a) { return parseHintArgs(a); };
    EXPECT_EQ(usageError(parse, {"--pid", "1"}), "give --min, --max or both");
    EXPECT_EQ(usageError(parse, {"--min", "600", "--max", "500", "--pid", "1"}),
              "--min 600 is above --max 500");
    EXPECT_EQ(usageError(parse, {"--min", "1"}),
              "give either --pid or a command");
    EXPECT_EQ(usageError(parse, {"--min", "1", "--pid", "2", "true"}),
              "give either --pid or a command");
    EXPECT_EQ(usageError(parse, {"--min", "1", "--thread", "true"}),
              "--thread needs --pid");
    EXPECT_EQ(usageError(parse, {"--min", "1", "--"}),
              "'--' needs a command after it");
    EXPECT_EQ(usageError(parse, {"--min", "1025", "true"}),
              "--min: '1025' is not a number from 0 to 1024");
    EXPECT_EQ(usageError(parse, {"--min", "1", "--pid", "0"}),
              "--pid: '0' is not a number from 1 to 2147483647");
    EXPECT_EQ(usageError(parse, {"--min", "1", "--pid"}),
              "--pid needs a value");
    EXPECT_EQ(usageError(parse, {"--min", "1", "--frobnicate", "true"}),
              "unknown option '--frobnicate'");
    EXPECT_EQ(usageError(parse, {"--bus-address=", "--min", "1", "true"}),
              "--bus-address needs an address");
}

TEST(LatencyArgsTest, EachTarget)
{
    LatencyOptions o = parseLatencyArgs(Args{"--us", "50", "--cpus", "0-2,5"});
    EXPECT_EQ(o.latencyUs, 50U);
    ASSERT_TRUE(o.cpus);
    EXPECT_THAT(*o.cpus, ElementsAre(0U, 1U, 2U, 5U));

    o = parseLatencyArgs(Args{"--pid=7", "--us=0"});
    EXPECT_EQ(o.latencyUs, 0U);
    EXPECT_EQ(o.pid, 7U);

    o = parseLatencyArgs(Args{"--us", "20", "--", "./rt", "--us", "1"});
    EXPECT_THAT(o.command, ElementsAre("./rt", "--us", "1"));
    EXPECT_FALSE(o.pid);
    EXPECT_FALSE(o.cpus);
}

TEST(LatencyArgsTest, UsageErrors)
{
    const auto parse = [](const Args& a) { return parseLatencyArgs(a); };
    EXPECT_EQ(usageError(parse, {"--cpus", "0"}), "--us is required");
    EXPECT_EQ(usageError(parse, {"--us", "5"}),
              "give one of --pid, --cpus and a command");
    EXPECT_EQ(usageError(parse, {"--us", "5", "--cpus", "0", "--pid", "3"}),
              "give one of --pid, --cpus and a command");
    EXPECT_EQ(usageError(parse, {"--us", "5", "--cpus", "2-1"}),
              "malformed CPU list '2-1': the range '2-1' ends before it "
              "starts");
    EXPECT_EQ(usageError(parse, {"--us", "-5", "--cpus", "0"}),
              "--us: '-5' is not a number from 0 to 4294967295");
}

TEST(OtherArgsTest, StatusReloadMonitor)
{
    const StatusOptions s =
        parseStatusArgs(Args{"--json", "--bus-address", "unix:path=/x"});
    EXPECT_TRUE(s.json);
    EXPECT_EQ(s.bus.address, "unix:path=/x");
    EXPECT_THROW((void)parseStatusArgs(Args{"--jsn"}), UsageError);

    EXPECT_TRUE(parseReloadArgs(Args{"--help"}).help);
    EXPECT_THROW((void)parseReloadArgs(Args{"now"}), UsageError);

    const MetricsOptions metrics =
        parseMetricsArgs(Args{"--bus-address=unix:path=/y"});
    EXPECT_FALSE(metrics.help);
    EXPECT_EQ(metrics.bus.address, "unix:path=/y");
    EXPECT_TRUE(parseMetricsArgs(Args{"-h"}).help);
    EXPECT_THROW((void)parseMetricsArgs(Args{"--json"}), UsageError);

    MonitorOptions m = parseMonitorArgs(Args{});
    EXPECT_EQ(m.intervalMs, 1000U);
    EXPECT_FALSE(m.count);
    m = parseMonitorArgs(Args{"--interval=250", "--count", "3"});
    EXPECT_EQ(m.intervalMs, 250U);
    EXPECT_EQ(m.count, 3U);
    EXPECT_THROW((void)parseMonitorArgs(Args{"--interval", "0"}), UsageError);
    EXPECT_THROW((void)parseMonitorArgs(Args{"--count", "0"}), UsageError);
    EXPECT_FALSE(m.json);
    EXPECT_TRUE(m.cpus.empty());
    m = parseMonitorArgs(Args{"--json", "--cpus", "8,0-2"});
    EXPECT_TRUE(m.json);
    EXPECT_THAT(m.cpus, ElementsAre(0, 1, 2, 8));
    EXPECT_EQ(usageError(parseMonitorArgs, Args{"--cpus", "3-1"}),
              "malformed CPU list '3-1': the range '3-1' ends before it "
              "starts");
}

TEST(TextTableTest, AlignsColumnsWithoutTrailingBlanks)
{
    TextTable t({{"N", TextTable::Align::right},
                 {"NAME", TextTable::Align::left},
                 {"X", TextTable::Align::left}});
    t.addRow({"7", "a"});
    t.addRow({"1024", "longer name", "z", "dropped"});
    std::ostringstream out;
    t.print(out);
    EXPECT_EQ(out.str(), "   N  NAME         X\n"
                         "   7  a\n"
                         "1024  longer name  z\n");
    EXPECT_EQ(t.rows(), 2U);
}

GovernorSnapshot sampleSnapshot()
{
    GovernorSnapshot s;
    s.daemon = {
        "simulator:orion-o6",        "schedutil", 2, 4000,    "procfs",
        "sampling.source is procfs", 1,           1, "0.1.0", {"desired"}};
    CpuState c0;
    c0.cpu = 0;
    c0.util = 512;
    c0.clampMin = 600;
    c0.clampMax = 1024;
    c0.requestedPerf = 700;
    c0.deliveredPerf = 690;
    c0.reason = "clamp-min";
    c0.latencyLimitUs = 50;
    c0.handles = {{3, ":1.42", 1234, 600, 1024}};
    CpuState c1;
    c1.cpu = 1;
    c1.util = 10;
    c1.clampMax = 1024;
    c1.requestedPerf = 100;
    c1.reason = "floor";
    c1.degraded = "'/p1/scaling_setspeed': the write has not returned after "
                  "5 ms";
    s.cpus = {c0, c1};
    s.handles = {{3, "clamp", ":1.42", 1234, 600, 1024, 0},
                 {5, "latency", ":1.43", 0, 0, 0, 50}};
    // CPU 1 runs powersave by an override; its frequencies are unknown.
    s.info = {{0, 0, 0, "schedutil", 100, 200, 1000, 1200, 500'000, 2'000'000},
              {1, 1, std::nullopt, "powersave", 100, 200, 1000, 1200, 0, 0}};
    s.statistics = {{"ticks", 1000},
                    {"ticks_skipped", 3},
                    {"tick_late_p50_ns", 12'000},
                    {"writes", 40},
                    {"write_errors", 1}};
    return s;
}

TEST(StatusOutputTest, Text)
{
    std::ostringstream out;
    printStatusText(sampleSnapshot(), out);
    EXPECT_EQ(
        out.str(),
        "version   0.1.0\n"
        "backend   simulator:orion-o6\n"
        "controls  desired\n"
        "policy    schedutil (the default; CPU 1 differs: 1 powersave)\n"
        "cpus      2\n"
        "sampling  4000 us from procfs (sampling.source is procfs)\n"
        "handles   1 clamp, 1 latency\n"
        "\n"
        "ticks           1000 (3 skipped)\n"
        "tick lateness   p50 12.0 us\n"
        "writes          40 (1 error)\n"
        "\n"
        "CPU  DOMAIN  POLICY     UTIL  CLAMP      REQUESTED   MHZ  DELIVERED"
        "   MHZ  REASON     LATENCY  HANDLES\n"
        "  0       0  schedutil   512  600..1024        700  1500        690"
        "  1483  clamp-min    50 us  3\n"
        "  1       1  powersave    10  0..1024          100     -          -"
        "     -  degraded         -  -\n"
        "CPU 1 degraded: '/p1/scaling_setspeed': the write has not "
        "returned after 5 ms\n"
        "\n"
        "HANDLE  KIND     OWNER  TASK  CLAMP      LATENCY\n"
        "     3  clamp    :1.42  1234  600..1024        -\n"
        "     5  latency  :1.43     -  -            50 us\n");
}

TEST(StatusOutputTest, TheRestOfTheRequestWhereTheBackendWritesIt)
{
    GovernorSnapshot s = sampleSnapshot();
    s.daemon.controls = {"desired", "min", "max", "epp", "autonomous"};
    s.controls = {{0, 100, 1200, 90, true, std::nullopt},
                  {1, 100, 700, std::nullopt, false, 5000}};
    std::ostringstream out;
    printStatusText(s, out);
    EXPECT_THAT(out.str(),
                AllOf(HasSubstr("controls  desired, min, max, epp, "
                                "autonomous\n"),
                      HasSubstr("returned after 5 ms\n"
                                "\n"
                                "CPU  MIN   MAX  EPP  AUTONOMOUS\n"
                                "  0  100  1200   90  on\n"
                                "  1  100   700    -  off\n"
                                "\n"
                                "HANDLE")));
    // The window too, where it is written.
    s.daemon.controls.emplace_back("activity-window");
    std::ostringstream withWindow;
    printStatusText(s, withWindow);
    EXPECT_THAT(withWindow.str(),
                AllOf(HasSubstr("CPU  MIN   MAX  EPP  AUTONOMOUS   WINDOW\n"),
                      HasSubstr("  1  100   700    -  off         5000 us\n")));

    std::ostringstream json;
    printStatusJson(s, json);
    EXPECT_THAT(json.str(), AllOf(HasSubstr(R"("minPerf": 100,
      "maxPerf": 700,
      "epp": null,
      "autonomous": false,
      "activityWindowUs": 5000,)"),
                                  HasSubstr(R"("epp": 90,
      "autonomous": true,
      "activityWindowUs": null,)")));
}

TEST(StatusOutputTest, TextWithoutHandles)
{
    GovernorSnapshot s = sampleSnapshot();
    s.handles.clear();
    std::ostringstream out;
    printStatusText(s, out);
    EXPECT_THAT(out.str(), HasSubstr("\n\nno live handles\n"));
}

TEST(StatusOutputTest, Json)
{
    std::ostringstream out;
    printStatusJson(sampleSnapshot(), out);
    EXPECT_EQ(out.str(), R"({
  "format": "cppcgov-status",
  "version": 1,
  "daemon": {
    "version": "0.1.0",
    "backend": "simulator:orion-o6",
    "policy": "schedutil",
    "cpuCount": 2,
    "samplingPeriodUs": 4000,
    "samplingSource": "procfs",
    "samplingReason": "sampling.source is procfs",
    "clampCount": 1,
    "latencyCount": 1,
    "controls": [
      "desired"
    ]
  },
  "cpus": [
    {
      "cpu": 0,
      "util": 512,
      "clampMin": 600,
      "clampMax": 1024,
      "requestedPerf": 700,
      "deliveredPerf": 690,
      "reason": "clamp-min",
      "degraded": null,
      "latencyLimitUs": 50,
      "requestedKhz": 1500000,
      "deliveredKhz": 1483333,
      "domain": 0,
      "psdDomain": 0,
      "policy": "schedutil",
      "lowestPerf": 100,
      "lowestNonlinearPerf": 200,
      "nominalPerf": 1000,
      "highestPerf": 1200,
      "lowestKhz": 500000,
      "nominalKhz": 2000000,
      "minPerf": null,
      "maxPerf": null,
      "epp": null,
      "autonomous": null,
      "activityWindowUs": null,
      "handles": [
        {
          "handle": 3,
          "owner": ":1.42",
          "task": 1234,
          "utilMin": 600,
          "utilMax": 1024
        }
      ]
    },
    {
      "cpu": 1,
      "util": 10,
      "clampMin": 0,
      "clampMax": 1024,
      "requestedPerf": 100,
      "deliveredPerf": 0,
      "reason": "floor",
      "degraded": "'/p1/scaling_setspeed': the write has not returned after 5 ms",
      "latencyLimitUs": null,
      "requestedKhz": null,
      "deliveredKhz": null,
      "domain": 1,
      "psdDomain": null,
      "policy": "powersave",
      "lowestPerf": 100,
      "lowestNonlinearPerf": 200,
      "nominalPerf": 1000,
      "highestPerf": 1200,
      "lowestKhz": 0,
      "nominalKhz": 0,
      "minPerf": null,
      "maxPerf": null,
      "epp": null,
      "autonomous": null,
      "activityWindowUs": null,
      "handles": []
    }
  ],
  "handles": [
    {
      "handle": 3,
      "kind": "clamp",
      "owner": ":1.42",
      "task": 1234,
      "utilMin": 600,
      "utilMax": 1024,
      "latencyUs": 0
    },
    {
      "handle": 5,
      "kind": "latency",
      "owner": ":1.43",
      "task": 0,
      "utilMin": 0,
      "utilMax": 0,
      "latencyUs": 50
    }
  ],
  "statistics": {
    "tick_late_p50_ns": 12000,
    "ticks": 1000,
    "ticks_skipped": 3,
    "write_errors": 1,
    "writes": 40
  }
}
)");
}

TEST(MonitorOutputTest, Block)
{
    std::ostringstream out;
    printMonitorBlock(sampleSnapshot(), {}, out);
    EXPECT_EQ(out.str(),
              "cppcgovd 0.1.0  simulator:orion-o6  2 CPUs  period 4000 us  "
              "handles 1 clamp, 1 latency\n"
              "policy schedutil (the default; CPU 1 differs: 1 powersave)\n"
              "ticks 1000 (3 skipped)  late p50 12.0 us  writes 40 (1 "
              "error)\n"
              "CPU  DOM  POLICY     UTIL                          CLAMP      "
              "REQ   MHZ  DLV   MHZ  REASON     LATENCY  HANDLES\n"
              "  0    0  schedutil   512  [##########          ]  600..1024  "
              "700  1500  690  1483  clamp-min    50 us  3\n"
              "  1    1  powersave    10  [                    ]  0..1024    "
              "100     -    -     -  degraded         -  -\n"
              "CPU 1 degraded: '/p1/scaling_setspeed': the write has not "
              "returned after 5 ms\n");
    std::ostringstream one;
    const std::vector<std::uint32_t> only{0};
    printMonitorBlock(sampleSnapshot(), only, one);
    EXPECT_THAT(one.str(), HasSubstr("\n  0    0  schedutil"));
    EXPECT_THAT(one.str(), ::testing::Not(HasSubstr("powersave  ")));
    EXPECT_THAT(one.str(), ::testing::Not(HasSubstr("degraded")));
}

TEST(MonitorOutputTest, RefreshJsonIsOneLineOfTheStatusFields)
{
    std::ostringstream out;
    const std::vector<std::uint32_t> only{1};
    printRefreshJson(sampleSnapshot(), only,
                     std::chrono::system_clock::time_point{}, out);
    const std::string line = out.str();
    EXPECT_THAT(line,
                ::testing::StartsWith(
                    R"({"format":"cppcgov-monitor","version":1,)"
                    R"("type":"refresh","time":"1970-01-01T00:00:00.000Z",)"
                    R"("daemon":{"version":"0.1.0",)"));
    EXPECT_THAT(line, HasSubstr(R"("cpus":[{"cpu":1,"util":10,)"));
    EXPECT_THAT(line, ::testing::Not(HasSubstr(R"("cpu":0,)")));
    EXPECT_THAT(line, HasSubstr(R"("policy":"powersave",)"));
    EXPECT_THAT(line,
                HasSubstr(R"(],"statistics":{"tick_late_p50_ns":12000,)"));
    EXPECT_EQ(line.find('\n'), line.size() - 1);
}

} // namespace
} // namespace cppcgov::tools
