// SPDX-License-Identifier: Apache-2.0
// The kernel machine's accesses on worker threads, on a fake sysfs tree
// whose files can hang or fail (gate_io.hpp), as PCC-backed attributes do:
// writes for different policies run at the same time; a hung write
// degrades its policy's CPUs within the deadline, holds its later
// requests back and writes the last one when it returns, while the other
// policy goes on; a failing one degrades them with the error and recovers;
// and the stop's restore puts back every other policy within its bound,
// keeping the hung one in the state file.
#include "daemon/machines/kernel_machine.hpp"
#include "gate_io.hpp"
#include "lib/error.hpp"
#include "machine_test_support.hpp"
#include "tests/fuzz/acpi_samples.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using cppc::test::GateIo;
using test::desiredOf;
using test::FakeKernel;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Long enough that a worker kept off the CPU of a loaded machine does not
// pass it (its counter reads run too), short enough for a hung write.
constexpr std::uint32_t deadlineUs = 200'000;

struct Rig
{
    Rig()
    {
        KernelMachineOptions o;
        o.stateFile = k.stateDir() / "kernel.state";
        o.access = {8, deadlineUs};
        o.io = &gate;
        machine.emplace(k.sys.path(), o);
        (void)machine->sample(0, out);
    }
    ~Rig()
    {
        gate.release(setspeed(0));
        gate.release(setspeed(4));
        (void)gate.waitFor(
            [](const GateIo& g) { return g.blockedLocked() == 0; }, 10s);
    }

    fs::path setspeed(unsigned policy) const
    {
        return k.sys.path() / ("sys/devices/system/cpu/cpufreq/policy" +
                               std::to_string(policy) + "/scaling_setspeed");
    }
    std::size_t writesTo(const fs::path& file) const
    {
        std::size_t n = 0;
        for (const GateIo::Access& a : gate.accesses())
        {
            n += a.file == file.lexically_normal() && !a.value.empty() ? 1 : 0;
        }
        return n;
    }
    // Samples every millisecond of real time until `done()` or 10 s.
    template <class Done>
    bool sampleUntil(Done done)
    {
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (!done())
        {
            if (std::chrono::steady_clock::now() > until)
            {
                return false;
            }
            std::this_thread::sleep_for(1ms);
            nowUs += 1000;
            (void)machine->sample(nowUs, out);
        }
        return true;
    }
    void apply(std::uint32_t cpu, std::uint32_t perf)
    {
        ASSERT_FALSE(
            machine->apply(std::array{desiredOf(*machine, cpu, perf)}));
    }

    FakeKernel k;
    GateIo gate; // declared after k: goes first, after its threads left
    std::optional<KernelMachine> machine;
    std::array<CpuSample, 5> out{};
    std::uint64_t nowUs = 0;
};

TEST(KernelAccessTest, WritesForDifferentPoliciesRunAtTheSameTime)
{
    Rig r;
    // Each write waits until two are in the kernel at once: on one thread
    // the first would wait for its patience to run out.
    r.gate.gatherWrites(2, 10s);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_FALSE(r.machine->apply(std::array{desiredOf(*r.machine, 0, 0x1000),
                                             desiredOf(*r.machine, 4, 100)}));
    ASSERT_TRUE(
        r.sampleUntil([&] { return r.machine->accessCounts().landed == 2; }));
    EXPECT_GE(r.gate.mostBlockedAtOnce(), 2U);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    EXPECT_THAT(std::string(r.machine->degraded(4)), IsEmpty());
}

TEST(KernelAccessTest, AHungWriteDegradesItsCpusAndHoldsItsRequestsBack)
{
    Rig r;
    r.gate.hold(r.setspeed(4));
    r.apply(4, 100);
    ASSERT_TRUE(r.sampleUntil([&] { return !r.machine->degraded(4).empty(); }));
    EXPECT_THAT(std::string(r.machine->degraded(4)),
                AllOf(HasSubstr(r.setspeed(4).string()),
                      HasSubstr("has not returned after 200 ms")));
    EXPECT_EQ(r.machine->accessCounts().late, 1U);
    EXPECT_EQ(r.machine->accessCounts().degradedCpus, 1U);

    // Later requests wait for it; the other policy goes on.
    r.apply(4, 120);
    r.apply(4, 140);
    const std::uint64_t landed = r.machine->accessCounts().landed;
    r.apply(0, 0x1000);
    ASSERT_TRUE(r.sampleUntil([&] {
        return r.machine->accessCounts().landed == landed + 1;
    }));
    EXPECT_EQ(r.writesTo(r.setspeed(4)), 1U);
    EXPECT_THAT(std::string(r.machine->degraded(0)), IsEmpty());

    // When it returns, the CPU recovers and the last request is written.
    r.gate.release(r.setspeed(4));
    ASSERT_TRUE(r.sampleUntil([&] {
        return r.machine->degraded(4).empty() &&
               r.machine->accessCounts().landed == landed + 3;
    }));
    EXPECT_EQ(r.writesTo(r.setspeed(4)), 2U);
    std::string last;
    for (const GateIo::Access& a : r.gate.accesses())
    {
        last = a.file == r.setspeed(4).lexically_normal() ? a.value : last;
    }
    r.apply(4, 140); // no change: nothing new is written
    (void)r.sampleUntil([] { return true; });
    EXPECT_EQ(r.writesTo(r.setspeed(4)), 2U);
    EXPECT_EQ(r.k.policyFile(4, "scaling_setspeed"), last);
}

TEST(KernelAccessTest, ARequestBackToTheValueInFlightWritesNothingMore)
{
    Rig r;
    r.gate.hold(r.setspeed(4));
    r.apply(4, 100);
    ASSERT_TRUE(r.gate.waitFor(
        [](const GateIo& g) { return g.blockedLocked() == 1; }, 10s));
    r.apply(4, 120);
    r.apply(4, 100); // what is in flight already
    r.gate.release(r.setspeed(4));
    ASSERT_TRUE(
        r.sampleUntil([&] { return r.machine->accessCounts().landed == 1; }));
    // A few more ticks: nothing else goes out.
    for (int i = 0; i < 5; ++i)
    {
        std::this_thread::sleep_for(2ms);
        r.nowUs += 2000;
        (void)r.machine->sample(r.nowUs, r.out);
    }
    EXPECT_EQ(r.writesTo(r.setspeed(4)), 1U);
    EXPECT_EQ(r.machine->accessCounts().landed, 1U);
}

TEST(KernelAccessTest, AFailingWriteDegradesItsCpusWithTheErrorAndRecovers)
{
    Rig r;
    r.gate.fail(r.setspeed(4));
    r.apply(4, 100);
    ASSERT_TRUE(r.sampleUntil([&] { return !r.machine->degraded(4).empty(); }));
    EXPECT_THAT(std::string(r.machine->degraded(4)),
                AllOf(HasSubstr("the write failed"),
                      HasSubstr("Input/output error")));
    // Tried again a deadline later, not at every tick.
    const std::size_t tries = r.writesTo(r.setspeed(4));
    r.gate.fail(r.setspeed(4), false);
    ASSERT_TRUE(r.sampleUntil([&] { return r.machine->degraded(4).empty(); }));
    EXPECT_LE(r.writesTo(r.setspeed(4)), tries + 1);
    EXPECT_EQ(r.machine->accessCounts().failed, tries);
}

TEST(KernelAccessTest, TheStopRestoresTheOthersAndKeepsTheHungPolicy)
{
    Rig r;
    r.apply(0, 0x1000);
    ASSERT_TRUE(
        r.sampleUntil([&] { return r.machine->accessCounts().landed == 1; }));
    r.gate.hold(r.setspeed(4));
    r.apply(4, 100);
    ASSERT_TRUE(r.sampleUntil([&] { return !r.machine->degraded(4).empty(); }));

    const auto start = std::chrono::steady_clock::now();
    const cppc::backend::RestoreResult result = r.machine->restore();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_TRUE(result.isLeft("policy4"));
    EXPECT_FALSE(result.isLeft("policy0"));
    EXPECT_EQ(r.k.policyFile(0, "scaling_governor"), "schedutil\n");
    EXPECT_THAT(r.k.state.read("kernel.state"),
                AllOf(HasSubstr("policy4"),
                      ::testing::Not(HasSubstr("policy0"))));
    EXPECT_TRUE(r.machine->accessesStuck());
    for (const auto& f : result.failures())
    {
        EXPECT_EQ(f.record, "policy4");
        EXPECT_EQ(f.error, cppc::Errc::accessPending) << f.error.message();
    }

    r.gate.release(r.setspeed(4));
    ASSERT_TRUE(r.gate.waitFor(
        [](const GateIo& g) { return g.blockedLocked() == 0; }, 10s));
    ASSERT_TRUE(r.sampleUntil([&] { return !r.machine->accessesStuck(); }));
}

TEST(KernelAccessTest, TheStopLeavesAPolicyWhoseAccessesFail)
{
    Rig r;
    r.gate.fail(r.setspeed(4));
    r.apply(4, 100);
    ASSERT_TRUE(r.sampleUntil([&] { return !r.machine->degraded(4).empty(); }));
    const std::size_t tries = r.writesTo(r.setspeed(4));

    const cppc::backend::RestoreResult result = r.machine->restore();
    EXPECT_TRUE(result.isLeft("policy4"));
    EXPECT_FALSE(result.isLeft("policy0"));
    EXPECT_EQ(r.writesTo(r.setspeed(4)), tries) << "nothing written there";
    EXPECT_EQ(r.k.policyFile(0, "scaling_governor"), "schedutil\n");
    EXPECT_THAT(r.k.state.read("kernel.state"),
                AllOf(HasSubstr("policy4"),
                      ::testing::Not(HasSubstr("policy0"))));
    EXPECT_FALSE(result.failures().empty());
    r.gate.fail(r.setspeed(4), false);
}

// Writes a PCCT with Altra's subspace (100 us nominal latency, 110 us
// turnaround) into `k`'s firmware tables.
void addPcct(FakeKernel& k)
{
    cppc::acpi::PccSubspace ss = cppc::acpi::samples::sampleSubspace(2, 0);
    ss.nominalLatencyUs = 100;
    ss.minRequestTurnaroundUs = 110;
    const cppc::acpi::samples::Bytes pcct = cppc::acpi::samples::pcctOf({ss});
    k.sys.write("sys/firmware/acpi/tables/PCCT",
                std::string(pcct.begin(), pcct.end()));
}

// The deadline of a machine on `k` with `configuredUs`, and its summary.
std::pair<std::uint32_t, std::string> deadlineOf(const FakeKernel& k,
                                                 std::uint32_t configuredUs)
{
    KernelMachineOptions o;
    o.access = {0, configuredUs};
    const KernelMachine m(k.sys.path(), o);
    return {m.accessDeadlineUs(), m.accessSummary()};
}

TEST(KernelAccessTest, TheDeadlineComesFromThePcctUnlessConfigured)
{
    FakeKernel k;
    EXPECT_EQ(deadlineOf(k, 0).first, 10'000U);
    EXPECT_THAT(deadlineOf(k, 0).second, HasSubstr("no PCCT"));
    EXPECT_EQ(deadlineOf(k, 1234).first, 1234U);

    // Altra's subspace: 100 us nominal latency, 110 us turnaround.
    addPcct(k);
    EXPECT_EQ(deadlineOf(k, 0).first, 64U * 110U);
    EXPECT_THAT(deadlineOf(k, 0).second,
                AllOf(HasSubstr("7040 us"), HasSubstr("latency of 110 us")));
    EXPECT_EQ(deadlineOf(k, 1234).first, 1234U);

    // A table that cannot be read is said so, and the fallback holds.
    k.sys.write("sys/firmware/acpi/tables/PCCT", "PCCT");
    EXPECT_EQ(deadlineOf(k, 0).first, 10'000U);
    EXPECT_THAT(deadlineOf(k, 0).second, HasSubstr("could not be read"));
}

TEST(KernelAccessTest, OnPccATickRingsItsWritesFirstAndReadsWithWhatIsLeft)
{
    FakeKernel k;
    addPcct(k);
    k.cpufreq.setPolicyFile(0, "perf_limited", "1\n");
    k.cpufreq.setPolicyFile(4, "perf_limited", "0\n");
    GateIo gate;
    KernelMachineOptions o;
    o.stateFile = k.stateDir() / "kernel.state";
    o.access = {0, 0}; // every access on this thread, as it is started
    o.io = &gate;
    KernelMachine m(k.sys.path(), o);
    ASSERT_TRUE(m.readsPerfLimited());
    const fs::path cpufreq = k.sys.path() / "sys/devices/system/cpu/cpufreq";
    const fs::path setspeed0 =
        (cpufreq / "policy0/scaling_setspeed").lexically_normal();
    const fs::path setspeed4 =
        (cpufreq / "policy4/scaling_setspeed").lexically_normal();
    const auto writes = [&] {
        std::size_t n = 0;
        for (const GateIo::Access& a : gate.accesses())
        {
            n += a.file == setspeed0 || a.file == setspeed4 ? 1 : 0;
        }
        return n;
    };
    std::array<CpuSample, 5> out{};
    std::uint64_t nowUs = 0;
    bool high = false;
    // One tick: its doorbells (writes of Desired, reads of the counters
    // and of perf_limited), and the reads among them.
    const auto tick = [&](std::size_t policiesChanged) {
        const std::uint64_t reads = m.readsStarted();
        const std::size_t written = writes();
        nowUs += 500'000;
        EXPECT_FALSE(m.sample(nowUs, out));
        high = !high;
        std::vector<CppcRequest> requests;
        if (policiesChanged > 0)
        {
            requests.push_back(desiredOf(m, 0, high ? 0x1800 : 0x1000));
        }
        if (policiesChanged > 1)
        {
            requests.push_back(desiredOf(m, 4, high ? 200 : 100));
        }
        if (!requests.empty())
        {
            EXPECT_FALSE(m.apply(requests));
        }
        m.endTick();
        const std::uint64_t read = m.readsStarted() - reads;
        return std::pair{writes() - written + read, read};
    };

    // Quiet ticks: a counter read each, and perf_limited in its turn
    // (every fourth read of CPU 0's counters, one CPU of five a tick).
    bool limitedSeen = false;
    for (int i = 0; i < 25; ++i)
    {
        const auto [doorbells, reads] = tick(0);
        EXPECT_LE(doorbells, KernelMachine::pccDoorbellsPerTick) << i;
        EXPECT_GE(reads, 1U) << i;
        limitedSeen = limitedSeen || out[0].perfLimited != 0;
    }
    EXPECT_TRUE(limitedSeen);
    const fs::path limited0 =
        (cpufreq / "policy0/perf_limited").lexically_normal();
    const std::vector<GateIo::Access> accesses = gate.accesses();
    EXPECT_TRUE(std::any_of(accesses.begin(), accesses.end(),
                            [&](const GateIo::Access& a) {
        return a.file == limited0;
    })) << "the bits found are written back to clear them";

    // A write leaves room for one read.
    for (int i = 0; i < 5; ++i)
    {
        const auto [doorbells, reads] = tick(1);
        EXPECT_EQ(doorbells, 2U) << i;
        EXPECT_EQ(reads, 1U) << i;
    }

    // Both policies written every tick: no read, but for one after
    // pccTicksWithoutRead ticks without.
    std::size_t all = 0;
    std::size_t reads = 0;
    const std::size_t ticks =
        std::size_t{5} * (KernelMachine::pccTicksWithoutRead + 1);
    for (std::size_t i = 0; i < ticks; ++i)
    {
        const auto [doorbells, read] = tick(2);
        EXPECT_LE(doorbells, KernelMachine::pccDoorbellsPerTick + 1) << i;
        all += doorbells;
        reads += read;
    }
    EXPECT_EQ(reads, 5U);
    EXPECT_EQ(all, 2 * ticks + 5);
}

} // namespace
} // namespace cppcgov::daemon
