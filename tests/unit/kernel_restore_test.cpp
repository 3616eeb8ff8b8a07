// SPDX-License-Identifier: Apache-2.0
// The kernel backend's restore: stopping (normally, by its destructor,
// after a crash or a failed start) leaves the tree exactly as it was
// found; a restore that cannot put everything back keeps exactly what is
// left in the state file until the cause is gone; the order of the writes;
// and the state file's format.
#include "kernel_backend_test_support.hpp"
#include "lib/backend/kernel.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"
#include "run_in_child.hpp"
#include "unkind_io.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using cppc::test::exitStatusOf;
using cppc::test::UnkindIo;
using test::Machine;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(KernelBackendTest, AfterRestoreTheTreeIsByteForByteAsFound)
{
    Machine m;
    const auto before = m.kernelView();
    KernelBackend b(m.root(), {{}, m.stateFile()});
    ASSERT_FALSE(b.setPerf(0, 0x1800).error);
    ASSERT_FALSE(b.setPerf(4, 100).error);
    ASSERT_FALSE(b.setPerf(5, 900).error);
    ASSERT_FALSE(b.setLimits(0, 0x1000, 0x1800).error);
    ASSERT_FALSE(b.setLimits(4, 100, 150).error);
    ASSERT_FALSE(b.setLimits(5, 100, 1000).error);
    ASSERT_NE(m.kernelView(), before);
    EXPECT_THAT(b.restore().entries(), IsEmpty());
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
    EXPECT_THAT(b.restore().entries(), IsEmpty()); // once only
}

TEST(KernelBackendTest, TheDestructorRestores)
{
    Machine m;
    const auto before = m.kernelView();
    {
        KernelBackend b(m.root(), {{}, m.stateFile()});
        ASSERT_FALSE(b.setPerf(2, 0x1000).error);
        ASSERT_FALSE(b.setLimits(4, 10, 255).error);
        ASSERT_NE(m.kernelView(), before);
    }
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
}

// A run that changes every policy and dies without unwinding: the tree is
// left changed, and the state file records what it was.
void crash(const Machine& m)
{
    ASSERT_EQ(exitStatusOf([&m] {
                  KernelBackend b(m.root(), {{}, m.stateFile()});
                  const bool ok =
                      !b.setPerf(0, 0x1800).error && !b.setPerf(4, 100).error &&
                      !b.setLimits(0, 0x1000, 0x1800).error &&
                      !b.setLimits(5, 500, 900).error;
                  ::_exit(ok ? 0 : 1);
              }),
              0);
    ASSERT_TRUE(m.tree.exists("run/cpufreq.state"));
}

TEST(KernelBackendTest, ACrashIsUndoneFromTheStateFile)
{
    Machine m;
    const auto before = m.kernelView();
    ASSERT_NO_FATAL_FAILURE(crash(m));
    ASSERT_NE(m.kernelView(), before);

    // A new start must not overwrite the record of the original state.
    try
    {
        KernelBackend b(m.root(), {{}, m.stateFile()});
        FAIL() << "started over an unrestored state file";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), std::errc::file_exists);
        EXPECT_THAT(e.what(), HasSubstr(m.stateFile().string()));
    }

    const RestoreResult r =
        KernelBackend::restoreFromFile(m.root(), m.stateFile());
    EXPECT_FALSE(r.anythingLeft());
    ASSERT_THAT(r.entries(), SizeIs(1));
    EXPECT_EQ(r.entries()[0].step, RestoreStep::putBack);
    EXPECT_EQ(r.entries()[0].severity, RestoreSeverity::notice);
    EXPECT_THAT(describe(r.entries()[0]),
                AllOf(HasSubstr("restored the cpufreq settings"),
                      HasSubstr("'" + m.stateFile().string() + "'")));
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
    // Nothing left to do: nothing to say.
    EXPECT_THAT(
        KernelBackend::restoreFromFile(m.root(), m.stateFile()).entries(),
        IsEmpty());
}

TEST(KernelBackendTest, AFailedStartPutsBackWhatItChanged)
{
    Machine m;
    const auto before = m.kernelView();
    // policy5's governor cannot be written: policy0 and policy4 are
    // switched (or kept) first, then the start fails and must undo them.
    // Root writes through permissions, so the child gives them up.
    std::filesystem::permissions(
        m.sys.path(),
        std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
            std::filesystem::perms::group_exec |
            std::filesystem::perms::others_read |
            std::filesystem::perms::others_exec);
    for (const auto& e :
         std::filesystem::recursive_directory_iterator(m.sys.path()))
    {
        if (e.is_regular_file() && !e.is_symlink())
        {
            std::filesystem::permissions(
                e.path(), std::filesystem::perms::owner_read |
                              std::filesystem::perms::owner_write |
                              std::filesystem::perms::group_read |
                              std::filesystem::perms::group_write |
                              std::filesystem::perms::others_read |
                              std::filesystem::perms::others_write);
        }
    }
    std::filesystem::permissions(
        m.root() / "sys/devices/system/cpu/cpufreq/policy5/scaling_governor",
        std::filesystem::perms::owner_read |
            std::filesystem::perms::group_read |
            std::filesystem::perms::others_read);
    const int status = exitStatusOf([&m] {
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
        {
            ::_exit(3);
        }
        try
        {
            KernelBackend b(m.root());
            ::_exit(1);
        }
        catch (const std::system_error& e)
        {
            const bool named =
                std::string_view(e.what()).find("policy5/scaling_governor'") !=
                std::string_view::npos;
            ::_exit(e.code() == std::errc::permission_denied && named ? 0 : 2);
        }
    });
    EXPECT_EQ(status, 0);
    EXPECT_EQ(m.kernelView(), before);
}

// ---------------------------------------------------------------------------
// Restores that cannot put everything back: the state file keeps exactly
// the policies that are not back, a start refuses over it, and once the
// cause is gone a restore from it finishes the job.

// `view` without the files of policy `number`.
std::map<std::string, std::string> withoutPolicy(
    std::map<std::string, std::string> view, unsigned number)
{
    const std::string dir = "/cpufreq/policy" + std::to_string(number) + "/";
    std::erase_if(view, [&dir](const auto& entry) {
        return entry.first.find(dir) != std::string::npos;
    });
    return view;
}

// Whether a start refuses over the state file (and so never records what a
// failed restore left in place as the original).
bool startRefused(const Machine& m)
{
    try
    {
        KernelBackend b(m.root(), {{}, m.stateFile()});
        return false;
    }
    catch (const std::system_error& e)
    {
        return e.code() == std::errc::file_exists;
    }
}

TEST(KernelRestoreTest, AtStopAnOfflinePolicyStaysInTheStateFileUntilBack)
{
    Machine m;
    UnkindIo io;
    const auto before = m.kernelView();
    std::optional<KernelBackend> b;
    b.emplace(m.root(), KernelBackendOptions{{}, m.stateFile(), &io});
    ASSERT_FALSE(b->setPerf(0, 0x1800).error);
    ASSERT_FALSE(b->setLimits(4, 100, 150).error);
    ASSERT_FALSE(b->setLimits(5, 500, 900).error);
    const PolicyState found0 = b->saved()[0];
    ASSERT_EQ(found0.governor, "schedutil");

    // Every CPU of policy0 goes offline before the stop.
    io.offline(m.policyDir(0));
    const RestoreResult r = b->restore();
    EXPECT_TRUE(r.anythingLeft());
    EXPECT_TRUE(r.isLeft("policy0"));
    ASSERT_THAT(r.failures(), SizeIs(3));
    for (const RestoreEntry& e : r.failures())
    {
        EXPECT_EQ(e.record, "policy0");
        EXPECT_EQ(e.step, RestoreStep::writeSaved);
        EXPECT_EQ(e.error, std::errc::device_or_resource_busy);
    }
    EXPECT_THAT(r.leftFiles(),
                ElementsAre(m.policyDir(0) / "scaling_min_freq",
                            m.policyDir(0) / "scaling_max_freq",
                            m.policyDir(0) / "scaling_governor"));
    EXPECT_THAT(
        describe(r.failures().back()),
        AllOf(HasSubstr("writing the saved value 'schedutil' to '" +
                        (m.policyDir(0) / "scaling_governor").string() + "'"),
              HasSubstr("Device or resource busy")));
    // The state file holds exactly policy0, as it was found; the others
    // are back.
    EXPECT_EQ(m.tree.read("run/cpufreq.state"), formatState({found0}));
    EXPECT_THAT(r.keptStateFiles(), ElementsAre(m.stateFile()));
    EXPECT_THAT(b->saved(), ElementsAre(found0));
    EXPECT_EQ(withoutPolicy(m.kernelView(), 0), withoutPolicy(before, 0));
    b.reset(); // the destructor does not restore twice
    EXPECT_EQ(m.tree.read("run/cpufreq.state"), formatState({found0}));

    // The CPUs come back with the policy as the backend left it.
    io.online(m.policyDir(0));
    EXPECT_EQ(m.policyFile(0, "scaling_governor"), "userspace\n");
    EXPECT_TRUE(startRefused(m));
    const RestoreResult again =
        KernelBackend::restoreFromFile(m.root(), m.stateFile(), io);
    EXPECT_FALSE(again.anythingLeft());
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
    KernelBackend next(m.root(), {{}, m.stateFile()});
    EXPECT_EQ(next.saved()[0], found0);
}

// One way for a restore to fail, and what takes the cause away.
struct Breakage
{
    const char* what;
    unsigned policy;
    const char* file;
    std::errc error;
    std::function<void(const Machine&, UnkindIo&)> cause;
    std::function<void(const Machine&, UnkindIo&)> fix;
};

std::vector<Breakage> breakages()
{
    const auto path = [](const Machine& m, unsigned policy, const char* name) {
        return m.policyDir(policy) / name;
    };
    return {
        {"a read-only file", 5, "scaling_governor",
         std::errc::permission_denied,
         [=](const Machine& m, UnkindIo& io) {
        io.readOnly(path(m, 5, "scaling_governor"));
         },
         [=](const Machine& m, UnkindIo& io) {
        io.writable(path(m, 5, "scaling_governor"));
        }},
        {"a vanished file", 4, "scaling_max_freq",
         std::errc::no_such_file_or_directory,
         [=](const Machine& m, UnkindIo&) {
        std::filesystem::remove(path(m, 4, "scaling_max_freq"));
         },
         [](const Machine& m, UnkindIo&) {
        m.setPolicyFile(4, "scaling_max_freq", "1\n");
        }},
        {"a directory in the file's place", 0, "scaling_min_freq",
         std::errc::is_a_directory,
         [=](const Machine& m, UnkindIo&) {
        std::filesystem::remove(path(m, 0, "scaling_min_freq"));
        std::filesystem::create_directory(path(m, 0, "scaling_min_freq"));
         },
         [=](const Machine& m, UnkindIo&) {
        std::filesystem::remove(path(m, 0, "scaling_min_freq"));
        m.setPolicyFile(0, "scaling_min_freq", "1\n");
        }},
        {"every CPU of the policy offline", 0, "scaling_governor",
         std::errc::device_or_resource_busy,
         [](const Machine& m, UnkindIo& io) { io.offline(m.policyDir(0)); },
         [](const Machine& m, UnkindIo& io) { io.online(m.policyDir(0)); }},
        };
}

TEST(KernelRestoreTest, AfterACrashFixItAndRunAgain)
{
    for (const Breakage& b : breakages())
    {
        SCOPED_TRACE(b.what);
        Machine m;
        UnkindIo io;
        const auto before = m.kernelView();
        ASSERT_NO_FATAL_FAILURE(crash(m));
        const std::string name = "policy" + std::to_string(b.policy);
        std::vector<PolicyState> recorded =
            parseState(m.tree.read("run/cpufreq.state"), m.stateFile());
        std::erase_if(recorded,
                      [&name](const PolicyState& p) { return p.name != name; });
        ASSERT_THAT(recorded, SizeIs(1));
        const std::string left = formatState(recorded);
        b.cause(m, io);

        // The restore fails on that policy only, and says so; the state
        // file then holds exactly that policy. Running it again before the
        // fix changes nothing.
        for (int attempt = 0; attempt < 2; ++attempt)
        {
            const RestoreResult r =
                KernelBackend::restoreFromFile(m.root(), m.stateFile(), io);
            EXPECT_TRUE(r.anythingLeft());
            EXPECT_TRUE(r.isLeft(name));
            ASSERT_FALSE(r.failures().empty());
            for (const RestoreEntry& e : r.failures())
            {
                EXPECT_EQ(e.record, name);
                EXPECT_EQ(e.step, RestoreStep::writeSaved);
                EXPECT_EQ(e.error, b.error) << describe(e);
            }
            EXPECT_THAT(r.leftFiles(),
                        testing::Contains(m.policyDir(b.policy) / b.file));
            EXPECT_THAT(r.keptStateFiles(), ElementsAre(m.stateFile()));
            EXPECT_EQ(m.tree.read("run/cpufreq.state"), left);
            EXPECT_EQ(withoutPolicy(m.kernelView(), b.policy),
                      withoutPolicy(before, b.policy));
            EXPECT_TRUE(startRefused(m));
        }

        b.fix(m, io);
        const RestoreResult r =
            KernelBackend::restoreFromFile(m.root(), m.stateFile(), io);
        EXPECT_FALSE(r.anythingLeft());
        EXPECT_EQ(m.kernelView(), before);
        EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
        // A start now records the original, not what the crash left.
        KernelBackend next(m.root(), {{}, m.stateFile()});
        EXPECT_THAT(next.saved(), testing::Contains(recorded[0]));
    }
}

TEST(KernelRestoreTest, AStateFileThatCannotBeRewrittenStaysAsItWas)
{
    Machine m;
    UnkindIo io;
    ASSERT_NO_FATAL_FAILURE(crash(m));
    const std::string recorded = m.tree.read("run/cpufreq.state");
    io.offline(m.policyDir(4));
    // The directory refuses the temporary file: the rewrite fails and the
    // old file, which holds more than is left, stays whole.
    std::filesystem::create_directory(m.tree.path() / "run/cpufreq.state.tmp");
    const RestoreResult r =
        KernelBackend::restoreFromFile(m.root(), m.stateFile(), io);
    EXPECT_TRUE(r.isLeft("policy4"));
    ASSERT_FALSE(r.failures().empty());
    EXPECT_EQ(r.failures().back().step, RestoreStep::keepStateFile);
    EXPECT_EQ(r.failures().back().detail, "policy4");
    EXPECT_EQ(m.tree.read("run/cpufreq.state"), recorded);
    EXPECT_THAT(r.keptStateFiles(), ElementsAre(m.stateFile()));
}

// ---------------------------------------------------------------------------
// Restore order, observed with inotify: every write closes the attribute,
// and IN_CLOSE_WRITE events arrive in order.

class WriteOrder
{
  public:
    explicit WriteOrder(const std::filesystem::path& dir) :
        fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
    {
        if (fd_ < 0 ||
            ::inotify_add_watch(fd_, dir.c_str(), IN_CLOSE_WRITE) < 0)
        {
            throw std::system_error(errno, std::system_category(), "inotify");
        }
    }
    WriteOrder(const WriteOrder&) = delete;
    WriteOrder& operator=(const WriteOrder&) = delete;
    ~WriteOrder()
    {
        ::close(fd_);
    }

    std::vector<std::string> names()
    {
        std::vector<std::string> out;
        alignas(inotify_event) std::array<char, 8192> buf{};
        for (;;)
        {
            const ssize_t n = ::read(fd_, buf.data(), buf.size());
            if (n <= 0)
            {
                return out;
            }
            for (ssize_t at = 0; at < n;)
            {
                inotify_event ev{};
                std::memcpy(&ev, buf.data() + at, sizeof ev);
                out.emplace_back(buf.data() + at + sizeof ev);
                at += static_cast<ssize_t>(sizeof ev + ev.len);
            }
        }
    }

  private:
    int fd_;
};

TEST(RestoreOrderTest, RaisingTheMinimumAboveTheMaximumWritesMaximumFirst)
{
    Machine m;
    // Current: userspace, 800000-1000000. Saved: schedutil, 1800000-2500000.
    m.setPolicyFile(0, "scaling_governor", "userspace\n");
    m.setPolicyFile(0, "scaling_max_freq", "1000000\n");
    WriteOrder order(m.root() / "sys/devices/system/cpu/cpufreq/policy0");
    const std::vector<PolicyState> saved{
        {"policy0", "schedutil", 1800000, 2500000, std::nullopt}};
    EXPECT_THAT(restorePolicies(m.root(), saved).entries(), IsEmpty());
    EXPECT_THAT(order.names(),
                ElementsAre("scaling_max_freq", "scaling_min_freq",
                            "scaling_governor"));
    EXPECT_EQ(m.policyFile(0, "scaling_min_freq"), "1800000\n");
    EXPECT_EQ(m.policyFile(0, "scaling_max_freq"), "2500000\n");
    EXPECT_EQ(m.policyFile(0, "scaling_governor"), "schedutil\n");
}

TEST(RestoreOrderTest, LoweringTheMaximumWritesMinimumFirstThenSetSpeed)
{
    Machine m;
    // Current: userspace, 1800000-2500000. Saved: userspace at 900000 in
    // 800000-1000000; the governor needs no write.
    m.setPolicyFile(0, "scaling_governor", "userspace\n");
    m.setPolicyFile(0, "scaling_min_freq", "1800000\n");
    WriteOrder order(m.root() / "sys/devices/system/cpu/cpufreq/policy0");
    const std::vector<PolicyState> saved{
        {"policy0", "userspace", 800000, 1000000, 900000}};
    EXPECT_THAT(restorePolicies(m.root(), saved).entries(), IsEmpty());
    EXPECT_THAT(order.names(),
                ElementsAre("scaling_min_freq", "scaling_max_freq",
                            "scaling_setspeed"));
    EXPECT_EQ(m.policyFile(0, "scaling_setspeed"), "900000\n");
}

TEST(RestoreOrderTest, UserspaceComesFirstAndValuesInPlaceAreNotRewritten)
{
    Machine m;
    // Someone switched policy0 to schedutil; the saved governor was
    // userspace, and the limits are already right.
    WriteOrder order(m.root() / "sys/devices/system/cpu/cpufreq/policy0");
    const std::vector<PolicyState> saved{
        {"policy0", "userspace", 800000, 2500000, 1000000}};
    EXPECT_THAT(restorePolicies(m.root(), saved).entries(), IsEmpty());
    EXPECT_THAT(order.names(),
                ElementsAre("scaling_governor", "scaling_setspeed"));
}

TEST(RestoreOrderTest, FailuresAreCollectedAndTheRestCarriesOn)
{
    Machine m;
    m.setPolicyFile(4, "scaling_governor", "schedutil\n");
    const std::vector<PolicyState> saved{
        {"policy9", "schedutil", 1, 2, std::nullopt},
        {"policy4", "userspace", 1421052, 3000000, 2000000}};
    const RestoreResult r = restorePolicies(m.root(), saved);
    ASSERT_TRUE(r.anythingLeft());
    EXPECT_TRUE(r.isLeft("policy9"));
    EXPECT_FALSE(r.isLeft("policy4"));
    for (const RestoreEntry& e : r.entries())
    {
        EXPECT_EQ(e.record, "policy9");
        EXPECT_THAT(e.file.string(), HasSubstr("policy9/"));
        EXPECT_EQ(e.error, std::errc::no_such_file_or_directory);
        // Reads of what is in place only warn: the write decides.
        EXPECT_EQ(e.severity, e.step == RestoreStep::readCurrent
                                  ? RestoreSeverity::warning
                                  : RestoreSeverity::failure);
    }
    // Each step says which it was.
    EXPECT_THAT(describe(r.failures().front()),
                AllOf(HasSubstr("writing the saved value '"),
                      HasSubstr("policy9/scaling_"),
                      HasSubstr("No such file or directory")));
    EXPECT_EQ(m.policyFile(4, "scaling_governor"), "userspace\n");
}

// ---------------------------------------------------------------------------
// The state file

TEST(StateFileTest, RoundTrips)
{
    const std::vector<PolicyState> saved{
        {"policy0", "schedutil", 800000, 2500000, std::nullopt},
        {"policy12", "userspace", 1, 4294967295U, 1800000}};
    const std::string text = formatState(saved);
    EXPECT_EQ(text, "cppcgov-cpufreq-state 1\n"
                    "policy0 schedutil 800000 2500000 -\n"
                    "policy12 userspace 1 4294967295 1800000\n");
    EXPECT_EQ(parseState(text, "/s"), saved);
    EXPECT_THAT(parseState("cppcgov-cpufreq-state 1\n", "/s"), IsEmpty());
}

TEST(StateFileTest, ParsingIsStrict)
{
    const std::string h = "cppcgov-cpufreq-state 1\n";
    for (const std::string& bad :
         {std::string(), std::string("cppcgov-cpufreq-state 2\n"),
          h + "policy0 schedutil 1 2 -",     // no final newline
          h + "policy0 schedutil 1 2 3\n",   // set speed, not userspace
          h + "policy0 userspace 1 2 -\n",   // userspace without one
          h + "policy0 schedutil 1 2 - x\n", // extra field
          h + "policy0 schedutil 1 2\n",     // missing field
          h + "cpu0 schedutil 1 2 -\n",      // not a policy
          h + "policy0 sched util 1 2 -\n",  //
          h + "policy0 Schedutil 1 2 -\n",   // governor names are lower case
          h + "policy0 schedutil 4294967296 2 -\n", // above 32 bits
          h + "policy0 schedutil -1 2 -\n", h + "policy0  schedutil 1 2 -\n",
          h + "\n"})
    {
        try
        {
            (void)parseState(bad, "/run/state");
            ADD_FAILURE() << "accepted '" << bad << "'";
        }
        catch (const std::system_error& e)
        {
            EXPECT_EQ(e.code(), Errc::malformedAttribute);
            EXPECT_THAT(e.what(), HasSubstr("'/run/state'"));
        }
    }
}

TEST(StateFileTest, AMalformedFileIsKeptAndNamed)
{
    Machine m;
    m.tree.write("run/cpufreq.state", "garbage\n");
    const RestoreResult r =
        KernelBackend::restoreFromFile(m.root(), m.stateFile());
    ASSERT_THAT(r.failures(), SizeIs(1));
    EXPECT_EQ(r.failures()[0].step, RestoreStep::parseStateFile);
    EXPECT_EQ(r.failures()[0].error, Errc::malformedAttribute);
    EXPECT_THAT(describe(r.failures()[0]),
                HasSubstr("'" + m.stateFile().string() + "'"));
    EXPECT_THAT(r.keptStateFiles(), ElementsAre(m.stateFile()));
    EXPECT_EQ(m.tree.read("run/cpufreq.state"), "garbage\n");
}

} // namespace
} // namespace cppc::backend
