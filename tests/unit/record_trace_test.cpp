// SPDX-License-Identifier: Apache-2.0
// The record command without a bus: its arguments, the compact lines of
// JsonWriter it writes with, the trace events it makes of samples and
// signals, and the file it replaces only when complete.
#include "tools/json_writer.hpp"
#include "tools/record_command.hpp"
#include "tools/replaced_file.hpp"
#include "tools/trace_recorder.hpp"
#include "usage_error_support.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::tools
{
namespace
{

using test::Args;
using test::usageError;
using ::testing::HasSubstr;

TEST(RecordArgs, TakesOptionsAndFile)
{
    const RecordOptions o = parseRecordArgs(
        Args{"--seconds", "5", "--interval=20", "--cpus", "0-2,7", "--png",
             "p.png", "--bus-address", "unix:path=/b", "t.json"});
    EXPECT_EQ(o.seconds, 5U);
    EXPECT_EQ(o.intervalMs, 20U);
    EXPECT_EQ(o.cpus, (std::vector<std::uint32_t>{0, 1, 2, 7}));
    EXPECT_EQ(o.png, "p.png");
    EXPECT_EQ(o.bus.address, "unix:path=/b");
    EXPECT_EQ(o.file, "t.json");
    EXPECT_EQ(parseRecordArgs(Args{"--seconds", "1", "--", "-odd"}).file,
              "-odd");
    EXPECT_TRUE(parseRecordArgs(Args{"--help"}).help);
}

TEST(RecordArgs, SaysWhatIsWrong)
{
    EXPECT_EQ(usageError(parseRecordArgs, {"t.json"}),
              "--seconds N is required");
    EXPECT_EQ(usageError(parseRecordArgs, {"--seconds", "1"}),
              "no FILE given for the trace");
    EXPECT_EQ(usageError(parseRecordArgs, {"--seconds", "0", "t"}),
              "--seconds: '0' is not a number from 1 to 604800");
    EXPECT_EQ(usageError(parseRecordArgs,
                         {"--seconds", "1", "--interval", "9", "t"}),
              "--interval: '9' is not a number from 10 to 3600000");
    EXPECT_EQ(usageError(parseRecordArgs, {"--seconds", "1", "a", "b"}),
              "unexpected argument 'b' after FILE");
    EXPECT_EQ(usageError(parseRecordArgs, {"--frob", "t"}),
              "unknown option '--frob'");
    EXPECT_EQ(usageError(parseRecordArgs, {"--seconds", "1", "--png=", "t"}),
              "--png: the file name is empty");
    EXPECT_THAT(usageError(parseRecordArgs,
                           {"--seconds", "1", "--cpus", "x", "t"}),
                HasSubstr("malformed CPU list 'x'"));
}

TEST(RecordArgs, DefaultsOfPngAndInterval)
{
    EXPECT_EQ(defaultPngPath("a/trace.json"), "a/trace.png");
    EXPECT_EQ(defaultPngPath("trace"), "trace.png");
    EXPECT_EQ(defaultPngPath("dir/.json"), "dir/.json.png");
    EXPECT_EQ(recordIntervalUs(std::nullopt, 1000), 10'000U);
    EXPECT_EQ(recordIntervalUs(std::nullopt, 50'000), 50'000U);
    EXPECT_EQ(recordIntervalUs(25, 1000), 25'000U);
}

TEST(JsonWriter, BreaksLinesDownToLineDepth)
{
    std::ostringstream out;
    JsonWriter j(out, 2);
    j.beginObject();
    j.key("a");
    j.beginArray();
    j.beginObject();
    j.field("x", std::uint64_t{1});
    j.key("y");
    j.beginArray();
    j.value("s");
    j.endArray();
    j.endObject();
    j.value(true);
    j.endArray();
    j.endObject();
    EXPECT_EQ(out.str(), "{\n  \"a\": [\n    {\"x\":1,\"y\":[\"s\"]},\n"
                         "    true\n  ]\n}\n");
}

CpuState state(std::uint32_t cpu, std::uint16_t util, std::uint32_t req,
               std::uint32_t del, std::string reason = "idle")
{
    CpuState s;
    s.cpu = cpu;
    s.util = util;
    s.requestedPerf = req;
    s.deliveredPerf = del;
    s.reason = std::move(reason);
    return s;
}

RecordSetup setup()
{
    RecordSetup s;
    s.daemon.version = "1.2";
    s.daemon.policy = "schedutil";
    s.daemon.cpuCount = 3;
    s.cpus = {0, 2};
    s.intervalUs = 10'000;
    s.startUs = 1'000'000;
    CpuInfo with{};
    with.cpu = 0;
    with.lowestPerf = 100;
    with.lowestKhz = 100'000;
    with.nominalPerf = 1000;
    with.nominalKhz = 1'000'000;
    with.highestPerf = 1200;
    CpuInfo without = with;
    without.cpu = 2;
    without.lowestKhz = 0;
    without.nominalKhz = 0;
    without.highestPerf = 1300;
    s.info = {with, without};
    return s;
}

std::vector<std::string> lines(const std::string& text)
{
    std::vector<std::string> v;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
    {
        v.push_back(line);
    }
    return v;
}

TEST(TraceRecorder, WritesTracksCountersSlicesAndHints)
{
    std::ostringstream out;
    HandleInfo before;
    before.handle = 4;
    before.kind = "latency";
    before.owner = ":1.9";
    before.latencyUs = 50;
    const std::vector<HandleInfo> live{before};
    TraceRecorder r(out, setup(), live);
    const std::vector<CpuState> first{
        state(0, 10, 500, 0), state(1, 99, 99, 99), state(2, 20, 600, 600)};
    r.sample(1'010'000, first);
    // CPU 0 unchanged: nothing written for it; CPU 2 now clamped.
    const std::vector<CpuState> second{state(0, 10, 500, 0),
                                       state(2, 1024, 1300, 1250, "clamp")};
    r.sample(1'020'000, second);
    HandleInfo clamp;
    clamp.handle = 7;
    clamp.kind = "clamp";
    clamp.owner = ":1.5";
    clamp.task = 42;
    clamp.utilMin = 512;
    clamp.utilMax = 1024;
    r.handleStarted(1'015'000, clamp);
    r.handleStarted(1'016'000, before); // listed already: no second begin
    r.handleEnded(1'025'000, 7, ":1.5", "released");
    r.handleEnded(1'026'000, 99, ":1.6", "client-left"); // never seen
    const std::vector<std::string> files{"/etc/a.yaml"};
    r.policyChanged(1'027'000, "performance", files);
    r.finish(1'030'000);
    EXPECT_EQ(r.samples(), 2U);
    EXPECT_EQ(r.perfScale(), 1300U);

    const std::vector<std::string> l = lines(out.str());
    ASSERT_GT(l.size(), 4U);
    EXPECT_THAT(l[0], "{");
    EXPECT_THAT(l[1], HasSubstr("\"displayTimeUnit\": \"ms\""));
    EXPECT_EQ(l.back(), "}");
    const std::string text = out.str();
    const auto has = [&text](const std::string& event) {
        return text.find(event) != std::string::npos;
    };
    EXPECT_TRUE(has("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
                    "\"tid\":1,\"ts\":0,\"args\":{\"name\":\"cppcgovd\"}}"));
    EXPECT_TRUE(has("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,"
                    "\"tid\":1002,\"ts\":0,\"args\":{\"name\":\"CPU 2\"}}"));
    EXPECT_FALSE(has("CPU 1"));
    EXPECT_TRUE(has("{\"name\":\"CPU 0\",\"ph\":\"C\",\"pid\":1,"
                    "\"tid\":1,\"ts\":1010000,\"args\":{\"util\":10}}"));
    // MHz only where the frequencies are known: perf 500 is 500 MHz.
    EXPECT_TRUE(has("\"CPU 0\",\"ph\":\"C\",\"pid\":1,\"tid\":1,"
                    "\"ts\":1010000,\"args\":{\"requested MHz\":500}}"));
    EXPECT_FALSE(has("{\"requested MHz\":600}"));
    // Delivered 0 is unknown: no track.
    EXPECT_FALSE(has("\"ts\":1010000,\"args\":{\"delivered perf\":0}"));
    EXPECT_TRUE(has("\"CPU 2\",\"ph\":\"C\",\"pid\":1,\"tid\":1,"
                    "\"ts\":1020000,\"args\":{\"delivered perf\":1250}}"));
    // Unchanged values are not repeated until the end.
    EXPECT_FALSE(has("\"CPU 0\",\"ph\":\"C\",\"pid\":1,\"tid\":1,"
                     "\"ts\":1020000"));
    EXPECT_TRUE(has("\"CPU 0\",\"ph\":\"C\",\"pid\":1,\"tid\":1,"
                    "\"ts\":1030000,\"args\":{\"util\":10}}"));
    // The reason as slices of the CPU's track.
    EXPECT_TRUE(has("{\"name\":\"idle\",\"ph\":\"B\",\"pid\":1,"
                    "\"tid\":1002,\"ts\":1010000}"));
    EXPECT_TRUE(has("{\"name\":\"\",\"ph\":\"E\",\"pid\":1,\"tid\":1002,"
                    "\"ts\":1020000}"));
    EXPECT_TRUE(has("{\"name\":\"clamp\",\"ph\":\"B\",\"pid\":1,"
                    "\"tid\":1002,\"ts\":1020000}"));
    // Hints: the one live before, the clamp, an end never begun.
    EXPECT_TRUE(has("{\"name\":\"latency #4\",\"ph\":\"b\",\"pid\":1,"
                    "\"tid\":1,\"ts\":1000000,\"cat\":\"hint\",\"id\":4,"
                    "\"args\":{\"handle\":4,\"kind\":\"latency\","
                    "\"owner\":\":1.9\",\"task\":0,\"latency_us\":50}}"));
    EXPECT_TRUE(has("{\"name\":\"clamp #7\",\"ph\":\"b\",\"pid\":1,"
                    "\"tid\":1,\"ts\":1015000,\"cat\":\"hint\",\"id\":7,"
                    "\"args\":{\"handle\":7,\"kind\":\"clamp\","
                    "\"owner\":\":1.5\",\"task\":42,\"util_min\":512,"
                    "\"util_max\":1024}}"));
    EXPECT_TRUE(has("{\"name\":\"clamp #7\",\"ph\":\"e\",\"pid\":1,"
                    "\"tid\":1,\"ts\":1025000,\"cat\":\"hint\",\"id\":7,"
                    "\"args\":{\"reason\":\"released\"}}"));
    EXPECT_TRUE(has("{\"name\":\"latency #4\",\"ph\":\"e\",\"pid\":1,"
                    "\"tid\":1,\"ts\":1030000,\"cat\":\"hint\",\"id\":4,"
                    "\"args\":{\"reason\":\"live at the end\"}}"));
    EXPECT_EQ(text.find("\"latency #4\",\"ph\":\"b\""),
              text.rfind("\"latency #4\",\"ph\":\"b\""));
    EXPECT_TRUE(has("{\"name\":\"HandleEnded #99\",\"ph\":\"i\""));
    EXPECT_TRUE(has("{\"name\":\"PolicyChanged performance\",\"ph\":\"i\","
                    "\"pid\":1,\"tid\":1,\"ts\":1027000,\"s\":\"g\","
                    "\"args\":{\"policy\":\"performance\","
                    "\"files\":\"/etc/a.yaml\"}}"));

    // The plot's timeline: rows of the CPUs recorded, the two hints.
    const RecordTimeline& t = r.timeline();
    EXPECT_EQ(t.rows(), 2U);
    EXPECT_EQ(t.buckets(1).at(2).util, 1024U);
    ASSERT_EQ(t.spans().size(), 2U);
    EXPECT_EQ(t.spans()[1], (HintSpan{7, "clamp", 15'000, 25'000}));
    EXPECT_EQ(t.durationUs(), 30'000U);
}

class ReplacedFileTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        dir_ = std::filesystem::temp_directory_path() /
               ("replaced_file_test." + std::to_string(::getpid()));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override
    {
        std::filesystem::remove_all(dir_);
    }
    std::size_t entries() const
    {
        return static_cast<std::size_t>(
            std::distance(std::filesystem::directory_iterator(dir_),
                          std::filesystem::directory_iterator()));
    }
    std::filesystem::path dir_;
};

TEST_F(ReplacedFileTest, ReplacesOnlyWhenCommitted)
{
    const std::string path = dir_ / "f.json";
    std::ofstream(path) << "old";
    {
        ReplacedFile f(path);
        f.stream() << "new, never committed";
        EXPECT_EQ(entries(), 2U);
    }
    EXPECT_EQ(entries(), 1U);
    std::stringstream read;
    read << std::ifstream(path).rdbuf();
    EXPECT_EQ(read.str(), "old");
    {
        ReplacedFile f(path);
        f.write("new");
        f.commit();
    }
    read.str("");
    read << std::ifstream(path).rdbuf();
    EXPECT_EQ(read.str(), "new");
    EXPECT_EQ(entries(), 1U);
}

TEST_F(ReplacedFileTest, NamesAPathItCannotWrite)
{
    const std::string missing = dir_ / "none" / "f.json";
    try
    {
        const ReplacedFile f(missing);
        ADD_FAILURE() << "no error";
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_EQ(std::string(e.what()),
                  "cannot write '" + missing + "': No such file or directory");
    }
    try
    {
        const ReplacedFile f(dir_.string());
        ADD_FAILURE() << "no error";
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_EQ(std::string(e.what()),
                  "cannot write '" + dir_.string() + "': Is a directory");
    }
}

TEST_F(ReplacedFileTest, AFailedWriteIsAnErrorAtCommit)
{
    const std::string path = dir_ / "f";
    ReplacedFile f(path);
    f.stream().setstate(std::ios::badbit);
    EXPECT_THROW(f.commit(), std::runtime_error);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_EQ(entries(), 1U); // the temporary file, until f goes
}

} // namespace
} // namespace cppcgov::tools
