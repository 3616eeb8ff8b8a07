// SPDX-License-Identifier: Apache-2.0
// The user database (NSS: files, LDAP, sssd...) for permissions.group, and
// a worker thread to ask it on: a lookup may block for as long as a
// directory server takes, and nothing blocking runs on the loop thread.
//
// The service takes a caller's groups from the bus driver
// (GetConnectionCredentials' UnixGroupIDs); the database is asked only to
// resolve the group's name (at start-up, before the loop runs, and on the
// worker at reload) and, when the bus driver gives no groups, whether a
// user is a member (on the worker).
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace cppcgov::daemon
{

// The id of group `name`, or nothing when there is none (or the database
// cannot be asked). May block.
std::optional<gid_t> groupByName(const std::string& name);

// Whether user `uid` is a member of group `gid`, primary or
// supplementary. May block.
bool userInGroup(uid_t uid, gid_t gid);

// One thread that runs blocking jobs in turn and hands each result back to
// the io_context's loop. The thread starts with the first job. Destroying
// the worker waits for the job that runs (if any) and drops the others;
// results not yet handed back are dropped with the io_context's handlers.
class BlockingWorker
{
  public:
    explicit BlockingWorker(boost::asio::io_context& io) : io_(io) {}
    ~BlockingWorker();

    BlockingWorker(const BlockingWorker&) = delete;
    BlockingWorker& operator=(const BlockingWorker&) = delete;

    // Runs `job()` on the worker thread, then `done(result)` on the loop.
    template <class Job, class Done>
    void run(Job job, Done done)
    {
        push([this, job = std::move(job), done = std::move(done)]() mutable {
            boost::asio::post(io_, [done = std::move(done),
                                    result = job()]() mutable {
                done(std::move(result));
            });
        });
    }

  private:
    void push(std::function<void()> job);
    void loop();

    boost::asio::io_context& io_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace cppcgov::daemon
