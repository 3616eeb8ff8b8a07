// SPDX-License-Identifier: Apache-2.0
#include "daemon/observation.hpp"

#include "daemon/capabilities.hpp"
#include "daemon/proc_stat.hpp"
#include "lib/monotonic_clock.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <limits>
#include <stdexcept>

namespace cppcgov::daemon
{
namespace
{

// The inode number of the initial PID namespace (PROC_PID_INIT_INO in the
// kernel's include/linux/proc_ns.h), fixed since namespaces have inodes.
constexpr ino_t initialPidNamespace = 0xEFFFFFFCU;

// Why the scheduler's events cannot be used here, or "" when they may be.
std::string whyNotBpf(SamplingSource wanted, const std::filesystem::path& root)
{
    if (wanted == SamplingSource::procfs)
    {
        return "sampling.source is procfs";
    }
    if (root != "/")
    {
        return "the root is '" + root.string() +
               "', not /: the scheduler's events are the live system's";
    }
    struct stat ns = {};
    if (::stat("/proc/self/ns/pid", &ns) != 0)
    {
        return "/proc/self/ns/pid cannot be read, so it is not known whether "
               "cppcgovd is in the initial PID namespace, where the "
               "scheduler's events number tasks";
    }
    if (ns.st_ino != initialPidNamespace)
    {
        return "cppcgovd is not in the initial PID namespace, where the "
               "scheduler's events number tasks";
    }
    return {};
}

// The load of the first `cpus` host CPUs as the observation's last window
// gave it.
class ObservedLoad final : public LoadSource
{
  public:
    ObservedLoad(const Observation& observation, std::uint32_t cpus) :
        observation_(observation), busyUs_(cpus, 0), cpus_(cpus)
    {}

    std::uint32_t cpus() const noexcept override
    {
        return cpus_;
    }

    std::error_code sample(std::span<std::uint16_t> out) noexcept override
    {
        if (out.size() != cpus_)
        {
            return std::make_error_code(std::errc::invalid_argument);
        }
        const std::span<const std::uint16_t> busy = observation_.busy();
        const std::span<const std::uint64_t> busyUs = observation_.busyUs();
        for (std::size_t cpu = 0; cpu < out.size(); ++cpu)
        {
            const bool known = cpu < busy.size();
            out[cpu] = known ? busy[cpu] : 0;
            busyUs_[cpu] = known ? busyUs[cpu] : 0;
        }
        return {};
    }

    std::span<const std::uint64_t> busyUs() const noexcept override
    {
        return busyUs_;
    }

    bool online(std::uint32_t cpu) const noexcept override
    {
        return cpu < cpus_ && observation_.online(cpu);
    }

  private:
    const Observation& observation_;
    std::vector<std::uint64_t> busyUs_;
    std::uint32_t cpus_;
};

} // namespace

Observation::Observation(SamplingSource wanted,
                         const std::filesystem::path& root)
{
    why_ = whyNotBpf(wanted, root);
    if (why_.empty())
    {
        try
        {
            observer_ = std::make_unique<SchedObserver>();
        }
        catch (const ObserverUnavailable& e)
        {
            why_ = e.what();
        }
    }
    // Loaded or not, the two capabilities are of no more use.
    const std::error_code dropped = dropCapabilities({CAP_BPF, CAP_PERFMON});
    if (dropped)
    {
        warning_ = "CAP_BPF and CAP_PERFMON, needed only to load the BPF "
                   "program, could not be dropped: " +
                   dropped.message();
    }
    // Before Linux 5.19, kernel.unprivileged_bpf_disabled refuses every
    // bpf(2) command without CAP_BPF, map updates on descriptors held
    // included: then the hints could not reach the program.
    if (observer_ &&
        observer_->unbindTarget({std::numeric_limits<pid_t>::max(), false}) ==
            std::errc::operation_not_permitted)
    {
        observer_.reset();
        why_ = "this kernel refuses the program's map updates without "
               "CAP_BPF (kernel.unprivileged_bpf_disabled, before Linux "
               "5.19), which the daemon does not keep";
    }
    if (!observer_)
    {
        if (wanted == SamplingSource::bpf)
        {
            throw std::runtime_error(
                "sampling.source is bpf, but the scheduler's events cannot "
                "be used: " +
                why_);
        }
        return;
    }
    why_ = wanted == SamplingSource::bpf
               ? "sampling.source is bpf"
               : "the scheduler's events, through a BPF program";

    const std::uint32_t cpus = observer_->cpus();
    observed_.resize(cpus);
    exact_.resize(cpus);
    firstSighting_.resize(cpus + 1);
    busy_.assign(cpus, 0);
    othersBusy_.assign(cpus, 0);
    busyUs_.assign(cpus, 0);
    cameBack_.assign(cpus, false);
    sightings_.reserve(256);
    onlineFile_ = cppc::backend::Fd(
        ::open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC));
    readOnline();
    if (!onlineRead_)
    {
        // Without the list every CPU the program reports counts as online.
        for (std::uint32_t cpu = 0; cpu < cpus && cpu < cppc::maxCpus; ++cpu)
        {
            online_.set(cpu);
        }
    }
}

Observation::~Observation() = default;

std::unique_ptr<LoadSource> Observation::loadSource(std::uint32_t cpus) const
{
    if (!observer_)
    {
        throw std::logic_error("procfs observation has no load source");
    }
    return std::make_unique<ObservedLoad>(*this, cpus);
}

void Observation::readOnline() noexcept
{
    onlineReadUs_ = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            cppc::monotonicNow())
            .count());
    if (!onlineFile_)
    {
        return;
    }
    std::array<char, 4096> text{};
    const ssize_t n = ::pread(onlineFile_.get(), text.data(), text.size(), 0);
    if (n <= 0 || static_cast<std::size_t>(n) == text.size())
    {
        return;
    }
    std::string_view list(text.data(), static_cast<std::size_t>(n));
    while (!list.empty() && (list.back() == '\n' || list.back() == ' '))
    {
        list.remove_suffix(1);
    }
    const cppc::CpuListResult parsed =
        cppc::parseCpuList(list, cppc::CpuListSyntax::kernel);
    if (!parsed.error)
    {
        online_ = parsed.cpus;
        onlineRead_ = true;
    }
}

void Observation::sample() noexcept
{
    if (!observer_)
    {
        return;
    }
    const auto nowUs = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            cppc::monotonicNow())
            .count());
    if (nowUs - onlineReadUs_ >= onlineRefreshUs)
    {
        readOnline();
    }
    const std::uint64_t windowNs = observer_->sample(observed_);
    samples_.fetch_add(1, std::memory_order_release);
    (void)slotHints_.refresh();
    const SlotHints& slotHints = slotHints_.front();
    const std::size_t cpus = observed_.size();
    sightings_.clear();
    othersRunning_ = false;
    for (std::size_t cpu = 0; cpu < cpus; ++cpu)
    {
        // The kernel's tracepoints do not fire on a CPU once it is marked
        // offline (their condition is cpu_online()), so the program never
        // sees it switch to idle: the task it last switched to seems to
        // run there until the CPU is back. An offline CPU is idle.
        // Its runqueue's bookkeeping is as stale (the migrations that
        // emptied it did not fire either): no task and no clamp, so that a
        // domain it shares with online CPUs is not held up by it.
        const bool isOnline = online(static_cast<std::uint32_t>(cpu));
        // Back online, a CPU starts in its idle task without a switch the
        // program sees, so the task it last saw seems to run on up to the
        // CPU's first traced switch, and the tasks that left it seem still
        // queued: it counts as idle and without a clamp up to and with the
        // window of its first switch (a wakeup of a task bound to it is
        // handled on another CPU and proves nothing of it).
        const bool quiet = !isOnline || cameBack_[cpu];
        if (!isOnline)
        {
            cameBack_[cpu] = true;
        }
        else if (cameBack_[cpu] && observed_[cpu].switches != 0)
        {
            cameBack_[cpu] = false;
        }
        if (quiet)
        {
            observed_[cpu].clamp = policies::Clamp{};
        }
        const std::uint64_t busyNs =
            quiet ? 0 : std::min(observed_[cpu].busyNs, windowNs);
        busyUs_[cpu] = busyNs / 1000;
        busy_[cpu] =
            windowNs == 0
                ? 0
                : static_cast<std::uint16_t>(busyNs * busyScale / windowNs);
        const std::uint64_t othersNs =
            busyNs - std::min(busyNs, observed_[cpu].ownBusyNs);
        othersBusy_[cpu] =
            windowNs == 0
                ? 0
                : static_cast<std::uint16_t>(othersNs * busyScale / windowNs);
        firstSighting_[cpu] = sightings_.size();
        if (quiet)
        {
            continue;
        }
        othersRunning_ = othersRunning_ || observed_[cpu].othersRunning;
        for (const std::uint32_t slot :
             observer_->slotsSeen(static_cast<std::uint32_t>(cpu)))
        {
            if (slot >= slotHints.size())
            {
                continue;
            }
            for (const auto& [handle, clamp] : slotHints[slot])
            {
                if (handle == ownHandle)
                {
                    continue;
                }
                // May allocate when more hints than ever before are seen.
                sightings_.push_back(
                    {handle, 0, static_cast<std::uint32_t>(cpu), clamp, 0});
            }
        }
    }
    firstSighting_[cpus] = sightings_.size();
    const std::span<const HintSighting> all = sightings_;
    for (std::size_t cpu = 0; cpu < cpus; ++cpu)
    {
        exact_[cpu] = {
            observed_[cpu].clamp,
            all.subspan(firstSighting_[cpu],
                        firstSighting_[cpu + 1] - firstSighting_[cpu])};
    }
}

std::error_code Observation::addClamp(const ClampHint& hint)
{
    if (!observer_)
    {
        return {};
    }
    reclaimSlots();
    const std::pair<pid_t, bool> key{hint.target.pid, hint.target.wholeProcess};
    auto it = slotOfTarget_.find(key);
    std::uint32_t slot = 0;
    if (it != slotOfTarget_.end())
    {
        slot = it->second;
    }
    else
    {
        if (freeSlots_.empty() && slots_.size() >= SchedObserver::maxSlots)
        {
            return std::make_error_code(std::errc::no_buffer_space);
        }
        slot = freeSlots_.empty() ? static_cast<std::uint32_t>(slots_.size())
                                  : freeSlots_.back();
        // The slot's clamp first: a task that finds the target finds it.
        Slot fresh{hint.target, {{hint.handle, hint.clamp}}};
        if (slot == slots_.size())
        {
            slots_.push_back(std::move(fresh));
        }
        else
        {
            slots_[slot] = std::move(fresh);
        }
        publish(slot);
        if (const std::error_code ec = observer_->bindTarget(hint.target, slot))
        {
            observer_->clearSlot(slot);
            slots_[slot].hints.clear();
            if (slot + 1 == slots_.size())
            {
                slots_.pop_back();
            }
            else if (freeSlots_.empty() || freeSlots_.back() != slot)
            {
                freeSlots_.push_back(slot);
            }
            return ec;
        }
        if (!freeSlots_.empty() && freeSlots_.back() == slot)
        {
            freeSlots_.pop_back();
        }
        slotOfTarget_.emplace(key, slot);
        slotOfHandle_[hint.handle] = slot;
        publishSlots();
        return {};
    }
    slots_[slot].hints.emplace_back(hint.handle, hint.clamp);
    slotOfHandle_[hint.handle] = slot;
    publish(slot);
    publishSlots();
    return {};
}

int Observation::wakeFd() const noexcept
{
    return observer_ ? observer_->wakeFd() : -1;
}

void Observation::armWake(bool armed) noexcept
{
    if (observer_)
    {
        observer_->armWake(armed);
    }
}

bool Observation::othersRunningNow() const noexcept
{
    if (!observer_)
    {
        return false;
    }
    // As sample() counts them: an offline CPU, or one back online without
    // a switch seen since, shows a task that is not running.
    for (std::uint32_t cpu = 0; cpu < cameBack_.size(); ++cpu)
    {
        if (online(cpu) && !cameBack_[cpu] && observer_->runningOther(cpu))
        {
            return true;
        }
    }
    return false;
}

std::size_t Observation::takeWakes() noexcept
{
    return observer_ ? observer_->takeWakes() : 0;
}

std::error_code Observation::addOwnThread(pid_t tid)
{
    ClampHint own;
    own.handle = ownHandle;
    own.target = {tid, false};
    own.clamp = {0, 0};
    return addClamp(own);
}

void Observation::endClamp(std::uint64_t handle) noexcept
{
    const auto it = slotOfHandle_.find(handle);
    if (it == slotOfHandle_.end())
    {
        return;
    }
    const std::uint32_t slot = it->second;
    slotOfHandle_.erase(it);
    Slot& s = slots_[slot];
    std::erase_if(s.hints,
                  [handle](const auto& h) { return h.first == handle; });
    if (!s.hints.empty())
    {
        publish(slot);
        publishSlots();
        return;
    }
    // The last hint on the target: every task that carries the slot loses
    // it, and the slot is free.
    observer_->clearSlot(slot);
    slotOfTarget_.erase({s.target.pid, s.target.wholeProcess});
    // A target the program's map still names stays on its (cleared) slot:
    // reusing the slot would hand that target another hint's clamp.
    // The windows still being filled may name the slot (the program marks
    // it by number): it is reused only once two have ended since.
    if (!observer_->unbindTarget(s.target))
    {
        endedSlots_.push_back(
            {slot, samples_.load(std::memory_order_acquire) + 2});
    }
    publishSlots();
}

void Observation::reclaimSlots()
{
    const std::uint64_t samples = samples_.load(std::memory_order_acquire);
    std::erase_if(endedSlots_, [this, samples](const EndedSlot& e) {
        if (e.freeAt > samples)
        {
            return false;
        }
        freeSlots_.push_back(e.slot);
        return true;
    });
}

void Observation::publishSlots() noexcept
{
    try
    {
        SlotHints& out = slotHints_.back();
        out.resize(slots_.size());
        for (std::size_t slot = 0; slot < slots_.size(); ++slot)
        {
            out[slot] = slots_[slot].hints;
        }
        slotHints_.publish();
    }
    catch (const std::bad_alloc&)
    {
        // sample() keeps the table it had; the next change tries again.
    }
}

void Observation::publish(std::uint32_t slot) noexcept
{
    policies::Clamp combined{0, 0};
    for (const auto& [handle, clamp] : slots_[slot].hints)
    {
        combined.min = std::max(combined.min, clamp.min);
        combined.max = std::max(combined.max, clamp.max);
    }
    observer_->setSlotClamp(slot, combined);
}

ObservationCounts Observation::counts() const noexcept
{
    if (!observer_)
    {
        return {};
    }
    const ObserverStats s = observer_->stats();
    return {s.events, s.missed, s.resets, s.overcounts, s.unread};
}

} // namespace cppcgov::daemon
