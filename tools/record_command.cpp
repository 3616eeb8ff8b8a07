// SPDX-License-Identifier: Apache-2.0
#include "record_command.hpp"

#include "bus_client.hpp"
#include "bus_errors.hpp"
#include "lib/monotonic_clock.hpp"
#include "png_encoder.hpp"
#include "record_plot.hpp"
#include "replaced_file.hpp"
#include "signal_watch.hpp"
#include "trace_recorder.hpp"

#include <signal.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>

namespace cppcgov::tools
{

const std::string_view recordUsage =
    "usage: cppcgovctl record --seconds N [--interval MS] [--cpus LIST]\n"
    "                         [--png FILE] [--bus-address ADDR] FILE\n"
    "\n"
    "Samples every CPU's utilization, requested and delivered performance\n"
    "(and MHz where the firmware gives the frequencies) and the policy's\n"
    "reason for N seconds, with each hint's life from HandleStarted to\n"
    "HandleEnded and each PolicyChanged, and writes FILE as Chrome\n"
    "trace-event JSON (open it at https://ui.perfetto.dev with \"Open trace\n"
    "file\") and a PNG plot beside it. Timestamps are CLOCK_MONOTONIC\n"
    "microseconds. SIGINT (Ctrl-C), SIGTERM or SIGHUP ends the recording\n"
    "early; both files are still complete.\n"
    "\n"
    "  --seconds N         how long to record (1 to 604800)\n"
    "  --interval MS       time between samples (default: the daemon's\n"
    "                      sampling period, at least 10)\n"
    "  --cpus LIST         record only these CPUs (\"0-3,8\")\n"
    "  --png FILE          where the plot goes (default: FILE with .png)\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n";

RecordOptions parseRecordArgs(std::span<const std::string_view> args)
{
    RecordOptions o;
    bool seconds = false;
    bool endOfOptions = false;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (endOfOptions || !a.starts_with("-") || a == "-")
        {
            if (!o.file.empty())
            {
                throw UsageError(
                    "unexpected argument '" + std::string(a) + "' after FILE");
            }
            if (a.empty())
            {
                throw UsageError("FILE is empty");
            }
            o.file = a;
        }
        else if (a == "--")
        {
            endOfOptions = true;
        }
        else if (a == "--help" || a == "-h")
        {
            o.help = true;
        }
        else if (const auto s = optionValue(args, i, "--seconds"))
        {
            o.seconds = static_cast<std::uint32_t>(
                optionNumber("--seconds", *s, 1, 604'800));
            seconds = true;
        }
        else if (const auto ms = optionValue(args, i, "--interval"))
        {
            o.intervalMs = static_cast<std::uint32_t>(optionNumber(
                "--interval", *ms, minRecordIntervalMs, 3'600'000));
        }
        else if (const auto cpus = optionValue(args, i, "--cpus"))
        {
            o.cpus = parseCpuList(*cpus);
        }
        else if (const auto png = optionValue(args, i, "--png"))
        {
            if (png->empty())
            {
                throw UsageError("--png: the file name is empty");
            }
            o.png = std::string(*png);
        }
        else if (!takeBusAddress(args, i, o.bus))
        {
            throw UsageError("unknown option '" + std::string(a) + "'");
        }
    }
    if (o.help)
    {
        return o;
    }
    if (!seconds)
    {
        throw UsageError("--seconds N is required");
    }
    if (o.file.empty())
    {
        throw UsageError("no FILE given for the trace");
    }
    return o;
}

std::string defaultPngPath(std::string_view file)
{
    std::string path(file);
    if (path.ends_with(".json") && path.size() > 5 &&
        path[path.size() - 6] != '/')
    {
        path.resize(path.size() - 5);
    }
    return path + ".png";
}

std::uint64_t recordIntervalUs(std::optional<std::uint32_t> intervalMs,
                               std::uint32_t samplingPeriodUs)
{
    const std::uint64_t us =
        intervalMs ? std::uint64_t{*intervalMs} * 1000 : samplingPeriodUs;
    return std::max<std::uint64_t>(us,
                                   std::uint64_t{minRecordIntervalMs} * 1000);
}

namespace
{

std::uint64_t nowUs()
{
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            cppc::monotonicNow())
            .count());
}

std::string secondsText(std::uint64_t us)
{
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), "%.1f",
                  static_cast<double>(us) / 1e6);
    return text.data();
}

std::string plotTitle(const RecordSetup& s, std::uint64_t durationUs)
{
    return "cppcgovd " + s.daemon.version + "  " + s.daemon.backend +
           "  policy " + s.daemon.policy + "  " +
           std::to_string(s.cpus.size()) + " CPUs  every " +
           std::to_string(s.intervalUs / 1000) + " ms  " +
           secondsText(durationUs) + " s";
}

std::string signalName(int signal)
{
    switch (signal)
    {
        case SIGINT:
            return "SIGINT";
        case SIGTERM:
            return "SIGTERM";
        case SIGHUP:
            return "SIGHUP";
        default:
            return "signal " + std::to_string(signal);
    }
}

// How a recording ended early, if it did.
struct Ending
{
    std::optional<std::string> signal;
    std::optional<std::string> lost;
};

// Samples until `endUs`, a signal or the daemon's loss.
Ending sampleUntil(BusClient& client, SignalWatch& signals,
                   TraceRecorder& recorder, std::uint64_t endUs)
{
    GovernorProxy& governor = client.governor();
    const std::array<int, 1> fds{signals.fd()};
    const std::uint64_t interval = recorder.setup().intervalUs;
    std::uint64_t next = recorder.setup().startUs;
    while (true)
    {
        const std::uint64_t asked = nowUs();
        std::vector<CpuState> states;
        try
        {
            states = governor.cpuStates();
        }
        catch (const sdbus::Error& e)
        {
            // What was recorded is still written.
            return {std::nullopt, "GetCpuStates failed: " + e.getMessage()};
        }
        const std::uint64_t answered = nowUs();
        recorder.sample(asked + (answered - asked) / 2, states);
        if (answered >= endUs)
        {
            return {};
        }
        // Samples keep to the interval's grid, skipping what a slow call
        // missed.
        next += interval;
        if (next < answered)
        {
            next = answered + interval;
        }
        const auto deadline =
            BusClient::Clock::now() +
            std::chrono::microseconds(std::min(next, endUs) - answered);
        while (true)
        {
            const auto ready = client.wait(fds, deadline, [&client]() {
                return client.lost().has_value();
            });
            if (client.lost())
            {
                return {std::nullopt, *client.lost()};
            }
            if (!ready)
            {
                break;
            }
            if (const auto s = signals.take())
            {
                return {signalName(s->signal), std::nullopt};
            }
        }
    }
}

int record(const RecordOptions& o, const std::optional<std::string>& address,
           std::ostream& out, std::ostream& err)
{
    // The files first: a path that cannot be written fails before the
    // daemon is asked anything.
    ReplacedFile trace(o.file);
    ReplacedFile png(o.png.value_or(defaultPngPath(o.file)));

    BusClient client(address);
    SignalWatch signals({SIGINT, SIGTERM, SIGHUP});
    GovernorProxy& governor = client.governor();
    RecordSetup setup;
    setup.daemon = governor.daemonInfo();
    if (o.cpus)
    {
        if (const auto missing = missingCpus(*o.cpus, setup.daemon.cpuCount))
        {
            err << "cppcgovctl: " << *missing << "\n";
            return 1;
        }
        setup.cpus = *o.cpus;
    }
    else
    {
        for (std::uint32_t cpu = 0; cpu < setup.daemon.cpuCount; ++cpu)
        {
            setup.cpus.push_back(cpu);
        }
    }
    setup.info = governor.cpuInfo();
    setup.intervalUs =
        recordIntervalUs(o.intervalMs, setup.daemon.samplingPeriodUs);
    const std::vector<HandleInfo> live = governor.handleList();
    setup.startUs = nowUs();
    const std::uint64_t endUs =
        setup.startUs + std::uint64_t{o.seconds} * 1'000'000;
    TraceRecorder recorder(trace.stream(), std::move(setup), live);

    governor.handleStarted = [&recorder](const HandleInfo& h) {
        recorder.handleStarted(nowUs(), h);
    };
    governor.handleEnded =
        [&recorder](std::uint64_t handle, const std::string& owner,
                    const std::string& reason) {
        recorder.handleEnded(nowUs(), handle, owner, reason);
    };
    governor.policyChanged =
        [&recorder](const std::string& policy,
                    const std::vector<std::string>& files) {
        recorder.policyChanged(nowUs(), policy, files);
    };

    const Ending ending = sampleUntil(client, signals, recorder, endUs);
    recorder.finish(nowUs());
    governor.handleStarted = nullptr;
    governor.handleEnded = nullptr;
    governor.policyChanged = nullptr;
    trace.commit();

    const RecordTimeline& timeline = recorder.timeline();
    const std::vector<std::uint32_t>& cpus = recorder.setup().cpus;
    png.write(encodePng(
        renderRecordPlot(timeline, cpus, recorder.perfScale(),
                         plotTitle(recorder.setup(), timeline.durationUs()))));
    png.commit();

    out << "recorded " << recorder.samples() << " samples of " << cpus.size()
        << (cpus.size() == 1 ? " CPU" : " CPUs") << " over "
        << secondsText(timeline.durationUs()) << " s"
        << (ending.signal ? ", ended by " + *ending.signal : "") << "\n"
        << "wrote '" << trace.path() << "' (" << recorder.events()
        << " trace events) and '" << png.path() << "'\n";
    if (ending.lost)
    {
        err << "cppcgovctl: " << *ending.lost << "\n";
        return 1;
    }
    return 0;
}

} // namespace

int runRecord(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err)
{
    RecordOptions o;
    if (const auto done = parseCommand("record", recordUsage, args, out, err,
                                       parseRecordArgs, o))
    {
        return *done;
    }
    const BusOptions& chosen = o.bus.address ? o.bus : bus;
    return withBusErrors(chosen, "read cppcgovd's state", err, [&]() {
        return record(o, chosen.address, out, err);
    });
}

} // namespace cppcgov::tools
