// SPDX-License-Identifier: Apache-2.0
// The kernel backend: performance requests through cpufreq's userspace
// governor and feedback counters from acpi_cppc sysfs, for machines where
// user space must not touch the CPPC registers itself (a PCC channel the
// kernel owns) or is not allowed to.
//
// Requests are written per cpufreq policy to scaling_setspeed in kHz,
// converted from performance levels exactly as cppc_cpufreq converts back
// (see perf_caps.hpp). Everything the backend changes (each policy's
// governor, userspace set speed, minimum and maximum frequency) is recorded
// first, optionally in a state file, and put back by restore(), by the
// destructor, or after a crash by restoreFromFile(). Where cppc_cpufreq
// offers them (Linux 6.16 and later, and only where the firmware has the
// registers and takes writes), the policy's autonomous selection, activity
// window and energy-performance preference are written and restored too
// (see PolicyKnob). A restore that cannot
// put everything back leaves the state file holding exactly the policies
// that are not back, so that running it again once the cause is gone
// finishes the job; the file goes only when everything is back.
#pragma once

#include "lib/backend/attribute_io.hpp"
#include "lib/backend/fd.hpp"
#include "lib/backend/perf_caps.hpp"
#include "lib/backend/restore_result.hpp"
#include "lib/feedback.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppc::backend
{

// Parses feedback_ctrs as the kernel prints it, "ref:<decimal>
// del:<decimal>" with at most one trailing newline and nothing else.
// Returns false (leaving the outputs alone) for anything else, including
// numbers above 64 bits.
[[nodiscard]] bool parseFeedbackCounters(std::string_view text,
                                         std::uint64_t& reference,
                                         std::uint64_t& delivered) noexcept;

// Reference and delivered counters from
// /sys/devices/system/cpu/cpuN/acpi_cppc/feedback_ctrs. Each read is one
// pread(2) at offset 0 on a descriptor opened at construction, which makes
// sysfs produce fresh values; the read time covers that call.
class KernelCounters final : public CounterSource
{
  public:
    // Opens feedback_ctrs of each CPU in `cpus` under `root`. Throws
    // std::system_error naming the file.
    KernelCounters(const std::filesystem::path& root,
                   std::span<const unsigned> cpus);

    // Errc::noSuchCpu for a CPU not given at construction, the errno of a
    // failed read (the kernel fails it when it cannot read the counters),
    // or Errc::malformedAttribute. Does not allocate.
    std::error_code read(unsigned cpu, CounterSample& out) noexcept override;

  private:
    std::vector<Fd> files_; // indexed by CPU; empty Fd for CPUs not given
};

// The CPPC controls cppc_cpufreq shows beside the frequencies, one file
// each in the policy's directory (Linux 6.16 and later; the kernel's
// Documentation/ABI/testing/sysfs-devices-system-cpu):
//   autoSelect      auto_select: Autonomous Selection Enable, 0 or 1;
//   activityWindow  auto_act_window: Autonomous Activity Window in
//                   microseconds, up to 1270000000; the register holds a
//                   7-bit significand and a power of ten, so the kernel
//                   stores a rounded value (1234 reads back as 1230);
//   epp             energy_performance_preference_val: Energy Performance
//                   Preference, 0 (performance) to 255 (energy).
// A file reads as an empty line when the firmware has no such register,
// and a write then fails with EOPNOTSUPP; some firmware has the register
// and still refuses writes (EOPNOTSUPP for auto_select on NVIDIA Grace).
// The backend offers a control on a policy only when its file exists,
// reads as a valid value and takes that same value written back.
enum class PolicyKnob : std::uint8_t
{
    autoSelect,
    activityWindow,
    epp,
};
inline constexpr std::size_t policyKnobs = 3;
inline constexpr std::array<PolicyKnob, policyKnobs> allPolicyKnobs{
    PolicyKnob::autoSelect, PolicyKnob::activityWindow, PolicyKnob::epp};
inline constexpr std::uint32_t maxActivityWindowUs = 1'270'000'000;
inline constexpr std::uint32_t maxEpp = 255;

// "auto_select", "auto_act_window", "energy_performance_preference_val".
std::string_view knobFile(PolicyKnob knob) noexcept;
// The largest value `knob` takes.
std::uint32_t knobMax(PolicyKnob knob) noexcept;

// A value per knob, indexed by PolicyKnob; nothing: none (not offered, or
// to be left as it is).
using KnobValues = std::array<std::optional<std::uint32_t>, policyKnobs>;

// What restore() puts back for one cpufreq policy.
struct PolicyState
{
    std::string name; // "policy0": the directory under cpu/cpufreq/
    std::string governor;
    std::uint32_t minKhz = 0;
    std::uint32_t maxKhz = 0;
    // scaling_setspeed, recorded only when the governor was userspace (for
    // other governors the kernel shows "<unsupported>" and refuses writes).
    // Most kernels show the current frequency there, not the last request.
    std::optional<std::uint32_t> setspeedKhz;
    // The knobs the policy offers, as found.
    KnobValues knobs{};

    bool operator==(const PolicyState&) const = default;
};

// One cpufreq policy the backend drives.
struct KernelPolicy
{
    std::string name;
    // The CPU the policy was created for (the N of policyN): cppc_cpufreq
    // converts with this CPU's capabilities for the whole policy.
    unsigned cpu = 0;
    std::vector<unsigned> relatedCpus;  // every CPU the policy covers
    std::vector<unsigned> affectedCpus; // those online: what a write moves
    PerfCaps caps;
    FreqScale scale;
    std::uint32_t cpuinfoMinKhz = 0;
    std::uint32_t cpuinfoMaxKhz = 0;
    // The limits in force as last read (at start and after setLimits()):
    // the kernel clamps every request into them.
    std::uint32_t minKhz = 0;
    std::uint32_t maxKhz = 0;
    std::filesystem::path dir;      // the policy's directory
    std::filesystem::path setspeed; // its scaling_setspeed
    std::filesystem::path minFreq;  // scaling_min_freq
    std::filesystem::path maxFreq;  // scaling_max_freq
    // Per PolicyKnob: its file, and why the policy does not offer it
    // (empty when it does).
    std::array<std::filesystem::path, policyKnobs> knobPath;
    std::array<std::string, policyKnobs> knobProblem;

    bool offers(PolicyKnob knob) const noexcept
    {
        return knobProblem[static_cast<std::size_t>(knob)].empty();
    }
};

// The outcome of a request.
struct KernelWrite
{
    // Empty on success; otherwise the errno of the write (or an Errc), and
    // `file`, when not null, names the attribute concerned, for messages
    // (see describe()).
    std::error_code error;
    const std::filesystem::path* file = nullptr;
    // setPerf: the kHz written to scaling_setspeed, after clamping, and the
    // performance cppc_cpufreq requests for it. setLimits: the maximum in
    // force afterwards and its performance.
    std::uint32_t khz = 0;
    std::uint32_t perf = 0;
    std::span<const unsigned> cpus; // the CPUs the write affects
};

struct KernelBackendOptions
{
    // The CPUs to drive; every CPU of their policies is driven too. Empty:
    // every CPU that has an active cpufreq policy. A policy whose CPUs are
    // all offline (inactive: the kernel answers EBUSY to its attributes, or
    // affected_cpus is empty) is never driven.
    std::vector<unsigned> cpus;
    // Where to record the saved state for crash recovery (under /run for
    // the daemon); empty for none. Not under the root prefix.
    std::filesystem::path stateFile;
    // How the policies' attributes are read and written once the backend
    // runs (requests, limits, the switch to userspace and restore());
    // nullptr for sysfsIo(). Discovery reads each policy's related_cpus
    // through it too (an inactive policy answers EBUSY), the rest of sysfs
    // directly. Must outlive the backend.
    const AttributeIo* io = nullptr;
};

class KernelBackend
{
  public:
    // Finds the policies, checks that each is driven by cppc_cpufreq and
    // offers the userspace governor (listed in
    // scaling_available_governors), reads every CPU's capabilities, records
    // each policy's governor, limits and (under userspace) set speed,
    // writes the state file, and only then switches every policy to the
    // userspace governor. Throws std::system_error naming the path on any
    // failure (Errc::governorUnavailable when userspace is not offered,
    // std::errc::file_exists when the state file is already there: a
    // previous run's changes must be undone with restoreFromFile() first);
    // a failure after the first switch restores what was changed.
    explicit KernelBackend(std::filesystem::path root,
                           KernelBackendOptions options = {});

    KernelBackend(const KernelBackend&) = delete;
    KernelBackend& operator=(const KernelBackend&) = delete;

    // restore(), if it has not run.
    ~KernelBackend();

    // Requests `perf` for `cpu`'s policy: FreqScale::requestKhz(perf), the
    // kHz cppc_cpufreq turns back into `perf`, clamped into the policy's
    // limits as the kernel clamps it, written to scaling_setspeed in one
    // write(2). Errc::noSuchCpu for a CPU not driven,
    // Errc::valueOutOfRange above the policy's highest_perf,
    // Errc::backendStopped after restore(). Does not allocate. Not
    // thread-safe.
    [[nodiscard]] KernelWrite setPerf(unsigned cpu,
                                      std::uint32_t perf) noexcept;

    // Sets `cpu`'s policy limits to the kHz of `minPerf` and `maxPerf`
    // (minPerf <= maxPerf, else Errc::valueOutOfRange), writing
    // scaling_min_freq and scaling_max_freq in the order the kernel cannot
    // refuse, then reads back the limits in force. Allocates; for start-up
    // and configuration changes.
    [[nodiscard]] KernelWrite setLimits(unsigned cpu, std::uint32_t minPerf,
                                        std::uint32_t maxPerf);

    // Writes the knobs of `cpu`'s policy that `wanted` has a value for, that
    // the policy offers and whose value differs from `inForce` (what the
    // backend found, or wrote last), in the order activity window, energy
    // preference, autonomous selection; each one that lands goes into
    // `inForce` (the value written: the kernel may store a rounded one).
    // Carries on past a failure and returns the first, with `file` naming
    // its attribute. Errc::valueOutOfRange (nothing written) for a value
    // above knobMax(). Does not allocate. Not thread-safe.
    [[nodiscard]] KernelWrite setKnobs(unsigned cpu, const KnobValues& wanted,
                                       KnobValues& inForce) noexcept;

    // Whether every policy driven offers `knob`.
    bool offers(PolicyKnob knob) const noexcept;
    // For the start-up message: which knobs every policy offers, and for
    // each other one why not (the first policy that does not, its file and
    // the reason), e.g. "auto_select: '/sys/.../policy0/auto_select'
    // refuses writes: Operation not supported".
    std::string knobsSummary() const;

    // The policy driving `cpu`, or nullptr.
    const KernelPolicy* policyOf(unsigned cpu) const noexcept;
    // The policies driven, by policy number.
    const std::vector<KernelPolicy>& policies() const noexcept
    {
        return policies_;
    }
    // What restore() will put back, one entry per policy; after restore(),
    // what it could not put back.
    const std::vector<PolicyState>& saved() const noexcept
    {
        return saved_;
    }

    // Puts every policy back as recorded (see restorePolicies for the
    // order), carrying on past failures. Then the state file, if any, is
    // removed when every policy is back, and otherwise rewritten to hold
    // exactly the policies that are not (see settleStateFile). Runs once;
    // later calls return an empty result, and setPerf() and setLimits()
    // return Errc::backendStopped. Never throws.
    RestoreResult restore() noexcept;
    // restore() with every access through `io` instead of the backend's
    // own (a BoundedIo, so that a file that no longer answers cannot hold
    // the stop).
    RestoreResult restore(const AttributeIo& io) noexcept;

    // Restores what the state file at `stateFile` records, under `root`:
    // for a start after a crash, or a stop hook. The file is then removed
    // when everything is back, or rewritten to hold exactly the policies
    // that are not. An empty result when there is no file; a readStateFile
    // or parseStateFile failure when it cannot be read or is malformed
    // (it is then kept as it is, for inspection). Throws only
    // std::bad_alloc.
    static RestoreResult restoreFromFile(const std::filesystem::path& root,
                                         const std::filesystem::path& stateFile,
                                         const AttributeIo& io = sysfsIo());

  private:
    void discover(const std::vector<unsigned>& cpus);
    // The policy a write for `cpu` goes to; nullptr, with `w.error` set
    // (backendStopped, noSuchCpu), when there is none to write.
    const KernelPolicy* writablePolicy(unsigned cpu,
                                       KernelWrite& w) const noexcept;

    std::filesystem::path root_;
    std::filesystem::path stateFile_;
    std::vector<KernelPolicy> policies_;
    std::vector<PolicyState> saved_;
    std::vector<int> policyIndex_; // by CPU; -1 when not driven
    const AttributeIo& io_;
    // Read by setPerf() on the kernel machine's workers, cleared by
    // restore() on the loop.
    std::atomic<bool> active_{false};
};

// The state file's text for `saved`, and back. The format is line-based:
// a header line "cppcgov-cpufreq-state 1", then per policy
// "<policyN> <governor> <min kHz> <max kHz> <set speed kHz or ->", then
// for each knob the policy offers " <knob file>=<value>" (auto_select=0
// auto_act_window=1000 energy_performance_preference_val=128, each at most
// once). Parsing is strict; it throws std::system_error
// (Errc::malformedAttribute) naming `file`.
std::string formatState(const std::vector<PolicyState>& saved);
std::vector<PolicyState> parseState(std::string_view text,
                                    const std::filesystem::path& file);

// Puts each policy under `root` back as `saved` records, continuing past
// failures. Every entry of the result names its policy as its record: a
// write that fails is a failure (the policy is not back); a read of the
// value in place that fails is a warning, and the saved value is written
// regardless. Per policy, in this order:
//   1. if the saved governor is userspace, make it the governor (the set
//      speed can only be written under it); then each knob recorded
//      (activity window, energy preference, autonomous selection) whose
//      value in place differs;
//   2. the limits, widening first: scaling_max_freq before
//      scaling_min_freq when the saved minimum lies above the current
//      maximum, otherwise the minimum first, so that minimum <= maximum
//      holds after each write and no kernel (old ones refused min > max)
//      can refuse either; values already in place are not rewritten;
//   3. under userspace, the saved set speed, now that the limits it is
//      clamped into are final;
//   4. any other governor last: it then starts under the restored limits
//      and never acts on the backend's.
RestoreResult restorePolicies(const std::filesystem::path& root,
                              const std::vector<PolicyState>& saved,
                              const AttributeIo& io = sysfsIo());

} // namespace cppc::backend
