// SPDX-License-Identifier: Apache-2.0
#include "tests/vm/platform/platform.hpp"

#include "tests/vm/platform/text.hpp"

#include <sstream>

namespace cppcgov::platform
{

namespace
{

constexpr std::uint64_t counterStart = 1U << 20;
constexpr std::uint64_t powerOnWindow = 10 | 2U << 7; // 10 x 10^2 us
constexpr std::uint32_t powerOnEpp = 128;

// The Autonomous Activity Window register's microseconds (bits 6:0 times
// ten to bits 9:7). Decoded here, not with lib/activity_window.hpp: the
// platform judges the daemon's encoding and must not share it.
std::uint64_t windowUs(std::uint64_t reg)
{
    std::uint64_t us = reg & 0x7F;
    for (std::uint64_t e = (reg >> 7) & 0x7; e > 0; --e)
    {
        us *= 10;
    }
    return us;
}

std::optional<bool> onOff(std::string_view text)
{
    if (text == "on")
    {
        return true;
    }
    if (text == "off")
    {
        return false;
    }
    return std::nullopt;
}

} // namespace

double shareOf(const PlatformOptions& options, std::uint32_t perf,
               std::uint32_t highest)
{
    const double part =
        highest == 0 ? 0.0 : std::min(static_cast<double>(perf) / highest, 1.0);
    return options.shareFloor +
           (options.shareAtHighest - options.shareFloor) * part;
}

Platform::Platform(const Layout& layout, const GuestMemory& memory,
                   PlatformOptions opts, std::uint64_t nowNs) :
    memory_(memory),
    options_(std::move(opts)), subspaceLayouts_(layout.subspaces),
    lastStepNs_(nowNs)
{
    cpus_.reserve(layout.cpus.size());
    for (const CpuLayout& c : layout.cpus)
    {
        cpus_.push_back(
            Cpu{c, CpuModel(c.scale, options_.curve, options_.latencyNs, nowNs),
                Request{}, 0, false, 0, 0, std::nullopt});
        cpus_.back().latched.epp = powerOnEpp;
        cpus_.back().latched.desired = c.scale.lowest;
    }
    for (const SubspaceLayout& s : layout.subspaces)
    {
        responders_.emplace_back(
            s.id, memory.at(s.base, s.size),
            memory_.at(s.doorbell.address, s.doorbell.width / 8),
            s.doorbell.width, s.doorbellWrite << s.doorbell.bit,
            options_.pccLatencyNs);
    }
}

std::byte* Platform::unitOf(const Field& field) const
{
    if (field.space == Space::memory)
    {
        return memory_.at(field.address, field.width / 8);
    }
    const SubspaceLayout& s = subspaceLayouts_.at(field.subspace);
    if (pccHeaderBytes + field.address + field.width / 8 > s.size)
    {
        throw std::out_of_range("a PCC register beyond its subspace");
    }
    return memory_.at(s.base + pccHeaderBytes + field.address, field.width / 8);
}

std::uint64_t Platform::readField(const Field& field) const
{
    return loadField(unitOf(field), field);
}

void Platform::writeField(const Field& field, std::uint64_t value) const
{
    storeField(unitOf(field), field, value);
}

Request Platform::readRequest(const Cpu& cpu, bool pccToo) const
{
    Request r = cpu.latched;
    const CpuLayout& l = cpu.layout;
    // A register the CPU has and that can be read now (PCC ones only as
    // a write command leaves them), through `set`.
    const auto read = [&](const std::optional<Field>& f, auto set) {
        if (f && (f->space == Space::memory || pccToo))
        {
            set(readField(*f));
        }
    };
    const auto to32 = [](std::uint64_t v) {
        return static_cast<std::uint32_t>(
            std::min<std::uint64_t>(v, UINT32_MAX));
    };
    read(l.desired, [&](std::uint64_t v) { r.desired = to32(v); });
    read(l.minimum, [&](std::uint64_t v) { r.minimum = to32(v); });
    read(l.maximum, [&](std::uint64_t v) { r.maximum = to32(v); });
    read(l.epp, [&](std::uint64_t v) { r.epp = to32(v); });
    read(l.autoSelect, [&](std::uint64_t v) { r.autonomous = (v & 1) != 0; });
    read(l.window, [&](std::uint64_t v) { r.windowUs = windowUs(v); });
    return r;
}

void Platform::initialise()
{
    for (PccResponder& r : responders_)
    {
        r.reset();
    }
    for (Cpu& cpu : cpus_)
    {
        const CpuLayout& l = cpu.layout;
        writeField(l.referenceCounter, counterStart);
        writeField(l.deliveredCounter, counterStart);
        const auto put =
            [this](const std::optional<Field>& f, std::uint64_t v) {
            if (f)
            {
                writeField(*f, v);
            }
        };
        put(l.minimum, l.scale.lowest);
        put(l.maximum, l.scale.highest);
        put(l.epp, powerOnEpp);
        put(l.autoSelect, 0);
        put(l.window, powerOnWindow);
        put(l.limited, 0);
        put(l.mark, 0);
        cpu.lastMark = 0;
        cpu.latched = readRequest(cpu, true);
    }
}

void Platform::advance(Cpu& cpu, std::uint64_t nowNs)
{
    std::uint64_t delta = 0;
    std::optional<std::uint64_t> busy;
    if (options_.busyClock)
    {
        busy = options_.busyClock(cpu.layout.cpu);
    }
    if (busy)
    {
        if (cpu.busyKnown && *busy >= cpu.lastBusy)
        {
            delta = *busy - cpu.lastBusy;
        }
        cpu.lastBusy = *busy;
        cpu.busyKnown = true;
    }
    else
    {
        ++busyReadFailures_;
    }
    cpu.model.advance(nowNs, delta);
}

void Platform::publish(Cpu& cpu, bool pccToo)
{
    const CpuLayout& l = cpu.layout;
    for (const auto& [field, value] :
         {std::pair{&l.referenceCounter, cpu.model.referenceCounter()},
          std::pair{&l.deliveredCounter, cpu.model.deliveredCounter()}})
    {
        if (field->space == Space::memory || pccToo)
        {
            writeField(*field, value);
        }
    }
    if (l.limited && (l.limited->space == Space::memory || pccToo))
    {
        setFieldBits(unitOf(*l.limited), *l.limited, cpu.model.excursions());
    }
    const std::uint32_t now = cpu.model.delivered();
    if (now != cpu.lastDelivered)
    {
        cpu.lastDelivered = now;
        applyShare(cpu);
        if (options_.log)
        {
            std::ostringstream line;
            line << "cpu " << l.cpu << " delivered " << now << " target "
                 << cpu.model.target() << " cap " << cpu.model.cap();
            options_.log(line.str());
        }
    }
}

void Platform::applyShare(Cpu& cpu)
{
    const double share = cpu.pinnedShare.value_or(
        shareOf(options_, cpu.lastDelivered, cpu.layout.scale.highest));
    if (options_.setShare && !options_.setShare(cpu.layout.cpu, share))
    {
        ++failedShares_;
    }
}

void Platform::logMark(Cpu& cpu)
{
    if (!cpu.layout.mark)
    {
        return;
    }
    const std::uint64_t value = readField(*cpu.layout.mark);
    if (value != cpu.lastMark && options_.log)
    {
        options_.log("cpu " + std::to_string(cpu.layout.cpu) + " mark " +
                     std::to_string(value));
    }
    cpu.lastMark = value;
}

void Platform::pollPcc(std::uint64_t nowNs)
{
    for (std::size_t i = 0; i < responders_.size(); ++i)
    {
        const auto command = responders_[i].poll(nowNs);
        if (!command)
        {
            continue;
        }
        for (Cpu& cpu : cpus_)
        {
            if (cpu.layout.desired.space != Space::pcc ||
                cpu.layout.desired.subspace != i)
            {
                continue;
            }
            if (*command == cppcWrite)
            {
                cpu.latched = readRequest(cpu, true);
                cpu.model.request(nowNs, cpu.latched);
            }
            else if (*command == cppcRead)
            {
                advance(cpu, nowNs);
                publish(cpu, true);
            }
        }
        responders_[i].answer();
    }
}

void Platform::step(std::uint64_t nowNs)
{
    for (Cpu& cpu : cpus_)
    {
        cpu.latched = readRequest(cpu, false);
        cpu.model.request(nowNs, cpu.latched);
        advance(cpu, nowNs);
        publish(cpu, false);
        logMark(cpu);
    }
    lastStepNs_ = nowNs;
}

std::string Platform::fault(Cpu& cpu, std::string_view what,
                            std::string_view value)
{
    Faults f = cpu.model.faults();
    if (what == "none")
    {
        f = Faults{};
    }
    else if (what == "reference-rate")
    {
        const auto pct = parseWhole(value);
        if (!pct || *pct == 0 || *pct > 10000)
        {
            return "error: reference-rate takes a percentage, 1 to 10000";
        }
        f.referenceRatePercent = static_cast<std::uint32_t>(*pct);
    }
    else if (what == "stall" || what == "ignore-desired")
    {
        const auto on = onOff(value);
        if (!on)
        {
            return "error: " + std::string(what) + " takes on or off";
        }
        (what == "stall" ? f.countersStalled : f.ignoreDesired) = *on;
    }
    else
    {
        return "error: no fault '" + std::string(what) +
               "' (reference-rate, stall, ignore-desired, none)";
    }
    cpu.model.setFaults(f);
    return "ok";
}

std::string Platform::command(std::string_view line)
{
    const auto w = words(line);
    if (w.empty())
    {
        return "error: an empty command";
    }
    const auto cpuArg = [&](std::size_t i) -> Cpu* {
        const auto n = i < w.size() ? parseWhole(w[i]) : std::nullopt;
        return n && *n < cpus_.size() ? &cpus_[*n] : nullptr;
    };
    if (w[0] == "stats" && w.size() == 1)
    {
        return statsJson(lastStepNs_);
    }
    if (w[0] == "reset-stats" && w.size() == 1)
    {
        for (Cpu& cpu : cpus_)
        {
            cpu.model.resetStats();
        }
        for (PccResponder& r : responders_)
        {
            r.resetCounts();
        }
        return "ok";
    }
    if (w[0] == "cap" && w.size() == 3)
    {
        Cpu* cpu = cpuArg(1);
        const auto level = parseWhole(w[2]);
        if (cpu == nullptr || !level || *level > UINT32_MAX)
        {
            return "error: cap CPU LEVEL (a CPU of the layout, a level)";
        }
        cpu->model.setCap(static_cast<std::uint32_t>(*level));
        return "ok";
    }
    if (w[0] == "fault" && (w.size() == 3 || w.size() == 4))
    {
        Cpu* cpu = cpuArg(1);
        if (cpu == nullptr)
        {
            return "error: fault CPU ...: no such CPU";
        }
        return fault(*cpu, w[2], w.size() == 4 ? w[3] : std::string_view{});
    }
    if (w[0] == "latency" && w.size() == 2)
    {
        const auto us = parseWhole(w[1]);
        if (!us || *us > 10'000'000)
        {
            return "error: latency US (0 to 10000000)";
        }
        options_.latencyNs = *us * 1000;
        for (Cpu& cpu : cpus_)
        {
            cpu.model.setLatency(options_.latencyNs);
        }
        return "ok";
    }
    if (w[0] == "pcc" && (w.size() == 3 || w.size() == 4))
    {
        const auto id = parseWhole(w[1]);
        const auto mode = pccModeNamed(w[2]);
        const auto us =
            w.size() == 4
                ? parseWhole(w[3])
                : std::optional<std::uint64_t>(options_.pccLatencyNs / 1000);
        if (!id || *id >= responders_.size() || !mode || !us ||
            *us > 10'000'000)
        {
            return "error: pcc ID answer|never|error [US] (a subspace of "
                   "the layout)";
        }
        responders_[*id].setMode(*mode, *us * 1000);
        return "ok";
    }
    if (w[0] == "curve" && w.size() == 2)
    {
        const auto curve = powerCurveNamed(w[1]);
        if (!curve)
        {
            return "error: curve vf|linear";
        }
        options_.curve = *curve;
        for (Cpu& cpu : cpus_)
        {
            cpu.model.setCurve(*curve);
        }
        return "ok";
    }
    if (w[0] == "share-floor" && w.size() == 2)
    {
        const auto permille = parseWhole(w[1]);
        if (!permille ||
            static_cast<double>(*permille) >= 1000 * options_.shareAtHighest)
        {
            return "error: share-floor PERMILLE (below the share at "
                   "highest)";
        }
        options_.shareFloor = static_cast<double>(*permille) / 1000;
        for (Cpu& cpu : cpus_)
        {
            applyShare(cpu);
        }
        return "ok";
    }
    if (w[0] == "pin-share" && w.size() == 3)
    {
        Cpu* cpu = cpuArg(1);
        const auto permille = parseWhole(w[2]);
        if (cpu == nullptr || (w[2] != "off" && (!permille || *permille == 0 ||
                                                 *permille > 1000)))
        {
            return "error: pin-share CPU PERMILLE|off (a CPU of the layout, "
                   "1 to 1000)";
        }
        cpu->pinnedShare =
            w[2] == "off"
                ? std::nullopt
                : std::optional<double>(static_cast<double>(*permille) / 1000);
        applyShare(*cpu);
        return "ok";
    }
    return "error: unknown command '" + std::string(w[0]) +
           "' (stats, reset-stats, cap, fault, latency, pcc, curve, "
           "share-floor, pin-share)";
}

std::string Platform::statsJson(std::uint64_t nowNs) const
{
    std::ostringstream out;
    out.precision(9);
    out << "{\"time_ns\":" << nowNs << ",\"curve\":\""
        << powerCurveName(options_.curve)
        << "\",\"latency_ns\":" << options_.latencyNs
        << ",\"share_at_highest\":" << options_.shareAtHighest
        << ",\"share_floor\":" << options_.shareFloor
        << ",\"share_failures\":" << failedShares_
        << ",\"busy_read_failures\":" << busyReadFailures_ << ",\"cpus\":[";
    double energy = 0;
    for (std::size_t i = 0; i < cpus_.size(); ++i)
    {
        const Cpu& cpu = cpus_[i];
        const CpuStats& s = cpu.model.stats();
        energy += s.energyJoules;
        out << (i == 0 ? "" : ",") << "{\"cpu\":" << i << ",\"desired\":"
            << cpu.latched.desired << ",\"target\":" << cpu.model.target()
            << ",\"delivered\":" << cpu.model.delivered()
            << ",\"cap\":" << cpu.model.cap()
            << ",\"busy_average\":" << cpu.model.busyAverage()
            << ",\"reference_counter\":" << cpu.model.referenceCounter()
            << ",\"delivered_counter\":" << cpu.model.deliveredCounter()
            << ",\"desired_changes\":" << s.desiredChanges
            << ",\"wall_ns\":" << s.wallNs << ",\"busy_ns\":" << s.busyNs
            << ",\"throttled_ns\":" << s.throttledNs
            << ",\"busy_perf_ns\":" << static_cast<double>(s.busyPerfNs)
            << ",\"energy_j\":" << s.energyJoules << ",\"levels\":{";
        bool first = true;
        for (const auto& [level, ns] : s.levelNs)
        {
            out << (first ? "" : ",") << '"' << level << "\":" << ns;
            first = false;
        }
        out << "}}";
    }
    out << "],\"energy_j\":" << energy << ",\"subspaces\":[";
    for (std::size_t i = 0; i < responders_.size(); ++i)
    {
        const PccCounts& c = responders_[i].counts();
        const PccMode m = responders_[i].currentMode();
        out << (i == 0 ? "" : ",") << "{\"id\":" << i << ",\"mode\":\""
            << (m == PccMode::answer
                    ? "answer"
                    : (m == PccMode::never ? "never" : "error"))
            << "\",\"latency_ns\":" << responders_[i].latencyNs()
            << ",\"doorbells\":" << c.doorbells << ",\"reads\":" << c.reads
            << ",\"writes\":" << c.writes << ",\"others\":" << c.others
            << ",\"errors\":" << c.errors << ",\"unanswered\":" << c.unanswered
            << ",\"rings_while_busy\":" << c.ringsWhileBusy << '}';
    }
    out << "]}";
    return out.str();
}

} // namespace cppcgov::platform
