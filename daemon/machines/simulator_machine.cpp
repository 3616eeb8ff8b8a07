// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/simulator_machine.hpp"

#include "lib/activity_window.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::CpcEntry;
using policies::CpuCaps;

// A capability register in PCC, read with a read command.
std::optional<std::uint64_t> pccValue(cppc::sim::PccSubspaces& pcc,
                                      const cppc::RegisterDesc& reg)
{
    if (!reg.inSpace(cppc::AddressSpace::pcc))
    {
        return std::nullopt;
    }
    const cppc::PccRegister r{reg.address, reg.bitOffset, reg.bitWidth};
    std::uint64_t value = 0;
    if (pcc.read(reg.accessSize, {&r, 1}, {&value, 1}))
    {
        return std::nullopt;
    }
    return value;
}

} // namespace

SimulatorMachine::SimulatorMachine(const SimulatorConfig& config,
                                   const fs::path& root) :
    SimulatorMachine(cppc::sim::makeLayout(config.layout, config.cpus), config,
                     root)
{}

SimulatorMachine::SimulatorMachine(cppc::sim::Layout layout,
                                   const SimulatorConfig& config,
                                   const fs::path& root) :
    layoutName_(layout.name),
    plan_(cppc::AccessPlan::build(std::move(layout.cpus))),
    control_(plan_, cppc::sim::CountingIo(file_), &pcc_)
{
    internal::requireNoRefusal(plan_);
    for (const cppc::sim::PccSubspaceSpec& s : layout.pccSubspaces)
    {
        pcc_.add(s.id, s.payloadBytes);
    }
    for (const cppc::sim::PccPreset& p : layout.pccPresets)
    {
        const cppc::PccWrite w{p.reg, p.value};
        if (const std::error_code ec = pcc_.write(p.subspace, {&w, 1}))
        {
            throw std::runtime_error(
                "layout " + layoutName_ + ": cannot preset PCC subspace " +
                std::to_string(p.subspace) + ": " + ec.message());
        }
    }
    const auto count = static_cast<std::uint32_t>(plan_.cpuCount());
    std::vector<CpuCaps> caps;
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        const cppc::CpcDescriptor* d = plan_.descriptor(cpu);
        if (d == nullptr)
        {
            throw std::runtime_error(
                "layout " + layoutName_ + " has no CPU " + std::to_string(cpu));
        }
        caps.push_back(internal::capsOf(
            *d, [this](CpcEntry, const cppc::RegisterDesc& reg) {
                return pccValue(pcc_, reg);
            }));
    }
    topology_ = internal::psdTopology(plan_, caps);
    writes_ = internal::RequestWrites(
        plan_, internal::everyCpuHasMinMax(control_, count));
    controlWrites_ = internal::ControlWrites(plan_, control_);
    readsPerfLimited_ =
        internal::everyCpuHas(control_, count, CpcEntry::perfLimited);
    for (const CpuCaps& c : topology_.cpus)
    {
        delivered_.push_back(c.nominal != 0 ? c.nominal : c.highest);
        autonomousPerf_.push_back(delivered_.back());
    }
    limit_.assign(count, config.platformLimit);
    perfLimited_.assign(count, 0);
    requested_.assign(count, false);
    registers_.resize(count);
    constexpr std::array<CpcEntry, slotCount> slots = {
        CpcEntry::desiredPerf,
        CpcEntry::minPerf,
        CpcEntry::maxPerf,
        CpcEntry::energyPerfPreference,
        CpcEntry::autonomousSelectionEnable,
        CpcEntry::autonomousActivityWindow,
        CpcEntry::perfLimited,
    };
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        const cppc::CpcDescriptor& d = *plan_.descriptor(cpu);
        for (std::size_t k = 0; k < slots.size(); ++k)
        {
            const cppc::CpcValue& v = d.entry(slots[k]);
            const cppc::RegisterPlan& rp = plan_.cpu(cpu).reg(slots[k]);
            PlatformRegister& r = registers_[cpu][k];
            if (v.kind == cppc::CpcValue::Kind::integer)
            {
                r.kind = PlatformRegister::Kind::integer;
                r.integer = v.integer;
            }
            else if (rp.access == cppc::AccessClass::pcc)
            {
                r.kind = PlatformRegister::Kind::pcc;
                r.subspace = v.reg.accessSize;
                r.field = {v.reg.address, v.reg.bitOffset, v.reg.bitWidth};
            }
            else if (rp.unitBytes != 0 && cppc::isWritable(rp.access))
            {
                r.kind = PlatformRegister::Kind::memory;
                r.space = static_cast<cppc::AddressSpace>(v.reg.space);
                r.address = v.reg.address;
                r.bytes = rp.unitBytes;
                r.field = {0, rp.shift, rp.width};
                (void)file_.map(r.space, r.address, r.bytes);
            }
        }
    }
    lastRequest_.resize(count);
    std::error_code ec;
    if (fs::exists(root / "proc/stat", ec))
    {
        sampler_ = std::make_unique<ProcStatSampler>(root);
        busy_.assign(sampler_->cpus(), 0);
    }
    file_.resetCounts();
    pcc_.resetCounts();
}

std::unique_ptr<Machine> SimulatorMachine::start(
    const BackendConfig& config, const fs::path& root, const fs::path&)
{
    return std::make_unique<SimulatorMachine>(config.simulator, root);
}

std::string SimulatorMachine::name() const
{
    return "simulator:" + layoutName_;
}

std::optional<std::uint32_t> SimulatorMachine::psdDomain(
    std::uint32_t cpu) const
{
    return internal::psdDomainOf(plan_, cpu);
}

Controls SimulatorMachine::controls() const noexcept
{
    // EPP always: the platform keeps it with the request (lastRequest()).
    return internal::planControls(true, true,
                                  controlWrites_.has(Control::autonomous),
                                  controlWrites_.has(Control::activityWindow));
}

CpuSample SimulatorMachine::sampleCpu(std::size_t cpu) const noexcept
{
    const std::uint32_t perf = delivered_[cpu];
    const std::uint16_t capacity =
        internal::utilization(busyScale, perf, topology_.cpus[cpu].highest);
    const std::size_t hosts = busy_.size();
    const std::uint16_t demand = hosts == 0 ? 0 : busy_[cpu % hosts];
    CpuSample out{std::min(demand, capacity), perf};
    out.perfLimited = perfLimited_[cpu];
    return out;
}

std::error_code SimulatorMachine::applyOne(const CppcRequest& r) noexcept
{
    std::error_code ec =
        writes_.write(control_, applies_, r,
                      [this](std::uint32_t cpu) { requested_[cpu] = true; });
    const std::error_code controls = controlWrites_.write(control_, r);
    if (!ec)
    {
        ec = controls;
    }
    if (!ec)
    {
        lastRequest_[r.cpu] = r;
    }
    return ec;
}

std::optional<std::uint64_t> SimulatorMachine::platformRead(
    const PlatformRegister& reg) const noexcept
{
    try
    {
        switch (reg.kind)
        {
            case PlatformRegister::Kind::none:
                return std::nullopt;
            case PlatformRegister::Kind::integer:
                return reg.integer;
            case PlatformRegister::Kind::pcc:
                return pcc_.peek(reg.subspace, reg.field);
            case PlatformRegister::Kind::memory:
                return (file_.peek(reg.space, reg.address, reg.bytes) >>
                        reg.field.bitOffset) &
                       cppc::fieldMask(reg.field.bitWidth);
        }
    }
    catch (const std::exception&)
    {
        // A layout's register the payload cannot hold: as if absent.
    }
    return std::nullopt;
}

void SimulatorMachine::platformWrite(const PlatformRegister& reg,
                                     std::uint64_t value) noexcept
{
    try
    {
        if (reg.kind == PlatformRegister::Kind::pcc)
        {
            pcc_.poke(reg.subspace, reg.field, value);
        }
        else if (reg.kind == PlatformRegister::Kind::memory)
        {
            const std::uint64_t mask = cppc::fieldMask(reg.field.bitWidth)
                                       << reg.field.bitOffset;
            const std::uint64_t unit =
                file_.peek(reg.space, reg.address, reg.bytes);
            file_.poke(reg.space, reg.address, reg.bytes,
                       (unit & ~mask) |
                           ((value << reg.field.bitOffset) & mask));
        }
    }
    catch (const std::exception&)
    {
        // Mapped at start-up; cannot fail afterwards.
    }
}

// What the platform delivers on `cpu` now, `elapsedUs` after the previous
// sample, and the excursion bits the platform limit causes.
std::uint32_t SimulatorMachine::platformPerf(
    std::size_t cpu, std::uint64_t elapsedUs, std::uint8_t& excursions) noexcept
{
    const CpuCaps& c = topology_.cpus[cpu];
    const auto& regs = registers_[cpu];
    const auto level = [&](Slot slot, std::uint32_t otherwise) {
        const std::optional<std::uint64_t> v = platformRead(regs[slot]);
        return v ? static_cast<std::uint32_t>(
                       std::min<std::uint64_t>(*v, c.highest))
                 : otherwise;
    };
    // Until the first request the CPU runs where it started (nominal).
    const std::uint32_t desired =
        requested_[cpu] ? std::clamp(level(desiredSlot, delivered_[cpu]),
                                     c.lowest, c.highest)
                        : delivered_[cpu];
    const std::uint32_t min = level(minSlot, 0);
    std::uint32_t max = level(maxSlot, c.highest);
    max = max == 0 ? c.highest : max;
    const bool autonomous = platformRead(regs[autoSlot]).value_or(0) & 1U;
    double perf = desired;
    if (autonomous)
    {
        const double epp = static_cast<double>(
            platformRead(regs[eppSlot]).value_or(128) & 0xFF);
        const std::size_t hosts = busy_.size();
        const double load =
            hosts == 0 ? 0.0
                       : static_cast<double>(busy_[cpu % hosts]) / busyScale;
        const double reach = (256.0 - epp) / 128.0;
        const double span = c.highest - c.lowestNonlinear;
        double goal = c.lowestNonlinear + span * std::min(1.0, load * reach);
        goal = std::clamp(goal, static_cast<double>(std::max(min, c.lowest)),
                          static_cast<double>(std::max(max, c.lowest)));
        std::uint64_t windowUs = cppc::decodeActivityWindow(
            platformRead(regs[windowSlot]).value_or(0));
        windowUs = windowUs == 0 ? 10'000 : windowUs;
        const double alpha = std::min(1.0, static_cast<double>(elapsedUs) /
                                               static_cast<double>(windowUs));
        autonomousPerf_[cpu] += (goal - autonomousPerf_[cpu]) * alpha;
        perf = autonomousPerf_[cpu];
    }
    else
    {
        autonomousPerf_[cpu] = perf;
    }
    auto delivered = static_cast<std::uint32_t>(std::lround(perf));
    excursions = 0;
    const std::uint32_t cap =
        limit_[cpu] == 0 ? 0 : std::max(limit_[cpu], c.lowest);
    if (cap != 0 && delivered > cap)
    {
        delivered = cap;
    }
    if (cap != 0)
    {
        // The bits say the platform's constraint held performance below
        // what was asked: Desired (not in autonomous mode, where it is
        // only a hint) and a non-zero Minimum.
        if (!autonomous && delivered < desired)
        {
            excursions |= desiredExcursion;
        }
        if (min != 0 && delivered < min)
        {
            excursions |= minimumExcursion;
        }
    }
    return delivered;
}

void SimulatorMachine::poll(std::uint64_t nowUs) noexcept
{
    const std::uint64_t elapsed =
        lastPollUs_ && nowUs > *lastPollUs_ ? nowUs - *lastPollUs_ : 0;
    lastPollUs_ = nowUs;
    for (std::size_t cpu = 0; cpu < delivered_.size(); ++cpu)
    {
        std::uint8_t excursions = 0;
        delivered_[cpu] = platformPerf(cpu, elapsed, excursions);
        const PlatformRegister& limited = registers_[cpu][limitedSlot];
        if (excursions != 0)
        {
            platformWrite(limited,
                          platformRead(limited).value_or(0) | excursions);
        }
        perfLimited_[cpu] = 0;
        if (readsPerfLimited_)
        {
            std::uint8_t bits = 0;
            if (!control_.takePerfLimited(static_cast<unsigned>(cpu), bits))
            {
                perfLimited_[cpu] = bits;
            }
        }
    }
}

void SimulatorMachine::setPlatformLimit(std::uint32_t cpu, std::uint32_t perf)
{
    if (cpu >= limit_.size())
    {
        throw std::out_of_range("no simulated CPU " + std::to_string(cpu));
    }
    limit_[cpu] = perf;
}

std::string SimulatorMachine::writeTarget(std::uint32_t cpu) const
{
    return "simulated CPU " + std::to_string(cpu) +
           " (its performance registers)";
}

cppc::backend::RestoreResult SimulatorMachine::restore() noexcept
{
    stop();
    return {};
}

std::uint64_t SimulatorMachine::registerValue(std::uint32_t cpu,
                                              CpcEntry entry) const
{
    const cppc::CpcDescriptor* d =
        cpu < plan_.cpuCount() ? plan_.descriptor(cpu) : nullptr;
    if (d == nullptr)
    {
        throw std::out_of_range("no simulated CPU " + std::to_string(cpu));
    }
    const cppc::RegisterDesc& reg = d->entry(entry).reg;
    if (d->entry(entry).isLiveRegister() &&
        reg.inSpace(cppc::AddressSpace::pcc))
    {
        return pcc_.peek(reg.accessSize,
                         {reg.address, reg.bitOffset, reg.bitWidth});
    }
    const cppc::RegisterPlan& rp = plan_.cpu(cpu).reg(entry);
    if (rp.unitBytes == 0)
    {
        throw std::out_of_range(
            "simulated CPU " + std::to_string(cpu) + " has no " +
            std::string(cppc::entryName(entry)) + " register in memory");
    }
    return rp.field(file_.peek(static_cast<cppc::AddressSpace>(reg.space),
                               reg.address, rp.unitBytes));
}

SimulatorCounts SimulatorMachine::counts() const
{
    const cppc::sim::AccessCounts registers = file_.totalCounts();
    const cppc::sim::PccCounts pcc = pcc_.counts();
    return {registers.reads, registers.writes + pcc.registerWrites,
            registers.locks + pcc.locks, pcc.commands, pcc.doorbells};
}

} // namespace cppcgov::daemon
