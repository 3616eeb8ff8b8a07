// SPDX-License-Identifier: Apache-2.0
#include "perf_caps.hpp"

#include "lib/backend/fd.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>

namespace cppc::backend
{
namespace
{

constexpr std::uint64_t khzPerMhz = 1000;
constexpr std::uint32_t u32Max = std::numeric_limits<std::uint32_t>::max();

std::filesystem::path cppcDir(const std::filesystem::path& root, unsigned cpu)
{
    return sysPath(root, "devices/system/cpu/cpu" + std::to_string(cpu) +
                             "/acpi_cppc");
}

std::uint32_t toU32(std::uint64_t value, const std::filesystem::path& file)
{
    if (value > u32Max)
    {
        throw std::system_error(
            make_error_code(Errc::malformedAttribute),
            "'" + file.string() + "' holds " + std::to_string(value) +
                ", more than 32 bits");
    }
    return static_cast<std::uint32_t>(value);
}

std::uint32_t required(const std::filesystem::path& dir, const char* name)
{
    const std::filesystem::path file = dir / name;
    const std::uint64_t v = parseDecimal(readAttribute(file), file);
    if (v == 0)
    {
        throw std::system_error(make_error_code(Errc::malformedAttribute),
                                "'" + file.string() +
                                    "' is 0; like cppc_cpufreq, a CPU "
                                    "without it is not used");
    }
    return toU32(v, file);
}

std::uint32_t optional(const std::filesystem::path& dir, const char* name)
{
    const std::filesystem::path file = dir / name;
    const auto text = readAttributeIfExists(file);
    return text ? toU32(parseDecimal(*text, file), file) : 0;
}

// The SMBIOS processor structure's Max Speed, if this raw entry is one the
// kernel's cppc_find_dmi_mhz would use.
std::optional<std::uint16_t> dmiMaxSpeed(const std::filesystem::path& raw)
{
    constexpr std::size_t minLength = 48;
    constexpr std::size_t maxSpeedOffset = 0x14;
    const int fd = ::open(raw.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
    {
        return std::nullopt;
    }
    Fd owner(fd);
    std::array<std::uint8_t, minLength> head{};
    std::size_t used = 0;
    while (used < head.size())
    {
        const ssize_t n = ::read(fd, head.data() + used, head.size() - used);
        if (n <= 0)
        {
            if (n < 0 && errno == EINTR)
            {
                continue;
            }
            break;
        }
        used += static_cast<std::size_t>(n);
    }
    if (used < minLength || head[0] != 4 || head[1] < minLength)
    {
        return std::optional<std::uint16_t>(0);
    }
    return static_cast<std::uint16_t>(
        head[maxSpeedOffset] | (head[maxSpeedOffset + 1] << 8));
}

} // namespace

PerfCaps readPerfCaps(const std::filesystem::path& root, unsigned cpu)
{
    const std::filesystem::path dir = cppcDir(root, cpu);
    PerfCaps c;
    c.highestPerf = required(dir, "highest_perf");
    c.nominalPerf = required(dir, "nominal_perf");
    c.lowestNonlinearPerf = required(dir, "lowest_nonlinear_perf");
    c.lowestPerf = required(dir, "lowest_perf");
    c.lowestFreqMhz = optional(dir, "lowest_freq");
    c.nominalFreqMhz = optional(dir, "nominal_freq");
    c.referencePerf = c.nominalPerf;
    c.referenceFromNominal = true;
    try
    {
        if (const std::uint32_t r = optional(dir, "reference_perf"))
        {
            c.referencePerf = r;
            c.referenceFromNominal = false;
        }
    }
    catch (const std::system_error& e)
    {
        // Unreadable (the kernel reads it with the counters, which can
        // fail): fall back. Text that is not a number is still an error.
        if (e.code().category() != std::system_category())
        {
            throw;
        }
    }
    return c;
}

std::optional<std::uint64_t> dmiMaxKhz(const std::filesystem::path& root)
{
    const std::filesystem::path dir = sysPath(root, "firmware/dmi/entries");
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec);
    if (ec)
    {
        return std::nullopt;
    }
    std::uint16_t mhz = 0;
    for (const auto& entry : it)
    {
        const std::string name = entry.path().filename().string();
        if (name.rfind("4-", 0) != 0)
        {
            continue;
        }
        const auto speed = dmiMaxSpeed(entry.path() / "raw");
        if (!speed)
        {
            return std::nullopt;
        }
        mhz = std::max(mhz, *speed);
    }
    return khzPerMhz * (mhz != 0 ? mhz : 1U);
}

std::uint64_t maxKhzFromCpuinfo(const PerfCaps& caps,
                                std::uint32_t cpuinfoMaxKhz, bool boost)
{
    if (boost || caps.highestPerf == caps.nominalPerf)
    {
        return cpuinfoMaxKhz;
    }
    // cpuinfoMaxKhz = floor(nominal * m / highest): the smallest such m is
    // ceil(cpuinfoMaxKhz * highest / nominal).
    const std::uint64_t h = caps.highestPerf;
    const std::uint64_t n = caps.nominalPerf;
    const std::uint64_t smallest = (cpuinfoMaxKhz * h + n - 1) / n;
    // The first whole MHz at or above it is the only candidate: a larger m
    // gives at least as large a result, and this one already reaches it.
    const std::uint64_t m = (smallest + khzPerMhz - 1) / khzPerMhz * khzPerMhz;
    return n * m / h == cpuinfoMaxKhz ? m : smallest;
}

FreqScale::FreqScale(const PerfCaps& caps, std::uint64_t fallbackMaxKhz) :
    caps_(caps), maxKhz_(fallbackMaxKhz),
    linear_(caps.lowestFreqMhz != 0 && caps.nominalFreqMhz != 0)
{
    if (linear_)
    {
        if (caps.nominalFreqMhz != caps.lowestFreqMhz &&
            (caps.nominalFreqMhz < caps.lowestFreqMhz ||
             caps.nominalPerf <= caps.lowestPerf))
        {
            throw std::invalid_argument(
                "nominal_freq " + std::to_string(caps.nominalFreqMhz) +
                " MHz and nominal_perf " + std::to_string(caps.nominalPerf) +
                " must lie above lowest_freq " +
                std::to_string(caps.lowestFreqMhz) + " MHz and lowest_perf " +
                std::to_string(caps.lowestPerf));
        }
        if (caps.nominalPerf == 0)
        {
            throw std::invalid_argument("nominal_perf is 0");
        }
    }
    else if (maxKhz_ == 0 || caps.highestPerf == 0)
    {
        throw std::invalid_argument(
            "without lowest_freq and nominal_freq the conversion needs a "
            "maximum frequency and highest_perf");
    }
}

namespace
{

// offset + value / div as the kernel's s64 arithmetic, clamped at 0 as the
// kernel does, and saturated where its unsigned int result would wrap.
std::uint32_t finish(std::int64_t offset, std::uint64_t quotient) noexcept
{
    constexpr auto s64Max = std::numeric_limits<std::int64_t>::max();
    if (quotient > static_cast<std::uint64_t>(s64Max))
    {
        return u32Max;
    }
    const std::int64_t r = offset + static_cast<std::int64_t>(quotient);
    if (r < 0)
    {
        return 0;
    }
    return r > std::int64_t{u32Max} ? u32Max : static_cast<std::uint32_t>(r);
}

} // namespace

std::uint32_t FreqScale::perfToKhz(std::uint32_t perf) const noexcept
{
    std::uint64_t mul = maxKhz_;
    std::uint64_t div = caps_.highestPerf;
    std::int64_t offset = 0;
    if (linear_)
    {
        const std::uint64_t nf = caps_.nominalFreqMhz;
        const std::uint64_t lf = caps_.lowestFreqMhz;
        const std::uint64_t np = caps_.nominalPerf;
        if (lf == nf)
        {
            mul = nf;
            div = np;
        }
        else
        {
            mul = nf - lf;
            div = np - caps_.lowestPerf;
        }
        mul *= khzPerMhz;
        offset = static_cast<std::int64_t>(nf * khzPerMhz) -
                 static_cast<std::int64_t>(np * mul / div);
    }
    return finish(offset, perf * mul / div);
}

std::uint32_t FreqScale::khzToPerf(std::uint32_t khz) const noexcept
{
    std::uint64_t mul = caps_.highestPerf;
    std::uint64_t div = maxKhz_;
    std::int64_t offset = 0;
    if (linear_)
    {
        const std::uint64_t nf = caps_.nominalFreqMhz;
        const std::uint64_t lf = caps_.lowestFreqMhz;
        const std::uint64_t np = caps_.nominalPerf;
        if (lf == nf)
        {
            mul = np;
            div = nf;
        }
        else
        {
            mul = np - caps_.lowestPerf;
            div = nf - lf;
        }
        // The offset is computed in MHz, then the divisor becomes kHz.
        offset = static_cast<std::int64_t>(np) -
                 static_cast<std::int64_t>(nf * mul / div);
        div *= khzPerMhz;
    }
    return finish(offset, khz * mul / div);
}

std::uint32_t FreqScale::khzForPerf(std::uint32_t perf) const noexcept
{
    if (khzToPerf(u32Max) < perf)
    {
        return u32Max;
    }
    std::uint32_t lo = 0; // khzToPerf(hi) >= perf; find the first such
    std::uint32_t hi = u32Max;
    while (lo < hi)
    {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        if (khzToPerf(mid) >= perf)
        {
            hi = mid;
        }
        else
        {
            lo = mid + 1;
        }
    }
    return lo;
}

std::uint32_t FreqScale::requestKhz(std::uint32_t perf) const noexcept
{
    const std::uint32_t khz = perfToKhz(perf);
    return khzToPerf(khz) == perf ? khz : khzForPerf(perf);
}

} // namespace cppc::backend
