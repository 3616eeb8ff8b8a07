// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/registers_machine.hpp"

#include "lib/acpi/firmware.hpp"
#include "lib/acpi/table.hpp"

#include <stdexcept>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::CpcEntry;
using policies::CpuCaps;

std::string quoted(const fs::path& path)
{
    return "'" + path.string() + "'";
}

} // namespace

RegistersMachine::RegistersMachine(const fs::path& root)
{
    const fs::path tablesDir = root / "sys/firmware/acpi/tables";
    const cppc::acpi::FirmwareReport report =
        cppc::acpi::readFirmware(cppc::acpi::loadTableDirectory(tablesDir),
                                 cppc::acpi::sysfsCpuUids(root));
    if (report.cpus.empty())
    {
        throw std::runtime_error(
            quoted(tablesDir) + ": the firmware describes no CPU");
    }
    for (const cppc::acpi::FirmwareCpu& c : report.cpus)
    {
        if (!c.errors.empty())
        {
            throw std::runtime_error(c.errors.front());
        }
        if (!c.descriptor)
        {
            throw std::runtime_error(cppc::cpuLabel(c.cpu, c.uid, c.path) +
                                     " has no _CPC: " + c.noCppc);
        }
    }
    plan_ = std::make_unique<cppc::AccessPlan>(
        cppc::AccessPlan::build(report.descriptors()));
    internal::requireNoRefusal(*plan_);
    const auto count = static_cast<std::uint32_t>(plan_->cpuCount());
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        if (plan_->descriptor(cpu) == nullptr)
        {
            throw std::runtime_error("CPU " + std::to_string(cpu) +
                                     " has no _CPC in " + quoted(tablesDir));
        }
    }
    cppc::backend::refuseDirectPcc(*plan_, cppc::backend::probeKernelPcc(root));
    cppc::backend::refuseWhileKernelDrivesCppc(
        cppc::backend::probeKernelCppcDriver(root));
    map_ = std::make_unique<cppc::backend::DevMemMap>(root / "dev/mem");
    control_ =
        std::make_unique<cppc::PerfControl>(*plan_, cppc::MappedIo(*map_));

    std::vector<CpuCaps> caps;
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        caps.push_back(internal::capsOf(
            *plan_->descriptor(cpu),
            [this, cpu](CpcEntry e, const cppc::RegisterDesc& reg) {
            return reg.inSpace(cppc::AddressSpace::systemMemory)
                       ? cppc::readRegister(*plan_, cpu, e, *map_)
                       : std::nullopt;
            }));
    }
    topology_ = internal::psdTopology(*plan_, caps);
    writes_ = internal::RequestWrites(
        *plan_, internal::everyCpuHasMinMax(*control_, count));
    for (const CpuCaps& c : topology_.cpus)
    {
        requested_.push_back(c.highest);
    }
    sampler_ = std::make_unique<ProcStatSampler>(root, count);
    busy_.assign(count, 0);
}

std::unique_ptr<Machine> RegistersMachine::start(
    const BackendConfig&, const fs::path& root, const fs::path&)
{
    return std::make_unique<RegistersMachine>(root);
}

std::string RegistersMachine::name() const
{
    return "registers";
}

std::optional<std::uint32_t> RegistersMachine::psdDomain(
    std::uint32_t cpu) const
{
    return internal::psdDomainOf(*plan_, cpu);
}

Controls RegistersMachine::controls() const noexcept
{
    if (writes_.minMax())
    {
        return {Control::desired, Control::min, Control::max};
    }
    return {Control::desired};
}

CpuSample RegistersMachine::sampleCpu(std::size_t cpu) const noexcept
{
    return {internal::utilization(busy_[cpu], requested_[cpu],
                                  topology_.cpus[cpu].highest),
            0};
}

std::error_code RegistersMachine::applyOne(const CppcRequest& r) noexcept
{
    return writes_.write(*control_, applies_, r, [this, &r](std::uint32_t cpu) {
        requested_[cpu] = r.desired;
    });
}

std::string RegistersMachine::writeTarget(std::uint32_t cpu) const
{
    return "CPU " + std::to_string(cpu) +
           " (its _CPC performance registers through /dev/mem)";
}

cppc::backend::RestoreResult RegistersMachine::restore() noexcept
{
    stop();
    return {};
}

} // namespace cppcgov::daemon
