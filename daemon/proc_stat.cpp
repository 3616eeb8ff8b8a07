// SPDX-License-Identifier: Apache-2.0
#include "daemon/proc_stat.hpp"

#include "lib/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <limits>
#include <new>
#include <string>

namespace cppcgov::daemon
{
namespace
{

// Fields summed into the total: user nice system idle iowait irq softirq
// steal. guest and guest_nice follow and are already in user and nice.
constexpr std::size_t summedFields = 8;
constexpr std::size_t idleField = 3;
constexpr std::size_t iowaitField = 4;
constexpr std::size_t minFields = 4;

// The first buffer, and how much room is left over the file's size.
constexpr std::size_t initialBuffer = std::size_t{16} * 1024;
constexpr std::size_t headroomFactor = 2;

// __extension__ keeps -Wpedantic quiet about the 128-bit type.
__extension__ using Wide = unsigned __int128;

std::error_code malformed() noexcept
{
    return cppc::Errc::malformedAttribute;
}

// A whole decimal number filling `text`.
bool decimal(std::string_view text, std::uint64_t& value) noexcept
{
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    return !text.empty() && text[0] != '-' && text[0] != '+' &&
           ec == std::errc{} && ptr == end;
}

// The fields after "cpu" or "cpuN": one or more spaces, then numbers
// separated by spaces.
bool parseFields(std::string_view rest, CpuTimes& out) noexcept
{
    if (rest.empty() || rest[0] != ' ')
    {
        return false;
    }
    std::array<std::uint64_t, summedFields> fields{};
    std::size_t count = 0;
    std::size_t pos = 0;
    while (true)
    {
        pos = rest.find_first_not_of(' ', pos);
        if (pos == std::string_view::npos)
        {
            break;
        }
        const std::size_t space = std::min(rest.find(' ', pos), rest.size());
        std::uint64_t value = 0;
        if (!decimal(rest.substr(pos, space - pos), value))
        {
            return false;
        }
        if (count < fields.size())
        {
            fields[count] = value;
        }
        ++count;
        pos = space;
    }
    if (count < minFields)
    {
        return false;
    }
    std::uint64_t total = 0;
    for (const std::uint64_t f : fields)
    {
        if (__builtin_add_overflow(total, f, &total))
        {
            return false;
        }
    }
    out.total = total;
    out.busy = total - fields[idleField] - fields[iowaitField];
    out.present = true;
    return true;
}

} // namespace

std::error_code parseProcStat(std::string_view text, std::span<CpuTimes> out,
                              std::uint32_t& cpuCount) noexcept
{
    std::fill(out.begin(), out.end(), CpuTimes{});
    cpuCount = 0;
    constexpr std::string_view prefix = "cpu";
    if (text.empty() || text.back() != '\n' || !text.starts_with("cpu "))
    {
        return malformed();
    }
    bool sums = true;
    for (std::size_t pos = 0; pos < text.size();)
    {
        const std::size_t newline = text.find('\n', pos);
        std::string_view line = text.substr(pos, newline - pos);
        pos = newline + 1;
        if (!line.starts_with(prefix))
        {
            break;
        }
        line.remove_prefix(prefix.size());
        CpuTimes times;
        if (sums)
        {
            sums = false;
            if (!parseFields(line, times))
            {
                return malformed();
            }
            continue;
        }
        const std::size_t digits = line.find(' ');
        std::uint64_t cpu = 0;
        if (digits == std::string_view::npos ||
            !decimal(line.substr(0, digits), cpu) || cpu >= maxProcStatCpus ||
            !parseFields(line.substr(digits), times))
        {
            return malformed();
        }
        const auto n = static_cast<std::uint32_t>(cpu);
        if (n < out.size())
        {
            if (out[n].present)
            {
                return malformed();
            }
            out[n] = times;
        }
        cpuCount = std::max(cpuCount, n + 1);
    }
    return {};
}

ProcStatSampler::ProcStatSampler(const std::filesystem::path& root,
                                 std::uint32_t cpus) :
    path_(root / "proc/stat"),
    fd_(cppc::backend::Fd::open(path_, O_RDONLY)), buffer_(initialBuffer)
{
    // Sized from the first read: every CPU the file has, or `cpus`.
    if (const std::error_code ec = readTimes())
    {
        throw std::system_error(ec, "'" + path_.string() + "'");
    }
    const std::uint32_t n = cpus != 0 ? cpus : fileCpus_;
    current_.resize(n);
    previous_.resize(n);
    last_.resize(n);
    busyUs_.resize(n);
}

std::error_code ProcStatSampler::readTimes() noexcept
{
    while (true)
    {
        ssize_t n = 0;
        do
        {
            n = ::pread(fd_.get(), buffer_.data(), buffer_.size(), 0);
        } while (n < 0 && errno == EINTR);
        if (n < 0)
        {
            return {errno, std::system_category()};
        }
        const auto length = static_cast<std::size_t>(n);
        if (length < buffer_.size())
        {
            // Room to grow without a reallocation on every later read.
            if (buffer_.size() < headroomFactor * length)
            {
                try
                {
                    buffer_.resize(headroomFactor * length);
                }
                catch (const std::bad_alloc&)
                {
                    return std::make_error_code(std::errc::not_enough_memory);
                }
            }
            return parseProcStat({buffer_.data(), length}, current_, fileCpus_);
        }
        try
        {
            buffer_.resize(buffer_.size() * 2);
        }
        catch (const std::bad_alloc&)
        {
            return std::make_error_code(std::errc::not_enough_memory);
        }
    }
}

std::error_code ProcStatSampler::sample(std::span<std::uint16_t> out) noexcept
{
    std::fill(out.begin(), out.end(), std::uint16_t{0});
    std::fill(busyUs_.begin(), busyUs_.end(), std::uint64_t{0});
    if (out.size() != previous_.size())
    {
        return std::make_error_code(std::errc::invalid_argument);
    }
    if (const std::error_code ec = readTimes())
    {
        return ec;
    }
    for (std::size_t cpu = 0; cpu < out.size(); ++cpu)
    {
        const CpuTimes& now = current_[cpu];
        CpuTimes& start = previous_[cpu];
        if (!started_ || !now.present || !start.present ||
            now.total < start.total || now.busy < start.busy)
        {
            // A new window: the first read, offline, back online, or
            // counters that went backwards.
            start = now;
            last_[cpu] = 0;
            continue;
        }
        const std::uint64_t total = now.total - start.total;
        if (total == 0)
        {
            out[cpu] = last_[cpu];
            continue;
        }
        const std::uint64_t busy = std::min(now.busy - start.busy, total);
        // busy <= total and total > 0: the quotient fits busyScale.
        const auto fraction = static_cast<std::uint16_t>(
            (static_cast<Wide>(busy) * busyScale) / total);
        out[cpu] = fraction;
        last_[cpu] = fraction;
        if (__builtin_mul_overflow(busy, clockTickUs(), &busyUs_[cpu]))
        {
            busyUs_[cpu] = std::numeric_limits<std::uint64_t>::max();
        }
        start = now;
    }
    started_ = true;
    return {};
}

} // namespace cppcgov::daemon
