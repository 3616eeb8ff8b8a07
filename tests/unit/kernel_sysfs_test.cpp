// SPDX-License-Identifier: Apache-2.0
// The kernel backend's building blocks on a fake sysfs tree: the sysfs
// helpers, the perf/kHz conversion of Linux's CPPC library (with DMI's max
// speed where _CPC has no frequencies) and feedback_ctrs.
#include "kernel_backend_test_support.hpp"
#include "lib/backend/kernel.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"
#include "temp_tree.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using cppc::test::TempTree;
using test::dmiProcessor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

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

} // namespace
} // namespace cppc::backend
