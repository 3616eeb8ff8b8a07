// The machines behind the daemon's seam: the simulator's load model and
// register writes, the kernel machine on a fake sysfs tree (and that it
// leaves the tree as it found it, also after a crash), the registers
// machine on fake firmware tables with a file standing in for /dev/mem,
// `auto`, and start-up errors that name what is missing.
#include "aml_builder.hpp"
#include "daemon/machines.hpp"
#include "lib/error.hpp"
#include "pcc_test_support.hpp"
#include "temp_tree.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::test::TempTree;
using policies::Coordination;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// <root>/proc/stat with one line per CPU: (busy, idle) ticks.
void writeProcStat(
    const TempTree& t,
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& cpus)
{
    std::string text = "cpu  0 0 0 0 0 0 0 0 0 0\n";
    for (std::size_t cpu = 0; cpu < cpus.size(); ++cpu)
    {
        text += "cpu" + std::to_string(cpu) + " " +
                std::to_string(cpus[cpu].first) + " 0 0 " +
                std::to_string(cpus[cpu].second) + " 0 0 0 0 0 0\n";
    }
    t.write("proc/stat", text + "intr 0\nctxt 0\n");
}

std::string errorOf(const std::function<void()>& start)
{
    try
    {
        start();
    }
    catch (const std::exception& e)
    {
        return e.what();
    }
    return "no error";
}

// ---------------------------------------------------------------------------
// The simulator

SimulatorConfig sim(const char* layout, std::uint32_t cpus = 0)
{
    SimulatorConfig c;
    c.layout = layout;
    c.cpus = cpus;
    return c;
}

TEST(SimulatorMachineTest, TopologyAndCapabilitiesComeFromTheLayout)
{
    const TempTree root;
    const SimulatorMachine m(sim("rd-n2", 4), root.path());
    EXPECT_EQ(m.name(), "simulator:rd-n2");
    const auto& t = m.topology();
    ASSERT_THAT(t.cpus, SizeIs(4));
    EXPECT_EQ(t.cpus[3].highest, 3300U);
    EXPECT_EQ(t.cpus[3].nominal, 2600U);
    EXPECT_EQ(t.cpus[3].lowestNonlinear, 1000U);
    EXPECT_EQ(t.cpus[3].lowest, 800U);
    ASSERT_THAT(t.domains, SizeIs(4)); // one SW_ANY domain per CPU
    EXPECT_THAT(t.domains[2].cpus, ElementsAre(2));
    EXPECT_EQ(m.psdDomain(2), 2U);
    EXPECT_EQ(m.psdDomain(4), std::nullopt);
    EXPECT_EQ(m.cpuOfHostCpu(3), 3U);
    EXPECT_EQ(m.cpuOfHostCpu(4), std::nullopt);
    EXPECT_EQ(m.hostCpus(), 0U); // no /proc/stat
    EXPECT_EQ(m.counts(), SimulatorCounts{});
}

TEST(SimulatorMachineTest, UtilFollowsHostLoadCappedByDeliveredPerformance)
{
    TempTree root;
    writeProcStat(root, {{0, 0}, {0, 0}});
    SimulatorMachine m(sim("rd-n2", 4), root.path());
    ASSERT_EQ(m.hostCpus(), 2U);
    std::array<CpuSample, 4> out{};
    ASSERT_FALSE(m.sample(1000, out));
    for (const CpuSample& s : out)
    {
        EXPECT_EQ(s.util, 0);
        EXPECT_EQ(s.deliveredPerf, 0U); // the first call reports zeros
    }

    // Host CPU 0 half busy, host CPU 1 busy; simulated CPU n follows host
    // CPU n mod 2. Before any request the CPUs run at nominal (2600 of
    // 3300): a busy CPU can show at most 1024 x 2600 / 3300 = 806.
    writeProcStat(root, {{50, 50}, {100, 0}});
    ASSERT_FALSE(m.sample(2000, out));
    EXPECT_EQ(out[0].util, 512);
    EXPECT_EQ(out[1].util, 806);
    EXPECT_EQ(out[2].util, 512);
    EXPECT_EQ(out[3].util, 806);
    EXPECT_EQ(out[1].deliveredPerf, 2600U);

    // Highest performance on CPU 1 lets it show all its demand; the lowest
    // level (requests below it deliver it) caps CPU 2 at 1024 x 800 / 3300.
    ASSERT_FALSE(m.apply(std::array{PerfRequest{1, 3300}, PerfRequest{2, 1}}));
    EXPECT_EQ(m.desiredRegister(1), 3300U);
    EXPECT_EQ(m.desiredRegister(2), 1U); // the register holds the request
    writeProcStat(root, {{100, 100}, {200, 0}});
    ASSERT_FALSE(m.sample(3000, out));
    EXPECT_EQ(out[1].util, 1024);
    EXPECT_EQ(out[1].deliveredPerf, 3300U);
    EXPECT_EQ(out[2].util, 248);
    EXPECT_EQ(out[2].deliveredPerf, 800U);
    EXPECT_EQ(out[0].util, 512);

    std::array<CpuSample, 3> wrong{};
    EXPECT_EQ(m.sample(4000, wrong), std::errc::invalid_argument);
}

TEST(SimulatorMachineTest, ApplyWritesTheDesiredRegisterAndCountsIt)
{
    const TempTree root;
    SimulatorMachine m(sim("rd-n2"), root.path());
    ASSERT_EQ(m.topology().cpus.size(), 16U);
    EXPECT_EQ(m.desiredRegister(7), 0U);
    ASSERT_FALSE(m.apply(std::array{PerfRequest{7, 1234}}));
    EXPECT_EQ(m.desiredRegister(7), 1234U);
    // One full-width store, nothing read, nothing locked.
    EXPECT_EQ(m.counts(), (SimulatorCounts{0, 1, 0, 0, 0}));

    // Errors: the first is returned, the other requests still go out.
    EXPECT_EQ(m.apply(std::array{PerfRequest{16, 1}, PerfRequest{3, 900}}),
              cppc::Errc::noSuchCpu);
    EXPECT_EQ(m.desiredRegister(3), 900U);
    EXPECT_THROW((void)m.desiredRegister(16), std::out_of_range);

    // After restore() nothing more is written.
    EXPECT_THAT(m.restore().entries(), IsEmpty());
    ASSERT_FALSE(m.apply(std::array{PerfRequest{7, 2000}}));
    EXPECT_EQ(m.desiredRegister(7), 1234U);
}

TEST(SimulatorMachineTest, PackedFieldsGoThroughTheirLockedUnit)
{
    const TempTree root;
    SimulatorMachine m(sim("packed", 3), root.path());
    ASSERT_FALSE(m.apply(std::array{PerfRequest{1, 200}}));
    EXPECT_EQ(m.desiredRegister(1), 200U);
    EXPECT_EQ(m.counts(), (SimulatorCounts{1, 1, 1, 0, 0}));
    EXPECT_EQ(m.topology().cpus[0].highest, 255U);
}

TEST(SimulatorMachineTest, AnAliasedDesiredWordIsWrittenOncePerBatch)
{
    const TempTree root;
    SimulatorMachine m(sim("orion-o6"), root.path());
    const auto& t = m.topology();
    ASSERT_THAT(t.cpus, SizeIs(12));
    ASSERT_THAT(t.domains, SizeIs(5));
    for (const auto& d : t.domains)
    {
        EXPECT_EQ(d.coordination, Coordination::shared);
    }
    EXPECT_THAT(t.domains[0].cpus, ElementsAre(0, 11)); // domain 4
    EXPECT_THAT(t.domains[1].cpus, ElementsAre(1, 2, 3, 4));
    EXPECT_EQ(m.psdDomain(11), 4U);
    EXPECT_EQ(t.cpus[1].highest, 0x911U);

    // Domain 2 (CPUs 1-4) shares one Desired word: one store for the four
    // requests the daemon makes for it.
    ASSERT_FALSE(
        m.apply(std::array{PerfRequest{1, 0x800}, PerfRequest{2, 0x800},
                           PerfRequest{3, 0x800}, PerfRequest{4, 0x800}}));
    EXPECT_EQ(m.counts().registerWrites, 1U);
    for (std::uint32_t cpu = 1; cpu <= 4; ++cpu)
    {
        EXPECT_EQ(m.desiredRegister(cpu), 0x800U);
    }
    // The next batch writes again.
    ASSERT_FALSE(m.apply(std::array{PerfRequest{2, 0x800}}));
    EXPECT_EQ(m.counts().registerWrites, 2U);
}

TEST(SimulatorMachineTest, AltraReadsItsCapabilitiesAndWritesThroughPcc)
{
    const TempTree root;
    SimulatorMachine m(sim("altra"), root.path());
    ASSERT_THAT(m.topology().cpus, SizeIs(32));
    EXPECT_EQ(m.topology().cpus[5].highest, 3000U);
    EXPECT_EQ(m.topology().cpus[5].lowest, 1000U);
    EXPECT_EQ(m.counts(), SimulatorCounts{}); // reading them is set-up
    ASSERT_FALSE(m.apply(std::array{PerfRequest{5, 1500}}));
    EXPECT_EQ(m.desiredRegister(5), 1500U);
    const SimulatorCounts c = m.counts();
    EXPECT_EQ(c.pccCommands, 1U);
    EXPECT_EQ(c.pccDoorbells, 1U);
    EXPECT_EQ(c.registerWrites, 1U);
}

TEST(SimulatorMachineTest, ScalesToFourThousandCpusWithoutAllocatingPerTick)
{
    TempTree root;
    writeProcStat(root, {{0, 0}, {0, 0}, {0, 0}});
    SimulatorMachine m(sim("rd-n2", 4096), root.path());
    ASSERT_THAT(m.topology().cpus, SizeIs(4096));
    std::vector<CpuSample> out(4096);
    std::vector<PerfRequest> requests;
    for (std::uint32_t cpu = 0; cpu < 4096; ++cpu)
    {
        requests.push_back({cpu, 1000 + cpu % 2000});
    }
    ASSERT_FALSE(m.sample(0, out));
    ASSERT_FALSE(m.apply(requests));
    writeProcStat(root, {{10, 0}, {5, 5}, {0, 10}});

    const std::size_t before = allocations;
    const std::error_code s = m.sample(1000, out);
    const std::error_code a = m.apply(requests);
    const std::size_t after = allocations;
    EXPECT_FALSE(s);
    EXPECT_FALSE(a);
    EXPECT_EQ(after, before);
    EXPECT_EQ(m.counts().registerWrites, 2U * 4096);
    EXPECT_EQ(m.desiredRegister(4095), 1000U + 4095 % 2000);
    // Simulated CPU 4095 follows host CPU 0 (4095 mod 3), which is busy, and
    // can show no more than its performance allows.
    EXPECT_EQ(out[4095].util, 1024 * (1000 + 4095 % 2000) / 3300);
}

TEST(SimulatorMachineTest, FixedLayoutsRefuseOtherCounts)
{
    const TempTree root;
    EXPECT_THAT(
        errorOf([&] { SimulatorMachine m(sim("altra", 64), root.path()); }),
        AllOf(HasSubstr("'altra'"), HasSubstr("64"),
              HasSubstr("rd-n2, packed")));
    EXPECT_THAT(
        errorOf([&] { SimulatorMachine m(sim("cray-1"), root.path()); }),
        HasSubstr("'cray-1'"));
}

// ---------------------------------------------------------------------------
// The kernel machine on a fake sysfs tree:
//   policy0  CPUs 0-3 (one shared policy), Orion O6 big-core capabilities,
//            schedutil, transition latency 100 us
//   policy4  CPU 4 alone, 255/200/50/10 at 1000-3000 MHz, userspace

void writeCaps(const TempTree& t, unsigned cpu,
               std::array<std::uint32_t, 4> perf, const char* lowestFreq,
               const char* nominalFreq)
{
    const std::string dir =
        "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/acpi_cppc/";
    const std::array<const char*, 4> names = {
        "highest_perf", "nominal_perf", "lowest_nonlinear_perf", "lowest_perf"};
    for (std::size_t i = 0; i < names.size(); ++i)
    {
        t.write(dir + names[i], std::to_string(perf[i]) + "\n");
    }
    t.write(dir + "lowest_freq", std::string(lowestFreq) + "\n");
    t.write(dir + "nominal_freq", std::string(nominalFreq) + "\n");
    t.write(dir + "feedback_ctrs", "ref:1000 del:2000\n");
}

void writePolicy(const TempTree& t, unsigned number, const char* cpus,
                 const char* governor, const char* setspeed,
                 std::uint32_t minKhz, std::uint32_t maxKhz,
                 const char* latencyNs)
{
    const std::string dir =
        "sys/devices/system/cpu/cpufreq/policy" + std::to_string(number) + "/";
    t.write(dir + "related_cpus", std::string(cpus) + "\n");
    t.write(dir + "affected_cpus", std::string(cpus) + "\n");
    t.write(dir + "scaling_driver", "cppc_cpufreq\n");
    t.write(dir + "scaling_available_governors",
            "ondemand userspace performance schedutil \n");
    t.write(dir + "scaling_governor", std::string(governor) + "\n");
    t.write(dir + "scaling_setspeed", std::string(setspeed) + "\n");
    t.write(dir + "cpuinfo_min_freq", std::to_string(minKhz) + "\n");
    t.write(dir + "cpuinfo_max_freq", std::to_string(maxKhz) + "\n");
    t.write(dir + "scaling_min_freq", std::to_string(minKhz) + "\n");
    t.write(dir + "scaling_max_freq", std::to_string(maxKhz) + "\n");
    t.write(dir + "cpuinfo_transition_latency", std::string(latencyNs) + "\n");
}

struct FakeKernel
{
    FakeKernel()
    {
        for (unsigned cpu = 0; cpu < 4; ++cpu)
        {
            writeCaps(sys, cpu, {0x2000, 0x2000, 0xA3D, 0xA3D}, "800", "2500");
        }
        writeCaps(sys, 4, {255, 200, 50, 10}, "1000", "3000");
        writePolicy(sys, 0, "0 1 2 3", "schedutil", "<unsupported>", 800000,
                    2500000, "100000");
        writePolicy(sys, 4, "4", "userspace", "2000000", 1000000, 3000000,
                    "4294967295");
        writeProcStat(sys, {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}});
    }

    BackendConfig config() const
    {
        BackendConfig c;
        c.type = BackendKind::kernel;
        return c;
    }
    fs::path stateDir() const
    {
        return state.path();
    }
    std::string policyFile(unsigned policy, const char* name) const
    {
        return sys.read("sys/devices/system/cpu/cpufreq/policy" +
                        std::to_string(policy) + "/" + name);
    }

    // The tree as sysfs shows it: scaling_setspeed reads "<unsupported>"
    // unless the governor is userspace, whatever a plain file last held.
    std::map<std::string, std::string> kernelView() const
    {
        std::map<std::string, std::string> s = sys.snapshot("sys");
        for (auto& [path, content] : s)
        {
            const std::string suffix = "scaling_setspeed";
            if (path.ends_with(suffix) &&
                s.at(path.substr(0, path.size() - suffix.size()) +
                     "scaling_governor") != "file userspace\n")
            {
                content = "file <unsupported>\n";
            }
        }
        return s;
    }

    TempTree sys;
    TempTree state;
};

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
    ASSERT_FALSE(m->apply(std::array{
        PerfRequest{0, 0x1000}, PerfRequest{1, 0x1000}, PerfRequest{2, 0x1000},
        PerfRequest{3, 0x1000}, PerfRequest{4, 150}}));
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
    ASSERT_FALSE(
        m->apply(std::array{PerfRequest{1, 0x1800}, PerfRequest{0, 0x1000}}));
    EXPECT_EQ(k.policyFile(0, "scaling_setspeed"), "1875049\n");

    EXPECT_EQ(m->apply(std::array{PerfRequest{5, 1}}), cppc::Errc::noSuchCpu);
    EXPECT_EQ(m->apply(std::array{PerfRequest{4, 256}}),
              cppc::Errc::valueOutOfRange);

    ASSERT_NE(k.kernelView(), before);
    EXPECT_THAT(m->restore().entries(), IsEmpty());
    EXPECT_EQ(k.kernelView(), before);
    EXPECT_FALSE(k.state.exists("kernel.state"));
    // Nothing is written after restore().
    ASSERT_FALSE(m->apply(std::array{PerfRequest{4, 100}}));
    EXPECT_EQ(k.policyFile(4, "scaling_setspeed"), "2000000\n");
}

TEST(KernelMachineTest, SampleAndApplyDoNotAllocateAfterTheirFirstCall)
{
    FakeKernel k;
    KernelMachine m(k.sys.path(), {});
    EXPECT_THAT(m.countersProblem(), IsEmpty());
    std::array<CpuSample, 5> out{};
    const std::array requests{PerfRequest{0, 0x1800}, PerfRequest{4, 100}};
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

// A run of the kernel machine that writes `requests` and dies without
// restoring or unwinding.
void crash(const FakeKernel& k, std::span<const PerfRequest> requests)
{
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0)
    {
        try
        {
            std::unique_ptr<Machine> m =
                makeMachine(k.config(), k.sys.path(), k.stateDir());
            ::_exit(m->apply(requests) ? 1 : 0);
        }
        catch (...)
        {
            ::_exit(2);
        }
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
}

TEST(KernelMachineTest, ACrashedRunIsUndoneAtTheNextStart)
{
    FakeKernel k;
    const auto before = k.kernelView();
    ASSERT_NO_FATAL_FAILURE(
        crash(k, std::array{PerfRequest{0, 0x1800}, PerfRequest{4, 100}}));
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
    ASSERT_FALSE(m->apply(std::array{PerfRequest{4, 100}}));
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
    ASSERT_NO_FATAL_FAILURE(crash(k, std::array{PerfRequest{0, 0x1800}}));
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

// ---------------------------------------------------------------------------
// auto

TEST(AutoBackendTest, KernelWhenTheKernelFoundCppcElseSimulator)
{
    const TempTree root;
    EXPECT_EQ(resolveBackend(BackendKind::automatic, root.path()),
              BackendKind::simulator);
    EXPECT_EQ(resolveBackend(BackendKind::registers, root.path()),
              BackendKind::registers);
    const std::unique_ptr<Machine> m =
        makeMachine(BackendConfig{}, root.path(), {});
    EXPECT_EQ(m->name(), "simulator:rd-n2");
    EXPECT_EQ(m->topology().cpus.size(), 16U);

    fs::create_directories(
        root.path() / "sys/devices/system/cpu/cpu0/acpi_cppc");
    EXPECT_EQ(resolveBackend(BackendKind::automatic, root.path()),
              BackendKind::kernel);
    EXPECT_EQ(resolveBackend(BackendKind::simulator, root.path()),
              BackendKind::simulator);
    // Chosen, but cpufreq is missing: the message says both.
    EXPECT_THAT(
        errorOf([&] { (void)makeMachine(BackendConfig{}, root.path(), {}); }),
        AllOf(HasSubstr("kernel backend (auto: '" +
                        cppcgov::daemon::cppcProbePath(root.path()).string() +
                        "' exists): "),
              HasSubstr("cpufreq")));

    FakeKernel k;
    EXPECT_EQ(makeMachine(BackendConfig{}, k.sys.path(), {})->name(), "kernel");
}

TEST(AutoBackendTest, TheSimulatorsErrorsNameTheLayout)
{
    const TempTree root;
    BackendConfig c;
    c.type = BackendKind::simulator;
    c.simulator = sim("orion-o6", 64);
    EXPECT_THAT(errorOf([&] { (void)makeMachine(c, root.path(), {}); }),
                AllOf(HasSubstr("simulator backend: "),
                      HasSubstr("'orion-o6'")));
}

// ---------------------------------------------------------------------------
// The registers machine on fake firmware, a file standing in for /dev/mem

namespace aml = cppc::acpi::testing;

aml::Bytes cppcCpu(std::string_view name, std::uint64_t uid,
                   const aml::Bytes& desired, std::uint64_t domain)
{
    return aml::cpuDevice(
        name, uid,
        aml::cat({aml::nameOp("_CPC", aml::cpcPackage(desired)),
                  aml::nameOp("_PSD", aml::psdPackage(domain, 0xFD, 1))}));
}

aml::Bytes memory(std::uint64_t address)
{
    return aml::reg(0, 32, 0, 3, address);
}

struct FakeFirmware
{
    // Writes the tables, and a 16 KiB memory file unless `withMemory` is
    // false.
    FakeFirmware(std::vector<cppc::acpi::Table> tables, bool withMemory = true)
    {
        for (const cppc::acpi::Table& table : tables)
        {
            root.write("sys/firmware/acpi/tables/" + table.header.signature,
                       std::string(table.bytes.begin(), table.bytes.end()));
        }
        if (withMemory)
        {
            root.write("dev/mem", std::string(16 * 1024, '\0'));
        }
        writeProcStat(root, {{0, 0}, {0, 0}});
    }

    // The 32-bit value at `address` in the memory file.
    std::uint32_t word(std::uint64_t address) const
    {
        const std::string m = root.read("dev/mem");
        std::uint32_t v = 0;
        for (unsigned i = 4; i-- > 0;)
        {
            v = (v << 8) | static_cast<unsigned char>(m.at(address + i));
        }
        return v;
    }

    TempTree root;
};

std::vector<cppc::acpi::Table> twoCpus(const aml::Bytes& desired0,
                                       const aml::Bytes& desired1)
{
    return {aml::table("DSDT",
                       aml::scope("\\_SB",
                                  aml::cat({cppcCpu("CPU0", 0, desired0, 0),
                                            cppcCpu("CPU1", 1, desired1, 1)}))),
            aml::madt({{0}, {1}})};
}

TEST(RegistersMachineTest, WritesDesiredIntoMemoryThroughThePlan)
{
    FakeFirmware f(twoCpus(memory(0x1000), memory(0x2004)));
    RegistersMachine m(f.root.path());
    EXPECT_EQ(m.name(), "registers");
    const auto& t = m.topology();
    ASSERT_THAT(t.cpus, SizeIs(2));
    EXPECT_EQ(t.cpus[1].highest, 300U);
    EXPECT_EQ(t.cpus[1].nominal, 250U);
    EXPECT_EQ(t.cpus[1].lowestNonlinear, 100U);
    EXPECT_EQ(t.cpus[1].lowest, 50U);
    EXPECT_EQ(m.psdDomain(1), 1U);

    ASSERT_FALSE(m.apply(std::array{PerfRequest{0, 200}, PerfRequest{1, 75}}));
    EXPECT_EQ(f.word(0x1000), 200U);
    EXPECT_EQ(f.word(0x2004), 75U);

    std::array<CpuSample, 2> out{};
    ASSERT_FALSE(m.sample(0, out));
    writeProcStat(f.root, {{100, 0}, {30, 70}});
    ASSERT_FALSE(m.sample(1000, out));
    EXPECT_EQ(out[0].util, 682); // 1024 x 200 / 300
    EXPECT_EQ(out[0].deliveredPerf, 0U);
    EXPECT_EQ(out[1].util, 76); // 307 x 75 / 300

    EXPECT_THAT(m.restore().entries(), IsEmpty());
    ASSERT_FALSE(m.apply(std::array{PerfRequest{0, 100}}));
    EXPECT_EQ(f.word(0x1000), 200U);
}

TEST(RegistersMachineTest, RefusesPccAndNamesTheKernelBackend)
{
    std::vector<cppc::acpi::Table> tables =
        twoCpus(memory(0x1000), aml::reg(0x0A, 32, 0, 1, 0x14));
    tables.push_back(aml::pcctType2(2, 0x100));
    FakeFirmware f(tables);
    EXPECT_THAT(errorOf([&] { RegistersMachine m(f.root.path()); }),
                AllOf(HasSubstr("CPU 1"), HasSubstr("PCC subspace 1"),
                      HasSubstr("use the kernel backend")));
}

TEST(RegistersMachineTest, StartUpErrorsNameWhatIsMissing)
{
    BackendConfig c;
    c.type = BackendKind::registers;
    const TempTree empty;
    EXPECT_THAT(errorOf([&] { (void)makeMachine(c, empty.path(), {}); }),
                AllOf(HasSubstr("registers backend: "),
                      HasSubstr("sys/firmware/acpi/tables")));

    FakeFirmware noMemory(twoCpus(memory(0x1000), memory(0x1004)), false);
    EXPECT_THAT(
        errorOf([&] { (void)makeMachine(c, noMemory.root.path(), {}); }),
        HasSubstr((noMemory.root.path() / "dev/mem").string()));

    // A register beyond the end of the memory file cannot be mapped.
    FakeFirmware far(twoCpus(memory(0x1000), memory(0x100000)));
    EXPECT_THAT(errorOf([&] { (void)makeMachine(c, far.root.path(), {}); }),
                HasSubstr("registers backend: "));

    FakeFirmware noStat(twoCpus(memory(0x1000), memory(0x1004)));
    fs::remove(noStat.root.path() / "proc/stat");
    EXPECT_THAT(errorOf([&] { (void)makeMachine(c, noStat.root.path(), {}); }),
                HasSubstr("proc/stat"));
}

} // namespace
} // namespace cppcgov::daemon
