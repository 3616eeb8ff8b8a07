// SPDX-License-Identifier: Apache-2.0
// The tick on its own thread (tick_loop.hpp) over the simulator: it ticks,
// shows each tick's state to the other side, queues each tick's
// utilization, applies a new configuration handed over, sleeps the steady
// period once calm (not while a util_max is live), is woken from it by new
// inputs, and stops; and the scheduling it asks for (tick_scheduling.hpp).
#include "daemon/config.hpp"
#include "daemon/governor.hpp"
#include "daemon/machines/simulator_machine.hpp"
#include "daemon/observation.hpp"
#include "daemon/tick_loop.hpp"
#include "daemon/tick_scheduling.hpp"
#include "machine_test_support.hpp"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using namespace std::chrono_literals;

struct World
{
    test::TempTree root;
    GovernorConfig config;
    std::unique_ptr<SimulatorMachine> machine;
    std::unique_ptr<Governor> governor;
    std::unique_ptr<Observation> observation;
    TickThread thread;
    std::unique_ptr<TickLoop> tick;

    explicit World(
        std::uint32_t steadyPeriodUs = GovernorConfig{}.steadyPeriodUs)
    {
        test::writeProcStat(root, {{0, 0}});
        config.samplingPeriodUs = 1000;
        config.steadyPeriodUs = steadyPeriodUs;
        config.tick.scheduling = TickScheduling::other;
        machine = std::make_unique<SimulatorMachine>(test::sim("rd-n2", 4),
                                                     root.path());
        governor = std::make_unique<Governor>(*machine, config);
        observation =
            std::make_unique<Observation>(SamplingSource::procfs, root.path());
        tick = std::make_unique<TickLoop>(
            *governor, *machine, *observation,
            std::make_shared<const GovernorConfig>(config));
    }

    // Waits up to 5 s for `done()`.
    template <class Done>
    bool waitFor(Done done)
    {
        const auto until = std::chrono::steady_clock::now() + 5s;
        while (!done())
        {
            if (std::chrono::steady_clock::now() > until)
            {
                return false;
            }
            std::this_thread::sleep_for(1ms);
        }
        return true;
    }
};

TEST(TickLoop, TheStateBeforeTheFirstTickIsShownAtOnce)
{
    World w;
    EXPECT_EQ(w.tick->cpuCount(), 4U);
    EXPECT_EQ(w.tick->latest().cpus.size(), 4U);
    EXPECT_EQ(w.tick->latest().ticks, 0U);
    EXPECT_EQ(w.tick->ticks(), 0U);
}

TEST(TickLoop, TicksRunOnTheirThreadAndShowTheirState)
{
    World w;
    w.tick->start(w.thread, w.config.tick);
    EXPECT_EQ(w.tick->reservation().policy, TickScheduling::other);
    ASSERT_TRUE(w.waitFor([&w]() { return w.tick->latest().ticks >= 20; }));
    EXPECT_GE(w.tick->ticks(), 20U);
    EXPECT_EQ(w.tick->latest().cpus.size(), 4U);
    EXPECT_GT(w.tick->tickCpuNs(100), 0U);

    // Each tick's utilization is queued once, in time order.
    std::uint64_t rows = 0;
    std::uint64_t lastUs = 0;
    bool ordered = true;
    w.tick->drainUtilization(
        [&](std::uint64_t nowUs, std::span<const std::uint16_t> util) {
        ordered = ordered && nowUs > lastUs && util.size() == 4;
        lastUs = nowUs;
        ++rows;
    });
    EXPECT_TRUE(ordered);
    EXPECT_GE(rows, 20U);

    w.tick->stop();
    const std::uint64_t stopped = w.tick->ticks();
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(w.tick->ticks(), stopped);
    w.tick->stop(); // again: nothing
}

TEST(TickLoop, AConfigurationHandedOverIsAppliedByTheTick)
{
    World w;
    w.tick->start(w.thread, w.config.tick);
    GovernorConfig next = w.config;
    next.defaults.kind = policies::PolicyKind::performance;
    TickInputs& in = w.tick->inputs();
    in = TickInputs{};
    in.config = std::make_shared<const GovernorConfig>(next);
    w.tick->publishInputs();
    // Performance asks every CPU for its nominal performance.
    const std::uint32_t nominal = w.machine->topology().cpus[0].nominal;
    EXPECT_TRUE(w.waitFor([&]() {
        const TickOutputs& out = w.tick->latest();
        return out.cpus[3].requestedPerf == nominal;
    }));
    w.tick->stop();
    EXPECT_EQ(w.governor->policyOf(0), policies::PolicyKind::performance);
}

TEST(TickLoop, CalmTicksSleepTheSteadyPeriodAndNewInputsEndTheSleep)
{
    // Nothing changes on this idle simulator: after steadyTicks ticks
    // without a write, a second's sleep after each (procfs: no idle sleep).
    World w(1'000'000);
    w.tick->start(w.thread, w.config.tick);
    ASSERT_TRUE(
        w.waitFor([&w]() { return w.tick->latest().steadySleeps >= 2; }));
    EXPECT_EQ(w.tick->latest().idleSleeps, 0U);
    // A new input is taken at once, not at the sleep's end.
    GovernorConfig next = w.config;
    next.defaults.kind = policies::PolicyKind::performance;
    TickInputs& in = w.tick->inputs();
    in = TickInputs{};
    in.config = std::make_shared<const GovernorConfig>(next);
    const auto sent = std::chrono::steady_clock::now();
    w.tick->publishInputs();
    const std::uint32_t nominal = w.machine->topology().cpus[3].nominal;
    ASSERT_TRUE(w.waitFor([&]() {
        return w.tick->latest().cpus[3].requestedPerf == nominal;
    }));
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 800ms);
    w.tick->stop();
}

TEST(TickLoop, ALiveUtilMaxKeepsThePeriod)
{
    World w(1'000'000);
    w.tick->start(w.thread, w.config.tick);
    ASSERT_TRUE(
        w.waitFor([&w]() { return w.tick->latest().steadySleeps >= 1; }));
    // A cap (its task need not run): a second's sleep would let 30 ticks
    // take 30 s.
    TickInputs& in = w.tick->inputs();
    in = TickInputs{};
    in.clamps = {{1, {::getpid(), true}, {0, 512}}};
    w.tick->publishInputs();
    const std::uint64_t from = w.tick->latest().ticks;
    const std::uint64_t sleeps = w.tick->latest().steadySleeps;
    EXPECT_TRUE(
        w.waitFor([&]() { return w.tick->latest().ticks >= from + 30; }));
    EXPECT_LE(w.tick->latest().steadySleeps, sleeps + 1);
    w.tick->stop();
}

TEST(TickLoop, WithoutASteadyPeriodTheTickKeepsItsPeriod)
{
    World w(0);
    w.tick->start(w.thread, w.config.tick);
    ASSERT_TRUE(w.waitFor([&w]() { return w.tick->latest().ticks >= 30; }));
    EXPECT_EQ(w.tick->latest().steadySleeps, 0U);
    w.tick->stop();
}

TEST(TickLoop, AnExplicitPolicyThatCannotHoldRefusesTheStart)
{
    World w;
    TickConfig asked;
    asked.scheduling = TickScheduling::deadline;
    // Longer than the 1000 us period: refused whoever runs the test.
    asked.runtimeUs = 5000;
    try
    {
        w.tick->start(w.thread, asked);
        FAIL() << "started with a runtime above the period";
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("tick.runtime_us 5000 is longer "
                                             "than the period (1000 us"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(w.tick->ticks(), 0U);
}

TEST(TickScheduling, TheRuntimeGrowsWithTheCpusWithinAFifthAndAHalfOfThePeriod)
{
    EXPECT_EQ(tickRuntimeUs(1, 1000), 200U);
    EXPECT_LT(tickRuntimeUs(128, 1000), tickRuntimeUs(256, 1000));
    EXPECT_GT(tickRuntimeUs(128, 1000), 200U);
    EXPECT_EQ(tickRuntimeUs(4096, 1000), 500U);
    EXPECT_EQ(tickRuntimeUs(128, 100), 50U);
    EXPECT_EQ(tickRuntimeUs(1, 100'000), 20'000U);
}

TEST(TickScheduling, OtherLeavesTheThreadAlone)
{
    TickConfig other;
    other.scheduling = TickScheduling::other;
    const TickReservation r = reserveTick(other, 1000, 4);
    EXPECT_EQ(r.policy, TickScheduling::other);
    EXPECT_TRUE(r.refused.empty());
    EXPECT_NE(describe(r).find("SCHED_OTHER (nice "), std::string::npos);
}

} // namespace
} // namespace cppcgov::daemon
