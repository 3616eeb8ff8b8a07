// SPDX-License-Identifier: Apache-2.0
// Per-CPU load from procfs: the strict parser of /proc/stat and the sampler
// on a fake tree whose file is rewritten between samples.
#include "daemon/proc_stat.hpp"
#include "lib/error.hpp"
#include "temp_tree.hpp"

#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using cppc::test::TempTree;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The lines after the CPU lines, as a kernel prints them.
constexpr const char* tail =
    "intr 1234 0 0 5 6\n"
    "ctxt 987654\n"
    "btime 1700000000\n"
    "processes 4242\n"
    "procs_running 2\n"
    "procs_blocked 0\n"
    "softirq 100 1 2 3 4 5 6 7 8 9 10\n";

// One cpuN line with every field; busy = user + system, idle + iowait =
// the rest of `total`, guest fields inside user.
std::string cpuLine(int cpu, std::uint64_t busy, std::uint64_t idle)
{
    return "cpu" + std::to_string(cpu) + " " + std::to_string(busy / 2) +
           " 0 " + std::to_string(busy - busy / 2) + " " +
           std::to_string(idle) + " 0 0 0 0 " + std::to_string(busy / 2) +
           " 0\n";
}

// A whole file: the sums line, then (cpu, busy, idle) per CPU.
std::string statText(const std::vector<std::array<std::uint64_t, 3>>& cpus)
{
    std::uint64_t busy = 0;
    std::uint64_t idle = 0;
    std::string lines;
    for (const auto& [cpu, b, i] : cpus)
    {
        busy += b;
        idle += i;
        lines += cpuLine(static_cast<int>(cpu), b, i);
    }
    return "cpu  " + std::to_string(busy) + " 0 0 " + std::to_string(idle) +
           " 0 0 0 0 0 0\n" + lines + tail;
}

// ---- Parsing ----

TEST(ParseProcStatTest, ReadsEveryCpuLineAsTheKernelPrintsIt)
{
    // user nice system idle iowait irq softirq steal guest guest_nice
    const std::string text = "cpu  400 20 300 5000 100 10 5 1 50 2\n"
                             "cpu0 100 10 100 2000 50 5 3 1 50 2\n"
                             "cpu2 300 10 200 3000 50 5 2 0 0 0\n" +
                             std::string(tail);
    std::array<CpuTimes, 4> out{};
    std::uint32_t count = 0;
    ASSERT_FALSE(parseProcStat(text, out, count));
    EXPECT_EQ(count, 3U);
    // total: the first eight fields; guest and guest_nice are in user and
    // nice already.
    EXPECT_EQ(out[0], (CpuTimes{219, 2269, true}));
    EXPECT_FALSE(out[1].present); // offline
    EXPECT_EQ(out[2], (CpuTimes{517, 3567, true}));
    EXPECT_FALSE(out[3].present);
}

TEST(ParseProcStatTest, OldKernelsWithFewerFieldsAndCpusBeyondTheSpan)
{
    // Four fields (no iowait) are enough; CPUs past the span are counted.
    const std::string text = "cpu  1 2 3 4\ncpu0 1 2 3 4\ncpu7 5 0 0 5\n";
    std::array<CpuTimes, 2> out{};
    std::uint32_t count = 0;
    ASSERT_FALSE(parseProcStat(text, out, count));
    EXPECT_EQ(count, 8U);
    EXPECT_EQ(out[0], (CpuTimes{6, 10, true}));
    EXPECT_FALSE(out[1].present);
    EXPECT_FALSE(parseProcStat(text, {}, count));
    EXPECT_EQ(count, 8U);
}

TEST(ParseProcStatTest, NoCpuLinesAtAll)
{
    std::array<CpuTimes, 2> out{};
    std::uint32_t count = 9;
    ASSERT_FALSE(parseProcStat("cpu  1 2 3 4\nintr 5\n", out, count));
    EXPECT_EQ(count, 0U);
    EXPECT_FALSE(out[0].present);
}

class MalformedProcStatTest : public ::testing::TestWithParam<std::string>
{};

TEST_P(MalformedProcStatTest, IsAnErrorNeverACrash)
{
    std::array<CpuTimes, 4> out{};
    std::uint32_t count = 0;
    EXPECT_EQ(parseProcStat(GetParam(), out, count),
              cppc::Errc::malformedAttribute)
        << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedProcStatTest,
    ::testing::Values(
        "", "\n", "cpu  1 2 3 4",                     // no newline at the end
        "cpu0 1 2 3 4\n",                             // no sums line first
        "intr 1\ncpu  1 2 3 4\n",                     // not first
        "cpu  1 2 3\n",                               // three fields
        "cpu  1 2 3 4\ncpu0 1 2 3\n",                 // three fields
        "cpu  1 2 3 4\ncpu0\n",                       // none
        "cpu  1 2 3 4\ncpu0 1 2 x 4\n",               // not a number
        "cpu  1 2 3 4\ncpu0 1 2 -3 4\n",              // signed
        "cpu  1 2 3 4\ncpu0 1 2 +3 4\n",              // signed
        "cpu  1 2 3 4\ncpu0 1 2 3 4x\n",              // garbage after a number
        "cpu  1 2 3 4\ncpux 1 2 3 4\n",               // no CPU number
        "cpu  1 2 3 4\ncpu-1 1 2 3 4\n",              // negative CPU
        "cpu  1 2 3 4\ncpu 1 2 3 4\n",                // a second sums line
        "cpu  1 2 3 4\ncpu65536 1 2 3 4\n",           // CPU number too large
        "cpu  1 2 3 4\ncpu1 1 2 3 4\ncpu1 1 2 3 4\n", // twice
        "cpu  1 2 3 4\ncpu0 18446744073709551616 2 3 4\n",
        "cpu  1 2 3 4\ncpu0 18446744073709551615 1 0 0\n", // sum overflows
        std::string("cpu  1 2 3 4\ncpu0 1 2\0 3 4\n", 27)));

TEST(ParseProcStatTest, TrailingSpacesAreNotFields)
{
    std::array<CpuTimes, 1> out{};
    std::uint32_t count = 0;
    EXPECT_FALSE(parseProcStat("cpu  1 2 3 4\ncpu0 1 2 3 4 \n", out, count));
    EXPECT_EQ(out[0], (CpuTimes{6, 10, true}));
}

TEST(ParseProcStatTest, ThisMachinesFileParses)
{
    // Read-only: the live file is real-world input for the parser.
    std::error_code ec;
    if (!std::filesystem::exists("/proc/stat", ec))
    {
        GTEST_SKIP() << "no /proc/stat";
    }
    ProcStatSampler sampler("/");
    EXPECT_GE(sampler.cpus(), 1U);
    std::vector<std::uint16_t> busy(sampler.cpus());
    EXPECT_FALSE(sampler.sample(busy));
    EXPECT_FALSE(sampler.sample(busy));
    for (const std::uint16_t b : busy)
    {
        EXPECT_LE(b, busyScale);
    }
}

// ---- Sampling ----

struct FakeProc
{
    void write(const std::vector<std::array<std::uint64_t, 3>>& cpus) const
    {
        tree.write("proc/stat", statText(cpus));
    }

    TempTree tree;
};

TEST(ProcStatSamplerTest, BusyFractionOverTheWindowSinceTheLastRead)
{
    FakeProc f;
    f.write({{0, 100, 900}, {1, 0, 1000}, {2, 500, 500}});
    ProcStatSampler sampler(f.tree.path());
    ASSERT_EQ(sampler.cpus(), 3U);
    EXPECT_EQ(sampler.path(), f.tree.path() / "proc/stat");
    std::array<std::uint16_t, 3> busy{};
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(busy, ElementsAre(0, 0, 0)); // the first read starts windows

    // CPU 0: 50 of 100 ticks busy; CPU 1: all 200; CPU 2: none of 40.
    f.write({{0, 150, 950}, {1, 200, 1000}, {2, 500, 540}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(busy, ElementsAre(512, 1024, 0));

    // 3 of 4 ticks busy.
    f.write({{0, 153, 951}, {1, 400, 1000}, {2, 501, 540}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(busy, ElementsAre(768, 1024, 1024));
}

TEST(ProcStatSamplerTest, CountersThatDoNotMoveRepeatTheLastFraction)
{
    FakeProc f;
    f.write({{0, 0, 0}});
    ProcStatSampler sampler(f.tree.path());
    std::array<std::uint16_t, 1> busy{};
    ASSERT_FALSE(sampler.sample(busy));
    f.write({{0, 1, 3}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_EQ(busy[0], 256);
    // No tick since: the same fraction, and the window keeps its start...
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_EQ(busy[0], 256);
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_EQ(busy[0], 256);
    // ...so the next fraction covers everything since the counters moved.
    f.write({{0, 3, 3}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_EQ(busy[0], 1024);
}

TEST(ProcStatSamplerTest, BusyTimeBetweenTheLastTwoReads)
{
    const auto tickUs =
        1'000'000 / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
    FakeProc f;
    f.write({{0, 10, 10}, {1, 10, 10}});
    ProcStatSampler sampler(f.tree.path());
    std::array<std::uint16_t, 2> busy{};
    EXPECT_THAT(sampler.busyUs(), ElementsAre(0, 0));
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(sampler.busyUs(), ElementsAre(0, 0)); // windows start
    f.write({{0, 13, 11}, {1, 10, 15}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(sampler.busyUs(), ElementsAre(3 * tickUs, 0));
    // Counters that did not move: no busy time, though the fraction is
    // repeated.
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_EQ(busy[0], 768);
    EXPECT_THAT(sampler.busyUs(), ElementsAre(0, 0));
    // Only what was gained since the last read, whatever the window.
    f.write({{0, 14, 11}, {1, 12, 15}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(sampler.busyUs(), ElementsAre(tickUs, 2 * tickUs));
    // A failed read: none.
    f.tree.write("proc/stat", "garbage\n");
    EXPECT_TRUE(sampler.sample(busy));
    EXPECT_THAT(sampler.busyUs(), ElementsAre(0, 0));
}

TEST(ProcStatSamplerTest, OfflineCpusAndCountersGoingBackwards)
{
    FakeProc f;
    f.write({{0, 100, 100}, {1, 100, 100}, {2, 100, 100}});
    ProcStatSampler sampler(f.tree.path());
    std::array<std::uint16_t, 3> busy{};
    ASSERT_FALSE(sampler.sample(busy));
    f.write({{0, 200, 100}, {1, 200, 100}, {2, 200, 100}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(busy, ElementsAre(1024, 1024, 1024));

    // CPU 1 goes offline; CPU 2's counters go backwards.
    f.write({{0, 300, 100}, {2, 50, 50}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(busy, ElementsAre(1024, 0, 0));

    // CPU 1 is back: its first read starts a new window; CPU 2 counts from
    // where it went back to.
    f.write({{0, 400, 100}, {1, 900, 900}, {2, 60, 60}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(busy, ElementsAre(1024, 0, 512));
    f.write({{0, 400, 200}, {1, 1000, 900}, {2, 60, 80}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(busy, ElementsAre(0, 1024, 0));
}

TEST(ProcStatSamplerTest, AsManyCpusAsAskedFor)
{
    FakeProc f;
    f.write({{0, 0, 0}, {1, 0, 0}});
    ProcStatSampler sampler(f.tree.path(), 4);
    EXPECT_EQ(sampler.cpus(), 4U);
    std::array<std::uint16_t, 4> busy{};
    ASSERT_FALSE(sampler.sample(busy));
    f.write({{0, 10, 0}, {1, 10, 0}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_THAT(busy, ElementsAre(1024, 1024, 0, 0));
    std::array<std::uint16_t, 3> wrong{};
    EXPECT_EQ(sampler.sample(wrong), std::errc::invalid_argument);
}

TEST(ProcStatSamplerTest, AMalformedFileIsAnErrorAndChangesNoWindow)
{
    FakeProc f;
    f.write({{0, 0, 0}});
    ProcStatSampler sampler(f.tree.path());
    std::array<std::uint16_t, 1> busy{};
    ASSERT_FALSE(sampler.sample(busy));
    f.write({{0, 10, 10}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_EQ(busy[0], 512);

    f.tree.write("proc/stat", "cpu  1 2 3 4\ncpu0 garbage\n");
    EXPECT_EQ(sampler.sample(busy), cppc::Errc::malformedAttribute);
    EXPECT_EQ(busy[0], 0);

    f.write({{0, 30, 10}});
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_EQ(busy[0], 1024); // from the last good read
}

TEST(ProcStatSamplerTest, AFileLargerThanTheBufferIsReadWhole)
{
    FakeProc f;
    std::vector<std::array<std::uint64_t, 3>> cpus;
    for (std::uint64_t cpu = 0; cpu < 4096; ++cpu)
    {
        cpus.push_back({cpu, 1000000000, 1000000000});
    }
    f.write(cpus);
    ASSERT_GT(std::filesystem::file_size(f.tree.path() / "proc/stat"),
              64U * 1024);
    ProcStatSampler sampler(f.tree.path());
    ASSERT_EQ(sampler.cpus(), 4096U);
    std::vector<std::uint16_t> busy(4096);
    ASSERT_FALSE(sampler.sample(busy));
    for (auto& c : cpus)
    {
        c[1] += 10;
    }
    f.write(cpus);
    ASSERT_FALSE(sampler.sample(busy));
    EXPECT_EQ(busy[0], 1024);
    EXPECT_EQ(busy[4095], 1024);
}

TEST(ProcStatSamplerTest, StartUpErrorsNameTheFile)
{
    const TempTree t;
    try
    {
        ProcStatSampler sampler(t.path());
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
        EXPECT_THAT(e.what(), HasSubstr((t.path() / "proc/stat").string()));
    }
    t.write("proc/stat", "nonsense\n");
    try
    {
        ProcStatSampler sampler(t.path());
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), cppc::Errc::malformedAttribute);
        EXPECT_THAT(e.what(), HasSubstr((t.path() / "proc/stat").string()));
    }
}

} // namespace
} // namespace cppcgov::daemon
