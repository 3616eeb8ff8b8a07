// SPDX-License-Identifier: Apache-2.0
// The kernel backend on a fake machine: the CPUs' capabilities, the
// policies it finds and switches to userspace at start-up, what it refuses
// to start on, and the requests and limits it writes per policy.
#include "kernel_backend_test_support.hpp"
#include "lib/backend/kernel.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"
#include "unkind_io.hpp"

#include <filesystem>
#include <string>
#include <system_error>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using test::Machine;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---------------------------------------------------------------------------
// Capabilities

TEST(PerfCapsTest, ReadsEveryAttribute)
{
    Machine m;
    const PerfCaps c = readPerfCaps(m.root(), 4);
    EXPECT_EQ(c.highestPerf, 255U);
    EXPECT_EQ(c.nominalPerf, 200U);
    EXPECT_EQ(c.lowestNonlinearPerf, 50U);
    EXPECT_EQ(c.lowestPerf, 10U);
    EXPECT_EQ(c.referencePerf, 200U);
    EXPECT_FALSE(c.referenceFromNominal);
    EXPECT_EQ(c.lowestFreqMhz, 1000U);
    EXPECT_EQ(c.nominalFreqMhz, 3000U);
}

TEST(PerfCapsTest, MissingFrequenciesAreZeroAndReferenceFallsBackToNominal)
{
    Machine m;
    const PerfCaps c = readPerfCaps(m.root(), 5);
    EXPECT_EQ(c.lowestFreqMhz, 0U);
    EXPECT_EQ(c.nominalFreqMhz, 0U);
    EXPECT_EQ(c.referencePerf, 800U);
    EXPECT_TRUE(c.referenceFromNominal);
}

TEST(PerfCapsTest, AZeroOrMissingPerformanceLevelRefusesTheCpu)
{
    Machine m;
    const std::string dir = "sys/devices/system/cpu/cpu4/acpi_cppc/";
    m.sys.write(dir + "lowest_nonlinear_perf", "0\n");
    try
    {
        (void)readPerfCaps(m.root(), 4);
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), Errc::malformedAttribute);
        EXPECT_THAT(e.what(),
                    HasSubstr("cpu4/acpi_cppc/lowest_nonlinear_perf"));
    }
    std::filesystem::remove(m.root() / dir / "lowest_nonlinear_perf");
    EXPECT_THROW((void)readPerfCaps(m.root(), 4), std::system_error);
    m.sys.write(dir + "lowest_nonlinear_perf", "50\n");
    m.sys.write(dir + "reference_perf", "lots\n");
    EXPECT_THROW((void)readPerfCaps(m.root(), 4), std::system_error);
    m.sys.write(dir + "reference_perf", "0\n");
    EXPECT_TRUE(readPerfCaps(m.root(), 4).referenceFromNominal);
}

// ---------------------------------------------------------------------------
// The backend

TEST(KernelBackendTest, FindsPoliciesAndSwitchesThemToUserspace)
{
    Machine m;
    KernelBackend b(m.root(), {{}, m.stateFile()});
    ASSERT_EQ(b.policies().size(), 3U); // policy6 has no online CPU
    EXPECT_EQ(b.policies()[0].name, "policy0");
    EXPECT_THAT(b.policies()[0].affectedCpus, ElementsAre(0, 1, 2, 3));
    EXPECT_EQ(b.policies()[1].name, "policy4");
    EXPECT_EQ(b.policies()[2].name, "policy5");
    EXPECT_EQ(b.policyOf(2), &b.policies()[0]);
    EXPECT_EQ(b.policyOf(5), &b.policies()[2]);
    EXPECT_EQ(b.policyOf(6), nullptr);
    EXPECT_EQ(b.policyOf(60), nullptr);
    EXPECT_TRUE(b.policies()[0].scale.linear());
    EXPECT_FALSE(b.policies()[2].scale.linear());
    for (const unsigned p : {0U, 4U, 5U})
    {
        EXPECT_EQ(m.policyFile(p, "scaling_governor"), "userspace\n") << p;
    }
    EXPECT_EQ(m.policyFile(6, "scaling_governor"), "schedutil\n");
    EXPECT_EQ(m.tree.read("run/cpufreq.state"),
              "cppcgov-cpufreq-state 1\n"
              "policy0 schedutil 800000 2500000 -\n"
              "policy4 userspace 1421052 3000000 2000000\n"
              "policy5 performance 600000 2400000 -\n");
}

TEST(KernelBackendTest, AnInactivePolicyIsLeftAlone)
{
    // Every CPU of policy5 offline: on a real kernel (Linux 6.1) every
    // attribute of the policy answers EBUSY, related_cpus first; the
    // daemon used to refuse to start.
    Machine m;
    cppc::test::UnkindIo io;
    io.offline(m.policyDir(5));
    KernelBackend b(m.root(), {{}, m.stateFile(), &io});
    ASSERT_EQ(b.policies().size(), 2U);
    EXPECT_EQ(b.policies()[0].name, "policy0");
    EXPECT_EQ(b.policies()[1].name, "policy4");
    EXPECT_EQ(b.policyOf(5), nullptr);
    EXPECT_EQ(m.policyFile(5, "scaling_governor"), "performance\n");
    EXPECT_EQ(m.tree.read("run/cpufreq.state"),
              "cppcgov-cpufreq-state 1\n"
              "policy0 schedutil 800000 2500000 -\n"
              "policy4 userspace 1421052 3000000 2000000\n");

    // Asked for by CPU, it is an error that says why.
    io.offline(m.policyDir(5));
    EXPECT_THAT(
        [&] {
        try
        {
            KernelBackend c(m.root(), {{5}, {}, &io});
        }
        catch (const std::system_error& e)
        {
            return std::string(e.what());
        }
        return std::string("no error");
        }(),
        HasSubstr("no active policy covers CPU 5"));
}

TEST(KernelBackendTest, WritesLandPerPolicyAndNameTheCpusAffected)
{
    Machine m;
    KernelBackend b(m.root());
    const KernelWrite w = b.setPerf(2, 0x1000);
    ASSERT_FALSE(w.error);
    EXPECT_EQ(w.khz, 1250099U);
    EXPECT_EQ(w.perf, 0x1000U);
    EXPECT_THAT(w.cpus, ElementsAre(0, 1, 2, 3));
    EXPECT_EQ(m.policyFile(0, "scaling_setspeed"), "1250099\n");
    EXPECT_EQ(m.policyFile(4, "scaling_setspeed"), "2000000\n");

    // policy4: one kHz above the kernel's own perfToKhz(11), which it would
    // turn back into 10.
    const KernelWrite w4 = b.setPerf(4, 150);
    ASSERT_FALSE(w4.error);
    EXPECT_EQ(w4.khz, 2473685U);
    EXPECT_EQ(w4.perf, 150U);
    EXPECT_THAT(w4.cpus, ElementsAre(4));
    EXPECT_EQ(m.policyFile(4, "scaling_setspeed"), "2473685\n");

    // policy5 converts through DMI's 3000 MHz and highest_perf 1000.
    const KernelWrite w5 = b.setPerf(5, 500);
    ASSERT_FALSE(w5.error);
    EXPECT_EQ(m.policyFile(5, "scaling_setspeed"), "1500000\n");
    EXPECT_EQ(m.policyFile(0, "scaling_setspeed"), "1250099\n");
}

TEST(KernelBackendTest, RequestsAreClampedIntoThePolicyLimits)
{
    Machine m;
    KernelBackend b(m.root());
    // 0x911 is below lowest_perf: 708455 kHz, clamped to the 800000 minimum.
    KernelWrite w = b.setPerf(0, 0x911);
    ASSERT_FALSE(w.error);
    EXPECT_EQ(w.khz, 800000U);
    EXPECT_EQ(w.perf, 0xA3DU);
    // policy4's limits are 1421052-3000000 (perf 50-200); 255 is boost.
    w = b.setPerf(4, 255);
    ASSERT_FALSE(w.error);
    EXPECT_EQ(w.khz, 3000000U);
    EXPECT_EQ(w.perf, 200U);
    EXPECT_EQ(m.policyFile(4, "scaling_setspeed"), "3000000\n");
}

TEST(KernelBackendTest, RequestErrors)
{
    Machine m;
    KernelBackend b(m.root());
    EXPECT_EQ(b.setPerf(6, 100).error, Errc::noSuchCpu);
    EXPECT_EQ(b.setPerf(1000, 100).error, Errc::noSuchCpu);
    EXPECT_EQ(b.setPerf(4, 256).error, Errc::valueOutOfRange);
    std::filesystem::remove(m.root() / "sys/devices/system/cpu/cpufreq/policy4/"
                                       "scaling_setspeed");
    const KernelWrite w = b.setPerf(4, 100);
    EXPECT_EQ(w.error, std::errc::no_such_file_or_directory);
    ASSERT_NE(w.file, nullptr);
    EXPECT_THAT(describe(*w.file, w.error),
                HasSubstr("policy4/scaling_setspeed': "));
    m.setPolicyFile(4, "scaling_setspeed", "2000000\n");
    EXPECT_THAT(b.restore().entries(), IsEmpty());
    EXPECT_EQ(b.setPerf(4, 100).error, Errc::backendStopped);
    EXPECT_EQ(b.setLimits(4, 50, 100).error, Errc::backendStopped);
}

TEST(KernelBackendTest, OnlyTheCpusAskedForAreDriven)
{
    Machine m;
    KernelBackend b(m.root(), {{1, 5}, {}});
    ASSERT_EQ(b.policies().size(), 2U);
    EXPECT_EQ(b.policies()[0].name, "policy0");
    EXPECT_EQ(b.policies()[1].name, "policy5");
    EXPECT_EQ(m.policyFile(4, "scaling_governor"), "userspace\n");
    EXPECT_EQ(b.setPerf(4, 100).error, Errc::noSuchCpu);
    EXPECT_THROW(KernelBackend(m.root(), {{6}, {}}), std::system_error);
}

TEST(KernelBackendTest, RefusedWhenUserspaceIsNotOffered)
{
    Machine m(
        {"conservative", "ondemand", "powersave", "performance", "schedutil"});
    const auto before = m.sys.snapshot();
    try
    {
        KernelBackend b(m.root(), {{}, m.stateFile()});
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), Errc::governorUnavailable);
        EXPECT_THAT(e.what(),
                    HasSubstr("policy0/scaling_available_governors'"));
        EXPECT_THAT(e.what(), HasSubstr("modprobe cpufreq_userspace"));
    }
    EXPECT_EQ(m.sys.snapshot(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
}

TEST(KernelBackendTest, RefusedWhenTheDriverIsNotCppcCpufreq)
{
    Machine m(test::allGovernors, "cpufreq-dt");
    const auto before = m.sys.snapshot();
    try
    {
        KernelBackend b(m.root());
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_THAT(e.what(), HasSubstr("policy5/scaling_driver' is "
                                        "'cpufreq-dt'"));
    }
    EXPECT_EQ(m.sys.snapshot(), before);
}

TEST(KernelBackendTest, SetLimitsWritesBothAndKeepsWhatIsInForce)
{
    Machine m;
    KernelBackend b(m.root());
    const KernelWrite w = b.setLimits(0, 0xA3D, 0x1000);
    ASSERT_FALSE(w.error);
    EXPECT_EQ(m.policyFile(0, "scaling_min_freq"), "800000\n");
    EXPECT_EQ(m.policyFile(0, "scaling_max_freq"), "1250099\n");
    EXPECT_EQ(b.policies()[0].maxKhz, 1250099U);
    EXPECT_EQ(w.perf, 0x1000U);
    EXPECT_EQ(b.setPerf(0, 0x2000).khz, 1250099U);
    EXPECT_EQ(b.setLimits(0, 0x1000, 0xA3D).error, Errc::valueOutOfRange);
    EXPECT_EQ(b.setLimits(0, 0xA3D, 0x2001).error, Errc::valueOutOfRange);
}

} // namespace
} // namespace cppc::backend
