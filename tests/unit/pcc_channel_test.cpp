// SPDX-License-Identifier: Apache-2.0
// The PCC channel against the simulated Altra-like platform: start-up
// checks, one command and one doorbell per batch of concurrent writers,
// turnaround and access-rate limits, timeouts and error bits as error
// codes, reads that flush queued writes, and perf control driven through
// the real channel. Nothing here asserts how long anything took, only
// counts, order, error codes and "not before the deadline".
#include "lib/error.hpp"
#include "lib/pcc/channel.hpp"
#include "lib/perf_control.hpp"
#include "lib/sim/layouts.hpp"
#include "lib/sim/pcc_platform.hpp"
#include "lib/sim/register_file.hpp"
#include "pcc_test_support.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cppc::pcc
{
namespace
{

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::uint8_t altraSubspace = 2;
constexpr Nanos patience = seconds{10}; // bounds waits for other threads

// CPU `cpu`'s DesiredPerformance in the Altra layout.
PccRegister desired(unsigned cpu)
{
    return {std::uint64_t{cpu} * 0x80U + 0x14U, 0, 32};
}

PccRegister highest(unsigned cpu)
{
    return {std::uint64_t{cpu} * 0x80U, 0, 32};
}

// Options for tests that do not test the timeout: a platform thread starved
// by a loaded machine must not turn into a failure.
ChannelOptions patient()
{
    ChannelOptions o;
    o.timeoutFloor = seconds{5};
    return o;
}

struct Rig
{
    explicit Rig(sim::PccPlatformConfig config = {},
                 ChannelOptions options = patient()) :
        platform(config),
        channel(platform.subspace(), platform.region(), platform.registers(),
                options)
    {}

    std::error_code writeDesired(unsigned cpu, std::uint64_t value)
    {
        const PccWrite w{desired(cpu), value};
        return channel.write(altraSubspace, std::span(&w, 1));
    }

    sim::PccPlatform platform;
    Channel channel;
};

// Waits until `n` requests are queued behind the command in flight.
bool waitForQueued(const Channel& channel, std::size_t n)
{
    return waitUntil(
        monotonicClock(), [&] { return channel.queuedRequests() == n; },
        monotonicNow() + patience, microseconds{50});
}

TEST(ChannelStartTest, RefusesASignatureMismatchNamingTheSubspace)
{
    sim::PccPlatform platform;
    acpi::PccSubspace other = platform.subspace();
    other.id = 3;
    try
    {
        Channel c(other, platform.region(), platform.registers());
        FAIL() << "a channel was built over another subspace's memory";
    }
    catch (const ChannelError& e)
    {
        EXPECT_NE(std::string(e.what()).find("PCC subspace 3"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("signature 0x50434302"),
                  std::string::npos)
            << e.what();
    }
    std::memset(platform.region().data(), 0, 4);
    EXPECT_THROW(Channel(platform.subspace(), platform.region(),
                         platform.registers()),
                 ChannelError);
}

TEST(ChannelStartTest, RefusesWhatItCannotDrive)
{
    sim::PccPlatform platform;
    acpi::PccSubspace s = platform.subspace();
    for (std::uint8_t type :
         {std::uint8_t{3}, std::uint8_t{4}, std::uint8_t{5}})
    {
        s.type = type;
        EXPECT_THROW(Channel(s, platform.region(), platform.registers()),
                     ChannelError)
            << "type " << int{type};
    }
    s = platform.subspace();
    s.knownType = false;
    EXPECT_THROW(Channel(s, platform.region(), platform.registers()),
                 ChannelError);
    EXPECT_THROW(Channel(platform.subspace(), platform.region().first(4),
                         platform.registers()),
                 ChannelError);
    EXPECT_THROW(Channel(platform.subspace(), platform.region().subspan(4),
                         platform.registers()),
                 ChannelError);
    s = platform.subspace();
    s.doorbell = {};
    EXPECT_THROW(Channel(s, platform.region(), platform.registers()),
                 ChannelError);
    s = platform.subspace();
    s.doorbell.accessSize = 0;
    s.doorbell.bitWidth = 24;
    EXPECT_THROW(Channel(s, platform.region(), platform.registers()),
                 ChannelError);
    s = platform.subspace();
    s.doorbell.address += 0x100; // nothing mapped there
    EXPECT_THROW(Channel(s, platform.region(), platform.registers()),
                 std::invalid_argument);
}

TEST(ChannelStartTest, DerivesTimeoutAndPollIntervalFromTheNominalLatency)
{
    sim::PccPlatform platform; // 50 us nominal latency
    const Channel c(platform.subspace(), platform.region(),
                    platform.registers());
    EXPECT_EQ(c.completionTimeout(), milliseconds{25}); // 500 x 50 us
    EXPECT_EQ(c.pollInterval(), Nanos{6250});           // 50 us / 8
    acpi::PccSubspace fast = platform.subspace();
    fast.nominalLatencyUs = 1;
    const Channel f(fast, platform.region(), platform.registers());
    EXPECT_EQ(f.completionTimeout(), milliseconds{10}); // the floor
    EXPECT_EQ(f.pollInterval(), microseconds{2});
    acpi::PccSubspace slow = platform.subspace();
    slow.nominalLatencyUs = 1000;
    const Channel s(slow, platform.region(), platform.registers());
    EXPECT_EQ(s.completionTimeout(), milliseconds{500});
    EXPECT_EQ(s.pollInterval(), microseconds{50});
}

TEST(ChannelTest, OneWriteIsOneCommandOneDoorbellAndOneAck)
{
    Rig rig;
    ASSERT_EQ(rig.writeDesired(3, 1234), std::error_code{});
    rig.platform.sync();
    EXPECT_EQ(rig.platform.counts(),
              (sim::PccPlatformCounts{1, 1, 0, 0, 0, 1}));
    EXPECT_EQ(rig.platform.received(desired(3)), 1234U);
    const ChannelStats s = rig.channel.stats();
    EXPECT_EQ(s.doorbells, 1U);
    EXPECT_EQ(s.writeCommands, 1U);
    EXPECT_EQ(s.readCommands, 0U);
    EXPECT_EQ(s.acks, 1U);
    EXPECT_EQ(s.writeRequests, 1U);
    const auto history = rig.platform.history();
    ASSERT_EQ(history.size(), 1U);
    EXPECT_EQ(history[0].command, commandWrite);
    EXPECT_TRUE(history[0].completed);
    EXPECT_FALSE(history[0].error);
    EXPECT_EQ(rig.platform.status() & statusCommandComplete,
              statusCommandComplete);
}

TEST(ChannelTest, FieldsAreMergedIntoThePayload)
{
    Rig rig;
    const PccRegister whole{0x40, 0, 32};
    rig.platform.setPayloadValue(whole, 0xAABBCCDD);
    const std::array<PccWrite, 2> writes{{
        {{0x40, 4, 8}, 0x5A},                // bits 4-11 of the word
        {{0x43, 0, 64}, 0x1122334455667788}, // unaligned, over byte 3
    }};
    ASSERT_EQ(rig.channel.write(altraSubspace, writes), std::error_code{});
    EXPECT_EQ(rig.platform.received({0x40, 0, 24}), 0xBBC5ADU);
    EXPECT_EQ(rig.platform.received({0x43, 0, 64}), 0x1122334455667788U);
    std::array<std::uint64_t, 2> values{};
    const std::array<PccRegister, 2> regs{{{0x40, 4, 8}, {0x43, 0, 64}}};
    ASSERT_EQ(rig.channel.read(altraSubspace, regs, values), std::error_code{});
    EXPECT_EQ(values[0], 0x5AU);
    EXPECT_EQ(values[1], 0x1122334455667788U);
}

TEST(ChannelTest, RingsTheDoorbellAndAckWithTheirMasks)
{
    sim::PccPlatformConfig config;
    config.doorbellPreserveMask = 0xFFFF0000;
    config.ackPreserveMask = 0xFFFF0000;
    Rig rig(config);
    auto* doorbell = reinterpret_cast<volatile std::uint32_t*>(
        rig.platform.registers().map(AddressSpace::systemMemory,
                                     config.doorbellAddress, 4));
    auto* ack = reinterpret_cast<volatile std::uint32_t*>(
        rig.platform.registers().map(AddressSpace::systemMemory,
                                     config.ackAddress, 4));
    *doorbell = 0xABCD0002; // bit 1 is not preserved
    *ack = 0x12340002;      // nor is the ack's
    ASSERT_EQ(rig.writeDesired(0, 7), std::error_code{});
    rig.platform.sync();
    EXPECT_EQ(rig.platform.counts().doorbells, 1U);
    EXPECT_EQ(rig.platform.counts().acks, 1U);
    // The platform cleared the write-mask bit it found set.
    EXPECT_EQ(*doorbell, 0xABCD0000U);
    EXPECT_EQ(*ack, 0x12340000U);
}

TEST(ChannelTest, SubspacesWithoutAnAckRegisterAreNotAcked)
{
    sim::PccPlatformConfig config;
    config.type = 1;
    Rig rig(config);
    ASSERT_EQ(rig.writeDesired(1, 99), std::error_code{});
    rig.platform.sync();
    EXPECT_EQ(rig.channel.stats().acks, 0U);
    EXPECT_EQ(rig.platform.counts().acks, 0U);
    EXPECT_EQ(rig.platform.received(desired(1)), 99U);
}

TEST(ChannelTest, BadRequestsAreRefusedWithoutACommand)
{
    Rig rig;
    const PccWrite good{desired(0), 1};
    EXPECT_EQ(rig.channel.write(1, std::span(&good, 1)),
              make_error_code(Errc::pccUnavailable));
    const std::size_t payload = rig.platform.region().size() - 8;
    for (PccRegister bad :
         {PccRegister{payload - 3, 0, 32}, PccRegister{payload, 0, 8},
          PccRegister{0, 0, 0}, PccRegister{0, 8, 64},
          PccRegister{~std::uint64_t{0} - 1, 0, 32}})
    {
        const PccWrite w{bad, 0};
        EXPECT_EQ(rig.channel.write(altraSubspace, std::span(&w, 1)),
                  make_error_code(Errc::pccBadRegister))
            << bad.offset;
    }
    const PccWrite wide{{0, 0, 8}, 0x100};
    EXPECT_EQ(rig.channel.write(altraSubspace, std::span(&wide, 1)),
              make_error_code(Errc::valueOutOfRange));
    std::array<std::uint64_t, 2> values{};
    const PccRegister reg = desired(0);
    EXPECT_EQ(rig.channel.read(altraSubspace, std::span(&reg, 1), values),
              make_error_code(Errc::pccBadRegister));
    EXPECT_EQ(rig.channel.write(altraSubspace, {}), std::error_code{});
    rig.platform.sync();
    EXPECT_EQ(rig.platform.counts().doorbells, 0U);
    EXPECT_EQ(rig.channel.stats().doorbells, 0U);
}

// One writer's command is held by the platform while `others` more writers
// queue; then the platform answers. Returns each writer's result.
std::vector<std::error_code> heldBatch(Rig& rig, unsigned others)
{
    std::vector<std::error_code> results(others + 1);
    rig.platform.setAnswering(false);
    std::vector<std::thread> threads;
    threads.emplace_back([&] { results[0] = rig.writeDesired(0, 1000); });
    EXPECT_TRUE(rig.platform.waitForDoorbells(1, patience));
    for (unsigned i = 1; i <= others; ++i)
    {
        threads.emplace_back([&, i] {
            results[i] = rig.writeDesired(i, 1000 + i);
        });
    }
    EXPECT_TRUE(waitForQueued(rig.channel, others));
    rig.platform.setAnswering(true);
    for (std::thread& t : threads)
    {
        t.join();
    }
    return results;
}

TEST(ChannelBatchingTest, WritersQueuedBehindACommandShareTheNextOne)
{
    constexpr unsigned others = 7;
    Rig rig;
    const auto results = heldBatch(rig, others);
    for (const std::error_code& ec : results)
    {
        EXPECT_EQ(ec, std::error_code{});
    }
    rig.platform.sync();
    // The first writer's command, then one command for all the others.
    EXPECT_EQ(rig.platform.counts().doorbells, 2U);
    EXPECT_EQ(rig.platform.counts().writeCommands, 2U);
    EXPECT_EQ(rig.channel.stats().doorbells, 2U);
    EXPECT_EQ(rig.channel.stats().writeRequests, others + 1);
    for (unsigned i = 0; i <= others; ++i)
    {
        EXPECT_EQ(rig.platform.received(desired(i)), 1000 + i) << "CPU " << i;
    }
}

TEST(ChannelBatchingTest, UnbatchedSendsOneCommandPerWrite)
{
    constexpr unsigned others = 7;
    ChannelOptions options = patient();
    options.batching = false;
    Rig rig({}, options);
    const auto results = heldBatch(rig, others);
    for (const std::error_code& ec : results)
    {
        EXPECT_EQ(ec, std::error_code{});
    }
    rig.platform.sync();
    EXPECT_EQ(rig.platform.counts().doorbells, others + 1);
    EXPECT_EQ(rig.platform.counts().writeCommands, others + 1);
    for (unsigned i = 0; i <= others; ++i)
    {
        EXPECT_EQ(rig.platform.received(desired(i)), 1000 + i) << "CPU " << i;
    }
}

TEST(ChannelBatchingTest, EachWriterGetsTheResultOfTheCommandThatCarriedIt)
{
    Rig rig;
    rig.platform.failNextCommands(1); // only the first writer's command
    const auto results = heldBatch(rig, 3);
    EXPECT_EQ(results[0], make_error_code(Errc::pccPlatformError));
    for (unsigned i = 1; i < results.size(); ++i)
    {
        EXPECT_EQ(results[i], std::error_code{}) << "writer " << i;
    }
    EXPECT_EQ(rig.platform.counts().doorbells, 2U);
}

// A clock whose first sleep (the sender's batching window) lasts until the
// test opens the gate; every other sleep is the monotonic clock's.
class GatedClock final : public WaitClock
{
  public:
    Nanos now() const noexcept override
    {
        return monotonicNow();
    }
    void sleepUntil(Nanos deadline) noexcept override
    {
        if (!first_.exchange(true))
        {
            entered = true;
            while (!open)
            {
                pcc::sleepUntil(monotonicNow() + microseconds{50});
            }
        }
        monotonicClock().sleepUntil(deadline);
    }

    std::atomic<bool> entered{false};
    std::atomic<bool> open{false};

  private:
    std::atomic<bool> first_{false};
};

TEST(ChannelBatchingTest, WritersArrivingInTheWindowShareTheFirstCommand)
{
    constexpr unsigned writers = 6;
    GatedClock clock;
    ChannelOptions options = patient();
    options.batchWindow = microseconds{100};
    options.clock = &clock;
    Rig rig({}, options);
    std::vector<std::thread> threads;
    std::vector<std::error_code> results(writers);
    threads.emplace_back([&] { results[0] = rig.writeDesired(0, 500); });
    EXPECT_TRUE(waitUntil(
        monotonicClock(), [&] { return clock.entered.load(); },
        monotonicNow() + patience, microseconds{50}));
    for (unsigned i = 1; i < writers; ++i)
    {
        threads.emplace_back([&, i] {
            results[i] = rig.writeDesired(i, 500 + i);
        });
    }
    // The sender stays queued while it waits out the window.
    EXPECT_TRUE(waitForQueued(rig.channel, writers));
    clock.open = true;
    for (std::thread& t : threads)
    {
        t.join();
    }
    for (unsigned i = 0; i < writers; ++i)
    {
        EXPECT_EQ(results[i], std::error_code{});
        EXPECT_EQ(rig.platform.received(desired(i)), 500 + i);
    }
    EXPECT_EQ(rig.platform.counts().doorbells, 1U);
}

TEST(ChannelTest, TimeoutIsAnErrorCodeAndNeverBeforeTheDeadline)
{
    ChannelOptions options;
    options.timeoutMultiplier = 0;
    options.timeoutFloor = milliseconds{20};
    Rig rig({}, options);
    ASSERT_EQ(rig.channel.completionTimeout(), milliseconds{20});
    rig.platform.setAnswering(false);

    const Nanos start = monotonicNow();
    EXPECT_EQ(rig.writeDesired(0, 10), make_error_code(Errc::pccTimeout));
    EXPECT_GE(monotonicNow() - start, milliseconds{20});

    // The platform still owns the channel: the next request waits for it,
    // times out too, and neither rings nor stores its values.
    const Nanos again = monotonicNow();
    EXPECT_EQ(rig.writeDesired(7, 777), make_error_code(Errc::pccTimeout));
    EXPECT_GE(monotonicNow() - again, milliseconds{20});
    rig.platform.sync();
    EXPECT_EQ(rig.platform.counts().doorbells, 1U);
    EXPECT_EQ(rig.channel.stats().timeouts, 2U);
    EXPECT_EQ(rig.platform.payloadValue(desired(7)), 0U);

    // Once the platform answers, the channel is usable again.
    rig.platform.setAnswering(true);
    EXPECT_EQ(rig.writeDesired(0, 11), std::error_code{});
    EXPECT_EQ(rig.platform.received(desired(0)), 11U);
    EXPECT_EQ(rig.platform.counts().doorbells, 2U);
}

TEST(ChannelTest, ErrorBitIsAnErrorCodeAndIsCleared)
{
    Rig rig;
    rig.platform.failNextCommands(1);
    EXPECT_EQ(rig.writeDesired(2, 20), make_error_code(Errc::pccPlatformError));
    EXPECT_EQ(rig.platform.status() & statusError, 0);
    EXPECT_EQ(rig.platform.status() & statusCommandComplete,
              statusCommandComplete);
    EXPECT_EQ(rig.channel.stats().platformErrors, 1U);
    EXPECT_EQ(rig.writeDesired(2, 21), std::error_code{});
    std::uint64_t value = 0;
    const PccRegister reg = desired(2);
    rig.platform.failNextCommands(1);
    EXPECT_EQ(rig.channel.read(altraSubspace, std::span(&reg, 1),
                               std::span(&value, 1)),
              make_error_code(Errc::pccPlatformError));
    EXPECT_EQ(value, 0U) << "values are left alone on failure";
}

TEST(ChannelTest, MinimumTurnaroundSeparatesCommands)
{
    sim::PccPlatformConfig config;
    config.minRequestTurnaroundUs = 3000;
    config.latency = microseconds{20};
    Rig rig(config);
    for (unsigned i = 0; i < 5; ++i)
    {
        ASSERT_EQ(rig.writeDesired(i, i + 1), std::error_code{});
    }
    std::uint64_t value = 0;
    const PccRegister reg = desired(0);
    ASSERT_EQ(rig.channel.read(altraSubspace, std::span(&reg, 1),
                               std::span(&value, 1)),
              std::error_code{});
    const auto history = rig.platform.history();
    ASSERT_EQ(history.size(), 6U);
    for (std::size_t i = 1; i < history.size(); ++i)
    {
        ASSERT_TRUE(history[i - 1].completed);
        EXPECT_GE(history[i].rungAt - history[i - 1].completedAt,
                  microseconds{3000})
            << "command " << i;
    }
}

// The monotonic clock, moved forward by `offset`.
class OffsetClock final : public WaitClock
{
  public:
    Nanos now() const noexcept override
    {
        return monotonicNow() + offset;
    }
    void sleepUntil(Nanos deadline) noexcept override
    {
        monotonicClock().sleepUntil(deadline - offset);
    }

    Nanos offset{0};
};

TEST(ChannelTest, MaximumPeriodicAccessRateIsEnforcedPerMinute)
{
    sim::PccPlatformConfig config;
    config.maxPeriodicAccessRate = 3;
    OffsetClock clock;
    ChannelOptions options = patient();
    options.clock = &clock;
    Rig rig(config, options);
    const PccRegister reg = desired(0);
    std::uint64_t value = 0;
    auto read = [&] {
        return rig.channel.read(altraSubspace, std::span(&reg, 1),
                                std::span(&value, 1));
    };

    for (unsigned i = 0; i < 3; ++i)
    {
        EXPECT_EQ(rig.writeDesired(0, i), std::error_code{}) << i;
    }
    const Nanos before = monotonicNow();
    EXPECT_EQ(rig.writeDesired(0, 9), make_error_code(Errc::pccRateLimited));
    EXPECT_EQ(read(), make_error_code(Errc::pccRateLimited));
    // Refused at once, not after sleeping out the minute.
    EXPECT_LT(monotonicNow() - before, seconds{30});

    clock.offset = seconds{59};
    EXPECT_EQ(rig.writeDesired(0, 9), make_error_code(Errc::pccRateLimited));
    clock.offset = seconds{61};
    for (unsigned i = 0; i < 2; ++i)
    {
        EXPECT_EQ(rig.writeDesired(0, 20 + i), std::error_code{}) << i;
    }
    EXPECT_EQ(read(), std::error_code{});
    EXPECT_EQ(rig.writeDesired(0, 30), make_error_code(Errc::pccRateLimited));

    rig.platform.sync();
    EXPECT_EQ(rig.platform.counts().doorbells, 6U);
    EXPECT_EQ(rig.channel.stats().rateLimited, 4U);
    EXPECT_EQ(rig.platform.received(desired(0)), 21U);
}

TEST(ChannelReadTest, ReadsRegistersAfterAReadCommand)
{
    Rig rig;
    rig.platform.setPayloadValue(highest(4), 0xABC);
    rig.platform.setReadHandler([](std::span<std::byte> payload) {
        const std::uint32_t v = 0x1234;
        std::memcpy(payload.data() + desired(4).offset, &v, 4);
    });
    const std::array<PccRegister, 2> regs{highest(4), desired(4)};
    std::array<std::uint64_t, 2> values{};
    ASSERT_EQ(rig.channel.read(altraSubspace, regs, values), std::error_code{});
    EXPECT_EQ(values[0], 0xABCU);
    EXPECT_EQ(values[1], 0x1234U);
    rig.platform.sync();
    EXPECT_EQ(rig.platform.counts(),
              (sim::PccPlatformCounts{1, 0, 1, 0, 0, 1}));
    EXPECT_EQ(rig.channel.stats().readRequests, 1U);
}

TEST(ChannelReadTest, AReadFlushesQueuedWritesFirst)
{
    Rig rig;
    std::atomic<std::uint64_t> seenByRead{0};
    rig.platform.setReadHandler([&](std::span<std::byte> payload) {
        std::uint32_t v = 0;
        std::memcpy(&v, payload.data() + desired(1).offset, 4);
        seenByRead = v;
    });
    rig.platform.setAnswering(false);
    std::error_code first;
    std::error_code readResult;
    std::error_code second;
    std::uint64_t value = 0;
    const PccRegister reg = desired(1);
    std::thread a([&] { first = rig.writeDesired(0, 1); });
    EXPECT_TRUE(rig.platform.waitForDoorbells(1, patience));
    // The read queues first, then a write behind it.
    std::thread r([&] {
        readResult = rig.channel.read(altraSubspace, std::span(&reg, 1),
                                      std::span(&value, 1));
    });
    EXPECT_TRUE(waitForQueued(rig.channel, 1));
    std::thread b([&] { second = rig.writeDesired(1, 4321); });
    EXPECT_TRUE(waitForQueued(rig.channel, 2));
    rig.platform.setAnswering(true);
    a.join();
    r.join();
    b.join();
    EXPECT_EQ(first, std::error_code{});
    EXPECT_EQ(second, std::error_code{});
    EXPECT_EQ(readResult, std::error_code{});
    EXPECT_EQ(value, 4321U);
    EXPECT_EQ(seenByRead.load(), 4321U);
    const auto history = rig.platform.history();
    ASSERT_EQ(history.size(), 3U);
    EXPECT_EQ(history[0].command, commandWrite);
    EXPECT_EQ(history[1].command, commandWrite);
    EXPECT_EQ(history[2].command, commandRead);
}

TEST(ChannelTest, WriteAndReadDoNotAllocate)
{
    Rig rig;
    ASSERT_EQ(rig.writeDesired(0, 1), std::error_code{}); // warm up
    const PccRegister reg = desired(0);
    std::uint64_t value = 0;
    const std::size_t before = allocations;
    const std::error_code w = rig.writeDesired(0, 2);
    const std::error_code r = rig.channel.read(
        altraSubspace, std::span(&reg, 1), std::span(&value, 1));
    const std::size_t after = allocations;
    EXPECT_EQ(w, std::error_code{});
    EXPECT_EQ(r, std::error_code{});
    EXPECT_EQ(value, 2U);
    EXPECT_EQ(after, before);
}

TEST(ChannelPerfControlTest, SetPerfOnAltraReachesThePlatform)
{
    Rig rig;
    sim::Layout layout = sim::makeLayout("altra");
    const AccessPlan plan = AccessPlan::build(std::move(layout.cpus));
    sim::RegisterFile file;
    PerfControl control(plan, MappedIo(file), &rig.channel);
    ASSERT_EQ(control.setPerf(5, 1500), std::error_code{});
    EXPECT_EQ(rig.platform.received(desired(5)), 1500U);
    EXPECT_EQ(rig.channel.stats().writeCommands, 1U);

    // Every CPU at once: every value arrives.
    std::vector<std::thread> threads;
    std::vector<std::error_code> results(32);
    for (unsigned cpu = 0; cpu < 32; ++cpu)
    {
        threads.emplace_back([&, cpu] {
            results[cpu] = control.setPerf(cpu, 2000 + cpu);
        });
    }
    for (std::thread& t : threads)
    {
        t.join();
    }
    for (unsigned cpu = 0; cpu < 32; ++cpu)
    {
        EXPECT_EQ(results[cpu], std::error_code{});
        EXPECT_EQ(rig.platform.received(desired(cpu)), 2000 + cpu);
    }
    EXPECT_EQ(rig.channel.stats().writeRequests, 33U);
}

} // namespace
} // namespace cppc::pcc
