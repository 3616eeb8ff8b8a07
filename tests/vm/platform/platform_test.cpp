// SPDX-License-Identifier: Apache-2.0
// The VM platform's rules on the host: the layout file, one CPU's model
// (targets, latency, counter arithmetic, lies, caps, autonomous selection,
// energy), the PCC protocol, and the whole platform on a memory file.
#include "tests/vm/platform/cpu_model.hpp"
#include "tests/vm/platform/guest_memory.hpp"
#include "tests/vm/platform/layout.hpp"
#include "tests/vm/platform/pcc_responder.hpp"
#include "tests/vm/platform/platform.hpp"
#include "tests/vm/platform/power_model.hpp"
#include "tests/vm/platform/text.hpp"
#include "tests/vm/platform/vcpu.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

namespace cppcgov::platform
{
namespace
{

constexpr std::uint64_t ms = 1'000'000;
constexpr std::uint64_t second = 1'000'000'000;

// The VM suite's per-CPU layout's CPU 0: 2500 MHz at nominal 8192,
// ReferencePerformance 1000, so the reference counter runs at
// 2500 MHz x 1000 / 8192 = 305175781.25 Hz.
Scale orion()
{
    return Scale{8192, 8192, 2621, 2621, 1000, 800, 2500};
}

// --- words and numbers -------------------------------------------------------

TEST(Text, WordsAndNumbers)
{
    const auto w = words("  cap\t1  0x10\r\n");
    ASSERT_EQ(w.size(), 3U);
    EXPECT_EQ(w[2], "0x10");
    EXPECT_TRUE(words(" \t ").empty());
    EXPECT_EQ(parseWhole("42"), 42U);
    EXPECT_FALSE(parseWhole("0x10").has_value()) << "decimal only";
    EXPECT_FALSE(parseWhole("").has_value());
    EXPECT_FALSE(parseWhole("-1").has_value());
    EXPECT_FALSE(parseWhole("12a").has_value());
    EXPECT_EQ(parseNumber("0x90000000"), 0x90000000U);
    EXPECT_EQ(parseNumber("0X1f"), 0x1fU);
    EXPECT_EQ(parseNumber("17"), 17U);
    EXPECT_FALSE(parseNumber("0x").has_value());
    EXPECT_FALSE(parseNumber("0xg").has_value());
    EXPECT_FALSE(parseNumber("99999999999999999999").has_value());
}

// --- the layout --------------------------------------------------------------

constexpr const char* goodLayout =
    "# two CPUs\n"
    "cpu 0 highest=8192 nominal=8192 lowest_nonlinear=2621 lowest=2621 "
    "reference=1000 lowest_mhz=800 nominal_mhz=2500 "
    "desired=mem:0x90000000:32 reference_counter=mem:0x90000008:64 "
    "delivered_counter=mem:0x90000010:64\n"
    "\n"
    "cpu 1 highest=8192 nominal=7168 lowest_nonlinear=3072 lowest=2621 "
    "reference=1000 lowest_mhz=800 nominal_mhz=1801 "
    "desired=pcc:0:0:32 reference_counter=pcc:0:8:64 "
    "delivered_counter=pcc:0:16:64 limited=mem:0x90001020:32:0  # tail\n"
    "pcc 0 base=0x90100000 size=0x100 doorbell=mem:0x90200000:32\n";

TEST(Layout, ReadsCpusRegistersAndSubspaces)
{
    const Layout l = parseLayout(goodLayout, "test.layout");
    ASSERT_EQ(l.cpus.size(), 2U);
    EXPECT_EQ(l.cpus[0].scale.nominalMhz, 2500U);
    EXPECT_EQ(l.cpus[0].desired.address, 0x90000000U);
    EXPECT_EQ(l.cpus[0].deliveredCounter.width, 64U);
    EXPECT_FALSE(l.cpus[0].minimum.has_value());
    EXPECT_EQ(l.cpus[1].desired.space, Space::pcc);
    EXPECT_EQ(l.cpus[1].referenceCounter.address, 8U);
    ASSERT_TRUE(l.cpus[1].limited.has_value());
    ASSERT_EQ(l.subspaces.size(), 1U);
    EXPECT_EQ(l.subspaces[0].doorbell.address, 0x90200000U);
    EXPECT_EQ(registers(l.cpus[1]).size(), 4U);
}

void expectLayoutError(const std::string& text, const std::string& part)
{
    try
    {
        (void)parseLayout(text, "bad.layout");
        ADD_FAILURE() << "accepted: " << text;
    }
    catch (const LayoutError& e)
    {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
            << e.what();
    }
}

TEST(Layout, RefusesWhatItDoesNotKnowNamingFileLineAndWord)
{
    const std::string cpu0 =
        "cpu 0 highest=8192 nominal=8192 lowest_nonlinear=2621 lowest=2621 "
        "reference=1000 lowest_mhz=800 nominal_mhz=2500 "
        "desired=mem:0x90000000:32 reference_counter=mem:0x90000008:64 "
        "delivered_counter=mem:0x90000010:64";
    expectLayoutError("\n" + cpu0 + " colour=blue\n",
                      "bad.layout:2: 'colour': unknown key");
    expectLayoutError(cpu0.substr(0, cpu0.find(" desired")) + "\n",
                      "'desired': missing");
    expectLayoutError("cpu 0 highest=0x2000x\n", "'highest': not a whole");
    expectLayoutError(cpu0 + " minimum=mem:0x90000002:32\n", "not aligned");
    expectLayoutError(cpu0 + " epp=mem:0x90000020:12\n", "not 8, 16, 32");
    expectLayoutError(cpu0 + " epp=io:0x20:8\n", "mem:ADDRESS:WIDTH");
    expectLayoutError(cpu0 + " epp=mem:0x90000020:8:8\n", "starts beyond");
    expectLayoutError(cpu0 + " highest=1\n", "given twice");
    expectLayoutError(cpu0 + " mark=pcc:0:0x40:64\n", "'mark': not in memory");
    expectLayoutError("cpu 1 highest=1\n", "in order from 0");
    expectLayoutError("fan 0 speed=1\n", "a line is");
    expectLayoutError("", "no CPU");
    std::string pcc = cpu0;
    pcc.replace(pcc.find("mem:0x90000000:32"), 17, "pcc:3:0:32");
    expectLayoutError(pcc + "\n", "subspace 3");
    std::string scale = cpu0;
    scale.replace(scale.find("lowest=2621"), 11, "lowest=9000");
    expectLayoutError(scale + "\n", "lowest <= lowest_nonlinear");
}

// --- one CPU -----------------------------------------------------------------

TEST(CpuModel, DeliversDesiredClampedIntoTheBoundsAfterTheLatency)
{
    CpuModel cpu(orion(), PowerCurve::vf, 2 * ms, 0);
    EXPECT_EQ(cpu.delivered(), 2621U); // at reset: lowest
    cpu.request(1 * ms, Request{.desired = 6000});
    cpu.advance(2 * ms, 0);
    EXPECT_EQ(cpu.delivered(), 2621U) << "before the latency";
    cpu.advance(3 * ms, 0);
    EXPECT_EQ(cpu.delivered(), 6000U);
    cpu.request(3 * ms, Request{.desired = 9999});
    cpu.advance(6 * ms, 0);
    EXPECT_EQ(cpu.delivered(), 8192U) << "above highest";
    cpu.request(6 * ms, Request{.desired = 100});
    cpu.advance(9 * ms, 0);
    EXPECT_EQ(cpu.delivered(), 2621U) << "below lowest";
    cpu.request(9 * ms,
                Request{.desired = 8000, .minimum = 3000, .maximum = 5000});
    cpu.advance(12 * ms, 0);
    EXPECT_EQ(cpu.delivered(), 5000U) << "above Maximum";
    cpu.request(12 * ms,
                Request{.desired = 2000, .minimum = 3000, .maximum = 5000});
    cpu.advance(15 * ms, 0);
    EXPECT_EQ(cpu.delivered(), 3000U) << "below Minimum";
    EXPECT_EQ(cpu.stats().desiredChanges, 4U);
}

TEST(CpuModel, TargetsTakeEffectInOrderEachAfterTheLatency)
{
    CpuModel cpu(orion(), PowerCurve::vf, 1 * ms, 0);
    cpu.request(0, Request{.desired = 4000});
    cpu.request(500'000, Request{.desired = 8000});
    cpu.advance(1200'000, second); // busy throughout
    EXPECT_EQ(cpu.delivered(), 4000U);
    cpu.advance(2 * ms, second);
    EXPECT_EQ(cpu.delivered(), 8000U);
    // Time at each level: 1 ms at lowest, 0.5 ms at 4000, 0.5 at 8000.
    EXPECT_EQ(cpu.stats().levelNs.at(2621), 1 * ms);
    EXPECT_EQ(cpu.stats().levelNs.at(4000), 500'000U);
    EXPECT_EQ(cpu.stats().levelNs.at(8000), 500'000U);
}

TEST(CpuModel, BusyTimeSplitAcrossTargetsNeverExceedsAPart)
{
    // Three targets due 1 ns apart just before the end of a stretch that
    // is busy but for 1 ns: the parts' rounded-down shares leave the last
    // 1 ns part 3 ns of busy time.
    CpuModel cpu(orion(), PowerCurve::vf, 1 * ms, 0);
    cpu.request(0, Request{.desired = 4000});
    cpu.request(1, Request{.desired = 5000});
    cpu.request(2, Request{.desired = 6000});
    cpu.advance(1 * ms + 3, 1 * ms + 2);
    EXPECT_LE(cpu.stats().busyNs, cpu.stats().wallNs);
    EXPECT_LT(cpu.stats().energyJoules, 0.01) << "2 W for 1 ms at most";
}

TEST(CpuModel, CountersAdvanceAtTheTablesRatesOnlyWhileBusy)
{
    CpuModel cpu(orion(), PowerCurve::vf, 0, 0);
    cpu.request(0, Request{.desired = 4096});
    cpu.advance(1, 0);
    const std::uint64_t ref0 = cpu.referenceCounter();
    const std::uint64_t del0 = cpu.deliveredCounter();
    // 4 s of which 1 s busy, in 1 ms steps of 0.25 ms busy each.
    for (std::uint64_t t = 1; t <= 4000; ++t)
    {
        cpu.advance(1 + t * ms, 250'000);
    }
    // Reference: 305175781.25 Hz x 1 s; delivered: 2500 MHz x 4096 / 8192
    // = 1250 MHz x 1 s, both exact with the remainders carried.
    EXPECT_EQ(cpu.referenceCounter() - ref0, 305'175'781U);
    EXPECT_EQ(cpu.deliveredCounter() - del0, 1'250'000'000U);
    // Delivered performance as the OS computes it from them.
    const double delivered =
        1000.0 * static_cast<double>(cpu.deliveredCounter() - del0) /
        static_cast<double>(cpu.referenceCounter() - ref0);
    EXPECT_NEAR(delivered, 4096.0, 0.01);
    EXPECT_EQ(cpu.stats().busyNs, second);
    // Idle: nothing moves.
    const std::uint64_t ref1 = cpu.referenceCounter();
    cpu.advance(5 * second, 0);
    EXPECT_EQ(cpu.referenceCounter(), ref1);
}

TEST(CpuModel, LiesChangeWhatTheCountersSay)
{
    CpuModel cpu(orion(), PowerCurve::vf, 0, 0);
    cpu.request(0, Request{.desired = 8192});
    cpu.advance(1, 0);
    cpu.setFaults(Faults{.referenceRatePercent = 50});
    std::uint64_t ref = cpu.referenceCounter();
    std::uint64_t del = cpu.deliveredCounter();
    cpu.advance(1 + second, second);
    EXPECT_EQ(cpu.referenceCounter() - ref, 152'587'890U);
    EXPECT_EQ(cpu.deliveredCounter() - del, 2'500'000'000U)
        << "the CPU's clock is what it is";
    cpu.setFaults(Faults{.countersStalled = true});
    ref = cpu.referenceCounter();
    del = cpu.deliveredCounter();
    cpu.advance(1 + 2 * second, second);
    EXPECT_EQ(cpu.referenceCounter(), ref);
    EXPECT_EQ(cpu.deliveredCounter(), del);
    cpu.setFaults(Faults{.ignoreDesired = true});
    cpu.request(1 + 2 * second, Request{.desired = 3000});
    cpu.advance(1 + 3 * second, second);
    EXPECT_EQ(cpu.delivered(), 8192U) << "Desired ignored";
    cpu.setFaults(Faults{});
    cpu.request(1 + 3 * second, Request{.desired = 3000});
    cpu.advance(1 + 4 * second, second);
    EXPECT_EQ(cpu.delivered(), 3000U);
}

TEST(CpuModel, ACapHoldsDeliveredDownAndCallsForTheExcursionBits)
{
    CpuModel cpu(orion(), PowerCurve::vf, 0, 0);
    cpu.request(0, Request{.desired = 8000, .minimum = 6000});
    cpu.advance(1 * ms, ms);
    EXPECT_EQ(cpu.excursions(), 0U);
    cpu.setCap(5000);
    cpu.advance(2 * ms, ms);
    EXPECT_EQ(cpu.delivered(), 5000U);
    EXPECT_EQ(cpu.excursions(), desiredExcursion | minimumExcursion);
    EXPECT_EQ(cpu.stats().throttledNs, 1 * ms);
    cpu.setCap(7000);
    EXPECT_EQ(cpu.excursions(), desiredExcursion);
    cpu.setCap(0);
    EXPECT_EQ(cpu.delivered(), 8000U);
    EXPECT_EQ(cpu.excursions(), 0U);
    // Under autonomous selection Desired is a hint: no desired excursion.
    cpu.request(2 * ms, Request{.desired = 8192, .autonomous = true});
    cpu.setCap(2700);
    cpu.advance(3 * ms, ms);
    EXPECT_EQ(cpu.excursions() & desiredExcursion, 0U);
}

TEST(CpuModel, AutonomousSelectionFollowsBusyTimeBiasedByEpp)
{
    const Scale s = orion();
    const auto settle = [&](std::uint32_t epp, double busy) {
        CpuModel cpu(s, PowerCurve::vf, 0, 0);
        const Request r{.epp = epp, .autonomous = true, .windowUs = 1000};
        for (std::uint64_t t = 1; t <= 200; ++t)
        {
            cpu.request(t * ms, r);
            cpu.advance(t * ms, static_cast<std::uint64_t>(busy * ms));
        }
        cpu.request(201 * ms, r);
        cpu.advance(202 * ms, 0); // the last target in force
        return cpu.delivered();
    };
    EXPECT_EQ(settle(128, 0.0), s.lowestNonlinear);
    EXPECT_EQ(settle(128, 1.0), s.highest);
    EXPECT_EQ(settle(0, 0.5), s.highest) << "EPP 0: highest at half load";
    const std::uint32_t balanced = settle(128, 0.5);
    const std::uint32_t saving = settle(255, 0.5);
    EXPECT_NEAR(balanced, 2621 + (8192 - 2621) * 0.5, 60);
    EXPECT_NEAR(saving, 2621 + (8192 - 2621) * 0.5 * 1 / 128.0, 60);
    // Within Minimum and Maximum.
    CpuModel bounded(s, PowerCurve::vf, 0, 0);
    const Request r{.minimum = 3000, .maximum = 6000, .autonomous = true};
    for (std::uint64_t t = 1; t <= 100; ++t)
    {
        bounded.request(t * ms, r);
        bounded.advance(t * ms, ms);
    }
    bounded.advance(101 * ms, 0);
    EXPECT_EQ(bounded.delivered(), 6000U);
}

TEST(CpuModel, EnergyIsBusyPowerWhileBusyAndIdlePowerWhileIdle)
{
    for (const PowerCurve curve : {PowerCurve::vf, PowerCurve::linear})
    {
        CpuModel cpu(orion(), curve, 0, 0);
        cpu.request(0, Request{.desired = 4096});
        cpu.advance(1, 0);
        const double before = cpu.stats().energyJoules;
        cpu.advance(1 + 2 * second, second / 2);
        const double expected =
            busyWatts(curve, 0.5) * 0.5 + idleWatts(curve, 0.5) * 1.5;
        EXPECT_NEAR(cpu.stats().energyJoules - before, expected, 1e-9);
    }
    // The curves' published anchor: 1.8 W busy at highest; vf is convex,
    // so half speed costs less than half the energy per second.
    EXPECT_NEAR(busyWatts(PowerCurve::vf, 1.0), 1.8, 1e-12);
    EXPECT_NEAR(busyWatts(PowerCurve::linear, 1.0), 1.8, 1e-12);
    EXPECT_LT(busyWatts(PowerCurve::vf, 0.5), 0.5 * 1.8);
    EXPECT_GT(busyWatts(PowerCurve::linear, 0.5), 0.5 * 1.8);
}

// --- PCC ---------------------------------------------------------------------

struct Mailbox
{
    alignas(8) std::array<std::byte, 64> region{};
    alignas(8) std::array<std::byte, 8> doorbell{};

    std::uint16_t status()
    {
        return static_cast<std::uint16_t>(loadUnit(region.data() + 6, 16));
    }
    // What the OS does: the command, Command Complete cleared, the ring.
    void send(std::uint16_t command)
    {
        storeUnit(region.data() + 4, 16, command);
        storeUnit(region.data() + 6, 16, 0);
        storeUnit(doorbell.data(), 32, 1);
    }
};

TEST(PccResponder, AnswersADoorbellAfterItsLatency)
{
    Mailbox box;
    PccResponder pcc(3, box.region.data(), box.doorbell.data(), 32, 1, 100'000);
    pcc.reset();
    EXPECT_EQ(loadUnit(box.region.data(), 32), 0x50434303U);
    EXPECT_EQ(box.status(), pccCommandComplete);
    EXPECT_FALSE(pcc.poll(0).has_value()) << "nothing rung";
    box.send(cppcWrite);
    EXPECT_FALSE(pcc.poll(1000).has_value()) << "before its latency";
    EXPECT_EQ(loadUnit(box.doorbell.data(), 32), 0U) << "the ring taken";
    EXPECT_EQ(box.status(), 0U);
    const auto command = pcc.poll(101'000);
    ASSERT_TRUE(command.has_value());
    EXPECT_EQ(*command, cppcWrite);
    pcc.answer();
    EXPECT_EQ(box.status(), pccCommandComplete);
    EXPECT_EQ(pcc.counts().doorbells, 1U);
    EXPECT_EQ(pcc.counts().writes, 1U);
    box.send(cppcRead);
    EXPECT_FALSE(pcc.poll(300'000).has_value());
    ASSERT_TRUE(pcc.poll(400'000).has_value());
    pcc.answer();
    EXPECT_EQ(pcc.counts().reads, 1U);
}

TEST(PccResponder, ErrorAndHungMailboxes)
{
    Mailbox box;
    PccResponder pcc(0, box.region.data(), box.doorbell.data(), 32, 1, 0);
    pcc.reset();
    pcc.setMode(PccMode::error, 0);
    box.send(cppcWrite);
    ASSERT_TRUE(pcc.poll(1).has_value());
    pcc.answer();
    EXPECT_EQ(box.status(), pccCommandComplete | pccError);
    EXPECT_EQ(pcc.counts().errors, 1U);

    pcc.setMode(PccMode::never, 0);
    box.send(cppcWrite);
    for (std::uint64_t t = 2; t < 100; ++t)
    {
        EXPECT_FALSE(pcc.poll(t * second).has_value());
    }
    EXPECT_EQ(box.status(), 0U) << "never completed";
    EXPECT_EQ(pcc.counts().unanswered, 1U);
    box.send(cppcWrite); // the OS rings again
    EXPECT_FALSE(pcc.poll(200 * second).has_value());
    EXPECT_EQ(pcc.counts().ringsWhileBusy, 1U);
    // Back: the held command is acted on and completes, and the next is
    // answered.
    pcc.setMode(PccMode::answer, 0);
    EXPECT_EQ(pcc.poll(200 * second), std::optional<std::uint16_t>(cppcWrite));
    pcc.answer();
    EXPECT_EQ(box.status() & pccCommandComplete, pccCommandComplete);
    EXPECT_EQ(pcc.counts().writes, 2U) << "the error's and the held one";
    box.send(cppcRead);
    ASSERT_TRUE(pcc.poll(201 * second).has_value());
    pcc.answer();
    EXPECT_EQ(box.status(), pccCommandComplete);
}

TEST(PccResponder, ModesByName)
{
    EXPECT_EQ(pccModeNamed("never"), PccMode::never);
    EXPECT_EQ(pccModeNamed("error"), PccMode::error);
    EXPECT_EQ(pccModeNamed("answer"), PccMode::answer);
    EXPECT_FALSE(pccModeNamed("slow").has_value());
}

// --- the whole platform on a memory file ------------------------------------

class MemoryFile
{
  public:
    // A sparse file standing for guest RAM from 0x40000000, 2 GiB.
    MemoryFile()
    {
        char name[] = "/tmp/platform-test-XXXXXX";
        const int fd = ::mkstemp(name);
        EXPECT_GE(fd, 0);
        path = name;
        EXPECT_EQ(::ftruncate(fd, 0x80000000L), 0);
        ::close(fd);
    }
    ~MemoryFile()
    {
        ::unlink(path.c_str());
    }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;

    std::string path;
};

constexpr std::uint64_t ramBase = 0x40000000;

std::vector<GuestMemory::Window> everyWindow()
{
    return {{0x90000000, 0x2000}, {0x90100000, 0x100}, {0x90200000, 8}};
}

TEST(Platform, PlaysTheRegistersInMemoryAndBehindPcc)
{
    MemoryFile file;
    const Layout layout = parseLayout(goodLayout, "test.layout");
    const GuestMemory memory(file.path, ramBase, everyWindow());
    std::array<std::uint64_t, 2> busy{0, 0};
    std::vector<std::pair<unsigned, double>> shares;
    PlatformOptions options;
    options.latencyNs = 0;
    options.pccLatencyNs = 100'000;
    options.shareAtHighest = 0.8;
    options.busyClock = [&busy](unsigned cpu) { return busy.at(cpu); };
    options.setShare = [&shares](unsigned cpu, double share) {
        shares.emplace_back(cpu, share);
        return true;
    };
    Platform platform(layout, memory, options, 0);
    platform.initialise();
    const Field& desired0 = layout.cpus[0].desired;
    EXPECT_EQ(memory.load(layout.cpus[0].referenceCounter), 1U << 20);

    // CPU 0 in memory: a Desired store is seen at the next step.
    memory.store(desired0, 8192);
    platform.step(1 * ms);
    busy[0] = 1 * ms; // busy for the next stretch
    platform.step(2 * ms);
    EXPECT_EQ(platform.cpu(0).delivered(), 8192U);
    EXPECT_GT(memory.load(layout.cpus[0].deliveredCounter), 1U << 20);
    // At highest from the first step (no latency): 0.8 of a host CPU.
    std::vector<double> cpu0;
    for (const auto& [cpu, share] : shares)
    {
        if (cpu == 0)
        {
            cpu0.push_back(share);
        }
    }
    ASSERT_EQ(cpu0.size(), 1U);
    EXPECT_DOUBLE_EQ(cpu0[0], 0.8);

    // CPU 1 behind PCC: a payload store alone changes nothing; the write
    // command does, once answered.
    std::byte* region = memory.at(0x90100000, 0x100);
    std::byte* bell = memory.at(0x90200000, 4);
    storeUnit(region + pccHeaderBytes, 32, 6000);
    platform.step(3 * ms);
    EXPECT_EQ(platform.cpu(1).target(), 2621U);
    storeUnit(region + 4, 16, cppcWrite);
    storeUnit(region + 6, 16, 0);
    storeUnit(bell, 32, 1);
    platform.pollPcc(3 * ms + 1000);
    EXPECT_EQ(loadUnit(region + 6, 16), 0U) << "not yet answered";
    platform.pollPcc(3 * ms + 101'000);
    EXPECT_EQ(loadUnit(region + 6, 16), pccCommandComplete);
    platform.step(4 * ms);
    EXPECT_EQ(platform.cpu(1).delivered(), 6000U);
    // A read command fills the counters in, brought up to that instant.
    busy[1] = 2 * ms;
    const std::uint64_t before = loadUnit(region + pccHeaderBytes + 16, 64);
    storeUnit(region + 4, 16, cppcRead);
    storeUnit(region + 6, 16, 0);
    storeUnit(bell, 32, 1);
    platform.pollPcc(4 * ms + 500'000);
    platform.pollPcc(4 * ms + 600'000);
    EXPECT_GT(loadUnit(region + pccHeaderBytes + 16, 64), before);
    const std::string stats = platform.command("stats");
    EXPECT_NE(stats.find("\"doorbells\":2"), std::string::npos) << stats;
    EXPECT_NE(stats.find("\"reads\":1"), std::string::npos) << stats;
}

TEST(Platform, SetsExcursionBitsAndLeavesClearingToTheOs)
{
    MemoryFile file;
    const Layout layout = parseLayout(goodLayout, "test.layout");
    const GuestMemory memory(file.path, ramBase, everyWindow());
    PlatformOptions options;
    options.latencyNs = 0;
    Platform platform(layout, memory, options, 0);
    platform.initialise();
    const Field& limited = *layout.cpus[1].limited;
    memory.store(limited, 0x10); // a bit the platform does not own
    EXPECT_EQ(platform.command("cap 1 3000"), "ok");
    // CPU 1's Desired is behind PCC: give it 6000 through a write.
    std::byte* region = memory.at(0x90100000, 0x100);
    storeUnit(region + pccHeaderBytes, 32, 6000);
    storeUnit(region + 4, 16, cppcWrite);
    storeUnit(memory.at(0x90200000, 4), 32, 1);
    platform.pollPcc(1 * ms);
    platform.pollPcc(1 * ms + 100'000);
    platform.step(2 * ms);
    EXPECT_EQ(platform.cpu(1).delivered(), 3000U);
    EXPECT_EQ(memory.load(limited), 0x11U);
    memory.store(limited, 0x10); // the OS clears bit 0
    EXPECT_EQ(platform.command("cap 1 0"), "ok");
    platform.step(3 * ms);
    EXPECT_EQ(memory.load(limited), 0x10U) << "no excursion, no bit";
}

TEST(Platform, LogsEachNewValueOfAMarkWordOnce)
{
    MemoryFile file;
    const Layout layout = parseLayout(
        std::string(goodLayout)
            .replace(
                std::string(goodLayout)
                    .find("delivered_counter=mem:0x90000010:64"),
                35,
                "delivered_counter=mem:0x90000010:64 mark=mem:0x90000800:64"),
        "test.layout");
    ASSERT_TRUE(layout.cpus[0].mark.has_value());
    const GuestMemory memory(file.path, ramBase, everyWindow());
    memory.store(*layout.cpus[0].mark, 99); // left by a run before the reset
    std::vector<std::string> lines;
    PlatformOptions options;
    options.latencyNs = 0;
    options.log = [&lines](std::string_view line) {
        if (line.find("mark") != std::string_view::npos)
        {
            lines.emplace_back(line);
        }
    };
    Platform platform(layout, memory, options, 0);
    platform.initialise();
    EXPECT_EQ(memory.load(*layout.cpus[0].mark), 0U);
    platform.step(1 * ms);
    EXPECT_TRUE(lines.empty()) << "nothing marked since the reset";
    memory.store(*layout.cpus[0].mark, 7);
    platform.step(2 * ms);
    platform.step(3 * ms);
    memory.store(*layout.cpus[0].mark, 8);
    platform.step(4 * ms);
    EXPECT_EQ(lines,
              (std::vector<std::string>{"cpu 0 mark 7", "cpu 0 mark 8"}));
}

TEST(Platform, CommandsAreCheckedAndNamed)
{
    MemoryFile file;
    const Layout layout = parseLayout(goodLayout, "test.layout");
    const GuestMemory memory(file.path, ramBase, everyWindow());
    Platform platform(layout, memory, PlatformOptions{}, 0);
    EXPECT_EQ(platform.command("fault 0 stall on"), "ok");
    EXPECT_EQ(platform.command("fault 0 reference-rate 50"), "ok");
    EXPECT_EQ(platform.command("fault 0 none"), "ok");
    EXPECT_EQ(platform.command("pcc 0 never 5000"), "ok");
    EXPECT_EQ(platform.command("curve linear"), "ok");
    EXPECT_EQ(platform.command("latency 250"), "ok");
    EXPECT_EQ(platform.command("reset-stats"), "ok");
    for (const char* bad :
         {"", "fault 7 stall on", "fault 0 stall maybe", "fault 0 melt on",
          "fault 0 reference-rate 0", "cap 0", "cap 9 100", "pcc 1 never",
          "pcc 0 sulk", "curve cubic", "latency -1", "share-floor 1000",
          "share-floor x", "pin-share 0 0", "pin-share 0 1001",
          "pin-share 9 500", "pin-share 0 maybe", "dance"})
    {
        EXPECT_EQ(platform.command(bad).rfind("error: ", 0), 0U) << bad;
    }
    EXPECT_NE(platform.command("stats").find("\"curve\":\"linear\""),
              std::string::npos);
}

TEST(Platform, ASharePaysTheFloorThenFollowsTheLevel)
{
    MemoryFile file;
    const Layout layout = parseLayout(goodLayout, "test.layout");
    const GuestMemory memory(file.path, ramBase, everyWindow());
    std::vector<double> shares;
    PlatformOptions options;
    options.latencyNs = 0;
    options.shareAtHighest = 0.8;
    options.busyClock = [](unsigned) { return std::uint64_t{0}; };
    options.setShare = [&shares](unsigned cpu, double share) {
        if (cpu == 0)
        {
            shares.push_back(share);
        }
        return true;
    };
    const std::uint32_t highest = layout.cpus[0].scale.highest;
    EXPECT_DOUBLE_EQ(shareOf(options, highest / 2, highest), 0.4);
    Platform platform(layout, memory, options, 0);
    platform.initialise();
    EXPECT_EQ(platform.command("share-floor 200"), "ok");
    ASSERT_FALSE(shares.empty());
    shares.clear();
    memory.store(layout.cpus[0].desired, highest / 2);
    platform.step(1 * ms);
    ASSERT_EQ(shares.size(), 1U);
    EXPECT_DOUBLE_EQ(shares.back(), 0.2 + 0.6 * 0.5);
    // Pinned, the level no longer counts; off, it does again.
    EXPECT_EQ(platform.command("pin-share 0 500"), "ok");
    EXPECT_DOUBLE_EQ(shares.back(), 0.5);
    memory.store(layout.cpus[0].desired, highest);
    platform.step(2 * ms);
    EXPECT_DOUBLE_EQ(shares.back(), 0.5);
    EXPECT_EQ(platform.command("pin-share 0 off"), "ok");
    EXPECT_DOUBLE_EQ(shares.back(), 0.8);
    EXPECT_NE(platform.statsJson(0).find("\"share_floor\":0.2"),
              std::string::npos);
}

TEST(GuestMemory, RefusesAWindowOutsideTheFile)
{
    MemoryFile file;
    EXPECT_THROW(GuestMemory(file.path, ramBase, {{0xC0000000, 8}}),
                 std::system_error);
    EXPECT_THROW(GuestMemory(file.path, ramBase, {{0x1000, 8}}),
                 std::invalid_argument);
    EXPECT_THROW(GuestMemory("/nonexistent/ram", ramBase, {}),
                 std::system_error);
    const GuestMemory memory(file.path, ramBase, {{0x90000000, 8}});
    EXPECT_THROW((void)memory.at(0x90000008, 4), std::out_of_range);
}

// --- the virtual CPU's thread ------------------------------------------------

TEST(Vcpu, SchedstatIsRunWaitAndRuns)
{
    const auto s = parseSchedstat("1000 250 7\n");
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->runNs, 1000U);
    EXPECT_EQ(s->waitNs, 250U);
    EXPECT_EQ(s->runs, 7U);
    EXPECT_FALSE(parseSchedstat("1000 250\n").has_value());
    EXPECT_FALSE(parseSchedstat("x 1 2").has_value());
    EXPECT_FALSE(parseSchedstat("1 2 3x").has_value());
    const BusyClock own(::getpid(), static_cast<int>(::syscall(SYS_gettid)));
    const auto first = own.read();
    ASSERT_TRUE(first.has_value());
    volatile std::uint64_t sink = 0;
    for (int i = 0; i < 20'000'000; ++i)
    {
        sink = sink + static_cast<std::uint64_t>(i);
    }
    EXPECT_GT(own.read()->runNs, first->runNs);
}

TEST(Vcpu, SchedstatLumpsAreCarriedNotLost)
{
    BusyEstimate busy;
    EXPECT_EQ(busy.add(0, Schedstat{0, 0, 0}), 0U);
    // 1 ms: 0.8 awake, 0.2 asleep.
    EXPECT_EQ(busy.add(1'000'000, Schedstat{700'000, 100'000, 4}), 800'000U);
    // A throttled wait of 3 ms shows up at once, in a stretch of 1 ms: the
    // stretch is busy and the rest is carried into the next two.
    EXPECT_EQ(busy.add(2'000'000, Schedstat{700'000, 3'100'000, 5}),
              1'800'000U);
    EXPECT_EQ(busy.add(3'000'000, Schedstat{700'000, 3'100'000, 5}),
              2'800'000U);
    EXPECT_EQ(busy.add(4'000'000, Schedstat{700'000, 3'100'000, 5}),
              3'800'000U);
    // Then asleep, not run at all: idle.
    EXPECT_EQ(busy.add(5'000'000, Schedstat{700'000, 3'100'000, 5}),
              3'800'000U);
    // A reading that goes backwards (a new thread) counts nothing.
    EXPECT_EQ(busy.add(6'000'000, Schedstat{0, 0, 0}), 3'800'000U);
    // What is carried is bounded: 200 ms at once fills 50 ms at most.
    busy.add(7'000'000, Schedstat{0, 200'000'000, 6});
    EXPECT_EQ(busy.add(200'000'000, Schedstat{0, 200'000'000, 6}),
              3'800'000U + 1'000'000U + 50'000'000U);
}

// A thread of this test in a cgroup of its own under the host's v1 cpu
// controller (as root; skipped elsewhere): the quota lands, and the
// release puts the thread back and removes the cgroup.
TEST(Vcpu, AQuotaCgroupHoldsOneThreadAndGoesAway)
{
    const auto choice = findCpuController();
    if (!choice || choice->kind != CgroupKind::v1 || ::geteuid() != 0 ||
        ::access((choice->root / "tasks").c_str(), W_OK) != 0)
    {
        GTEST_SKIP() << "needs root and cgroup v1's cpu controller";
    }
    std::atomic<int> tid{0};
    std::atomic<bool> stop{false};
    std::thread worker([&] {
        tid = static_cast<int>(::syscall(SYS_gettid));
        while (!stop)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    while (tid == 0)
    {
        std::this_thread::yield();
    }
    const std::string name = "platform-test-" + std::to_string(::getpid());
    const auto dir = choice->root / name / "vcpu0";
    {
        CpuQuota quota(CgroupKind::v1, choice->root, name, 0, ::getpid(), tid,
                       10000);
        EXPECT_TRUE(quota.set(0.25));
        EXPECT_EQ(quota.quotaUs(), 2500U);
        std::ifstream tasks(dir / "tasks");
        int listed = 0;
        tasks >> listed;
        EXPECT_EQ(listed, tid.load());
        std::ifstream q(dir / "cpu.cfs_quota_us");
        int us = 0;
        q >> us;
        EXPECT_EQ(us, 2500);
        EXPECT_TRUE(quota.set(0.0001)); // the kernel's minimum, 1 ms
        EXPECT_EQ(quota.quotaUs(), 1000U);
        EXPECT_TRUE(quota.release());
    }
    EXPECT_FALSE(std::filesystem::exists(dir));
    EXPECT_FALSE(std::filesystem::exists(choice->root / name));
    stop = true;
    worker.join();
}

} // namespace
} // namespace cppcgov::platform
