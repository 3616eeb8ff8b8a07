#include "latency_arbiter.hpp"

#include "lib/backend/fd.hpp"
#include "lib/backend/state_file.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

using cppc::Errc;
using cppc::backend::describe;
using cppc::backend::Fd;
using cppc::backend::parseDecimal;
using cppc::backend::readAttributeIfExists;
using cppc::backend::writeAttribute;

constexpr std::string_view stateHeader = "cppcgov-latency-state 1";
constexpr std::string_view noLatency = "n/a";
// The largest value the kernel accepts: S32_MAX is its "no constraint".
constexpr std::uint64_t maxKernelValue = 2147483646;
// The most a state file may hold: a CPU line is under 32 bytes.

// The text that puts a saved value back.
std::string savedText(const std::string& value)
{
    return value + '\n';
}

} // namespace

std::filesystem::path latencyAttribute(const std::filesystem::path& root,
                                       unsigned cpu)
{
    return cppc::backend::sysPath(
        root, "devices/system/cpu/cpu" + std::to_string(cpu) +
                  "/power/pm_qos_resume_latency_us");
}

std::string latencyText(std::uint32_t latencyUs)
{
    if (latencyUs == 0)
    {
        return std::string(noLatency) + '\n';
    }
    return std::to_string(latencyUs) + '\n';
}

bool validLatencyValue(std::string_view text) noexcept
{
    if (text == noLatency)
    {
        return true;
    }
    const auto v = parseDecimal(text);
    // One digit per character and no leading zeros: exactly what the
    // kernel prints, so that writing it back restores the same bytes.
    return v && *v <= maxKernelValue && (text.size() == 1 || text[0] != '0');
}

std::string formatLatencyState(const std::map<unsigned, std::string>& saved)
{
    std::string out(stateHeader);
    out += '\n';
    for (const auto& [cpu, value] : saved)
    {
        out += "cpu" + std::to_string(cpu) + ' ' + value + '\n';
    }
    return out;
}

std::map<unsigned, std::string> parseLatencyState(
    std::string_view text, const std::filesystem::path& file)
{
    const auto bad = [&file](std::string_view why) {
        cppc::backend::badStateFile(file, why);
    };
    std::map<unsigned, std::string> saved;
    for (const std::string_view line :
         cppc::backend::stateLines(text, stateHeader, file))
    {
        const std::size_t sp = line.find(' ');
        constexpr std::string_view prefix = "cpu";
        if (sp == std::string_view::npos || line.substr(0, 3) != prefix)
        {
            bad("bad line '" + std::string(line) + "'");
        }
        const auto cpu = parseDecimal(line.substr(3, sp - 3));
        const std::string_view value = line.substr(sp + 1);
        if (!cpu || *cpu >= cppc::maxCpus || !validLatencyValue(value))
        {
            bad("bad line '" + std::string(line) + "'");
        }
        if (!saved.emplace(static_cast<unsigned>(*cpu), std::string(value))
                 .second)
        {
            bad("cpu" + std::to_string(*cpu) + " appears twice");
        }
    }
    return saved;
}

LatencyArbiter::LatencyArbiter(std::filesystem::path root,
                               std::filesystem::path stateFile) :
    root_(std::move(root)),
    stateFile_(std::move(stateFile))
{
    cppc::backend::requireNoStateFile(stateFile_, "latency settings");
}

LatencyArbiter::~LatencyArbiter()
{
    (void)restore();
}

std::error_code LatencyArbiter::add(
    std::uint64_t id, std::span<const unsigned> cpus, std::uint32_t latencyUs)
{
    if (stopped_)
    {
        return Errc::backendStopped;
    }
    if (latencyUs > maxLatencyUs)
    {
        return Errc::valueOutOfRange;
    }
    if (cpus.empty())
    {
        return std::make_error_code(std::errc::invalid_argument);
    }
    if (requests_.contains(id))
    {
        return std::make_error_code(std::errc::file_exists);
    }
    Request request{{cpus.begin(), cpus.end()}, latencyUs};
    std::sort(request.cpus.begin(), request.cpus.end());
    request.cpus.erase(std::unique(request.cpus.begin(), request.cpus.end()),
                       request.cpus.end());
    if (request.cpus.back() >= cppc::maxCpus)
    {
        return Errc::noSuchCpu;
    }

    // Read what is there on the CPUs not owned yet; nothing is written
    // until every one of them is known to be restorable.
    std::map<unsigned, std::string> found;
    for (const unsigned cpu : request.cpus)
    {
        if (saved_.contains(cpu))
        {
            continue;
        }
        std::optional<std::string> value;
        try
        {
            value = readAttributeIfExists(latencyAttribute(root_, cpu));
        }
        catch (const std::system_error& e)
        {
            return e.code();
        }
        if (!value)
        {
            return Errc::noSuchCpu;
        }
        if (!validLatencyValue(*value))
        {
            return Errc::malformedAttribute;
        }
        found.emplace(cpu, std::move(*value));
    }
    if (!found.empty())
    {
        std::map<unsigned, std::string> all = saved_;
        all.insert(found.begin(), found.end());
        if (const std::error_code ec = cppc::backend::writeStateFile(
                stateFile_, formatLatencyState(all)))
        {
            return ec;
        }
        saved_ = std::move(all);
    }

    // Write the CPUs this request makes stricter, remembering what each
    // held so that a failure can put them back.
    std::vector<std::pair<unsigned, std::optional<std::uint32_t>>> changed;
    std::error_code failed;
    for (const unsigned cpu : request.cpus)
    {
        const auto w = written_.find(cpu);
        if (w != written_.end() && w->second <= latencyUs)
        {
            continue;
        }
        const std::optional<std::uint32_t> before =
            w == written_.end() ? std::nullopt
                                : std::optional<std::uint32_t>(w->second);
        if (const std::error_code ec = writeAttribute(
                latencyAttribute(root_, cpu), latencyText(latencyUs)))
        {
            failed = ec;
            break;
        }
        written_[cpu] = latencyUs;
        changed.emplace_back(cpu, before);
    }
    if (!failed)
    {
        requests_.emplace(id, std::move(request));
        return {};
    }

    // Undo: the CPUs written go back to what they held; those newly owned
    // and back to their saved value are given up again.
    for (auto it = changed.rbegin(); it != changed.rend(); ++it)
    {
        const auto& [cpu, before] = *it;
        const std::string text =
            before ? latencyText(*before) : savedText(saved_.at(cpu));
        if (writeAttribute(latencyAttribute(root_, cpu), text))
        {
            continue; // still owned: restore() tries again
        }
        if (before)
        {
            written_[cpu] = *before;
        }
        else
        {
            written_.erase(cpu);
        }
    }
    bool released = false;
    for (const auto& [cpu, value] : found)
    {
        if (!written_.contains(cpu))
        {
            saved_.erase(cpu);
            released = true;
        }
    }
    if (released)
    {
        (void)syncStateFile(); // a stale entry only restores a value again
    }
    return failed;
}

std::error_code LatencyArbiter::remove(std::uint64_t id)
{
    if (stopped_)
    {
        return Errc::backendStopped;
    }
    const auto it = requests_.find(id);
    if (it == requests_.end())
    {
        return std::make_error_code(std::errc::invalid_argument);
    }
    const std::vector<unsigned> cpus = std::move(it->second.cpus);
    requests_.erase(it);

    std::error_code first;
    bool released = false;
    for (const unsigned cpu : cpus)
    {
        const std::optional<std::uint32_t> next = effective(cpu);
        const std::filesystem::path file = latencyAttribute(root_, cpu);
        if (!next)
        {
            const std::error_code ec =
                writeAttribute(file, savedText(saved_.at(cpu)));
            if (!ec)
            {
                saved_.erase(cpu);
                written_.erase(cpu);
                released = true;
            }
            else if (!first)
            {
                first = ec;
            }
            continue;
        }
        const auto w = written_.find(cpu);
        if (w != written_.end() && w->second == *next)
        {
            continue;
        }
        if (const std::error_code ec = writeAttribute(file, latencyText(*next)))
        {
            if (!first)
            {
                first = ec;
            }
            continue;
        }
        written_[cpu] = *next;
    }
    if (released)
    {
        if (const std::error_code ec = syncStateFile(); ec && !first)
        {
            first = ec;
        }
    }
    return first;
}

std::optional<std::uint32_t> LatencyArbiter::effective(unsigned cpu) const
{
    std::optional<std::uint32_t> best;
    for (const auto& [id, request] : requests_)
    {
        if (std::binary_search(request.cpus.begin(), request.cpus.end(), cpu) &&
            (!best || request.latencyUs < *best))
        {
            best = request.latencyUs;
        }
    }
    return best;
}

std::vector<std::string> LatencyArbiter::restore() noexcept
{
    if (stopped_)
    {
        return {};
    }
    stopped_ = true;
    std::vector<std::string> errors;
    try
    {
        requests_.clear();
        for (const auto& [cpu, value] : saved_)
        {
            const std::filesystem::path file = latencyAttribute(root_, cpu);
            if (const std::error_code ec =
                    writeAttribute(file, savedText(value)))
            {
                errors.push_back(describe(file, ec));
            }
        }
        if (errors.empty())
        {
            saved_.clear();
            written_.clear();
            if (const std::error_code ec = syncStateFile())
            {
                errors.push_back(describe(stateFile_, ec));
            }
        }
    }
    catch (...)
    {
        // Only allocation can fail here; the restore went as far as it could.
    }
    return errors;
}

cppc::backend::RestoreReport LatencyArbiter::restoreFromFile(
    const std::filesystem::path& root, const std::filesystem::path& stateFile)
{
    cppc::backend::RestoreReport report;
    const std::optional<std::string> text =
        cppc::backend::readStateFile(stateFile);
    if (!text)
    {
        return report;
    }
    report.found = true;
    for (const auto& [cpu, value] : parseLatencyState(*text, stateFile))
    {
        const std::filesystem::path file = latencyAttribute(root, cpu);
        if (const std::error_code ec = writeAttribute(file, savedText(value)))
        {
            report.errors.push_back(describe(file, ec));
        }
    }
    std::error_code ec;
    if (!std::filesystem::remove(stateFile, ec) && ec)
    {
        report.errors.push_back(describe(stateFile, ec));
    }
    return report;
}

std::error_code LatencyArbiter::syncStateFile() noexcept
{
    if (!saved_.empty())
    {
        try
        {
            return cppc::backend::writeStateFile(stateFile_,
                                                 formatLatencyState(saved_));
        }
        catch (const std::bad_alloc&)
        {
            return std::make_error_code(std::errc::not_enough_memory);
        }
    }
    std::error_code ec;
    std::filesystem::remove(stateFile_, ec);
    return ec;
}

} // namespace cppcgov::daemon
