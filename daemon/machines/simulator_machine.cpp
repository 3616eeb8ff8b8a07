// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/simulator_machine.hpp"

#include <algorithm>
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
    SimulatorMachine(cppc::sim::makeLayout(config.layout, config.cpus), root)
{}

SimulatorMachine::SimulatorMachine(cppc::sim::Layout layout,
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
    for (const CpuCaps& c : topology_.cpus)
    {
        delivered_.push_back(c.nominal != 0 ? c.nominal : c.highest);
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
    return {Control::desired, Control::min, Control::max, Control::epp};
}

CpuSample SimulatorMachine::sampleCpu(std::size_t cpu) const noexcept
{
    const std::uint32_t perf = delivered_[cpu];
    const std::uint16_t capacity =
        internal::utilization(busyScale, perf, topology_.cpus[cpu].highest);
    const std::size_t hosts = busy_.size();
    const std::uint16_t demand = hosts == 0 ? 0 : busy_[cpu % hosts];
    return {std::min(demand, capacity), perf};
}

std::error_code SimulatorMachine::applyOne(const CppcRequest& r) noexcept
{
    const std::error_code ec =
        writes_.write(control_, applies_, r, [this, &r](std::uint32_t cpu) {
            const CpuCaps& c = topology_.cpus[cpu];
            delivered_[cpu] = std::clamp(r.desired, c.lowest, c.highest);
        });
    if (!ec)
    {
        lastRequest_[r.cpu] = r;
    }
    return ec;
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
