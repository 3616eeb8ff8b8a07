// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/registers_machine.hpp"

#include "lib/acpi/firmware.hpp"
#include "lib/acpi/table.hpp"
#include "lib/backend/state_file.hpp"
#include "lib/error.hpp"

#include <stdexcept>
#include <system_error>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::CpcEntry;
using cppc::backend::RestoreResult;
using cppc::backend::RestoreStep;
using policies::CpuCaps;

std::string quoted(const fs::path& path)
{
    return "'" + path.string() + "'";
}

// The register the firmware gives `cpu`'s `entry`, when it is one.
std::optional<cppc::RegisterDesc> registerOf(const cppc::AccessPlan& plan,
                                             std::uint32_t cpu, CpcEntry entry)
{
    const cppc::CpcDescriptor* d = plan.descriptor(cpu);
    if (d == nullptr || !d->entry(entry).isLiveRegister())
    {
        return std::nullopt;
    }
    return d->entry(entry).reg;
}

// Whether the firmware describes `s`'s register as it did when it was
// saved: the same address and field.
bool sameRegister(const cppc::AccessPlan& plan, const SavedRegister& s)
{
    const std::optional<cppc::RegisterDesc> reg =
        registerOf(plan, s.cpu, s.entry);
    return reg && reg->address == s.address && reg->bitOffset == s.bitOffset &&
           reg->bitWidth == s.bitWidth;
}

void failOne(RestoreResult& result, const fs::path& memory,
             const SavedRegister& s, std::error_code ec) noexcept
{
    try
    {
        result.fail(RestoreStep::writeSaved, memory, ec, registersRecord(s.cpu),
                    std::string(cppc::entryName(s.entry)) + " " +
                        std::to_string(s.value));
    }
    catch (const std::exception&)
    {
        // Out of memory while describing it: nothing better to do.
    }
}

// Writes every saved register back through `control`, carrying on past
// failures; a register the firmware no longer describes with its saved
// address and field is not written (Errc::registerMoved).
RestoreResult putBack(const cppc::AccessPlan& plan, cppc::PerfControl& control,
                      const fs::path& memory,
                      const std::vector<SavedRegister>& saved) noexcept
{
    RestoreResult result;
    for (const SavedRegister& s : saved)
    {
        std::error_code ec;
        if (!sameRegister(plan, s))
        {
            ec = cppc::Errc::registerMoved;
        }
        else if (s.entry == CpcEntry::desiredPerf)
        {
            ec = control.setPerf(s.cpu, s.value);
        }
        else
        {
            ec = control.writeControl(s.cpu, s.entry, s.value);
        }
        if (ec)
        {
            failOne(result, memory, s, ec);
        }
    }
    return result;
}

} // namespace

RegistersMachine::Registers RegistersMachine::open(const fs::path& root)
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
    Registers r;
    r.plan = std::make_unique<cppc::AccessPlan>(
        cppc::AccessPlan::build(report.descriptors()));
    internal::requireNoRefusal(*r.plan);
    const auto count = static_cast<std::uint32_t>(r.plan->cpuCount());
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        if (r.plan->descriptor(cpu) == nullptr)
        {
            throw std::runtime_error("CPU " + std::to_string(cpu) +
                                     " has no _CPC in " + quoted(tablesDir));
        }
    }
    cppc::backend::refuseDirectPcc(*r.plan,
                                   cppc::backend::probeKernelPcc(root));
    cppc::backend::refuseWhileKernelDrivesCppc(
        cppc::backend::probeKernelCppcDriver(root));
    r.memory = root / "dev/mem";
    r.map = std::make_unique<cppc::backend::DevMemMap>(r.memory);
    r.control =
        std::make_unique<cppc::PerfControl>(*r.plan, cppc::MappedIo(*r.map));
    return r;
}

RegistersMachine::RegistersMachine(const fs::path& root, fs::path stateFile) :
    stateFile_(std::move(stateFile))
{
    cppc::backend::requireNoStateFile(stateFile_, "the _CPC registers");
    Registers opened = open(root);
    plan_ = std::move(opened.plan);
    map_ = std::move(opened.map);
    control_ = std::move(opened.control);
    memory_ = std::move(opened.memory);
    const auto count = static_cast<std::uint32_t>(plan_->cpuCount());

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
    sampler_ = std::make_unique<ProcStatSampler>(root, count);
    busy_.assign(count, 0);
    // Last: nothing after it can fail, so that a start that fails leaves
    // no record behind.
    saveControls(count);
}

RegistersMachine::~RegistersMachine()
{
    (void)restore();
}

void RegistersMachine::saveControls(std::uint32_t count)
{
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        for (const CpcEntry e : savedEntries)
        {
            const std::optional<cppc::RegisterDesc> reg =
                registerOf(*plan_, cpu, e);
            if (!reg)
            {
                continue;
            }
            std::optional<std::uint64_t> value;
            if (e == CpcEntry::desiredPerf)
            {
                value = cppc::readRegister(*plan_, cpu, e, *map_);
            }
            else if (control_->hasRegister(cpu, e))
            {
                std::uint64_t v = 0;
                if (const std::error_code ec = control_->readControl(cpu, e, v))
                {
                    throw std::system_error(
                        ec,
                        "CPU " + std::to_string(cpu) + ": reading " +
                            std::string(cppc::entryName(e)) + " to restore it");
                }
                value = v;
            }
            if (value)
            {
                saved_.push_back({cpu, e, reg->address, reg->bitOffset,
                                  reg->bitWidth, *value});
            }
        }
    }
    if (stateFile_.empty())
    {
        return;
    }
    if (const std::error_code ec = cppc::backend::writeStateFile(
            stateFile_, formatRegistersState(saved_)))
    {
        throw std::system_error(ec, "recording the _CPC registers in " +
                                        quoted(stateFile_));
    }
}

std::unique_ptr<Machine> RegistersMachine::start(
    const BackendConfig&, const fs::path& root, const fs::path& stateDir)
{
    return std::make_unique<RegistersMachine>(
        root, stateDir.empty() ? fs::path{} : registersStateFile(stateDir));
}

RestoreResult RegistersMachine::restoreFromFile(const fs::path& root,
                                                const fs::path& stateFile)
{
    return cppc::backend::restoreFromStateFile<RegistersCodec>(
        stateFile, "the _CPC registers",
        [&root](const std::vector<SavedRegister>& saved) {
        RestoreResult result;
        std::error_code refused;
        try
        {
            const Registers r = open(root);
            return putBack(*r.plan, *r.control, r.memory, saved);
        }
        catch (const std::system_error& e)
        {
            refused = e.code();
        }
        catch (const std::exception&)
        {
            // The firmware tables cannot be read or describe no usable
            // _CPC now.
            refused = cppc::Errc::cpuRefused;
        }
        for (const SavedRegister& s : saved)
        {
            failOne(result, root / "dev/mem", s, refused);
        }
        return result;
        });
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
    result = putBack(*plan_, *control_, memory_, saved_);
    if (!stateFile_.empty())
    {
        try
        {
            cppc::backend::keepWhatIsLeft<RegistersCodec>(stateFile_, saved_,
                                                          result);
        }
        catch (...)
        {
            // Only allocation can fail here; the state file holds at least
            // what is not back.
        }
    }
    return result;
}

} // namespace cppcgov::daemon
