// SPDX-License-Identifier: Apache-2.0
#include "bus_loop.hpp"

#include <poll.h>
#include <sdbus-c++/Error.h>
#include <sdbus-c++/IConnection.h>

#include <boost/asio/post.hpp>

#include <chrono>
#include <exception>
#include <limits>
#include <utility>

namespace cppcgov::daemon
{

BusLoop::BusLoop(boost::asio::io_context& io, sdbus::IConnection& bus,
                 FailureHandler onFailure) :
    io_(io),
    bus_(bus), onFailure_(std::move(onFailure)), descriptor_(io), timer_(io),
    alive_(std::make_shared<BusLoop*>(this))
{}

BusLoop::~BusLoop()
{
    *alive_ = nullptr;
    try
    {
        timer_.cancel();
    }
    catch (const boost::system::system_error&)
    {
        // Nothing waits for the timer any more: its wait is moot.
    }
    if (descriptor_.is_open())
    {
        boost::system::error_code ignored;
        descriptor_.cancel(ignored);
        // The fd is sd-bus's: give it back without closing it.
        descriptor_.release();
    }
}

void BusLoop::start()
{
    process();
}

void BusLoop::poke()
{
    if (pokePending_ || failed_)
    {
        return;
    }
    pokePending_ = true;
    boost::asio::post(io_, [alive = std::weak_ptr<BusLoop*>(alive_)]() {
        auto self = alive.lock();
        if (self && *self != nullptr)
        {
            (*self)->pokePending_ = false;
            (*self)->process();
        }
    });
}

void BusLoop::process()
{
    if (failed_)
    {
        return;
    }
    try
    {
        // A bounded batch per turn, so that a flood of calls cannot hold
        // off the sampling tick: when the batch is used up, the rest waits
        // for a turn posted behind whatever else is ready.
        bool more = false;
        for (unsigned n = 0; n < maxBatch; ++n)
        {
            more = bus_.processPendingRequest();
            if (!more)
            {
                break;
            }
        }
        arm();
        if (more)
        {
            poke();
        }
    }
    catch (const std::exception& e)
    {
        failed_ = true;
        timer_.cancel();
        if (descriptor_.is_open())
        {
            boost::system::error_code ignored;
            descriptor_.cancel(ignored);
        }
        if (onFailure_)
        {
            onFailure_(e.what());
        }
    }
}

void BusLoop::Ready::operator()(const boost::system::error_code& ec) const
{
    auto self = alive.lock();
    if (!ec && self && *self != nullptr)
    {
        (*self)->*pending = false;
        (*self)->process();
    }
}

BusLoop::Ready BusLoop::ready(bool BusLoop::*pending) const
{
    return {alive_, pending};
}

void BusLoop::arm()
{
    const sdbus::IConnection::PollData poll = bus_.getEventLoopPollData();

    if (poll.fd != fd_)
    {
        if (descriptor_.is_open())
        {
            boost::system::error_code ignored;
            descriptor_.cancel(ignored);
            descriptor_.release();
        }
        descriptor_.assign(poll.fd);
        fd_ = poll.fd;
        // The cancelled waits complete as aborted: they are not pending.
        readPending_ = false;
        writePending_ = false;
    }

    // A wait still pending is left as it is: each new wait costs the
    // reactor an epoll_ctl. One left over from an earlier arm() (sd-bus no
    // longer wants POLLOUT, or an earlier deadline) at worst calls
    // process() once for nothing.
    if ((poll.events & POLLIN) != 0 && !readPending_)
    {
        readPending_ = true;
        descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                               ready(&BusLoop::readPending_));
    }
    if ((poll.events & POLLOUT) != 0 && !writePending_)
    {
        writePending_ = true;
        descriptor_.async_wait(
            boost::asio::posix::stream_descriptor::wait_write,
            ready(&BusLoop::writePending_));
    }

    if (poll.timeout_usec != std::numeric_limits<std::uint64_t>::max() &&
        !(timerPending_ && poll.timeout_usec == deadlineUs_))
    {
        // steady_clock is CLOCK_MONOTONIC on Linux, the clock sd-bus uses.
        // Setting the expiry aborts the wait for the old one.
        timer_.expires_at(std::chrono::steady_clock::time_point(
            std::chrono::microseconds(poll.timeout_usec)));
        deadlineUs_ = poll.timeout_usec;
        timerPending_ = true;
        timer_.async_wait(ready(&BusLoop::timerPending_));
    }
}

} // namespace cppcgov::daemon
