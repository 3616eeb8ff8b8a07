// SPDX-License-Identifier: Apache-2.0
// The firmware checks while running (daemon/firmware_watch.hpp), driven
// through the governor by a machine of the test's own whose platform can
// ignore requests, stop its counters or count at the wrong rate; what the
// daemon logs of them (firmware_log.hpp); and the `sanity:` section.
#include "daemon/config.hpp"
#include "daemon/firmware_log.hpp"
#include "daemon/firmware_watch.hpp"
#include "daemon/governor.hpp"
#include "daemon/machines/simulator_machine.hpp"
#include "machine_test_support.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::uint64_t tickUs = 10'000;

// Orion O6 big cores: domain 0 is CPUs 0-1 (one request), domain 1 CPU 2.
// The platform delivers what `deliver` makes of each CPU's request, and
// each sample's counters advance as `referenceHz` and the delivered
// performance say, over a counter window of one tick.
class PlatformMachine final : public Machine
{
  public:
    PlatformMachine()
    {
        const policies::CpuCaps caps{0x2000, 0x2000,  0xA3D,    0xA3D,
                                     0,      800'000, 2'500'000};
        topology_ = policies::makeTopology(
            {caps, caps, caps}, {{{0, 1}, policies::Coordination::shared},
                                 {{2}, policies::Coordination::shared}});
        requested.assign(3, 0);
        busy.assign(3, true);
        limited.assign(3, 0);
        windows.assign(3, 0);
        referenceMoves.assign(3, true);
        deliveredMoves.assign(3, true);
    }

    std::string name() const override
    {
        return "platform";
    }
    const policies::Topology& topology() const override
    {
        return topology_;
    }
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override
    {
        return cpu < 2 ? 4 : 5;
    }
    std::error_code sample(std::uint64_t nowUs,
                           std::span<CpuSample> out) noexcept override
    {
        const std::uint64_t dtUs = started_ ? nowUs - lastUs_ : 0;
        started_ = true;
        lastUs_ = nowUs;
        for (std::size_t cpu = 0; cpu < out.size(); ++cpu)
        {
            const std::uint32_t delivered =
                requested[cpu] == 0 ? 0 : deliver(cpu, requested[cpu]);
            CpuSample& s = out[cpu];
            s = {};
            s.util = busy[cpu] ? 1024 : 0;
            s.deliveredPerf = delivered;
            s.busyUs = busy[cpu] ? dtUs : 0;
            s.perfLimited = limited[cpu];
            if (countersRead && dtUs != 0)
            {
                double seconds = static_cast<double>(dtUs) / 1e6;
                if (lumpEvery != 0)
                {
                    // Counted in lumps: nothing for lumpEvery - 1 samples,
                    // then all of them at once.
                    seconds = windows[cpu] % lumpEvery == lumpEvery - 1
                                  ? seconds * lumpEvery
                                  : 0;
                }
                const double reference = referenceHz * seconds;
                s.counters = {referenceMoves[cpu]
                                  ? static_cast<std::uint64_t>(reference)
                                  : 0,
                              deliveredMoves[cpu]
                                  ? static_cast<std::uint64_t>(
                                        reference * delivered / referencePerf)
                                  : 0,
                              dtUs, referencePerf, ++windows[cpu]};
            }
        }
        return {};
    }
    Controls controls() const noexcept override
    {
        return {Control::desired};
    }
    std::error_code apply(
        std::span<const CppcRequest> requests) noexcept override
    {
        for (const CppcRequest& r : requests)
        {
            requested[r.cpu] = r.desired;
        }
        return {};
    }
    bool readsPerfLimited() const noexcept override
    {
        return perfLimitedReadable;
    }
    std::string_view degraded(std::uint32_t cpu) const noexcept override
    {
        return cpu == hungCpu ? std::string_view("an access hung") : "";
    }
    std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept override
    {
        return hostCpu;
    }
    cppc::backend::RestoreResult restore() noexcept override
    {
        return {};
    }

    // What the platform makes of a request: by default, what was asked.
    std::function<std::uint32_t(std::size_t, std::uint32_t)> deliver =
        [](std::size_t, std::uint32_t r) { return r; };
    std::vector<std::uint32_t> requested;
    std::vector<bool> busy;
    std::vector<std::uint8_t> limited;
    std::vector<std::uint64_t> windows;
    std::vector<bool> referenceMoves;
    std::vector<bool> deliveredMoves;
    bool countersRead = false;
    bool perfLimitedReadable = false;
    // The counter rate the table implies for these CPUs: 305.2 MHz.
    double referenceHz = 1e3 * 2'500'000.0 * 1000 / 0x2000;
    std::uint32_t lumpEvery = 0;
    std::uint32_t referencePerf = 1000;
    std::uint32_t hungCpu = 99;

  private:
    policies::Topology topology_;
    std::uint64_t lastUs_ = 0;
    bool started_ = false;
};

class FirmwareWatchTest : public ::testing::Test
{
  protected:
    FirmwareWatchTest()
    {
        config_.sanity.followWindowS = 5;
    }

    // Ticks the governor every 10 ms until `untilUs`.
    void runUntil(Governor& g, std::uint64_t untilUs)
    {
        TickReport report;
        for (; nowUs_ <= untilUs; nowUs_ += tickUs)
        {
            g.tick(nowUs_, {}, report);
        }
    }
    std::string degraded(const Governor& g, std::size_t cpu) const
    {
        return g.cpus()[cpu].degraded;
    }

    PlatformMachine machine_;
    GovernorConfig config_;
    std::uint64_t nowUs_ = 1'000'000;
};

TEST_F(FirmwareWatchTest, QuietWhileThePlatformFollows)
{
    machine_.countersRead = true;
    Governor g(machine_, config_);
    runUntil(g, 20'000'000);
    for (std::size_t cpu = 0; cpu < 3; ++cpu)
    {
        EXPECT_THAT(degraded(g, cpu), IsEmpty()) << "CPU " << cpu;
    }
    EXPECT_EQ(g.firmware().changes(), 0U);
}

TEST_F(FirmwareWatchTest, DeliveredThatIgnoresTheRequest)
{
    // CPU 1 stays at 2600 whatever it is asked.
    machine_.deliver = [](std::size_t cpu, std::uint32_t r) {
        return cpu == 1 ? 2600U : r;
    };
    Governor g(machine_, config_);
    runUntil(g, 3'000'000);
    EXPECT_THAT(degraded(g, 1), IsEmpty()) << "judged before the window";
    runUntil(g, 6'100'000);
    // The request of the window (the load's average still rising while
    // it began), at least twice what was delivered.
    const std::string shown = degraded(g, 1);
    EXPECT_THAT(shown,
                ::testing::MatchesRegex(
                    "firmware: delivered 2600 while [0-9]+ requested for "
                    "5 s \\(PerformanceLimited not readable\\) "
                    "\\(CPU 1\\)"));
    const std::string asked =
        shown.substr(shown.find("while ") + 6,
                     shown.find(" requested") - shown.find("while ") - 6);
    EXPECT_GT(std::stoul(asked), 2600U * 2);
    // Shown on every CPU of the domain, not on the other domain.
    EXPECT_EQ(degraded(g, 0), shown);
    // Later windows, whose figures differ, keep the reason found first.
    machine_.deliver = [](std::size_t cpu, std::uint32_t r) {
        return cpu == 1 ? 2500U : r;
    };
    runUntil(g, 11'100'000);
    EXPECT_EQ(degraded(g, 1), shown);
    EXPECT_EQ(g.firmware().changes(), 1U);
    EXPECT_THAT(degraded(g, 2), IsEmpty());
    EXPECT_TRUE(g.firmware().active(0, cppc::SanityCheck::follow));
    EXPECT_FALSE(g.firmware().active(1, cppc::SanityCheck::follow));

    // Once the platform follows again, the next window clears it.
    machine_.deliver = [](std::size_t, std::uint32_t r) { return r; };
    runUntil(g, 17'000'000);
    EXPECT_THAT(degraded(g, 1), IsEmpty());
    EXPECT_FALSE(g.firmware().active(0, cppc::SanityCheck::follow));
    EXPECT_EQ(g.firmware().changes(), 2U);
}

TEST_F(FirmwareWatchTest, AnExcursionExplainsDeliveringLess)
{
    machine_.deliver = [](std::size_t, std::uint32_t) { return 2600U; };
    machine_.perfLimitedReadable = true;
    machine_.limited.assign(3, desiredExcursion);
    Governor g(machine_, config_);
    runUntil(g, 12'000'000);
    for (std::size_t cpu = 0; cpu < 3; ++cpu)
    {
        EXPECT_THAT(degraded(g, cpu), IsEmpty()) << "CPU " << cpu;
    }
    // Without the excursion it is a finding, and says the bits were read.
    machine_.limited.assign(3, 0);
    runUntil(g, 24'000'000);
    EXPECT_THAT(degraded(g, 2), HasSubstr("no PerformanceLimited excursion"));
}

TEST_F(FirmwareWatchTest, AnIdleCpuIsNotJudged)
{
    machine_.deliver = [](std::size_t, std::uint32_t) { return 2600U; };
    machine_.busy.assign(3, false);
    Governor g(machine_, config_);
    runUntil(g, 20'000'000);
    for (std::size_t cpu = 0; cpu < 3; ++cpu)
    {
        EXPECT_THAT(degraded(g, cpu), IsEmpty()) << "CPU " << cpu;
    }
}

TEST_F(FirmwareWatchTest, TheMachinesOwnReasonComesFirst)
{
    machine_.deliver = [](std::size_t, std::uint32_t) { return 2600U; };
    machine_.hungCpu = 0;
    Governor g(machine_, config_);
    runUntil(g, 6'100'000);
    EXPECT_EQ(degraded(g, 0), "an access hung");
    EXPECT_THAT(degraded(g, 1), HasSubstr("firmware: delivered 2600"));
}

TEST_F(FirmwareWatchTest, CountersThatNeverMove)
{
    machine_.countersRead = true;
    machine_.referenceMoves[2] = false;
    machine_.deliveredMoves[0] = false;
    Governor g(machine_, config_);
    runUntil(g, nowUs_ + 8 * tickUs);
    EXPECT_THAT(degraded(g, 2), IsEmpty()) << "before 10 readings";
    runUntil(g, nowUs_ + 4 * tickUs);
    EXPECT_EQ(degraded(g, 2),
              "firmware: the reference counter did not move over 10 readings "
              "while the CPU was busy");
    EXPECT_EQ(degraded(g, 1),
              "firmware: the delivered counter did not move over 10 readings "
              "while the CPU was busy (CPU 0)");
    EXPECT_TRUE(g.firmware().active(1, cppc::SanityCheck::countersStuck));

    // Idle readings neither count nor clear; a moving counter clears.
    machine_.busy[2] = false;
    runUntil(g, nowUs_ + 50 * tickUs);
    EXPECT_THAT(degraded(g, 2), HasSubstr("did not move"));
    machine_.busy[2] = true;
    machine_.referenceMoves[2] = true;
    runUntil(g, nowUs_ + 2 * tickUs);
    EXPECT_THAT(degraded(g, 2), IsEmpty());
}

TEST_F(FirmwareWatchTest, TheCounterCountsAtTheArchitecturalGigahertz)
{
    // The Orion O6's table with the 1 GHz counter of Armv8.6 and later.
    machine_.countersRead = true;
    machine_.referenceHz = 1e9;
    Governor g(machine_, config_);
    // Three rate readings of 100 ms each come first.
    runUntil(g, nowUs_ + 29 * tickUs);
    EXPECT_THAT(degraded(g, 2), IsEmpty());
    runUntil(g, nowUs_ + 2 * tickUs);
    EXPECT_EQ(degraded(g, 2),
              "firmware: ReferencePerformance 1000 stands for a 305.2 MHz "
              "reference counter at NominalFrequency 2500 MHz / "
              "NominalPerformance 8192, but the counter counts at 1000.0 MHz: "
              "delivered performance reads 3.28x too low");
    EXPECT_TRUE(g.firmware().active(0, cppc::SanityCheck::counterRate));
    // The same finding wins over a follow finding in the same domain.
    EXPECT_FALSE(g.firmware().active(0, cppc::SanityCheck::follow));
}

TEST_F(FirmwareWatchTest, ACounterThatMovesInLumpsIsNotFast)
{
    // Each reading of a short stretch holds nothing or two stretches'
    // counts (a platform that counts in lumps, or a read that comes late):
    // judged over whole rate windows, the rate is the true one.
    machine_.countersRead = true;
    machine_.lumpEvery = 2;
    Governor g(machine_, config_);
    runUntil(g, nowUs_ + 100 * tickUs);
    EXPECT_THAT(degraded(g, 2), IsEmpty());
    EXPECT_FALSE(g.firmware().active(0, cppc::SanityCheck::counterRate));
}

TEST_F(FirmwareWatchTest, AnIdleStretchDoesNotMakeTheCounterSlow)
{
    // A counter that stops while the CPU sleeps reads slow over idle
    // stretches; only busy readings count.
    machine_.countersRead = true;
    machine_.busy.assign(3, false);
    machine_.referenceHz = 305.2e6 / 3;
    Governor g(machine_, config_);
    runUntil(g, nowUs_ + 100 * tickUs);
    EXPECT_THAT(degraded(g, 2), IsEmpty());
}

TEST_F(FirmwareWatchTest, AReferencePerformanceAboveHighest)
{
    machine_.countersRead = true;
    machine_.referencePerf = 9000;
    machine_.referenceHz = 1e3 * 2'500'000.0 * 9000 / 0x2000;
    Governor g(machine_, config_);
    runUntil(g, nowUs_ + 3 * tickUs);
    EXPECT_EQ(degraded(g, 2),
              "firmware: ReferencePerformance 9000 is above HighestPerformance "
              "8192: it is no performance level of the CPU, and delivered "
              "performance computed from it is off the CPU's scale");
    EXPECT_TRUE(g.firmware().active(1, cppc::SanityCheck::referencePerf));
}

TEST_F(FirmwareWatchTest, AutonomousSelectionIsNotJudgedByFollow)
{
    const policies::CpuCaps caps{1000, 800, 200, 100, 0, 0, 0};
    const policies::Topology topology =
        policies::makeTopology({caps}, {{{0}, policies::Coordination::shared}});
    FirmwareWatch w(topology, {1, 0.2, 10}, false);
    CpuSample s;
    s.deliveredPerf = 300;
    for (std::uint64_t t = 0; t <= 2'000'000; t += tickUs)
    {
        s.busyUs = t == 0 ? 0 : tickUs;
        w.observe(t, 0, s, 1000, true);
    }
    EXPECT_THAT(w.finding(0), IsEmpty());
    for (std::uint64_t t = 2'000'000; t <= 4'000'000; t += tickUs)
    {
        w.observe(t, 0, s, 1000, false);
    }
    EXPECT_EQ(w.finding(0), "firmware: delivered 300 while 1000 requested for "
                            "1 s (PerformanceLimited not readable)");
}

TEST_F(FirmwareWatchTest, ARequestBelowLowestMayBeExceeded)
{
    const policies::CpuCaps caps{1000, 800, 200, 100, 0, 0, 0};
    const policies::Topology topology =
        policies::makeTopology({caps}, {{{0}, policies::Coordination::shared}});
    FirmwareWatch w(topology, {1, 0.2, 10}, false);
    CpuSample s;
    s.deliveredPerf = 100;
    s.busyUs = tickUs;
    for (std::uint64_t t = 0; t <= 3'000'000; t += tickUs)
    {
        w.observe(t, 0, s, 50);
    }
    EXPECT_THAT(w.finding(0), IsEmpty());
    s.deliveredPerf = 900;
    for (std::uint64_t t = 3'000'000; t <= 6'000'000; t += tickUs)
    {
        w.observe(t, 0, s, 500);
    }
    EXPECT_EQ(w.finding(0), "firmware: delivered 900 while 500 requested for "
                            "1 s");
}

// The simulator with a platform limit below what the governor asks: on a
// layout whose PerformanceLimited the machine reads, the excursion bits
// explain it; on one without, it is a finding.
std::string simulatedLimit(const char* layout, std::uint32_t cpus)
{
    test::TempTree root;
    test::writeProcStat(root, {{0, 0}});
    SimulatorMachine m(test::sim(layout, cpus), root.path());
    const std::uint32_t highest = m.topology().cpus[0].highest;
    const std::uint32_t limit =
        std::max(highest / 3, m.topology().cpus[0].lowest);
    m.setPlatformLimit(0, limit);
    GovernorConfig config;
    // Nominal performance asked throughout.
    config.defaults.kind = policies::PolicyKind::performance;
    config.sanity.followWindowS = 2;
    Governor g(m, config);
    TickReport report;
    // Host CPU 0 busy throughout: one USER_HZ step per 10 ms tick.
    for (std::uint64_t tick = 0; tick <= 400; ++tick)
    {
        test::writeProcStat(root, {{tick, 0}});
        g.tick(1'000'000 + tick * tickUs, {}, report);
    }
    const std::uint32_t asked = g.cpus()[0].requestedPerf;
    EXPECT_GE(asked, limit * 2) << layout;
    EXPECT_EQ(g.cpus()[0].deliveredPerf, limit) << layout;
    // The figures the finding names, as a pattern's fixed part.
    const std::string found =
        "firmware: delivered " + std::to_string(limit) + " while " +
        std::to_string(highest) + " requested for 2 s";
    const std::string shown = g.cpus()[0].degraded;
    return shown.starts_with(found) ? "FOUND" + shown.substr(found.size())
                                    : shown;
}

TEST(FirmwareWatchSimulatorTest, APlatformLimitWithItsExcursionBitsIsNoFinding)
{
    SimulatorMachine probe(test::sim("neoverse", 1), "/nonexistent");
    ASSERT_TRUE(probe.readsPerfLimited());
    EXPECT_THAT(simulatedLimit("neoverse", 1), IsEmpty());
}

TEST(FirmwareWatchSimulatorTest, APlatformLimitWithoutExcursionBitsIsAFinding)
{
    SimulatorMachine probe(test::sim("orion-o6"), "/nonexistent");
    ASSERT_FALSE(probe.readsPerfLimited());
    // CPU 0 shares its domain with CPU 11, which the limit spares.
    EXPECT_EQ(simulatedLimit("orion-o6", 0),
              "FOUND (PerformanceLimited not readable) (CPU 0)");
}

TEST(FirmwareLogTest, FirstAtOnceThenAtMostOneLineAnInterval)
{
    const policies::CpuCaps caps{1000, 800, 200, 100, 0, 0, 0};
    const policies::Topology topology = policies::makeTopology(
        {caps, caps}, {{{0, 1}, policies::Coordination::shared}});
    FirmwareWatch w(topology, {1, 0.2, 3}, false);
    FirmwareLog log(topology, 10'000'000);
    CpuSample s;
    s.busyUs = tickUs;
    std::uint64_t t = 0;
    std::uint64_t window = 0;
    // CPU 1's reference counter stands still.
    const auto readings = [&](int n, bool moving) {
        for (int i = 0; i < n; ++i, t += tickUs)
        {
            s.counters = {moving ? 1000U : 0U, 1000, tickUs, 100, ++window};
            w.observe(t, 1, s, 0);
        }
    };
    readings(5, false);
    ASSERT_TRUE(log.due(w, t));
    std::vector<FirmwareLogLine> lines = log.update(w, t);
    ASSERT_EQ(lines.size(), 1U);
    EXPECT_TRUE(lines[0].finding);
    EXPECT_EQ(lines[0].text,
              "CPUs 0-1: firmware: the reference counter did not move over 3 "
              "readings while the CPU was busy (CPU 1); shown as degraded, "
              "requests go on unchanged");
    EXPECT_FALSE(log.due(w, t));

    // Going away is logged at once.
    readings(1, true);
    lines = log.update(w, t);
    ASSERT_EQ(lines.size(), 1U);
    EXPECT_FALSE(lines[0].finding);
    EXPECT_EQ(lines[0].text,
              "CPUs 0-1: the firmware checks find nothing wrong any more");

    // Back soon after: held, then logged once the interval has passed.
    readings(3, false);
    EXPECT_THAT(log.update(w, t), IsEmpty());
    EXPECT_FALSE(log.due(w, t));
    t = 20'000'000;
    ASSERT_TRUE(log.due(w, t));
    lines = log.update(w, t);
    ASSERT_EQ(lines.size(), 1U);
    EXPECT_THAT(lines[0].text,
                HasSubstr("(changed 1 more times since the last line, not "
                          "logged: at most one line per domain every 10 s)"));
}

TEST(SanityConfigTest, Parsed)
{
    const GovernorConfig c = parseConfig(
        "sanity:\n"
        "  follow_window_s: 2\n"
        "  tolerance: 0.1\n"
        "  stuck_readings: 3\n",
        "test.yaml");
    EXPECT_EQ(c.sanity, (SanityConfig{2, 0.1, 3}));
    EXPECT_EQ(parseConfig("", "test.yaml").sanity, SanityConfig{});
}

TEST(SanityConfigTest, ErrorsNameFileAndLine)
{
    const ConfigReport r = checkConfigText(
        "sanity:\n"
        "  follow_window_s: 0\n"
        "  tolerance: 2\n"
        "  stuck_readings: 1\n"
        "  window: 3\n",
        "test.yaml");
    ASSERT_EQ(r.errors.size(), 4U);
    EXPECT_EQ(r.errors[0].line(), 2U);
    EXPECT_EQ(r.errors[0].keyPath(), "sanity.follow_window_s");
    EXPECT_THAT(r.errors[0].what(), HasSubstr("'test.yaml':2:"));
    EXPECT_EQ(r.errors[1].keyPath(), "sanity.tolerance");
    EXPECT_THAT(r.errors[1].problem(), HasSubstr("0.01 to 0.9"));
    EXPECT_EQ(r.errors[2].keyPath(), "sanity.stuck_readings");
    EXPECT_EQ(r.errors[3].line(), 5U);
    EXPECT_THAT(r.errors[3].what(), HasSubstr("window"));
}

} // namespace
} // namespace cppcgov::daemon
