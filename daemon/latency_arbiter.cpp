// SPDX-License-Identifier: Apache-2.0
#include "latency_arbiter.hpp"

#include "lib/backend/state_file.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"

#include <algorithm>
#include <new>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

using cppc::Errc;
using cppc::backend::AttributeIo;
using cppc::backend::parseDecimal;
using cppc::backend::RestoreResult;
using cppc::backend::RestoreStep;

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

// "cpu3": how the state file and a restore result name a CPU.
std::string cpuRecord(unsigned cpu)
{
    return "cpu" + std::to_string(cpu);
}

// Writes every saved value back under `root`, carrying on past failures.
RestoreResult putBack(const std::filesystem::path& root,
                      const std::map<unsigned, std::string>& saved,
                      const AttributeIo& io)
{
    RestoreResult result;
    for (const auto& [cpu, value] : saved)
    {
        const std::filesystem::path file = latencyAttribute(root, cpu);
        if (const std::error_code ec = io.write(file, savedText(value)))
        {
            result.fail(RestoreStep::writeSaved, file, ec, cpuRecord(cpu),
                        value);
        }
    }
    return result;
}

// The latency state file, for the restores of state_file.hpp.
struct LatencyCodec
{
    using Records = std::map<unsigned, std::string>;
    static Records parse(std::string_view text,
                         const std::filesystem::path& file)
    {
        return parseLatencyState(text, file);
    }
    static std::string format(const Records& records)
    {
        return formatLatencyState(records);
    }
    static std::string name(const Records::value_type& record)
    {
        return cpuRecord(record.first);
    }
};

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
        out += cpuRecord(cpu) + ' ' + value + '\n';
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
                               std::filesystem::path stateFile,
                               const AttributeIo& io) :
    root_(std::move(root)),
    stateFile_(std::move(stateFile)), io_(io)
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
        std::string value;
        if (const std::error_code ec =
                io_.read(latencyAttribute(root_, cpu), value))
        {
            if (ec == std::errc::no_such_file_or_directory)
            {
                return Errc::noSuchCpu;
            }
            return ec;
        }
        if (!validLatencyValue(value))
        {
            return Errc::malformedAttribute;
        }
        found.emplace(cpu, std::move(value));
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
        if (const std::error_code ec =
                io_.write(latencyAttribute(root_, cpu), latencyText(latencyUs)))
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
    for (std::size_t i = changed.size(); i-- > 0;)
    {
        const auto& [cpu, before] = changed[i];
        const std::string text =
            before ? latencyText(*before) : savedText(saved_.at(cpu));
        if (io_.write(latencyAttribute(root_, cpu), text))
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
                io_.write(file, savedText(saved_.at(cpu)));
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
        if (const std::error_code ec = io_.write(file, latencyText(*next)))
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

RestoreResult LatencyArbiter::restore() noexcept
{
    if (stopped_)
    {
        return {};
    }
    stopped_ = true;
    RestoreResult result;
    try
    {
        requests_.clear();
        result = putBack(root_, saved_, io_);
        cppc::backend::keepWhatIsLeft<LatencyCodec>(stateFile_, saved_, result);
        std::erase_if(written_, [this](const auto& entry) {
            return !saved_.contains(entry.first);
        });
    }
    catch (...)
    {
        // Only allocation can fail here; the restore went as far as it
        // could, and the state file holds at least what is not back.
    }
    return result;
}

RestoreResult LatencyArbiter::restoreFromFile(
    const std::filesystem::path& root, const std::filesystem::path& stateFile,
    const AttributeIo& io)
{
    return cppc::backend::restoreFromStateFile<LatencyCodec>(
        stateFile, "the resume latencies",
        [&](const LatencyCodec::Records& saved) {
        return putBack(root, saved, io);
        });
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
