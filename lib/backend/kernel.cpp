// SPDX-License-Identifier: Apache-2.0
#include "kernel.hpp"

#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"
#include "state_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <limits>

namespace cppc::backend
{
namespace
{

constexpr std::string_view userspace = "userspace";
constexpr std::string_view stateHeader = "cppcgov-cpufreq-state 1";
constexpr std::size_t maxGovernorName = 15; // CPUFREQ_NAME_LEN - 1

std::filesystem::path cpuDir(const std::filesystem::path& root, unsigned cpu)
{
    return sysPath(root, "devices/system/cpu/cpu" + std::to_string(cpu));
}

std::filesystem::path policyDir(const std::filesystem::path& root,
                                std::string_view name)
{
    return sysPath(root, "devices/system/cpu/cpufreq/" + std::string(name));
}

// "policy12" -> 12.
std::optional<unsigned> policyNumber(std::string_view name) noexcept
{
    constexpr std::string_view prefix = "policy";
    if (name.substr(0, prefix.size()) != prefix)
    {
        return std::nullopt;
    }
    const auto n = parseDecimal(name.substr(prefix.size()));
    if (!n || *n > std::numeric_limits<unsigned>::max())
    {
        return std::nullopt;
    }
    return static_cast<unsigned>(*n);
}

bool validGovernor(std::string_view g) noexcept
{
    return !g.empty() && g.size() <= maxGovernorName &&
           std::all_of(g.begin(), g.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-';
           });
}

std::uint32_t readKhz(const std::filesystem::path& file)
{
    const std::uint64_t v = parseDecimal(readAttribute(file), file);
    if (v > std::numeric_limits<std::uint32_t>::max())
    {
        throw std::system_error(make_error_code(Errc::malformedAttribute),
                                "'" + file.string() + "' is above 32 bits");
    }
    return static_cast<std::uint32_t>(v);
}

// "1800000\n" into `buf`; returns the text.
std::string_view khzText(std::array<char, 16>& buf, std::uint32_t khz) noexcept
{
    auto [end,
          ec] = std::to_chars(buf.data(), buf.data() + buf.size() - 1, khz);
    (void)ec; // ten digits always fit
    *end++ = '\n';
    return {buf.data(), static_cast<std::size_t>(end - buf.data())};
}

// The kHz in `file`, read through `io`.
std::error_code readKhz(const AttributeIo& io,
                        const std::filesystem::path& file, std::uint32_t& khz)
{
    std::string text;
    if (const std::error_code ec = io.read(file, text))
    {
        return ec;
    }
    const auto v = parseDecimal(text);
    if (!v || *v > std::numeric_limits<std::uint32_t>::max())
    {
        return Errc::malformedAttribute;
    }
    khz = static_cast<std::uint32_t>(*v);
    return {};
}

// The cpufreq state file, for the restores of state_file.hpp.
struct PolicyCodec
{
    using Records = std::vector<PolicyState>;
    static Records parse(std::string_view text,
                         const std::filesystem::path& file)
    {
        return parseState(text, file);
    }
    static std::string format(const Records& records)
    {
        return formatState(records);
    }
    static const std::string& name(const PolicyState& p) noexcept
    {
        return p.name;
    }
};

std::size_t index(PolicyKnob knob) noexcept
{
    return static_cast<std::size_t>(knob);
}

// The knobs in the order they are written: the window and the preference
// the platform is to use before it is told to choose.
constexpr std::array<PolicyKnob, policyKnobs> writeOrder{
    PolicyKnob::activityWindow, PolicyKnob::epp, PolicyKnob::autoSelect};

std::string quotedPath(const std::filesystem::path& file)
{
    return "'" + file.string() + "'";
}

// The value of `knob` in `text` as the kernel shows it, or nothing.
std::optional<std::uint32_t> parseKnob(PolicyKnob knob,
                                       std::string_view text) noexcept
{
    const auto v = parseDecimal(text);
    if (!v || *v > knobMax(knob))
    {
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(*v);
}

// Probes `knob` of the policy in `dir`: its value, or (in `problem`) why
// the policy does not offer it. The value read is written back unchanged,
// so that a register the firmware refuses to take shows here.
std::optional<std::uint32_t> probeKnob(const AttributeIo& io,
                                       const std::filesystem::path& file,
                                       PolicyKnob knob, std::string& problem)
{
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
    {
        problem = quotedPath(file) + " does not exist";
        return std::nullopt;
    }
    std::string text;
    if (const std::error_code readError = io.read(file, text))
    {
        problem = quotedPath(file) +
                  ": the read failed: " + readError.message();
        return std::nullopt;
    }
    if (text.empty())
    {
        problem = quotedPath(file) + " is empty: the firmware has no such "
                                     "register";
        return std::nullopt;
    }
    const std::optional<std::uint32_t> value = parseKnob(knob, text);
    if (!value)
    {
        problem = quotedPath(file) + " holds '" + text + "', not a value of " +
                  std::to_string(knobMax(knob)) + " or less";
        return std::nullopt;
    }
    if (const std::error_code writeError =
            io.write(file, std::to_string(*value) + '\n'))
    {
        problem = quotedPath(file) + " refuses writes: " + writeError.message();
        return std::nullopt;
    }
    problem.clear();
    return value;
}

bool listed(std::string_view list, std::string_view word) noexcept
{
    std::size_t pos = 0;
    while (pos <= list.size())
    {
        const std::size_t end = std::min(list.find(' ', pos), list.size());
        if (list.substr(pos, end - pos) == word)
        {
            return true;
        }
        pos = end + 1;
    }
    return false;
}

} // namespace

std::string_view knobFile(PolicyKnob knob) noexcept
{
    switch (knob)
    {
        case PolicyKnob::autoSelect:
            return "auto_select";
        case PolicyKnob::activityWindow:
            return "auto_act_window";
        case PolicyKnob::epp:
            return "energy_performance_preference_val";
    }
    return {};
}

std::uint32_t knobMax(PolicyKnob knob) noexcept
{
    switch (knob)
    {
        case PolicyKnob::autoSelect:
            return 1;
        case PolicyKnob::activityWindow:
            return maxActivityWindowUs;
        case PolicyKnob::epp:
            return maxEpp;
    }
    return 0;
}

bool parseFeedbackCounters(std::string_view text, std::uint64_t& reference,
                           std::uint64_t& delivered) noexcept
{
    constexpr std::string_view ref = "ref:";
    constexpr std::string_view del = " del:";
    if (!text.empty() && text.back() == '\n')
    {
        text.remove_suffix(1);
    }
    if (text.substr(0, ref.size()) != ref)
    {
        return false;
    }
    const std::size_t mid = text.find(del, ref.size());
    if (mid == std::string_view::npos)
    {
        return false;
    }
    const auto r = parseDecimal(text.substr(ref.size(), mid - ref.size()));
    const auto d = parseDecimal(text.substr(mid + del.size()));
    if (!r || !d)
    {
        return false;
    }
    reference = *r;
    delivered = *d;
    return true;
}

KernelCounters::KernelCounters(const std::filesystem::path& root,
                               std::span<const unsigned> cpus)
{
    for (unsigned cpu : cpus)
    {
        if (cpu >= files_.size())
        {
            files_.resize(cpu + 1);
        }
        files_[cpu] =
            Fd::open(cpuDir(root, cpu) / "acpi_cppc/feedback_ctrs", O_RDONLY);
    }
}

std::error_code KernelCounters::read(unsigned cpu, CounterSample& out) noexcept
{
    if (cpu >= files_.size() || !files_[cpu])
    {
        return Errc::noSuchCpu;
    }
    // "ref:" + 20 digits + " del:" + 20 digits + "\n" is 50 bytes; a full
    // buffer means the text is longer than any valid one.
    std::array<char, 64> buf{};
    const auto start = std::chrono::steady_clock::now();
    ssize_t n = 0;
    do
    {
        n = ::pread(files_[cpu].get(), buf.data(), buf.size(), 0);
    } while (n < 0 && errno == EINTR);
    const auto end = std::chrono::steady_clock::now();
    if (n < 0)
    {
        return {errno, std::system_category()};
    }
    std::uint64_t reference = 0;
    std::uint64_t delivered = 0;
    if (static_cast<std::size_t>(n) == buf.size() ||
        !parseFeedbackCounters({buf.data(), static_cast<std::size_t>(n)},
                               reference, delivered))
    {
        return Errc::malformedAttribute;
    }
    out.reference = reference;
    out.delivered = delivered;
    out.at = start;
    out.readTime =
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start);
    return {};
}

std::string formatState(const std::vector<PolicyState>& saved)
{
    std::string out(stateHeader);
    out += '\n';
    for (const PolicyState& p : saved)
    {
        out += p.name + ' ' + p.governor + ' ' + std::to_string(p.minKhz) +
               ' ' + std::to_string(p.maxKhz) + ' ' +
               (p.setspeedKhz ? std::to_string(*p.setspeedKhz) : "-");
        for (const PolicyKnob knob : allPolicyKnobs)
        {
            if (const auto& v = p.knobs[index(knob)])
            {
                out += ' ' + std::string(knobFile(knob)) + '=' +
                       std::to_string(*v);
            }
        }
        out += '\n';
    }
    return out;
}

std::vector<PolicyState> parseState(std::string_view text,
                                    const std::filesystem::path& file)
{
    const auto bad = [&file](std::string_view why) { badStateFile(file, why); };
    std::vector<PolicyState> saved;
    for (const std::string_view line : stateLines(text, stateHeader, file))
    {
        std::vector<std::string_view> f;
        std::size_t at = 0;
        while (at <= line.size())
        {
            const std::size_t sp = std::min(line.find(' ', at), line.size());
            f.push_back(line.substr(at, sp - at));
            at = sp + 1;
        }
        const auto number =
            [&](std::string_view s) -> std::optional<std::uint32_t> {
            const auto v = parseDecimal(s);
            if (!v || *v > std::numeric_limits<std::uint32_t>::max())
            {
                return std::nullopt;
            }
            return static_cast<std::uint32_t>(*v);
        };
        const std::string notPolicy =
            "'" + std::string(line) + "' is not a policy line";
        if (f.size() < 5)
        {
            bad(notPolicy);
        }
        PolicyState p;
        const auto minKhz = number(f[2]);
        const auto maxKhz = number(f[3]);
        const bool isUserspace = f[1] == userspace;
        const auto speed = number(f[4]);
        if (!policyNumber(f[0]) || !validGovernor(f[1]) || !minKhz || !maxKhz ||
            (isUserspace ? !speed : f[4] != "-"))
        {
            bad(notPolicy);
        }
        for (std::size_t i = 5; i < f.size(); ++i)
        {
            const std::size_t eq = f[i].find('=');
            const std::string_view key = f[i].substr(0, eq);
            const auto knob = std::find_if(
                allPolicyKnobs.begin(), allPolicyKnobs.end(),
                [key](PolicyKnob k) { return knobFile(k) == key; });
            if (eq == std::string_view::npos || knob == allPolicyKnobs.end())
            {
                bad(notPolicy + ": '" + std::string(f[i]) +
                    "' is not a knob's value");
            }
            std::optional<std::uint32_t>& slot = p.knobs[index(*knob)];
            slot = slot ? std::nullopt : parseKnob(*knob, f[i].substr(eq + 1));
            if (!slot)
            {
                bad(notPolicy + ": '" + std::string(f[i]) +
                    "' is out of range or given twice");
            }
        }
        p.name = f[0];
        p.governor = f[1];
        p.minKhz = *minKhz;
        p.maxKhz = *maxKhz;
        if (isUserspace)
        {
            p.setspeedKhz = speed;
        }
        saved.push_back(std::move(p));
    }
    return saved;
}

RestoreResult restorePolicies(const std::filesystem::path& root,
                              const std::vector<PolicyState>& saved,
                              const AttributeIo& io)
{
    RestoreResult result;
    for (const PolicyState& p : saved)
    {
        const std::filesystem::path dir = policyDir(root, p.name);
        const auto write = [&](const char* name, const std::string& value) {
            const std::filesystem::path file = dir / name;
            if (const std::error_code ec = io.write(file, value + '\n'))
            {
                result.fail(RestoreStep::writeSaved, file, ec, p.name, value);
            }
        };
        const auto read = [&](const char* name) -> std::optional<std::string> {
            std::string value;
            if (const std::error_code ec = io.read(dir / name, value))
            {
                result.fail(RestoreStep::readCurrent, dir / name, ec, p.name,
                            {}, RestoreSeverity::warning);
                return std::nullopt;
            }
            return value;
        };
        const bool toUserspace = p.governor == userspace;
        const std::optional<std::string> governor = read("scaling_governor");
        if (toUserspace && governor != userspace)
        {
            write("scaling_governor", p.governor);
        }
        for (const PolicyKnob knob : writeOrder)
        {
            const std::optional<std::uint32_t>& value = p.knobs[index(knob)];
            if (!value)
            {
                continue;
            }
            const std::string name(knobFile(knob));
            const std::optional<std::string> current = read(name.c_str());
            if (!current || parseKnob(knob, *current) != value)
            {
                write(name.c_str(), std::to_string(*value));
            }
        }

        const std::string minText = std::to_string(p.minKhz);
        const std::string maxText = std::to_string(p.maxKhz);
        const std::optional<std::string> curMin = read("scaling_min_freq");
        const std::optional<std::string> curMax = read("scaling_max_freq");
        const auto curMaxKhz = curMax ? parseDecimal(*curMax) : std::nullopt;
        const bool maxFirst = curMaxKhz && p.minKhz > *curMaxKhz;
        if (maxFirst)
        {
            write("scaling_max_freq", maxText);
        }
        if (curMin != minText)
        {
            write("scaling_min_freq", minText);
        }
        if (!maxFirst && curMax != maxText)
        {
            write("scaling_max_freq", maxText);
        }

        if (toUserspace && p.setspeedKhz)
        {
            write("scaling_setspeed", std::to_string(*p.setspeedKhz));
        }
        if (!toUserspace && governor != p.governor)
        {
            write("scaling_governor", p.governor);
        }
    }
    return result;
}

KernelBackend::KernelBackend(std::filesystem::path root,
                             KernelBackendOptions options) :
    root_(std::move(root)),
    stateFile_(std::move(options.stateFile)),
    io_(options.io != nullptr ? *options.io : sysfsIo())
{
    if (!stateFile_.empty())
    {
        requireNoStateFile(stateFile_, "cpufreq changes");
    }
    discover(options.cpus);
    if (!stateFile_.empty())
    {
        if (const std::error_code ec =
                writeStateFile(stateFile_, formatState(saved_)))
        {
            throw std::system_error(ec, "'" + stateFile_.string() + "'");
        }
    }
    active_ = true;
    try
    {
        for (std::size_t i = 0; i < policies_.size(); ++i)
        {
            const std::filesystem::path file =
                policies_[i].dir / "scaling_governor";
            if (saved_[i].governor == userspace)
            {
                continue;
            }
            if (const std::error_code ec = io_.write(file, "userspace\n"))
            {
                throw std::system_error(ec, "'" + file.string() + "'");
            }
        }
    }
    catch (...)
    {
        (void)restore();
        throw;
    }
}

KernelBackend::~KernelBackend()
{
    (void)restore();
}

void KernelBackend::discover(const std::vector<unsigned>& cpus)
{
    const std::filesystem::path cpufreq =
        sysPath(root_, "devices/system/cpu/cpufreq");
    std::vector<std::pair<unsigned, std::filesystem::path>> found;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(cpufreq, ec))
    {
        if (auto n = policyNumber(entry.path().filename().string()))
        {
            found.emplace_back(*n, entry.path());
        }
    }
    if (ec)
    {
        throw std::system_error(ec, "'" + cpufreq.string() + "'");
    }
    std::sort(found.begin(), found.end());

    std::optional<std::optional<std::uint64_t>> dmi; // read when needed
    const std::optional<std::string> boost =
        readAttributeIfExists(cpufreq / "boost");
    for (const auto& [number, dir] : found)
    {
        // A policy whose CPUs are all offline is inactive: the kernel's
        // cpufreq core answers EBUSY to every one of its attributes. It is
        // not driven (read through io_, which tests can make answer so).
        std::string relatedText;
        if (const std::error_code readError =
                io_.read(dir / "related_cpus", relatedText))
        {
            if (readError == std::errc::device_or_resource_busy)
            {
                continue;
            }
            throw std::system_error(
                readError, "'" + (dir / "related_cpus").string() + "'");
        }
        const std::vector<unsigned> related =
            parseCpuList(relatedText, dir / "related_cpus");
        const std::vector<unsigned> affected = parseCpuList(
            readAttribute(dir / "affected_cpus"), dir / "affected_cpus");
        const bool wanted =
            cpus.empty()
                ? !affected.empty()
                : std::any_of(related.begin(), related.end(), [&](unsigned c) {
                      return std::find(cpus.begin(), cpus.end(), c) !=
                             cpus.end();
                  });
        if (!wanted)
        {
            continue;
        }
        if (affected.empty())
        {
            throw std::system_error(
                std::make_error_code(std::errc::no_such_device),
                "'" + (dir / "affected_cpus").string() +
                    "': every CPU of the policy is offline");
        }
        const std::string driver = readAttribute(dir / "scaling_driver");
        if (driver != "cppc_cpufreq")
        {
            throw std::system_error(
                std::make_error_code(std::errc::not_supported),
                "'" + (dir / "scaling_driver").string() + "' is '" + driver +
                    "', not cppc_cpufreq");
        }
        const std::filesystem::path available =
            dir / "scaling_available_governors";
        if (!listed(readAttribute(available), userspace))
        {
            // Most distributions build it as a module that nothing loads
            // (Debian's arm64 kernel among them).
            throw std::system_error(make_error_code(Errc::governorUnavailable),
                                    "'" + available.string() +
                                        "' (load it: modprobe "
                                        "cpufreq_userspace)");
        }

        const PerfCaps caps = readPerfCaps(root_, number);
        const std::uint32_t cpuinfoMax = readKhz(dir / "cpuinfo_max_freq");
        std::uint64_t fallbackMaxKhz = 0;
        if (caps.lowestFreqMhz == 0 || caps.nominalFreqMhz == 0)
        {
            if (!dmi)
            {
                dmi = dmiMaxKhz(root_);
            }
            fallbackMaxKhz =
                dmi->has_value()
                    ? **dmi
                    : maxKhzFromCpuinfo(caps, cpuinfoMax, boost == "1");
        }
        PolicyState state;
        state.name = dir.filename().string();
        state.governor = readAttribute(dir / "scaling_governor");
        state.minKhz = readKhz(dir / "scaling_min_freq");
        state.maxKhz = readKhz(dir / "scaling_max_freq");
        if (!validGovernor(state.governor))
        {
            throw std::system_error(make_error_code(Errc::malformedAttribute),
                                    "'" + (dir / "scaling_governor").string() +
                                        "' holds '" + state.governor + "'");
        }
        if (state.governor == userspace)
        {
            state.setspeedKhz = readKhz(dir / "scaling_setspeed");
        }
        std::array<std::filesystem::path, policyKnobs> knobPath;
        std::array<std::string, policyKnobs> knobProblem;
        for (const PolicyKnob knob : allPolicyKnobs)
        {
            const std::size_t i = index(knob);
            knobPath[i] = dir / knobFile(knob);
            state.knobs[i] = probeKnob(io_, knobPath[i], knob, knobProblem[i]);
        }

        try
        {
            policies_.push_back(KernelPolicy{
                .name = state.name,
                .cpu = number,
                .relatedCpus = related,
                .affectedCpus = affected,
                .caps = caps,
                .scale = FreqScale(caps, fallbackMaxKhz),
                .cpuinfoMinKhz = readKhz(dir / "cpuinfo_min_freq"),
                .cpuinfoMaxKhz = cpuinfoMax,
                .minKhz = state.minKhz,
                .maxKhz = state.maxKhz,
                .dir = dir,
                .setspeed = dir / "scaling_setspeed",
                .minFreq = dir / "scaling_min_freq",
                .maxFreq = dir / "scaling_max_freq",
                .knobPath = std::move(knobPath),
                .knobProblem = std::move(knobProblem),
            });
        }
        catch (const std::invalid_argument& e)
        {
            throw std::system_error(make_error_code(Errc::malformedAttribute),
                                    "'" + cpuDir(root_, number).string() +
                                        "/acpi_cppc': " + e.what());
        }
        saved_.push_back(std::move(state));
        const int index = static_cast<int>(policies_.size() - 1);
        for (unsigned c : related)
        {
            if (c >= policyIndex_.size())
            {
                policyIndex_.resize(c + 1, -1);
            }
            policyIndex_[c] = index;
        }
    }
    for (unsigned c : cpus)
    {
        if (c >= policyIndex_.size() || policyIndex_[c] < 0)
        {
            throw std::system_error(
                std::make_error_code(std::errc::no_such_device),
                "'" + cpufreq.string() + "': no active policy covers CPU " +
                    std::to_string(c) +
                    " (a policy whose CPUs are all offline is inactive)");
        }
    }
    if (policies_.empty())
    {
        throw std::system_error(
            std::make_error_code(std::errc::no_such_device),
            "'" + cpufreq.string() + "': no active cpufreq policy");
    }
}

const KernelPolicy* KernelBackend::policyOf(unsigned cpu) const noexcept
{
    if (cpu >= policyIndex_.size() || policyIndex_[cpu] < 0)
    {
        return nullptr;
    }
    return &policies_[static_cast<std::size_t>(policyIndex_[cpu])];
}

const KernelPolicy* KernelBackend::writablePolicy(unsigned cpu,
                                                  KernelWrite& w) const noexcept
{
    if (!active_)
    {
        w.error = Errc::backendStopped;
        return nullptr;
    }
    const KernelPolicy* p = policyOf(cpu);
    if (p == nullptr)
    {
        w.error = Errc::noSuchCpu;
    }
    return p;
}

KernelWrite KernelBackend::setPerf(unsigned cpu, std::uint32_t perf) noexcept
{
    KernelWrite w;
    const KernelPolicy* p = writablePolicy(cpu, w);
    if (p == nullptr)
    {
        return w;
    }
    w.file = &p->setspeed;
    w.cpus = p->affectedCpus;
    if (perf > p->caps.highestPerf)
    {
        w.error = Errc::valueOutOfRange;
        return w;
    }
    w.khz = std::clamp(p->scale.requestKhz(perf), p->minKhz,
                       std::max(p->minKhz, p->maxKhz));
    w.perf = p->scale.khzToPerf(w.khz);
    std::array<char, 16> buf{};
    w.error = io_.write(p->setspeed, khzText(buf, w.khz));
    return w;
}

KernelWrite KernelBackend::setLimits(unsigned cpu, std::uint32_t minPerf,
                                     std::uint32_t maxPerf)
{
    KernelWrite w;
    if (writablePolicy(cpu, w) == nullptr)
    {
        return w;
    }
    // Its limits as last read are kept in it.
    KernelPolicy& p = policies_[static_cast<std::size_t>(policyIndex_[cpu])];
    w.cpus = p.affectedCpus;
    if (minPerf > maxPerf || maxPerf > p.caps.highestPerf)
    {
        w.error = Errc::valueOutOfRange;
        return w;
    }
    const std::uint32_t minKhz = p.scale.requestKhz(minPerf);
    const std::uint32_t maxKhz = p.scale.requestKhz(maxPerf);
    // Widen first, as restorePolicies does: minimum <= maximum after each.
    std::array<std::pair<const std::filesystem::path*, std::uint32_t>, 2> order{
        {{&p.minFreq, minKhz}, {&p.maxFreq, maxKhz}}};
    if (minKhz > p.maxKhz)
    {
        std::swap(order[0], order[1]);
    }
    for (const auto& [file, khz] : order)
    {
        std::array<char, 16> buf{};
        w.file = file;
        if ((w.error = io_.write(*file, khzText(buf, khz))))
        {
            return w;
        }
    }
    // The kernel clamps the limits (to cpuinfo_min_freq and
    // cpuinfo_max_freq, and to other requests): keep what is in force.
    for (auto [file, khz] :
         {std::pair{&p.minFreq, &p.minKhz}, std::pair{&p.maxFreq, &p.maxKhz}})
    {
        w.file = file;
        if ((w.error = readKhz(io_, *file, *khz)))
        {
            return w;
        }
    }
    w.file = nullptr;
    w.khz = p.maxKhz;
    w.perf = p.scale.khzToPerf(p.maxKhz);
    return w;
}

KernelWrite KernelBackend::setKnobs(unsigned cpu, const KnobValues& wanted,
                                    KnobValues& inForce) noexcept
{
    KernelWrite w;
    const KernelPolicy* p = writablePolicy(cpu, w);
    if (p == nullptr)
    {
        return w;
    }
    w.cpus = p->affectedCpus;
    for (const PolicyKnob knob : allPolicyKnobs)
    {
        const auto& v = wanted[index(knob)];
        if (v && *v > knobMax(knob))
        {
            w.file = &p->knobPath[index(knob)];
            w.error = Errc::valueOutOfRange;
            return w;
        }
    }
    for (const PolicyKnob knob : writeOrder)
    {
        const std::size_t i = index(knob);
        if (!wanted[i] || !p->offers(knob) || wanted[i] == inForce[i])
        {
            continue;
        }
        std::array<char, 16> buf{};
        if (const std::error_code ec =
                io_.write(p->knobPath[i], khzText(buf, *wanted[i])))
        {
            if (!w.error)
            {
                w.error = ec;
                w.file = &p->knobPath[i];
            }
            continue;
        }
        inForce[i] = wanted[i];
    }
    return w;
}

bool KernelBackend::offers(PolicyKnob knob) const noexcept
{
    return std::all_of(policies_.begin(), policies_.end(),
                       [knob](const KernelPolicy& p) {
        return p.offers(knob);
    });
}

std::string KernelBackend::knobsSummary() const
{
    std::string offered;
    std::string missing;
    for (const PolicyKnob knob : allPolicyKnobs)
    {
        const auto p = std::find_if(policies_.begin(), policies_.end(),
                                    [knob](const KernelPolicy& q) {
            return !q.offers(knob);
        });
        if (p == policies_.end())
        {
            offered += (offered.empty() ? "" : ", ") +
                       std::string(knobFile(knob));
        }
        else
        {
            missing += (missing.empty() ? "" : "; ") +
                       std::string(knobFile(knob)) + ": " +
                       p->knobProblem[index(knob)];
        }
    }
    return "CPPC controls offered: " + (offered.empty() ? "none" : offered) +
           (missing.empty() ? "" : "; not offered: " + missing);
}

RestoreResult KernelBackend::restore() noexcept
{
    return restore(io_);
}

RestoreResult KernelBackend::restore(const AttributeIo& io) noexcept
{
    if (!active_)
    {
        return {};
    }
    active_ = false;
    RestoreResult result;
    try
    {
        result = restorePolicies(root_, saved_, io);
        if (!stateFile_.empty())
        {
            keepWhatIsLeft<PolicyCodec>(stateFile_, saved_, result);
        }
        else
        {
            std::erase_if(saved_, [&result](const PolicyState& p) {
                return !result.isLeft(p.name);
            });
        }
    }
    catch (...)
    {
        // Only allocation can fail here; the restore went as far as it
        // could, and the state file holds at least what is not back.
    }
    return result;
}

RestoreResult KernelBackend::restoreFromFile(
    const std::filesystem::path& root, const std::filesystem::path& stateFile,
    const AttributeIo& io)
{
    return restoreFromStateFile<PolicyCodec>(
        stateFile, "the cpufreq settings",
        [&](const std::vector<PolicyState>& saved) {
        return restorePolicies(root, saved, io);
        });
}

} // namespace cppc::backend
