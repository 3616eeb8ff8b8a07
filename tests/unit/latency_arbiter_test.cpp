// SPDX-License-Identifier: Apache-2.0
// The latency arbiter on a fake sysfs tree: the strictest request wins per
// CPU, 0 us is written as "n/a", ending requests relaxes to the next
// strictest and finally restores what was found, and stopping (normally or
// after a crash) leaves the tree exactly as it was found.
#include "daemon/latency_arbiter.hpp"
#include "lib/error.hpp"
#include "run_in_child.hpp"
#include "temp_tree.hpp"
#include "unkind_io.hpp"

#include <unistd.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <functional>
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

using cppc::backend::RestoreResult;
using cppc::backend::RestoreStep;
using cppc::test::TempTree;
using cppc::test::UnkindIo;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

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
        tree_.write(attr(0), "0\n");
        tree_.write(attr(1), "0\n");
        tree_.write(attr(2), "250\n");
        tree_.write(attr(3), "n/a\n");
        tree_.write("run/.keep", "");
        before_ = tree_.snapshot("sys");
    }

    std::filesystem::path state() const
    {
        return tree_.path() / "run" / "latency.state";
    }

    std::string value(unsigned cpu) const
    {
        return tree_.read(attr(cpu));
    }

    std::filesystem::path file(unsigned cpu) const
    {
        return tree_.path() / attr(cpu);
    }

    // A process that requests 12 us on CPUs 0, 2 and 3 and dies without
    // restoring anything.
    void crash() const
    {
        ASSERT_EQ(cppc::test::exitStatusOf([this] {
                      LatencyArbiter a(tree_.path(), state());
                      const std::array<unsigned, 3> cpus{0, 2, 3};
                      ::_exit(a.add(1, cpus, 12) ? 1 : 0);
                  }),
                  0);
    }

    // Whether a start refuses over the state file.
    bool startRefused() const
    {
        try
        {
            LatencyArbiter a(tree_.path(), state());
            return false;
        }
        catch (const std::system_error& e)
        {
            return e.code() == std::errc::file_exists;
        }
    }

    TempTree tree_;
    std::map<std::string, std::string> before_;
};

TEST_F(LatencyArbiterTest, StrictestRequestWinsAcrossOverlaps)
{
    LatencyArbiter a(tree_.path(), state());
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
    LatencyArbiter a(tree_.path(), state());
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
    LatencyArbiter a(tree_.path(), state());
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
    EXPECT_TRUE(tree_.exists("run/latency.state"));
    ASSERT_FALSE(a.remove(1));
    EXPECT_EQ(tree_.snapshot("sys"), before_);
    EXPECT_THAT(a.saved(), IsEmpty());
    EXPECT_FALSE(tree_.exists("run/latency.state"));
    EXPECT_EQ(a.remove(1), std::errc::invalid_argument);
}

TEST_F(LatencyArbiterTest, StopRestoresEverything)
{
    {
        LatencyArbiter a(tree_.path(), state());
        const std::array<unsigned, 4> all{0, 1, 2, 3};
        const std::array<unsigned, 1> cpu2{2};
        ASSERT_FALSE(a.add(1, all, 5));
        ASSERT_FALSE(a.add(2, cpu2, 0));
        EXPECT_EQ(value(3), "5\n");
        EXPECT_THAT(a.restore().entries(), IsEmpty());
        EXPECT_EQ(tree_.snapshot("sys"), before_);
        EXPECT_FALSE(tree_.exists("run/latency.state"));
        EXPECT_EQ(a.add(3, cpu2, 1), cppc::Errc::backendStopped);
        EXPECT_EQ(a.remove(1), cppc::Errc::backendStopped);
    }
    {
        // The destructor restores too.
        LatencyArbiter a(tree_.path(), state());
        const std::array<unsigned, 2> cpus{0, 3};
        ASSERT_FALSE(a.add(1, cpus, 9));
    }
    EXPECT_EQ(tree_.snapshot("sys"), before_);
    EXPECT_FALSE(tree_.exists("run/latency.state"));
}

TEST_F(LatencyArbiterTest, CrashRecoveryFromTheStateFile)
{
    ASSERT_NO_FATAL_FAILURE(crash());
    EXPECT_EQ(value(0), "12\n");
    EXPECT_EQ(value(3), "12\n");
    EXPECT_EQ(tree_.read("run/latency.state"),
              "cppcgov-latency-state 1\ncpu0 0\ncpu2 250\ncpu3 n/a\n");
    // The next start refuses to run over the old state...
    EXPECT_THROW(LatencyArbiter(tree_.path(), state()), std::system_error);
    // ...until it is undone.
    const RestoreResult r =
        LatencyArbiter::restoreFromFile(tree_.path(), state());
    EXPECT_FALSE(r.anythingLeft());
    ASSERT_THAT(r.entries(), SizeIs(1));
    EXPECT_EQ(r.entries()[0].step, RestoreStep::putBack);
    EXPECT_THAT(describe(r.entries()[0]),
                HasSubstr("restored the resume latencies"));
    EXPECT_EQ(tree_.snapshot("sys"), before_);
    EXPECT_FALSE(tree_.exists("run/latency.state"));
    EXPECT_THAT(
        LatencyArbiter::restoreFromFile(tree_.path(), state()).entries(),
        IsEmpty());
}

TEST_F(LatencyArbiterTest, MalformedStateFileIsKept)
{
    tree_.write("run/latency.state", "cppcgov-latency-state 1\ncpu0 -1\n");
    const RestoreResult r =
        LatencyArbiter::restoreFromFile(tree_.path(), state());
    ASSERT_THAT(r.failures(), SizeIs(1));
    EXPECT_EQ(r.failures()[0].step, RestoreStep::parseStateFile);
    EXPECT_THAT(describe(r.failures()[0]),
                AllOf(HasSubstr(state().string()), HasSubstr("cpu0 -1")));
    EXPECT_EQ(tree_.read("run/latency.state"),
              "cppcgov-latency-state 1\ncpu0 -1\n");
    EXPECT_EQ(tree_.snapshot("sys"), before_);
}

TEST_F(LatencyArbiterTest, CpuWithoutTheAttributeChangesNothing)
{
    tree_.write("sys/devices/system/cpu/cpu4/online", "1\n");
    const auto tree0 = tree_.snapshot();
    LatencyArbiter a(tree_.path(), state());
    const std::array<unsigned, 3> cpus{0, 1, 4};
    EXPECT_EQ(a.add(1, cpus, 10), cppc::Errc::noSuchCpu);
    EXPECT_EQ(tree_.snapshot(), tree0);
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
    LatencyArbiter a(tree_.path(), state());
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
    tree_.write(attr(1), "banana\n");
    const auto tree0 = tree_.snapshot();
    LatencyArbiter a(tree_.path(), state());
    const std::array<unsigned, 2> cpus{0, 1};
    EXPECT_EQ(a.add(1, cpus, 10), cppc::Errc::malformedAttribute);
    EXPECT_EQ(tree_.snapshot(), tree0);
}

TEST_F(LatencyArbiterTest, FailedWriteUndoesTheRequest)
{
    LatencyArbiter a(tree_.path(), state());
    const std::array<unsigned, 2> cpus{0, 1};
    ASSERT_FALSE(a.add(1, cpus, 100));
    // CPU 1's attribute now refuses writes (EISDIR).
    std::filesystem::remove(tree_.path() / attr(1));
    std::filesystem::create_directory(tree_.path() / attr(1));
    const std::array<unsigned, 3> more{0, 1, 2};
    EXPECT_EQ(a.add(2, more, 10), std::errc::is_a_directory);
    EXPECT_EQ(value(0), "100\n");
    EXPECT_EQ(value(2), "250\n");
    EXPECT_EQ(a.effective(0), 100U);
    EXPECT_EQ(a.saved().size(), 2U); // CPU 2 was given up again
    EXPECT_EQ(tree_.read("run/latency.state"),
              "cppcgov-latency-state 1\ncpu0 0\ncpu1 0\n");
    // Restoring reports the CPU it could not put back, and the state file
    // keeps that CPU only.
    const RestoreResult r = a.restore();
    ASSERT_THAT(r.failures(), SizeIs(1));
    EXPECT_EQ(r.failures()[0].record, "cpu1");
    EXPECT_EQ(r.failures()[0].error, std::errc::is_a_directory);
    EXPECT_EQ(value(0), "0\n");
    EXPECT_EQ(tree_.read("run/latency.state"),
              "cppcgov-latency-state 1\ncpu1 0\n");
}

// One way for a CPU's attribute to refuse the saved value, and what takes
// the cause away. (A CPU going offline is not one: its
// pm_qos_resume_latency_us belongs to the CPU device, which stays, and
// takes writes while the CPU is offline.)
void putFile(const std::filesystem::path& file, const char* text)
{
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    ASSERT_TRUE(out.flush()) << file;
}

struct Breakage
{
    const char* what;
    std::errc error;
    std::function<void(const std::filesystem::path&, UnkindIo&)> cause;
    std::function<void(const std::filesystem::path&, UnkindIo&)> fix;
};

std::vector<Breakage> breakages()
{
    return {
        {"a read-only file", std::errc::permission_denied,
         [](const std::filesystem::path& f, UnkindIo& io) { io.readOnly(f); },
         [](const std::filesystem::path& f, UnkindIo& io) { io.writable(f); }},
        // The CPU was removed (its directory goes with it) and comes back
        // with the kernel's default.
        {"a vanished file", std::errc::no_such_file_or_directory,
         [](const std::filesystem::path& f, UnkindIo&) {
        std::filesystem::remove_all(f.parent_path().parent_path());
         },
         [](const std::filesystem::path& f, UnkindIo&) {
        std::filesystem::create_directories(f.parent_path());
        putFile(f, "0\n");
        }},
        {"a directory in the file's place", std::errc::is_a_directory,
         [](const std::filesystem::path& f, UnkindIo&) {
        std::filesystem::remove(f);
        std::filesystem::create_directory(f);
         },
         [](const std::filesystem::path& f, UnkindIo&) {
        std::filesystem::remove(f);
        putFile(f, "0\n");
        }},
        };
}

TEST_F(LatencyArbiterTest, StopKeepsExactlyTheCpusNotBackUntilTheyAre)
{
    UnkindIo io;
    std::optional<LatencyArbiter> a;
    a.emplace(tree_.path(), state(), io);
    const std::array<unsigned, 4> all{0, 1, 2, 3};
    ASSERT_FALSE(a->add(1, all, 7));
    const std::vector<Breakage> kinds = breakages();
    // CPU 1 read-only, CPU 2 vanished, CPU 3 a directory.
    for (unsigned cpu = 1; cpu <= 3; ++cpu)
    {
        kinds[cpu - 1].cause(file(cpu), io);
    }
    const RestoreResult r = a->restore();
    EXPECT_TRUE(r.anythingLeft());
    const std::vector<cppc::backend::RestoreEntry> failures = r.failures();
    ASSERT_THAT(failures, SizeIs(3));
    for (unsigned cpu = 1; cpu <= 3; ++cpu)
    {
        const cppc::backend::RestoreEntry& e = failures[cpu - 1];
        SCOPED_TRACE(kinds[cpu - 1].what);
        EXPECT_EQ(e.record, "cpu" + std::to_string(cpu));
        EXPECT_EQ(e.step, RestoreStep::writeSaved);
        EXPECT_EQ(e.file, file(cpu));
        EXPECT_EQ(e.error, kinds[cpu - 1].error);
    }
    EXPECT_THAT(describe(r.failures()[0]),
                AllOf(HasSubstr("writing the saved value '0' to '" +
                                file(1).string() + "'"),
                      HasSubstr("Permission denied")));
    EXPECT_EQ(value(0), "0\n");
    EXPECT_EQ(tree_.read("run/latency.state"),
              "cppcgov-latency-state 1\ncpu1 0\ncpu2 250\ncpu3 n/a\n");
    EXPECT_EQ(a->saved().size(), 3U);
    EXPECT_THAT(r.keptStateFiles(), ElementsAre(state()));
    a.reset(); // the destructor does not restore twice
    EXPECT_TRUE(startRefused());

    // Fixed one at a time: each run puts back what it can and keeps the rest.
    kinds[0].fix(file(1), io);
    EXPECT_TRUE(LatencyArbiter::restoreFromFile(tree_.path(), state(), io)
                    .anythingLeft());
    EXPECT_EQ(value(1), "0\n");
    EXPECT_EQ(tree_.read("run/latency.state"),
              "cppcgov-latency-state 1\ncpu2 250\ncpu3 n/a\n");
    kinds[1].fix(file(2), io);
    kinds[2].fix(file(3), io);
    const RestoreResult done =
        LatencyArbiter::restoreFromFile(tree_.path(), state(), io);
    EXPECT_FALSE(done.anythingLeft());
    EXPECT_EQ(tree_.snapshot("sys"), before_);
    EXPECT_FALSE(tree_.exists("run/latency.state"));
    EXPECT_FALSE(startRefused());
}

TEST_F(LatencyArbiterTest, AfterACrashFixItAndRunAgain)
{
    for (const Breakage& b : breakages())
    {
        SCOPED_TRACE(b.what);
        ASSERT_NO_FATAL_FAILURE(crash());
        UnkindIo io;
        b.cause(file(2), io);
        for (int attempt = 0; attempt < 2; ++attempt)
        {
            const RestoreResult r =
                LatencyArbiter::restoreFromFile(tree_.path(), state(), io);
            ASSERT_THAT(r.failures(), SizeIs(1));
            EXPECT_EQ(r.failures()[0].record, "cpu2");
            EXPECT_EQ(r.failures()[0].error, b.error);
            EXPECT_THAT(r.leftFiles(), ElementsAre(file(2)));
            EXPECT_EQ(tree_.read("run/latency.state"),
                      "cppcgov-latency-state 1\ncpu2 250\n");
            EXPECT_EQ(value(0), "0\n");
            EXPECT_EQ(value(3), "n/a\n");
            EXPECT_TRUE(startRefused());
        }
        b.fix(file(2), io);
        EXPECT_FALSE(LatencyArbiter::restoreFromFile(tree_.path(), state(), io)
                         .anythingLeft());
        EXPECT_EQ(tree_.snapshot("sys"), before_);
        EXPECT_FALSE(tree_.exists("run/latency.state"));
        EXPECT_FALSE(startRefused());
    }
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
