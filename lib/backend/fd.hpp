// SPDX-License-Identifier: Apache-2.0
// Fd: the one owner of a file descriptor. Move-only; closes what it owns
// exactly once, including when a new descriptor is moved over an open one.
#pragma once

#include <sys/types.h>

#include <filesystem>

namespace cppc::backend
{

class Fd
{
  public:
    // An Fd that owns nothing.
    Fd() noexcept = default;

    // Takes ownership of `fd` (-1 for none).
    explicit Fd(int fd) noexcept : fd_(fd) {}

    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;

    // Leaves `other` owning nothing.
    Fd(Fd&& other) noexcept : fd_(other.release()) {}

    // Closes what this Fd owned, then takes `other`'s descriptor. Moving an
    // Fd onto itself changes nothing.
    Fd& operator=(Fd&& other) noexcept
    {
        if (this != &other)
        {
            reset(other.release());
        }
        return *this;
    }

    ~Fd()
    {
        reset();
    }

    // Opens `path` with open(2) `flags` (O_CLOEXEC is added) and `mode`.
    // Throws std::system_error naming the path.
    [[nodiscard]] static Fd open(const std::filesystem::path& path, int flags,
                                 mode_t mode = 0);

    // The descriptor, or -1.
    int get() const noexcept
    {
        return fd_;
    }

    explicit operator bool() const noexcept
    {
        return fd_ >= 0;
    }

    // Gives up ownership without closing; returns the descriptor.
    [[nodiscard]] int release() noexcept
    {
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }

    // Closes the owned descriptor (if any) and takes `fd`. close(2) is not
    // retried: on Linux the descriptor is gone even when close reports EINTR.
    void reset(int fd = -1) noexcept;

    // Closes the owned descriptor and reports close(2)'s error, for files
    // whose contents must be known to have been written. Owns nothing after.
    [[nodiscard]] int close() noexcept;

  private:
    int fd_ = -1;
};

} // namespace cppc::backend
