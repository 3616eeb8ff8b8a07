// SPDX-License-Identifier: Apache-2.0
#include "sysfs.hpp"

#include "lib/backend/fd.hpp"
#include "lib/cpu_list.hpp"
#include "lib/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>

namespace cppc::backend
{
namespace
{

[[noreturn]] void malformed(const std::filesystem::path& file,
                            std::string_view text, std::string_view expected)
{
    throw std::system_error(
        make_error_code(Errc::malformedAttribute),
        "'" + file.string() + "' holds '" + std::string(text) + "', not " +
            std::string(expected));
}

// Reads the whole file into `out`; returns the errno or 0.
int readAll(const std::filesystem::path& file, std::string& out)
{
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
    {
        return errno;
    }
    Fd owner(fd);
    std::array<char, maxAttributeBytes + 1> buf{};
    std::size_t used = 0;
    while (used < buf.size())
    {
        const ssize_t n = ::read(fd, buf.data() + used, buf.size() - used);
        if (n < 0)
        {
            if (errno == EINTR)
            {
                continue;
            }
            return errno;
        }
        if (n == 0)
        {
            break;
        }
        used += static_cast<std::size_t>(n);
    }
    if (used > maxAttributeBytes)
    {
        malformed(file, "more than 4096 bytes", "a sysfs attribute");
    }
    out.assign(buf.data(), used);
    if (!out.empty() && out.back() == '\n')
    {
        out.pop_back();
    }
    return 0;
}

} // namespace

std::filesystem::path sysPath(const std::filesystem::path& root,
                              std::string_view relative)
{
    return root / "sys" / relative;
}

std::string readAttribute(const std::filesystem::path& file)
{
    std::string out;
    if (const int err = readAll(file, out))
    {
        throw std::system_error(err, std::system_category(),
                                "'" + file.string() + "'");
    }
    return out;
}

std::optional<std::string> readAttributeIfExists(
    const std::filesystem::path& file)
{
    std::string out;
    const int err = readAll(file, out);
    if (err == ENOENT)
    {
        return std::nullopt;
    }
    if (err != 0)
    {
        throw std::system_error(err, std::system_category(),
                                "'" + file.string() + "'");
    }
    return out;
}

std::error_code writeAttribute(const std::filesystem::path& file,
                               std::string_view value) noexcept
{
    const int fd = ::open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
    {
        return {errno, std::system_category()};
    }
    Fd owner(fd);
    ssize_t n = 0;
    do
    {
        n = ::write(fd, value.data(), value.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0)
    {
        return {errno, std::system_category()};
    }
    if (static_cast<std::size_t>(n) != value.size())
    {
        return std::make_error_code(std::errc::io_error);
    }
    if (const int err = owner.close())
    {
        return {err, std::system_category()};
    }
    return {};
}

void writeAttributeOrThrow(const std::filesystem::path& file,
                           std::string_view value)
{
    if (const std::error_code ec = writeAttribute(file, value))
    {
        throw std::system_error(ec, "'" + file.string() + "'");
    }
}

std::string describe(const std::filesystem::path& file, std::error_code ec)
{
    return "'" + file.string() + "': " + ec.message();
}

std::optional<std::uint64_t> parseDecimal(std::string_view text) noexcept
{
    std::uint64_t value = 0;
    if (text.empty() || text.front() < '0' || text.front() > '9')
    {
        return std::nullopt;
    }
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end)
    {
        return std::nullopt;
    }
    return value;
}

std::uint64_t parseDecimal(std::string_view text,
                           const std::filesystem::path& file)
{
    if (auto v = parseDecimal(text))
    {
        return *v;
    }
    malformed(file, text, "a decimal number");
}

std::vector<unsigned> parseCpuList(std::string_view text,
                                   const std::filesystem::path& file)
{
    const CpuListResult list = cppc::parseCpuList(text, CpuListSyntax::kernel);
    if (list.error)
    {
        throw std::system_error(
            make_error_code(Errc::malformedAttribute),
            "'" + file.string() + "': " + cppc::describe(list.error, text));
    }
    return cppc::cpuNumbers(list.cpus);
}

} // namespace cppc::backend
