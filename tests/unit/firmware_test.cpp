// SPDX-License-Identifier: Apache-2.0
// From tables to descriptors: CPU numbering, _CPC and _PSD conversion and
// validation, PCC offsets, and the real Orion O6 and Ampere Altra dumps.
#include "aml_builder.hpp"
#include "lib/access_plan.hpp"
#include "lib/acpi/firmware.hpp"
#include "temp_tree.hpp"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::acpi
{
namespace
{

using namespace testing;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Bytes cpu(std::string_view n, std::uint64_t uid, const Bytes& desired,
          const Bytes& psd = psdPackage(0, 0xFD, 1))
{
    return cpuDevice(
        n, uid,
        cat({nameOp("_CPC", cpcPackage(desired)), nameOp("_PSD", psd)}));
}

Bytes mem(std::uint64_t address)
{
    return reg(0, 32, 0, 3, address);
}

std::string joined(const std::vector<std::string>& v)
{
    std::string s;
    for (const std::string& x : v)
    {
        s += x + "\n";
    }
    return s;
}

TEST(FirmwareTest, MadtOrderNumbersCpusAndUnlistedDevicesAreAbsent)
{
    const Table dsdt =
        table("DSDT", scope("\\_SB", cat({cpu("CPU0", 0x10, mem(0x1000)),
                                          cpu("CPU1", 0x20, mem(0x1004)),
                                          cpu("CPU2", 0x30, mem(0x1008))})));
    // Logical order follows the MADT, not the namespace; 0x30 is disabled.
    const FirmwareReport r =
        readFirmware({dsdt, madt({{0x20}, {0x10}, {0x30, false}})});
    EXPECT_EQ(r.numbering, CpuNumbering::madt);
    ASSERT_EQ(r.cpus.size(), 2U);
    EXPECT_EQ(r.cpus[0].path, "\\_SB.CPU1");
    EXPECT_EQ(r.cpus[1].path, "\\_SB.CPU0");
    ASSERT_TRUE(r.cpus[0].descriptor);
    EXPECT_EQ(r.cpus[0].descriptor->cpu(), 0U);
    EXPECT_EQ(r.cpus[0].descriptor->uid(), 0x20U);
    ASSERT_EQ(r.absent.size(), 1U);
    EXPECT_EQ(r.absent[0].path, "\\_SB.CPU2");
    EXPECT_EQ(r.descriptors().size(), 2U);
}

TEST(FirmwareTest, WithoutMadtCpusFollowTheNamespaceWithAWarning)
{
    const Table dsdt =
        table("DSDT",
              cat({cpu("CPU0", 5, mem(0x1000)), cpu("CPU1", 6, mem(0x1004))}));
    const FirmwareReport r = readFirmware({dsdt});
    EXPECT_EQ(r.numbering, CpuNumbering::namespaceOrder);
    ASSERT_EQ(r.cpus.size(), 2U);
    EXPECT_EQ(r.cpus[1].uid, 6U);
    EXPECT_THAT(joined(r.warnings), HasSubstr("namespace"));
}

TEST(FirmwareTest, ExplicitUidsOverrideTheMadt)
{
    const Table dsdt =
        table("DSDT",
              cat({cpu("CPU0", 5, mem(0x1000)), cpu("CPU1", 6, mem(0x1004))}));
    const FirmwareReport r =
        readFirmware({dsdt, madt({{5}, {6}})}, std::vector<std::uint64_t>{6});
    EXPECT_EQ(r.numbering, CpuNumbering::sysfs);
    ASSERT_EQ(r.cpus.size(), 1U);
    EXPECT_EQ(r.cpus[0].path, "\\CPU1");
}

TEST(FirmwareTest, MissingAndDuplicateUidsAreErrorsOfThatCpu)
{
    const Table dsdt =
        table("DSDT",
              cat({cpu("CPU0", 1, mem(0x1000)), cpu("CPU1", 1, mem(0x1004))}));
    const FirmwareReport r = readFirmware({dsdt, madt({{1}, {9}})});
    ASSERT_EQ(r.cpus.size(), 2U);
    EXPECT_FALSE(r.cpus[0].descriptor);
    EXPECT_THAT(joined(r.cpus[0].errors), HasSubstr("has the same _UID"));
    EXPECT_THAT(r.cpus[1].errors, IsEmpty());
    EXPECT_EQ(r.cpus[1].noCppc, "no processor device has this _UID");
    EXPECT_FALSE(r.cpus[1].descriptor);
}

struct PsdCase
{
    const char* name;
    Bytes psd;
    const char* reason;
};

class PsdTest : public ::testing::TestWithParam<PsdCase>
{};

TEST_P(PsdTest, InvalidPsdRefusesTheCpu)
{
    const Table dsdt =
        table("DSDT", cat({cpu("CPU0", 0, mem(0x1000), GetParam().psd)}));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}})});
    ASSERT_EQ(r.cpus.size(), 1U);
    EXPECT_FALSE(r.cpus[0].descriptor);
    EXPECT_THAT(joined(r.cpus[0].errors),
                AllOf(HasSubstr("CPU 0 (_UID 0x0, \\CPU0)"),
                      HasSubstr(GetParam().reason)));
}

INSTANTIATE_TEST_SUITE_P(
    Table, PsdTest,
    ::testing::Values(
        PsdCase{"FourIntegers",
                package({package({integer(5), integer(0), integer(1),
                                  integer(0xFD)})}),
                "does not hold five Integers"},
        PsdCase{"BadCoordination", psdPackage(1, 0xFB, 1),
                "coordination type 0xfb"},
        PsdCase{"NotNested",
                package({integer(5), integer(0), integer(1), integer(0xFD),
                         integer(1)}),
                "not a Package holding one Package"},
        PsdCase{"NumEntries4",
                package({package({integer(4), integer(0), integer(1),
                                  integer(0xFD), integer(1)})}),
                "NumEntries is 4"}),
    [](const auto& param) { return std::string(param.param.name); });

TEST(FirmwareTest, PsdRevisionOtherThanZeroIsRefused)
{
    const Bytes psd = package({package(
        {integer(5), integer(1), integer(1), integer(0xFD), integer(1)})});
    const FirmwareReport r = readFirmware(
        {table("DSDT", cpu("CPU0", 0, mem(0x1000), psd)), madt({{0}})});
    EXPECT_THAT(joined(r.cpus[0].errors), HasSubstr("_PSD revision 1"));
}

TEST(FirmwareTest, InconsistentDomainFallsBackToOneCpuEach)
{
    const Table dsdt = table(
        "DSDT", cat({cpu("CPU0", 0, mem(0x1000), psdPackage(7, 0xFD, 2)),
                     cpu("CPU1", 1, mem(0x1000), psdPackage(7, 0xFD, 4))}));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}, {1}})});
    for (const FirmwareCpu& c : r.cpus)
    {
        ASSERT_TRUE(c.descriptor) << joined(c.errors);
        EXPECT_TRUE(c.descriptor->psd()->independent);
        EXPECT_THAT(joined(c.warnings), HasSubstr("inconsistent"));
    }
}

TEST(FirmwareTest, DomainClaimingMoreProcessorsThanPresentIsAWarning)
{
    const Table dsdt =
        table("DSDT", cpu("CPU0", 0, mem(0x1000), psdPackage(3, 0xFD, 2)));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}})});
    ASSERT_TRUE(r.cpus[0].descriptor);
    EXPECT_FALSE(r.cpus[0].descriptor->psd()->independent);
    EXPECT_THAT(joined(r.cpus[0].warnings),
                HasSubstr("claims 2 processors, 1 present"));
}

TEST(FirmwareTest, CpcElementsMustBeIntegersOrRegisterBuffers)
{
    Bytes pkgBytes = cpcPackage(string("oops"));
    const Table dsdt =
        table("DSDT", cpuDevice("CPU0", 0, nameOp("_CPC", pkgBytes)));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}})});
    EXPECT_THAT(joined(r.cpus[0].errors),
                AllOf(HasSubstr("DesiredPerformance is a String"),
                      HasSubstr("only Integer and Buffer")));
}

TEST(FirmwareTest, NumEntriesAndRevisionMismatchIsRefused)
{
    Bytes p = cpcPackage(mem(0x1000));
    // The package's second element is the Revision: make it 2 with 23
    // entries.
    const Table dsdt = table(
        "DSDT", cpuDevice("CPU0", 0, nameOp("_CPC", [&] {
                              Bytes q = p;
                              // {0x12, PkgLength, NumElements, 0x0A 23,
                              //  0x0A 3 ...}: patch the revision byte.
                              for (std::size_t i = 0; i + 3 < q.size(); ++i)
                              {
                                  if (q[i] == 0x0A && q[i + 1] == 23 &&
                                      q[i + 2] == 0x0A && q[i + 3] == 3)
                                  {
                                      q[i + 3] = 2;
                                      break;
                                  }
                              }
                              return q;
                          }())));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}})});
    EXPECT_THAT(joined(r.cpus[0].errors),
                HasSubstr("NumEntries 23 does not match revision 2"));
}

TEST(FirmwareTest, PccRegistersAreCheckedAgainstThePcct)
{
    const Bytes inside = reg(0x0A, 32, 0, 1, 0x14);
    const Bytes beyond = reg(0x0A, 32, 0, 1, 0xF6); // 0xf6 + 4 > 0xf8
    const Bytes noSuch = reg(0x0A, 32, 0, 5, 0x14); // subspace 5 of 2
    const Table dsdt =
        table("DSDT", cat({cpu("CPU0", 0, inside), cpu("CPU1", 1, beyond),
                           cpu("CPU2", 2, noSuch)}));
    const FirmwareReport r =
        readFirmware({dsdt, pcctType2(2, 0x100), madt({{0}, {1}, {2}})});
    EXPECT_TRUE(r.cpus[0].descriptor) << joined(r.cpus[0].errors);
    EXPECT_THAT(joined(r.cpus[1].errors),
                AllOf(HasSubstr("DesiredPerformance"),
                      HasSubstr("beyond the 0xf8-byte payload")));
    EXPECT_THAT(joined(r.cpus[2].errors),
                HasSubstr("PCC subspace 5 is not in the PCCT"));
    const FirmwareReport none = readFirmware({dsdt, madt({{0}})});
    EXPECT_THAT(joined(none.cpus[0].errors), HasSubstr("there is no PCCT"));
}

TEST(FirmwareTest, RegisterBuffersMustBeGenericRegisterDescriptors)
{
    const std::vector<std::uint8_t> good = {
        0x82, 0x0C, 0x00, 0x00, 0x20, 0x00, 0x03, 0x94, 0x00,
        0x59, 0x06, 0,    0,    0,    0,    0x79, 0x00};
    const auto r = parseRegisterBuffer(good);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->address, 0x6590094U);
    EXPECT_EQ(r->bitWidth, 32);
    std::vector<std::uint8_t> bad = good;
    bad[0] = 0x86;
    EXPECT_FALSE(parseRegisterBuffer(bad));
    bad = good;
    bad.resize(14);
    EXPECT_FALSE(parseRegisterBuffer(bad));
}

TEST(FirmwareTest, SysfsUidsAreReadUnderTheRootPrefix)
{
    const test::TempTree tree;
    const std::filesystem::path& root = tree.path();
    for (unsigned n : {0U, 1U})
    {
        tree.write("sys/devices/system/cpu/cpu" + std::to_string(n) +
                       "/firmware_node/uid",
                   n == 0 ? "4096\n" : "6144\n");
    }
    EXPECT_EQ(sysfsCpuUids(root), (std::vector<std::uint64_t>{4096, 6144}));
    tree.write("sys/devices/system/cpu/cpu1/firmware_node/uid", "x1\n");
    EXPECT_THROW(sysfsCpuUids(root), AcpiError);
    EXPECT_FALSE(sysfsCpuUids(root / "nowhere"));
}

// --- the real dumps --------------------------------------------------

std::filesystem::path fixtures()
{
    return CPPCGOV_ACPI_FIXTURES;
}

std::vector<Table> loadFixtures(std::initializer_list<const char*> names)
{
    std::vector<Table> tables;
    for (const char* n : names)
    {
        tables.push_back(loadTableFile(fixtures() / n));
    }
    return tables;
}

TEST(FirmwareDumpTest, OrionO6)
{
    if (!std::filesystem::exists(fixtures() / "orion-o6-ssdt2.dat"))
    {
        GTEST_SKIP() << "no real ACPI dumps at " << fixtures();
    }
    const FirmwareReport r =
        readFirmware(loadFixtures({"orion-o6-dsdt.dat", "orion-o6-ssdt1.dat",
                                   "orion-o6-ssdt2.dat", "orion-o6-apic.dat"}));
    ASSERT_EQ(r.cpus.size(), 12U);
    EXPECT_THAT(r.absent, IsEmpty());
    const AccessPlan plan = AccessPlan::build(r.descriptors());
    EXPECT_THAT(plan.diagnostics(), IsEmpty());
    const std::array<std::uint64_t, 12> desired = {
        0x659009C, 0x6590094, 0x6590094, 0x6590094, 0x6590094, 0x65900A0,
        0x65900A0, 0x65900A4, 0x65900A4, 0x6590098, 0x6590098, 0x659009C};
    for (unsigned c = 0; c < 12; ++c)
    {
        ASSERT_TRUE(r.cpus[c].descriptor) << joined(r.cpus[c].errors);
        const CpcDescriptor& d = *r.cpus[c].descriptor;
        EXPECT_EQ(d.entry(CpcEntry::desiredPerf).reg.address, desired[c]);
        EXPECT_EQ(plan.cpu(c).reg(CpcEntry::desiredPerf).access,
                  AccessClass::fullWidthAliased);
        EXPECT_EQ(d.psd()->coordination, 0xFD);
        EXPECT_THAT(r.cpus[c].warnings, IsEmpty());
    }
}

TEST(FirmwareDumpTest, AmpereAltra)
{
    if (!std::filesystem::exists(fixtures() / "ampere-altra-dsdt.dat"))
    {
        GTEST_SKIP() << "no real ACPI dumps at " << fixtures();
    }
    const FirmwareReport r = readFirmware(
        loadFixtures({"ampere-altra-dsdt.dat", "ampere-altra-pcct.dat",
                      "ampere-altra-apic.dat"}));
    ASSERT_EQ(r.cpus.size(), 32U);
    EXPECT_EQ(r.absent.size(), 256U - 32U);
    const AccessPlan plan = AccessPlan::build(r.descriptors());
    for (const FirmwareCpu& c : r.cpus)
    {
        ASSERT_TRUE(c.descriptor) << joined(c.errors);
        const CpuPlan& p = plan.cpu(c.cpu);
        EXPECT_TRUE(p.usable);
        EXPECT_TRUE(p.pccControl);
        EXPECT_EQ(p.pccSubspace, 2);
        for (CpcEntry e :
             {CpcEntry::referencePerfCounter, CpcEntry::deliveredPerfCounter})
        {
            const RegisterDesc& reg = c.descriptor->entry(e).reg;
            EXPECT_EQ(reg.bitWidth, 64);
            EXPECT_EQ(reg.address % 8, 4U) << "4-byte aligned only";
            EXPECT_EQ(p.reg(e).access, AccessClass::pcc);
        }
    }
    EXPECT_EQ(r.cpus[0].uid, 0x1000U);
    ASSERT_TRUE(r.pcct);
    const PccSubspace& s = r.pcct->subspaces.at(2);
    EXPECT_EQ(s.baseAddress, 0x807F8108000U);
    EXPECT_EQ(s.addressLength, 0x4000U);
    EXPECT_EQ(s.doorbell.address, 0x100001542010U);
    EXPECT_EQ(s.doorbellWriteMask, 0x53800140U);
    EXPECT_EQ(s.nominalLatencyUs, 100U);
    EXPECT_EQ(s.minRequestTurnaroundUs, 110U);
    EXPECT_EQ(s.maxPeriodicAccessRate, 0U);
    EXPECT_EQ(s.platformAck.address, 0x100001542020U);
}

} // namespace
} // namespace cppc::acpi

namespace cppc::acpi
{
namespace
{

using namespace testing;
using ::testing::HasSubstr;

std::string errorsOf(const FirmwareCpu& c)
{
    std::string s;
    for (const std::string& e : c.errors)
    {
        s += e + "\n";
    }
    return s;
}

TEST(FirmwareGapsTest, AnUnusableUidIsAnErrorNotAMissingDevice)
{
    const Bytes uidMethod = method("_UID", 0, ret({0x60})); // Local0
    const Table dsdt = table(
        "DSDT",
        device("CPU0", cat({nameOp("_HID", string("ACPI0007")), uidMethod})));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}})});
    ASSERT_EQ(r.cpus.size(), 1U);
    EXPECT_TRUE(r.cpus[0].noCppc.empty());
    EXPECT_THAT(errorsOf(r.cpus[0]),
                AllOf(HasSubstr("could not read everything"),
                      HasSubstr("\\CPU0 (_UID cannot be evaluated")));
}

TEST(FirmwareGapsTest, SkippedDefinitionsInADeviceRefuseItsMissingCpc)
{
    const Table dsdt = table(
        "DSDT",
        cat({regionField("OPR0", "CPCE"),
             cpuDevice(
                 "CPU0", 0,
                 ifOp(lequal(name("CPCE"), integer(1)),
                      nameOp("_CPC", cpcPackage(reg(0, 32, 0, 3, 0x1000)))))}));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}})});
    EXPECT_THAT(errorsOf(r.cpus[0]), HasSubstr("no _CPC was loaded, but"));
    ASSERT_FALSE(r.warnings.empty());
    EXPECT_THAT(r.warnings[0], HasSubstr("predicate is not known"));
}

TEST(FirmwareGapsTest, ACpcElementNamingAMethodIsRefused)
{
    Bytes cpc = cpcPackage(reg(0, 32, 0, 3, 0x1000));
    // Replace HighestPerformance (the 3rd element: 300 = 0x0B 0x2C 0x01)
    // with the name HIGH of a method.
    const Bytes literal = integer(300);
    auto at =
        std::search(cpc.begin(), cpc.end(), literal.begin(), literal.end());
    ASSERT_NE(at, cpc.end());
    const Bytes ref = name("HIGH");
    at = cpc.erase(at, at + static_cast<long>(literal.size()));
    cpc.insert(at, ref.begin(), ref.end());
    cpc[1] = static_cast<std::uint8_t>(cpc[1] + ref.size() - literal.size());
    const Table dsdt =
        table("DSDT", cat({method("HIGH", 0, ret(integer(0xFA))),
                           cpuDevice("CPU0", 0, nameOp("_CPC", cpc))}));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}})});
    EXPECT_THAT(errorsOf(r.cpus[0]),
                AllOf(HasSubstr("HighestPerformance refers to \\HIGH"),
                      HasSubstr("not a data object")));
}

TEST(FirmwareGapsTest, OnlyNumEntriesElementsAreRead)
{
    // A revision 2 _CPC (21 entries) followed by two Strings: ignored.
    Bytes body{23};
    body = cat({body, integer(21), integer(2), integer(300), integer(250),
                integer(100), integer(50), reg(0, 0, 0, 0, 0),
                reg(0, 32, 0, 3, 0x1000)});
    for (int i = 0; i < 12; ++i)
    {
        body = cat({body, reg(0, 0, 0, 0, 0)});
    }
    body = cat({body, integer(100), string("x"), string("y")});
    const Table dsdt = table(
        "DSDT", cpuDevice("CPU0", 0, nameOp("_CPC", cat({{0x12}, pkg(body)}))));
    const FirmwareReport r = readFirmware({dsdt, madt({{0}})});
    EXPECT_TRUE(r.cpus[0].descriptor) << errorsOf(r.cpus[0]);
}

} // namespace
} // namespace cppc::acpi
