// SPDX-License-Identifier: Apache-2.0
// Tells the event loop when tasks exit: every watched pidfd sits in one
// epoll set of its own, and that set is a single descriptor on the asio
// loop. Watching a task costs one epoll_ctl when it starts and nothing when
// it ends (closing the pidfd takes it out of the set), where a descriptor
// object per pidfd on the loop costs four system calls over its life.
//
// Each watch fires at most once (EPOLLONESHOT). A watch ends when the
// owner closes the pidfd's last descriptor; a key may still be reported
// once after its owner has moved on (the exit raced the close), so the
// handler must ignore keys it no longer knows.
//
// Runs on the io_context's thread; not thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <system_error>

struct epoll_event;

namespace cppcgov::daemon
{

class ExitWatch
{
  public:
    // Called on the loop with the key of each watched task that exited.
    using Handler = std::function<void(std::uint64_t key)>;

    // Throws std::system_error when the epoll set cannot be made.
    ExitWatch(boost::asio::io_context& io, Handler onExit);
    ~ExitWatch();

    ExitWatch(const ExitWatch&) = delete;
    ExitWatch& operator=(const ExitWatch&) = delete;

    // Reports `key` once `pidfd`'s task has exited (at once, on the loop,
    // if it already has). The caller keeps `pidfd` and closes it when it
    // no longer cares. Errors are epoll_ctl's (EEXIST when this pidfd is
    // watched already, ENOSPC past the user's epoll watch limit).
    [[nodiscard]] std::error_code add(int pidfd, std::uint64_t key) noexcept;

  private:
    void arm();
    void drain();

    boost::asio::posix::stream_descriptor set_;
    Handler onExit_;
    std::shared_ptr<ExitWatch*> alive_;
};

} // namespace cppcgov::daemon
