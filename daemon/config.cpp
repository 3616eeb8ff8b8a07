// SPDX-License-Identifier: Apache-2.0
#include "daemon/config.hpp"

#include "daemon/yaml_reader.hpp"
#include "lib/sim/layouts.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <utility>

namespace cppcgov::daemon
{

namespace
{

using policies::Floor;
using policies::PolicyKind;

constexpr double minHeadroom = 1.0;
constexpr double maxHeadroom = 4.0;
constexpr std::uint32_t maxRateLimitUs = 1'000'000;
constexpr std::uint32_t minSamplingPeriodUs = 100;
constexpr std::uint32_t maxSamplingPeriodUs = 1'000'000;
constexpr std::uint32_t maxHandlesLimit = 4096;
constexpr std::uint32_t maxCallsPerSecondLimit = 100'000;
// A user's handles over all its connections: at most the daemon's total.
constexpr std::uint32_t maxUserHandlesLimit = 16384;
constexpr std::size_t maxGroupNameLength = 31;

constexpr std::array<std::string_view, 8> topKeys = {
    "policy", "schedutil",   "sampling", "clients",
    "users",  "permissions", "backend",  "overrides",
};
constexpr std::array<std::string_view, 5> schedutilKeys = {
    "headroom", "rate_limit_up_us", "rate_limit_down_us", "floor", "boost",
};
constexpr std::array<std::string_view, 2> samplingKeys = {
    "period_us", "source"};
constexpr std::array<SamplingSource, 3> samplingSources = {
    SamplingSource::automatic,
    SamplingSource::bpf,
    SamplingSource::procfs,
};
constexpr std::array<std::string_view, 2> clientKeys = {
    "max_handles",
    "max_calls_per_second",
};
constexpr std::array<std::string_view, 1> permissionKeys = {"group"};
constexpr std::array<std::string_view, 3> backendKeys = {
    "type", "simulator", "access"};
constexpr std::array<std::string_view, 2> accessKeys = {
    "threads", "deadline_us"};
constexpr std::array<std::string_view, 2> simulatorKeys = {"layout", "cpus"};
constexpr std::uint32_t maxAccessThreads = 1024;
constexpr std::uint32_t maxAccessDeadlineUs = 10'000'000;
constexpr std::array<std::string_view, 4> overrideKeys = {
    "cpus",
    "domain",
    "policy",
    "schedutil",
};

constexpr std::array<PolicyKind, 3> policyKinds = {
    PolicyKind::schedutil,
    PolicyKind::performance,
    PolicyKind::powersave,
};
constexpr std::array<Floor, 2> floors = {Floor::lowestNonlinear, Floor::lowest};
constexpr std::array<std::string_view, 2> floorNames = {
    "lowest_nonlinear", "lowest"};
constexpr std::array<BackendKind, 4> backendKinds = {
    BackendKind::automatic,
    BackendKind::simulator,
    BackendKind::kernel,
    BackendKind::registers,
};

// What one file sets.
struct Layer
{
    std::optional<PolicyKind> kind;
    SchedutilOverrides schedutil;
    std::optional<std::uint32_t> samplingPeriodUs;
    std::optional<SamplingSource> samplingSource;
    std::optional<std::uint32_t> maxHandles;
    std::optional<std::uint32_t> maxCallsPerSecond;
    std::optional<std::uint32_t> maxHandlesPerUser;
    std::optional<std::uint32_t> maxCallsPerSecondPerUser;
    std::optional<std::string> group;
    std::optional<BackendKind> backendType;
    std::optional<std::string> simulatorLayout;
    std::optional<std::uint32_t> simulatorCpus;
    // Where the two simulator values are, for the check that needs both
    // (which may come from different files).
    Position simulatorLayoutAt;
    Position simulatorCpusAt;
    std::optional<std::uint32_t> accessThreads;
    std::optional<std::uint32_t> accessDeadlineUs;
    std::vector<Override> overrides;
};

// The schema's checks of one file's YAML, into a Layer: which keys exist
// and what their values mean; the reader does the rest.
class SchemaParser
{
  public:
    SchemaParser(const YamlReader& reader, std::size_t overridesBefore) :
        reader_(reader), overridesBefore_(overridesBefore)
    {}

    void parse(const Item& top, Layer& layer) const
    {
        for (const Entry& e : reader_.entries(top, topKeys))
        {
            parseTopEntry(e, layer);
        }
    }

  private:
    PolicyKind kindValue(const Item& item) const
    {
        std::array<std::string_view, policyKinds.size()> names{};
        std::transform(policyKinds.begin(), policyKinds.end(), names.begin(),
                       policies::policyName);
        return policyKinds.at(reader_.choiceValue(item, names));
    }

    BackendKind backendValue(const Item& item) const
    {
        std::array<std::string_view, backendKinds.size()> names{};
        std::transform(backendKinds.begin(), backendKinds.end(), names.begin(),
                       backendKindName);
        return backendKinds.at(reader_.choiceValue(item, names));
    }

    SamplingSource sourceValue(const Item& item) const
    {
        std::array<std::string_view, samplingSources.size()> names{};
        std::transform(samplingSources.begin(), samplingSources.end(),
                       names.begin(), samplingSourceName);
        return samplingSources.at(reader_.choiceValue(item, names));
    }

    std::string layoutValue(const Item& item) const
    {
        std::array<std::string_view, cppc::sim::layoutTable.size()> names{};
        std::transform(cppc::sim::layoutTable.begin(),
                       cppc::sim::layoutTable.end(), names.begin(),
                       [](const cppc::sim::LayoutName& l) { return l.name; });
        return std::string(names.at(reader_.choiceValue(item, names)));
    }

    void parseBackend(const Item& item, Layer& layer) const
    {
        for (const Entry& e : reader_.section(item, backendKeys))
        {
            if (e.key == "type")
            {
                layer.backendType = backendValue(e.value);
                continue;
            }
            if (e.key == "access")
            {
                for (const Entry& a : reader_.section(e.value, accessKeys))
                {
                    if (a.key == "threads")
                    {
                        layer.accessThreads =
                            reader_.unsignedValue(a.value, 0, maxAccessThreads);
                    }
                    else
                    {
                        layer.accessDeadlineUs = reader_.unsignedValue(
                            a.value, 0, maxAccessDeadlineUs);
                    }
                }
                continue;
            }
            for (const Entry& s : reader_.section(e.value, simulatorKeys))
            {
                const Position at = positionOf(s.value.mark);
                if (s.key == "layout")
                {
                    layer.simulatorLayout = layoutValue(s.value);
                    layer.simulatorLayoutAt = at;
                }
                else
                {
                    layer.simulatorCpus = reader_.unsignedValue(
                        s.value, 0, cppc::sim::maxLayoutCpus);
                    layer.simulatorCpusAt = at;
                }
            }
        }
    }

    // A group name as useradd/groupadd accept it by default.
    std::string groupValue(const Item& item) const
    {
        const std::string& text = reader_.scalar(item, "a group name");
        const auto valid = [](char c, bool first) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   c == '_' || (!first && ((c >= '0' && c <= '9') || c == '-'));
        };
        bool ok = !text.empty() && text.size() <= maxGroupNameLength;
        for (std::size_t i = 0; ok && i < text.size(); ++i)
        {
            ok = valid(text[i], i == 0);
        }
        if (!ok)
        {
            reader_.fail(item.mark, item.path,
                         quote(text) + " is not a group name (1 to " +
                             std::to_string(maxGroupNameLength) +
                             " letters, digits, '_' or '-', not starting "
                             "with a digit or '-')");
        }
        return text;
    }

    void parseSchedutil(const Item& item, SchedutilOverrides& out) const
    {
        for (const Entry& e : reader_.section(item, schedutilKeys))
        {
            if (e.key == "headroom")
            {
                out.headroom =
                    reader_.numberValue(e.value, minHeadroom, maxHeadroom);
            }
            else if (e.key == "rate_limit_up_us")
            {
                out.rateLimitUpUs =
                    reader_.unsignedValue(e.value, 0, maxRateLimitUs);
            }
            else if (e.key == "rate_limit_down_us")
            {
                out.rateLimitDownUs =
                    reader_.unsignedValue(e.value, 0, maxRateLimitUs);
            }
            else if (e.key == "floor")
            {
                out.floor = floors.at(reader_.choiceValue(e.value, floorNames));
            }
            else
            {
                out.boost = reader_.boolValue(e.value);
            }
        }
    }

    Override parseOverride(const Item& item) const
    {
        reader_.checkTag(item);
        if (!item.node.IsMap())
        {
            reader_.fail(item.mark, item.path,
                         "expected a map with 'cpus' or 'domain', got " +
                             describe(item.node));
        }
        Override out;
        bool byCpus = false;
        bool byDomain = false;
        for (const Entry& e : reader_.entries(item, overrideKeys))
        {
            if (e.key == "cpus")
            {
                out.selector = reader_.cpuListValue(e.value);
                byCpus = true;
            }
            else if (e.key == "domain")
            {
                out.selector =
                    PsdDomain{reader_.unsignedValue(e.value, 0, UINT32_MAX)};
                byDomain = true;
            }
            else if (e.key == "policy")
            {
                out.kind = kindValue(e.value);
            }
            else
            {
                parseSchedutil(e.value, out.schedutil);
            }
        }
        if (byCpus && byDomain)
        {
            reader_.fail(item.mark, item.path,
                         "sets both 'cpus' and 'domain'; an override selects "
                         "by one of them");
        }
        if (!byCpus && !byDomain)
        {
            reader_.fail(item.mark, item.path,
                         "selects no CPUs; set 'cpus' or 'domain'");
        }
        out.origin = reader_.file() + ":" +
                     std::to_string(positionOf(item.mark).line);
        return out;
    }

    void parseOverrides(const Item& item, std::vector<Override>& out) const
    {
        reader_.forEachElement(item, "a list of overrides",
                               [&](const Item& entry) {
            if (overridesBefore_ + out.size() >= maxOverrides)
            {
                reader_.fail(entry.mark, entry.path,
                             "more than " + std::to_string(maxOverrides) +
                                 " overrides");
            }
            out.push_back(parseOverride(entry));
        });
    }

    // A whole number from 1 to `max` into `field`.
    void limit(const Entry& e, std::uint32_t max,
               std::optional<std::uint32_t>& field) const
    {
        field = reader_.unsignedValue(e.value, 1, max);
    }

    void parseTopEntry(const Entry& e, Layer& layer) const
    {
        if (e.key == "policy")
        {
            layer.kind = kindValue(e.value);
        }
        else if (e.key == "schedutil")
        {
            parseSchedutil(e.value, layer.schedutil);
        }
        else if (e.key == "sampling")
        {
            for (const Entry& s : reader_.section(e.value, samplingKeys))
            {
                if (s.key == "source")
                {
                    layer.samplingSource = sourceValue(s.value);
                    continue;
                }
                layer.samplingPeriodUs = reader_.unsignedValue(
                    s.value, minSamplingPeriodUs, maxSamplingPeriodUs);
            }
        }
        else if (e.key == "clients" || e.key == "users")
        {
            const bool perUser = e.key == "users";
            for (const Entry& c : reader_.section(e.value, clientKeys))
            {
                if (c.key == "max_handles")
                {
                    limit(c, perUser ? maxUserHandlesLimit : maxHandlesLimit,
                          perUser ? layer.maxHandlesPerUser : layer.maxHandles);
                }
                else
                {
                    limit(c, maxCallsPerSecondLimit,
                          perUser ? layer.maxCallsPerSecondPerUser
                                  : layer.maxCallsPerSecond);
                }
            }
        }
        else if (e.key == "permissions")
        {
            for (const Entry& p : reader_.section(e.value, permissionKeys))
            {
                layer.group = groupValue(p.value);
            }
        }
        else if (e.key == "backend")
        {
            parseBackend(e.value, layer);
        }
        else
        {
            parseOverrides(e.value, layer.overrides);
        }
    }

    const YamlReader& reader_;
    std::size_t overridesBefore_;
};

Layer parseLayer(std::string_view text, const std::string& file,
                 std::size_t overridesBefore)
{
    Layer layer;
    readYaml(text, file, [&](const YamlReader& reader, const Item& top) {
        SchemaParser(reader, overridesBefore).parse(top, layer);
    });
    return layer;
}

void apply(const SchedutilOverrides& from, policies::SchedutilConfig& to)
{
    to.headroom = from.headroom.value_or(to.headroom);
    to.rateLimitUpUs = from.rateLimitUpUs.value_or(to.rateLimitUpUs);
    to.rateLimitDownUs = from.rateLimitDownUs.value_or(to.rateLimitDownUs);
    to.floor = from.floor.value_or(to.floor);
    to.boost = from.boost.value_or(to.boost);
}

void apply(Layer&& layer, GovernorConfig& config)
{
    config.defaults.kind = layer.kind.value_or(config.defaults.kind);
    apply(layer.schedutil, config.defaults.schedutil);
    config.samplingPeriodUs =
        layer.samplingPeriodUs.value_or(config.samplingPeriodUs);
    config.samplingSource =
        layer.samplingSource.value_or(config.samplingSource);
    config.clients.maxHandles =
        layer.maxHandles.value_or(config.clients.maxHandles);
    config.clients.maxCallsPerSecond =
        layer.maxCallsPerSecond.value_or(config.clients.maxCallsPerSecond);
    config.clients.maxHandlesPerUser =
        layer.maxHandlesPerUser.value_or(config.clients.maxHandlesPerUser);
    config.clients.maxCallsPerSecondPerUser =
        layer.maxCallsPerSecondPerUser.value_or(
            config.clients.maxCallsPerSecondPerUser);
    if (layer.group)
    {
        config.group = std::move(*layer.group);
    }
    config.backend.type = layer.backendType.value_or(config.backend.type);
    if (layer.simulatorLayout)
    {
        config.backend.simulator.layout = std::move(*layer.simulatorLayout);
    }
    config.backend.simulator.cpus =
        layer.simulatorCpus.value_or(config.backend.simulator.cpus);
    config.backend.access.threads =
        layer.accessThreads.value_or(config.backend.access.threads);
    config.backend.access.deadlineUs =
        layer.accessDeadlineUs.value_or(config.backend.access.deadlineUs);
    std::move(layer.overrides.begin(), layer.overrides.end(),
              std::back_inserter(config.overrides));
}

std::string scalableLayouts()
{
    std::string out;
    for (const cppc::sim::LayoutName& l : cppc::sim::layoutTable)
    {
        if (l.scalable)
        {
            out += (out.empty() ? "" : ", ") + std::string(l.name);
        }
    }
    return out;
}

// A CPU count for a layout that cannot be scaled is refused where the
// file that makes the combination sets it: at its cpus if it sets them,
// else at its layout (the count then came from an earlier file). `config`
// is what the files before this one gave.
void checkSimulator(const Layer& layer, const GovernorConfig& config,
                    const std::string& file)
{
    const SimulatorConfig& before = config.backend.simulator;
    const std::string layout = layer.simulatorLayout.value_or(before.layout);
    const std::uint32_t cpus = layer.simulatorCpus.value_or(before.cpus);
    if (cpus == 0 || cppc::sim::layoutScales(layout) ||
        (!layer.simulatorCpus && !layer.simulatorLayout))
    {
        return;
    }
    const std::string scale = "; the layouts that scale: " + scalableLayouts();
    const std::string fixed = "layout " + quote(layout) +
                              " has a fixed number of CPUs and cannot have ";
    if (layer.simulatorCpus)
    {
        throw ConfigError(
            file, layer.simulatorCpusAt.line, layer.simulatorCpusAt.column,
            "backend.simulator.cpus", fixed + std::to_string(cpus) + scale);
    }
    throw ConfigError(file, layer.simulatorLayoutAt.line,
                      layer.simulatorLayoutAt.column,
                      "backend.simulator.layout",
                      fixed + "the " + std::to_string(cpus) +
                          " that backend.simulator.cpus sets" + scale);
}

// Checks what needs several keys together, then applies one file's layer.
void addLayer(Layer&& layer, GovernorConfig& config, const std::string& file)
{
    checkSimulator(layer, config, file);
    apply(std::move(layer), config);
}

// The drop-ins in `dir`, in the order they apply.
std::vector<std::filesystem::path> dropIns(const std::filesystem::path& dir)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(dir, ec);
    if (status.type() == fs::file_type::not_found)
    {
        return {};
    }
    if (ec || !fs::is_directory(status))
    {
        throw ConfigError(dir.string(), 0, 0, "",
                          ec ? "cannot read: " + ec.message()
                             : std::string("not a directory"));
    }
    std::vector<fs::path> files;
    fs::directory_iterator it(dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec))
    {
        const fs::path& path = it->path();
        const std::string name = path.filename().string();
        if (path.extension() == ".yaml" && !name.starts_with('.'))
        {
            files.push_back(path);
        }
    }
    if (ec)
    {
        throw ConfigError(dir.string(), 0, 0, "",
                          "cannot read: " + ec.message());
    }
    std::sort(files.begin(), files.end(),
              [](const fs::path& a, const fs::path& b) {
        return a.filename().string() < b.filename().string();
    });
    return files;
}

bool selects(const Selector& selector, std::uint32_t cpu,
             std::optional<std::uint32_t> domain)
{
    if (const auto* cpus = std::get_if<CpuSet>(&selector))
    {
        return cpu < cppc::maxCpus && (*cpus)[cpu];
    }
    return domain && std::get<PsdDomain>(selector).number == *domain;
}

} // namespace

std::string_view samplingSourceName(SamplingSource source) noexcept
{
    switch (source)
    {
        case SamplingSource::automatic:
            return "auto";
        case SamplingSource::bpf:
            return "bpf";
        case SamplingSource::procfs:
            return "procfs";
    }
    return "auto";
}

std::string_view backendKindName(BackendKind kind) noexcept
{
    switch (kind)
    {
        case BackendKind::automatic:
            return "auto";
        case BackendKind::simulator:
            return "simulator";
        case BackendKind::kernel:
            return "kernel";
        case BackendKind::registers:
            return "registers";
    }
    return "unknown";
}

GovernorConfig parseConfig(std::string_view yamlText,
                           const std::string& fileName)
{
    GovernorConfig config;
    addLayer(parseLayer(yamlText, fileName, 0), config, fileName);
    config.sources.push_back(fileName);
    return config;
}

namespace
{

void addFile(GovernorConfig& config, const std::filesystem::path& path)
{
    const std::string name = path.string();
    addLayer(parseLayer(readConfigFile(path, name), name,
                        config.overrides.size()),
             config, name);
    config.sources.push_back(name);
}

} // namespace

GovernorConfig loadConfig(const std::filesystem::path& mainFile,
                          const std::filesystem::path& dropInDir)
{
    GovernorConfig config;
    addFile(config, mainFile);
    for (const std::filesystem::path& path : dropIns(dropInDir))
    {
        addFile(config, path);
    }
    return config;
}

PolicySettings settingsFor(const GovernorConfig& config, std::uint32_t cpu,
                           std::optional<std::uint32_t> domain)
{
    PolicySettings settings = config.defaults;
    for (const Override& o : config.overrides)
    {
        if (selects(o.selector, cpu, domain))
        {
            settings.kind = o.kind.value_or(settings.kind);
            apply(o.schedutil, settings.schedutil);
        }
    }
    return settings;
}

ReloadResult tryReload(const GovernorConfig& current,
                       const std::filesystem::path& mainFile,
                       const std::filesystem::path& dropInDir)
{
    try
    {
        return {loadConfig(mainFile, dropInDir), {}};
    }
    catch (const ConfigError& e)
    {
        return {current, e.what()};
    }
    catch (const std::exception& e)
    {
        return {current, std::string("unexpected error: ") + e.what()};
    }
}

} // namespace cppcgov::daemon
