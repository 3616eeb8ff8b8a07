// SPDX-License-Identifier: Apache-2.0
// The machine the governor drives: where per-CPU load and delivered
// performance come from and where performance requests go.
//
// One narrow seam: load and delivered performance in, the whole CPPC
// request per CPU (min, desired, max, epp) out, and the controls a machine
// offers. The backends, one file each under machines/ and registered in
// machines.hpp's table (chosen by the `backend:` section of the
// configuration, see config.hpp):
//   simulator  a simulated CPPC machine (lib/sim) in real time: the default
//              when the firmware offers no CPPC, as on a developer's
//              machine; writes every control its layout has registers
//              for, reads and clears PerformanceLimited where it has it;
//   kernel     the cpufreq `userspace` governor and scaling_setspeed
//              (lib/backend/kernel), load from <root>/proc/stat; writes
//              Desired, and auto_select, auto_act_window and
//              energy_performance_preference_val where cppc_cpufreq has
//              them and takes writes;
//   registers  the _CPC registers themselves through /dev/mem
//              (lib/backend/devmem + libcppc's perf control), load from
//              <root>/proc/stat; writes Desired, and Minimum, Maximum,
//              EPP, AutonomousSelectionEnable and AutonomousActivityWindow
//              where every CPU's _CPC has them as registers; reads and
//              clears PerformanceLimited.
//
// Every Machine method is called from the daemon's one event-loop thread.
// sample() and apply() run on every tick: they must not wait on the
// hardware (reads of procfs are fine; the kernel backend hands its sysfs
// accesses to worker threads) and report failures as error codes or as a
// CPU's degraded(). No logging in here: the daemon logs what these return.
#pragma once

#include "daemon/load_source.hpp"
#include "lib/backend/restore_result.hpp"
#include "policies/policy.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace cppcgov::daemon
{

// One CPU's load over the last sampling window.
struct CpuSample
{
    // Frequency-invariant utilization over the window, 0..1024: the busy
    // fraction x delivered / highest performance.
    std::uint16_t util = 0;
    // Average delivered performance over the window; 0 when unknown (no
    // counters, or the sample was rejected as implausible).
    std::uint32_t deliveredPerf = 0;
    // The time the CPU was busy (running any task, or interrupts) since
    // the previous sample, in microseconds, as procfs counts it (in 10 ms
    // steps); 0 when unknown. The governor compares it with the CPU time
    // of the hinted tasks seen there (governor.hpp).
    std::uint64_t busyUs = 0;
    // The PerformanceLimited bits (desiredExcursion, minimumExcursion) the
    // platform set before the machine's latest read of them; the machine
    // clears the bits it read (a register: by writing them as 0;
    // cppc_cpufreq's perf_limited: by writing the bits to clear). A
    // machine that reads them less often than it samples (the kernel's,
    // with its counters) reports the latest read's bits until its next.
    // 0 when the machine cannot read them (Machine::readsPerfLimited()).
    std::uint8_t perfLimited = 0;
    // The feedback counters' movement over the machine's last counter
    // window (which need not match the sampling window), for the firmware
    // checks (firmware_watch.hpp): how far each counter moved, over how
    // long, and the ReferencePerformance delivered performance was
    // computed with. `window` counts the windows so far: a sample whose
    // window is the previous sample's brings nothing new; 0 when the
    // machine reads no counters.
    struct Counters
    {
        std::uint64_t referenceDelta = 0;
        std::uint64_t deliveredDelta = 0;
        std::uint64_t elapsedUs = 0;
        std::uint32_t referencePerf = 0;
        std::uint64_t window = 0;
    };
    Counters counters{};
};

// PerformanceLimited's bits: delivered performance went below Desired
// (bit 0, "Desired Excursion") or below Minimum (bit 1, "Minimum
// Excursion") because of a constraint of the platform's.
inline constexpr std::uint8_t desiredExcursion = 1U << 0;
inline constexpr std::uint8_t minimumExcursion = 1U << 1;

// The CPPC controls a machine can write. A machine reports the set it
// offers (Machine::controls()); a request carries all of them, and each
// machine writes the ones it offers and ignores the rest.
enum class Control : std::uint8_t
{
    desired = 1U << 0, // DesiredPerformance
    min = 1U << 1,     // MinimumPerformance
    max = 1U << 2,     // MaximumPerformance
    epp = 1U << 3,     // EnergyPerformancePreference
    // AutonomousSelectionEnable: the platform picks performance itself
    // within [min, max] (CppcRequest::autonomous).
    autonomous = 1U << 4,
    // AutonomousActivityWindow (CppcRequest::activityWindowUs).
    activityWindow = 1U << 5,
};

// A set of controls.
class Controls
{
  public:
    constexpr Controls() = default;
    constexpr Controls(std::initializer_list<Control> controls) noexcept
    {
        for (const Control c : controls)
        {
            bits_ = static_cast<std::uint8_t>(bits_ | bit(c));
        }
    }

    constexpr bool has(Control c) const noexcept
    {
        return (bits_ & bit(c)) != 0;
    }
    constexpr bool operator==(const Controls&) const = default;

  private:
    static constexpr std::uint8_t bit(Control c) noexcept
    {
        return static_cast<std::uint8_t>(c);
    }

    std::uint8_t bits_ = 0;
};

// The D-Bus and status names of the controls, in Control's order.
inline constexpr std::array<std::pair<Control, std::string_view>, 6>
    controlNames{{
        {Control::desired, "desired"},
        {Control::min, "min"},
        {Control::max, "max"},
        {Control::epp, "epp"},
        {Control::autonomous, "autonomous"},
        {Control::activityWindow, "activity-window"},
    }};

// The names of the controls in `controls`, in Control's order.
inline std::vector<std::string> controlList(Controls controls)
{
    std::vector<std::string> out;
    for (const auto& [control, name] : controlNames)
    {
        if (controls.has(control))
        {
            out.emplace_back(name);
        }
    }
    return out;
}

// The whole CPPC request for one CPU (for a shared domain, the daemon
// gives one request per CPU of the domain, all equal). Performance values
// are in the CPU's abstract units; apply() refuses a request unless
// min <= desired <= max.
struct CppcRequest
{
    std::uint32_t cpu = 0;
    std::uint32_t min = 0;
    std::uint32_t desired = 0;
    std::uint32_t max = 0;
    // Energy-performance preference, 0 (performance) to 255 (energy);
    // nothing: leave it as it is.
    std::optional<std::uint8_t> epp;
    // AutonomousSelectionEnable: the platform chooses the performance
    // within [min, max] and Desired is only a hint. Written where
    // controls() has Control::autonomous; false where it has not.
    bool autonomous = false;
    // AutonomousActivityWindow in microseconds (the register's
    // mantissa/exponent encoding is the machine's business); nothing:
    // leave it as it is.
    std::optional<std::uint32_t> activityWindowUs;

    bool operator==(const CppcRequest&) const = default;
};

// Counts of a machine's accesses to the hardware.
struct AccessCounts
{
    std::uint64_t landed = 0;       // writes the kernel took
    std::uint64_t failed = 0;       // accesses that returned an error
    std::uint64_t late = 0;         // accesses that passed their deadline
    std::uint32_t degradedCpus = 0; // now
    // The most accesses that were in the kernel at once: the writes of one
    // tick reach it together when this comes near the policies written.
    std::uint32_t mostAtOnce = 0;
};

class Machine
{
  public:
    virtual ~Machine() = default;

    // "simulator:<layout>", "kernel" or "registers".
    virtual std::string name() const = 0;

    // The CPUs (numbered 0..n-1 in the order of topology().cpus, which is
    // the logical CPU number) and which decide together.
    virtual const policies::Topology& topology() const = 0;

    // The _PSD domain number of `cpu`, for the configuration's `domain:`
    // overrides; nothing when the firmware gives none.
    virtual std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const = 0;

    // Samples every CPU's load since the previous call (the first call
    // starts the window and reports zeros). `nowUs` is CLOCK_MONOTONIC in
    // microseconds. `out` has one element per CPU. Does not allocate after
    // the first call.
    [[nodiscard]] virtual std::error_code sample(
        std::uint64_t nowUs, std::span<CpuSample> out) noexcept = 0;

    // The controls apply() writes: always Control::desired, the others as
    // the backend and the firmware allow. Fixed once the machine started.
    virtual Controls controls() const noexcept = 0;

    // Writes the requests, each control in controls() (the others are
    // ignored). A request with min > desired or desired > max is refused
    // with Errc::valueOutOfRange and nothing of it written. Returns the
    // first error; the others are still attempted. Does not allocate.
    [[nodiscard]] virtual std::error_code apply(
        std::span<const CppcRequest> requests) noexcept = 0;

    // Called at the end of every tick, after apply() (which is called only
    // when a request changed): the moment for accesses that should come
    // after the tick's writes. Must not wait on the hardware either.
    virtual void endTick() noexcept {}

    // Whether sample() reads the PerformanceLimited bits (CpuSample::
    // perfLimited) of every CPU.
    virtual bool readsPerfLimited() const noexcept
    {
        return false;
    }

    // The CPU whose request the last apply() failed first on (the one its
    // error is about), or nothing when it wrote everything. For messages.
    virtual std::optional<std::uint32_t> lastFailedCpu() const noexcept
    {
        return std::nullopt;
    }

    // What a request for `cpu` is written to, for messages: a file or a
    // register, quoted as the log quotes paths.
    virtual std::string writeTarget(std::uint32_t cpu) const
    {
        return "CPU " + std::to_string(cpu);
    }

    // The logical CPU of the governed machine on which a task that the host
    // kernel reports on host CPU `hostCpu` counts; nothing when it counts
    // nowhere. The identity on real backends; the simulator maps host CPU
    // n to simulated CPU n when it has one.
    virtual std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept = 0;

    // How many host CPUs the machine reads the load of (from /proc/stat),
    // 0 when it reads none (the simulator without a proc/stat).
    virtual std::uint32_t loadCpus() const noexcept
    {
        return 0;
    }
    // Reads the load from `source` instead, from the next sample() on;
    // `source` reports loadCpus() CPUs (else std::invalid_argument). Only
    // for a machine whose loadCpus() is not 0.
    virtual void useLoadSource(std::unique_ptr<LoadSource> source)
    {
        (void)source;
        throw std::invalid_argument("this machine reads no load");
    }

    // Why `cpu` is degraded: an access for it failed, or has not returned
    // within its deadline; empty when it is not. Until the access returns
    // the CPU's requests are held back (the last one is written then).
    virtual std::string_view degraded(std::uint32_t cpu) const noexcept
    {
        (void)cpu;
        return {};
    }
    // Goes up by one at every change of any CPU's degraded(), so that the
    // daemon can log each change once.
    virtual std::uint64_t degradedChanges() const noexcept
    {
        return 0;
    }
    // What the machine's accesses to the hardware came to, since it started.
    virtual AccessCounts accessCounts() const noexcept
    {
        return {};
    }
    // How the machine makes its accesses, for the start-up message; empty
    // when there is nothing to say.
    virtual std::string accessSummary() const
    {
        return {};
    }

    // Puts back everything the backend changed (cpufreq governor, limits,
    // set speed), removing its state file when all is back and otherwise
    // leaving it holding exactly what is not. Runs once; apply() does
    // nothing afterwards. Returns within a bounded time even when the
    // hardware stops answering (what did not answer is then among what is
    // left). Never throws.
    virtual cppc::backend::RestoreResult restore() noexcept = 0;

    // After restore(): whether an access is still blocked in the kernel.
    // The machine must then not be destroyed (its worker would wait for
    // it): the daemon exits without tearing down.
    virtual bool accessesStuck() const noexcept
    {
        return false;
    }
};

} // namespace cppcgov::daemon
