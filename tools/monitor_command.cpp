// SPDX-License-Identifier: Apache-2.0
#include "monitor_command.hpp"

#include "bus_client.hpp"
#include "bus_errors.hpp"
#include "cpu_rows.hpp"
#include "json_writer.hpp"
#include "monitor_keys.hpp"
#include "monitor_layout.hpp"
#include "signal_watch.hpp"
#include "status_command.hpp"
#include "terminal_screen.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <deque>

namespace cppcgov::tools
{

const std::string_view monitorUsage =
    "usage: cppcgovctl monitor [--interval MS] [--count N] [--cpus LIST]\n"
    "                          [--json] [--bus-address ADDR]\n"
    "\n"
    "Shows the daemon's statistics and every CPU's domain, policy,\n"
    "utilization, clamp, requested and delivered performance (in the\n"
    "firmware's units and in MHz), the policy's reason, the resume-latency\n"
    "limit and the clamp handles active on it, refreshed every interval,\n"
    "and the HandleStarted, HandleEnded and PolicyChanged signals and the\n"
    "CPUs that become degraded or recover, with the time each was seen.\n"
    "\n"
    "On a terminal it takes the screen: the header stays on top, the CPUs\n"
    "come in pages grouped by domain, the latest events under them. Keys:\n"
    "n, space, Page Down: next page; p, b, Page Up: previous page; g, Home:\n"
    "first; G, End: last; q: quit. Otherwise it prints one block per\n"
    "refresh and each event on a line as it arrives. Stops on q, SIGINT\n"
    "(Ctrl-C), SIGTERM or SIGHUP.\n"
    "\n"
    "  --interval MS       time between refreshes (default 1000)\n"
    "  --count N           stop after N refreshes\n"
    "  --cpus LIST         these CPUs alone (a cpulist: 0-3,8)\n"
    "  --json              one JSON object a line, per refresh and per event\n"
    "                      (see tools/README.md)\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n";

namespace
{

using SystemClock = std::chrono::system_clock;

// The events kept for the terminal view, more than any height shows.
constexpr std::size_t keptEvents = 64;

// The size assumed for a terminal that does not say.
constexpr TerminalSize fallbackSize{80, 24};

// The refreshes and events of a parsed command line, on the bus at
// `address`.
class Monitor
{
  public:
    Monitor(const MonitorOptions& o, const std::optional<std::string>& address,
            std::ostream& out, std::ostream& err) :
        o_(o),
        out_(out), err_(err),
        terminal_(!o.json && ::isatty(STDOUT_FILENO) == 1), client_(address)
    {
        GovernorProxy& governor = client_.governor();
        governor.handleStarted = [this](const HandleInfo& h) {
            event(handleStartedEvent(SystemClock::now(), h));
        };
        governor.handleEnded =
            [this](std::uint64_t handle, const std::string& owner,
                   const std::string& reason) {
            event(handleEndedEvent(SystemClock::now(), handle, owner, reason));
        };
        governor.policyChanged = [this](const std::string& policy,
                                        const std::vector<std::string>& files) {
            event(policyChangedEvent(SystemClock::now(), policy, files));
        };
    }

    int run();

  private:
    void event(MonitorEvent e);
    void show(const GovernorSnapshot& s);
    void draw();
    // Handles what woke the wait: a signal or keys. Returns the exit
    // status when the command ends.
    std::optional<int> signalled(SignalWatch& signals, TerminalScreen* screen);
    std::optional<int> typed();

    const MonitorOptions& o_;
    std::ostream& out_;
    std::ostream& err_;
    const bool terminal_;
    BusClient client_;
    std::deque<MonitorEvent> recent_;
    bool dirty_ = false; // an event came since the screen was drawn
    std::optional<GovernorSnapshot> last_;
    std::size_t page_ = 0;
    std::size_t pageCount_ = 1;
    int keyboard_ = -1;
};

void Monitor::event(MonitorEvent e)
{
    if (o_.json)
    {
        printEventJson(e, out_);
        out_.flush();
    }
    else if (terminal_)
    {
        recent_.push_back(std::move(e));
        if (recent_.size() > keptEvents)
        {
            recent_.pop_front();
        }
        dirty_ = true;
    }
    else
    {
        out_ << eventLine(e) << std::endl;
    }
}

void Monitor::draw()
{
    dirty_ = false;
    if (!last_)
    {
        return;
    }
    const TerminalSize size =
        terminalSize(STDOUT_FILENO).value_or(fallbackSize);
    const MonitorLayout layout(monitorHeader(*last_, size.columns),
                               groupByDomain(cpuRows(*last_, o_.cpus)), size,
                               true, last_->daemon.cpuCount);
    pageCount_ = layout.pageCount();
    page_ = std::min(page_, pageCount_ - 1);
    std::vector<std::string> events;
    for (const MonitorEvent& e : recent_)
    {
        events.push_back(eventLine(e));
    }
    std::vector<std::string> lines = layout.render(page_, events);
    if (lines.size() > size.rows)
    {
        lines.resize(size.rows);
    }
    // Each line overwrites the last frame's and clears the rest of it; no
    // newline after the last, which would scroll a full screen.
    out_ << "\x1b[H";
    for (std::size_t i = 0; i < lines.size(); ++i)
    {
        out_ << (i == 0 ? "" : "\n") << lines[i] << "\x1b[K";
    }
    out_ << "\x1b[J";
    out_.flush();
}

void Monitor::show(const GovernorSnapshot& s)
{
    for (MonitorEvent& e :
         degradedChanges(SystemClock::now(),
                         last_ ? last_->cpus : std::vector<CpuState>{}, s.cpus))
    {
        event(std::move(e));
    }
    last_ = s;
    if (o_.json)
    {
        printRefreshJson(s, o_.cpus, SystemClock::now(), out_);
        out_.flush();
    }
    else if (terminal_)
    {
        draw();
    }
    else
    {
        printMonitorBlock(s, o_.cpus, out_);
        out_.flush();
    }
}

std::optional<int> Monitor::signalled(SignalWatch& signals,
                                      TerminalScreen* screen)
{
    while (const auto got = signals.take())
    {
        if (got->signal == SIGWINCH)
        {
            draw();
        }
        else if (got->signal == SIGTSTP)
        {
            // Stop as a terminal's Ctrl-Z means, with the terminal as it
            // was; take it again on SIGCONT.
            if (screen)
            {
                screen->leave();
            }
            (void)::kill(::getpid(), SIGSTOP);
            if (screen)
            {
                screen->enter();
            }
            draw();
        }
        else
        {
            return 0;
        }
    }
    return std::nullopt;
}

std::optional<int> Monitor::typed()
{
    std::array<char, 64> buf{};
    const ssize_t n = ::read(keyboard_, buf.data(), buf.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
    {
        return std::nullopt;
    }
    if (n <= 0)
    {
        // The terminal hung up or fails: no more keys from it.
        keyboard_ = -1;
        return std::nullopt;
    }
    for (const MonitorKey k :
         parseKeys(std::string_view(buf.data(), static_cast<std::size_t>(n))))
    {
        switch (k)
        {
            case MonitorKey::quit:
                return 0;
            case MonitorKey::next:
                page_ = (page_ + 1) % pageCount_;
                break;
            case MonitorKey::previous:
                page_ = (page_ + pageCount_ - 1) % pageCount_;
                break;
            case MonitorKey::first:
                page_ = 0;
                break;
            case MonitorKey::last:
                page_ = pageCount_ - 1;
                break;
        }
    }
    draw();
    return std::nullopt;
}

int Monitor::run()
{
    std::optional<SignalWatch> signals;
    if (terminal_)
    {
        signals.emplace(std::initializer_list<int>{SIGINT, SIGTERM, SIGHUP,
                                                   SIGWINCH, SIGTSTP});
    }
    else
    {
        signals.emplace(std::initializer_list<int>{SIGINT, SIGTERM, SIGHUP});
    }
    // The first snapshot before the screen is taken, so that an error is
    // said on a sane terminal.
    GovernorSnapshot s = client_.snapshot();
    if (const auto missing = missingCpus(o_.cpus, s.daemon.cpuCount))
    {
        err_ << "cppcgovctl: " << *missing << "\n";
        return 1;
    }
    std::optional<TerminalScreen> screen;
    if (terminal_)
    {
        keyboard_ = ::isatty(STDIN_FILENO) == 1 ? STDIN_FILENO : -1;
        screen.emplace(keyboard_, out_);
        if (!screen->keys())
        {
            keyboard_ = -1;
        }
    }
    const auto interval = std::chrono::milliseconds(o_.intervalMs);
    auto next = BusClient::Clock::now();
    for (std::uint64_t n = 1;; ++n)
    {
        if (n != 1)
        {
            s = client_.snapshot();
        }
        if (!terminal_ && !o_.json && n != 1)
        {
            out_ << "\n";
        }
        show(s);
        if (o_.count && n >= *o_.count)
        {
            return 0;
        }
        // Refreshes keep to the interval's grid, skipping what a slow
        // refresh missed.
        next += interval;
        if (const auto now = BusClient::Clock::now(); next < now)
        {
            next = now + interval;
        }
        while (true)
        {
            const std::array<int, 2> fds{signals->fd(), keyboard_};
            const std::span<const int> watched(fds.data(),
                                               keyboard_ < 0 ? 1 : 2);
            const auto ready = client_.wait(watched, next, [this]() {
                return client_.lost().has_value() || dirty_;
            });
            if (client_.lost())
            {
                screen.reset();
                err_ << "cppcgovctl: " << *client_.lost() << "\n";
                return 1;
            }
            if (dirty_)
            {
                draw();
                continue;
            }
            if (!ready)
            {
                break;
            }
            const std::optional<int> done =
                *ready == 0 ? signalled(*signals, screen ? &*screen : nullptr)
                            : typed();
            if (done)
            {
                return *done;
            }
        }
    }
}

} // namespace

MonitorOptions parseMonitorArgs(std::span<const std::string_view> args)
{
    MonitorOptions o;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h")
        {
            o.help = true;
        }
        else if (a == "--json")
        {
            o.json = true;
        }
        else if (const auto ms = optionValue(args, i, "--interval"))
        {
            o.intervalMs = static_cast<std::uint32_t>(
                optionNumber("--interval", *ms, 1, 3'600'000));
        }
        else if (const auto n = optionValue(args, i, "--count"))
        {
            o.count = optionNumber("--count", *n, 1, UINT32_MAX);
        }
        else if (const auto list = optionValue(args, i, "--cpus"))
        {
            o.cpus = parseCpuList(*list);
        }
        else if (!takeBusAddress(args, i, o.bus))
        {
            throw UsageError("unexpected argument '" + std::string(a) + "'");
        }
    }
    return o;
}

void printMonitorBlock(const GovernorSnapshot& s,
                       std::span<const std::uint32_t> cpus, std::ostream& out)
{
    const MonitorLayout layout(monitorHeader(s, 0),
                               groupByDomain(cpuRows(s, cpus)), {}, false,
                               s.daemon.cpuCount);
    for (const std::string& line : layout.render(0, {}))
    {
        out << line << "\n";
    }
}

void printRefreshJson(const GovernorSnapshot& s,
                      std::span<const std::uint32_t> cpus,
                      SystemClock::time_point time, std::ostream& out)
{
    JsonWriter j(out, 0); // one line
    j.beginObject();
    j.field("format", "cppcgov-monitor");
    j.field("version", std::uint64_t{1});
    j.field("type", "refresh");
    j.field("time", utcTime(time));
    writeStatusFields(s, cpus, j);
    j.endObject();
}

int runMonitor(std::span<const std::string_view> args, const BusOptions& bus,
               std::ostream& out, std::ostream& err)
{
    MonitorOptions o;
    if (const auto done = parseCommand("monitor", monitorUsage, args, out, err,
                                       parseMonitorArgs, o))
    {
        return *done;
    }
    const BusOptions& chosen = o.bus.address ? o.bus : bus;
    return withBusErrors(chosen, "read cppcgovd's state", err, [&]() {
        Monitor m(o, chosen.address, out, err);
        return m.run();
    });
}

} // namespace cppcgov::tools
