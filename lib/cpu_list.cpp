// SPDX-License-Identifier: Apache-2.0
#include "cpu_list.hpp"

#include "lib/text.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace cppc
{
namespace
{

constexpr std::size_t npos = std::string_view::npos;

CpuListError problemAt(CpuListProblem problem, std::size_t begin,
                       std::size_t end) noexcept
{
    return {problem, begin, end - begin};
}

// The CPU number text[begin, end) names, into `cpu`.
CpuListError readCpu(std::string_view text, std::size_t begin, std::size_t end,
                     std::uint32_t& cpu) noexcept
{
    if (begin == end)
    {
        return problemAt(CpuListProblem::missingNumber, begin, end);
    }
    const char* last = text.data() + end;
    const auto [ptr, ec] = std::from_chars(text.data() + begin, last, cpu);
    if (ptr != last)
    {
        return problemAt(CpuListProblem::notANumber, begin, end);
    }
    if (ec != std::errc{} || cpu >= maxCpus)
    {
        return problemAt(CpuListProblem::aboveLimit, begin, end);
    }
    return {};
}

// Adds the CPUs of the item text[begin, end), spaces already trimmed.
CpuListError readItem(std::string_view text, std::size_t begin, std::size_t end,
                      CpuSet& cpus) noexcept
{
    const std::size_t found = text.substr(begin, end - begin).find('-');
    const std::size_t dash = found == npos ? end : begin + found;
    std::uint32_t low = 0;
    if (const CpuListError e = readCpu(text, begin, dash, low))
    {
        return e;
    }
    std::uint32_t high = low;
    if (dash != end)
    {
        if (const CpuListError e = readCpu(text, dash + 1, end, high))
        {
            return e;
        }
    }
    if (high < low)
    {
        return problemAt(CpuListProblem::backwards, begin, end);
    }
    for (std::uint32_t cpu = low; cpu <= high; ++cpu)
    {
        cpus.set(cpu);
    }
    return {};
}

std::string quoted(std::string_view text)
{
    return "'" + printable(text) + "'";
}

std::string reason(const CpuListError& error, std::string_view text)
{
    const std::string_view part =
        text.substr(std::min(error.offset, text.size()), error.length);
    switch (error.problem)
    {
        case CpuListProblem::none:
            return "no error";
        case CpuListProblem::empty:
            return "the list is empty";
        case CpuListProblem::emptyItem:
            return "an empty item";
        case CpuListProblem::missingNumber:
            return "a CPU number is missing";
        case CpuListProblem::notANumber:
            return quoted(part) + " is not a CPU number";
        case CpuListProblem::aboveLimit:
            return "CPU " + printable(part) + " is above " +
                   std::to_string(maxCpus - 1) + ", the highest supported";
        case CpuListProblem::backwards:
            return "the range " + quoted(part) + " ends before it starts";
    }
    return "unknown problem";
}

} // namespace

CpuListResult parseCpuList(std::string_view text, CpuListSyntax syntax) noexcept
{
    const bool written = syntax == CpuListSyntax::written;
    CpuListResult out;
    if (text.empty() && !written)
    {
        return out;
    }
    if (written && text.find_first_not_of(' ') == npos)
    {
        out.error = problemAt(CpuListProblem::empty, 0, text.size());
        return out;
    }
    const std::string_view separators = written ? "," : ", ";
    for (std::size_t start = 0;;)
    {
        const std::size_t found = text.find_first_of(separators, start);
        const std::size_t stop = found == npos ? text.size() : found;
        std::size_t begin = start;
        std::size_t end = stop;
        while (written && begin < end && text[begin] == ' ')
        {
            ++begin;
        }
        while (written && end > begin && text[end - 1] == ' ')
        {
            --end;
        }
        out.error = begin == end
                        ? problemAt(CpuListProblem::emptyItem, start, stop)
                        : readItem(text, begin, end, out.cpus);
        if (out.error)
        {
            out.cpus.reset();
            return out;
        }
        if (found == npos)
        {
            return out;
        }
        start = found + 1;
    }
}

std::string describe(const CpuListError& error, std::string_view text)
{
    return "malformed CPU list " + quoted(text) + ": " + reason(error, text);
}

std::vector<std::uint32_t> cpuNumbers(const CpuSet& cpus)
{
    std::vector<std::uint32_t> out;
    out.reserve(cpus.count());
    for (std::uint32_t cpu = 0; cpu < maxCpus; ++cpu)
    {
        if (cpus[cpu])
        {
            out.push_back(cpu);
        }
    }
    return out;
}

std::string formatCpuList(const CpuSet& cpus)
{
    std::string out;
    for (std::uint32_t cpu = 0; cpu < maxCpus; ++cpu)
    {
        if (!cpus[cpu])
        {
            continue;
        }
        std::uint32_t last = cpu;
        while (last + 1 < maxCpus && cpus[last + 1])
        {
            ++last;
        }
        out += (out.empty() ? "" : ",") + std::to_string(cpu);
        if (last != cpu)
        {
            out += "-" + std::to_string(last);
        }
        cpu = last;
    }
    return out;
}

} // namespace cppc
