// SPDX-License-Identifier: Apache-2.0
#include "user_db.hpp"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace cppcgov::daemon
{
namespace
{

// Calls `lookup(buffer, size)` with a growing buffer while it says ERANGE.
template <class Lookup>
int withBuffer(std::vector<char>& buffer, Lookup&& lookup)
{
    buffer.resize(4096);
    int r = 0;
    while ((r = lookup(buffer.data(), buffer.size())) == ERANGE &&
           buffer.size() < (std::size_t{1} << 24))
    {
        buffer.resize(buffer.size() * 2);
    }
    return r;
}

} // namespace

std::optional<gid_t> groupByName(const std::string& name)
{
    group entry{};
    group* found = nullptr;
    std::vector<char> buffer;
    const int r = withBuffer(buffer, [&](char* b, std::size_t n) {
        return ::getgrnam_r(name.c_str(), &entry, b, n, &found);
    });
    if (r != 0 || found == nullptr)
    {
        return std::nullopt;
    }
    return found->gr_gid;
}

bool userInGroup(uid_t uid, gid_t gid)
{
    passwd entry{};
    passwd* found = nullptr;
    std::vector<char> buffer;
    const int r = withBuffer(buffer, [&](char* b, std::size_t n) {
        return ::getpwuid_r(uid, &entry, b, n, &found);
    });
    if (r != 0 || found == nullptr)
    {
        return false;
    }
    if (found->pw_gid == gid)
    {
        return true;
    }
    std::vector<gid_t> groups(64);
    int count = static_cast<int>(groups.size());
    while (::getgrouplist(found->pw_name, found->pw_gid, groups.data(),
                          &count) < 0)
    {
        if (count <= static_cast<int>(groups.size()))
        {
            count = static_cast<int>(groups.size()) * 2;
        }
        groups.resize(static_cast<std::size_t>(count));
    }
    groups.resize(static_cast<std::size_t>(count));
    return std::find(groups.begin(), groups.end(), gid) != groups.end();
}

BlockingWorker::~BlockingWorker()
{
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
        jobs_.clear();
    }
    wake_.notify_all();
    if (thread_.joinable())
    {
        thread_.join();
    }
}

void BlockingWorker::push(std::function<void()> job)
{
    {
        const std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(job));
        if (!thread_.joinable())
        {
            thread_ = std::thread([this]() { loop(); });
        }
    }
    wake_.notify_one();
}

void BlockingWorker::loop()
{
    std::unique_lock lock(mutex_);
    for (;;)
    {
        wake_.wait(lock, [this]() { return stopping_ || !jobs_.empty(); });
        if (stopping_)
        {
            return;
        }
        std::function<void()> job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
        lock.lock();
    }
}

} // namespace cppcgov::daemon
