// The latency arbiter on a fake sysfs tree: the strictest request wins per
// CPU, 0 us is written as "n/a", ending requests relaxes to the next
// strictest and finally restores what was found, and stopping (normally or
// after a crash) leaves the tree exactly as it was found.
#include "daemon/latency_arbiter.hpp"
#include "lib/error.hpp"
#include "temp_tree.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using cppc::test::TempTree;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string attr(unsigned cpu)
{
    return "sys/devices/system/cpu/cpu" + std::to_string(cpu) +
           "/power/pm_qos_resume_latency_us";
}

// A tree with CPUs 0-3 holding the kernel's default ("0": no constraint),
// except CPU 2, which an administrator limited to 250 us, and CPU 3, set to
// "n/a".
class LatencyArbiterTest : public ::testing::Test
{
  protected:
    LatencyArbiterTest()
    {
        tree.write(attr(0), "0\n");
        tree.write(attr(1), "0\n");
        tree.write(attr(2), "250\n");
        tree.write(attr(3), "n/a\n");
        tree.write("run/.keep", "");
        before = tree.snapshot("sys");
    }

    std::filesystem::path state() const
    {
        return tree.path() / "run" / "latency.state";
    }

    std::string value(unsigned cpu) const
    {
        return tree.read(attr(cpu));
    }

    TempTree tree;
    std::map<std::string, std::string> before;
};

TEST_F(LatencyArbiterTest, StrictestRequestWinsAcrossOverlaps)
{
    LatencyArbiter a(tree.path(), state());
    const std::array<unsigned, 2> first{0, 1};
    const std::array<unsigned, 2> second{1, 2};
    ASSERT_FALSE(a.add(1, first, 100));
    EXPECT_EQ(value(0), "100\n");
    EXPECT_EQ(value(1), "100\n");
    ASSERT_FALSE(a.add(2, second, 20));
    EXPECT_EQ(value(0), "100\n");
    EXPECT_EQ(value(1), "20\n");
    EXPECT_EQ(value(2), "20\n");
    // A looser request changes nothing where a stricter one is live.
    const std::array<unsigned, 3> third{0, 1, 2};
    ASSERT_FALSE(a.add(3, third, 500));
    EXPECT_EQ(value(0), "100\n");
    EXPECT_EQ(value(1), "20\n");
    EXPECT_EQ(value(2), "20\n");
    EXPECT_EQ(a.effective(0), 100U);
    EXPECT_EQ(a.effective(1), 20U);
    EXPECT_EQ(a.effective(3), std::nullopt);
    EXPECT_EQ(value(3), "n/a\n"); // never touched
}

TEST_F(LatencyArbiterTest, ZeroMeansNoLatencyAndIsWrittenAsNa)
{
    LatencyArbiter a(tree.path(), state());
    const std::array<unsigned, 1> cpu0{0};
    ASSERT_FALSE(a.add(1, cpu0, 10));
    ASSERT_FALSE(a.add(2, cpu0, 0));
    EXPECT_EQ(value(0), "n/a\n");
    EXPECT_EQ(a.effective(0), 0U);
    EXPECT_EQ(latencyText(0), "n/a\n");
    EXPECT_EQ(latencyText(7), "7\n");
}

TEST_F(LatencyArbiterTest, RemovingRelaxesThenRestoresByteForByte)
{
    LatencyArbiter a(tree.path(), state());
    const std::array<unsigned, 2> cpus{1, 2};
    ASSERT_FALSE(a.add(1, cpus, 300));
    ASSERT_FALSE(a.add(2, cpus, 0));
    ASSERT_FALSE(a.add(3, cpus, 40));
    EXPECT_EQ(value(1), "n/a\n");
    ASSERT_FALSE(a.remove(2));
    EXPECT_EQ(value(1), "40\n");
    EXPECT_EQ(value(2), "40\n");
    ASSERT_FALSE(a.remove(3));
    // Looser than the administrator's 250 us on CPU 2: the arbiter owns the
    // attribute while a request is live.
    EXPECT_EQ(value(1), "300\n");
    EXPECT_EQ(value(2), "300\n");
    EXPECT_TRUE(tree.exists("run/latency.state"));
    ASSERT_FALSE(a.remove(1));
    EXPECT_EQ(tree.snapshot("sys"), before);
    EXPECT_THAT(a.saved(), IsEmpty());
    EXPECT_FALSE(tree.exists("run/latency.state"));
    EXPECT_EQ(a.remove(1), std::errc::invalid_argument);
}

TEST_F(LatencyArbiterTest, StopRestoresEverything)
{
    {
        LatencyArbiter a(tree.path(), state());
        const std::array<unsigned, 4> all{0, 1, 2, 3};
        const std::array<unsigned, 1> cpu2{2};
        ASSERT_FALSE(a.add(1, all, 5));
        ASSERT_FALSE(a.add(2, cpu2, 0));
        EXPECT_EQ(value(3), "5\n");
        EXPECT_THAT(a.restore(), IsEmpty());
        EXPECT_EQ(tree.snapshot("sys"), before);
        EXPECT_FALSE(tree.exists("run/latency.state"));
        EXPECT_EQ(a.add(3, cpu2, 1), cppc::Errc::backendStopped);
        EXPECT_EQ(a.remove(1), cppc::Errc::backendStopped);
    }
    {
        // The destructor restores too.
        LatencyArbiter a(tree.path(), state());
        const std::array<unsigned, 2> cpus{0, 3};
        ASSERT_FALSE(a.add(1, cpus, 9));
    }
    EXPECT_EQ(tree.snapshot("sys"), before);
    EXPECT_FALSE(tree.exists("run/latency.state"));
}

TEST_F(LatencyArbiterTest, CrashRecoveryFromTheStateFile)
{
    // A process that dies without restoring anything.
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0)
    {
        LatencyArbiter a(tree.path(), state());
        const std::array<unsigned, 3> cpus{0, 2, 3};
        ::_exit(a.add(1, cpus, 12) ? 1 : 0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_EQ(value(0), "12\n");
    EXPECT_EQ(value(3), "12\n");
    EXPECT_EQ(tree.read("run/latency.state"),
              "cppcgov-latency-state 1\ncpu0 0\ncpu2 250\ncpu3 n/a\n");
    // The next start refuses to run over the old state...
    EXPECT_THROW(LatencyArbiter(tree.path(), state()), std::system_error);
    // ...until it is undone.
    const auto report = LatencyArbiter::restoreFromFile(tree.path(), state());
    EXPECT_TRUE(report.found);
    EXPECT_THAT(report.errors, IsEmpty());
    EXPECT_EQ(tree.snapshot("sys"), before);
    EXPECT_FALSE(tree.exists("run/latency.state"));
    EXPECT_FALSE(LatencyArbiter::restoreFromFile(tree.path(), state()).found);
}

TEST_F(LatencyArbiterTest, MalformedStateFileIsKept)
{
    tree.write("run/latency.state", "cppcgov-latency-state 1\ncpu0 -1\n");
    EXPECT_THROW(LatencyArbiter::restoreFromFile(tree.path(), state()),
                 std::system_error);
    EXPECT_TRUE(tree.exists("run/latency.state"));
    EXPECT_EQ(tree.snapshot("sys"), before);
}

TEST_F(LatencyArbiterTest, CpuWithoutTheAttributeChangesNothing)
{
    tree.write("sys/devices/system/cpu/cpu4/online", "1\n");
    const auto tree0 = tree.snapshot();
    LatencyArbiter a(tree.path(), state());
    const std::array<unsigned, 3> cpus{0, 1, 4};
    EXPECT_EQ(a.add(1, cpus, 10), cppc::Errc::noSuchCpu);
    EXPECT_EQ(tree.snapshot(), tree0);
    EXPECT_THAT(a.saved(), IsEmpty());
    EXPECT_EQ(a.effective(0), std::nullopt);
    const std::array<unsigned, 1> huge{cppc::maxCpus};
    EXPECT_EQ(a.add(1, huge, 10), cppc::Errc::noSuchCpu);
    // The id is still free.
    const std::array<unsigned, 1> cpu0{0};
    EXPECT_FALSE(a.add(1, cpu0, 10));
}

TEST_F(LatencyArbiterTest, BadRequestsAreNamedErrors)
{
    LatencyArbiter a(tree.path(), state());
    const std::array<unsigned, 1> cpu0{0};
    EXPECT_EQ(a.add(1, cpu0, maxLatencyUs + 1), cppc::Errc::valueOutOfRange);
    EXPECT_EQ(a.add(1, {}, 10), std::errc::invalid_argument);
    ASSERT_FALSE(a.add(1, cpu0, maxLatencyUs));
    EXPECT_EQ(value(0), "100000000\n");
    EXPECT_EQ(a.add(1, cpu0, 5), std::errc::file_exists);
    EXPECT_EQ(value(0), "100000000\n");
}

TEST_F(LatencyArbiterTest, UnrestorableValueIsRefused)
{
    tree.write(attr(1), "banana\n");
    const auto tree0 = tree.snapshot();
    LatencyArbiter a(tree.path(), state());
    const std::array<unsigned, 2> cpus{0, 1};
    EXPECT_EQ(a.add(1, cpus, 10), cppc::Errc::malformedAttribute);
    EXPECT_EQ(tree.snapshot(), tree0);
}

TEST_F(LatencyArbiterTest, FailedWriteUndoesTheRequest)
{
    LatencyArbiter a(tree.path(), state());
    const std::array<unsigned, 2> cpus{0, 1};
    ASSERT_FALSE(a.add(1, cpus, 100));
    // CPU 1's attribute now refuses writes (EISDIR).
    std::filesystem::remove(tree.path() / attr(1));
    std::filesystem::create_directory(tree.path() / attr(1));
    const std::array<unsigned, 3> more{0, 1, 2};
    EXPECT_EQ(a.add(2, more, 10), std::errc::is_a_directory);
    EXPECT_EQ(value(0), "100\n");
    EXPECT_EQ(value(2), "250\n");
    EXPECT_EQ(a.effective(0), 100U);
    EXPECT_EQ(a.saved().size(), 2U); // CPU 2 was given up again
    EXPECT_EQ(tree.read("run/latency.state"),
              "cppcgov-latency-state 1\ncpu0 0\ncpu1 0\n");
    // Restoring reports the CPU it could not put back and keeps the file.
    const auto errors = a.restore();
    ASSERT_EQ(errors.size(), 1U);
    EXPECT_THAT(errors[0], HasSubstr("cpu1"));
    EXPECT_EQ(value(0), "0\n");
    EXPECT_TRUE(tree.exists("run/latency.state"));
}

TEST(LatencyStateTest, ValuesAndParsing)
{
    EXPECT_TRUE(validLatencyValue("0"));
    EXPECT_TRUE(validLatencyValue("n/a"));
    EXPECT_TRUE(validLatencyValue("2147483646"));
    EXPECT_FALSE(validLatencyValue("2147483647"));
    EXPECT_FALSE(validLatencyValue("-1"));
    EXPECT_FALSE(validLatencyValue("010"));
    EXPECT_FALSE(validLatencyValue(""));
    const std::map<unsigned, std::string> saved{{0, "0"}, {5, "n/a"}};
    EXPECT_EQ(parseLatencyState(formatLatencyState(saved), "f"), saved);
    for (const char* bad :
         {"", "cppcgov-latency-state 2\n", "cppcgov-latency-state 1",
          "cppcgov-latency-state 1\ncpu0 0\ncpu0 1\n",
          "cppcgov-latency-state 1\ncpux 0\n",
          "cppcgov-latency-state 1\ncpu0 0 1\n",
          "cppcgov-latency-state 1\ncpu8192 0\n"})
    {
        EXPECT_THROW(parseLatencyState(bad, "f"), std::system_error) << bad;
    }
}

} // namespace
} // namespace cppcgov::daemon
