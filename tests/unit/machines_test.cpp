// SPDX-License-Identifier: Apache-2.0
// The backend registry: what `auto` picks, that every backend kind is
// registered, and that start-up errors name the backend and why it was
// chosen.
#include "daemon/machines.hpp"
#include "machine_test_support.hpp"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::test::TempTree;
using test::errorOf;
using test::FakeKernel;
using test::sim;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// ---------------------------------------------------------------------------
// auto

TEST(AutoBackendTest, KernelWhenTheKernelFoundCppcElseRefused)
{
    const TempTree root;
    const std::string probe =
        cppcgov::daemon::cppcProbePath(root.path()).string();
    // Never the simulator: the refusal says what was looked for and how to
    // run the simulator on purpose.
    EXPECT_THAT(
        errorOf([&] {
            (void)resolveBackend(BackendKind::automatic, root.path());
        }),
        AllOf(HasSubstr("looked for '" + probe + "'"),
              HasSubstr("firmware/acpi/tables', missing too"),
              HasSubstr("set backend: simulator to run the simulator on "
                        "purpose")));
    EXPECT_THAT(
        errorOf([&] { (void)makeMachine(BackendConfig{}, root.path(), {}); }),
        HasSubstr("backend auto found no CPPC"));
    fs::create_directories(root.path() / "sys/firmware/acpi/tables");
    EXPECT_THAT(errorOf([&] {
                    (void)resolveBackend(BackendKind::automatic, root.path());
                }),
                HasSubstr("firmware/acpi/tables', which are there"));
    EXPECT_EQ(resolveBackend(BackendKind::registers, root.path()),
              BackendKind::registers);
    BackendConfig simulator;
    simulator.type = BackendKind::simulator;
    const std::unique_ptr<Machine> m = makeMachine(simulator, root.path(), {});
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
// The table

TEST(BackendRegistryTest, EveryKindIsRegisteredOnceAndAutoTriesOnlyKernel)
{
    std::vector<BackendKind> kinds;
    std::vector<BackendKind> probed;
    for (const BackendEntry& b : backends())
    {
        EXPECT_NE(b.start, nullptr) << backendKindName(b.kind);
        kinds.push_back(b.kind);
        if (b.probe != nullptr)
        {
            probed.push_back(b.kind);
        }
    }
    EXPECT_THAT(
        kinds, UnorderedElementsAre(BackendKind::simulator, BackendKind::kernel,
                                    BackendKind::registers));
    EXPECT_THAT(probed, ElementsAre(BackendKind::kernel));
}

} // namespace
} // namespace cppcgov::daemon
