// SPDX-License-Identifier: Apache-2.0
#include "daemon/textfile_writer.hpp"

#include "daemon/log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>
#include <vector>

namespace cppcgov::daemon
{
namespace
{

std::string failed(const std::string& what, int error)
{
    return what + ": " + std::generic_category().message(error);
}

std::string quotedPath(const std::filesystem::path& path)
{
    return "'" + path.string() + "'";
}

} // namespace

std::string replaceFile(const std::filesystem::path& dir, std::string_view name,
                        std::string_view text)
{
    const std::filesystem::path target = dir / name;
    std::string tmpl = (dir / ("." + std::string(name) + ".XXXXXX")).string();
    std::vector<char> path(tmpl.begin(), tmpl.end());
    path.push_back('\0');
    const int fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0)
    {
        return failed("creating a file in " + quotedPath(dir), errno);
    }
    const std::string tmp(path.data());
    std::string problem;
    if (::fchmod(fd, 0644) != 0)
    {
        problem = failed("setting the mode of " + quotedPath(tmp), errno);
    }
    for (std::size_t done = 0; problem.empty() && done < text.size();)
    {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n <= 0)
        {
            problem = failed("writing " + quotedPath(tmp), n < 0 ? errno : EIO);
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 && problem.empty())
    {
        problem = failed("writing " + quotedPath(tmp), errno);
    }
    if (problem.empty() && ::rename(tmp.c_str(), target.c_str()) != 0)
    {
        problem = failed(
            "renaming " + quotedPath(tmp) + " to " + quotedPath(target), errno);
    }
    if (!problem.empty())
    {
        (void)::unlink(tmp.c_str());
    }
    return problem;
}

TextfileWriter::~TextfileWriter()
{
    stop();
}

void TextfileWriter::write(std::filesystem::path dir, std::string text)
{
    post(Job{std::move(dir), std::move(text)});
}

void TextfileWriter::remove()
{
    post(Job{});
}

void TextfileWriter::post(Job job)
{
    {
        const std::lock_guard lock(mutex_);
        if (stopping_)
        {
            return;
        }
        pending_ = std::move(job);
        if (!thread_.joinable())
        {
            thread_ = std::thread([this]() { loop(); });
        }
    }
    wake_.notify_one();
}

void TextfileWriter::stop()
{
    {
        const std::lock_guard lock(mutex_);
        if (stopping_)
        {
            return;
        }
        stopping_ = true;
        pending_.reset();
    }
    wake_.notify_one();
    if (thread_.joinable())
    {
        thread_.join();
    }
    removeWritten();
}

void TextfileWriter::loop()
{
    for (;;)
    {
        Job job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this]() { return stopping_ || pending_; });
            if (stopping_)
            {
                return;
            }
            job = std::move(*pending_);
            pending_.reset();
        }
        run(job);
    }
}

void TextfileWriter::run(const Job& job)
{
    if (!job.dir)
    {
        removeWritten();
        return;
    }
    if (written_ && *written_ != *job.dir)
    {
        removeWritten();
    }
    const std::string problem = replaceFile(*job.dir, textfileName, job.text);
    const std::filesystem::path file = *job.dir / textfileName;
    if (problem.empty())
    {
        written_ = *job.dir;
        if (!problem_.empty())
        {
            log::notice("metrics: writing " + quotedPath(file) + " again");
        }
    }
    else if (problem_.empty())
    {
        log::warning(
            "metrics: cannot write " + quotedPath(file) + ": " + problem +
            "; trying again at every interval (logged again when "
            "it works)");
    }
    problem_ = problem;
}

void TextfileWriter::removeWritten()
{
    if (!written_)
    {
        return;
    }
    const std::filesystem::path file = *written_ / textfileName;
    if (::unlink(file.c_str()) != 0 && errno != ENOENT)
    {
        log::warning("metrics: removing " + quotedPath(file) +
                     " failed: " + std::generic_category().message(errno));
    }
    written_.reset();
}

} // namespace cppcgov::daemon
