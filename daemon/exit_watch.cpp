// SPDX-License-Identifier: Apache-2.0
#include "exit_watch.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

int newEpollSet()
{
    const int fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0)
    {
        throw std::system_error(errno, std::generic_category(),
                                "creating the epoll set for task exits");
    }
    return fd;
}

} // namespace

ExitWatch::ExitWatch(boost::asio::io_context& io, Handler onExit) :
    set_(io, newEpollSet()), onExit_(std::move(onExit)),
    alive_(std::make_shared<ExitWatch*>(this))
{
    arm();
}

ExitWatch::~ExitWatch()
{
    *alive_ = nullptr;
    boost::system::error_code ignored;
    set_.cancel(ignored);
}

std::error_code ExitWatch::add(int pidfd, std::uint64_t key) noexcept
{
    epoll_event event{};
    event.events = EPOLLIN | EPOLLONESHOT;
    event.data.u64 = key;
    if (::epoll_ctl(set_.native_handle(), EPOLL_CTL_ADD, pidfd, &event) != 0)
    {
        return {errno, std::generic_category()};
    }
    return {};
}

void ExitWatch::arm()
{
    set_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [alive = std::weak_ptr<ExitWatch*>(alive_)](
                        const boost::system::error_code& ec) {
        auto self = alive.lock();
        if (!ec && self && *self != nullptr)
        {
            (*self)->drain();
        }
    });
}

void ExitWatch::drain()
{
    // A handler may destroy the watch: check after each one.
    const std::weak_ptr<ExitWatch*> alive(alive_);
    std::array<epoll_event, 64> events{};
    int n = 0;
    do
    {
        n = ::epoll_wait(set_.native_handle(), events.data(),
                         static_cast<int>(events.size()), 0);
        for (int i = 0; i < n; ++i)
        {
            onExit_(events[static_cast<std::size_t>(i)].data.u64);
            auto self = alive.lock();
            if (!self || *self == nullptr)
            {
                return;
            }
        }
    } while (n == static_cast<int>(events.size()) || (n < 0 && errno == EINTR));
    arm();
}

} // namespace cppcgov::daemon
