// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl monitor`'s screen on plain values: at 1, 12, 64 and 192 CPUs
// and terminals from 40x8 to 200x50 every CPU is on exactly one page, the
// header and the column names are on every page, no line is wider than the
// terminal and a page is no taller; a domain's CPUs stay on one page when
// they fit; the keys, the events and the statistics as lines.
#include "tools/cpu_rows.hpp"
#include "tools/monitor_events.hpp"
#include "tools/monitor_keys.hpp"
#include "tools/monitor_layout.hpp"
#include "tools/statistics_text.hpp"

#include <charconv>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::tools
{
namespace
{

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A daemon with `cpus` CPUs in domains of `perDomain`, each CPU clamped or
// not, with a handle on every seventh and a powersave override on CPU 2.
GovernorSnapshot machine(std::uint32_t cpus, std::uint32_t perDomain)
{
    GovernorSnapshot s;
    s.daemon = {
        "simulator:rd-n2",           "schedutil", cpus, 1000,    "procfs",
        "sampling.source is procfs", 1,           0,    "0.1.0", {"desired"}};
    s.statistics = {{"ticks", 114599},
                    {"ticks_skipped", 30805},
                    {"tick_late_p50_ns", 12000},
                    {"tick_late_p99_ns", 80000},
                    {"tick_late_max_ns", 32'100'000},
                    {"writes", 1200},
                    {"write_errors", 0}};
    for (std::uint32_t cpu = 0; cpu < cpus; ++cpu)
    {
        CpuState c;
        c.cpu = cpu;
        c.util = static_cast<std::uint16_t>((cpu * 97) % 1025);
        c.clampMax = 1024;
        c.requestedPerf = 1000 + cpu;
        c.deliveredPerf = 1000 + cpu;
        c.reason = cpu == 2 ? "fixed" : "utilization";
        if (cpu % 7 == 3)
        {
            c.handles = {{cpu + 100ULL, ":1.42", 4000 + cpu, 0, 512}};
        }
        s.cpus.push_back(c);
        CpuInfo i;
        i.cpu = cpu;
        i.domain = cpu / perDomain;
        i.psdDomain = cpu / perDomain;
        i.policy = cpu == 2 ? "powersave" : "schedutil";
        i.lowestPerf = 100;
        i.lowestNonlinearPerf = 1000;
        i.nominalPerf = 2600;
        i.highestPerf = 3000;
        i.lowestKhz = 200'000;
        i.nominalKhz = 2'600'000;
        s.info.push_back(i);
    }
    return s;
}

MonitorLayout layoutOf(const GovernorSnapshot& s, TerminalSize size,
                       std::span<const std::uint32_t> only = {})
{
    return {monitorHeader(s, size.columns), groupByDomain(cpuRows(s, only)),
            size, true, s.daemon.cpuCount};
}

// The CPU number a table row starts with, or nothing for another line.
std::optional<std::uint32_t> rowCpu(const std::string& line)
{
    std::size_t i = line.find_first_not_of(' ');
    if (i == std::string::npos)
    {
        return std::nullopt;
    }
    std::uint32_t cpu = 0;
    const auto [end, ec] =
        std::from_chars(line.data() + i, line.data() + line.size(), cpu);
    if (ec != std::errc() || (end != line.data() + line.size() && *end != ' '))
    {
        return std::nullopt;
    }
    return cpu;
}

std::vector<std::string> someEvents(std::size_t n)
{
    std::vector<std::string> events;
    for (std::size_t i = 0; i < n; ++i)
    {
        events.push_back(
            "12:00:0" + std::to_string(i % 10) + ".000 HandleEnded: handle " +
            std::to_string(i) + " of :1.9 (released)");
    }
    return events;
}

struct Size
{
    std::size_t columns;
    std::size_t rows;
};

TEST(MonitorLayoutTest, EveryCpuOnePageHeaderEverywhereNothingTooWide)
{
    const std::vector<std::string> events = someEvents(20);
    for (const std::uint32_t cpus : {1U, 12U, 64U, 192U})
    {
        for (const Size size : {Size{100, 30}, Size{80, 24}, Size{200, 50},
                                Size{60, 12}, Size{40, 8}})
        {
            SCOPED_TRACE(std::to_string(cpus) + " CPUs at " +
                         std::to_string(size.columns) + "x" +
                         std::to_string(size.rows));
            const GovernorSnapshot s = machine(cpus, 1);
            const std::vector<std::string> header =
                monitorHeader(s, size.columns);
            const MonitorLayout layout = layoutOf(s, {size.columns, size.rows});
            std::multiset<std::uint32_t> seen;
            for (std::size_t p = 0; p < layout.pageCount(); ++p)
            {
                const std::vector<std::string> lines = layout.render(p, events);
                ASSERT_GT(lines.size(), header.size() + 1);
                EXPECT_LE(lines.size(), size.rows) << "page " << p;
                EXPECT_THAT(lines[0], StartsWith("cppcgovd 0.1.0"));
                EXPECT_THAT(lines[1], StartsWith("policy schedutil"));
                EXPECT_THAT(lines[header.size()], StartsWith("CPU"));
                for (const std::string& line : lines)
                {
                    EXPECT_LE(line.size(), size.columns) << line;
                }
                const std::span<const CpuRow> rows = layout.page(p);
                ASSERT_FALSE(rows.empty());
                for (std::size_t r = 0; r < rows.size(); ++r)
                {
                    const std::string& line = lines[header.size() + 1 + r];
                    EXPECT_EQ(rowCpu(line), rows[r].cpu) << line;
                    seen.insert(rows[r].cpu);
                }
                EXPECT_THAT(lines[header.size() + 1 + rows.size()],
                            StartsWith("page " + std::to_string(p + 1) + "/" +
                                       std::to_string(layout.pageCount())));
                // The newest events, as many as the height leaves room for.
                const std::size_t shown = eventRows({size.columns, size.rows});
                ASSERT_EQ(lines.size(),
                          header.size() + 2 + rows.size() + shown);
                if (shown != 0)
                {
                    EXPECT_EQ(lines.back(),
                              events.back().substr(0, size.columns));
                }
            }
            ASSERT_EQ(seen.size(), cpus);
            for (std::uint32_t cpu = 0; cpu < cpus; ++cpu)
            {
                EXPECT_EQ(seen.count(cpu), 1U) << "CPU " << cpu;
            }
        }
    }
}

TEST(MonitorLayoutTest, OnePageWhenEverythingFits)
{
    const MonitorLayout layout = layoutOf(machine(12, 4), {100, 30});
    EXPECT_EQ(layout.pageCount(), 1U);
    const std::vector<std::string> lines = layout.render(5, {});
    EXPECT_THAT(lines.back(), StartsWith("page 1/1  CPUs 0-11  n/space"));
}

TEST(MonitorLayoutTest, ADomainStaysOnOnePageWhenItFits)
{
    // 12 CPUs in domains of 4 with room for 6 rows: 0-3, 4-7, 8-11.
    const GovernorSnapshot s = machine(12, 4);
    const std::size_t fixed = monitorHeader(s, 100).size() + 2;
    const MonitorLayout layout = layoutOf(s, {100, fixed + 6 + 1});
    ASSERT_EQ(eventRows({100, fixed + 7}), 1U);
    ASSERT_EQ(layout.pageCount(), 3U);
    for (std::size_t p = 0; p < 3; ++p)
    {
        const std::span<const CpuRow> rows = layout.page(p);
        ASSERT_EQ(rows.size(), 4U);
        for (const CpuRow& r : rows)
        {
            EXPECT_EQ(r.domain, p);
        }
    }
    // A domain larger than a page is cut where the page is full.
    const GovernorSnapshot big = machine(12, 12);
    const MonitorLayout cut = layoutOf(big, {100, fixed + 5 + 1});
    ASSERT_EQ(cut.pageCount(), 3U);
    EXPECT_EQ(cut.page(0).size(), 5U);
    EXPECT_EQ(cut.page(2).size(), 2U);
}

TEST(MonitorLayoutTest, RowsComeByDomain)
{
    GovernorSnapshot s = machine(4, 1);
    for (CpuInfo& i : s.info)
    {
        i.domain = i.cpu % 2; // 0 and 2 decide together, 1 and 3
    }
    std::vector<std::uint32_t> order;
    for (const CpuRow& r : groupByDomain(cpuRows(s, {})))
    {
        order.push_back(r.cpu);
    }
    EXPECT_THAT(order, ElementsAre(0, 2, 1, 3));
}

TEST(MonitorLayoutTest, RowShowsPolicyMhzAndHandles)
{
    const GovernorSnapshot s = machine(12, 4);
    const MonitorLayout layout = layoutOf(s, {200, 30});
    const std::vector<std::string> lines = layout.render(0, {});
    const std::size_t first = monitorHeader(s, 200).size();
    EXPECT_EQ(lines[first],
              "CPU  DOM  POLICY     UTIL                          CLAMP     REQ"
              "   MHZ   DLV   MHZ  REASON       LATENCY  HANDLES");
    // perf 1002 on (100, 200 MHz)..(2600, 2600 MHz): 1066 MHz.
    EXPECT_EQ(lines[first + 3],
              "  2    0  powersave   194  [####                ]  0..1024  1002"
              "  1066  1002  1066  fixed              -  -");
    EXPECT_EQ(lines[first + 4],
              "  3    0  schedutil   291  [######              ]  0..1024  1003"
              "  1067  1003  1067  utilization        -  103");
    // Narrower: no bar.
    const MonitorLayout narrow = layoutOf(s, {90, 30});
    EXPECT_THAT(narrow.render(0, {})[monitorHeader(s, 90).size() + 4],
                StartsWith("  3    0  schedutil   291  0..1024  1003  1067"));
}

TEST(MonitorLayoutTest, UnknownFrequenciesAndInfoAreDashes)
{
    GovernorSnapshot s = machine(2, 1);
    s.info[0].lowestKhz = 0;
    s.info.pop_back();
    s.cpus[1].deliveredPerf = 0;
    const std::vector<CpuRow> rows = cpuRows(s, {});
    EXPECT_EQ(rows[0].requestedMhz, "-");
    EXPECT_EQ(rows[0].policy, "schedutil");
    EXPECT_EQ(rows[1].domainText, "-");
    EXPECT_EQ(rows[1].policy, "-");
    EXPECT_EQ(rows[1].requestedMhz, "-");
    EXPECT_EQ(rows[1].delivered, "-");
    EXPECT_EQ(rows[1].deliveredMhz, "-");
}

TEST(MonitorLayoutTest, FilterKeepsTheCpusListed)
{
    const GovernorSnapshot s = machine(192, 1);
    const std::vector<std::uint32_t> only{3, 5, 190};
    const MonitorLayout layout = layoutOf(s, {100, 30}, only);
    ASSERT_EQ(layout.pageCount(), 1U);
    std::vector<std::uint32_t> cpus;
    for (const CpuRow& r : layout.page(0))
    {
        cpus.push_back(r.cpu);
    }
    EXPECT_THAT(cpus, ElementsAre(3, 5, 190));
    const std::vector<std::string> lines = layout.render(0, {});
    EXPECT_THAT(lines.back(), StartsWith("page 1/1  CPUs 3,5,190 (3 of 192 "
                                         "shown)"));
}

TEST(MonitorLayoutTest, HeaderSaysPolicyHandlesAndStatistics)
{
    const GovernorSnapshot s = machine(12, 4);
    EXPECT_THAT(monitorHeader(s, 100),
                ElementsAre("cppcgovd 0.1.0  simulator:rd-n2  12 CPUs  period "
                            "1000 us  handles 1 clamp, 0 latency",
                            "policy schedutil (the default; CPU 2 differs: 2 "
                            "powersave)",
                            "ticks 114599 (30805 skipped)  late p50 12.0 us "
                            "p99 80.0 us max 32.1 ms  writes 1200 (0 errors)"));
    // Narrower, the statistics take more lines.
    EXPECT_THAT(monitorHeader(s, 50),
                ElementsAre(::testing::_, ::testing::_,
                            "ticks 114599 (30805 skipped)",
                            "late p50 12.0 us p99 80.0 us max 32.1 ms",
                            "writes 1200 (0 errors)"));
    GovernorSnapshot quiet = machine(2, 1);
    quiet.statistics.clear();
    EXPECT_EQ(monitorHeader(quiet, 100).size(), 2U);
}

TEST(MonitorLayoutTest, NotATerminalShowsEveryRowAndTheDegraded)
{
    GovernorSnapshot s = machine(64, 1);
    s.cpus[5].degraded = "'/p5/scaling_setspeed': the write failed";
    const MonitorLayout layout(monitorHeader(s, 0),
                               groupByDomain(cpuRows(s, {})), {}, false, 64);
    ASSERT_EQ(layout.pageCount(), 1U);
    const std::vector<std::string> lines = layout.render(0, someEvents(3));
    ASSERT_EQ(lines.size(), 3 + 1 + 64 + 1U);
    EXPECT_THAT(lines[3 + 1 + 5], HasSubstr("  degraded  "));
    EXPECT_EQ(lines.back(),
              "CPU 5 degraded: '/p5/scaling_setspeed': the write failed");
}

TEST(MonitorLayoutTest, UtilBar)
{
    EXPECT_EQ(utilBar(0, 4), "[    ]");
    EXPECT_EQ(utilBar(512, 4), "[##  ]");
    EXPECT_EQ(utilBar(1024, 4), "[####]");
    EXPECT_EQ(utilBar(65535, 4), "[####]");
    EXPECT_EQ(utilBar(127, 4), "[    ]");
    EXPECT_EQ(utilBar(128, 4), "[#   ]");
}

TEST(MonitorKeysTest, LettersArrowsAndPageKeys)
{
    using K = MonitorKey;
    EXPECT_THAT(parseKeys("n pbqQ\x03gGjkx"),
                ElementsAre(K::next, K::next, K::previous, K::previous, K::quit,
                            K::quit, K::quit, K::first, K::last, K::next,
                            K::previous));
    EXPECT_THAT(parseKeys("\x1b[6~\x1b[5~\x1b[C\x1b[D\x1b[B\x1b[A"),
                ElementsAre(K::next, K::previous, K::next, K::previous, K::next,
                            K::previous));
    EXPECT_THAT(parseKeys("\x1b[H\x1b[1~\x1bOH\x1b[F\x1b[4~\x1bOF"),
                ElementsAre(K::first, K::first, K::first, K::last, K::last,
                            K::last));
    // Other sequences are skipped whole (F5, a mouse-less xterm's focus
    // report), and so is a sequence cut short.
    EXPECT_THAT(parseKeys("\x1b[15~q\x1b[Iq\x1b["),
                ElementsAre(K::quit, K::quit));
}

TEST(MonitorEventsTest, Lines)
{
    EXPECT_EQ(describeHandleEnded(7, ":1.9", "task-exited"),
              "HandleEnded: handle 7 of :1.9 (task-exited)");
    const std::vector<std::string> files{"/etc/cppcgov/policy.yaml",
                                         "/etc/cppcgov/policy.d/a.yaml"};
    EXPECT_EQ(describePolicyChanged("powersave", files),
              "PolicyChanged: powersave from '/etc/cppcgov/policy.yaml', "
              "'/etc/cppcgov/policy.d/a.yaml'");
    EXPECT_EQ(describePolicyChanged("performance", {}),
              "PolicyChanged: performance");
    EXPECT_EQ(describeHandleStarted({3, "clamp", ":1.42", 1234, 0, 512, 0}),
              "HandleStarted: handle 3 clamp 0..512 of :1.42 for task 1234");
    EXPECT_EQ(describeHandleStarted({4, "latency", ":1.43", 0, 0, 0, 50}),
              "HandleStarted: handle 4 latency 50 us of :1.43 on its CPUs");
}

TEST(MonitorEventsTest, DegradedChanges)
{
    const auto t = std::chrono::system_clock::time_point{};
    std::vector<CpuState> before(3);
    for (std::uint32_t cpu = 0; cpu < 3; ++cpu)
    {
        before[cpu].cpu = cpu;
    }
    before[1].degraded = "gone";
    std::vector<CpuState> now = before;
    now[1].degraded.clear();
    now[2].degraded = "hangs";
    std::vector<std::string> lines;
    for (const MonitorEvent& e : degradedChanges(t, before, now))
    {
        lines.push_back(e.name + ": " + e.text);
    }
    EXPECT_THAT(lines, ElementsAre("Recovered: CPU 1 recovered",
                                   "Degraded: CPU 2 degraded: hangs"));
    EXPECT_TRUE(degradedChanges(t, now, now).empty());
}

TEST(MonitorEventsTest, TimesAndJson)
{
    // 2025-03-01T12:04:05.123Z
    const auto t = std::chrono::system_clock::time_point{
        std::chrono::milliseconds(1'740'830'645'123)};
    EXPECT_EQ(utcTime(t), "2025-03-01T12:04:05.123Z");
    EXPECT_THAT(clockTime(t),
                ::testing::MatchesRegex("[0-2][0-9]:[0-5][0-9]:05\\.123"));
    EXPECT_EQ(eventLine(handleEndedEvent(t, 7, ":1.9", "released")),
              clockTime(t) + " HandleEnded: handle 7 of :1.9 (released)");
    std::ostringstream out;
    printEventJson(policyChangedEvent(t, "schedutil", {"/a.yaml"}), out);
    EXPECT_EQ(out.str(),
              R"({"format":"cppcgov-monitor","version":1,"type":"event",)"
              R"("time":"2025-03-01T12:04:05.123Z","event":"PolicyChanged",)"
              R"("text":"PolicyChanged: schedutil from '/a.yaml'",)"
              R"("policy":"schedutil","files":["/a.yaml"]})"
              "\n");
}

TEST(StatisticsTextTest, Durations)
{
    EXPECT_EQ(formatDuration(0), "0 ns");
    EXPECT_EQ(formatDuration(850), "850 ns");
    EXPECT_EQ(formatDuration(1000), "1.00 us");
    EXPECT_EQ(formatDuration(12'345), "12.3 us");
    EXPECT_EQ(formatDuration(123'456), "123 us");
    EXPECT_EQ(formatDuration(32'100'000), "32.1 ms");
    EXPECT_EQ(formatDuration(1'200'000'000), "1.20 s");
}

TEST(StatisticsTextTest, LinesNameEveryCounter)
{
    const Statistics s{
        {"ticks", 10},
        {"ticks_skipped", 2},
        {"ticks_early", 0},
        {"tick_late_p50_ns", 1500},
        {"tick_late_p99_ns", 2'000'000},
        {"tick_late_max_ns", 3'000'000},
        {"writes", 7},
        {"write_errors", 1},
        {"writes_landed", 6},
        {"hint_to_write_p50_ns", 900},
        {"hint_to_write_p99_ns", 1'100'000},
        {"access_errors", 1},
        {"accesses_late", 0},
        {"accesses_at_once_max", 3},
        {"cpus_degraded", 0},
        {"new_counter", 5}};
    EXPECT_THAT(statisticsLines(s),
                ElementsAre("ticks           10 (2 skipped)",
                            "tick lateness   p50 1.50 us, p99 2.00 ms, max "
                            "3.00 ms",
                            "writes          7 (1 error), 6 landed",
                            "hint to write   p50 900 ns, p99 1.10 ms",
                            "accesses        1 error, 0 late, 3 at once at "
                            "most, 0 CPUs degraded now",
                            "new_counter     5"));
    // Before the first hint the daemon reports 0.
    const Statistics none{{"hint_to_write_p50_ns", 0},
                          {"hint_to_write_p99_ns", 0}};
    EXPECT_THAT(statisticsLines(none),
                ElementsAre("hint to write   no hint timed yet"));
    EXPECT_TRUE(statisticsSummary(none).empty());
    EXPECT_THAT(statisticsSummary(s),
                ElementsAre("ticks 10 (2 skipped)",
                            "late p50 1.50 us p99 2.00 ms max 3.00 ms",
                            "writes 7 (1 error)",
                            "hint>write p50 900 ns p99 1.10 ms"));
    EXPECT_TRUE(statisticsLines({}).empty());
    EXPECT_TRUE(statisticsSummary({}).empty());
}

} // namespace
} // namespace cppcgov::tools
