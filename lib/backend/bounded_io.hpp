// SPDX-License-Identifier: Apache-2.0
// An AttributeIo whose every access returns within a deadline, for a
// restore that must finish even when the hardware behind a file has stopped
// answering (a PCC mailbox that never completes holds the system call).
//
// Each access runs on a thread of its own, detached, which shares with
// the caller only what the access needs; the caller waits for it until the
// access's deadline or the whole budget runs out, whichever comes first.
// An access that does not return in time answers Errc::accessTimedOut and
// marks its directory as hung; every later access to a hung directory, and
// to the directories given as hung at construction (those of accesses
// still running from before), answers Errc::accessPending at once. Once
// the budget is spent, every access answers Errc::accessTimedOut at once.
// The thread of an access that timed out stays blocked in the kernel until
// the call returns or the process exits.
//
// For stopping, not for hot paths: each access allocates and starts a
// thread. Not thread-safe.
#pragma once

#include "lib/backend/attribute_io.hpp"

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <system_error>

namespace cppc::backend
{

class BoundedIo final : public AttributeIo
{
  public:
    using Clock = std::chrono::steady_clock;

    // Accesses through `inner` (which must outlive every access started,
    // hence the real sysfs in production), each given at most `perAccess`
    // and all together at most `budget` from now. `hung`: directories whose
    // files are not to be touched.
    BoundedIo(const AttributeIo& inner, std::chrono::milliseconds perAccess,
              std::chrono::milliseconds budget,
              const std::set<std::filesystem::path>& hung = {});

    std::error_code read(const std::filesystem::path& file,
                         std::string& out) const override;
    std::error_code write(const std::filesystem::path& file,
                          std::string_view value) const noexcept override;

    // The directories found hung, with those given.
    const std::set<std::filesystem::path>& hung() const noexcept
    {
        return hung_;
    }

  private:
    // Runs `access` on a thread of its own within the deadline.
    template <class Access>
    std::error_code bounded(const std::filesystem::path& file,
                            Access&& access) const;

    const AttributeIo& inner_;
    std::chrono::milliseconds perAccess_;
    Clock::time_point end_;
    mutable std::set<std::filesystem::path> hung_;
};

} // namespace cppc::backend
