// SPDX-License-Identifier: Apache-2.0
// pollWatched (tools/poll_ready.hpp): the index of a ready descriptor of
// the caller's, readable or hung up; nothing when the time passes or only
// the other descriptors are ready.
#include "lib/backend/fd.hpp"
#include "tools/poll_ready.hpp"

#include <unistd.h>

#include <array>

#include <gtest/gtest.h>

namespace
{

using cppc::backend::Fd;
using cppcgov::tools::pollWatched;

struct Pipe
{
    Fd read;
    Fd write;
};

Pipe makePipe()
{
    std::array<int, 2> fds{};
    EXPECT_EQ(::pipe(fds.data()), 0);
    return {Fd(fds[0]), Fd(fds[1])};
}

void fill(const Pipe& p)
{
    const char byte = 'x';
    ASSERT_EQ(::write(p.write.get(), &byte, 1), 1);
}

TEST(PollWatched, ReadableOrHungUpIsReady)
{
    Pipe quiet = makePipe();
    const Pipe ready = makePipe();
    fill(ready);
    std::array<pollfd, 2> polled{pollfd{quiet.read.get(), POLLIN, 0},
                                 pollfd{ready.read.get(), POLLIN, 0}};
    EXPECT_EQ(pollWatched(polled, 2, -1), 1U);

    quiet.write.reset();
    polled = {pollfd{quiet.read.get(), POLLIN, 0},
              pollfd{ready.read.get(), POLLIN, 0}};
    EXPECT_EQ(pollWatched(polled, 2, -1), 0U);
}

TEST(PollWatched, NothingWhenTheTimePassesOrOnlyOthersAreReady)
{
    const Pipe quiet = makePipe();
    const Pipe other = makePipe();
    std::array<pollfd, 2> polled{pollfd{quiet.read.get(), POLLIN, 0},
                                 pollfd{other.read.get(), POLLIN, 0}};
    EXPECT_EQ(pollWatched(polled, 1, 0), std::nullopt);
    fill(other);
    EXPECT_EQ(pollWatched(polled, 1, -1), std::nullopt);
    EXPECT_NE(polled[1].revents, 0);
}

TEST(PollWatched, NegativeDescriptorsAreIgnored)
{
    std::array<pollfd, 1> polled{pollfd{-1, POLLIN, 0}};
    // A negative fd is ignored by poll(2): with no timeout, nothing.
    EXPECT_EQ(pollWatched(polled, 1, 0), std::nullopt);
}

} // namespace
