// SPDX-License-Identifier: Apache-2.0
// The /dev/mem backend with a plain file standing in for physical memory:
// page mappings and their cache, perf control storing through them, and the
// rule refusing performance controls in PCC.
#include "lib/backend/devmem.hpp"
#include "lib/error.hpp"
#include "lib/perf_control.hpp"
#include "lib/sim/layouts.hpp"
#include "temp_tree.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using test::TempTree;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr auto mem = AddressSpace::systemMemory;

const std::uint64_t pageSize =
    static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));

// A file of `bytes` zero bytes standing in for /dev/mem.
struct FakeMemory
{
    explicit FakeMemory(std::uint64_t bytes) : path(tree.path() / "mem")
    {
        tree.write("mem", "");
        if (::truncate(path.c_str(), static_cast<off_t>(bytes)) != 0)
        {
            throw std::system_error(errno, std::system_category(), "truncate");
        }
    }

    // Little-endian value of `bytes` bytes at `address`, read with pread
    // (not through any mapping).
    std::uint64_t peek(std::uint64_t address, std::size_t bytes) const
    {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        std::array<std::uint8_t, 8> b{};
        const ssize_t n =
            ::pread(fd, b.data(), bytes, static_cast<off_t>(address));
        ::close(fd);
        if (n != static_cast<ssize_t>(bytes))
        {
            throw std::runtime_error("short pread");
        }
        std::uint64_t v = 0;
        for (std::size_t i = bytes; i-- > 0;)
        {
            v = (v << 8) | b[i];
        }
        return v;
    }

    void poke(std::uint64_t address, std::size_t bytes, std::uint64_t v) const
    {
        std::array<std::uint8_t, 8> b{};
        for (std::size_t i = 0; i < bytes; ++i)
        {
            b[i] = static_cast<std::uint8_t>(v >> (8 * i));
        }
        const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        const ssize_t n =
            ::pwrite(fd, b.data(), bytes, static_cast<off_t>(address));
        ::close(fd);
        if (n != static_cast<ssize_t>(bytes))
        {
            throw std::runtime_error("short pwrite");
        }
    }

    // How many of this process's mappings are of the file.
    std::size_t mappingsInProc() const
    {
        std::ifstream maps("/proc/self/maps");
        std::size_t n = 0;
        for (std::string line; std::getline(maps, line);)
        {
            const std::string name = path.string();
            n += line.size() >= name.size() &&
                         line.compare(line.size() - name.size(), name.size(),
                                      name) == 0
                     ? 1U
                     : 0U;
        }
        return n;
    }

    TempTree tree;
    std::filesystem::path path;
};

TEST(DevMemTest, StoresLandInTheDeviceAtTheRegistersAddress)
{
    FakeMemory f(4 * pageSize);
    DevMemMap map(f.path);
    std::byte* p = map.map(mem, pageSize + 0x10, 4);
    const std::uint32_t v = 0xA1B2C3D4;
    std::memcpy(p, &v, sizeof v);
    EXPECT_EQ(f.peek(pageSize + 0x10, 4), 0xA1B2C3D4U);
    EXPECT_EQ(f.peek(pageSize + 0x0C, 4), 0U);
    // And the other way: what is in memory is what a load sees.
    f.poke(pageSize + 0x20, 4, 0x11223344);
    std::uint32_t seen = 0;
    std::memcpy(&seen, map.map(mem, pageSize + 0x20, 4), sizeof seen);
    EXPECT_EQ(seen, 0x11223344U);
}

TEST(DevMemTest, OneMappingPerPage)
{
    FakeMemory f(4 * pageSize);
    DevMemMap map(f.path);
    std::byte* a = map.map(mem, 0x10, 4);
    std::byte* b = map.map(mem, 0x40, 8);
    EXPECT_EQ(b - a, 0x30);
    EXPECT_EQ(map.mappingCount(), 1U);
    EXPECT_EQ(map.map(mem, 0x10, 4), a);
    (void)map.map(mem, 2 * pageSize + 4, 4);
    EXPECT_EQ(map.mappingCount(), 2U);
    EXPECT_EQ(f.mappingsInProc(), 2U);
}

TEST(DevMemTest, AUnitAcrossAPageBoundaryIsContiguous)
{
    FakeMemory f(4 * pageSize);
    DevMemMap map(f.path);
    std::byte* p = map.map(mem, 2 * pageSize - 2, 4);
    const std::uint32_t v = 0xCAFEF00D;
    std::memcpy(p, &v, sizeof v);
    EXPECT_EQ(f.peek(2 * pageSize - 2, 4), 0xCAFEF00DU);
    // Later registers inside the two pages reuse that mapping.
    EXPECT_EQ(map.map(mem, pageSize + 8, 4), p - (pageSize - 10));
}

TEST(DevMemTest, EveryPageIsUnmappedOnDestruction)
{
    FakeMemory f(4 * pageSize);
    {
        DevMemMap map(f.path);
        (void)map.map(mem, 0, 4);
        (void)map.map(mem, 3 * pageSize, 4);
        (void)map.map(mem, pageSize - 4, 8);
        EXPECT_GE(f.mappingsInProc(), 2U);
    }
    EXPECT_EQ(f.mappingsInProc(), 0U);
}

TEST(DevMemTest, RefusesWhatCannotBeMapped)
{
    FakeMemory f(2 * pageSize);
    DevMemMap map(f.path);
    EXPECT_THROW((void)map.map(AddressSpace::systemIo, 0x80, 1),
                 std::invalid_argument);
    EXPECT_THROW((void)map.map(AddressSpace::pcc, 0x0, 4),
                 std::invalid_argument);
    EXPECT_THROW((void)map.map(mem, 0x10, 0), std::invalid_argument);
    EXPECT_THROW((void)map.map(mem, ~std::uint64_t{0} - 2, 4),
                 std::invalid_argument);
    // Past the end of a regular file would be SIGBUS on access.
    try
    {
        (void)map.map(mem, 2 * pageSize - 2, 4);
        FAIL() << "no exception";
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_THAT(e.what(), HasSubstr(f.path.string()));
    }
    EXPECT_EQ(map.mappingCount(), 0U);
}

TEST(DevMemTest, AMissingDeviceIsNamed)
{
    TempTree t;
    try
    {
        DevMemMap map(t.path() / "no-mem");
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
        EXPECT_THAT(e.what(), HasSubstr("no-mem'"));
    }
}

// Perf control over the mapped file: a small machine whose registers lie
// in the file's first pages.
//   CPU 0, 1: standalone 32-bit Desired at 0x100 and 0x104
//   CPU 2, 3: one 32-bit Desired word shared by a domain, at 0x200
//   CPU 4:    Desired, Minimum, Maximum as 8-bit fields of the 32-bit
//             unit at pageSize + 0x10 (locked read-modify-write)
std::vector<CpcDescriptor> smallMachine()
{
    std::vector<CpcDescriptor> cpus;
    const auto withDesired = [](unsigned cpu, const RegisterDesc& r) {
        CpcSource s = sim::cpcV3(cpu, 255, 200, 50, 10);
        sim::setEntry(s, CpcEntry::desiredPerf, CpcValue::ofRegister(r));
        return s;
    };
    cpus.emplace_back(withDesired(0, sim::memoryRegister(0x100, 32)));
    cpus.emplace_back(withDesired(1, sim::memoryRegister(0x104, 32)));
    for (unsigned cpu : {2U, 3U})
    {
        CpcSource s = withDesired(cpu, sim::memoryRegister(0x200, 32));
        s.psd = PsdInfo{7, static_cast<std::uint8_t>(Coordination::swAny), 2,
                        false};
        cpus.emplace_back(std::move(s));
    }
    const std::uint64_t unit = pageSize + 0x10;
    CpcSource packed = withDesired(4, sim::memoryRegister(unit, 8, 0));
    sim::setEntry(packed, CpcEntry::minPerf,
                  CpcValue::ofRegister(sim::memoryRegister(unit, 8, 8)));
    sim::setEntry(packed, CpcEntry::maxPerf,
                  CpcValue::ofRegister(sim::memoryRegister(unit, 8, 16)));
    cpus.emplace_back(std::move(packed));
    return cpus;
}

TEST(DevMemTest, PerfControlStoresThroughTheMappedFile)
{
    FakeMemory f(2 * pageSize);
    const AccessPlan plan = AccessPlan::build(smallMachine());
    ASSERT_FALSE(plan.anyRefused());
    f.poke(pageSize + 0x10, 4, 0xEE'00'00'00); // a neighbour to keep
    DevMemMap map(f.path);
    PerfControl control(plan, MappedIo(map));
    EXPECT_EQ(map.mappingCount(), 2U); // two pages, each mapped once

    ASSERT_FALSE(control.setPerf(0, 0x12345678));
    ASSERT_FALSE(control.setPerf(1, 200));
    EXPECT_EQ(f.peek(0x100, 4), 0x12345678U);
    EXPECT_EQ(f.peek(0x104, 4), 200U);

    ASSERT_FALSE(control.setPerf(2, 150));
    ASSERT_FALSE(control.setPerf(3, 90)); // the domain's last request
    EXPECT_EQ(f.peek(0x200, 4), 90U);

    ASSERT_TRUE(control.hasMinMax(4));
    ASSERT_FALSE(control.setPerf(4, 0x80, 0x10, 0xF0));
    EXPECT_EQ(f.peek(pageSize + 0x10, 4), 0xEE'F0'10'80U);
    ASSERT_FALSE(control.setPerf(4, 0x42));
    EXPECT_EQ(f.peek(pageSize + 0x10, 4), 0xEE'F0'10'42U);
    EXPECT_EQ(control.setPerf(4, 0x100), Errc::valueOutOfRange);
    EXPECT_EQ(f.peek(pageSize + 0x10, 4), 0xEE'F0'10'42U);

    // Nothing else in the file moved.
    EXPECT_EQ(f.peek(0xF8, 8), 0U);
    EXPECT_EQ(f.peek(0x108, 8), 0U);
    EXPECT_EQ(f.peek(0x204, 4), 0U);
}

// ---------------------------------------------------------------------------
// Kernel-owned PCC

TEST(KernelPccTest, NoEvidenceOnABareTree)
{
    TempTree t;
    t.write("sys/devices/system/cpu/cpu0/online", "1\n");
    const KernelPccEvidence e = probeKernelPcc(t.path());
    EXPECT_FALSE(e.any());
    EXPECT_THAT(e.paths, IsEmpty());
}

TEST(KernelPccTest, TheMailboxControllerIsEvidence)
{
    TempTree t;
    t.write("sys/bus/platform/drivers/PCCT/uevent", "");
    const KernelPccEvidence e = probeKernelPcc(t.path());
    EXPECT_TRUE(e.mailboxController);
    EXPECT_FALSE(e.cppcProbed);
    EXPECT_THAT(
        e.paths,
        ElementsAre((t.path() / "sys/bus/platform/drivers/PCCT").string()));
}

TEST(KernelPccTest, AProbedCppcIsEvidence)
{
    TempTree t;
    t.write("sys/devices/system/cpu/cpufreq/policy0/scaling_driver",
            "cppc_cpufreq\n");
    t.write("sys/devices/system/cpu/cpu3/acpi_cppc/highest_perf", "255\n");
    const KernelPccEvidence e = probeKernelPcc(t.path());
    EXPECT_FALSE(e.mailboxController);
    EXPECT_TRUE(e.cppcProbed);
    EXPECT_THAT(
        e.paths,
        ElementsAre(
            (t.path() / "sys/devices/system/cpu/cpu3/acpi_cppc").string()));
}

TEST(KernelPccTest, SubspacesComeFromThePlan)
{
    EXPECT_THAT(pccSubspaces(AccessPlan::build(sim::makeLayout("altra").cpus)),
                ElementsAre(2));
    EXPECT_THAT(
        pccSubspaces(AccessPlan::build(sim::makeLayout("orion-o6").cpus)),
        IsEmpty());
}

// The code and message refuseDirectPcc() throws for `plan`, or "" when it
// does not.
std::pair<std::error_code, std::string> refusal(const AccessPlan& plan,
                                                const KernelPccEvidence& e)
{
    try
    {
        refuseDirectPcc(plan, e);
    }
    catch (const std::system_error& err)
    {
        return {err.code(), err.what()};
    }
    return {};
}

TEST(KernelPccTest, PccControlsAreRefusedNamingTheKernelWhenItDrivesThem)
{
    TempTree t;
    t.write("sys/devices/system/cpu/cpu0/acpi_cppc/highest_perf", "255\n");
    const auto [code, what] =
        refusal(AccessPlan::build(sim::makeLayout("altra").cpus),
                probeKernelPcc(t.path()));
    EXPECT_EQ(code, Errc::pccOwnedByKernel);
    EXPECT_THAT(what, HasSubstr("CPU 0"));
    EXPECT_THAT(what, HasSubstr("PCC subspace 2"));
    EXPECT_THAT(what, HasSubstr("cpu0/acpi_cppc' exist"));
    EXPECT_THAT(what, HasSubstr("use the kernel backend"));
}

TEST(KernelPccTest, PccControlsAreRefusedWithoutEvidenceToo)
{
    const auto [code, what] = refusal(
        AccessPlan::build(sim::makeLayout("altra").cpus), KernelPccEvidence{});
    EXPECT_EQ(code, Errc::pccUnavailable);
    EXPECT_THAT(what, HasSubstr("PCC subspace 2"));
    EXPECT_THAT(what, HasSubstr("drives no PCC channel"));
}

TEST(KernelPccTest, ControlsOutsidePccAreNotRefused)
{
    TempTree t;
    t.write("sys/bus/platform/drivers/PCCT/uevent", "");
    for (const char* layout : {"orion-o6", "rd-n2", "packed"})
    {
        EXPECT_EQ(refusal(AccessPlan::build(sim::makeLayout(layout).cpus),
                          probeKernelPcc(t.path()))
                      .first,
                  std::error_code{})
            << layout;
    }
}

// ---------------------------------------------------------------------------
// The kernel's cppc_cpufreq

TEST(KernelCppcDriverTest, NoEvidenceWithoutIt)
{
    TempTree t;
    t.write("sys/devices/system/cpu/cpufreq/policy0/scaling_driver",
            "cpufreq-dt\n");
    t.write("sys/module/cpufreq_userspace/refcnt", "1\n");
    const KernelCppcDriverEvidence e = probeKernelCppcDriver(t.path());
    EXPECT_FALSE(e.any());
    EXPECT_NO_THROW(refuseWhileKernelDrivesCppc(e));
}

TEST(KernelCppcDriverTest, EveryPolicyItDrivesAndTheModuleAreEvidence)
{
    TempTree t;
    const std::string policies = "sys/devices/system/cpu/cpufreq/";
    t.write(policies + "policy2/scaling_driver", "cppc_cpufreq\n");
    t.write(policies + "policy0/scaling_driver", "cppc_cpufreq\n");
    t.write("sys/module/cppc_cpufreq/refcnt", "0\n");
    const KernelCppcDriverEvidence e = probeKernelCppcDriver(t.path());
    EXPECT_THAT(
        e.paths,
        ElementsAre((t.path() / policies / "policy0/scaling_driver").string(),
                    (t.path() / policies / "policy2/scaling_driver").string(),
                    (t.path() / "sys/module/cppc_cpufreq").string()));
    try
    {
        refuseWhileKernelDrivesCppc(e);
        ADD_FAILURE() << "not refused";
    }
    catch (const std::system_error& err)
    {
        EXPECT_EQ(err.code(), Errc::cppcDriverLoaded);
        EXPECT_THAT(err.what(), HasSubstr("policy0/scaling_driver', '"));
        EXPECT_THAT(err.what(), HasSubstr("modprobe -r cppc_cpufreq"));
        EXPECT_THAT(err.what(), HasSubstr("use the kernel backend"));
    }
}

TEST(KernelCppcDriverTest, AnUnreadableDriverFileIsNoEvidence)
{
    // An inactive policy's files answer EBUSY; a directory in the file's
    // place fails the read in the same way.
    TempTree t;
    t.write("sys/devices/system/cpu/cpufreq/policy1/scaling_driver/x", "");
    EXPECT_FALSE(probeKernelCppcDriver(t.path()).any());
}

} // namespace
} // namespace cppc::backend
