// SPDX-License-Identifier: Apache-2.0
// The kernel backend: cppc_cpufreq's userspace governor
// (lib/backend/kernel), load from <root>/proc/stat, delivered performance
// from acpi_cppc/feedback_ctrs. For machines where the kernel owns the PCC
// channel or register access is not allowed.
//
// The accesses that can wait on the hardware (each policy's
// scaling_setspeed write, each CPU's feedback_ctrs read) run on an
// AccessPool (lib/backend/access_pool.hpp), never on the caller's thread:
// one slot per file, so at most one access per file is in flight, and the
// writes of one tick for different policies run at the same time, which
// lets the kernel put them under one PCC doorbell. Completions are taken
// at the next sample(). An access that fails, or is still in flight past
// its deadline, makes its CPUs degraded() with the reason; a policy whose
// write is in flight is not written again until it returns, and its last
// request is written then; a failed write is tried again at the next
// request, or one deadline later. restore() waits at most
// max(restorePerAccess, deadline) for the accesses in flight, leaves the
// policies whose accesses have not returned, or are failing, as they are
// (they stay in the state file), and puts the others back through a
// BoundedIo.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machines/machine_base.hpp"
#include "lib/backend/access_pool.hpp"
#include "lib/backend/kernel.hpp"
#include "lib/feedback.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

// How a KernelMachine is run.
struct KernelMachineOptions
{
    // Where the changes are recorded for crash recovery; empty for none.
    std::filesystem::path stateFile;
    // Worker threads and deadline (config.hpp). Default: every access on
    // the caller's thread.
    AccessConfig access{0, 0};
    // The policies' attribute accesses (nullptr: the real sysfs). Must
    // outlive the machine and every access it started.
    const cppc::backend::AttributeIo* io = nullptr;
};

class KernelMachine final : public internal::MachineBase
{
  public:
    // Starts cppc::backend::KernelBackend on every CPU with an active
    // cpufreq policy (switching them to the userspace governor, recorded
    // first in the state file unless there is none), reads each policy's
    // capabilities and transition latency, opens the CPUs' feedback_ctrs
    // when they all have one, opens <root>/proc/stat, and settles the
    // access deadline (the configured one, or one from
    // <root>/sys/firmware/acpi/tables/PCCT, or 10 ms). CPUs of a policy are
    // one shared domain; CPUs below the highest one that no active policy
    // covers (offline) are domains of their own, with the capabilities
    // their acpi_cppc gives, and get no requests. Throws std::system_error
    // naming the file or directory concerned; whatever was switched is put
    // back first. All of this runs on the caller's thread: it is start-up.
    KernelMachine(const std::filesystem::path& root,
                  const KernelMachineOptions& options);

    KernelMachine(const KernelMachine&) = delete;
    KernelMachine& operator=(const KernelMachine&) = delete;
    ~KernelMachine() override;

    // The registry's factory: a KernelMachine with the state file
    // kernelStateFile(stateDir) (none when `stateDir` is empty) and
    // config.access.
    static std::unique_ptr<Machine> start(
        const BackendConfig& config, const std::filesystem::path& root,
        const std::filesystem::path& stateDir);

    std::string name() const override;
    // The kernel does not publish _PSD domain numbers: always nothing.
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override;

    // Desired (scaling_setspeed: the userspace governor takes one frequency
    // per policy), and each of autonomous, activityWindow and epp that
    // every policy offers (auto_select, auto_act_window,
    // energy_performance_preference_val: see cppc::backend::PolicyKnob).
    // Never min or max: some kernels (newer cppc_cpufreq)
    // program MIN_PERF and MAX_PERF from scaling_min_freq and
    // scaling_max_freq, older ones do not, and nothing in sysfs tells
    // which; the limits stay as the daemon found them. accessSummary()
    // says which controls are offered and why the others are not.
    Controls controls() const noexcept override;

    // sample(): util = busy fraction x perf / highest, with perf the
    // delivered performance from the feedback counters when known, else
    // the performance of the last write that landed (highest before any).
    // Each CPU's counters are read about every counterPeriodUs (a few CPUs
    // per call, in turn, at most maxCounterReadsInFlight at once, so a
    // large machine takes longer to go round: see
    // cppc::FeedbackRoundRobin). With a PCC mailbox (a PCCT), where every
    // access is a command and a doorbell, a tick rings at most
    // pccDoorbellsPerTick: its writes go first, and at endTick() one CPU's
    // counters are read (with its policy's perf_limited every
    // pccPerfLimitedEvery-th time) if the writes left room, or anyway once
    // pccTicksWithoutRead ticks in a row read none.
    // apply(): one access per policy per call, with the first request for
    // any of its CPUs, started on the pool: the knobs offered whose value
    // differs from the one in force (autonomous selection always, as the
    // request says; the activity window and EPP when the request has
    // them), then scaling_setspeed; its result
    // shows at a later sample(). Requests for CPUs no active policy covers
    // are ignored. apply() returns only the request checks' errors; a
    // write's failure shows in degraded().
    // A policy whose CPUs were all offline (none in /proc/stat) is written
    // again with its last request at the first sample that finds one of
    // them back: cppc_cpufreq starts such a policy afresh, and the
    // userspace governor takes the frequency it finds as its set speed.
    [[nodiscard]] std::error_code apply(
        std::span<const CppcRequest> requests) noexcept override;
    // With a PCCT: starts the counter read the tick's writes left room for
    // (see sample() above).
    void endTick() noexcept override;

    // Whether every policy has perf_limited (cppc_cpufreq of 2026 trees,
    // where the firmware has the register) and the feedback counters
    // are read: with each counter read of a policy's own CPU (the N of
    // policyN, whose register the kernel reads for the whole policy) its
    // perf_limited is read on the worker, and bits that are set are written
    // back, which clears them; from the next sample() on, every CPU of the
    // policy reports them until the policy's next read replaces them (the
    // bits cover the time between two reads, about counterPeriodUs or,
    // with a PCCT, pccPerfLimitedEvery times that: a tick between reads
    // still falls in the excursion they saw). A read or clear that fails
    // counts as failed (accessCounts()) and reports nothing until the next
    // read.
    bool readsPerfLimited() const noexcept override
    {
        return readsPerfLimited_;
    }

    std::string_view degraded(std::uint32_t cpu) const noexcept override;
    std::uint64_t degradedChanges() const noexcept override
    {
        return degradedChanges_;
    }
    AccessCounts accessCounts() const noexcept override;
    std::string accessSummary() const override;

    // Governors, limits, set speeds and knobs as found, and the state file
    // removed; bounded as the header says.
    cppc::backend::RestoreResult restore() noexcept override;
    bool accessesStuck() const noexcept override;

    // The scaling_setspeed of the policy that drives `cpu`.
    std::string writeTarget(std::uint32_t cpu) const override;

    // How long each access of a restore may take, at least, and all of
    // them together: SIGTERM must end the daemon within a few seconds,
    // and a restore at start-up or by --restore-only must end too.
    static constexpr std::chrono::milliseconds restorePerAccess{1'000};
    static constexpr std::chrono::milliseconds restoreBudget{3'000};

    // How often the feedback counters are read. A CPU busy less than
    // 1 / idleBusyShare of the time since its last read, whose request is
    // the one in force at that read, is put off (its counters stop while
    // it idles, so a read says little, and it costs a system call, on a
    // PCC machine a doorbell): its delivered performance and perf_limited
    // bits are those of its last read, for idleReadEveryUs at most.
    // A busy CPU whose request is the one in force at its last read, and
    // whose last read found the delivered performance of the one before
    // (within 1/steadyAgreement of it), is put off too, for
    // steadyReadEveryUs at most: a platform that delivers what it did
    // tells nothing new at every period (and a read is a system call the
    // tick's CPU pays for, on a PCC machine a doorbell). A new request
    // reads at the period again.
    static constexpr std::uint64_t counterPeriodUs = 10'000;
    static constexpr std::uint64_t idleBusyShare = 4;
    static constexpr std::uint64_t idleReadEveryUs = 100'000;
    static constexpr std::uint64_t steadyReadEveryUs = 50'000;
    static constexpr std::uint32_t steadyAgreement = 32;
    // How many counter reads run at once at most (on a PCC machine each is
    // a doorbell of its own, which the kernel serialises with the writes).
    static constexpr std::size_t maxCounterReadsInFlight = 2;
    // With a PCCT: the doorbells a tick rings at most, unless its writes
    // alone need more; perf_limited (a read command of its own, its bits
    // sticky until cleared) with every pccPerfLimitedEvery-th read of its
    // policy's counters that has room for it; and how many ticks in a row
    // may pass without a counter read before one is made anyway.
    static constexpr std::size_t pccDoorbellsPerTick = 2;
    static constexpr std::uint32_t pccPerfLimitedEvery = 4;
    static constexpr std::uint32_t pccTicksWithoutRead = 4;

    // Counter and perf_limited reads started so far.
    std::uint64_t readsStarted() const noexcept
    {
        return readsStarted_;
    }

    const cppc::backend::KernelBackend& backend() const noexcept
    {
        return backend_;
    }
    // Why delivered performance is unknown (no feedback_ctrs, or they
    // could not be opened); empty when the counters are read.
    const std::string& countersProblem() const noexcept
    {
        return countersProblem_;
    }
    // The deadline of one access, and where it came from.
    std::uint32_t accessDeadlineUs() const noexcept
    {
        return deadlineUs_;
    }

  private:
    class AsyncCounters;
    using Clock = cppc::backend::AccessPool::Clock;

    // Per policy: what the daemon wants written and what is under way.
    struct PolicyWrite
    {
        std::uint32_t wanted = 0; // last request; 0: none yet
        std::uint32_t issued = 0; // the access's value, set before start()
        std::uint32_t landed = 0; // last value the kernel took; 0: none
        // The knobs: as last requested (nothing: leave as in force), as
        // handed to the access, and as in force (found at start, then
        // written by the access; only the worker writes it while running).
        cppc::backend::KnobValues wantedKnobs{};
        cppc::backend::KnobValues issuedKnobs{};
        cppc::backend::KnobValues knobsInForce{};
        bool dirty = false;   // wanted has not been issued
        bool rewrite = false; // to be written even if it is in force
        bool running = false; // an access is in flight
        bool late = false;    // the access in flight passed its deadline
        Clock::time_point startedAt;
        std::optional<Clock::time_point> failedAt; // the last write failed
        std::error_code shownError; // the failure degraded() shows, if any
        const std::filesystem::path* shownFile = nullptr; // and its file
        cppc::backend::KernelWrite result;                // the worker's result
    };
    // Per CPU: its counter read.
    struct CounterRead
    {
        std::error_code result;
        cppc::CounterSample sample;
        bool ready = false;         // a result not yet handed to the estimator
        std::error_code shownError; // the failure degraded() shows, if any
        bool running = false;
        bool late = false;
        Clock::time_point startedAt;
        // perf_limited, read with the counters of a policy's own CPU (on a
        // PCC machine with every pccPerfLimitedEvery-th of them: `rounds`
        // counts the reads since it was last read) when `withLimited`.
        bool withLimited = false;
        std::uint8_t limited = 0;
        std::uint32_t rounds = 0;
        std::error_code limitedError;
        std::string limitedText;
        // When the last read started (lastPollUs_), with the request then
        // in force, and the CPU's busy time since: whether the next may be
        // put off (putOff()).
        bool started = false;
        std::uint64_t startedUs = 0;
        std::uint32_t startedRequest = 0;
        std::uint64_t busyUs = 0;
        // The delivered performance known when the last read started (0:
        // unknown), against which putOff() holds what it found.
        std::uint32_t startedDelivered = 0;
    };

    // Reads the counters of the CPUs that are due, when they are open, and
    // writes again the policies whose CPUs came back online.
    void poll(std::uint64_t nowUs) noexcept override;
    void rewriteReturnedPolicies() noexcept;
    CpuSample sampleCpu(std::size_t cpu) const noexcept override;
    std::error_code applyOne(const CppcRequest& request) noexcept override;
    // Opens the counters of `online` and their estimators, or says in
    // countersProblem_ why not; `pcc`: each read is a PCC read command
    // (one CPU a sample, any read within the access deadline used).
    void openCounters(const std::filesystem::path& root,
                      const std::vector<unsigned>& online, bool pcc);
    // Finds every policy's perf_limited, or says in perfLimitedProblem_
    // why it is not read.
    void probePerfLimited();
    // Whether the read of `cpu`'s counters about to start reads its
    // policy's perf_limited too; on a PCC machine, takes the doorbell.
    bool takePerfLimited(std::size_t cpu) noexcept;
    // Whether the CPU's next counter read may wait (counterPeriodUs).
    bool putOff(std::size_t cpu) const noexcept;
    // On a worker: reads `policy`'s perf_limited into `r` and clears the
    // bits found.
    void readPerfLimited(std::size_t policy, CounterRead& r) noexcept;

    // Runs on a worker: the access of `slot` (policies first, then CPUs).
    void access(std::size_t slot) noexcept;
    // Takes the finished accesses.
    void collect() noexcept;
    void finishWrite(std::size_t policy) noexcept;
    void finishRead(std::size_t cpu) noexcept;
    // Marks the accesses in flight past their deadline.
    void checkDeadlines(Clock::time_point now) noexcept;
    // Starts the writes that are due.
    void flush(Clock::time_point now) noexcept;
    // Sets the write or read reason of `cpus` (empty: fine); counts the
    // changes.
    void setDegraded(std::span<const unsigned> cpus, bool write,
                     const std::string& reason) noexcept;
    void setDegraded(unsigned cpu, bool write,
                     const std::string& reason) noexcept;
    std::size_t readSlot(std::size_t cpu) const noexcept
    {
        return writes_.size() + cpu;
    }

    cppc::backend::KernelBackend backend_;
    const cppc::backend::AttributeIo& io_;
    std::vector<int> policyOf_; // by CPU; -1 when none drives it
    std::optional<cppc::backend::KernelCounters> counters_;
    std::optional<cppc::FeedbackRoundRobin> feedback_;
    std::string countersProblem_;
    std::vector<std::filesystem::path> countersFile_; // by CPU, for messages
    std::vector<std::uint32_t> requested_; // by CPU: the perf in force
    std::vector<std::uint64_t> writtenIn_; // per policy: apply number
    std::vector<char> online_; // per policy: a CPU of it was in /proc/stat
    std::vector<PolicyWrite> writes_;      // per policy
    std::vector<CounterRead> reads_;       // per CPU
    std::vector<std::string> writeReason_; // per CPU: empty when fine
    std::vector<std::string> readReason_;  // per CPU
    std::vector<std::filesystem::path> perfLimitedFile_; // per policy
    // Per policy: the bits of a read that finished since the last sample,
    // or noLimitedRead.
    std::vector<std::uint8_t> limitedPending_;
    std::vector<std::uint8_t> limited_; // per CPU: the latest read's bits
    bool readsPerfLimited_ = false;
    // The firmware has a PCC mailbox: every read is a read command.
    bool pcc_ = false;
    std::string perfLimitedProblem_;
    std::uint64_t degradedChanges_ = 0;
    std::size_t readsRunning_ = 0; // in flight and not late
    // What the counter source may still start now: counter reads, and
    // reads of either kind together (the doorbells left on a PCC machine).
    std::size_t counterStarts_ = 0;
    std::size_t readStarts_ = 0;
    std::uint64_t readsStarted_ = 0;
    std::size_t tickWrites_ = 0;         // writes started since endTick()
    std::uint32_t ticksWithoutRead_ = 0; // PCC: in a row, up to the limit
    std::uint64_t lastPollUs_ = 0;
    AccessCounts counts_;
    std::uint32_t deadlineUs_ = 0;
    std::string deadlineSource_;
    std::unique_ptr<AsyncCounters> source_;
    // Last, so that it goes first: its workers use everything above.
    std::unique_ptr<cppc::backend::AccessPool> pool_;
};

} // namespace cppcgov::daemon
