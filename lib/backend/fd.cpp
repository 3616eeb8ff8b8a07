// SPDX-License-Identifier: Apache-2.0
#include "fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace cppc::backend
{

Fd Fd::open(const std::filesystem::path& path, int flags, mode_t mode)
{
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    if (fd < 0)
    {
        throw std::system_error(errno, std::system_category(),
                                "'" + path.string() + "'");
    }
    return Fd(fd);
}

void Fd::reset(int fd) noexcept
{
    if (fd_ >= 0 && fd_ != fd)
    {
        ::close(fd_);
    }
    fd_ = fd;
}

int Fd::close() noexcept
{
    if (fd_ < 0)
    {
        return 0;
    }
    const int rc = ::close(release());
    return rc == 0 ? 0 : errno;
}

} // namespace cppc::backend
