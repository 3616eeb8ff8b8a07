#include "daemon/machines/kernel_machine.hpp"

#include "daemon/machines.hpp"
#include "lib/backend/perf_caps.hpp"
#include "lib/backend/sysfs.hpp"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using policies::Coordination;
using policies::CpuCaps;
using policies::Domain;

// How many CPUs' feedback counters one sample() reads at most: each read
// is a system call in which the kernel asks the CPU for its counters.
constexpr std::size_t maxCounterReadsPerSample = 16;

// The estimator's window, a little shorter than the period between reads
// so that a read that comes a little early still publishes.
constexpr std::chrono::microseconds counterWindow{8'000};

// cpufreq's "unknown" transition latency (CPUFREQ_ETERNAL, -1 as unsigned).
constexpr std::uint64_t eternalLatencyNs = 4'294'967'295;

std::string quoted(const fs::path& path)
{
    return "'" + path.string() + "'";
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

} // namespace

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
    writtenIn_.assign(policies.size(), 0);
    asked_.assign(policies.size(), 0);
    online_.assign(policies.size(), 1);
    sampler_.emplace(root, count);
    busy_.assign(count, 0);

    // The counters of every online CPU, or none.
    std::vector<unsigned> online;
    for (const cppc::backend::KernelPolicy& p : policies)
    {
        online.insert(online.end(), p.affectedCpus.begin(),
                      p.affectedCpus.end());
    }
    openCounters(root, online);
}

void KernelMachine::openCounters(const fs::path& root,
                                 const std::vector<unsigned>& online)
{
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
    const std::vector<cppc::backend::KernelPolicy>& policies =
        backend_.policies();
    try
    {
        counters_.emplace(root, online);
        std::vector<std::optional<cppc::DeliveredPerfEstimator>> estimators(
            topology_.cpus.size());
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
            estimators[cpu].emplace(limits, options);
        }
        feedback_.emplace(std::move(estimators),
                          cppc::FeedbackRoundRobin::Options{
                              std::chrono::microseconds{counterPeriodUs},
                              maxCounterReadsPerSample});
    }
    catch (const std::exception& e)
    {
        counters_.reset();
        feedback_.reset();
        countersProblem_ = e.what();
    }
}

std::unique_ptr<Machine> KernelMachine::start(
    const BackendConfig&, const fs::path& root, const fs::path& stateDir)
{
    return std::make_unique<KernelMachine>(
        root, stateDir.empty() ? fs::path{} : kernelStateFile(stateDir));
}

std::string KernelMachine::name() const
{
    return "kernel";
}

std::optional<std::uint32_t> KernelMachine::psdDomain(std::uint32_t) const
{
    return std::nullopt;
}

Controls KernelMachine::controls() const noexcept
{
    return {Control::desired};
}

void KernelMachine::poll(std::uint64_t nowUs) noexcept
{
    if (counters_ && feedback_)
    {
        feedback_->poll(*counters_, std::chrono::microseconds(nowUs));
    }
    rewriteReturnedPolicies();
}

void KernelMachine::rewriteReturnedPolicies() noexcept
{
    if (!sampler_)
    {
        return;
    }
    const std::vector<cppc::backend::KernelPolicy>& policies =
        backend_.policies();
    for (std::size_t policy = 0; policy < policies.size(); ++policy)
    {
        const std::vector<unsigned>& cpus = policies[policy].relatedCpus;
        const bool online =
            std::any_of(cpus.begin(), cpus.end(),
                        [this](unsigned cpu) { return sampler_->online(cpu); });
        const bool returned = online && online_[policy] == 0;
        online_[policy] = online ? 1 : 0;
        if (!returned || asked_[policy] == 0 || cpus.empty())
        {
            continue;
        }
        const cppc::backend::KernelWrite w =
            backend_.setPerf(cpus.front(), asked_[policy]);
        if (w.error)
        {
            online_[policy] = 0; // tried again at the next sample
            continue;
        }
        for (const unsigned cpu : cpus)
        {
            requested_[cpu] = w.perf;
        }
    }
}

CpuSample KernelMachine::sampleCpu(std::size_t cpu) const noexcept
{
    const std::uint32_t known = feedback_ ? feedback_->deliveredPerf(cpu) : 0;
    return {internal::utilization(busy_[cpu],
                                  known != 0 ? known : requested_[cpu],
                                  topology_.cpus[cpu].highest),
            known};
}

std::error_code KernelMachine::applyOne(const CppcRequest& r) noexcept
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
    asked_[policy] = r.desired;
    const cppc::backend::KernelWrite w = backend_.setPerf(r.cpu, r.desired);
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

std::string KernelMachine::writeTarget(std::uint32_t cpu) const
{
    const int index = cpu < policyOf_.size() ? policyOf_[cpu] : -1;
    if (index < 0)
    {
        return "CPU " + std::to_string(cpu) + " (no cpufreq policy)";
    }
    return "CPU " + std::to_string(cpu) + " ('" +
           backend_.policies()[static_cast<std::size_t>(index)]
               .setspeed.string() +
           "')";
}

cppc::backend::RestoreResult KernelMachine::restore() noexcept
{
    stop();
    return backend_.restore();
}

} // namespace cppcgov::daemon
