// SPDX-License-Identifier: Apache-2.0
// The kernel backend's CPPC knobs (auto_select, auto_act_window,
// energy_performance_preference_val) on a fake machine: what a probe
// offers and why not, writing only what changed, a value the kernel
// rounds, and putting them back at stop and after a crash, failures
// included.
#include "kernel_backend_test_support.hpp"
#include "lib/backend/kernel.hpp"
#include "lib/error.hpp"

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using cppc::test::FakeKnobIo;
using test::Machine;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr auto autoSelect = PolicyKnob::autoSelect;
constexpr auto window = PolicyKnob::activityWindow;
constexpr auto epp = PolicyKnob::epp;

constexpr std::size_t at(PolicyKnob k)
{
    return static_cast<std::size_t>(k);
}

// The machine of kernel_backend_test_support.hpp with knobs: policy0 has
// all three; policy4 has them, but its firmware has no EPP register (the
// file reads as an empty line) and refuses auto_select (EOPNOTSUPP, as
// NVIDIA Grace does); policy5 runs a kernel before 6.16 (no files).
struct KnobMachine : Machine
{
    KnobMachine()
    {
        setPolicyFile(0, "auto_select", "0\n");
        setPolicyFile(0, "auto_act_window", "1000\n");
        setPolicyFile(0, "energy_performance_preference_val", "128\n");
        setPolicyFile(4, "auto_select", "0\n");
        setPolicyFile(4, "auto_act_window", "12000\n");
        setPolicyFile(4, "energy_performance_preference_val", "\n");
        io.refuseWrites(policyDir(4) / "auto_select", EOPNOTSUPP);
    }

    std::filesystem::path knob(unsigned policy, const char* name) const
    {
        return policyDir(policy) / name;
    }

    FakeKnobIo io;
};

TEST(KernelKnobsTest, AProbeOffersWhatExistsReadsAndTakesAWrite)
{
    KnobMachine m;
    KernelBackend b(m.root(), {{0, 4}, m.stateFile(), &m.io});
    ASSERT_EQ(b.policies().size(), 2U);
    const KernelPolicy& p0 = b.policies()[0];
    const KernelPolicy& p4 = b.policies()[1];
    EXPECT_TRUE(p0.offers(autoSelect));
    EXPECT_TRUE(p0.offers(window));
    EXPECT_TRUE(p0.offers(epp));
    EXPECT_FALSE(p4.offers(autoSelect));
    EXPECT_THAT(p4.knobProblem[at(autoSelect)],
                HasSubstr("policy4/auto_select' refuses writes: Operation "
                          "not supported"));
    EXPECT_TRUE(p4.offers(window));
    EXPECT_FALSE(p4.offers(epp));
    EXPECT_THAT(p4.knobProblem[at(epp)],
                HasSubstr("is empty: the firmware has no such register"));
    // The machine offers what every policy does.
    EXPECT_FALSE(b.offers(autoSelect));
    EXPECT_TRUE(b.offers(window));
    EXPECT_FALSE(b.offers(epp));
    EXPECT_THAT(b.knobsSummary(),
                AllOf(HasSubstr("offered: auto_act_window;"),
                      HasSubstr("not offered: auto_select: '"),
                      HasSubstr("energy_performance_preference_val: '")));
    // The probe wrote back what it read, and the state file records the
    // knobs offered, as found.
    EXPECT_EQ(m.policyFile(0, "auto_act_window"), "1000\n");
    EXPECT_EQ(m.tree.read("run/cpufreq.state"),
              "cppcgov-cpufreq-state 1\n"
              "policy0 schedutil 800000 2500000 - auto_select=0 "
              "auto_act_window=1000 energy_performance_preference_val=128\n"
              "policy4 userspace 1421052 3000000 2000000 "
              "auto_act_window=12000\n");
}

TEST(KernelKnobsTest, AKernelBeforeTheKnobsOffersNone)
{
    KnobMachine m;
    KernelBackend b(m.root(), {{5}, {}, &m.io});
    for (const PolicyKnob k : allPolicyKnobs)
    {
        EXPECT_FALSE(b.offers(k));
        EXPECT_THAT(b.policies()[0].knobProblem[at(k)],
                    HasSubstr("does not exist"));
    }
    EXPECT_EQ(b.knobsSummary(),
              "CPPC controls offered: none; not offered: auto_select: '" +
                  m.knob(5, "auto_select").string() +
                  "' does not exist; auto_act_window: '" +
                  m.knob(5, "auto_act_window").string() +
                  "' does not exist; energy_performance_preference_val: '" +
                  m.knob(5, "energy_performance_preference_val").string() +
                  "' does not exist");
}

TEST(KernelKnobsTest, AReadThatFailsOrAValueOutOfRangeIsNotOffered)
{
    KnobMachine m;
    m.io.failReads(m.knob(0, "auto_act_window"), EIO);
    m.setPolicyFile(0, "energy_performance_preference_val", "256\n");
    m.setPolicyFile(0, "auto_select", "on\n");
    KernelBackend b(m.root(), {{0}, {}, &m.io});
    const KernelPolicy& p = b.policies()[0];
    EXPECT_THAT(p.knobProblem[at(window)],
                HasSubstr("auto_act_window': the read failed: Input/output "
                          "error"));
    EXPECT_THAT(p.knobProblem[at(epp)],
                HasSubstr("holds '256', not a value of 255 or less"));
    EXPECT_THAT(p.knobProblem[at(autoSelect)],
                HasSubstr("holds 'on', not a value of 1 or less"));
    EXPECT_EQ(m.io.writes(m.knob(0, "auto_act_window")), 0U);
}

TEST(KernelKnobsTest, WritesOnlyWhatChangedAndKeepsWhatItWrote)
{
    KnobMachine m;
    KernelBackend b(m.root(), {{0}, {}, &m.io});
    const auto w = m.knob(0, "auto_act_window");
    const auto e = m.knob(0, "energy_performance_preference_val");
    const auto a = m.knob(0, "auto_select");
    ASSERT_EQ(m.io.writes(w), 1U); // the probe's
    KnobValues inForce = b.saved()[0].knobs;
    KnobValues wanted{};
    wanted[at(window)] = 1234; // the register holds 1230
    wanted[at(epp)] = 128;     // as it is
    wanted[at(autoSelect)] = 1;
    ASSERT_FALSE(b.setKnobs(0, wanted, inForce).error);
    EXPECT_EQ(m.policyFile(0, "auto_act_window"), "1230\n");
    EXPECT_EQ(m.policyFile(0, "auto_select"), "1\n");
    EXPECT_EQ(m.io.writes(w), 2U);
    EXPECT_EQ(m.io.writes(e), 1U); // the probe's only
    EXPECT_EQ(inForce[at(window)], 1234U);
    // The same request again writes nothing, although 1230 is in the file.
    ASSERT_FALSE(b.setKnobs(2, wanted, inForce).error);
    EXPECT_EQ(m.io.writes(w), 2U);
    EXPECT_EQ(m.io.writes(a), 2U);
    // Nothing: leave as it is.
    ASSERT_FALSE(b.setKnobs(0, KnobValues{}, inForce).error);
    EXPECT_EQ(m.io.writes(a), 2U);
    // Out of range: refused, nothing written.
    wanted[at(epp)] = 256;
    wanted[at(autoSelect)] = 0;
    const KernelWrite bad = b.setKnobs(0, wanted, inForce);
    EXPECT_EQ(bad.error, Errc::valueOutOfRange);
    ASSERT_NE(bad.file, nullptr);
    EXPECT_EQ(*bad.file, e);
    EXPECT_EQ(m.policyFile(0, "auto_select"), "1\n");
    EXPECT_EQ(b.setKnobs(9, wanted, inForce).error, Errc::noSuchCpu);
}

TEST(KernelKnobsTest, AFailedWriteNamesItsFileAndTheOthersStillLand)
{
    KnobMachine m;
    KernelBackend b(m.root(), {{0}, {}, &m.io});
    KnobValues inForce = b.saved()[0].knobs;
    KnobValues wanted{};
    wanted[at(window)] = 5000;
    wanted[at(epp)] = 0;
    wanted[at(autoSelect)] = 1;
    m.io.refuseWrites(m.knob(0, "auto_act_window"), EIO);
    // The file vanishes (the driver was unbound under the daemon).
    std::filesystem::remove(m.knob(0, "energy_performance_preference_val"));
    const KernelWrite r = b.setKnobs(0, wanted, inForce);
    EXPECT_EQ(r.error, std::error_code(EIO, std::system_category()));
    ASSERT_NE(r.file, nullptr);
    EXPECT_EQ(*r.file, m.knob(0, "auto_act_window"));
    EXPECT_EQ(m.policyFile(0, "auto_select"), "1\n");
    EXPECT_EQ(inForce[at(autoSelect)], 1U);
    EXPECT_EQ(inForce[at(window)], 1000U); // still what was found
    EXPECT_EQ(inForce[at(epp)], 128U);
    // Healed: the next write does what is left, and only that.
    m.io.heal(m.knob(0, "auto_act_window"));
    m.setPolicyFile(0, "energy_performance_preference_val", "128\n");
    ASSERT_FALSE(b.setKnobs(0, wanted, inForce).error);
    EXPECT_EQ(m.policyFile(0, "auto_act_window"), "5000\n");
    EXPECT_EQ(m.policyFile(0, "energy_performance_preference_val"), "0\n");
    EXPECT_EQ(m.io.writes(m.knob(0, "auto_select")), 2U);
}

TEST(KernelKnobsTest, RestorePutsTheKnobsBackByteForByte)
{
    KnobMachine m;
    const auto before = m.kernelView();
    {
        KernelBackend b(m.root(), {{}, m.stateFile(), &m.io});
        KnobValues inForce = b.saved()[0].knobs;
        KnobValues wanted{};
        wanted[at(window)] = 99999;
        wanted[at(epp)] = 3;
        wanted[at(autoSelect)] = 1;
        ASSERT_FALSE(b.setKnobs(0, wanted, inForce).error);
        KnobValues inForce4 = b.saved()[1].knobs;
        ASSERT_FALSE(b.setKnobs(4, wanted, inForce4).error);
        EXPECT_EQ(m.policyFile(4, "auto_act_window"), "99000\n");
        EXPECT_EQ(m.policyFile(4, "auto_select"), "0\n"); // not offered
        ASSERT_NE(m.kernelView(), before);
        EXPECT_THAT(b.restore().entries(), IsEmpty());
    }
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(std::filesystem::exists(m.stateFile()));
}

TEST(KernelKnobsTest, AKnobThatDoesNotGoBackKeepsItsPolicyInTheStateFile)
{
    KnobMachine m;
    KernelBackend b(m.root(), {{}, m.stateFile(), &m.io});
    KnobValues inForce = b.saved()[0].knobs;
    KnobValues wanted{};
    wanted[at(autoSelect)] = 1;
    ASSERT_FALSE(b.setKnobs(0, wanted, inForce).error);
    m.io.refuseWrites(m.knob(0, "auto_select"), EIO);
    const RestoreResult r = b.restore();
    EXPECT_TRUE(r.isLeft("policy0"));
    EXPECT_FALSE(r.isLeft("policy4"));
    ASSERT_EQ(r.failures().size(), 1U);
    EXPECT_EQ(r.failures()[0].step, RestoreStep::writeSaved);
    EXPECT_EQ(r.failures()[0].file, m.knob(0, "auto_select"));
    EXPECT_THAT(describe(r.failures()[0]),
                AllOf(HasSubstr("'0'"), HasSubstr("Input/output error")));
    EXPECT_EQ(m.tree.read("run/cpufreq.state"),
              "cppcgov-cpufreq-state 1\n"
              "policy0 schedutil 800000 2500000 - auto_select=0 "
              "auto_act_window=1000 energy_performance_preference_val=128\n");
    // Once the cause is gone, a restore from the file finishes the job.
    m.io.heal(m.knob(0, "auto_select"));
    const RestoreResult again =
        KernelBackend::restoreFromFile(m.root(), m.stateFile(), m.io);
    EXPECT_FALSE(again.anythingLeft());
    EXPECT_EQ(m.policyFile(0, "auto_select"), "0\n");
    EXPECT_FALSE(std::filesystem::exists(m.stateFile()));
}

TEST(KernelKnobsTest, AfterACrashTheStateFilePutsTheKnobsBack)
{
    KnobMachine m;
    const auto before = m.kernelView();
    // What a run that died left: its state file, and knobs as it set them.
    m.tree.write("run/cpufreq.state",
                 "cppcgov-cpufreq-state 1\n"
                 "policy0 schedutil 800000 2500000 - auto_select=0 "
                 "auto_act_window=1000 energy_performance_preference_val=128\n"
                 "policy4 userspace 1421052 3000000 2000000 "
                 "auto_act_window=12000\n");
    m.setPolicyFile(0, "scaling_governor", "userspace\n");
    m.setPolicyFile(0, "auto_select", "1\n");
    m.setPolicyFile(0, "auto_act_window", "50\n");
    m.setPolicyFile(0, "energy_performance_preference_val", "0\n");
    m.setPolicyFile(4, "auto_act_window", "1230\n");
    const RestoreResult r =
        KernelBackend::restoreFromFile(m.root(), m.stateFile(), m.io);
    EXPECT_FALSE(r.anythingLeft());
    EXPECT_EQ(m.policyFile(0, "scaling_governor"), "schedutil\n");
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(std::filesystem::exists(m.stateFile()));
    // A knob in place already is not written.
    EXPECT_EQ(m.io.writes(m.knob(4, "auto_select")), 0U);
}

TEST(KernelKnobsTest, TheStateFileReadsKnobsStrictly)
{
    const std::string h = "cppcgov-cpufreq-state 1\n";
    const std::vector<PolicyState> s = parseState(
        h + "policy2 ondemand 1 2 - energy_performance_preference_val=255 "
            "auto_select=1\n",
        "/s");
    ASSERT_EQ(s.size(), 1U);
    EXPECT_EQ(s[0].knobs[at(epp)], 255U);
    EXPECT_EQ(s[0].knobs[at(autoSelect)], 1U);
    EXPECT_EQ(s[0].knobs[at(window)], std::nullopt);
    EXPECT_EQ(formatState(s), h + "policy2 ondemand 1 2 - auto_select=1 "
                                  "energy_performance_preference_val=255\n");
    for (const char* line :
         {"policy2 ondemand 1 2 - epp=3", "policy2 ondemand 1 2 - auto_select",
          "policy2 ondemand 1 2 - auto_select=2",
          "policy2 ondemand 1 2 - auto_act_window=1270000001",
          "policy2 ondemand 1 2 - auto_select=1 auto_select=1",
          "policy2 ondemand 1 2 - auto_select=", "policy2 ondemand 1 2 -  ",
          "policy2 ondemand 1 2"})
    {
        try
        {
            (void)parseState(h + line + "\n", "/s");
            ADD_FAILURE() << line;
        }
        catch (const std::system_error& e)
        {
            EXPECT_EQ(e.code(), Errc::malformedAttribute) << line;
            EXPECT_THAT(e.what(), HasSubstr("'/s'")) << line;
        }
    }
}

TEST(KernelKnobsTest, AKnobWhoseFileVanishedIsAFailedRestoreNotASuccess)
{
    KnobMachine m;
    KernelBackend b(m.root(), {{0}, m.stateFile(), &m.io});
    KnobValues inForce = b.saved()[0].knobs;
    KnobValues wanted{};
    wanted[at(epp)] = 7;
    ASSERT_FALSE(b.setKnobs(0, wanted, inForce).error);
    std::filesystem::remove(m.knob(0, "energy_performance_preference_val"));
    const RestoreResult r = b.restore();
    EXPECT_TRUE(r.isLeft("policy0"));
    ASSERT_EQ(r.failures().size(), 1U);
    EXPECT_EQ(r.failures()[0].file,
              m.knob(0, "energy_performance_preference_val"));
    EXPECT_EQ(r.failures()[0].error,
              std::error_code(ENOENT, std::system_category()));
    // Never created by the restore, and the record is kept.
    EXPECT_FALSE(std::filesystem::exists(
        m.knob(0, "energy_performance_preference_val")));
    EXPECT_THAT(m.tree.read("run/cpufreq.state"),
                HasSubstr("energy_performance_preference_val=128"));
}

} // namespace
} // namespace cppc::backend
