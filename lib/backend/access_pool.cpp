// SPDX-License-Identifier: Apache-2.0
#include "lib/backend/access_pool.hpp"

#include "lib/backend/blocked_signals.hpp"

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

namespace cppc::backend
{
namespace
{

// A worker runs one sysfs access at a time: a small stack is plenty, and a
// machine with many policies starts many workers.
constexpr std::size_t workerStackBytes = std::size_t{256} * 1024;

} // namespace

AccessPool::AccessPool(std::size_t slots, std::size_t maxThreads, Work work) :
    work_(std::move(work)), maxThreads_(maxThreads), state_(slots, State::idle),
    started_(slots), queue_(slots)
{
    finished_.reserve(slots);
    collected_.reserve(slots);
    workers_.reserve(maxThreads);
    if (maxThreads_ > 0)
    {
        std::lock_guard lock(mutex_);
        if (!spawnLocked())
        {
            throw std::system_error(errno, std::system_category(),
                                    "starting a worker thread");
        }
    }
}

AccessPool::~AccessPool()
{
    stop();
    for (const pthread_t t : workers_)
    {
        (void)::pthread_join(t, nullptr);
    }
}

bool AccessPool::spawnLocked() noexcept
{
    if (workers_.size() >= maxThreads_)
    {
        return false;
    }
    pthread_attr_t attr;
    if (::pthread_attr_init(&attr) != 0)
    {
        return false;
    }
    (void)::pthread_attr_setstacksize(&attr, workerStackBytes);
    pthread_t thread{};
    int rc = 0;
    {
        const AllSignalsBlocked blocked; // workers take no signals
        rc = ::pthread_create(&thread, &attr, &AccessPool::threadMain, this);
    }
    (void)::pthread_attr_destroy(&attr);
    if (rc != 0)
    {
        errno = rc;
        return false;
    }
    (void)::pthread_setname_np(thread, "cppcgov-access");
    workers_.push_back(thread);
    ++idleWorkers_;
    return true;
}

void* AccessPool::threadMain(void* self) noexcept
{
    static_cast<AccessPool*>(self)->serve();
    return nullptr;
}

void AccessPool::serve() noexcept
{
    std::unique_lock lock(mutex_);
    // spawnLocked() counted this worker as idle already.
    for (;;)
    {
        wake_.wait(lock, [this] { return stopping_ || queueCount_ > 0; });
        --idleWorkers_;
        if (queueCount_ == 0)
        {
            return; // stopping
        }
        const std::size_t slot = queue_[queueHead_];
        queueHead_ = (queueHead_ + 1) % queue_.size();
        --queueCount_;
        state_[slot] = State::running;
        ++running_;
        mostRunning_ = std::max(mostRunning_, running_);
        lock.unlock();
        work_(slot);
        lock.lock();
        state_[slot] = State::finished;
        finished_.push_back(slot); // reserved: never allocates
        --running_;
        ++idleWorkers_;
        idle_.notify_all();
    }
}

bool AccessPool::start(std::size_t slot, bool wake) noexcept
{
    if (maxThreads_ == 0)
    {
        {
            std::lock_guard lock(mutex_);
            if (stopping_ || state_[slot] != State::idle)
            {
                return false;
            }
            state_[slot] = State::running;
            started_[slot] = Clock::now();
        }
        work_(slot);
        std::lock_guard lock(mutex_);
        state_[slot] = State::finished;
        finished_.push_back(slot);
        return true;
    }
    std::lock_guard lock(mutex_);
    if (stopping_ || state_[slot] != State::idle)
    {
        return false;
    }
    state_[slot] = State::queued;
    started_[slot] = Clock::now();
    queue_[(queueHead_ + queueCount_) % queue_.size()] = slot;
    ++queueCount_;
    // A worker for every queued access while the maximum allows, so that
    // accesses run together (and the kernel can batch their doorbells).
    if (idleWorkers_ < queueCount_)
    {
        (void)spawnLocked();
    }
    if (wake)
    {
        wake_.notify_one();
    }
    return true;
}

void AccessPool::wake() noexcept
{
    wake_.notify_all();
}

void AccessPool::takeFinished()
{
    collected_.clear();
    std::lock_guard lock(mutex_);
    for (const std::size_t slot : finished_)
    {
        state_[slot] = State::idle;
        collected_.push_back(slot);
    }
    finished_.clear();
}

bool AccessPool::inFlight(std::size_t slot) const noexcept
{
    std::lock_guard lock(mutex_);
    return state_[slot] == State::queued || state_[slot] == State::running;
}

AccessPool::Clock::time_point AccessPool::startedAt(
    std::size_t slot) const noexcept
{
    std::lock_guard lock(mutex_);
    return started_[slot];
}

void AccessPool::stop() noexcept
{
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (; queueCount_ > 0; --queueCount_)
    {
        state_[queue_[queueHead_]] = State::idle;
        queueHead_ = (queueHead_ + 1) % queue_.size();
    }
    wake_.notify_all();
}

std::size_t AccessPool::waitIdle(Clock::time_point until)
{
    std::unique_lock lock(mutex_);
    idle_.wait_until(lock, until, [this] { return running_ == 0; });
    return running_;
}

std::size_t AccessPool::pending() const
{
    std::lock_guard lock(mutex_);
    return running_;
}

std::size_t AccessPool::mostRunning() const
{
    std::lock_guard lock(mutex_);
    return mostRunning_;
}

std::size_t AccessPool::threads() const
{
    std::lock_guard lock(mutex_);
    return workers_.size();
}

} // namespace cppc::backend
