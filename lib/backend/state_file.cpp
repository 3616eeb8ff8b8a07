// SPDX-License-Identifier: Apache-2.0
#include "state_file.hpp"

#include "lib/backend/fd.hpp"
#include "lib/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <new>
#include <utility>

namespace cppc::backend
{
namespace
{

constexpr std::size_t maxStateBytes = std::size_t{1} << 20;

std::error_code errnoCode(int err) noexcept
{
    return {err, std::system_category()};
}

std::error_code writeTemporary(const std::filesystem::path& tmp,
                               std::string_view text) noexcept
{
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd)
    {
        return errnoCode(errno);
    }
    std::size_t done = 0;
    while (done < text.size())
    {
        const ssize_t n =
            ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n <= 0)
        {
            return errnoCode(n < 0 ? errno : EIO);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0)
    {
        return errnoCode(errno);
    }
    if (const int err = fd.close())
    {
        return errnoCode(err);
    }
    return {};
}

} // namespace

std::error_code writeStateFile(const std::filesystem::path& file,
                               std::string_view text) noexcept
{
    try
    {
        std::filesystem::path tmp = file;
        tmp += ".tmp";
        if (const std::error_code ec = writeTemporary(tmp, text))
        {
            ::unlink(tmp.c_str());
            return ec;
        }
        if (::rename(tmp.c_str(), file.c_str()) != 0)
        {
            const int err = errno;
            ::unlink(tmp.c_str());
            return errnoCode(err);
        }
        const std::filesystem::path parent =
            file.has_parent_path() ? file.parent_path() : ".";
        Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!dir || ::fsync(dir.get()) != 0)
        {
            return errnoCode(errno);
        }
        return {};
    }
    catch (const std::bad_alloc&)
    {
        return std::make_error_code(std::errc::not_enough_memory);
    }
}

std::optional<std::string> readStateFile(const std::filesystem::path& file)
{
    const auto fail = [&file](std::error_code ec) {
        throw std::system_error(ec, "'" + file.string() + "'");
    };
    Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd && errno == ENOENT)
    {
        return std::nullopt;
    }
    if (!fd)
    {
        fail(errnoCode(errno));
    }
    std::string text;
    std::array<char, 4096> buf{};
    while (true)
    {
        const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0)
        {
            fail(errnoCode(errno));
        }
        if (n == 0)
        {
            break;
        }
        text.append(buf.data(), static_cast<std::size_t>(n));
        if (text.size() > maxStateBytes)
        {
            fail(errnoCode(EFBIG));
        }
    }
    return text;
}

void requireNoStateFile(const std::filesystem::path& file,
                        std::string_view what)
{
    std::error_code ec;
    if (std::filesystem::symlink_status(file, ec).type() !=
        std::filesystem::file_type::not_found)
    {
        throw std::system_error(
            std::make_error_code(std::errc::file_exists),
            "'" + file.string() + "': a previous run's " + std::string(what) +
                " were not undone; restore them from this file first");
    }
}

void badStateFile(const std::filesystem::path& file, std::string_view why)
{
    throw std::system_error(make_error_code(Errc::malformedAttribute),
                            "'" + file.string() + "': " + std::string(why));
}

std::vector<std::string_view> stateLines(std::string_view text,
                                         std::string_view header,
                                         const std::filesystem::path& file)
{
    if (text.empty() || text.back() != '\n')
    {
        badStateFile(file, "does not end with a newline");
    }
    std::vector<std::string_view> lines;
    std::size_t pos = 0;
    while (pos < text.size())
    {
        const std::size_t eol = text.find('\n', pos);
        lines.push_back(text.substr(pos, eol - pos));
        pos = eol + 1;
    }
    if (lines.front() != header)
    {
        badStateFile(file,
                     "the first line is not '" + std::string(header) + "'");
    }
    lines.erase(lines.begin());
    return lines;
}

void settleStateFile(const std::filesystem::path& file,
                     std::string_view leftText, std::string leftRecords,
                     RestoreResult& result)
{
    if (leftText.empty())
    {
        std::error_code ec;
        if (!std::filesystem::remove(file, ec) && ec)
        {
            result.fail(RestoreStep::removeStateFile, file, ec);
        }
        return;
    }
    if (const std::error_code ec = writeStateFile(file, leftText))
    {
        result.fail(RestoreStep::keepStateFile, file, ec, {},
                    std::move(leftRecords));
        return;
    }
    result.note(RestoreStep::keepStateFile, file, std::move(leftRecords));
}

} // namespace cppc::backend
