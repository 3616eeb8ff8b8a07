// SPDX-License-Identifier: Apache-2.0
// The registers backend on fake firmware tables, with a file standing in for
// /dev/mem: Desired (and Minimum and Maximum where the _CPC has them)
// written through the plan, the PCC rule, and start-up errors that name what
// is missing.
#include "aml_builder.hpp"
#include "daemon/machines.hpp"
#include "daemon/machines/registers_machine.hpp"
#include "lib/error.hpp"
#include "machine_test_support.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
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
using test::desiredOf;
using test::errorOf;
using test::writeProcStat;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

namespace aml = cppc::acpi::testing;

aml::Bytes cppcCpu(std::string_view name, std::uint64_t uid,
                   const aml::Bytes& cpc, std::uint64_t domain)
{
    return aml::cpuDevice(
        name, uid,
        aml::cat({aml::nameOp("_CPC", cpc),
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
    FakeFirmware(const std::vector<cppc::acpi::Table>& tables,
                 bool withMemory = true)
    {
        for (const cppc::acpi::Table& table : tables)
        {
            root.write("sys/firmware/acpi/tables/" + table.header.signature,
                       std::string(table.bytes.begin(), table.bytes.end()));
        }
        if (withMemory)
        {
            root.write("dev/mem", std::string(std::size_t{16} * 1024, '\0'));
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

// Two CPUs in domains of their own, with the _CPC packages given.
std::vector<cppc::acpi::Table> twoCpcs(const aml::Bytes& cpc0,
                                       const aml::Bytes& cpc1)
{
    return {aml::table("DSDT",
                       aml::scope("\\_SB",
                                  aml::cat({cppcCpu("CPU0", 0, cpc0, 0),
                                            cppcCpu("CPU1", 1, cpc1, 1)}))),
            aml::madt({{0}, {1}})};
}

// Two CPUs whose _CPC has Desired only.
std::vector<cppc::acpi::Table> twoCpus(const aml::Bytes& desired0,
                                       const aml::Bytes& desired1)
{
    return twoCpcs(aml::cpcPackage(desired0), aml::cpcPackage(desired1));
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

    ASSERT_FALSE(
        m.apply(std::array{desiredOf(m, 0, 200), desiredOf(m, 1, 75)}));
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
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 0, 100)}));
    EXPECT_EQ(f.word(0x1000), 200U);
}

TEST(RegistersMachineTest, OffersMinAndMaxWhereTheCpcHasThemAndWritesThem)
{
    FakeFirmware f(twoCpcs(
        aml::cpcPackage(memory(0x1000), memory(0x1010), memory(0x1014)),
        aml::cpcPackage(memory(0x2004), memory(0x2010), memory(0x2014))));
    RegistersMachine m(f.root.path());
    EXPECT_EQ(m.controls(),
              (Controls{Control::desired, Control::min, Control::max}));
    EXPECT_FALSE(m.controls().has(Control::epp));
    ASSERT_FALSE(
        m.apply(std::array{CppcRequest{0, 60, 200, 280, 5, false, {}},
                           CppcRequest{1, 50, 75, 300, 5, false, {}}}));
    EXPECT_EQ(f.word(0x1000), 200U);
    EXPECT_EQ(f.word(0x1010), 60U);
    EXPECT_EQ(f.word(0x1014), 280U);
    EXPECT_EQ(f.word(0x2010), 50U);
    EXPECT_EQ(f.word(0x2014), 300U);

    // An unordered request is refused whole.
    EXPECT_EQ(m.apply(std::array{CppcRequest{0, 250, 200, 280, {}, false, {}}}),
              cppc::Errc::valueOutOfRange);
    EXPECT_EQ(f.word(0x1000), 200U);
    EXPECT_EQ(f.word(0x1010), 60U);
}

TEST(RegistersMachineTest, WithoutMinAndMaxOnlyDesiredIsOfferedAndWritten)
{
    FakeFirmware f(twoCpus(memory(0x1000), memory(0x2004)));
    RegistersMachine m(f.root.path());
    EXPECT_EQ(m.controls(), Controls{Control::desired});
    ASSERT_FALSE(
        m.apply(std::array{CppcRequest{0, 60, 200, 280, 5, false, {}}}));
    EXPECT_EQ(f.word(0x1000), 200U);
    const std::string mem = f.root.read("dev/mem");
    EXPECT_EQ(std::count(mem.begin(), mem.end(), '\0'),
              static_cast<std::ptrdiff_t>(mem.size() - 1)); // one byte: 200
}

TEST(RegistersMachineTest, RefusesPccAndNamesTheKernelBackend)
{
    std::vector<cppc::acpi::Table> tables =
        twoCpus(memory(0x1000), aml::reg(0x0A, 32, 0, 1, 0x14));
    tables.push_back(aml::pcctType2(2, 0x100));
    FakeFirmware f(tables);
    EXPECT_THAT(errorOf([&] { RegistersMachine m(f.root.path()); }),
                AllOf(HasSubstr("CPU 1"), HasSubstr("PCC subspace 1"),
                      HasSubstr("drives no PCC channel"),
                      HasSubstr("use the kernel backend")));
    // Where the kernel shows it drives PCC, the message says so.
    f.root.write("sys/bus/platform/drivers/PCCT/uevent", "");
    EXPECT_THAT(errorOf([&] { RegistersMachine m(f.root.path()); }),
                AllOf(HasSubstr("CPU 1"), HasSubstr("the kernel drives PCC"),
                      HasSubstr("drivers/PCCT'"),
                      HasSubstr("use the kernel backend")));
}

TEST(RegistersMachineTest, RefusesWhileCppcCpufreqIsLoaded)
{
    // cppc_cpufreq writes the same Desired registers under any governor
    // (policy start and stop, limits, hotplug, unload): seen on Linux 6.1.
    FakeFirmware f(twoCpus(memory(0x1000), memory(0x1004)));
    const std::string driver =
        "sys/devices/system/cpu/cpufreq/policy1/scaling_driver";
    f.root.write(driver, "cppc_cpufreq\n");
    EXPECT_THAT(errorOf([&] { RegistersMachine m(f.root.path()); }),
                AllOf(HasSubstr("cppc_cpufreq writes the same Desired"),
                      HasSubstr((f.root.path() / driver).string()),
                      HasSubstr("modprobe -r cppc_cpufreq"),
                      HasSubstr("use the kernel backend")));
    EXPECT_EQ(f.word(0x1000), 0U);

    // Every CPU of every policy offline: only the module shows.
    fs::remove(f.root.path() / driver);
    f.root.write("sys/module/cppc_cpufreq/refcnt", "0\n");
    EXPECT_THAT(errorOf([&] { RegistersMachine m(f.root.path()); }),
                HasSubstr("sys/module/cppc_cpufreq'"));

    // Unloaded, or another cpufreq driver: direct access is the only
    // writer.
    fs::remove_all(f.root.path() / "sys/module/cppc_cpufreq");
    f.root.write(driver, "cpufreq-dt\n");
    RegistersMachine m(f.root.path());
    EXPECT_EQ(m.name(), "registers");
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
