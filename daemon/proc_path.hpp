// SPDX-License-Identifier: Apache-2.0
// ProcPath: a relative path under a /proc directory, built without
// allocating ("<pid>/task/<tid>/stat" and the like), for openat() on a
// directory handle of /proc. Text beyond its 63 characters is cut off.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <system_error>

namespace cppcgov::daemon
{

class ProcPath
{
  public:
    ProcPath& add(std::string_view text) noexcept
    {
        const std::size_t n = std::min(text.size(), room());
        std::memcpy(text_.data() + size_, text.data(), n);
        size_ += n;
        text_[size_] = '\0';
        return *this;
    }

    ProcPath& add(pid_t number) noexcept
    {
        const auto [end, ec] = std::to_chars(
            text_.data() + size_, text_.data() + size_ + room(), number);
        if (ec == std::errc{})
        {
            size_ = static_cast<std::size_t>(end - text_.data());
        }
        text_[size_] = '\0';
        return *this;
    }

    const char* c_str() const noexcept
    {
        return text_.data();
    }

  private:
    std::size_t room() const noexcept
    {
        return text_.size() - 1 - size_;
    }

    std::array<char, 64> text_{};
    std::size_t size_ = 0;
};

} // namespace cppcgov::daemon
