// SPDX-License-Identifier: Apache-2.0
// Drives an sdbus-c++ connection from a Boost.Asio io_context, on the
// loop's own thread: no thread of sdbus-c++'s, no blocking poll.
//
// sdbus-c++ 1.2 exposes what to wait for through getEventLoopPollData(): the
// bus fd, the poll events sd-bus wants (POLLIN, and POLLOUT while it has
// output queued) and an absolute CLOCK_MONOTONIC deadline (method-call
// timeouts, or 0 when there is work to do now). BusLoop waits for exactly
// that with a stream_descriptor and a steady_timer, then calls
// processPendingRequest() until it returns false, and re-arms from fresh
// poll data (at most maxBatch messages per turn, so that other work on the
// loop runs between batches). Re-arming starts only the waits that are not
// pending already and moves the timer only when the deadline changed:
// every wait started costs the reactor a system call. Two traps of 1.2 are
// handled here:
//   - a bus operation made outside processing (emitting a signal from a
//     timer, a synchronous call) can read incoming messages into sd-bus's
//     queue, after which the fd stays quiet; and asynchronous calls do not
//     announce their timeouts. After any such operation call poke(), which
//     posts a "process and re-arm" to the loop;
//   - the fd belongs to sd-bus: the descriptor is released, never closed.
//
// Not thread-safe: use it from the io_context's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace sdbus
{
class IConnection;
}

namespace cppcgov::daemon
{

class BusLoop
{
  public:
    // Bus messages handled per turn of the loop.
    static constexpr unsigned maxBatch = 16;

    // Called when processing the bus throws (the connection is broken):
    // the loop stops driving the bus, and the owner should shut down.
    using FailureHandler = std::function<void(const std::string& what)>;

    BusLoop(boost::asio::io_context& io, sdbus::IConnection& bus,
            FailureHandler onFailure);

    BusLoop(const BusLoop&) = delete;
    BusLoop& operator=(const BusLoop&) = delete;

    // Cancels the waits and releases (does not close) the bus fd.
    ~BusLoop();

    // Processes what is pending and starts waiting.
    void start();

    // Schedules a "process and re-arm" on the loop: call after any bus
    // operation done outside processing. Cheap when called repeatedly
    // before the loop gets to it.
    void poke();

  private:
    void process();
    void arm();
    // The completion of a wait: clears `pending` and processes, unless the
    // wait was aborted or the loop is gone. Small, so the reactor keeps it
    // in its recycled handler memory.
    struct Ready
    {
        std::weak_ptr<BusLoop*> alive;
        bool BusLoop::*pending;
        void operator()(const boost::system::error_code& ec) const;
    };
    Ready ready(bool BusLoop::*pending) const;

    boost::asio::io_context& io_;
    sdbus::IConnection& bus_;
    FailureHandler onFailure_;
    boost::asio::posix::stream_descriptor descriptor_;
    boost::asio::steady_timer timer_;
    int fd_ = -1;
    bool pokePending_ = false;
    bool failed_ = false;
    // Waits started and not completed yet (cancelled ones complete too).
    bool readPending_ = false;
    bool writePending_ = false;
    bool timerPending_ = false;
    // The timer's deadline while timerPending_, CLOCK_MONOTONIC us.
    std::uint64_t deadlineUs_ = 0;
    // Lets posted work see whether the loop still exists.
    std::shared_ptr<BusLoop*> alive_;
};

} // namespace cppcgov::daemon
