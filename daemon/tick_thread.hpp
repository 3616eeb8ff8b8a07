// SPDX-License-Identifier: Apache-2.0
// The thread the tick runs on, started before any other thread of the
// daemon so that it alone keeps CAP_SYS_NICE: capabilities are per thread,
// and a thread starts with its creator's. The daemon starts it first, then
// drops CAP_SYS_NICE from its own thread, so every thread started after
// (the D-Bus side's workers, the kernel backend's, the metrics' writer) is
// without it. The tick's thread waits to be scheduled (reserve()), drops
// the capabilities it was given once it is, and then runs what it is
// handed (run()).
//
// The start-up hand-offs wait on a condition variable; nothing here runs
// once the tick does.
#pragma once

#include "daemon/config.hpp"
#include "daemon/tick_scheduling.hpp"

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace cppcgov::daemon
{

class TickThread
{
  public:
    // Starts the thread (named cppcgovd-tick), which waits.
    TickThread();
    // join().
    ~TickThread();

    TickThread(const TickThread&) = delete;
    TickThread& operator=(const TickThread&) = delete;

    // On the thread: schedules it as `config` asks (reserveTick()), then
    // drops `capabilities` from it; returns what it got. Once.
    TickReservation reserve(const TickConfig& config, std::uint32_t periodUs,
                            std::size_t cpus, std::vector<int> capabilities);

    // The thread's id (as gettid() gives it), once reserve() returned.
    pid_t tid() const noexcept
    {
        return tid_;
    }

    // Runs `body` on the thread, once.
    void run(std::function<void()> body);
    // Waits for the body's end (the body must have been told to end), or
    // ends a thread never handed one. Idempotent.
    void join() noexcept;

  private:
    void main();

    std::mutex mutex_;
    std::condition_variable changed_;
    // The reserve() request and its answer.
    struct Request
    {
        TickConfig config;
        std::uint32_t periodUs = 0;
        std::size_t cpus = 0;
        std::vector<int> capabilities;
    };
    std::optional<Request> request_;
    std::optional<TickReservation> answer_;
    std::function<void()> body_;
    bool end_ = false;
    pid_t tid_ = 0;
    std::thread thread_;
};

} // namespace cppcgov::daemon
