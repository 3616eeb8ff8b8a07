#include "daemon/machines.hpp"

#include "lib/acpi/firmware.hpp"
#include "lib/acpi/table.hpp"
#include "lib/backend/perf_caps.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"
#include "lib/sim/layouts.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <system_error>
#include <tuple>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::CpcEntry;
using policies::Coordination;
using policies::CpuCaps;
using policies::Domain;

// How many CPUs' feedback counters one sample() reads at most: each read
// is a system call in which the kernel asks the CPU for its counters, so a
// large machine has its CPUs read in turn rather than all in one tick.
constexpr std::size_t maxCounterReadsPerSample = 16;

// The estimator's window, a little shorter than the period between reads
// so that a read that comes a little early still publishes.
constexpr std::chrono::microseconds counterWindow{8'000};

// cpufreq's "unknown" transition latency (CPUFREQ_ETERNAL, -1 as unsigned).
constexpr std::uint64_t eternalLatencyNs = 4'294'967'295;

constexpr std::array<CpcEntry, 4> capEntries = {
    CpcEntry::highestPerf,
    CpcEntry::nominalPerf,
    CpcEntry::lowestNonlinearPerf,
    CpcEntry::lowestPerf,
};

std::string quoted(const fs::path& path)
{
    return "'" + path.string() + "'";
}

// The four performance levels of `cpu`, each an Integer or a register
// `read` fetches (it returns nothing for registers it cannot reach).
CpuCaps capsOf(const cppc::CpcDescriptor& cpu,
               const std::function<std::optional<std::uint64_t>(
                   CpcEntry, const cppc::RegisterDesc&)>& read)
{
    std::array<std::uint32_t, capEntries.size()> values{};
    for (std::size_t i = 0; i < capEntries.size(); ++i)
    {
        const CpcEntry e = capEntries[i];
        const cppc::CpcValue& v = cpu.entry(e);
        std::optional<std::uint64_t> value;
        if (v.kind == cppc::CpcValue::Kind::integer)
        {
            value = v.integer;
        }
        else if (v.isLiveRegister())
        {
            value = read(e, v.reg);
        }
        if (!value)
        {
            throw std::runtime_error(
                cpu.label() + ": " + std::string(cppc::entryName(e)) +
                " is neither an Integer nor a register that can be read");
        }
        if (*value > std::numeric_limits<std::uint32_t>::max())
        {
            throw std::runtime_error(
                cpu.label() + ": " + std::string(cppc::entryName(e)) + " is " +
                std::to_string(*value) + ", above 32 bits");
        }
        values[i] = static_cast<std::uint32_t>(*value);
    }
    CpuCaps caps{values[0], values[1], values[2], values[3], 0};
    if (caps.highest == 0 || caps.lowest > caps.highest)
    {
        throw std::runtime_error(
            cpu.label() + ": unusable performance levels (highest " +
            std::to_string(caps.highest) + ", lowest " +
            std::to_string(caps.lowest) + ")");
    }
    return caps;
}

// Domains from each CPU's _PSD: SW_ANY and SW_ALL domains decide together,
// HW_ALL and CPUs without _PSD (or with an inconsistent one) alone.
policies::Topology psdTopology(const cppc::AccessPlan& plan,
                               std::vector<CpuCaps> caps)
{
    std::vector<Domain> domains;
    std::map<std::uint32_t, std::size_t> byNumber;
    for (std::uint32_t cpu = 0; cpu < plan.cpuCount(); ++cpu)
    {
        const cppc::CpcDescriptor* d = plan.descriptor(cpu);
        const std::optional<cppc::PsdInfo> psd =
            d != nullptr ? d->psd() : std::nullopt;
        if (!psd || psd->independent)
        {
            domains.push_back({{cpu}, Coordination::perCpu});
            continue;
        }
        const bool hardware =
            psd->coordination ==
            static_cast<std::uint8_t>(cppc::Coordination::hwAll);
        const auto [it, fresh] =
            byNumber.try_emplace(psd->domain, domains.size());
        if (fresh)
        {
            domains.push_back(
                {{}, hardware ? Coordination::perCpu : Coordination::shared});
        }
        domains[it->second].cpus.push_back(cpu);
    }
    return policies::makeTopology(std::move(caps), std::move(domains));
}

std::optional<std::uint32_t> psdDomainOf(const cppc::AccessPlan& plan,
                                         std::uint32_t cpu)
{
    const cppc::CpcDescriptor* d =
        cpu < plan.cpuCount() ? plan.descriptor(cpu) : nullptr;
    if (d == nullptr || !d->psd())
    {
        return std::nullopt;
    }
    return d->psd()->domain;
}

// The first error the plan found, if it refused a CPU.
void requireNoRefusal(const cppc::AccessPlan& plan)
{
    for (const cppc::Diagnostic& diag : plan.diagnostics())
    {
        if (diag.severity == cppc::Severity::error)
        {
            throw std::runtime_error(diag.message);
        }
    }
}

// busy (0..busyScale) x perf / highest, on the utilization scale.
std::uint16_t utilization(std::uint16_t busy, std::uint32_t perf,
                          std::uint32_t highest) noexcept
{
    const std::uint64_t util =
        std::uint64_t{busy} * perf / std::max<std::uint32_t>(highest, 1);
    return static_cast<std::uint16_t>(
        std::min<std::uint64_t>(util, policies::utilScale));
}

std::uint32_t transitionDelayUs(const fs::path& policyDir)
{
    try
    {
        const std::optional<std::string> text =
            cppc::backend::readAttributeIfExists(
                policyDir / "cpuinfo_transition_latency");
        const std::optional<std::uint64_t> ns =
            text ? cppc::backend::parseDecimal(*text) : std::nullopt;
        if (!ns || *ns >= eternalLatencyNs)
        {
            return 0;
        }
        return static_cast<std::uint32_t>((*ns + 999) / 1000);
    }
    catch (const std::system_error&)
    {
        return 0; // unknown, like a missing file
    }
}

// Keeps the first error of a batch.
void keepFirst(std::error_code& first, std::error_code ec) noexcept
{
    if (ec && !first)
    {
        first = ec;
    }
}

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

// A capability register in SystemMemory, loaded as the plan says.
std::optional<std::uint64_t> memoryValue(const cppc::RegisterPlan& rp,
                                         cppc::backend::DevMemMap& map,
                                         const cppc::RegisterDesc& reg)
{
    if (!reg.inSpace(cppc::AddressSpace::systemMemory) || rp.unitBytes == 0)
    {
        return std::nullopt;
    }
    const std::uint64_t unit = cppc::MappedIo::load(
        map.map(cppc::AddressSpace::systemMemory, reg.address, rp.unitBytes),
        rp.unitBytes);
    return rp.field(unit);
}

// setPerf of `r` through `control`, unless batch `batch` already wrote
// r.perf into the same Desired field; `written` then gets each CPU sharing
// that field.
template <typename Control, typename Written>
std::error_code setDesired(Control& control, internal::DesiredWrites& desired,
                           std::uint64_t batch, const PerfRequest& r,
                           const Written& written) noexcept
{
    const std::uint32_t group = desired.aliases.groupOf(r.cpu);
    if (desired.batch[group] == batch && desired.value[group] == r.perf)
    {
        return {};
    }
    if (const std::error_code ec = control.setPerf(r.cpu, r.perf))
    {
        return ec;
    }
    desired.batch[group] = batch;
    desired.value[group] = r.perf;
    for (const std::uint32_t cpu : desired.aliases.members(group))
    {
        written(cpu);
    }
    return {};
}

} // namespace

// ---------------------------------------------------------------------------
// Choosing and starting

fs::path cppcProbePath(const fs::path& root)
{
    return cppc::backend::sysPath(root, "devices/system/cpu/cpu0/acpi_cppc");
}

BackendKind resolveBackend(BackendKind kind, const fs::path& root)
{
    if (kind != BackendKind::automatic)
    {
        return kind;
    }
    std::error_code ec;
    return fs::exists(cppcProbePath(root), ec) ? BackendKind::kernel
                                               : BackendKind::simulator;
}

fs::path kernelStateFile(const fs::path& stateDir)
{
    return stateDir / "kernel.state";
}

std::unique_ptr<Machine> makeMachine(
    const BackendConfig& config, const fs::path& root, const fs::path& stateDir)
{
    const BackendKind kind = resolveBackend(config.type, root);
    std::string context = std::string(backendKindName(kind)) + " backend";
    if (config.type == BackendKind::automatic)
    {
        context += kind == BackendKind::kernel
                       ? " (auto: " + quoted(cppcProbePath(root)) + " exists)"
                       : " (auto: no " + quoted(cppcProbePath(root)) + ")";
    }
    try
    {
        switch (kind)
        {
            case BackendKind::simulator:
                return std::make_unique<SimulatorMachine>(config.simulator,
                                                          root);
            case BackendKind::kernel:
                return std::make_unique<KernelMachine>(
                    root,
                    stateDir.empty() ? fs::path{} : kernelStateFile(stateDir));
            case BackendKind::registers:
                return std::make_unique<RegistersMachine>(root);
            case BackendKind::automatic:
                break;
        }
    }
    catch (const std::exception& e)
    {
        throw std::runtime_error(context + ": " + e.what());
    }
    throw std::logic_error("backend kind not resolved");
}

std::vector<std::string> restoreMachineState(const fs::path& root,
                                             const fs::path& stateDir)
{
    std::vector<std::string> messages;
    if (stateDir.empty())
    {
        return messages;
    }
    const fs::path file = kernelStateFile(stateDir);
    try
    {
        const cppc::backend::RestoreReport report =
            cppc::backend::KernelBackend::restoreFromFile(root, file);
        if (!report.found)
        {
            return messages;
        }
        for (const std::string& error : report.errors)
        {
            messages.push_back("restoring the cpufreq settings recorded in " +
                               quoted(file) + ": " + error);
        }
        if (report.errors.empty())
        {
            messages.push_back(
                "restored the cpufreq settings that a previous run left "
                "changed, as recorded in " +
                quoted(file));
        }
    }
    catch (const std::exception& e)
    {
        messages.push_back(
            std::string("cannot restore the cpufreq settings of a previous "
                        "run: ") +
            e.what());
    }
    return messages;
}

// ---------------------------------------------------------------------------
// Desired aliases

namespace internal
{

DesiredAliases::DesiredAliases(const cppc::AccessPlan& plan)
{
    const auto count = static_cast<std::uint32_t>(plan.cpuCount());
    using Key = std::tuple<std::uint8_t, std::uint8_t, std::uint64_t,
                           std::uint8_t, std::uint8_t>;
    std::map<Key, std::uint32_t> byField;
    std::uint32_t groups = 0;
    groupOf_.resize(count);
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        const cppc::CpcDescriptor* d = plan.descriptor(cpu);
        const cppc::CpcValue* v =
            d != nullptr ? &d->entry(CpcEntry::desiredPerf) : nullptr;
        if (v == nullptr || !v->isLiveRegister())
        {
            groupOf_[cpu] = groups++;
            continue;
        }
        const cppc::RegisterDesc& r = v->reg;
        const auto [it, fresh] = byField.try_emplace(
            Key{r.space, r.accessSize, r.address, r.bitOffset, r.bitWidth},
            groups);
        groups += fresh ? 1 : 0;
        groupOf_[cpu] = it->second;
    }
    starts_.assign(std::size_t{groups} + 1, 0);
    for (const std::uint32_t g : groupOf_)
    {
        ++starts_[g + 1];
    }
    for (std::size_t g = 0; g < groups; ++g)
    {
        starts_[g + 1] += starts_[g];
    }
    members_.resize(count);
    std::vector<std::size_t> next(starts_.begin(), starts_.end() - 1);
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        members_[next[groupOf_[cpu]]++] = cpu;
    }
}

DesiredWrites::DesiredWrites(const cppc::AccessPlan& plan) :
    aliases(plan), batch(aliases.groups(), 0), value(aliases.groups(), 0)
{}

// ---------------------------------------------------------------------------
// What the machines share

std::error_code MachineBase::sample(std::uint64_t nowUs,
                                    std::span<CpuSample> out) noexcept
{
    if (out.size() != topology_.cpus.size())
    {
        return std::make_error_code(std::errc::invalid_argument);
    }
    std::error_code ec;
    if (sampler_)
    {
        ec = sampler_->sample(busy_);
    }
    poll(nowUs);
    const bool first = !started_;
    started_ = true;
    for (std::size_t cpu = 0; cpu < out.size(); ++cpu)
    {
        out[cpu] = first ? CpuSample{} : sampleCpu(cpu);
    }
    return ec;
}

void MachineBase::poll(std::uint64_t) noexcept {}

std::error_code MachineBase::apply(
    std::span<const PerfRequest> requests) noexcept
{
    if (stopped_)
    {
        return {};
    }
    ++applies_;
    std::error_code first;
    for (const PerfRequest& r : requests)
    {
        keepFirst(first, r.cpu < topology_.cpus.size()
                             ? applyOne(r)
                             : std::error_code(cppc::Errc::noSuchCpu));
    }
    return first;
}

std::optional<std::uint32_t> MachineBase::cpuOfHostCpu(
    std::uint32_t hostCpu) const noexcept
{
    if (hostCpu < topology_.cpus.size())
    {
        return hostCpu;
    }
    return std::nullopt;
}

} // namespace internal

// ---------------------------------------------------------------------------
// SimulatorMachine

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
    requireNoRefusal(plan_);
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
        caps.push_back(
            capsOf(*d, [this](CpcEntry, const cppc::RegisterDesc& reg) {
                return pccValue(pcc_, reg);
            }));
    }
    topology_ = psdTopology(plan_, caps);
    desired_ = internal::DesiredWrites(plan_);
    for (const CpuCaps& c : topology_.cpus)
    {
        delivered_.push_back(c.nominal != 0 ? c.nominal : c.highest);
    }
    std::error_code ec;
    if (fs::exists(root / "proc/stat", ec))
    {
        sampler_.emplace(root);
        busy_.assign(sampler_->cpus(), 0);
    }
    file_.resetCounts();
    pcc_.resetCounts();
}

std::string SimulatorMachine::name() const
{
    return "simulator:" + layoutName_;
}

std::optional<std::uint32_t> SimulatorMachine::psdDomain(
    std::uint32_t cpu) const
{
    return psdDomainOf(plan_, cpu);
}

CpuSample SimulatorMachine::sampleCpu(std::size_t cpu) const noexcept
{
    const std::uint32_t perf = delivered_[cpu];
    const std::uint16_t capacity =
        utilization(busyScale, perf, topology_.cpus[cpu].highest);
    const std::size_t hosts = busy_.size();
    const std::uint16_t demand = hosts == 0 ? 0 : busy_[cpu % hosts];
    return {std::min(demand, capacity), perf};
}

std::error_code SimulatorMachine::applyOne(const PerfRequest& r) noexcept
{
    return setDesired(control_, desired_, applies_, r,
                      [this, &r](std::uint32_t cpu) {
        const CpuCaps& c = topology_.cpus[cpu];
        delivered_[cpu] = std::clamp(r.perf, c.lowest, c.highest);
    });
}

std::vector<std::string> SimulatorMachine::restore() noexcept
{
    stop();
    return {};
}

std::uint64_t SimulatorMachine::desiredRegister(std::uint32_t cpu) const
{
    const cppc::CpcDescriptor* d =
        cpu < plan_.cpuCount() ? plan_.descriptor(cpu) : nullptr;
    if (d == nullptr)
    {
        throw std::out_of_range("no simulated CPU " + std::to_string(cpu));
    }
    const cppc::RegisterDesc& reg = d->entry(CpcEntry::desiredPerf).reg;
    if (reg.inSpace(cppc::AddressSpace::pcc))
    {
        return pcc_.peek(reg.accessSize,
                         {reg.address, reg.bitOffset, reg.bitWidth});
    }
    const cppc::RegisterPlan& rp = plan_.cpu(cpu).reg(CpcEntry::desiredPerf);
    if (rp.unitBytes == 0)
    {
        throw std::out_of_range("simulated CPU " + std::to_string(cpu) +
                                " has no Desired register in memory");
    }
    const std::uint64_t unit = file_.peek(
        static_cast<cppc::AddressSpace>(reg.space), reg.address, rp.unitBytes);
    return rp.field(unit);
}

SimulatorCounts SimulatorMachine::counts() const
{
    const cppc::sim::AccessCounts registers = file_.totalCounts();
    const cppc::sim::PccCounts pcc = pcc_.counts();
    return {registers.reads, registers.writes + pcc.registerWrites,
            registers.locks + pcc.locks, pcc.commands, pcc.doorbells};
}

// ---------------------------------------------------------------------------
// KernelMachine

KernelMachine::KernelMachine(const fs::path& root, const fs::path& stateFile) :
    backend_(root, cppc::backend::KernelBackendOptions{{}, stateFile})
{
    // Whatever throws below unwinds backend_, which puts back what it
    // switched.
    const std::vector<cppc::backend::KernelPolicy>& policies =
        backend_.policies();
    std::uint32_t count = 0;
    for (const cppc::backend::KernelPolicy& p : policies)
    {
        for (const unsigned cpu : p.relatedCpus)
        {
            count = std::max(count, cpu + 1);
        }
    }
    policyOf_.assign(count, -1);
    std::vector<CpuCaps> caps(count);
    std::vector<Domain> domains;
    for (std::size_t i = 0; i < policies.size(); ++i)
    {
        const cppc::backend::KernelPolicy& p = policies[i];
        const CpuCaps c{p.caps.highestPerf, p.caps.nominalPerf,
                        p.caps.lowestNonlinearPerf, p.caps.lowestPerf,
                        transitionDelayUs(p.dir)};
        Domain d{{}, Coordination::shared};
        for (const unsigned cpu : p.relatedCpus)
        {
            policyOf_[cpu] = static_cast<int>(i);
            caps[cpu] = c;
            d.cpus.push_back(cpu);
        }
        domains.push_back(std::move(d));
    }
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        if (policyOf_[cpu] < 0)
        {
            const cppc::backend::PerfCaps pc =
                cppc::backend::readPerfCaps(root, cpu);
            caps[cpu] = {pc.highestPerf, pc.nominalPerf, pc.lowestNonlinearPerf,
                         pc.lowestPerf, 0};
            domains.push_back({{cpu}, Coordination::perCpu});
        }
    }
    topology_ = policies::makeTopology(std::move(caps), std::move(domains));
    for (const CpuCaps& c : topology_.cpus)
    {
        requested_.push_back(c.highest);
    }
    delivered_.assign(count, 0);
    writtenIn_.assign(policies.size(), 0);
    nextCounterReadUs_.assign(count, 0);
    sampler_.emplace(root, count);
    busy_.assign(count, 0);

    // The counters of every online CPU, or none.
    std::vector<unsigned> online;
    for (const cppc::backend::KernelPolicy& p : policies)
    {
        online.insert(online.end(), p.affectedCpus.begin(),
                      p.affectedCpus.end());
    }
    for (const unsigned cpu : online)
    {
        const fs::path file = cppc::backend::sysPath(
            root, "devices/system/cpu/cpu" + std::to_string(cpu) +
                      "/acpi_cppc/feedback_ctrs");
        std::error_code ec;
        if (!fs::exists(file, ec))
        {
            countersProblem_ = quoted(file) + " does not exist";
            return;
        }
    }
    try
    {
        counters_.emplace(root, online);
        estimators_.resize(count);
        for (const unsigned cpu : online)
        {
            const cppc::backend::PerfCaps& pc =
                policies[static_cast<std::size_t>(policyOf_[cpu])].caps;
            cppc::FeedbackLimits limits;
            limits.referencePerf = pc.referencePerf;
            limits.highestPerf = pc.highestPerf;
            limits.lowestPerf = pc.lowestPerf;
            cppc::FeedbackOptions options;
            options.window = counterWindow;
            estimators_[cpu].emplace(limits, options);
        }
    }
    catch (const std::exception& e)
    {
        counters_.reset();
        estimators_.clear();
        countersProblem_ = e.what();
    }
}

std::string KernelMachine::name() const
{
    return "kernel";
}

std::optional<std::uint32_t> KernelMachine::psdDomain(std::uint32_t) const
{
    return std::nullopt;
}

void KernelMachine::poll(std::uint64_t nowUs) noexcept
{
    if (!counters_)
    {
        return;
    }
    const std::size_t count = estimators_.size();
    std::size_t budget = maxCounterReadsPerSample;
    for (std::size_t k = 0; k < count && budget > 0; ++k)
    {
        const std::size_t cpu = counterCursor_;
        counterCursor_ = counterCursor_ + 1 == count ? 0 : counterCursor_ + 1;
        if (!estimators_[cpu] || nowUs < nextCounterReadUs_[cpu])
        {
            continue;
        }
        --budget;
        nextCounterReadUs_[cpu] = nowUs + counterPeriodUs;
        cppc::CounterSample s;
        if (counters_->read(static_cast<unsigned>(cpu), s))
        {
            // Offline, or the kernel could not read them: unknown until
            // two good reads a window apart.
            estimators_[cpu]->reset();
            delivered_[cpu] = 0;
            continue;
        }
        const cppc::FeedbackResult r = estimators_[cpu]->update(s);
        if (r.published())
        {
            delivered_[cpu] = static_cast<std::uint32_t>(
                std::min(std::lround(r.deliveredPerf),
                         long{std::numeric_limits<std::uint32_t>::max()}));
        }
    }
}

CpuSample KernelMachine::sampleCpu(std::size_t cpu) const noexcept
{
    const std::uint32_t known = delivered_[cpu];
    return {utilization(busy_[cpu], known != 0 ? known : requested_[cpu],
                        topology_.cpus[cpu].highest),
            known};
}

std::error_code KernelMachine::applyOne(const PerfRequest& r) noexcept
{
    const int index = policyOf_[r.cpu];
    if (index < 0)
    {
        return {}; // no active policy: nothing can move the CPU
    }
    const auto policy = static_cast<std::size_t>(index);
    if (writtenIn_[policy] == applies_)
    {
        return {};
    }
    writtenIn_[policy] = applies_;
    const cppc::backend::KernelWrite w = backend_.setPerf(r.cpu, r.perf);
    if (w.error)
    {
        return w.error;
    }
    for (const unsigned cpu : backend_.policies()[policy].relatedCpus)
    {
        requested_[cpu] = w.perf;
    }
    return {};
}

std::vector<std::string> KernelMachine::restore() noexcept
{
    stop();
    return backend_.restore();
}

// ---------------------------------------------------------------------------
// RegistersMachine

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
    requireNoRefusal(*plan_);
    const auto count = static_cast<std::uint32_t>(plan_->cpuCount());
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        const cppc::CpcDescriptor* d = plan_->descriptor(cpu);
        if (d == nullptr)
        {
            throw std::runtime_error("CPU " + std::to_string(cpu) +
                                     " has no _CPC in " + quoted(tablesDir));
        }
        const cppc::CpuPlan& p = plan_->cpu(cpu);
        if (p.pccControl)
        {
            throw std::runtime_error(
                d->label() + ": its performance controls are in PCC " +
                "subspace " + std::to_string(p.pccSubspace.value_or(0)) +
                ", whose channel the kernel owns; the registers backend "
                "writes SystemMemory registers only: use the kernel backend");
        }
        const cppc::AccessClass desired = p.reg(CpcEntry::desiredPerf).access;
        if (!cppc::isWritable(desired))
        {
            throw std::runtime_error(
                d->label() + ": DesiredPerformance is " +
                std::string(cppc::className(desired)) + ", not writable");
        }
    }
    map_ = std::make_unique<cppc::backend::DevMemMap>(root / "dev/mem");
    control_ =
        std::make_unique<cppc::PerfControl>(*plan_, cppc::MappedIo(*map_));

    std::vector<CpuCaps> caps;
    for (std::uint32_t cpu = 0; cpu < count; ++cpu)
    {
        const cppc::CpuPlan& plan = plan_->cpu(cpu);
        caps.push_back(
            capsOf(*plan_->descriptor(cpu),
                   [this, &plan](CpcEntry e, const cppc::RegisterDesc& reg) {
            return memoryValue(plan.reg(e), *map_, reg);
            }));
    }
    topology_ = psdTopology(*plan_, caps);
    desired_ = internal::DesiredWrites(*plan_);
    for (const CpuCaps& c : topology_.cpus)
    {
        requested_.push_back(c.highest);
    }
    sampler_.emplace(root, count);
    busy_.assign(count, 0);
}

std::string RegistersMachine::name() const
{
    return "registers";
}

std::optional<std::uint32_t> RegistersMachine::psdDomain(
    std::uint32_t cpu) const
{
    return psdDomainOf(*plan_, cpu);
}

CpuSample RegistersMachine::sampleCpu(std::size_t cpu) const noexcept
{
    return {utilization(busy_[cpu], requested_[cpu],
                        topology_.cpus[cpu].highest),
            0};
}

std::error_code RegistersMachine::applyOne(const PerfRequest& r) noexcept
{
    return setDesired(*control_, desired_, applies_, r,
                      [this, &r](std::uint32_t cpu) {
        requested_[cpu] = r.perf;
    });
}

std::vector<std::string> RegistersMachine::restore() noexcept
{
    stop();
    return {};
}

} // namespace cppcgov::daemon
