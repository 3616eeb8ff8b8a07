// SPDX-License-Identifier: Apache-2.0
// Accesses that wait on hardware, run off the caller's thread.
//
// Through cppc_cpufreq, a write of scaling_setspeed or a read of
// acpi_cppc/feedback_ctrs on a machine whose _CPC registers live in PCC is
// a mailbox round trip that the kernel waits for inside the system call
// (100 us and more on Ampere Altra), and firmware whose mailbox stops
// answering holds the call until the kernel gives up, or for good. The
// kernel rings one doorbell for every write issued while the previous
// doorbell was in flight, so writes made from different threads at once
// share doorbells, while one thread writing in turn pays a round trip each.
//
// An AccessPool runs such accesses on a bounded set of worker threads. The
// caller numbers the places it accesses (slots: one per file, say) and
// gives one function that performs the access of a slot; at most one access
// per slot is queued or running at a time, which is what keeps a hung file
// from swallowing workers. The owner starts a slot's access from its own
// thread, later collects the slots whose access has finished, and can see
// how long an unfinished one has been going. The data an access reads and
// writes belongs to its slot: the owner writes it before start() and reads
// it after collect() hands the slot back, and never between (start() and
// collect() order the two sides).
//
// Threads are started when work finds none idle, up to the maximum, so a
// small machine uses few. With a maximum of 0 there are none: start() runs
// the access at once on the caller's thread (the single-threaded path,
// kept for comparison).
//
// start(), collect(), inFlight() and startedAt() are for one owner thread.
// No logging.
#pragma once

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace cppc::backend
{

class AccessPool
{
  public:
    using Clock = std::chrono::steady_clock;
    // Performs slot `slot`'s access; runs on a worker (or inline). Must not
    // throw.
    using Work = std::function<void(std::size_t slot)>;

    // `slots` slots, at most `maxThreads` workers. Throws std::system_error
    // when the first worker cannot be started.
    AccessPool(std::size_t slots, std::size_t maxThreads, Work work);

    AccessPool(const AccessPool&) = delete;
    AccessPool& operator=(const AccessPool&) = delete;

    // stop(), then joins every worker, which waits for the accesses still
    // running: a process whose access is stuck in the kernel must not get
    // here (see pending()).
    ~AccessPool();

    // Queues `slot`'s access, or runs it now without workers. False when
    // the slot's previous access is still queued, running, or finished but
    // not collected, or after stop(). Does not allocate once every worker
    // the load needs has started. With `wake` false the workers are not
    // told yet: a caller that starts many accesses at once calls wake()
    // after the last, one system call instead of one per access.
    bool start(std::size_t slot, bool wake = true) noexcept;
    // Tells the workers about everything queued.
    void wake() noexcept;

    // Calls done(slot) for each slot whose access finished since the last
    // call, in the order they finished; those slots can start again.
    // `done` must not call start() or collect().
    template <class Done>
    void collect(Done&& done)
    {
        takeFinished();
        for (const std::size_t slot : collected_)
        {
            done(slot);
        }
    }

    // Whether `slot` has an access queued or running (finished but not yet
    // collected counts as not in flight).
    bool inFlight(std::size_t slot) const noexcept;
    // When the slot's current access was started (queued); meaningful while
    // it is in flight.
    Clock::time_point startedAt(std::size_t slot) const noexcept;

    // No more accesses start: queued ones are dropped (their slots become
    // idle, never run), running ones go on.
    void stop() noexcept;
    // Waits until no access is running or `until` passes; returns how many
    // are still running.
    std::size_t waitIdle(Clock::time_point until);
    // How many accesses are running now, and the most that ran at once.
    std::size_t pending() const;
    std::size_t mostRunning() const;

    std::size_t maxThreads() const noexcept
    {
        return maxThreads_;
    }
    // Workers started so far.
    std::size_t threads() const;

  private:
    enum class State : std::uint8_t
    {
        idle,
        queued,
        running,
        finished,
    };

    static void* threadMain(void* self) noexcept;
    void serve() noexcept;
    // With mutex_ held: starts one more worker if allowed; false if it
    // could not.
    bool spawnLocked() noexcept;
    void takeFinished();

    Work work_;
    std::size_t maxThreads_;

    mutable std::mutex mutex_;
    std::condition_variable wake_; // work queued, or stopping
    std::condition_variable idle_; // an access finished
    std::vector<State> state_;     // by slot
    std::vector<Clock::time_point> started_;
    // Rings of slots, each slot at most once in each: capacity = slots.
    std::vector<std::size_t> queue_;
    std::size_t queueHead_ = 0;
    std::size_t queueCount_ = 0;
    std::vector<std::size_t> finished_;
    std::size_t running_ = 0;
    std::size_t mostRunning_ = 0;
    std::size_t idleWorkers_ = 0;
    bool stopping_ = false;
    std::vector<pthread_t> workers_;
    std::vector<std::size_t> collected_; // owner side, reused
};

} // namespace cppc::backend
