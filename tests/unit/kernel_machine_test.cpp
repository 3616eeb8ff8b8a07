// SPDX-License-Identifier: Apache-2.0
// The kernel backend on a fake sysfs tree: scaling_setspeed per policy, the
// controls it offers, delivered performance from the feedback counters, and
// that it leaves the tree as it found it, also after a crash.
#include "daemon/machines.hpp"
#include "daemon/machines/kernel_machine.hpp"
#include "lib/error.hpp"
#include "machine_test_support.hpp"
#include "pcc_test_support.hpp"
#include "run_in_child.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::test::exitStatusOf;
using cppc::test::TempTree;
using policies::Coordination;
using test::desiredOf;
using test::errorOf;
using test::FakeKernel;
using test::writeProcStat;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(KernelMachineTest, SetsScalingSetspeedAndRestoresTheTreeByteForByte)
{
    FakeKernel k;
    const auto before = k.kernelView();
    std::unique_ptr<Machine> m =
        makeMachine(k.config(), k.sys.path(), k.stateDir());
    EXPECT_EQ(m->name(), "kernel");
    EXPECT_TRUE(k.state.exists("kernel.state"));
    EXPECT_EQ(k.policyFile(0, "scaling_governor"), "userspace\n");

    const auto& t = m->topology();
    ASSERT_THAT(t.cpus, SizeIs(5));
    ASSERT_THAT(t.domains, SizeIs(2));
    EXPECT_THAT(t.domains[0].cpus, ElementsAre(0, 1, 2, 3));
    EXPECT_EQ(t.domains[0].coordination, Coordination::shared);
    EXPECT_EQ(t.cpus[2].highest, 0x2000U);
    EXPECT_EQ(t.cpus[2].transitionDelayUs, 100U);
    EXPECT_EQ(t.cpus[4].highest, 255U);
    EXPECT_EQ(t.cpus[4].lowestNonlinear, 50U);
    EXPECT_EQ(t.cpus[4].transitionDelayUs, 0U); // CPUFREQ_ETERNAL
    EXPECT_EQ(m->psdDomain(0), std::nullopt);
    EXPECT_EQ(m->cpuOfHostCpu(4), 4U);
    EXPECT_EQ(m->cpuOfHostCpu(5), std::nullopt);

    // One request per CPU, as the daemon sends them: one write per policy.
    ASSERT_FALSE(
        m->apply(std::array{desiredOf(*m, 0, 0x1000), desiredOf(*m, 1, 0x1000),
                            desiredOf(*m, 2, 0x1000), desiredOf(*m, 3, 0x1000),
                            desiredOf(*m, 4, 150)}));
    EXPECT_EQ(k.policyFile(0, "scaling_setspeed"), "1250099\n");
    EXPECT_EQ(k.policyFile(4, "scaling_setspeed"), "2473685\n");

    // Load: busy fraction x the performance asked for (the counters do not
    // move here, so delivered performance stays unknown).
    std::array<CpuSample, 5> out{};
    ASSERT_FALSE(m->sample(1'000'000, out));
    writeProcStat(k.sys, {{50, 50}, {0, 100}, {0, 100}, {0, 100}, {100, 0}});
    ASSERT_FALSE(m->sample(1'001'000, out));
    EXPECT_EQ(out[0].util, 256); // 512 x 0x1000 / 0x2000
    EXPECT_EQ(out[0].deliveredPerf, 0U);
    EXPECT_EQ(out[1].util, 0);
    EXPECT_EQ(out[4].util, 602); // 1024 x 150 / 255

    // The first request of a batch for a policy is the one written.
    ASSERT_FALSE(m->apply(
        std::array{desiredOf(*m, 1, 0x1800), desiredOf(*m, 0, 0x1000)}));
    EXPECT_EQ(k.policyFile(0, "scaling_setspeed"), "1875049\n");

    EXPECT_EQ(m->apply(std::array{desiredOf(*m, 5, 1)}), cppc::Errc::noSuchCpu);
    EXPECT_EQ(m->apply(std::array{desiredOf(*m, 4, 256)}),
              cppc::Errc::valueOutOfRange);

    ASSERT_NE(k.kernelView(), before);
    EXPECT_THAT(m->restore().entries(), IsEmpty());
    EXPECT_EQ(k.kernelView(), before);
    EXPECT_FALSE(k.state.exists("kernel.state"));
    // Nothing is written after restore().
    ASSERT_FALSE(m->apply(std::array{desiredOf(*m, 4, 100)}));
    EXPECT_EQ(k.policyFile(4, "scaling_setspeed"), "2000000\n");
}

TEST(KernelMachineTest, OffersDesiredOnlyAndLeavesTheLimitsAlone)
{
    FakeKernel k;
    KernelMachine m(k.sys.path(), {});
    EXPECT_EQ(m.controls(), Controls{Control::desired});
    const std::string minKhz = k.policyFile(4, "scaling_min_freq");
    const std::string maxKhz = k.policyFile(4, "scaling_max_freq");
    // Min and max far from the policy's limits, and an EPP: ignored.
    ASSERT_FALSE(
        m.apply(std::array{CppcRequest{4, 140, 150, 160, 9, false, {}}}));
    EXPECT_EQ(k.policyFile(4, "scaling_setspeed"), "2473685\n");
    EXPECT_EQ(k.policyFile(4, "scaling_min_freq"), minKhz);
    EXPECT_EQ(k.policyFile(4, "scaling_max_freq"), maxKhz);
    // Still, an unordered request is refused.
    EXPECT_EQ(m.apply(std::array{CppcRequest{4, 200, 150, 160, {}, false, {}}}),
              cppc::Errc::valueOutOfRange);
    EXPECT_EQ(k.policyFile(4, "scaling_setspeed"), "2473685\n");
}

TEST(KernelMachineTest, APolicyWhoseCpusComeBackOnlineIsWrittenAgain)
{
    // When the last CPU of a policy goes offline and comes back,
    // cppc_cpufreq starts the policy afresh and the userspace governor
    // takes the current frequency as its set speed: on Linux 6.1 Desired
    // is back at nominal while the daemon's request, unchanged, is never
    // sent again. The request in force must be written again.
    FakeKernel k;
    KernelMachine m(k.sys.path(), {});
    std::array<CpuSample, 5> out{};
    ASSERT_FALSE(m.sample(0, out));
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 4, 150)}));
    const std::string asked = k.policyFile(4, "scaling_setspeed");
    EXPECT_EQ(asked, "2473685\n");
    const std::string shared = k.policyFile(0, "scaling_setspeed");

    // CPU 4 offline (no line in /proc/stat), then back, its policy started
    // again by the kernel at another speed.
    writeProcStat(k.sys, {{0, 0}, {0, 0}, {0, 0}, {0, 0}});
    ASSERT_FALSE(m.sample(1000, out));
    const fs::path setspeed =
        "sys/devices/system/cpu/cpufreq/policy4/scaling_setspeed";
    k.sys.write(setspeed, "3000000\n");
    writeProcStat(k.sys, {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}});
    ASSERT_FALSE(m.sample(2000, out));
    EXPECT_EQ(k.policyFile(4, "scaling_setspeed"), asked);

    // Once: while it stays online nothing more is written.
    k.sys.write(setspeed, "3000000\n");
    ASSERT_FALSE(m.sample(3000, out));
    EXPECT_EQ(k.policyFile(4, "scaling_setspeed"), "3000000\n");
    // The shared policy, whose other CPUs stayed online, is not written.
    EXPECT_EQ(k.policyFile(0, "scaling_setspeed"), shared);
}

TEST(KernelMachineTest, SampleAndApplyDoNotAllocateAfterTheirFirstCall)
{
    FakeKernel k;
    KernelMachine m(k.sys.path(), {});
    EXPECT_THAT(m.countersProblem(), IsEmpty());
    std::array<CpuSample, 5> out{};
    const std::array requests{desiredOf(m, 0, 0x1800), desiredOf(m, 4, 100)};
    ASSERT_FALSE(m.sample(0, out));
    ASSERT_FALSE(m.apply(requests));
    const std::size_t before = allocations;
    const std::error_code s = m.sample(KernelMachine::counterPeriodUs, out);
    const std::error_code a = m.apply(requests);
    const std::size_t after = allocations;
    EXPECT_FALSE(s);
    EXPECT_FALSE(a);
    EXPECT_EQ(after, before);
}

TEST(KernelMachineTest, DeliveredPerfComesFromTheFeedbackCounters)
{
    FakeKernel k;
    KernelMachine m(k.sys.path(), {});
    ASSERT_THAT(m.countersProblem(), IsEmpty());
    const std::string counters =
        "sys/devices/system/cpu/cpu4/acpi_cppc/feedback_ctrs";
    std::array<CpuSample, 5> out{};
    // CPU 4's counters run at 3/4 of reference (nominal, 200): 150. A
    // window is 8 ms of real time; a read slowed down by a busy machine is
    // rejected, so allow a few windows.
    std::uint64_t nowUs = 0;
    for (std::uint64_t i = 1; i <= 20 && out[4].deliveredPerf == 0; ++i)
    {
        k.sys.write(counters, "ref:" + std::to_string(4000 * i) +
                                  " del:" + std::to_string(3000 * i) + "\n");
        writeProcStat(k.sys, {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {100 * i, 0}});
        ASSERT_FALSE(m.sample(nowUs, out));
        nowUs += KernelMachine::counterPeriodUs;
        std::this_thread::sleep_for(std::chrono::milliseconds(9));
    }
    EXPECT_EQ(out[4].deliveredPerf, 150U);
    EXPECT_EQ(out[4].util, 602);         // 1024 x 150 / 255
    EXPECT_EQ(out[0].deliveredPerf, 0U); // its counters do not move
}

TEST(KernelMachineTest, AnIdleCpusCountersAreReadLessOften)
{
    FakeKernel k;
    KernelMachineOptions options;
    options.access = {0, 0}; // every read on this thread, as it starts
    KernelMachine m(k.sys.path(), options);
    ASSERT_THAT(m.countersProblem(), IsEmpty());
    std::array<CpuSample, 5> out{};
    std::uint64_t busy4 = 0;
    std::uint64_t nowUs = 0;
    // One sample a counter period on; CPU 4 busy throughout when asked.
    const auto readsOver = [&](int samples, bool cpu4Busy) {
        const std::uint64_t before = m.readsStarted();
        for (int i = 0; i < samples; ++i)
        {
            busy4 += cpu4Busy ? 1 : 0; // a 10 ms tick of /proc/stat
            writeProcStat(k.sys, {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {busy4, 0}});
            nowUs += KernelMachine::counterPeriodUs;
            EXPECT_FALSE(m.sample(nowUs, out));
        }
        return m.readsStarted() - before;
    };
    EXPECT_FALSE(m.sample(nowUs, out));
    EXPECT_EQ(m.readsStarted(), 5U) << "every CPU is read at the start";
    // Idle, with the request unchanged: put off until idleReadEveryUs.
    constexpr int periods = static_cast<int>(
        KernelMachine::idleReadEveryUs / KernelMachine::counterPeriodUs);
    EXPECT_EQ(readsOver(periods - 1, false), 0U);
    EXPECT_EQ(readsOver(1, false), 5U);
    // A busy CPU is read every period, the idle ones still not.
    EXPECT_EQ(readsOver(5, true), 5U);
    // A new request in force on policy0 reads its four CPUs at once.
    ASSERT_FALSE(m.apply(std::vector{desiredOf(m, 0, 0x1000)}));
    EXPECT_EQ(readsOver(1, true), 5U);
    EXPECT_EQ(readsOver(3, true), 3U);
}

TEST(KernelMachineTest, ABusyCpuThatDeliversWhatItDidIsReadLessOften)
{
    FakeKernel k;
    KernelMachineOptions options;
    options.access = {0, 0}; // every read on this thread, as it starts
    KernelMachine m(k.sys.path(), options);
    ASSERT_THAT(m.countersProblem(), IsEmpty());
    std::array<CpuSample, 5> out{};
    std::uint64_t step = 0;
    std::uint64_t nowUs = 0;
    // One sample a counter period on (and a little more of real time, the
    // estimator's window), every CPU busy throughout at 3/4 of reference.
    const auto readsOver = [&](int samples) {
        const std::uint64_t before = m.readsStarted();
        for (int i = 0; i < samples; ++i)
        {
            ++step;
            for (unsigned cpu = 0; cpu < 5; ++cpu)
            {
                k.sys.write("sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                                "/acpi_cppc/feedback_ctrs",
                            "ref:" + std::to_string(4000 * step) +
                                " del:" + std::to_string(3000 * step) + "\n");
            }
            const std::uint64_t busy = step; // a 10 ms tick of /proc/stat
            writeProcStat(
                k.sys, {{busy, 0}, {busy, 0}, {busy, 0}, {busy, 0}, {busy, 0}});
            nowUs += KernelMachine::counterPeriodUs;
            std::this_thread::sleep_for(std::chrono::milliseconds(9));
            EXPECT_FALSE(m.sample(nowUs, out));
        }
        return m.readsStarted() - before;
    };
    EXPECT_FALSE(m.sample(nowUs, out));
    // Read every period until two readings agree (a read slowed down by a
    // busy machine is rejected and takes a period more).
    int settling = 0;
    while (readsOver(1) != 0)
    {
        ASSERT_LT(++settling, 20) << "the readings never agreed";
    }
    EXPECT_NE(out[4].deliveredPerf, 0U);
    // Then at most every steadyReadEveryUs: 8 periods read each of the 5
    // CPUs once or twice, not 8 times.
    const std::uint64_t steady = readsOver(8);
    EXPECT_GE(steady, 5U);
    EXPECT_LE(steady, 10U);
    // A new request in force on policy0 reads its four CPUs at the period
    // again.
    ASSERT_FALSE(m.apply(std::vector{desiredOf(m, 0, 0x1000)}));
    EXPECT_GE(readsOver(1), 4U);
}

TEST(KernelMachineTest, WithoutFeedbackCountersDeliveredPerfIsUnknown)
{
    FakeKernel k;
    fs::remove(k.sys.path() / "sys/devices/system/cpu/cpu3/acpi_cppc/"
                              "feedback_ctrs");
    KernelMachine m(k.sys.path(), {});
    EXPECT_THAT(m.countersProblem(),
                AllOf(HasSubstr("cpu3/acpi_cppc/feedback_ctrs"),
                      HasSubstr("does not exist")));
    std::array<CpuSample, 5> out{};
    ASSERT_FALSE(m.sample(0, out));
    writeProcStat(k.sys, {{100, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}});
    ASSERT_FALSE(m.sample(1000, out));
    EXPECT_EQ(out[0].util, 1024); // highest until the first request
}

// A run of the kernel machine that asks `desired` (CPU, Desired) and dies
// without restoring or unwinding.
void crash(const FakeKernel& k,
           std::span<const std::pair<std::uint32_t, std::uint32_t>> desired)
{
    ASSERT_EQ(exitStatusOf([&k, desired] {
                  std::unique_ptr<Machine> m =
                      makeMachine(k.config(), k.sys.path(), k.stateDir());
                  std::vector<CppcRequest> requests;
                  for (const auto& [cpu, perf] : desired)
                  {
                      requests.push_back(desiredOf(*m, cpu, perf));
                  }
                  // No restore, no unwinding.
                  ::_exit(m->apply(requests) ? 1 : 0);
              }),
              0);
}

using Desired = std::pair<std::uint32_t, std::uint32_t>;

TEST(KernelMachineTest, ACrashedRunIsUndoneAtTheNextStart)
{
    FakeKernel k;
    const auto before = k.kernelView();
    ASSERT_NO_FATAL_FAILURE(
        crash(k, std::array{Desired{0, 0x1800}, Desired{4, 100}}));
    ASSERT_NE(k.kernelView(), before);

    // The next start refuses to run over the record...
    EXPECT_THAT(errorOf([&] {
                    (void)makeMachine(k.config(), k.sys.path(), k.stateDir());
                }),
                AllOf(HasSubstr("kernel backend: "),
                      HasSubstr((k.stateDir() / "kernel.state").string()),
                      HasSubstr("restore them from this file first")));
    // ...until it is restored from.
    const cppc::backend::RestoreResult done =
        restoreMachineState(k.sys.path(), k.stateDir());
    EXPECT_FALSE(done.anythingLeft());
    ASSERT_THAT(done.entries(), SizeIs(1));
    EXPECT_THAT(describe(done.entries()[0]), HasSubstr("restored"));
    EXPECT_EQ(k.kernelView(), before);
    EXPECT_FALSE(k.state.exists("kernel.state"));
    EXPECT_THAT(restoreMachineState(k.sys.path(), k.stateDir()).entries(),
                IsEmpty());
    EXPECT_THAT(restoreMachineState(k.sys.path(), {}).entries(), IsEmpty());
}

// `stateText` (kernel.state) with only the header and `policy`'s line.
std::string onlyPolicy(const std::string& stateText, const std::string& policy)
{
    std::string out = stateText.substr(0, stateText.find('\n') + 1);
    const std::size_t at = stateText.find('\n' + policy + ' ');
    if (at != std::string::npos)
    {
        out += stateText.substr(at + 1, stateText.find('\n', at + 1) - at);
    }
    return out;
}

// A directory where the attribute was: every write of it fails (EISDIR),
// root's too. undo() puts a plain file back.
struct InTheWay
{
    InTheWay(const TempTree& t, const std::string& relative) :
        path(t.path() / relative)
    {
        fs::remove(path);
        fs::create_directory(path);
    }
    void undo() const
    {
        fs::remove(path);
        std::ofstream(path) << "0\n";
    }
    fs::path path;
};

// Once the cause is gone, a restore from the state file finishes the job:
// the tree is as `before`, the file is gone and the machine starts.
void expectFinishedOnceFixed(const FakeKernel& k,
                             const std::map<std::string, std::string>& before)
{
    EXPECT_FALSE(
        restoreMachineState(k.sys.path(), k.stateDir()).anythingLeft());
    EXPECT_EQ(k.kernelView(), before);
    EXPECT_FALSE(k.state.exists("kernel.state"));
    EXPECT_EQ(makeMachine(k.config(), k.sys.path(), k.stateDir())->name(),
              "kernel");
}

TEST(KernelMachineTest, AStopThatCannotPutEverythingBackKeepsWhatIsLeft)
{
    FakeKernel k;
    const auto before = k.kernelView();
    std::unique_ptr<Machine> m =
        makeMachine(k.config(), k.sys.path(), k.stateDir());
    ASSERT_FALSE(m->apply(std::array{desiredOf(*m, 4, 100)}));
    const std::string recorded = k.state.read("kernel.state");
    const InTheWay setspeed(k.sys, "sys/devices/system/cpu/cpufreq/policy4/"
                                   "scaling_setspeed");

    const cppc::backend::RestoreResult r = m->restore();
    EXPECT_TRUE(r.anythingLeft());
    EXPECT_THAT(r.leftFiles(), ElementsAre(setspeed.path));
    ASSERT_THAT(r.failures(), SizeIs(1));
    EXPECT_EQ(r.failures()[0].record, "policy4");
    EXPECT_EQ(r.failures()[0].step, cppc::backend::RestoreStep::writeSaved);
    EXPECT_EQ(k.policyFile(0, "scaling_governor"), "schedutil\n");
    EXPECT_EQ(k.state.read("kernel.state"), onlyPolicy(recorded, "policy4"));
    m.reset();
    EXPECT_THAT(errorOf([&] {
                    (void)makeMachine(k.config(), k.sys.path(), k.stateDir());
                }),
                HasSubstr("restore them from this file first"));

    setspeed.undo();
    expectFinishedOnceFixed(k, before);
}

TEST(KernelMachineTest, AfterACrashFixItAndRunAgain)
{
    FakeKernel k;
    const auto before = k.kernelView();
    ASSERT_NO_FATAL_FAILURE(crash(k, std::array{Desired{0, 0x1800}}));
    const std::string recorded = k.state.read("kernel.state");
    const InTheWay governor(k.sys, "sys/devices/system/cpu/cpufreq/policy0/"
                                   "scaling_governor");

    const cppc::backend::RestoreResult r =
        restoreMachineState(k.sys.path(), k.stateDir());
    EXPECT_TRUE(r.anythingLeft());
    EXPECT_THAT(r.leftFiles(), ElementsAre(governor.path));
    EXPECT_THAT(r.keptStateFiles(), ElementsAre(k.stateDir() / "kernel.state"));
    EXPECT_EQ(k.state.read("kernel.state"), onlyPolicy(recorded, "policy0"));
    EXPECT_EQ(k.policyFile(4, "scaling_setspeed"), "2000000\n"); // back

    governor.undo();
    expectFinishedOnceFixed(k, before);
}

TEST(KernelMachineTest, ABadStateFileIsReportedAndKept)
{
    FakeKernel k;
    k.state.write("kernel.state", "not a state file\n");
    const cppc::backend::RestoreResult done =
        restoreMachineState(k.sys.path(), k.stateDir());
    EXPECT_TRUE(done.anythingLeft());
    ASSERT_THAT(done.entries(), SizeIs(1));
    EXPECT_EQ(done.entries()[0].step,
              cppc::backend::RestoreStep::parseStateFile);
    EXPECT_THAT(describe(done.entries()[0]),
                AllOf(HasSubstr("cannot be parsed"),
                      HasSubstr("kernel.state")));
    EXPECT_EQ(k.state.read("kernel.state"), "not a state file\n");
}

TEST(KernelMachineTest, StartUpErrorsNameWhatIsMissing)
{
    FakeKernel k;
    fs::remove(k.sys.path() / "proc/stat");
    const auto before = k.kernelView();
    EXPECT_THAT(errorOf([&] {
                    (void)makeMachine(k.config(), k.sys.path(), k.stateDir());
                }),
                AllOf(HasSubstr("kernel backend: "), HasSubstr("proc/stat")));
    // What was switched before the failure is back, the record gone.
    EXPECT_EQ(k.kernelView(), before);
    EXPECT_FALSE(k.state.exists("kernel.state"));

    const TempTree empty;
    EXPECT_THAT(
        errorOf([&] {
            (void)makeMachine(k.config(), empty.path(), k.stateDir());
        }),
        HasSubstr((empty.path() / "sys/devices/system/cpu/cpufreq").string()));
}

TEST(KernelMachineTest, AFailedWriteDegradesItsCpusUntilAWriteLands)
{
    FakeKernel k;
    std::unique_ptr<Machine> m =
        makeMachine(k.config(), k.sys.path(), k.stateDir());
    std::array<CpuSample, 5> out{};
    ASSERT_FALSE(m->sample(0, out));

    // policy4's scaling_setspeed cannot be written (root's writes too).
    const InTheWay setspeed(k.sys, "sys/devices/system/cpu/cpufreq/policy4/"
                                   "scaling_setspeed");
    const std::uint64_t changes = m->degradedChanges();
    ASSERT_FALSE(
        m->apply(std::array{desiredOf(*m, 0, 0x1000), desiredOf(*m, 4, 100)}));
    ASSERT_FALSE(m->sample(1000, out)); // the results come in
    EXPECT_THAT(std::string(m->degraded(4)),
                AllOf(HasSubstr(setspeed.path.string()),
                      HasSubstr("the write failed"),
                      HasSubstr("Is a directory")));
    EXPECT_THAT(std::string(m->degraded(0)), IsEmpty());
    EXPECT_EQ(m->degradedChanges(), changes + 1);
    EXPECT_EQ(m->accessCounts().failed, 1U);
    EXPECT_EQ(m->accessCounts().landed, 1U); // policy0's
    EXPECT_EQ(m->accessCounts().degradedCpus, 1U);
    EXPECT_THAT(m->writeTarget(4),
                AllOf(HasSubstr("CPU 4"), HasSubstr(setspeed.path.string())));

    // A write that goes through again clears it.
    setspeed.undo();
    ASSERT_FALSE(m->apply(std::array{desiredOf(*m, 4, 120)}));
    ASSERT_FALSE(m->sample(2000, out));
    EXPECT_THAT(std::string(m->degraded(4)), IsEmpty());
    EXPECT_EQ(m->accessCounts().landed, 2U);
    EXPECT_EQ(m->accessCounts().degradedCpus, 0U);
}

// The knobs of Linux 6.16's cppc_cpufreq on both policies, as found.
void addKnobs(const FakeKernel& k)
{
    for (const unsigned p : {0U, 4U})
    {
        k.cpufreq.setPolicyFile(p, "auto_select", "0\n");
        k.cpufreq.setPolicyFile(p, "auto_act_window", "1000\n");
        k.cpufreq.setPolicyFile(p, "energy_performance_preference_val",
                                "128\n");
    }
}

// Samples until `done` holds or 5 s pass: the workers' writes land in
// their own time and are taken at sample().
template <typename Done>
bool sampleUntil(Machine& m, Done done)
{
    std::array<CpuSample, 5> out{};
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::uint64_t nowUs = 1'000'000;
    while (std::chrono::steady_clock::now() < until)
    {
        (void)m.sample(nowUs += 10'000, out);
        if (done())
        {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

TEST(KernelMachineTest, WritesTheKnobsOnTheWorkersOnlyWhenTheyChange)
{
    FakeKernel k;
    addKnobs(k);
    cppc::test::FakeKnobIo io;
    const auto before = k.kernelView();
    KernelMachineOptions options;
    options.stateFile = kernelStateFile(k.stateDir());
    options.access = {2, 0};
    options.io = &io;
    KernelMachine m(k.sys.path(), options);
    EXPECT_EQ(m.controls(), (Controls{Control::desired, Control::autonomous,
                                      Control::activityWindow, Control::epp}));
    EXPECT_THAT(m.accessSummary(),
                AllOf(HasSubstr("CPPC controls offered: auto_select, "
                                "auto_act_window, "
                                "energy_performance_preference_val"),
                      HasSubstr("min and max not offered"),
                      HasSubstr("perf_limited not read")));
    EXPECT_FALSE(m.readsPerfLimited());

    CppcRequest r0 = desiredOf(m, 0, 0x1000);
    r0.autonomous = true;
    r0.epp = 30;
    r0.activityWindowUs = 1234;
    CppcRequest r4 = desiredOf(m, 4, 150);
    r4.epp = 200;
    ASSERT_FALSE(m.apply(std::array{r0, r4}));
    ASSERT_TRUE(sampleUntil(m, [&] {
        return k.policyFile(0, "auto_select") == "1\n" &&
               k.policyFile(4, "energy_performance_preference_val") ==
                   "200\n" &&
               m.accessCounts().landed == 2;
    }));
    EXPECT_EQ(k.policyFile(0, "auto_act_window"), "1230\n"); // rounded
    EXPECT_EQ(k.policyFile(0, "energy_performance_preference_val"), "30\n");
    EXPECT_EQ(k.policyFile(0, "scaling_setspeed"), "1250099\n");
    EXPECT_EQ(k.policyFile(4, "auto_select"), "0\n");        // as asked
    EXPECT_EQ(k.policyFile(4, "auto_act_window"), "1000\n"); // not asked
    const fs::path dir0 = k.cpufreq.policyPath(0);
    EXPECT_EQ(io.writes(dir0 / "auto_act_window"), 2U); // probe + request
    EXPECT_EQ(io.writes(k.cpufreq.policyPath(4) / "auto_select"), 1U);

    // The same request again writes nothing, though the kernel shows the
    // window rounded; the EPP left out stays as it is. (policy4's new EPP
    // goes in the same batch: once it landed, so would have policy0's.)
    r0.epp.reset();
    r4.epp = 201;
    ASSERT_FALSE(m.apply(std::array{r0, r4}));
    ASSERT_TRUE(sampleUntil(m, [&] { return m.accessCounts().landed >= 3; }));
    EXPECT_EQ(m.accessCounts().landed, 3U);
    EXPECT_EQ(io.writes(dir0 / "auto_act_window"), 2U);
    EXPECT_EQ(io.writes(dir0 / "energy_performance_preference_val"), 2U);
    EXPECT_EQ(k.policyFile(0, "energy_performance_preference_val"), "30\n");

    // A knob that starts refusing degrades its policy's CPUs, naming it.
    io.refuseWrites(dir0 / "auto_select", EIO);
    r0.autonomous = false;
    ASSERT_FALSE(m.apply(std::array{r0}));
    ASSERT_TRUE(sampleUntil(m, [&] { return !m.degraded(1).empty(); }));
    EXPECT_THAT(std::string(m.degraded(1)),
                AllOf(HasSubstr("policy0/auto_select': the write failed"),
                      HasSubstr("Input/output error")));
    io.heal(dir0 / "auto_select");
    ASSERT_TRUE(sampleUntil(m, [&] {
        (void)m.apply(std::array{r0});
        return m.degraded(1).empty();
    }));
    EXPECT_EQ(k.policyFile(0, "auto_select"), "0\n");

    ASSERT_NE(k.kernelView(), before);
    EXPECT_THAT(m.restore().entries(), IsEmpty());
    EXPECT_EQ(k.kernelView(), before);
    EXPECT_FALSE(k.state.exists("kernel.state"));
}

TEST(KernelMachineTest, AfterACrashTheNextStartPutsTheKnobsBack)
{
    FakeKernel k;
    addKnobs(k);
    const auto before = k.kernelView();
    // A run that dies with its knobs set: nothing restores them but the
    // state file.
    ASSERT_EQ(exitStatusOf([&k] {
                  auto m = makeMachine(k.config(), k.sys.path(), k.stateDir());
                  CppcRequest r = desiredOf(*m, 0, 0x1000);
                  r.autonomous = true;
                  r.epp = 1;
                  r.activityWindowUs = 50;
                  // No restore, no unwinding.
                  ::_exit(m->apply(std::array{r}) ? 1 : 0);
              }),
              0);
    EXPECT_EQ(k.policyFile(0, "auto_select"), "1\n");
    EXPECT_EQ(k.policyFile(0, "energy_performance_preference_val"), "1\n");
    ASSERT_TRUE(k.state.exists("kernel.state"));
    // The next start restores from it first.
    const cppc::backend::RestoreResult r =
        restoreMachineState(k.sys.path(), k.stateDir());
    EXPECT_FALSE(r.anythingLeft());
    EXPECT_EQ(k.policyFile(0, "auto_select"), "0\n");
    EXPECT_EQ(k.kernelView(), before);
    EXPECT_FALSE(k.state.exists("kernel.state"));
}

TEST(KernelMachineTest, ReadsPerfLimitedWithTheCountersAndClearsIt)
{
    FakeKernel k;
    cppc::test::FakeKnobIo io;
    for (const unsigned p : {0U, 4U})
    {
        k.cpufreq.setPolicyFile(p, "perf_limited", "0\n");
    }
    KernelMachineOptions options;
    options.access = {2, 0};
    options.io = &io;
    KernelMachine m(k.sys.path(), options);
    EXPECT_TRUE(m.readsPerfLimited());
    EXPECT_THAT(m.accessSummary(), HasSubstr("perf_limited read and cleared"));

    // The platform held policy0 below Desired and policy4 below Minimum.
    k.cpufreq.setPolicyFile(0, "perf_limited", "1\n");
    k.cpufreq.setPolicyFile(4, "perf_limited", "3\n");
    std::array<CpuSample, 5> out{};
    std::array<std::uint8_t, 5> seen{};
    std::uint64_t nowUs = 1'000'000;
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (seen != std::array<std::uint8_t, 5>{1, 1, 1, 1, 3} &&
           std::chrono::steady_clock::now() < until)
    {
        ASSERT_FALSE(m.sample(nowUs += 10'000, out));
        for (std::size_t cpu = 0; cpu < out.size(); ++cpu)
        {
            seen[cpu] |= out[cpu].perfLimited;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_THAT(seen, ElementsAre(1, 1, 1, 1, 3));
    // Cleared by writing them back. Each CPU reports its policy's bits
    // until the policy's next read, which finds them clear; then never
    // again.
    EXPECT_EQ(k.policyFile(0, "perf_limited"), "0\n");
    EXPECT_EQ(k.policyFile(4, "perf_limited"), "0\n");
    std::array<bool, 5> cleared{};
    const auto clear =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (cleared != std::array<bool, 5>{true, true, true, true, true} &&
           std::chrono::steady_clock::now() < clear)
    {
        ASSERT_FALSE(m.sample(nowUs += 10'000, out));
        for (std::size_t cpu = 0; cpu < out.size(); ++cpu)
        {
            if (cleared[cpu])
            {
                EXPECT_EQ(out[cpu].perfLimited, 0U) << "CPU " << cpu;
            }
            else if (out[cpu].perfLimited == 0)
            {
                cleared[cpu] = true;
            }
            else
            {
                EXPECT_EQ(out[cpu].perfLimited, seen[cpu]) << "CPU " << cpu;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_THAT(cleared, ElementsAre(true, true, true, true, true));
    for (int i = 0; i < 20; ++i)
    {
        ASSERT_FALSE(m.sample(nowUs += 10'000, out));
        for (const CpuSample& c : out)
        {
            EXPECT_EQ(c.perfLimited, 0U);
        }
    }

    // A read that fails reports nothing and counts as failed.
    const std::uint64_t failed = m.accessCounts().failed;
    io.failReads(k.cpufreq.policyPath(4) / "perf_limited", EIO);
    k.cpufreq.setPolicyFile(4, "perf_limited", "2\n");
    const auto later =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (m.accessCounts().failed == failed &&
           std::chrono::steady_clock::now() < later)
    {
        ASSERT_FALSE(m.sample(nowUs += 10'000, out));
        EXPECT_EQ(out[4].perfLimited, 0U);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_GT(m.accessCounts().failed, failed);
    EXPECT_EQ(k.policyFile(4, "perf_limited"), "2\n");
}

TEST(KernelMachineTest, WithoutPerfLimitedEverywhereItIsNotRead)
{
    FakeKernel k;
    k.cpufreq.setPolicyFile(0, "perf_limited", "1\n");
    KernelMachine m(k.sys.path(), {});
    EXPECT_FALSE(m.readsPerfLimited());
    EXPECT_THAT(m.accessSummary(),
                HasSubstr("perf_limited not read: '" +
                          (k.cpufreq.policyPath(4) / "perf_limited").string() +
                          "' does not exist"));
    std::array<CpuSample, 5> out{};
    for (std::uint64_t t = 1; t < 20; ++t)
    {
        ASSERT_FALSE(m.sample(t * 10'000, out));
        EXPECT_EQ(out[0].perfLimited, 0U);
    }
    EXPECT_EQ(k.policyFile(0, "perf_limited"), "1\n");
}

} // namespace
} // namespace cppcgov::daemon
