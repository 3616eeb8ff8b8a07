// SPDX-License-Identifier: Apache-2.0
#include "lib/backend/bounded_io.hpp"

#include "lib/backend/blocked_signals.hpp"
#include "lib/error.hpp"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace cppc::backend
{
namespace
{

// What the caller and the access's thread share: the thread may outlive
// the caller's wait, so it owns its inputs and its result.
struct Call
{
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    std::error_code result;
};

} // namespace

BoundedIo::BoundedIo(const AttributeIo& inner,
                     std::chrono::milliseconds perAccess,
                     std::chrono::milliseconds budget,
                     const std::set<std::filesystem::path>& hung) :
    inner_(inner),
    perAccess_(perAccess), end_(Clock::now() + budget)
{
    for (const std::filesystem::path& dir : hung)
    {
        // "a/b/" and "a/b" are one directory, as the parent of "a/b/c".
        const std::filesystem::path normal = dir.lexically_normal();
        hung_.insert(normal.has_filename() ? normal : normal.parent_path());
    }
}

template <class Access>
std::error_code BoundedIo::bounded(const std::filesystem::path& file,
                                   Access&& access) const
{
    const std::filesystem::path dir = file.parent_path().lexically_normal();
    if (hung_.contains(dir))
    {
        return Errc::accessPending;
    }
    const Clock::time_point now = Clock::now();
    if (now >= end_)
    {
        return Errc::accessTimedOut;
    }
    const Clock::time_point until = std::min(now + perAccess_, end_);
    auto call = std::make_shared<Call>();
    try
    {
        const AllSignalsBlocked blocked; // the thread takes no signals
        std::thread thread([call, access]() mutable {
            std::error_code ec;
            try
            {
                ec = access();
            }
            catch (...)
            {
                // Only allocation fails in an access.
                ec = std::make_error_code(std::errc::not_enough_memory);
            }
            const std::lock_guard lock(call->mutex);
            call->result = ec;
            call->finished = true;
            call->done.notify_all();
        });
        thread.detach();
    }
    catch (const std::system_error& e)
    {
        return e.code();
    }
    std::unique_lock lock(call->mutex);
    if (!call->done.wait_until(lock, until, [&call] { return call->finished; }))
    {
        hung_.insert(dir);
        return Errc::accessTimedOut;
    }
    return call->result;
}

std::error_code BoundedIo::read(const std::filesystem::path& file,
                                std::string& out) const
{
    try
    {
        const AttributeIo* inner = &inner_;
        std::shared_ptr<std::string> text = std::make_shared<std::string>();
        const std::error_code ec = bounded(file, [inner, file, text]() {
            return inner->read(file, *text);
        });
        if (!ec)
        {
            out = *text;
        }
        return ec;
    }
    catch (const std::bad_alloc&)
    {
        return std::make_error_code(std::errc::not_enough_memory);
    }
}

std::error_code BoundedIo::write(const std::filesystem::path& file,
                                 std::string_view value) const noexcept
{
    try
    {
        const AttributeIo* inner = &inner_;
        return bounded(file, [inner, file, text = std::string(value)]() {
            return inner->write(file, text);
        });
    }
    catch (const std::bad_alloc&)
    {
        return std::make_error_code(std::errc::not_enough_memory);
    }
}

} // namespace cppc::backend
