// SPDX-License-Identifier: Apache-2.0
#include "daemon/config.hpp"

#include "daemon/yaml_reader.hpp"
#include "lib/sim/layouts.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>
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

constexpr std::array<std::string_view, 12> topKeys = {
    "policy",  "schedutil", "sampling", "clients", "users",      "permissions",
    "backend", "overrides", "metrics",  "sanity",  "autonomous", "tick",
};
constexpr std::array<std::string_view, 3> tickKeys = {
    "scheduling", "runtime_us", "fifo_priority"};
constexpr std::array<TickScheduling, 4> tickSchedulings = {
    TickScheduling::automatic,
    TickScheduling::deadline,
    TickScheduling::fifo,
    TickScheduling::other,
};
// SCHED_DEADLINE's smallest runtime is 1024 ns; the largest here is the
// longest sampling period (a runtime above the period is refused at start).
constexpr std::uint32_t minTickRuntimeUs = 2;
// Real-time priorities above this are for the kernel's and the
// administrator's own threads, not a governor's.
constexpr std::uint32_t maxTickFifoPriority = 49;
constexpr std::array<std::string_view, 4> autonomousKeys = {
    "energy_preference",
    "energy_preference_performance",
    "energy_preference_efficiency",
    "activity_window_us",
};
constexpr std::uint32_t maxEpp = 255;
constexpr std::array<std::string_view, 3> sanityKeys = {
    "follow_window_s", "tolerance", "stuck_readings"};
constexpr std::uint32_t maxFollowWindowS = 3600;
constexpr double minSanityTolerance = 0.01;
constexpr double maxSanityTolerance = 0.9;
constexpr std::uint32_t minStuckReadings = 2;
constexpr std::uint32_t maxStuckReadings = 100'000;
constexpr std::array<std::string_view, 7> schedutilKeys = {
    "headroom", "rate_limit_up_us", "rate_limit_down_us", "floor",
    "boost",    "burst_us",         "min_step_percent",
};
constexpr std::uint32_t maxMinStepPercent = 50;
constexpr std::array<std::string_view, 4> samplingKeys = {
    "period_us", "idle_period_us", "steady_period_us", "source"};
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
constexpr std::array<std::string_view, 3> simulatorKeys = {
    "layout", "cpus", "platform_limit"};
constexpr std::array<std::string_view, 2> metricsKeys = {
    "directory", "interval_s"};
constexpr std::uint32_t maxMetricsIntervalS = 86'400;
constexpr std::size_t maxMetricsDirectoryLength = 4095;
constexpr std::uint32_t maxAccessThreads = 1024;
constexpr std::uint32_t maxAccessDeadlineUs = 10'000'000;
constexpr std::array<std::string_view, 5> overrideKeys = {
    "cpus", "domain", "policy", "schedutil", "autonomous",
};

constexpr std::array<PolicyKind, 4> policyKinds = {
    PolicyKind::schedutil,
    PolicyKind::performance,
    PolicyKind::powersave,
    PolicyKind::autonomous,
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
    AutonomousOverrides autonomous;
    std::optional<std::uint32_t> samplingPeriodUs;
    std::optional<std::uint32_t> idlePeriodUs;
    std::optional<std::uint32_t> steadyPeriodUs;
    std::optional<SamplingSource> samplingSource;
    std::optional<TickScheduling> tickScheduling;
    std::optional<std::uint32_t> tickRuntimeUs;
    std::optional<std::uint32_t> tickFifoPriority;
    std::optional<std::uint32_t> maxHandles;
    std::optional<std::uint32_t> maxCallsPerSecond;
    std::optional<std::uint32_t> maxHandlesPerUser;
    std::optional<std::uint32_t> maxCallsPerSecondPerUser;
    std::optional<std::string> group;
    std::optional<BackendKind> backendType;
    std::optional<std::string> simulatorLayout;
    std::optional<std::uint32_t> simulatorCpus;
    std::optional<std::uint32_t> simulatorPlatformLimit;
    // Where the two simulator values are, for the check that needs both
    // (which may come from different files).
    Position simulatorLayoutAt;
    Position simulatorCpusAt;
    std::optional<std::uint32_t> accessThreads;
    std::optional<std::uint32_t> accessDeadlineUs;
    std::optional<std::string> metricsDirectory;
    std::optional<std::uint32_t> metricsIntervalS;
    std::optional<std::uint32_t> followWindowS;
    std::optional<double> sanityTolerance;
    std::optional<std::uint32_t> stuckReadings;
    std::vector<Override> overrides;
};

// The schema's checks of one file's YAML, into a Layer: which keys exist
// and what their values mean; the reader does the rest.
class SchemaParser
{
  public:
    // Every error found is added to `errors`, and the parse goes on with
    // the next key or list element: a bad key never hides another.
    SchemaParser(const YamlReader& reader, std::size_t overridesBefore,
                 std::vector<ConfigError>& errors) :
        reader_(reader),
        overridesBefore_(overridesBefore), errors_(errors)
    {}

    void parse(const Item& top, Layer& layer) const
    {
        eachKey(top, topKeys, [&](const Entry& e) { parseTopEntry(e, layer); });
    }

  private:
    // Runs `parse`, recording the ConfigError it throws, if any. Returns
    // whether it ran through.
    template <class Parse>
    bool guarded(const Parse& parse) const
    {
        try
        {
            parse();
            return true;
        }
        catch (const ConfigError& e)
        {
            errors_.push_back(e);
            return false;
        }
    }

    // Calls `each` with every entry of the map `item` whose key is right,
    // each on its own (guarded()); the wrong keys are recorded.
    template <class Each>
    void eachKey(const Item& item, std::span<const std::string_view> known,
                 const Each& each) const
    {
        for (const Entry& e : reader_.entries(item, known, errors_))
        {
            (void)guarded([&]() { each(e); });
        }
    }

    // eachKey() for a section: a map, or nothing.
    template <class Each>
    void eachEntry(const Item& item, std::span<const std::string_view> known,
                   const Each& each) const
    {
        for (const Entry& e : reader_.section(item, known, errors_))
        {
            (void)guarded([&]() { each(e); });
        }
    }

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

    void parseTick(const Item& item, Layer& layer) const
    {
        eachEntry(item, tickKeys, [&](const Entry& e) {
            if (e.key == "scheduling")
            {
                std::array<std::string_view, tickSchedulings.size()> names{};
                std::transform(tickSchedulings.begin(), tickSchedulings.end(),
                               names.begin(), tickSchedulingName);
                layer.tickScheduling =
                    tickSchedulings.at(reader_.choiceValue(e.value, names));
            }
            else if (e.key == "runtime_us")
            {
                const std::uint32_t us =
                    reader_.unsignedValue(e.value, 0, maxSamplingPeriodUs);
                if (us != 0 && us < minTickRuntimeUs)
                {
                    reader_.fail(e.value.mark, e.value.path,
                                 std::to_string(us) +
                                     " us is below SCHED_DEADLINE's "
                                     "smallest runtime: 0 (sized by the "
                                     "daemon) or " +
                                     std::to_string(minTickRuntimeUs) + " to " +
                                     std::to_string(maxSamplingPeriodUs));
                }
                layer.tickRuntimeUs = us;
            }
            else
            {
                layer.tickFifoPriority =
                    reader_.unsignedValue(e.value, 1, maxTickFifoPriority);
            }
        });
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
        eachEntry(item, backendKeys, [&](const Entry& e) {
            if (e.key == "type")
            {
                layer.backendType = backendValue(e.value);
                return;
            }
            if (e.key == "access")
            {
                eachEntry(e.value, accessKeys, [&](const Entry& a) {
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
                });
                return;
            }
            eachEntry(e.value, simulatorKeys, [&](const Entry& s) {
                const Position at = positionOf(s.value.mark);
                if (s.key == "layout")
                {
                    layer.simulatorLayout = layoutValue(s.value);
                    layer.simulatorLayoutAt = at;
                }
                else if (s.key == "platform_limit")
                {
                    layer.simulatorPlatformLimit = reader_.unsignedValue(
                        s.value, 0, std::numeric_limits<std::uint32_t>::max());
                }
                else
                {
                    layer.simulatorCpus = reader_.unsignedValue(
                        s.value, 0, cppc::sim::maxLayoutCpus);
                    layer.simulatorCpusAt = at;
                }
            });
        });
    }

    // An absolute path, one line.
    std::string directoryValue(const Item& item) const
    {
        const std::string& text = reader_.scalar(item, "a directory");
        if (text.empty() || text.front() != '/' ||
            text.size() > maxMetricsDirectoryLength ||
            text.find_first_of(std::string_view("\n\0", 2)) !=
                std::string::npos)
        {
            reader_.fail(item.mark, item.path,
                         quote(text) +
                             " is not an absolute path (one line starting "
                             "with '/', at most " +
                             std::to_string(maxMetricsDirectoryLength) +
                             " characters)");
        }
        return text;
    }

    void parseMetrics(const Item& item, Layer& layer) const
    {
        eachEntry(item, metricsKeys, [&](const Entry& e) {
            if (e.key == "directory")
            {
                layer.metricsDirectory = directoryValue(e.value);
            }
            else
            {
                layer.metricsIntervalS =
                    reader_.unsignedValue(e.value, 0, maxMetricsIntervalS);
            }
        });
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
        eachEntry(item, schedutilKeys, [&](const Entry& e) {
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
            else if (e.key == "burst_us")
            {
                out.burstUs = reader_.unsignedValue(e.value, 0, maxRateLimitUs);
            }
            else if (e.key == "min_step_percent")
            {
                out.minStepPercent =
                    reader_.unsignedValue(e.value, 0, maxMinStepPercent);
            }
            else
            {
                out.boost = reader_.boolValue(e.value);
            }
        });
    }

    void parseAutonomous(const Item& item, AutonomousOverrides& out) const
    {
        eachEntry(item, autonomousKeys, [&](const Entry& e) {
            if (e.key == "activity_window_us")
            {
                out.activityWindowUs =
                    reader_.unsignedValue(e.value, 0, maxActivityWindowUs);
                return;
            }
            const auto epp = static_cast<std::uint8_t>(
                reader_.unsignedValue(e.value, 0, maxEpp));
            if (e.key == "energy_preference")
            {
                out.energyPreference = epp;
            }
            else if (e.key == "energy_preference_performance")
            {
                out.energyPreferencePerformance = epp;
            }
            else
            {
                out.energyPreferenceEfficiency = epp;
            }
        });
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
        eachKey(item, overrideKeys, [&](const Entry& e) {
            // Set first: a bad CPU list still selects by CPUs.
            if (e.key == "cpus")
            {
                byCpus = true;
                out.selector = reader_.cpuListValue(e.value);
            }
            else if (e.key == "domain")
            {
                byDomain = true;
                out.selector =
                    PsdDomain{reader_.unsignedValue(e.value, 0, UINT32_MAX)};
            }
            else if (e.key == "policy")
            {
                out.kind = kindValue(e.value);
            }
            else if (e.key == "autonomous")
            {
                parseAutonomous(e.value, out.autonomous);
            }
            else
            {
                parseSchedutil(e.value, out.schedutil);
            }
        });
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
        bool tooMany = false;
        reader_.forEachElement(item, "a list of overrides",
                               [&](const Item& entry) {
            if (tooMany)
            {
                return;
            }
            // Each entry on its own; one with an error is left out.
            (void)guarded([&]() {
                if (overridesBefore_ + out.size() >= maxOverrides)
                {
                    tooMany = true;
                    reader_.fail(entry.mark, entry.path,
                                 "more than " + std::to_string(maxOverrides) +
                                     " overrides");
                }
                const std::size_t errorsBefore = errors_.size();
                Override o = parseOverride(entry);
                if (errors_.size() == errorsBefore)
                {
                    out.push_back(std::move(o));
                }
            });
        });
    }

    // A whole number from 1 to `max` into `field`.
    void limit(const Entry& e, std::uint32_t max,
               std::optional<std::uint32_t>& field) const
    {
        field = reader_.unsignedValue(e.value, 1, max);
    }

    void parseSanity(const Item& item, Layer& layer) const
    {
        eachEntry(item, sanityKeys, [&](const Entry& e) {
            if (e.key == "follow_window_s")
            {
                layer.followWindowS =
                    reader_.unsignedValue(e.value, 1, maxFollowWindowS);
            }
            else if (e.key == "tolerance")
            {
                layer.sanityTolerance = reader_.numberValue(
                    e.value, minSanityTolerance, maxSanityTolerance);
            }
            else
            {
                layer.stuckReadings = reader_.unsignedValue(
                    e.value, minStuckReadings, maxStuckReadings);
            }
        });
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
        else if (e.key == "autonomous")
        {
            parseAutonomous(e.value, layer.autonomous);
        }
        else if (e.key == "sampling")
        {
            eachEntry(e.value, samplingKeys, [&](const Entry& s) {
                if (s.key == "source")
                {
                    layer.samplingSource = sourceValue(s.value);
                    return;
                }
                if (s.key == "idle_period_us" || s.key == "steady_period_us")
                {
                    (s.key == "idle_period_us" ? layer.idlePeriodUs
                                               : layer.steadyPeriodUs) =
                        reader_.unsignedValue(s.value, 0, maxSamplingPeriodUs);
                    return;
                }
                layer.samplingPeriodUs = reader_.unsignedValue(
                    s.value, minSamplingPeriodUs, maxSamplingPeriodUs);
            });
        }
        else if (e.key == "clients" || e.key == "users")
        {
            const bool perUser = e.key == "users";
            eachEntry(e.value, clientKeys, [&](const Entry& c) {
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
            });
        }
        else if (e.key == "permissions")
        {
            eachEntry(e.value, permissionKeys, [&](const Entry& p) {
                layer.group = groupValue(p.value);
            });
        }
        else if (e.key == "backend")
        {
            parseBackend(e.value, layer);
        }
        else if (e.key == "metrics")
        {
            parseMetrics(e.value, layer);
        }
        else if (e.key == "sanity")
        {
            parseSanity(e.value, layer);
        }
        else if (e.key == "tick")
        {
            parseTick(e.value, layer);
        }
        else
        {
            parseOverrides(e.value, layer.overrides);
        }
    }

    const YamlReader& reader_;
    std::size_t overridesBefore_;
    std::vector<ConfigError>& errors_;
};

// One file's layer; every error in it is added to `errors` (the layer is
// then partial).
Layer parseLayer(std::string_view text, const std::string& file,
                 std::size_t overridesBefore, std::vector<ConfigError>& errors)
{
    Layer layer;
    const std::size_t before = errors.size();
    try
    {
        readYaml(text, file, [&](const YamlReader& reader, const Item& top) {
            SchemaParser(reader, overridesBefore, errors).parse(top, layer);
        });
    }
    catch (const ConfigError& e)
    {
        errors.push_back(e);
    }
    // In the order of their places in the file: a map's wrong keys are
    // found before its values are read.
    std::stable_sort(errors.begin() + static_cast<std::ptrdiff_t>(before),
                     errors.end(),
                     [](const ConfigError& a, const ConfigError& b) {
        return std::pair(a.line(), a.column()) <
               std::pair(b.line(), b.column());
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
    to.burstUs = from.burstUs.value_or(to.burstUs);
    to.minStepPercent = from.minStepPercent.value_or(to.minStepPercent);
}

void apply(const AutonomousOverrides& from, policies::AutonomousConfig& to)
{
    to.energyPreference = from.energyPreference.value_or(to.energyPreference);
    to.energyPreferencePerformance = from.energyPreferencePerformance.value_or(
        to.energyPreferencePerformance);
    to.energyPreferenceEfficiency =
        from.energyPreferenceEfficiency.value_or(to.energyPreferenceEfficiency);
    if (from.activityWindowUs)
    {
        to.activityWindowUs = from.activityWindowUs;
    }
}

void apply(Layer&& layer, GovernorConfig& config)
{
    config.defaults.kind = layer.kind.value_or(config.defaults.kind);
    apply(layer.schedutil, config.defaults.schedutil);
    apply(layer.autonomous, config.defaults.autonomous);
    config.samplingPeriodUs =
        layer.samplingPeriodUs.value_or(config.samplingPeriodUs);
    config.idlePeriodUs = layer.idlePeriodUs.value_or(config.idlePeriodUs);
    config.steadyPeriodUs =
        layer.steadyPeriodUs.value_or(config.steadyPeriodUs);
    config.samplingSource =
        layer.samplingSource.value_or(config.samplingSource);
    config.tick.scheduling =
        layer.tickScheduling.value_or(config.tick.scheduling);
    config.tick.runtimeUs = layer.tickRuntimeUs.value_or(config.tick.runtimeUs);
    config.tick.fifoPriority =
        layer.tickFifoPriority.value_or(config.tick.fifoPriority);
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
    config.backend.simulator.platformLimit =
        layer.simulatorPlatformLimit.value_or(
            config.backend.simulator.platformLimit);
    config.backend.access.threads =
        layer.accessThreads.value_or(config.backend.access.threads);
    config.backend.access.deadlineUs =
        layer.accessDeadlineUs.value_or(config.backend.access.deadlineUs);
    if (layer.metricsDirectory)
    {
        config.metrics.directory = std::move(*layer.metricsDirectory);
    }
    config.metrics.intervalS =
        layer.metricsIntervalS.value_or(config.metrics.intervalS);
    config.sanity.followWindowS =
        layer.followWindowS.value_or(config.sanity.followWindowS);
    config.sanity.tolerance =
        layer.sanityTolerance.value_or(config.sanity.tolerance);
    config.sanity.stuckReadings =
        layer.stuckReadings.value_or(config.sanity.stuckReadings);
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

// Checks what needs several keys together (an error goes to `errors`),
// then applies one file's layer.
void addLayer(Layer&& layer, GovernorConfig& config, const std::string& file,
              std::vector<ConfigError>& errors)
{
    try
    {
        checkSimulator(layer, config, file);
    }
    catch (const ConfigError& e)
    {
        errors.push_back(e);
    }
    apply(std::move(layer), config);
}

// The drop-ins in `dir`, in the order they apply; the other entries of
// `dir` go to `ignored`, in name order.
std::vector<std::filesystem::path> dropIns(
    const std::filesystem::path& dir,
    std::vector<std::filesystem::path>& ignored)
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
        else
        {
            ignored.push_back(path);
        }
    }
    if (ec)
    {
        throw ConfigError(dir.string(), 0, 0, "",
                          "cannot read: " + ec.message());
    }
    const auto byName = [](const fs::path& a, const fs::path& b) {
        return a.filename().string() < b.filename().string();
    };
    std::sort(files.begin(), files.end(), byName);
    std::sort(ignored.begin(), ignored.end(), byName);
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

std::string_view tickSchedulingName(TickScheduling scheduling) noexcept
{
    switch (scheduling)
    {
        case TickScheduling::automatic:
            return "auto";
        case TickScheduling::deadline:
            return "deadline";
        case TickScheduling::fifo:
            return "fifo";
        case TickScheduling::other:
            return "other";
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

ConfigReport checkConfigText(std::string_view yamlText,
                             const std::string& fileName)
{
    ConfigReport report;
    addLayer(parseLayer(yamlText, fileName, 0, report.errors), report.config,
             fileName, report.errors);
    report.config.sources.push_back(fileName);
    return report;
}

GovernorConfig parseConfig(std::string_view yamlText,
                           const std::string& fileName)
{
    ConfigReport report = checkConfigText(yamlText, fileName);
    throwFirst(report.errors);
    return std::move(report.config);
}

namespace
{

void addFile(ConfigReport& report, const std::filesystem::path& path)
{
    const std::string name = path.string();
    std::string text;
    try
    {
        text = readConfigFile(path, name);
    }
    catch (const ConfigError& e)
    {
        report.errors.push_back(e);
        return;
    }
    addLayer(parseLayer(text, name, report.config.overrides.size(),
                        report.errors),
             report.config, name, report.errors);
    report.config.sources.push_back(name);
}

std::string ignoredDropIn(const std::filesystem::path& path)
{
    std::error_code ec;
    const std::string kind =
        std::filesystem::is_directory(path, ec) ? "a directory, " : "";
    return "'" + path.string() + "': " + kind +
           "not read: only the drop-ins named '*.yaml' (and not starting "
           "with '.') are read, ignoring";
}

} // namespace

ConfigReport checkConfigFiles(const std::filesystem::path& mainFile,
                              const std::filesystem::path& dropInDir)
{
    ConfigReport report;
    addFile(report, mainFile);
    std::vector<std::filesystem::path> ignored;
    std::vector<std::filesystem::path> files;
    try
    {
        files = dropIns(dropInDir, ignored);
    }
    catch (const ConfigError& e)
    {
        report.errors.push_back(e);
    }
    for (const std::filesystem::path& path : files)
    {
        addFile(report, path);
    }
    for (const std::filesystem::path& path : ignored)
    {
        report.warnings.push_back(ignoredDropIn(path));
    }
    return report;
}

GovernorConfig loadConfig(const std::filesystem::path& mainFile,
                          const std::filesystem::path& dropInDir)
{
    ConfigReport report = checkConfigFiles(mainFile, dropInDir);
    throwFirst(report.errors);
    return std::move(report.config);
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
            apply(o.autonomous, settings.autonomous);
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
        ConfigReport report = checkConfigFiles(mainFile, dropInDir);
        if (report.errors.empty())
        {
            return {std::move(report.config), {}, std::move(report.warnings)};
        }
        std::string error;
        for (const ConfigError& e : report.errors)
        {
            error += (error.empty() ? "" : "\n") + std::string(e.what());
        }
        return {current, std::move(error), std::move(report.warnings)};
    }
    catch (const std::exception& e)
    {
        return {current, std::string("unexpected error: ") + e.what(), {}};
    }
}

} // namespace cppcgov::daemon
