// The kernel backend on a fake sysfs tree: the sysfs helpers, the
// perf/kHz conversion of Linux's CPPC library, feedback_ctrs, per-policy
// requests, and that stopping (normally or after a crash) leaves the tree
// exactly as it was found.
#include "lib/backend/kernel.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"
#include "temp_tree.hpp"
#include "unkind_io.hpp"

#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using test::TempTree;
using test::UnkindIo;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// ---------------------------------------------------------------------------
// sysfs helpers

TEST(SysfsTest, PathsHangOffTheRoot)
{
    EXPECT_EQ(sysPath("/tmp/x", "devices/system/cpu"),
              std::filesystem::path("/tmp/x/sys/devices/system/cpu"));
    EXPECT_EQ(sysPath("/", "bus"), std::filesystem::path("/sys/bus"));
}

TEST(SysfsTest, ReadTakesOffOneTrailingNewline)
{
    TempTree t;
    t.write("a", "schedutil\n");
    t.write("b", "two\n\n");
    t.write("c", "none");
    EXPECT_EQ(readAttribute(t.path() / "a"), "schedutil");
    EXPECT_EQ(readAttribute(t.path() / "b"), "two\n");
    EXPECT_EQ(readAttribute(t.path() / "c"), "none");
}

TEST(SysfsTest, ReadingAMissingFileNamesIt)
{
    TempTree t;
    const std::filesystem::path f = t.path() / "missing";
    EXPECT_EQ(readAttributeIfExists(f), std::nullopt);
    try
    {
        (void)readAttribute(f);
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
        EXPECT_THAT(e.what(), HasSubstr("'" + f.string() + "'"));
    }
}

TEST(SysfsTest, ReadRefusesMoreThanAPage)
{
    TempTree t;
    t.write("big", std::string(4097, 'x'));
    t.write("page", std::string(4096, 'x'));
    EXPECT_EQ(readAttribute(t.path() / "page").size(), 4096U);
    EXPECT_THROW((void)readAttribute(t.path() / "big"), std::system_error);
}

TEST(SysfsTest, WriteReplacesTheWholeValue)
{
    TempTree t;
    t.write("scaling_setspeed", "2500000\n");
    ASSERT_FALSE(writeAttribute(t.path() / "scaling_setspeed", "800000\n"));
    EXPECT_EQ(t.read("scaling_setspeed"), "800000\n");
}

TEST(SysfsTest, WriteNeverCreatesAMissingAttribute)
{
    TempTree t;
    const std::filesystem::path f = t.path() / "scaling_setspeed";
    const std::error_code ec = writeAttribute(f, "1\n");
    EXPECT_EQ(ec, std::errc::no_such_file_or_directory);
    EXPECT_FALSE(t.exists("scaling_setspeed"));
    EXPECT_EQ(describe(f, ec), "'" + f.string() + "': " + ec.message());
    try
    {
        writeAttributeOrThrow(f, "1\n");
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_THAT(e.what(), HasSubstr("'" + f.string() + "'"));
        EXPECT_THAT(e.what(), HasSubstr(ec.message()));
    }
}

TEST(SysfsTest, WriteReportsTheErrno)
{
    TempTree t;
    t.write("dir/x", "");
    EXPECT_EQ(writeAttribute(t.path() / "dir", "1"), std::errc::is_a_directory);
    // /dev/full accepts the open and fails the write.
    EXPECT_EQ(writeAttribute("/dev/full", "1"), std::errc::no_space_on_device);
}

TEST(SysfsTest, ParseDecimalIsStrict)
{
    EXPECT_EQ(parseDecimal("0"), 0U);
    EXPECT_EQ(parseDecimal("2500000"), 2500000U);
    EXPECT_EQ(parseDecimal("18446744073709551615"), ~std::uint64_t{0});
    for (std::string_view bad : {"", " 1", "1 ", "1\n", "+1", "-1", "0x10",
                                 "1.5", "abc", "18446744073709551616"})
    {
        EXPECT_EQ(parseDecimal(bad), std::nullopt) << "'" << bad << "'";
    }
    EXPECT_THROW((void)parseDecimal("x", "/f"), std::system_error);
}

TEST(SysfsTest, ParseCpuListTakesSpacesAndRanges)
{
    const std::filesystem::path f = "/f";
    EXPECT_THAT(parseCpuList("0 1 2 3", f), ElementsAre(0, 1, 2, 3));
    EXPECT_THAT(parseCpuList("5", f), ElementsAre(5));
    EXPECT_THAT(parseCpuList("0-2,8", f), ElementsAre(0, 1, 2, 8));
    EXPECT_THAT(parseCpuList("", f), IsEmpty());
    for (std::string_view bad :
         {"0 1 ", "0  1", "a", "3-1", "0,,1", "-1", "1-", "0 99999999"})
    {
        EXPECT_THROW((void)parseCpuList(bad, f), std::system_error)
            << "'" << bad << "'";
    }
}

// ---------------------------------------------------------------------------
// Conversion

PerfCaps caps(std::uint32_t highest, std::uint32_t nominal,
              std::uint32_t lowest, std::uint32_t lowestFreq,
              std::uint32_t nominalFreq)
{
    PerfCaps c;
    c.highestPerf = highest;
    c.nominalPerf = nominal;
    c.lowestNonlinearPerf = lowest;
    c.lowestPerf = lowest;
    c.referencePerf = nominal;
    c.lowestFreqMhz = lowestFreq;
    c.nominalFreqMhz = nominalFreq;
    return c;
}

// Radxa Orion O6 big cores: _CPC highest and nominal 0x2000, lowest 0xA3D,
// 800 and 2500 MHz.
const PerfCaps orion = caps(0x2000, 0x2000, 0xA3D, 800, 2500);

struct Conversion
{
    std::uint32_t perf;
    std::uint32_t khz;
};

TEST(FreqScaleTest, OrionO6PerfToKhz)
{
    const FreqScale s(orion, 0);
    EXPECT_TRUE(s.linear());
    // Worked by hand from the kernel's formula: mul 1,700,000, div 5571,
    // offset 2,500,000 - 8192 * 1,700,000 / 5571 = 197.
    for (const Conversion& c :
         {Conversion{0xA3D, 800000},
          {0xA3E, 800305},
          {0x911, 708455}, // below lowest: extrapolated
          {0x1000, 1250099},
          {0x1800, 1875049},
          {0x1FFF, 2499695},
          {0x2000, 2500000},
          {1, 503}})
    {
        EXPECT_EQ(s.perfToKhz(c.perf), c.khz) << c.perf;
    }
}

TEST(FreqScaleTest, OrionO6KhzToPerf)
{
    const FreqScale s(orion, 0);
    // mul 5571, div 1,700,000 kHz, offset 8192 - 2500 * 5571 / 1700 = 0.
    for (const Conversion& c :
         {Conversion{2621, 800000},
          {3277, 1000000},
          {5898, 1800000},
          {8192, 2500000},
          {327, 100000},
          {0, 0}})
    {
        EXPECT_EQ(s.khzToPerf(c.khz), c.perf) << c.khz;
    }
}

TEST(FreqScaleTest, OrionO6EveryLevelSurvivesTheKernelsRoundTrip)
{
    const FreqScale s(orion, 0);
    for (std::uint32_t p = orion.lowestPerf; p <= orion.highestPerf; ++p)
    {
        ASSERT_EQ(s.khzToPerf(s.perfToKhz(p)), p) << p;
        ASSERT_EQ(s.requestKhz(p), s.perfToKhz(p)) << p;
    }
}

TEST(FreqScaleTest, RequestCorrectsTheKernelsRoundTripLoss)
{
    // 255/200/10 at 1000-3000 MHz: the kernel turns perfToKhz(11) back
    // into 10. requestKhz writes one kHz more, which becomes 11.
    const FreqScale s(caps(255, 200, 10, 1000, 3000), 0);
    EXPECT_EQ(s.perfToKhz(11), 1010526U);
    EXPECT_EQ(s.khzToPerf(1010526), 10U);
    EXPECT_EQ(s.requestKhz(11), 1010527U);
    EXPECT_EQ(s.khzToPerf(1010527), 11U);
    unsigned corrected = 0;
    for (std::uint32_t p = 10; p <= 255; ++p)
    {
        const std::uint32_t k = s.requestKhz(p);
        ASSERT_EQ(s.khzToPerf(k), p) << p;
        ASSERT_TRUE(k == 0 || s.khzToPerf(k - 1) < p) << p;
        corrected += k != s.perfToKhz(p) ? 1U : 0U;
    }
    EXPECT_GT(corrected, 100U);
}

TEST(FreqScaleTest, EqualFrequenciesGoThroughTheOrigin)
{
    const FreqScale s(caps(1000, 1000, 500, 2000, 2000), 0);
    EXPECT_EQ(s.perfToKhz(500), 1000000U);
    EXPECT_EQ(s.perfToKhz(750), 1500000U);
    EXPECT_EQ(s.perfToKhz(1000), 2000000U);
    EXPECT_EQ(s.khzToPerf(1500000), 750U);
}

TEST(FreqScaleTest, WithoutFrequenciesItIsProportionalToHighest)
{
    PerfCaps c = caps(1000, 800, 100, 0, 0);
    const FreqScale s(c, 3000000);
    EXPECT_FALSE(s.linear());
    EXPECT_EQ(s.perfToKhz(800), 2400000U);
    EXPECT_EQ(s.perfToKhz(333), 999000U);
    EXPECT_EQ(s.perfToKhz(1000), 3000000U);
    EXPECT_EQ(s.khzToPerf(2400000), 800U);
    // Only one of the two frequencies known: the fallback too.
    c.nominalFreqMhz = 2400;
    EXPECT_FALSE(FreqScale(c, 3000000).linear());
}

TEST(FreqScaleTest, RefusesWhatWouldDivideByZeroOrRunBackwards)
{
    EXPECT_THROW(FreqScale(caps(100, 50, 50, 800, 2000), 0),
                 std::invalid_argument);
    EXPECT_THROW(FreqScale(caps(100, 80, 50, 2000, 800), 0),
                 std::invalid_argument);
    EXPECT_THROW(FreqScale(caps(100, 80, 50, 0, 0), 0), std::invalid_argument);
}

TEST(FreqScaleTest, MaxKhzWorkedBackFromCpuinfo)
{
    // cppc_cpufreq published perfToKhz(nominal) = floor(800 * m / 1000).
    EXPECT_EQ(maxKhzFromCpuinfo(caps(1000, 800, 100, 0, 0), 2400000, false),
              3000000U);
    EXPECT_EQ(maxKhzFromCpuinfo(caps(1000, 777, 100, 0, 0), 2408700, false),
              3100000U);
    // Not a whole MHz: the smallest value reproducing it.
    EXPECT_EQ(maxKhzFromCpuinfo(caps(1000, 500, 100, 0, 0), 1000001, false),
              2000002U);
    // Boost on: cpuinfo_max_freq is perfToKhz(highest), maxKhz itself.
    EXPECT_EQ(maxKhzFromCpuinfo(caps(1000, 800, 100, 0, 0), 3000000, true),
              3000000U);
    EXPECT_EQ(maxKhzFromCpuinfo(caps(800, 800, 100, 0, 0), 2400000, false),
              2400000U);
}

// An SMBIOS type 4 structure: type, length, handle, ..., Max Speed at 0x14.
std::string dmiProcessor(std::uint8_t length, std::uint16_t mhz,
                         std::uint8_t type = 4)
{
    std::string raw(std::max<std::size_t>(length, 0x16) + 2, '\0');
    raw[0] = static_cast<char>(type);
    raw[1] = static_cast<char>(length);
    raw[0x14] = static_cast<char>(mhz & 0xFF);
    raw[0x15] = static_cast<char>(mhz >> 8);
    return raw;
}

TEST(FreqScaleTest, DmiMaxSpeedAsTheKernelReadsIt)
{
    TempTree t;
    EXPECT_EQ(dmiMaxKhz(t.path()), std::nullopt); // no DMI in sysfs
    const std::string dir = "sys/firmware/dmi/entries/";
    t.write(dir + "0-0/raw", dmiProcessor(48, 9999, 0)); // not a processor
    EXPECT_EQ(dmiMaxKhz(t.path()), 1000U); // none: the kernel's 1 MHz
    t.write(dir + "4-0/raw", dmiProcessor(48, 2800));
    t.write(dir + "4-1/raw", dmiProcessor(0x30, 3000));
    t.write(dir + "4-2/raw", dmiProcessor(26, 5000)); // too short: skipped
    EXPECT_EQ(dmiMaxKhz(t.path()), 3000000U);
}

// ---------------------------------------------------------------------------
// feedback_ctrs

TEST(FeedbackCountersTest, ParsesWhatTheKernelPrints)
{
    std::uint64_t r = 7;
    std::uint64_t d = 7;
    ASSERT_TRUE(parseFeedbackCounters("ref:123 del:456\n", r, d));
    EXPECT_EQ(r, 123U);
    EXPECT_EQ(d, 456U);
    ASSERT_TRUE(parseFeedbackCounters("ref:0 del:0", r, d));
    EXPECT_EQ(r, 0U);
    ASSERT_TRUE(
        parseFeedbackCounters("ref:18446744073709551615 del:1\n", r, d));
    EXPECT_EQ(r, ~std::uint64_t{0});
    EXPECT_EQ(d, 1U);
}

TEST(FeedbackCountersTest, RefusesEverythingElse)
{
    for (std::string_view bad :
         {"", "\n", "ref:1 del:2\n\n", "ref:1 del:2 ", " ref:1 del:2",
          "ref: 1 del:2", "ref:1  del:2", "ref:1del:2",
          "ref:1 del:", "ref: del:2", "ref:-1 del:2", "ref:+1 del:2",
          "ref:0x10 del:2", "del:2 ref:1", "REF:1 DEL:2", "ref:1 del:2 wrap:3",
          "ref:18446744073709551616 del:1"})
    {
        std::uint64_t r = 7;
        std::uint64_t d = 7;
        EXPECT_FALSE(parseFeedbackCounters(bad, r, d)) << "'" << bad << "'";
        EXPECT_EQ(r, 7U);
        EXPECT_EQ(d, 7U);
    }
}

TEST(FeedbackCountersTest, ReadsFreshValuesAndTimesTheRead)
{
    TempTree t;
    const std::string f = "sys/devices/system/cpu/cpu3/acpi_cppc/feedback_ctrs";
    t.write(f, "ref:1000 del:2000\n");
    const std::array<unsigned, 1> cpus{3};
    KernelCounters counters(t.path(), cpus);
    CounterSample s;
    const auto before = std::chrono::steady_clock::now();
    ASSERT_FALSE(counters.read(3, s));
    const auto after = std::chrono::steady_clock::now();
    EXPECT_EQ(s.reference, 1000U);
    EXPECT_EQ(s.delivered, 2000U);
    EXPECT_GE(s.at, before);
    EXPECT_LE(s.at + s.readTime, after);
    EXPECT_GE(s.readTime.count(), 0);

    t.write(f, "ref:1500 del:3500\n"); // the next read sees new values
    ASSERT_FALSE(counters.read(3, s));
    EXPECT_EQ(s.reference, 1500U);
    EXPECT_EQ(s.delivered, 3500U);

    t.write(f, "ref:1 del:x\n");
    s = CounterSample{};
    EXPECT_EQ(counters.read(3, s), Errc::malformedAttribute);
    EXPECT_EQ(s.reference, 0U);
    t.write(f, std::string(64, '1'));
    EXPECT_EQ(counters.read(3, s), Errc::malformedAttribute);

    EXPECT_EQ(counters.read(2, s), Errc::noSuchCpu);
    EXPECT_EQ(counters.read(99, s), Errc::noSuchCpu);
}

TEST(FeedbackCountersTest, AMissingFileIsAStartUpErrorNamingIt)
{
    TempTree t;
    const std::array<unsigned, 1> cpus{0};
    try
    {
        KernelCounters counters(t.path(), cpus);
        FAIL() << "no exception";
    }
    catch (const std::system_error& e)
    {
        EXPECT_THAT(e.what(), HasSubstr("cpu0/acpi_cppc/feedback_ctrs'"));
    }
}

// ---------------------------------------------------------------------------
// A fake machine: cpufreq policies over six CPUs.
//
//   policy0  CPUs 0-3 (shared, one SW_ANY domain), Orion O6 big-core caps,
//            schedutil
//   policy4  CPU 4 alone, 255/200/50/10 at 1000-3000 MHz, userspace
//   policy5  CPU 5 alone, no frequencies in _CPC (DMI says 3000 MHz),
//            performance
//   policy6  CPU 6, offline: no affected CPUs

struct FakeCaps
{
    std::uint32_t highest, nominal, lowestNonlinear, lowest;
    const char* lowestFreq;  // nullptr: no file
    const char* nominalFreq; // nullptr: no file
};

void writeCaps(const TempTree& t, unsigned cpu, const FakeCaps& c)
{
    const std::string dir =
        "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/acpi_cppc/";
    t.write(dir + "highest_perf", std::to_string(c.highest) + "\n");
    t.write(dir + "nominal_perf", std::to_string(c.nominal) + "\n");
    t.write(dir + "lowest_nonlinear_perf",
            std::to_string(c.lowestNonlinear) + "\n");
    t.write(dir + "lowest_perf", std::to_string(c.lowest) + "\n");
    t.write(dir + "guaranteed_perf", std::to_string(c.nominal) + "\n");
    if (c.lowestFreq != nullptr)
    {
        t.write(dir + "lowest_freq", std::string(c.lowestFreq) + "\n");
    }
    if (c.nominalFreq != nullptr)
    {
        t.write(dir + "nominal_freq", std::string(c.nominalFreq) + "\n");
    }
    t.write(dir + "feedback_ctrs",
            "ref:" + std::to_string(cpu * 1000) +
                " del:" + std::to_string(cpu * 2000) + "\n");
    t.write(dir + "wraparound_time", "18446744073709551615\n");
}

struct FakePolicy
{
    unsigned number;
    const char* related;
    const char* affected;
    const char* governor;
    const char* setspeed;
    std::uint32_t cpuinfoMin, cpuinfoMax, min, max;
};

constexpr const char* allGovernors =
    "conservative ondemand userspace powersave performance schedutil \n";

void writePolicy(const TempTree& t, const FakePolicy& p,
                 const char* governors = allGovernors,
                 const char* driver = "cppc_cpufreq")
{
    const std::string name = "policy" + std::to_string(p.number);
    const std::string dir = "sys/devices/system/cpu/cpufreq/" + name + "/";
    t.write(dir + "related_cpus", std::string(p.related) + "\n");
    t.write(dir + "affected_cpus", std::string(p.affected) + "\n");
    t.write(dir + "scaling_driver", std::string(driver) + "\n");
    t.write(dir + "scaling_available_governors", governors);
    t.write(dir + "scaling_governor", std::string(p.governor) + "\n");
    t.write(dir + "scaling_setspeed", std::string(p.setspeed) + "\n");
    t.write(dir + "cpuinfo_min_freq", std::to_string(p.cpuinfoMin) + "\n");
    t.write(dir + "cpuinfo_max_freq", std::to_string(p.cpuinfoMax) + "\n");
    t.write(dir + "scaling_min_freq", std::to_string(p.min) + "\n");
    t.write(dir + "scaling_max_freq", std::to_string(p.max) + "\n");
    t.write(dir + "scaling_cur_freq", std::to_string(p.max) + "\n");
}

constexpr FakePolicy policy0{0,           "0 1 2 3",       "0 1 2 3",
                             "schedutil", "<unsupported>", 800000,
                             2500000,     800000,          2500000};
constexpr FakePolicy policy4{4,       "4",     "4",     "userspace", "2000000",
                             1000000, 3000000, 1421052, 3000000};
constexpr FakePolicy policy5{
    5,      "5",     "5",    "performance", "<unsupported>",
    300000, 2400000, 600000, 2400000};
constexpr FakePolicy policy6{
    6, "6", "", "schedutil", "<unsupported>", 800000, 2500000, 800000, 2500000};

// The machine under <tree>/root; the state file goes to <tree>/run.
struct Machine
{
    explicit Machine(const char* policy0Governors = allGovernors,
                     const char* policy5Driver = "cppc_cpufreq")
    {
        for (unsigned cpu = 0; cpu < 4; ++cpu)
        {
            writeCaps(sys, cpu, {0x2000, 0x2000, 0xA3D, 0xA3D, "800", "2500"});
            sys.symlink("sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                            "/cpufreq",
                        "../cpufreq/policy0");
        }
        writeCaps(sys, 4, {255, 200, 50, 10, "1000", "3000"});
        sys.write("sys/devices/system/cpu/cpu4/acpi_cppc/reference_perf",
                  "200\n");
        writeCaps(sys, 5, {1000, 800, 200, 100, nullptr, "0"});
        writeCaps(sys, 6, {0x2000, 0x2000, 0xA3D, 0xA3D, "800", "2500"});
        writePolicy(sys, policy0, policy0Governors);
        writePolicy(sys, policy4);
        writePolicy(sys, policy5, allGovernors, policy5Driver);
        writePolicy(sys, policy6);
        sys.write("sys/firmware/dmi/entries/4-0/raw", dmiProcessor(48, 3000));
        std::filesystem::create_directories(tree.path() / "run");
    }

    std::filesystem::path root() const
    {
        return sys.path();
    }
    std::filesystem::path stateFile() const
    {
        return tree.path() / "run/cpufreq.state";
    }
    std::filesystem::path policyDir(unsigned policy) const
    {
        return sys.path() / ("sys/devices/system/cpu/cpufreq/policy" +
                             std::to_string(policy));
    }
    std::string policyFile(unsigned policy, const char* name) const
    {
        return sys.read("sys/devices/system/cpu/cpufreq/policy" +
                        std::to_string(policy) + "/" + name);
    }
    void setPolicyFile(unsigned policy, const char* name,
                       const std::string& value) const
    {
        sys.write("sys/devices/system/cpu/cpufreq/policy" +
                      std::to_string(policy) + "/" + name,
                  value);
    }

    // The tree as sysfs would show it: scaling_setspeed is computed on
    // read, "<unsupported>" unless the governor is userspace. A plain file
    // keeps whatever was last written, so apply the kernel's rule before
    // comparing.
    std::map<std::string, std::string> kernelView() const
    {
        std::map<std::string, std::string> s = sys.snapshot();
        for (auto& [path, content] : s)
        {
            const std::string suffix = "/scaling_setspeed";
            if (path.size() < suffix.size() ||
                path.compare(path.size() - suffix.size(), suffix.size(),
                             suffix) != 0)
            {
                continue;
            }
            const std::string governor =
                path.substr(0, path.size() - suffix.size()) +
                "/scaling_governor";
            if (s.at(governor) != "file userspace\n")
            {
                content = "file <unsupported>\n";
            }
        }
        return s;
    }

    TempTree tree;
    TempTree sys;
};

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
    for (unsigned p : {0, 4, 5})
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
    Machine m("conservative ondemand powersave performance schedutil \n");
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
    }
    EXPECT_EQ(m.sys.snapshot(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
}

TEST(KernelBackendTest, RefusedWhenTheDriverIsNotCppcCpufreq)
{
    Machine m(allGovernors, "cpufreq-dt");
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

TEST(KernelBackendTest, AfterRestoreTheTreeIsByteForByteAsFound)
{
    Machine m;
    const auto before = m.kernelView();
    KernelBackend b(m.root(), {{}, m.stateFile()});
    ASSERT_FALSE(b.setPerf(0, 0x1800).error);
    ASSERT_FALSE(b.setPerf(4, 100).error);
    ASSERT_FALSE(b.setPerf(5, 900).error);
    ASSERT_FALSE(b.setLimits(0, 0x1000, 0x1800).error);
    ASSERT_FALSE(b.setLimits(4, 100, 150).error);
    ASSERT_FALSE(b.setLimits(5, 100, 1000).error);
    ASSERT_NE(m.kernelView(), before);
    EXPECT_THAT(b.restore().entries(), IsEmpty());
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
    EXPECT_THAT(b.restore().entries(), IsEmpty()); // once only
}

TEST(KernelBackendTest, TheDestructorRestores)
{
    Machine m;
    const auto before = m.kernelView();
    {
        KernelBackend b(m.root(), {{}, m.stateFile()});
        ASSERT_FALSE(b.setPerf(2, 0x1000).error);
        ASSERT_FALSE(b.setLimits(4, 10, 255).error);
        ASSERT_NE(m.kernelView(), before);
    }
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
}

// A run that changes every policy and dies without unwinding: the tree is
// left changed, and the state file records what it was.
void crash(const Machine& m)
{
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0)
    {
        try
        {
            KernelBackend b(m.root(), {{}, m.stateFile()});
            const bool ok =
                !b.setPerf(0, 0x1800).error && !b.setPerf(4, 100).error &&
                !b.setLimits(0, 0x1000, 0x1800).error &&
                !b.setLimits(5, 500, 900).error;
            ::_exit(ok ? 0 : 1);
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
    ASSERT_TRUE(m.tree.exists("run/cpufreq.state"));
}

TEST(KernelBackendTest, ACrashIsUndoneFromTheStateFile)
{
    Machine m;
    const auto before = m.kernelView();
    ASSERT_NO_FATAL_FAILURE(crash(m));
    ASSERT_NE(m.kernelView(), before);

    // A new start must not overwrite the record of the original state.
    try
    {
        KernelBackend b(m.root(), {{}, m.stateFile()});
        FAIL() << "started over an unrestored state file";
    }
    catch (const std::system_error& e)
    {
        EXPECT_EQ(e.code(), std::errc::file_exists);
        EXPECT_THAT(e.what(), HasSubstr(m.stateFile().string()));
    }

    const RestoreResult r =
        KernelBackend::restoreFromFile(m.root(), m.stateFile());
    EXPECT_FALSE(r.anythingLeft());
    ASSERT_THAT(r.entries(), SizeIs(1));
    EXPECT_EQ(r.entries()[0].step, RestoreStep::putBack);
    EXPECT_EQ(r.entries()[0].severity, RestoreSeverity::notice);
    EXPECT_THAT(describe(r.entries()[0]),
                AllOf(HasSubstr("restored the cpufreq settings"),
                      HasSubstr("'" + m.stateFile().string() + "'")));
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
    // Nothing left to do: nothing to say.
    EXPECT_THAT(
        KernelBackend::restoreFromFile(m.root(), m.stateFile()).entries(),
        IsEmpty());
}

TEST(KernelBackendTest, AFailedStartPutsBackWhatItChanged)
{
    Machine m;
    const auto before = m.kernelView();
    // policy5's governor cannot be written: policy0 and policy4 are
    // switched (or kept) first, then the start fails and must undo them.
    // Root writes through permissions, so the child gives them up.
    std::filesystem::permissions(
        m.sys.path(),
        std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
            std::filesystem::perms::group_exec |
            std::filesystem::perms::others_read |
            std::filesystem::perms::others_exec);
    for (const auto& e :
         std::filesystem::recursive_directory_iterator(m.sys.path()))
    {
        if (e.is_regular_file() && !e.is_symlink())
        {
            std::filesystem::permissions(
                e.path(), std::filesystem::perms::owner_read |
                              std::filesystem::perms::owner_write |
                              std::filesystem::perms::group_read |
                              std::filesystem::perms::group_write |
                              std::filesystem::perms::others_read |
                              std::filesystem::perms::others_write);
        }
    }
    std::filesystem::permissions(
        m.root() / "sys/devices/system/cpu/cpufreq/policy5/scaling_governor",
        std::filesystem::perms::owner_read |
            std::filesystem::perms::group_read |
            std::filesystem::perms::others_read);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0)
    {
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
        {
            ::_exit(3);
        }
        try
        {
            KernelBackend b(m.root());
            ::_exit(1);
        }
        catch (const std::system_error& e)
        {
            const bool named =
                std::string_view(e.what()).find("policy5/scaling_governor'") !=
                std::string_view::npos;
            ::_exit(e.code() == std::errc::permission_denied && named ? 0 : 2);
        }
        catch (...)
        {
            ::_exit(4);
        }
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(m.kernelView(), before);
}

// ---------------------------------------------------------------------------
// Restores that cannot put everything back: the state file keeps exactly
// the policies that are not back, a start refuses over it, and once the
// cause is gone a restore from it finishes the job.

// `view` without the files of policy `number`.
std::map<std::string, std::string> withoutPolicy(
    std::map<std::string, std::string> view, unsigned number)
{
    const std::string dir = "/cpufreq/policy" + std::to_string(number) + "/";
    std::erase_if(view, [&dir](const auto& entry) {
        return entry.first.find(dir) != std::string::npos;
    });
    return view;
}

// Whether a start refuses over the state file (and so never records what a
// failed restore left in place as the original).
bool startRefused(const Machine& m)
{
    try
    {
        KernelBackend b(m.root(), {{}, m.stateFile()});
        return false;
    }
    catch (const std::system_error& e)
    {
        return e.code() == std::errc::file_exists;
    }
}

TEST(KernelRestoreTest, AtStopAnOfflinePolicyStaysInTheStateFileUntilBack)
{
    Machine m;
    UnkindIo io;
    const auto before = m.kernelView();
    std::optional<KernelBackend> b;
    b.emplace(m.root(), KernelBackendOptions{{}, m.stateFile(), &io});
    ASSERT_FALSE(b->setPerf(0, 0x1800).error);
    ASSERT_FALSE(b->setLimits(4, 100, 150).error);
    ASSERT_FALSE(b->setLimits(5, 500, 900).error);
    const PolicyState found0 = b->saved()[0];
    ASSERT_EQ(found0.governor, "schedutil");

    // Every CPU of policy0 goes offline before the stop.
    io.offline(m.policyDir(0));
    const RestoreResult r = b->restore();
    EXPECT_TRUE(r.anythingLeft());
    EXPECT_TRUE(r.isLeft("policy0"));
    ASSERT_THAT(r.failures(), SizeIs(3));
    for (const RestoreEntry& e : r.failures())
    {
        EXPECT_EQ(e.record, "policy0");
        EXPECT_EQ(e.step, RestoreStep::writeSaved);
        EXPECT_EQ(e.error, std::errc::device_or_resource_busy);
    }
    EXPECT_THAT(r.leftFiles(),
                ElementsAre(m.policyDir(0) / "scaling_min_freq",
                            m.policyDir(0) / "scaling_max_freq",
                            m.policyDir(0) / "scaling_governor"));
    EXPECT_THAT(
        describe(r.failures().back()),
        AllOf(HasSubstr("writing the saved value 'schedutil' to '" +
                        (m.policyDir(0) / "scaling_governor").string() + "'"),
              HasSubstr("Device or resource busy")));
    // The state file holds exactly policy0, as it was found; the others
    // are back.
    EXPECT_EQ(m.tree.read("run/cpufreq.state"), formatState({found0}));
    EXPECT_THAT(r.keptStateFiles(), ElementsAre(m.stateFile()));
    EXPECT_THAT(b->saved(), ElementsAre(found0));
    EXPECT_EQ(withoutPolicy(m.kernelView(), 0), withoutPolicy(before, 0));
    b.reset(); // the destructor does not restore twice
    EXPECT_EQ(m.tree.read("run/cpufreq.state"), formatState({found0}));

    // The CPUs come back with the policy as the backend left it.
    io.online(m.policyDir(0));
    EXPECT_EQ(m.policyFile(0, "scaling_governor"), "userspace\n");
    EXPECT_TRUE(startRefused(m));
    const RestoreResult again =
        KernelBackend::restoreFromFile(m.root(), m.stateFile(), io);
    EXPECT_FALSE(again.anythingLeft());
    EXPECT_EQ(m.kernelView(), before);
    EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
    KernelBackend next(m.root(), {{}, m.stateFile()});
    EXPECT_EQ(next.saved()[0], found0);
}

// One way for a restore to fail, and what takes the cause away.
struct Breakage
{
    const char* what;
    unsigned policy;
    const char* file;
    std::errc error;
    std::function<void(const Machine&, UnkindIo&)> cause;
    std::function<void(const Machine&, UnkindIo&)> fix;
};

std::vector<Breakage> breakages()
{
    const auto path = [](const Machine& m, unsigned policy, const char* name) {
        return m.policyDir(policy) / name;
    };
    return {
        {"a read-only file", 5, "scaling_governor",
         std::errc::permission_denied,
         [=](const Machine& m, UnkindIo& io) {
        io.readOnly(path(m, 5, "scaling_governor"));
         },
         [=](const Machine& m, UnkindIo& io) {
        io.writable(path(m, 5, "scaling_governor"));
        }},
        {"a vanished file", 4, "scaling_max_freq",
         std::errc::no_such_file_or_directory,
         [=](const Machine& m, UnkindIo&) {
        std::filesystem::remove(path(m, 4, "scaling_max_freq"));
         },
         [](const Machine& m, UnkindIo&) {
        m.setPolicyFile(4, "scaling_max_freq", "1\n");
        }},
        {"a directory in the file's place", 0, "scaling_min_freq",
         std::errc::is_a_directory,
         [=](const Machine& m, UnkindIo&) {
        std::filesystem::remove(path(m, 0, "scaling_min_freq"));
        std::filesystem::create_directory(path(m, 0, "scaling_min_freq"));
         },
         [=](const Machine& m, UnkindIo&) {
        std::filesystem::remove(path(m, 0, "scaling_min_freq"));
        m.setPolicyFile(0, "scaling_min_freq", "1\n");
        }},
        {"every CPU of the policy offline", 0, "scaling_governor",
         std::errc::device_or_resource_busy,
         [](const Machine& m, UnkindIo& io) { io.offline(m.policyDir(0)); },
         [](const Machine& m, UnkindIo& io) { io.online(m.policyDir(0)); }},
        };
}

TEST(KernelRestoreTest, AfterACrashFixItAndRunAgain)
{
    for (const Breakage& b : breakages())
    {
        SCOPED_TRACE(b.what);
        Machine m;
        UnkindIo io;
        const auto before = m.kernelView();
        ASSERT_NO_FATAL_FAILURE(crash(m));
        const std::string name = "policy" + std::to_string(b.policy);
        std::vector<PolicyState> recorded =
            parseState(m.tree.read("run/cpufreq.state"), m.stateFile());
        std::erase_if(recorded,
                      [&name](const PolicyState& p) { return p.name != name; });
        ASSERT_THAT(recorded, SizeIs(1));
        const std::string left = formatState(recorded);
        b.cause(m, io);

        // The restore fails on that policy only, and says so; the state
        // file then holds exactly that policy. Running it again before the
        // fix changes nothing.
        for (int attempt = 0; attempt < 2; ++attempt)
        {
            const RestoreResult r =
                KernelBackend::restoreFromFile(m.root(), m.stateFile(), io);
            EXPECT_TRUE(r.anythingLeft());
            EXPECT_TRUE(r.isLeft(name));
            ASSERT_FALSE(r.failures().empty());
            for (const RestoreEntry& e : r.failures())
            {
                EXPECT_EQ(e.record, name);
                EXPECT_EQ(e.step, RestoreStep::writeSaved);
                EXPECT_EQ(e.error, b.error) << describe(e);
            }
            EXPECT_THAT(r.leftFiles(),
                        testing::Contains(m.policyDir(b.policy) / b.file));
            EXPECT_THAT(r.keptStateFiles(), ElementsAre(m.stateFile()));
            EXPECT_EQ(m.tree.read("run/cpufreq.state"), left);
            EXPECT_EQ(withoutPolicy(m.kernelView(), b.policy),
                      withoutPolicy(before, b.policy));
            EXPECT_TRUE(startRefused(m));
        }

        b.fix(m, io);
        const RestoreResult r =
            KernelBackend::restoreFromFile(m.root(), m.stateFile(), io);
        EXPECT_FALSE(r.anythingLeft());
        EXPECT_EQ(m.kernelView(), before);
        EXPECT_FALSE(m.tree.exists("run/cpufreq.state"));
        // A start now records the original, not what the crash left.
        KernelBackend next(m.root(), {{}, m.stateFile()});
        EXPECT_THAT(next.saved(), testing::Contains(recorded[0]));
    }
}

TEST(KernelRestoreTest, AStateFileThatCannotBeRewrittenStaysAsItWas)
{
    Machine m;
    UnkindIo io;
    ASSERT_NO_FATAL_FAILURE(crash(m));
    const std::string recorded = m.tree.read("run/cpufreq.state");
    io.offline(m.policyDir(4));
    // The directory refuses the temporary file: the rewrite fails and the
    // old file, which holds more than is left, stays whole.
    std::filesystem::create_directory(m.tree.path() / "run/cpufreq.state.tmp");
    const RestoreResult r =
        KernelBackend::restoreFromFile(m.root(), m.stateFile(), io);
    EXPECT_TRUE(r.isLeft("policy4"));
    ASSERT_FALSE(r.failures().empty());
    EXPECT_EQ(r.failures().back().step, RestoreStep::keepStateFile);
    EXPECT_EQ(r.failures().back().detail, "policy4");
    EXPECT_EQ(m.tree.read("run/cpufreq.state"), recorded);
    EXPECT_THAT(r.keptStateFiles(), ElementsAre(m.stateFile()));
}

// ---------------------------------------------------------------------------
// Restore order, observed with inotify: every write closes the attribute,
// and IN_CLOSE_WRITE events arrive in order.

class WriteOrder
{
  public:
    explicit WriteOrder(const std::filesystem::path& dir) :
        fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
    {
        if (fd_ < 0 ||
            ::inotify_add_watch(fd_, dir.c_str(), IN_CLOSE_WRITE) < 0)
        {
            throw std::system_error(errno, std::system_category(), "inotify");
        }
    }
    WriteOrder(const WriteOrder&) = delete;
    WriteOrder& operator=(const WriteOrder&) = delete;
    ~WriteOrder()
    {
        ::close(fd_);
    }

    std::vector<std::string> names()
    {
        std::vector<std::string> out;
        alignas(inotify_event) std::array<char, 8192> buf{};
        for (;;)
        {
            const ssize_t n = ::read(fd_, buf.data(), buf.size());
            if (n <= 0)
            {
                return out;
            }
            for (ssize_t at = 0; at < n;)
            {
                inotify_event ev{};
                std::memcpy(&ev, buf.data() + at, sizeof ev);
                out.emplace_back(buf.data() + at + sizeof ev);
                at += static_cast<ssize_t>(sizeof ev + ev.len);
            }
        }
    }

  private:
    int fd_;
};

TEST(RestoreOrderTest, RaisingTheMinimumAboveTheMaximumWritesMaximumFirst)
{
    Machine m;
    // Current: userspace, 800000-1000000. Saved: schedutil, 1800000-2500000.
    m.setPolicyFile(0, "scaling_governor", "userspace\n");
    m.setPolicyFile(0, "scaling_max_freq", "1000000\n");
    WriteOrder order(m.root() / "sys/devices/system/cpu/cpufreq/policy0");
    const std::vector<PolicyState> saved{
        {"policy0", "schedutil", 1800000, 2500000, std::nullopt}};
    EXPECT_THAT(restorePolicies(m.root(), saved).entries(), IsEmpty());
    EXPECT_THAT(order.names(),
                ElementsAre("scaling_max_freq", "scaling_min_freq",
                            "scaling_governor"));
    EXPECT_EQ(m.policyFile(0, "scaling_min_freq"), "1800000\n");
    EXPECT_EQ(m.policyFile(0, "scaling_max_freq"), "2500000\n");
    EXPECT_EQ(m.policyFile(0, "scaling_governor"), "schedutil\n");
}

TEST(RestoreOrderTest, LoweringTheMaximumWritesMinimumFirstThenSetSpeed)
{
    Machine m;
    // Current: userspace, 1800000-2500000. Saved: userspace at 900000 in
    // 800000-1000000; the governor needs no write.
    m.setPolicyFile(0, "scaling_governor", "userspace\n");
    m.setPolicyFile(0, "scaling_min_freq", "1800000\n");
    WriteOrder order(m.root() / "sys/devices/system/cpu/cpufreq/policy0");
    const std::vector<PolicyState> saved{
        {"policy0", "userspace", 800000, 1000000, 900000}};
    EXPECT_THAT(restorePolicies(m.root(), saved).entries(), IsEmpty());
    EXPECT_THAT(order.names(),
                ElementsAre("scaling_min_freq", "scaling_max_freq",
                            "scaling_setspeed"));
    EXPECT_EQ(m.policyFile(0, "scaling_setspeed"), "900000\n");
}

TEST(RestoreOrderTest, UserspaceComesFirstAndValuesInPlaceAreNotRewritten)
{
    Machine m;
    // Someone switched policy0 to schedutil; the saved governor was
    // userspace, and the limits are already right.
    WriteOrder order(m.root() / "sys/devices/system/cpu/cpufreq/policy0");
    const std::vector<PolicyState> saved{
        {"policy0", "userspace", 800000, 2500000, 1000000}};
    EXPECT_THAT(restorePolicies(m.root(), saved).entries(), IsEmpty());
    EXPECT_THAT(order.names(),
                ElementsAre("scaling_governor", "scaling_setspeed"));
}

TEST(RestoreOrderTest, FailuresAreCollectedAndTheRestCarriesOn)
{
    Machine m;
    m.setPolicyFile(4, "scaling_governor", "schedutil\n");
    const std::vector<PolicyState> saved{
        {"policy9", "schedutil", 1, 2, std::nullopt},
        {"policy4", "userspace", 1421052, 3000000, 2000000}};
    const RestoreResult r = restorePolicies(m.root(), saved);
    ASSERT_TRUE(r.anythingLeft());
    EXPECT_TRUE(r.isLeft("policy9"));
    EXPECT_FALSE(r.isLeft("policy4"));
    for (const RestoreEntry& e : r.entries())
    {
        EXPECT_EQ(e.record, "policy9");
        EXPECT_THAT(e.file.string(), HasSubstr("policy9/"));
        EXPECT_EQ(e.error, std::errc::no_such_file_or_directory);
        // Reads of what is in place only warn: the write decides.
        EXPECT_EQ(e.severity, e.step == RestoreStep::readCurrent
                                  ? RestoreSeverity::warning
                                  : RestoreSeverity::failure);
    }
    // Each step says which it was.
    EXPECT_THAT(describe(r.failures().front()),
                AllOf(HasSubstr("writing the saved value '"),
                      HasSubstr("policy9/scaling_"),
                      HasSubstr("No such file or directory")));
    EXPECT_EQ(m.policyFile(4, "scaling_governor"), "userspace\n");
}

// ---------------------------------------------------------------------------
// The state file

TEST(StateFileTest, RoundTrips)
{
    const std::vector<PolicyState> saved{
        {"policy0", "schedutil", 800000, 2500000, std::nullopt},
        {"policy12", "userspace", 1, 4294967295U, 1800000}};
    const std::string text = formatState(saved);
    EXPECT_EQ(text, "cppcgov-cpufreq-state 1\n"
                    "policy0 schedutil 800000 2500000 -\n"
                    "policy12 userspace 1 4294967295 1800000\n");
    EXPECT_EQ(parseState(text, "/s"), saved);
    EXPECT_THAT(parseState("cppcgov-cpufreq-state 1\n", "/s"), IsEmpty());
}

TEST(StateFileTest, ParsingIsStrict)
{
    const std::string h = "cppcgov-cpufreq-state 1\n";
    for (const std::string& bad :
         {std::string(), std::string("cppcgov-cpufreq-state 2\n"),
          h + "policy0 schedutil 1 2 -",     // no final newline
          h + "policy0 schedutil 1 2 3\n",   // set speed, not userspace
          h + "policy0 userspace 1 2 -\n",   // userspace without one
          h + "policy0 schedutil 1 2 - x\n", // extra field
          h + "policy0 schedutil 1 2\n",     // missing field
          h + "cpu0 schedutil 1 2 -\n",      // not a policy
          h + "policy0 sched util 1 2 -\n",  //
          h + "policy0 Schedutil 1 2 -\n",   // governor names are lower case
          h + "policy0 schedutil 4294967296 2 -\n", // above 32 bits
          h + "policy0 schedutil -1 2 -\n", h + "policy0  schedutil 1 2 -\n",
          h + "\n"})
    {
        try
        {
            (void)parseState(bad, "/run/state");
            ADD_FAILURE() << "accepted '" << bad << "'";
        }
        catch (const std::system_error& e)
        {
            EXPECT_EQ(e.code(), Errc::malformedAttribute);
            EXPECT_THAT(e.what(), HasSubstr("'/run/state'"));
        }
    }
}

TEST(StateFileTest, AMalformedFileIsKeptAndNamed)
{
    Machine m;
    m.tree.write("run/cpufreq.state", "garbage\n");
    const RestoreResult r =
        KernelBackend::restoreFromFile(m.root(), m.stateFile());
    ASSERT_THAT(r.failures(), SizeIs(1));
    EXPECT_EQ(r.failures()[0].step, RestoreStep::parseStateFile);
    EXPECT_EQ(r.failures()[0].error, Errc::malformedAttribute);
    EXPECT_THAT(describe(r.failures()[0]),
                HasSubstr("'" + m.stateFile().string() + "'"));
    EXPECT_THAT(r.keptStateFiles(), ElementsAre(m.stateFile()));
    EXPECT_EQ(m.tree.read("run/cpufreq.state"), "garbage\n");
}

} // namespace
} // namespace cppc::backend
