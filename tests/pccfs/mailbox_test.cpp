// SPDX-License-Identifier: Apache-2.0
// The PCC mailbox's arithmetic (mailbox.hpp): doorbell costs, batches of
// writes within one turnaround, exclusive reads. Time points are given,
// not read from a clock.
#include "mailbox.hpp"

#include <gtest/gtest.h>

namespace pccfs
{
namespace
{

using std::chrono::microseconds;
const Mailbox::Clock::time_point t0{std::chrono::seconds(100)};

TEST(Mailbox, ALoneWriteCostsTheLargerOfLatencyAndTurnaround)
{
    Mailbox m(microseconds(100), microseconds(110));
    const Mailbox::Slot s = m.write(t0);
    EXPECT_TRUE(s.opened);
    EXPECT_EQ(s.done, t0 + microseconds(110));
    Mailbox slow(microseconds(300), microseconds(110));
    EXPECT_EQ(slow.write(t0).done, t0 + microseconds(300));
}

TEST(Mailbox, WritesWithinOneTurnaroundShareTheDoorbell)
{
    Mailbox m(microseconds(100), microseconds(110));
    const Mailbox::Slot first = m.write(t0);
    const Mailbox::Slot joined = m.write(t0 + microseconds(109));
    EXPECT_FALSE(joined.opened);
    EXPECT_EQ(joined.doorbell, first.doorbell);
    EXPECT_EQ(joined.done, first.done);
    // One turnaround after the opening the batch is closed.
    const Mailbox::Slot next = m.write(t0 + microseconds(110));
    EXPECT_TRUE(next.opened);
    EXPECT_NE(next.doorbell, first.doorbell);
    EXPECT_EQ(next.done, t0 + microseconds(220));
}

TEST(Mailbox, ABatchOpensOnlyWhenThePreviousDoorbellFinished)
{
    Mailbox m(microseconds(200), microseconds(50));
    const Mailbox::Slot first = m.write(t0);
    EXPECT_EQ(first.done, t0 + microseconds(200));
    // Too late for the first batch: the next opens at t0 + 200 ...
    const Mailbox::Slot second = m.write(t0 + microseconds(60));
    EXPECT_TRUE(second.opened);
    EXPECT_EQ(second.done, t0 + microseconds(400));
    // ... and takes every write until one turnaround past that.
    const Mailbox::Slot waiting = m.write(t0 + microseconds(100));
    EXPECT_EQ(waiting.doorbell, second.doorbell);
    const Mailbox::Slot late = m.write(t0 + microseconds(250));
    EXPECT_NE(late.doorbell, second.doorbell);
    EXPECT_EQ(late.done, t0 + microseconds(600));
}

TEST(Mailbox, AReadIsExclusive)
{
    Mailbox m(microseconds(100), microseconds(110));
    const Mailbox::Slot write = m.write(t0);
    // The read waits for the open batch ...
    const Mailbox::Slot read = m.read(t0 + microseconds(10));
    EXPECT_TRUE(read.opened);
    EXPECT_EQ(read.done, t0 + microseconds(220));
    // ... and a write after it neither joins that batch nor passes it.
    const Mailbox::Slot after = m.write(t0 + microseconds(20));
    EXPECT_NE(after.doorbell, write.doorbell);
    EXPECT_EQ(after.done, t0 + microseconds(330));
    // Two reads are two doorbells.
    Mailbox idle(microseconds(100), microseconds(110));
    EXPECT_EQ(idle.read(t0).done, t0 + microseconds(110));
    EXPECT_EQ(idle.read(t0).done, t0 + microseconds(220));
}

TEST(Mailbox, AnIdleMailboxStartsAtTheArrival)
{
    Mailbox m(microseconds(100), microseconds(110));
    (void)m.write(t0);
    EXPECT_EQ(m.write(t0 + microseconds(1000)).done, t0 + microseconds(1110));
    EXPECT_EQ(m.read(t0 + microseconds(5000)).done, t0 + microseconds(5110));
}

} // namespace
} // namespace pccfs
