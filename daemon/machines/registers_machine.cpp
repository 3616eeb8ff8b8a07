// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/registers_machine.hpp"

#include "lib/acpi/firmware.hpp"
#include "lib/acpi/table.hpp"

#include <stdexcept>
#include <system_error>

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
    controlWrites_ = internal::ControlWrites(*plan_, *control_);
    readsPerfLimited_ =
        internal::everyCpuHas(*control_, count, CpcEntry::perfLimited);
    perfLimited_.assign(count, 0);
    for (const CpuCaps& c : topology_.cpus)
    {
        requested_.push_back(c.highest);
    }
    // What restore() puts back.
    memory_ = root / "dev/mem";
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        if (const auto desired =
                cppc::readRegister(*plan_, cpu, CpcEntry::desiredPerf, *map_))
        {
            saved_.push_back({cpu, CpcEntry::desiredPerf, *desired});
        }
        for (const CpcEntry e : {CpcEntry::minPerf, CpcEntry::maxPerf,
                                 CpcEntry::energyPerfPreference,
                                 CpcEntry::autonomousSelectionEnable,
                                 CpcEntry::autonomousActivityWindow})
        {
            if (!control_->hasRegister(cpu, e))
            {
                continue;
            }
            std::uint64_t value = 0;
            if (const std::error_code ec = control_->readControl(cpu, e, value))
            {
                throw std::system_error(
                    ec, "CPU " + std::to_string(cpu) + ": reading " +
                            std::string(cppc::entryName(e)) + " to restore it");
            }
            saved_.push_back({cpu, e, value});
        }
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
    return internal::planControls(
        writes_.minMax(), controlWrites_.has(Control::epp),
        controlWrites_.has(Control::autonomous),
        controlWrites_.has(Control::activityWindow));
}

CpuSample RegistersMachine::sampleCpu(std::size_t cpu) const noexcept
{
    CpuSample out{internal::utilization(busy_[cpu], requested_[cpu],
                                        topology_.cpus[cpu].highest),
                  0};
    out.perfLimited = perfLimited_[cpu];
    return out;
}

void RegistersMachine::poll(std::uint64_t) noexcept
{
    if (!readsPerfLimited_)
    {
        return;
    }
    for (std::size_t cpu = 0; cpu < perfLimited_.size(); ++cpu)
    {
        std::uint8_t bits = 0;
        perfLimited_[cpu] =
            control_->takePerfLimited(static_cast<unsigned>(cpu), bits)
                ? 0
                : bits;
    }
}

std::error_code RegistersMachine::applyOne(const CppcRequest& r) noexcept
{
    std::error_code ec =
        writes_.write(*control_, applies_, r, [this, &r](std::uint32_t cpu) {
            requested_[cpu] = r.desired;
        });
    const std::error_code controls = controlWrites_.write(*control_, r);
    return ec ? ec : controls;
}

std::string RegistersMachine::writeTarget(std::uint32_t cpu) const
{
    return "CPU " + std::to_string(cpu) +
           " (its _CPC performance registers through /dev/mem)";
}

cppc::backend::RestoreResult RegistersMachine::restore() noexcept
{
    cppc::backend::RestoreResult result;
    if (stopped_)
    {
        return result;
    }
    stop();
    stopped_ = true;
    for (const Saved& s : saved_)
    {
        const std::error_code ec =
            s.entry == CpcEntry::desiredPerf
                ? control_->setPerf(s.cpu, s.value)
                : control_->writeControl(s.cpu, s.entry, s.value);
        if (ec)
        {
            try
            {
                result.fail(cppc::backend::RestoreStep::writeSaved, memory_, ec,
                            "cpu" + std::to_string(s.cpu),
                            std::string(cppc::entryName(s.entry)) + " " +
                                std::to_string(s.value));
            }
            catch (const std::exception&)
            {
                // Out of memory while describing it: nothing better to do.
            }
        }
    }
    return result;
}

} // namespace cppcgov::daemon
