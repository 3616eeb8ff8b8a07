// SPDX-License-Identifier: Apache-2.0
// The registers backend on fake firmware tables, with a file standing in for
// /dev/mem: Desired (and Minimum and Maximum where the _CPC has them)
// written through the plan, the PCC rule, and start-up errors that name what
// is missing.
#include "aml_builder.hpp"
#include "daemon/governor.hpp"
#include "daemon/machines.hpp"
#include "daemon/machines/registers_machine.hpp"
#include "lib/activity_window.hpp"
#include "lib/error.hpp"
#include "machine_test_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <memory>
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

    // Sets the 32-bit value at `address` in the memory file (the mapping
    // is shared, so a running machine sees it).
    void setWord(std::uint64_t address, std::uint32_t value) const
    {
        const fs::path path = root.path() / "dev/mem";
        std::FILE* file = std::fopen(path.c_str(), "r+b");
        ASSERT_NE(file, nullptr);
        unsigned char bytes[4];
        for (unsigned i = 0; i < 4; ++i)
        {
            bytes[i] = static_cast<unsigned char>(value >> (8 * i));
        }
        ASSERT_EQ(std::fseek(file, static_cast<long>(address), SEEK_SET), 0);
        ASSERT_EQ(std::fwrite(bytes, 1, 4, file), 4U);
        ASSERT_EQ(std::fclose(file), 0);
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

    // Desired is put back as it was at start; nothing is written after.
    EXPECT_THAT(m.restore().entries(), IsEmpty());
    EXPECT_EQ(f.word(0x1000), 0U);
    EXPECT_EQ(f.word(0x2004), 0U);
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 0, 100)}));
    EXPECT_EQ(f.word(0x1000), 0U);
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

// A revision 3 _CPC with every control a SystemMemory field in a block at
// `base`: Desired at +0 (32 bits); Minimum, Maximum and EPP 8-bit fields
// of the unit at +4; AutonomousSelectionEnable bit 0 and the activity
// window bits 8-17 of the unit at +8; PerformanceLimited at +0xC. With
// `integerAutoSel`, AutonomousSelectionEnable is Integer 0 instead and the
// window and EPP are NULL.
aml::Bytes everyControl(std::uint64_t base, bool integerAutoSel = false)
{
    const aml::Bytes null = aml::reg(0, 0, 0, 0, 0);
    const auto field =
        [&](std::uint64_t offset, std::uint8_t width, std::uint8_t shift) {
        return aml::reg(0, width, shift, 3, base + offset);
    };
    aml::Bytes body = aml::cat(
        {{23},
         aml::integer(23),
         aml::integer(3),
         aml::integer(200),
         aml::integer(180),
         aml::integer(60),
         aml::integer(40),
         null,
         field(0x0, 32, 0),
         field(0x4, 8, 0),
         field(0x4, 8, 8)});
    for (int i = 0; i < 5; ++i) // tolerance .. delivered counter
    {
        body = aml::cat({body, null});
    }
    body = aml::cat({body, field(0xC, 32, 0), null}); // PerfLimited, enable
    if (integerAutoSel)
    {
        body = aml::cat({body, aml::integer(0), null, null});
    }
    else
    {
        body = aml::cat(
            {body, field(0x8, 1, 0), field(0x8, 10, 8), field(0x4, 8, 16)});
    }
    body = aml::cat(
        {body, aml::integer(100), aml::integer(800), aml::integer(2500)});
    return aml::cat({{0x12}, aml::pkg(body)});
}

// What the firmware leaves in everyControl(0x1000) and everyControl(0x2000)
// before the daemon: CPU 0 Min 40, Max 200, EPP 0x80; autonomous selection
// off with a 10 ms window (100 x 10^2); Desired 180. CPU 1's are all 0.
void leaveFirmwareControls(const FakeFirmware& f)
{
    f.setWord(0x1000, 180);
    f.setWord(0x1004, 0x80C828);
    f.setWord(0x1008, ((2U << 7) | 100U) << 8);
}

// The registers hold what leaveFirmwareControls() left.
void expectFirmwareControls(const FakeFirmware& f)
{
    EXPECT_EQ(f.word(0x1000), 180U);
    EXPECT_EQ(f.word(0x1004), 0x80C828U);
    EXPECT_EQ(f.word(0x1008), ((2U << 7) | 100U) << 8);
    EXPECT_EQ(f.word(0x2000), 0U);
    EXPECT_EQ(f.word(0x2004), 0U);
    EXPECT_EQ(f.word(0x2008), 0U);
}

TEST(RegistersMachineTest, WritesEveryControlThroughSharedUnitsAndRestoresThem)
{
    FakeFirmware f(twoCpcs(everyControl(0x1000), everyControl(0x2000)));
    leaveFirmwareControls(f);
    RegistersMachine m(f.root.path());
    EXPECT_EQ(
        m.controls(),
        (Controls{Control::desired, Control::min, Control::max, Control::epp,
                  Control::autonomous, Control::activityWindow}));
    EXPECT_TRUE(m.readsPerfLimited());
    const CppcRequest r{0, 50, 50, 150, 0x10, true, 1234};
    ASSERT_FALSE(m.apply(std::array{r}));
    EXPECT_EQ(f.word(0x1000), 50U);
    EXPECT_EQ(f.word(0x1004), 0x109632U);
    EXPECT_EQ(f.word(0x1008), ((((1U << 7) | 123U)) << 8) | 1U);
    // The same request again: nothing of the autonomous controls changes.
    f.setWord(0x1008, 0xDEAD0000); // would show a rewrite
    ASSERT_FALSE(m.apply(std::array{r}));
    EXPECT_EQ(f.word(0x1008), 0xDEAD0000U);
    f.setWord(0x1008, ((((1U << 7) | 123U)) << 8) | 1U);
    // Autonomous selection off: written, the window left as it is.
    CppcRequest off = r;
    off.autonomous = false;
    off.activityWindowUs.reset();
    ASSERT_FALSE(m.apply(std::array{off}));
    EXPECT_EQ(f.word(0x1008), (((1U << 7) | 123U)) << 8);
    // A window the register cannot hold is refused.
    CppcRequest tooLong = r;
    tooLong.activityWindowUs = 1'300'000'000;
    EXPECT_EQ(m.apply(std::array{tooLong}), cppc::Errc::valueOutOfRange);

    EXPECT_THAT(m.restore().entries(), IsEmpty());
    expectFirmwareControls(f);
    ASSERT_FALSE(m.apply(std::array{r}));
    EXPECT_EQ(f.word(0x1000), 180U);
}

// Two CPUs with every control, after a run that wrote them all and was
// then dropped without restore(), as a crash leaves it; before it, the
// firmware left leaveFirmwareControls()'s.
struct CrashedRun
{
    CrashedRun()
    {
        leaveFirmwareControls(f);
        fs::create_directories(stateDir);
        // In a child that ends without running a destructor, as a crash
        // does (the machine's destructor would put the registers back).
        const pid_t child = ::fork();
        if (child == 0)
        {
            int code = 1;
            try
            {
                BackendConfig c;
                c.type = BackendKind::registers;
                std::unique_ptr<Machine> m =
                    makeMachine(c, f.root.path(), stateDir);
                const std::array requests{
                    CppcRequest{0, 50, 50, 150, 0x10, true, 1234},
                    CppcRequest{1, 60, 60, 160, 0x20, true, 2000}};
                // With the machine still alive.
                ::_exit(m->apply(requests) ? 2 : 0);
            }
            catch (...)
            {
                code = 3;
            }
            ::_exit(code);
        }
        int status = -1;
        EXPECT_EQ(::waitpid(child, &status, 0), child);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
        EXPECT_EQ(f.word(0x1000), 50U);
        EXPECT_EQ(f.word(0x2000), 60U);
        recorded = f.root.read("state/registers.state");
    }

    FakeFirmware f{twoCpcs(everyControl(0x1000), everyControl(0x2000))};
    fs::path stateDir = f.root.path() / "state";
    fs::path file = registersStateFile(stateDir);
    std::string recorded;
};

TEST(RegistersMachineTest, WhatACrashLeftIsPutBackFromTheStateFile)
{
    CrashedRun run;
    const FakeFirmware& f = run.f;
    const fs::path& file = run.file;

    // The record of every control as it was, before anything was written.
    EXPECT_THAT(
        run.recorded,
        AllOf(HasSubstr("cpu0 DesiredPerformance 0x1000 0 32 180\n"),
              HasSubstr("cpu0 MinimumPerformance 0x1004 0 8 40\n"),
              HasSubstr("cpu0 EnergyPerformancePreference 0x1004 16 8 128\n"),
              HasSubstr("cpu0 AutonomousActivityWindow 0x1008 8 10 356\n"),
              HasSubstr("cpu1 AutonomousSelectionEnable 0x2008 0 1 0\n")));

    // No start over it: its registers must be put back first.
    BackendConfig c;
    c.type = BackendKind::registers;
    EXPECT_THAT(
        errorOf([&] { (void)makeMachine(c, f.root.path(), run.stateDir); }),
        AllOf(HasSubstr("registers backend: "), HasSubstr(file.string())));

    const cppc::backend::RestoreResult result =
        restoreMachineState(f.root.path(), run.stateDir);
    EXPECT_FALSE(result.anythingLeft());
    ASSERT_THAT(result.entries(), SizeIs(1));
    EXPECT_EQ(result.entries()[0].step, cppc::backend::RestoreStep::putBack);
    EXPECT_EQ(result.entries()[0].file, file);
    expectFirmwareControls(run.f);
    EXPECT_FALSE(fs::exists(file));

    // A clean run after it records again and leaves no file at its stop.
    RegistersMachine m(f.root.path(), file);
    EXPECT_EQ(f.root.read("state/registers.state"), run.recorded);
    ASSERT_FALSE(m.apply(std::array{desiredOf(m, 0, 70)}));
    EXPECT_THAT(m.restore().entries(), IsEmpty());
    EXPECT_FALSE(fs::exists(file));
    expectFirmwareControls(run.f);
}

TEST(RegistersMachineTest, AStartThatFailsOrAMachineDroppedLeavesNoRecord)
{
    FakeFirmware f(twoCpcs(everyControl(0x1000), everyControl(0x2000)));
    f.setWord(0x1000, 180);
    const fs::path file = registersStateFile(f.root.path());
    // /proc/stat is read after the registers: the start fails, and
    // nothing is recorded.
    const std::string stat = f.root.read("proc/stat");
    fs::remove(f.root.path() / "proc/stat");
    EXPECT_THROW(RegistersMachine(f.root.path(), file), std::exception);
    EXPECT_FALSE(fs::exists(file));
    f.root.write("proc/stat", stat);

    // A machine dropped without restore() (a start that fails later on)
    // puts the registers back and removes its record.
    {
        RegistersMachine m(f.root.path(), file);
        EXPECT_TRUE(fs::exists(file));
        ASSERT_FALSE(m.apply(std::array{desiredOf(m, 0, 70)}));
        EXPECT_EQ(f.word(0x1000), 70U);
    }
    EXPECT_EQ(f.word(0x1000), 180U);
    EXPECT_FALSE(fs::exists(file));
}

TEST(RegistersMachineTest, AStateFileThatCannotAllBePutBackKeepsWhatIsLeft)
{
    CrashedRun run;
    const FakeFirmware& f = run.f;
    const fs::path& file = run.file;
    const std::string& recorded = run.recorded;

    // Without /dev/mem nothing can be written: every register is a failure
    // naming it, and the file is kept whole.
    const std::string memory = f.root.read("dev/mem");
    fs::remove(f.root.path() / "dev/mem");
    cppc::backend::RestoreResult result =
        RegistersMachine::restoreFromFile(f.root.path(), file);
    EXPECT_TRUE(result.isLeft("cpu0"));
    EXPECT_TRUE(result.isLeft("cpu1"));
    EXPECT_THAT(describe(result.failures().front()),
                AllOf(HasSubstr("DesiredPerformance 180"),
                      HasSubstr((f.root.path() / "dev/mem").string())));
    EXPECT_EQ(f.root.read("state/registers.state"), recorded);
    f.root.write("dev/mem", memory);

    // CPU 1's Desired recorded at an address the firmware does not give
    // it: not written there, and CPU 1 stays in the file; CPU 0 is back.
    std::string moved = recorded;
    const std::string line = "cpu1 DesiredPerformance 0x2000 0 32 0\n";
    ASSERT_NE(moved.find(line), std::string::npos);
    moved.replace(moved.find(line), line.size(),
                  "cpu1 DesiredPerformance 0x3000 0 32 0\n");
    f.root.write("state/registers.state", moved);
    f.setWord(0x3000, 99);
    result = RegistersMachine::restoreFromFile(f.root.path(), file);
    EXPECT_FALSE(result.isLeft("cpu0"));
    EXPECT_TRUE(result.isLeft("cpu1"));
    ASSERT_THAT(result.failures(), SizeIs(1));
    EXPECT_EQ(result.failures()[0].error, cppc::Errc::registerMoved);
    EXPECT_EQ(f.word(0x3000), 99U);
    EXPECT_EQ(f.word(0x1000), 180U);
    EXPECT_EQ(f.word(0x2004), 0U); // CPU 1's others are back
    const std::string left = f.root.read("state/registers.state");
    EXPECT_THAT(left,
                AllOf(HasSubstr("cpu1 DesiredPerformance 0x3000 0 32 0\n"),
                      ::testing::Not(HasSubstr("cpu0"))));

    // A file that cannot be parsed is kept for inspection.
    f.root.write("state/registers.state", "cppcgov-registers-state 2\nx\n");
    result = RegistersMachine::restoreFromFile(f.root.path(), file);
    ASSERT_THAT(result.failures(), SizeIs(1));
    EXPECT_EQ(result.failures()[0].step,
              cppc::backend::RestoreStep::parseStateFile);
    EXPECT_TRUE(fs::exists(file));

    // No file: nothing to do.
    fs::remove(file);
    EXPECT_THAT(
        RegistersMachine::restoreFromFile(f.root.path(), file).entries(),
        IsEmpty());
}

TEST(RegistersMachineTest, TheAutonomousPolicyDrivesTheRegistersEndToEnd)
{
    // The governor's autonomous policy over this backend: the registers
    // hold what the policy decided, hints move the bounds, the preference
    // moves EPP, and a change of policy hands the choice back.
    FakeFirmware f(twoCpcs(everyControl(0x1000), everyControl(0x2000)));
    RegistersMachine m(f.root.path());
    GovernorConfig c;
    c.defaults.kind = policies::PolicyKind::autonomous;
    c.defaults.autonomous.energyPreference = 90;
    c.defaults.autonomous.activityWindowUs = 5000;
    c.defaults.schedutil.rateLimitUpUs = 1;
    c.defaults.schedutil.rateLimitDownUs = 1;
    Governor g(m, c);
    TickReport report;
    g.tick(0, {}, report);
    ASSERT_FALSE(report.applyError) << report.applyError.message();
    // No hint: [lowest nonlinear 60, nominal 180], Desired at Minimum,
    // EPP 90; selection on with the window (50 x 10^2 us).
    const std::uint32_t window = *cppc::encodeActivityWindow(5000);
    for (const std::uint64_t base : {0x1000U, 0x2000U})
    {
        EXPECT_EQ(f.word(base), 60U);
        EXPECT_EQ(f.word(base + 4), (90U << 16) | (180U << 8) | 60U);
        EXPECT_EQ(f.word(base + 8), (window << 8) | 1U);
    }
    EXPECT_EQ(cppc::decodeActivityWindow(window), 5000U);

    // util_min 512 on CPU 0 raises its Minimum to 100 (512/1024 of highest
    // 200); util_max 384 on CPU 1 lowers its Maximum to 75 (never below
    // the floor, 60); a performance preference on CPU 1 sets EPP 0.
    const std::vector<policies::EnergyPreference> prefs = {
        policies::EnergyPreference::none,
        policies::EnergyPreference::performance};
    g.setEnergyPreferences(prefs);
    const std::vector<HintSighting> hints = {{1, 101, 0, {512, 1024}, 0},
                                             {2, 102, 1, {0, 384}, 0}};
    g.tick(100'000, hints, report);
    ASSERT_FALSE(report.applyError) << report.applyError.message();
    EXPECT_EQ(f.word(0x1004) & 0xFFU, 100U);
    EXPECT_EQ((f.word(0x1004) >> 8) & 0xFFU, 180U);
    EXPECT_EQ((f.word(0x2004) >> 8) & 0xFFU, 75U);
    EXPECT_EQ(f.word(0x2004) & 0xFFU, 60U);
    EXPECT_EQ(f.word(0x2004) >> 16, 0U);
    EXPECT_EQ(f.word(0x1004) >> 16, 90U);

    // Back to schedutil: autonomous selection goes off in the register.
    GovernorConfig back = c;
    back.defaults.kind = policies::PolicyKind::schedutil;
    g.configure(back);
    g.tick(200'000, {}, report);
    ASSERT_FALSE(report.applyError) << report.applyError.message();
    EXPECT_EQ(f.word(0x1008) & 1U, 0U);
    EXPECT_EQ(f.word(0x2008) & 1U, 0U);
}

TEST(RegistersMachineTest, PerfLimitedIsReadAndClearedAtEverySample)
{
    FakeFirmware f(twoCpcs(everyControl(0x1000), everyControl(0x2000)));
    RegistersMachine m(f.root.path());
    std::array<CpuSample, 2> out{};
    ASSERT_FALSE(m.sample(0, out));
    f.setWord(0x100C, 0x3);
    f.setWord(0x200C, 0x102); // a reserved bit stays
    ASSERT_FALSE(m.sample(1000, out));
    EXPECT_EQ(out[0].perfLimited, desiredExcursion | minimumExcursion);
    EXPECT_EQ(out[1].perfLimited, minimumExcursion);
    EXPECT_EQ(f.word(0x100C), 0U);
    EXPECT_EQ(f.word(0x200C), 0x100U);
    ASSERT_FALSE(m.sample(2000, out));
    EXPECT_EQ(out[0].perfLimited, 0U);
    EXPECT_EQ(out[1].perfLimited, 0U);
}

TEST(RegistersMachineTest, IntegerAndNullControlsAreNotOffered)
{
    FakeFirmware f(twoCpcs(everyControl(0x1000, true), everyControl(0x2000)));
    RegistersMachine m(f.root.path());
    // CPU 0 has no autonomous registers and no EPP: not offered at all.
    EXPECT_EQ(m.controls(),
              (Controls{Control::desired, Control::min, Control::max}));
    ASSERT_FALSE(
        m.apply(std::array{CppcRequest{1, 50, 50, 150, 0x10, true, 1234}}));
    EXPECT_EQ(f.word(0x2008), 0U);
    EXPECT_EQ(f.word(0x2004), 0x9632U);
    // Without a PerformanceLimited register on every CPU it is not read.
    FakeFirmware g(twoCpus(memory(0x1000), memory(0x2004)));
    RegistersMachine plain(g.root.path());
    EXPECT_FALSE(plain.readsPerfLimited());
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
