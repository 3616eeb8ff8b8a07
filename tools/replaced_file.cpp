// SPDX-License-Identifier: Apache-2.0
#include "replaced_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace cppcgov::tools
{

namespace
{

[[noreturn]] void fail(const std::string& path, int error)
{
    throw std::runtime_error(
        "cannot write '" + path + "': " + std::strerror(error));
}

} // namespace

ReplacedFile::ReplacedFile(std::string path) : path_(std::move(path))
{
    struct stat st
    {};
    if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    {
        fail(path_, EISDIR);
    }
    std::vector<char> name(path_.begin(), path_.end());
    const std::string suffix = ".XXXXXX";
    name.insert(name.end(), suffix.begin(), suffix.end());
    name.push_back('\0');
    const int fd = ::mkstemp(name.data());
    if (fd < 0)
    {
        fail(path_, errno);
    }
    temporary_ = name.data();
    const mode_t mask = ::umask(0);
    ::umask(mask);
    const int rc = ::fchmod(fd, 0666 & ~mask);
    const int error = errno;
    ::close(fd);
    if (rc != 0)
    {
        ::unlink(temporary_.c_str());
        fail(path_, error);
    }
    out_.open(temporary_, std::ios::binary | std::ios::trunc);
    if (!out_)
    {
        ::unlink(temporary_.c_str());
        fail(path_, errno);
    }
}

ReplacedFile::~ReplacedFile()
{
    if (!committed_)
    {
        out_.close();
        ::unlink(temporary_.c_str());
    }
}

void ReplacedFile::write(const std::string& content)
{
    out_.write(content.data(), static_cast<std::streamsize>(content.size()));
}

void ReplacedFile::commit()
{
    out_.flush();
    const bool written = out_.good();
    const int error = errno;
    out_.close();
    if (!written || out_.fail())
    {
        fail(path_, error != 0 ? error : EIO);
    }
    if (::rename(temporary_.c_str(), path_.c_str()) != 0)
    {
        fail(path_, errno);
    }
    committed_ = true;
}

} // namespace cppcgov::tools
