// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/kernel_machine.hpp"

#include "daemon/machines.hpp"
#include "lib/acpi/pcct.hpp"
#include "lib/acpi/table.hpp"
#include "lib/backend/bounded_io.hpp"
#include "lib/backend/perf_caps.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <span>
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
// On a machine with a PCC mailbox, where each read is a read command (a
// doorbell of its own that no other read shares): one CPU a tick at most
// (see KernelMachine::pccDoorbellsPerTick).
constexpr std::size_t maxPccCounterReadsPerSample = 1;
constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();
// limitedPending_ for a policy whose perf_limited was not read since the
// last sample: its CPUs keep the bits they report.
constexpr std::uint8_t noLimitedRead = 0xff;

// The estimator's window, a little shorter than the period between reads
// so that a read that comes a little early still publishes.
constexpr std::chrono::microseconds counterWindow{8'000};
constexpr std::chrono::microseconds counterMaxReadTime{1'000};
constexpr unsigned counterWindowPerReadTime = 20;

// cpufreq's "unknown" transition latency (CPUFREQ_ETERNAL, -1 as unsigned).
constexpr std::uint64_t eternalLatencyNs = 4'294'967'295;

// The access deadline when neither the configuration nor the firmware
// gives one, and how it follows from the PCCT's latencies.
// Generous against a loaded machine's scheduling delays (a false alarm
// holds a policy's writes until its access returns, and logs twice), short
// against a mailbox that stopped: Altra's 110 us gives 7 ms.
constexpr std::uint32_t fallbackDeadlineUs = 10'000;
constexpr std::uint32_t minPcctDeadlineUs = 5'000;
constexpr std::uint64_t pcctDeadlineFactor = 64;
constexpr std::uint64_t maxDeadlineUs = 10'000'000;

std::string quoted(const fs::path& path)
{
    return "'" + path.string() + "'";
}

// "5 ms", "1760 us".
std::string durationText(std::uint32_t us)
{
    return us % 1000 == 0 ? std::to_string(us / 1000) + " ms"
                          : std::to_string(us) + " us";
}

struct Deadline
{
    std::uint32_t us = 0;
    std::string source;
    // The firmware has a PCC mailbox (a PCCT with a subspace): the kernel
    // reads the counters there with one read command, which latches both.
    bool pcc = false;
};

// pcctDeadlineFactor x the largest nominal latency or turnaround of the
// PCCT's subspaces, or the fallback; whether there is a PCC mailbox.
Deadline pcctDeadline(const fs::path& root)
{
    const fs::path file =
        cppc::backend::sysPath(root, "firmware/acpi/tables/PCCT");
    std::error_code ec;
    if (!fs::exists(file, ec))
    {
        return {fallbackDeadlineUs, "no PCCT"};
    }
    try
    {
        const cppc::acpi::Pcct pcct =
            cppc::acpi::parsePcct(cppc::acpi::loadTableFile(file));
        const bool pcc = !pcct.subspaces.empty();
        std::uint32_t worst = 0;
        for (const cppc::acpi::PccSubspace& ss : pcct.subspaces)
        {
            worst = std::max(
                {worst, ss.nominalLatencyUs, ss.minRequestTurnaroundUs});
        }
        if (worst == 0)
        {
            return {fallbackDeadlineUs, "the PCCT gives no latency", pcc};
        }
        const std::uint64_t us = std::clamp<std::uint64_t>(
            worst * pcctDeadlineFactor, minPcctDeadlineUs, maxDeadlineUs);
        return {static_cast<std::uint32_t>(us),
                "from the PCCT's latency of " + std::to_string(worst) + " us",
                pcc};
    }
    catch (const std::exception& e)
    {
        return {fallbackDeadlineUs,
                std::string("the PCCT could not be read: ") + e.what()};
    }
}

// The configured deadline, or the PCCT's (above).
Deadline settleDeadline(const AccessConfig& config, const fs::path& root)
{
    Deadline d = pcctDeadline(root);
    if (config.deadlineUs != 0)
    {
        d.us = config.deadlineUs;
        d.source = "configured";
    }
    return d;
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

// Hands out the readings the workers took, and starts the next ones.
class KernelMachine::AsyncCounters final : public cppc::CounterSource
{
  public:
    explicit AsyncCounters(KernelMachine& machine) : m_(machine) {}

    std::error_code read(unsigned cpu,
                         cppc::CounterSample& out) noexcept override
    {
        CounterRead& r = m_.reads_[cpu];
        if (!r.ready)
        {
            if (!r.running && m_.putOff(cpu))
            {
                return std::make_error_code(std::errc::operation_would_block);
            }
            if (r.running || m_.readsRunning_ >= maxCounterReadsInFlight ||
                m_.counterStarts_ == 0 || m_.readStarts_ == 0)
            {
                return std::make_error_code(std::errc::operation_in_progress);
            }
            // Taken before the start: the worker may begin at once.
            const std::size_t readStarts = m_.readStarts_;
            const std::uint32_t rounds = r.rounds;
            --m_.readStarts_;
            r.withLimited = m_.takePerfLimited(cpu);
            if (!m_.pool_->start(m_.readSlot(cpu)))
            {
                m_.readStarts_ = readStarts;
                r.rounds = rounds;
                return std::make_error_code(std::errc::operation_in_progress);
            }
            --m_.counterStarts_;
            m_.readsStarted_ += r.withLimited ? 2 : 1;
            r.started = true;
            r.startedUs = m_.lastPollUs_;
            r.startedRequest = m_.requested_[cpu];
            r.startedDelivered =
                m_.feedback_ ? m_.feedback_->deliveredPerf(cpu) : 0;
            r.busyUs = 0;
            r.running = true;
            r.startedAt = Clock::now();
            ++m_.readsRunning_;
            if (m_.pool_->maxThreads() != 0)
            {
                return std::make_error_code(std::errc::operation_in_progress);
            }
            m_.collect(); // it ran inline
        }
        r.ready = false;
        out = r.sample;
        return r.result;
    }

  private:
    KernelMachine& m_;
};

KernelMachine::KernelMachine(const fs::path& root,
                             const KernelMachineOptions& options) :
    backend_(
        root,
        cppc::backend::KernelBackendOptions{{}, options.stateFile, options.io}),
    io_(options.io != nullptr ? *options.io : cppc::backend::sysfsIo())
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
        const CpuCaps c{p.caps.highestPerf,
                        p.caps.nominalPerf,
                        p.caps.lowestNonlinearPerf,
                        p.caps.lowestPerf,
                        transitionDelayUs(p.dir),
                        p.scale.perfToKhz(p.caps.lowestPerf),
                        p.scale.perfToKhz(p.caps.nominalPerf)};
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
    online_.assign(policies.size(), 1);
    writes_.resize(policies.size());
    for (std::size_t policy = 0; policy < policies.size(); ++policy)
    {
        writes_[policy].knobsInForce = backend_.saved()[policy].knobs;
    }
    reads_.resize(count);
    writeReason_.resize(count);
    readReason_.resize(count);
    countersFile_.resize(count);
    sampler_ = std::make_unique<ProcStatSampler>(root, count);
    busy_.assign(count, 0);

    // The counters of every online CPU, or none.
    std::vector<unsigned> online;
    for (const cppc::backend::KernelPolicy& p : policies)
    {
        online.insert(online.end(), p.affectedCpus.begin(),
                      p.affectedCpus.end());
    }
    Deadline deadline = settleDeadline(options.access, root);
    deadlineUs_ = deadline.us;
    deadlineSource_ = std::move(deadline.source);
    pcc_ = deadline.pcc;
    openCounters(root, online, pcc_);
    limitedPending_.assign(policies.size(), noLimitedRead);
    limited_.assign(count, 0);
    probePerfLimited();

    source_ = std::make_unique<AsyncCounters>(*this);
    // A worker for each policy written at once and each counter read.
    const std::size_t threads = std::min<std::size_t>(
        options.access.threads, policies.size() + maxCounterReadsInFlight);
    pool_ = std::make_unique<cppc::backend::AccessPool>(
        writes_.size() + reads_.size(), threads,
        [this](std::size_t slot) { access(slot); });
}

KernelMachine::~KernelMachine() = default;

void KernelMachine::openCounters(const fs::path& root,
                                 const std::vector<unsigned>& online, bool pcc)
{
    for (const unsigned cpu : online)
    {
        const fs::path file = cppc::backend::sysPath(
            root, "devices/system/cpu/cpu" + std::to_string(cpu) +
                      "/acpi_cppc/feedback_ctrs");
        countersFile_[cpu] = file;
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
            // The kernel takes both counters in one command (one PCC read,
            // or two register reads back to back), so a slow system call
            // (a PCC round trip: 110 us and more) does not skew them; it
            // only blurs when they were taken, by at most its length, which
            // these bound to a twentieth of the time between samples. A PCC
            // read command latches both at one instant: however long it
            // takes, the ratio of their deltas is exact, so there any read
            // that returns within the access deadline is used.
            options.maxReadTime = pcc ? std::chrono::microseconds{deadlineUs_}
                                      : counterMaxReadTime;
            options.windowPerReadTime = pcc ? 1 : counterWindowPerReadTime;
            estimators[cpu].emplace(limits, options);
        }
        feedback_.emplace(
            std::move(estimators),
            cppc::FeedbackRoundRobin::Options{
                std::chrono::microseconds{counterPeriodUs},
                pcc ? maxPccCounterReadsPerSample : maxCounterReadsPerSample});
    }
    catch (const std::exception& e)
    {
        counters_.reset();
        feedback_.reset();
        countersProblem_ = e.what();
    }
}

void KernelMachine::probePerfLimited()
{
    const std::vector<cppc::backend::KernelPolicy>& policies =
        backend_.policies();
    if (!counters_)
    {
        perfLimitedProblem_ = "the feedback counters are not read";
        return;
    }
    for (const cppc::backend::KernelPolicy& p : policies)
    {
        const fs::path file = p.dir / "perf_limited";
        std::error_code ec;
        std::string text;
        if (!fs::exists(file, ec))
        {
            perfLimitedProblem_ = quoted(file) + " does not exist";
        }
        else if (const std::error_code readError = io_.read(file, text))
        {
            perfLimitedProblem_ =
                quoted(file) + ": the read failed: " + readError.message();
        }
        else if (const auto bits = cppc::backend::parseDecimal(text);
                 !bits || *bits > (desiredExcursion | minimumExcursion))
        {
            perfLimitedProblem_ = quoted(file) + " holds '" + text + "'";
        }
        if (!perfLimitedProblem_.empty())
        {
            perfLimitedFile_.clear();
            return;
        }
        perfLimitedFile_.push_back(file);
    }
    readsPerfLimited_ = true;
}

bool KernelMachine::takePerfLimited(std::size_t cpu) noexcept
{
    const int policy = policyOf_[cpu];
    if (!readsPerfLimited_ || policy < 0 ||
        backend_.policies()[static_cast<std::size_t>(policy)].cpu != cpu)
    {
        return false;
    }
    if (!pcc_)
    {
        return true;
    }
    CounterRead& r = reads_[cpu];
    r.rounds = std::min(r.rounds + 1, pccPerfLimitedEvery);
    if (r.rounds < pccPerfLimitedEvery || readStarts_ == 0)
    {
        return false; // its turn waits for a tick with room for it
    }
    r.rounds = 0;
    --readStarts_;
    return true;
}

bool KernelMachine::putOff(std::size_t cpu) const noexcept
{
    const CounterRead& r = reads_[cpu];
    if (!r.started || !sampler_ || sampler_->cpus() != reads_.size() ||
        lastPollUs_ < r.startedUs || requested_[cpu] != r.startedRequest)
    {
        return false;
    }
    const std::uint64_t since = lastPollUs_ - r.startedUs;
    if (since < idleReadEveryUs && r.busyUs * idleBusyShare < since)
    {
        return true;
    }
    const std::uint32_t now = feedback_ ? feedback_->deliveredPerf(cpu) : 0;
    const std::uint32_t before = r.startedDelivered;
    const std::uint32_t apart = now > before ? now - before : before - now;
    return since < steadyReadEveryUs && now != 0 && before != 0 &&
           std::uint64_t{apart} * steadyAgreement <= before;
}

void KernelMachine::readPerfLimited(std::size_t policy, CounterRead& r) noexcept
{
    r.limited = 0;
    const fs::path& file = perfLimitedFile_[policy];
    if ((r.limitedError = io_.read(file, r.limitedText)))
    {
        return;
    }
    const auto bits = cppc::backend::parseDecimal(r.limitedText);
    if (!bits || *bits > (desiredExcursion | minimumExcursion))
    {
        r.limitedError = cppc::Errc::malformedAttribute;
        return;
    }
    r.limited = static_cast<std::uint8_t>(*bits);
    if (r.limited != 0)
    {
        // The bits are sticky: written back, they are cleared.
        const char text[] = {static_cast<char>('0' + r.limited), '\n'};
        r.limitedError = io_.write(file, std::string_view(text, sizeof text));
    }
}

std::unique_ptr<Machine> KernelMachine::start(
    const BackendConfig& config, const fs::path& root, const fs::path& stateDir)
{
    KernelMachineOptions options;
    options.stateFile =
        stateDir.empty() ? fs::path{} : kernelStateFile(stateDir);
    options.access = config.access;
    return std::make_unique<KernelMachine>(root, options);
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
    using cppc::backend::PolicyKnob;
    // A control given twice is one: each one not offered repeats desired.
    const auto ifOffered = [this](PolicyKnob knob, Control c) {
        return backend_.offers(knob) ? c : Control::desired;
    };
    return {Control::desired,
            ifOffered(PolicyKnob::autoSelect, Control::autonomous),
            ifOffered(PolicyKnob::activityWindow, Control::activityWindow),
            ifOffered(PolicyKnob::epp, Control::epp)};
}

void KernelMachine::poll(std::uint64_t nowUs) noexcept
{
    const Clock::time_point now = Clock::now();
    collect();
    checkDeadlines(now);
    lastPollUs_ = nowUs;
    if (counters_ && feedback_)
    {
        // With a PCCT the readings are taken here and the next reads start
        // at endTick(), after the tick's writes.
        counterStarts_ = pcc_ ? 0 : unlimited;
        readStarts_ = counterStarts_;
        if (sampler_ && sampler_->cpus() == reads_.size())
        {
            const std::span<const std::uint64_t> busy = sampler_->busyUs();
            for (std::size_t cpu = 0; cpu < reads_.size(); ++cpu)
            {
                reads_[cpu].busyUs += busy[cpu];
            }
        }
        feedback_->poll(*source_, std::chrono::microseconds(nowUs));
    }
    rewriteReturnedPolicies();
    flush(now);
    // A read since the last sample replaces the bits of every CPU of its
    // policy; the others hold theirs.
    const std::vector<cppc::backend::KernelPolicy>& policies =
        backend_.policies();
    for (std::size_t policy = 0; policy < limitedPending_.size(); ++policy)
    {
        const std::uint8_t bits =
            std::exchange(limitedPending_[policy], noLimitedRead);
        if (bits == noLimitedRead)
        {
            continue;
        }
        for (const unsigned cpu : policies[policy].relatedCpus)
        {
            limited_[cpu] = bits;
        }
    }
}

void KernelMachine::endTick() noexcept
{
    const std::size_t writes = std::exchange(tickWrites_, 0);
    if (!pcc_ || !counters_ || !feedback_)
    {
        return;
    }
    std::size_t room =
        writes < pccDoorbellsPerTick ? pccDoorbellsPerTick - writes : 0;
    if (room == 0 && ticksWithoutRead_ >= pccTicksWithoutRead)
    {
        room = 1; // the counters must not wait for the writes to stop
    }
    counterStarts_ = std::min(room, maxPccCounterReadsPerSample);
    readStarts_ = room;
    const std::uint64_t before = readsStarted_;
    feedback_->poll(*source_, std::chrono::microseconds(lastPollUs_));
    ticksWithoutRead_ =
        readsStarted_ != before
            ? 0
            : std::min(ticksWithoutRead_ + 1, pccTicksWithoutRead);
    counterStarts_ = 0;
    readStarts_ = 0;
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
        if (returned && writes_[policy].wanted != 0)
        {
            writes_[policy].dirty = true;
            writes_[policy].rewrite = true;
        }
    }
}

CpuSample KernelMachine::sampleCpu(std::size_t cpu) const noexcept
{
    const std::uint32_t known = feedback_ ? feedback_->deliveredPerf(cpu) : 0;
    CpuSample s{
        internal::utilization(busy_[cpu], known != 0 ? known : requested_[cpu],
                              topology_.cpus[cpu].highest),
        known, 0, limited_[cpu]};
    if (feedback_ && policyOf_[cpu] >= 0)
    {
        const cppc::FeedbackRoundRobin::Window& w = feedback_->lastWindow(cpu);
        s.counters = {
            w.referenceDelta, w.deliveredDelta,
            static_cast<std::uint64_t>(w.elapsed.count() / 1000),
            backend_.policies()[static_cast<std::size_t>(policyOf_[cpu])]
                .caps.referencePerf,
            w.sequence};
    }
    return s;
}

std::error_code KernelMachine::apply(
    std::span<const CppcRequest> requests) noexcept
{
    const std::error_code ec = MachineBase::apply(requests);
    flush(Clock::now());
    return ec;
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
    using cppc::backend::PolicyKnob;
    const cppc::backend::KernelPolicy& p = backend_.policies()[policy];
    if (r.desired > p.caps.highestPerf ||
        (r.activityWindowUs &&
         *r.activityWindowUs > cppc::backend::maxActivityWindowUs))
    {
        return cppc::Errc::valueOutOfRange;
    }
    PolicyWrite& w = writes_[policy];
    // The knobs the request sets; the others stay as they are.
    cppc::backend::KnobValues knobs = w.wantedKnobs;
    const auto set = [&](PolicyKnob knob, std::optional<std::uint32_t> v) {
        if (v && p.offers(knob))
        {
            knobs[static_cast<std::size_t>(knob)] = v;
        }
    };
    set(PolicyKnob::autoSelect, r.autonomous ? 1U : 0U);
    set(PolicyKnob::activityWindow, r.activityWindowUs);
    set(PolicyKnob::epp, r.epp);
    const auto pending = [&knobs](const cppc::backend::KnobValues& base) {
        for (std::size_t i = 0; i < knobs.size(); ++i)
        {
            if (knobs[i] && knobs[i] != base[i])
            {
                return true;
            }
        }
        return false;
    };
    if (r.desired == w.landed && r.desired == w.wanted && !w.running &&
        !w.failedAt && !pending(w.knobsInForce))
    {
        w.wantedKnobs = knobs;
        return {}; // in force already
    }
    w.wanted = r.desired;
    w.wantedKnobs = knobs;
    // Back to the values in flight: nothing more to write unless that
    // write fails (which makes it dirty again) or the policy must be
    // rewritten.
    w.dirty =
        !(w.running && r.desired == w.issued && !pending(w.issuedKnobs)) ||
        w.rewrite;
    return {};
}

void KernelMachine::access(std::size_t slot) noexcept
{
    if (slot < writes_.size())
    {
        PolicyWrite& w = writes_[slot];
        const unsigned cpu = backend_.policies()[slot].cpu;
        const cppc::backend::KernelWrite knobs =
            backend_.setKnobs(cpu, w.issuedKnobs, w.knobsInForce);
        w.result = backend_.setPerf(cpu, w.issued);
        if (knobs.error && !w.result.error)
        {
            w.result.error = knobs.error;
            w.result.file = knobs.file;
        }
        return;
    }
    const std::size_t cpu = slot - writes_.size();
    CounterRead& r = reads_[cpu];
    r.result = counters_->read(static_cast<unsigned>(cpu), r.sample);
    if (r.withLimited)
    {
        readPerfLimited(static_cast<std::size_t>(policyOf_[cpu]), r);
    }
}

void KernelMachine::collect() noexcept
{
    pool_->collect([this](std::size_t slot) {
        if (slot < writes_.size())
        {
            finishWrite(slot);
        }
        else
        {
            finishRead(slot - writes_.size());
        }
    });
}

void KernelMachine::finishWrite(std::size_t policy) noexcept
{
    PolicyWrite& w = writes_[policy];
    const cppc::backend::KernelPolicy& p = backend_.policies()[policy];
    w.running = false;
    w.late = false;
    if (w.result.error)
    {
        ++counts_.failed;
        w.failedAt = Clock::now();
        w.dirty = true; // tried again: see flush()
        // The reason is built only when it changes: a write that keeps
        // failing the same way allocates nothing.
        const fs::path* file =
            w.result.file != nullptr ? w.result.file : &p.setspeed;
        if (w.result.error == w.shownError && file == w.shownFile)
        {
            return;
        }
        try
        {
            setDegraded(p.relatedCpus, true,
                        quoted(*file) +
                            ": the write failed: " + w.result.error.message());
            w.shownError = w.result.error;
            w.shownFile = file;
        }
        catch (...)
        {
            // Without memory for the reason, the CPU stays as it was shown.
        }
        return;
    }
    ++counts_.landed;
    w.failedAt.reset();
    w.shownError.clear();
    w.shownFile = nullptr;
    w.landed = w.issued;
    for (const unsigned cpu : p.relatedCpus)
    {
        requested_[cpu] = w.result.perf;
    }
    setDegraded(p.relatedCpus, true, {});
}

void KernelMachine::finishRead(std::size_t cpu) noexcept
{
    CounterRead& r = reads_[cpu];
    r.running = false;
    if (!r.late)
    {
        --readsRunning_;
    }
    r.late = false;
    r.ready = true;
    if (r.withLimited && policyOf_[cpu] >= 0)
    {
        std::uint8_t& pending =
            limitedPending_[static_cast<std::size_t>(policyOf_[cpu])];
        if (pending == noLimitedRead)
        {
            pending = 0;
        }
        if (r.limitedError)
        {
            ++counts_.failed;
        }
        else
        {
            pending |= r.limited;
        }
    }
    r.limitedError.clear();
    r.limited = 0;
    if (!r.result)
    {
        r.shownError.clear();
        setDegraded(static_cast<unsigned>(cpu), false, {});
        return;
    }
    ++counts_.failed;
    if (r.result == r.shownError)
    {
        return; // failing as already shown: nothing to build
    }
    try
    {
        setDegraded(static_cast<unsigned>(cpu), false,
                    quoted(countersFile_[cpu]) +
                        ": the read failed: " + r.result.message());
        r.shownError = r.result;
    }
    catch (...)
    {
        // Without memory for the reason, the CPU stays as it was shown.
    }
}

void KernelMachine::checkDeadlines(Clock::time_point now) noexcept
{
    const auto deadline = std::chrono::microseconds(deadlineUs_);
    try
    {
        for (std::size_t policy = 0; policy < writes_.size(); ++policy)
        {
            PolicyWrite& w = writes_[policy];
            if (!w.running || w.late || now - w.startedAt <= deadline)
            {
                continue;
            }
            w.late = true;
            w.shownError.clear(); // the reason is now the lateness
            ++counts_.late;
            const cppc::backend::KernelPolicy& p = backend_.policies()[policy];
            setDegraded(p.relatedCpus, true,
                        quoted(p.setspeed) +
                            ": the write has not returned after " +
                            durationText(deadlineUs_));
        }
        for (std::size_t cpu = 0; cpu < reads_.size(); ++cpu)
        {
            CounterRead& r = reads_[cpu];
            if (!r.running || r.late || now - r.startedAt <= deadline)
            {
                continue;
            }
            r.late = true;
            r.shownError.clear();
            --readsRunning_;
            ++counts_.late;
            setDegraded(static_cast<unsigned>(cpu), false,
                        quoted(countersFile_[cpu]) +
                            ": the read has not returned after " +
                            durationText(deadlineUs_));
        }
    }
    catch (...)
    {
        // Without memory for a reason: shown at the next tick.
    }
}

void KernelMachine::flush(Clock::time_point now) noexcept
{
    const auto deadline = std::chrono::microseconds(deadlineUs_);
    bool started = false;
    for (std::size_t policy = 0; policy < writes_.size(); ++policy)
    {
        PolicyWrite& w = writes_[policy];
        if (!w.dirty || w.running || w.wanted == 0)
        {
            continue;
        }
        // A write that failed is tried again with a new value at once, with
        // the same one a deadline later.
        if (w.failedAt && w.wanted == w.issued &&
            w.wantedKnobs == w.issuedKnobs && now - *w.failedAt < deadline)
        {
            continue;
        }
        w.issued = w.wanted;
        w.issuedKnobs = w.wantedKnobs;
        if (!pool_->start(policy, false))
        {
            continue; // stopped, or not collected yet: still dirty
        }
        w.dirty = false;
        w.rewrite = false;
        w.running = true;
        w.startedAt = now;
        started = true;
        ++tickWrites_;
    }
    if (started)
    {
        pool_->wake(); // all together, so that they reach the kernel together
    }
}

void KernelMachine::setDegraded(std::span<const unsigned> cpus, bool write,
                                const std::string& reason) noexcept
{
    for (const unsigned cpu : cpus)
    {
        setDegraded(cpu, write, reason);
    }
}

void KernelMachine::setDegraded(unsigned cpu, bool write,
                                const std::string& reason) noexcept
{
    std::string& now = write ? writeReason_[cpu] : readReason_[cpu];
    if (now == reason)
    {
        return;
    }
    try
    {
        now = reason; // allocates only when it turns degraded
    }
    catch (...)
    {
        now.clear(); // shown as fine rather than with half a reason
    }
    ++degradedChanges_;
}

std::string_view KernelMachine::degraded(std::uint32_t cpu) const noexcept
{
    if (cpu >= writeReason_.size())
    {
        return {};
    }
    return writeReason_[cpu].empty() ? std::string_view(readReason_[cpu])
                                     : std::string_view(writeReason_[cpu]);
}

AccessCounts KernelMachine::accessCounts() const noexcept
{
    AccessCounts c = counts_;
    c.degradedCpus = 0;
    try
    {
        c.mostAtOnce = static_cast<std::uint32_t>(pool_->mostRunning());
    }
    catch (...)
    {
        // Only the pool's lock can throw: leave it unknown.
    }
    for (std::size_t cpu = 0; cpu < writeReason_.size(); ++cpu)
    {
        if (!writeReason_[cpu].empty() || !readReason_[cpu].empty())
        {
            ++c.degradedCpus;
        }
    }
    return c;
}

std::string KernelMachine::accessSummary() const
{
    const std::string where =
        pool_->maxThreads() == 0
            ? std::string("every sysfs access on the loop thread")
            : "sysfs accesses on up to " + std::to_string(pool_->maxThreads()) +
                  " worker threads";
    return where + ", deadline " + durationText(deadlineUs_) + " (" +
           deadlineSource_ + "); " + backend_.knobsSummary() +
           "; min and max not offered (the kernel does not say whether it "
           "maps scaling_min_freq and scaling_max_freq to MIN_PERF and "
           "MAX_PERF); " +
           (readsPerfLimited_
                ? std::string("perf_limited read and cleared")
                : "perf_limited not read: " + perfLimitedProblem_);
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
    pool_->stop();
    // What is running may still land: give it as long as a restore's own
    // access, so that a loaded machine does not make a slow write look hung,
    // and nothing it writes comes after the restore's own writes.
    (void)pool_->waitIdle(
        Clock::now() +
        std::max<Clock::duration>(restorePerAccess,
                                  std::chrono::microseconds(deadlineUs_)));
    collect();
    try
    {
        const std::vector<cppc::backend::KernelPolicy>& policies =
            backend_.policies();
        std::set<fs::path> hung;
        // A policy whose accesses fail now (a mailbox that stopped
        // answering) is left too, as one whose accesses have not returned:
        // there the kernel may acknowledge a write it could not deliver
        // (cppc_cpufreq's scaling_setspeed answers success when its PCC
        // command timed out), so a restore through it could not be told
        // from one that landed. It stays in the state file for
        // --restore-only.
        for (std::size_t policy = 0; policy < writes_.size(); ++policy)
        {
            if (pool_->inFlight(policy) || writes_[policy].shownError)
            {
                hung.insert(policies[policy].dir);
            }
        }
        for (std::size_t cpu = 0; cpu < reads_.size(); ++cpu)
        {
            if ((pool_->inFlight(readSlot(cpu)) || reads_[cpu].shownError) &&
                policyOf_[cpu] >= 0)
            {
                hung.insert(
                    policies[static_cast<std::size_t>(policyOf_[cpu])].dir);
            }
        }
        const cppc::backend::BoundedIo io(
            io_,
            std::max(restorePerAccess,
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::microseconds(deadlineUs_))),
            restoreBudget, hung);
        return backend_.restore(io);
    }
    catch (...)
    {
        // Only allocation fails above: restore without the bound.
        return backend_.restore();
    }
}

bool KernelMachine::accessesStuck() const noexcept
{
    try
    {
        return pool_->pending() != 0;
    }
    catch (...)
    {
        return true;
    }
}

} // namespace cppcgov::daemon
