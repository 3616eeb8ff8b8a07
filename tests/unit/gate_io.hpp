// SPDX-License-Identifier: Apache-2.0
// An AttributeIo standing in for sysfs files behind a PCC mailbox: an
// access to a held file blocks, as a system call does while the firmware
// does not answer, until the test releases it; a failing file answers EIO.
// It records every access and how many were blocked at once, so that tests
// can tell accesses that ran together from accesses made in turn without
// timing anything.
//
// Thread-safe: the accesses come from worker threads.
#pragma once

#include "lib/backend/attribute_io.hpp"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace cppc::test
{

class GateIo final : public backend::AttributeIo
{
  public:
    using Clock = std::chrono::steady_clock;

    struct Access
    {
        std::filesystem::path file;
        std::string value; // empty for a read
    };

    // Accesses to `file` block until release(file).
    void hold(const std::filesystem::path& file)
    {
        const std::lock_guard lock(mutex_);
        held_.insert(file.lexically_normal());
    }
    void release(const std::filesystem::path& file)
    {
        const std::lock_guard lock(mutex_);
        held_.erase(file.lexically_normal());
        changed_.notify_all();
    }
    // Accesses to `file` answer EIO, or work again.
    void fail(const std::filesystem::path& file, bool failing = true)
    {
        const std::lock_guard lock(mutex_);
        if (failing)
        {
            failing_.insert(file.lexically_normal());
        }
        else
        {
            failing_.erase(file.lexically_normal());
        }
    }
    // Writes block until `n` of them have arrived (so the first `n` were
    // in the kernel at once; then all go on), or until the wait gives up
    // after `patience`.
    void gatherWrites(std::size_t n, std::chrono::milliseconds patience)
    {
        const std::lock_guard lock(mutex_);
        gather_ = n;
        patience_ = patience;
    }

    // Waits until `predicate(*this)` holds, under the lock, or `timeout`.
    template <class Predicate>
    bool waitFor(Predicate predicate, std::chrono::milliseconds timeout)
    {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] {
            return predicate(*this);
        });
    }

    // What was accessed, in order (writes and reads of held or failing
    // files, and every write).
    std::vector<Access> accesses() const
    {
        const std::lock_guard lock(mutex_);
        return accesses_;
    }
    // Accesses inside the gate: blocked, or not yet returned.
    std::size_t blockedNow() const
    {
        const std::lock_guard lock(mutex_);
        return blocked_;
    }
    std::size_t mostBlockedAtOnce() const
    {
        const std::lock_guard lock(mutex_);
        return mostBlocked_;
    }
    std::size_t returned() const
    {
        const std::lock_guard lock(mutex_);
        return returned_;
    }
    // Under waitFor's lock.
    std::size_t returnedLocked() const
    {
        return returned_;
    }
    std::size_t blockedLocked() const
    {
        return blocked_;
    }

    std::error_code read(const std::filesystem::path& file,
                         std::string& out) const override
    {
        if (const std::error_code ec = pass(file, {}, false))
        {
            return ec;
        }
        const std::error_code ec = AttributeIo::read(file, out);
        done();
        return ec;
    }

    std::error_code write(const std::filesystem::path& file,
                          std::string_view value) const noexcept override
    {
        try
        {
            if (const std::error_code ec = pass(file, value, true))
            {
                return ec;
            }
        }
        catch (...)
        {
            return std::make_error_code(std::errc::not_enough_memory);
        }
        const std::error_code ec = AttributeIo::write(file, value);
        done();
        return ec;
    }

  private:
    // Records the access, blocks while it is held or gathering; EIO for a
    // failing file (counted as returned).
    std::error_code pass(const std::filesystem::path& file,
                         std::string_view value, bool isWrite) const
    {
        const std::filesystem::path f = file.lexically_normal();
        std::unique_lock lock(mutex_);
        const bool held = held_.contains(f);
        if (isWrite || held || failing_.contains(f))
        {
            accesses_.push_back({f, std::string(value)});
        }
        ++blocked_;
        mostBlocked_ = std::max(mostBlocked_, blocked_);
        changed_.notify_all();
        if (isWrite && gather_ > 0)
        {
            ++gathered_;
            changed_.notify_all();
            (void)changed_.wait_for(lock, patience_, [this] {
                return gathered_ >= gather_;
            });
        }
        changed_.wait(lock, [this, &f] { return !held_.contains(f); });
        if (failing_.contains(f))
        {
            --blocked_;
            ++returned_;
            changed_.notify_all();
            return {EIO, std::system_category()};
        }
        return {};
    }

    // The access is over: the last the gate hears of it, so that a test
    // that waited for blockedLocked() == 0 may destroy the gate.
    void done() const
    {
        const std::lock_guard lock(mutex_);
        --blocked_;
        ++returned_;
        changed_.notify_all();
    }

    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    std::set<std::filesystem::path> held_;
    std::set<std::filesystem::path> failing_;
    std::size_t gather_ = 0;
    mutable std::size_t gathered_ = 0; // writes that arrived while gathering
    std::chrono::milliseconds patience_{0};
    mutable std::vector<Access> accesses_;
    mutable std::size_t blocked_ = 0;
    mutable std::size_t mostBlocked_ = 0;
    mutable std::size_t returned_ = 0;
};

} // namespace cppc::test
