// SPDX-License-Identifier: Apache-2.0
#include "daemon/tick_thread.hpp"

#include "daemon/capabilities.hpp"

#include <pthread.h>
#include <unistd.h>

namespace cppcgov::daemon
{

TickThread::TickThread() : thread_([this]() { main(); }) {}

TickThread::~TickThread()
{
    join();
}

TickReservation TickThread::reserve(const TickConfig& config,
                                    std::uint32_t periodUs, std::size_t cpus,
                                    std::vector<int> capabilities)
{
    std::unique_lock lock(mutex_);
    request_ = Request{config, periodUs, cpus, std::move(capabilities)};
    changed_.notify_all();
    changed_.wait(lock, [this]() { return answer_.has_value(); });
    return *answer_;
}

void TickThread::run(std::function<void()> body)
{
    {
        const std::lock_guard lock(mutex_);
        body_ = std::move(body);
    }
    changed_.notify_all();
}

void TickThread::join() noexcept
{
    {
        const std::lock_guard lock(mutex_);
        end_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id())
    {
        thread_.join();
    }
}

void TickThread::main()
{
    // Its name in ps -L, top -H and /proc/<pid>/task/<tid>/comm.
    (void)::pthread_setname_np(::pthread_self(), "cppcgovd-tick");
    std::function<void()> body;
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this]() { return request_ || body_ || end_; });
        tid_ = ::gettid();
        if (request_)
        {
            answer_ = reserveTick(request_->config, request_->periodUs,
                                  request_->cpus);
            for (const int cap : request_->capabilities)
            {
                (void)dropCapabilities({cap});
            }
            changed_.notify_all();
        }
        changed_.wait(lock, [this]() { return body_ || end_; });
        if (!body_)
        {
            return;
        }
        body = std::move(body_);
    }
    body();
}

} // namespace cppcgov::daemon
