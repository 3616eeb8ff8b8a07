// SPDX-License-Identifier: Apache-2.0
// The platform: every CPU of the layout as cpu_model.hpp plays it, behind
// the registers in the guest's memory and its PCC subspaces. The owner
// calls pollPcc() often (every few tens of microseconds when there is a
// subspace) and step() every step period; both only touch the mapped
// registers and the models. A CPU's mark word (layout.hpp) is read at
// every step and logged ("cpu N mark VALUE") when it changes; a reset
// zeroes it. What a CPU's virtual CPU was busy for, and the
// share of a host CPU its delivered performance gives it, go through the
// two callbacks (vcpu.hpp in the program; plain functions in tests).
//
// Registers the platform owns and writes: the feedback counters (in
// memory at every step; in PCC when a read command is answered, after
// bringing the CPU's model up to that instant), PerformanceLimited's
// excursion bits (set, never cleared: the OS clears them). What it reads:
// Desired, Minimum, Maximum, EPP, Autonomous Selection Enable and the
// Autonomous Activity Window, from memory at every step, or for PCC
// registers as the payload held them when a write command was answered.
// At reset (initialise()) it writes what a platform's reset leaves:
// counters running from 2^20, Minimum and Maximum at lowest and highest,
// EPP 128, autonomous selection off, an activity window of 1000 us, no
// excursion; each PCC subspace idle with Command Complete set.
//
// Commands (command(), one line each; the reply is one line):
//   stats                           the JSON below
//   cap CPU LEVEL                   a thermal or power cap (0: none)
//   fault CPU reference-rate PCT    the reference counter at PCT % of the
//                                   rate the tables imply (100: honest)
//   fault CPU stall on|off          both counters stand still
//   fault CPU ignore-desired on|off Desired is ignored: the CPU stays at
//                                   the level it had
//   fault CPU none                  honest again
//   latency US                      the platform's latency for new targets
//   pcc ID answer|never|error [US]  how subspace ID answers, after US
//   curve vf|linear                 the power curve (power_model.hpp)
//   share-floor PERMILLE            PlatformOptions::shareFloor, in 1/1000
//                                   of a host CPU, below shareAtHighest
//   pin-share CPU PERMILLE|off      CPU's virtual CPU gets that share
//                                   whatever its level, until off (the
//                                   speed check holds the other CPUs at
//                                   the full share so)
//   reset-stats                     zero every count and the energy
#pragma once

#include "tests/vm/platform/cpu_model.hpp"
#include "tests/vm/platform/guest_memory.hpp"
#include "tests/vm/platform/layout.hpp"
#include "tests/vm/platform/pcc_responder.hpp"
#include "tests/vm/platform/power_model.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::platform
{

struct PlatformOptions
{
    PowerCurve curve = PowerCurve::vf;
    std::uint64_t latencyNs = 1'000'000;  // request to delivery
    std::uint64_t pccLatencyNs = 100'000; // doorbell to Command Complete
    // The share of a host CPU a virtual CPU gets at highest performance,
    // and the part of it given at every level: at delivered performance
    // p, shareFloor + (shareAtHighest - shareFloor) x p / highest
    // (shareOf()). The floor pays the emulator's own cost per second of
    // the guest's time, which silicon does not have: under TCG a guest's
    // timer interrupts and the like cost far more against plain
    // arithmetic than on a core, and the same host time whatever the
    // level, so that without it a loop at a low level runs slower than
    // the levels say (the figure the rig uses and where it comes from:
    // platform_rig.py's SHARE_FLOOR).
    double shareAtHighest = 1.0;
    double shareFloor = 0.0;
    // Busy nanoseconds of CPU n's virtual CPU so far (nothing: unknown,
    // counted as idle).
    std::function<std::optional<std::uint64_t>(unsigned)> busyClock;
    // Gives CPU n's virtual CPU the share of a host CPU; false on failure.
    std::function<bool(unsigned, double)> setShare;
    // Called with a line when a CPU's delivered performance changes.
    std::function<void(std::string_view)> log;
};

// The share of a host CPU for delivered performance `perf` (above).
[[nodiscard]] double shareOf(const PlatformOptions& options, std::uint32_t perf,
                             std::uint32_t highest);

class Platform
{
  public:
    Platform(const Layout& layout, const GuestMemory& memory,
             PlatformOptions options, std::uint64_t nowNs);

    // What a reset leaves in the registers (above).
    void initialise();
    // Answers the PCC doorbells due at `nowNs`.
    void pollPcc(std::uint64_t nowNs);
    // Runs every CPU up to `nowNs`: reads its registers, writes its
    // counters and excursion bits, sets its virtual CPU's share.
    void step(std::uint64_t nowNs);
    // A command (above); returns the reply line ("ok", "error: ...", or
    // the stats).
    [[nodiscard]] std::string command(std::string_view line);
    [[nodiscard]] std::string statsJson(std::uint64_t nowNs) const;

    [[nodiscard]] bool hasPcc() const noexcept
    {
        return !responders_.empty();
    }
    [[nodiscard]] const CpuModel& cpu(unsigned n) const
    {
        return cpus_.at(n).model;
    }
    [[nodiscard]] std::uint64_t shareFailures() const noexcept
    {
        return failedShares_;
    }

  private:
    struct Cpu
    {
        CpuLayout layout;
        CpuModel model;
        Request latched; // PCC registers as last written
        std::uint64_t lastBusy = 0;
        bool busyKnown = false;
        std::uint32_t lastDelivered = 0;
        std::uint64_t lastMark = 0;
        std::optional<double> pinnedShare;
    };

    [[nodiscard]] std::uint64_t readField(const Field& field) const;
    void writeField(const Field& field, std::uint64_t value) const;
    [[nodiscard]] Request readRequest(const Cpu& cpu, bool pccToo) const;
    void advance(Cpu& cpu, std::uint64_t nowNs);
    void publish(Cpu& cpu, bool pccToo);
    // Gives the CPU's virtual CPU its share: pinned, or of its level.
    void applyShare(Cpu& cpu);
    void logMark(Cpu& cpu);
    // The access unit of a register in guest memory or a PCC payload.
    [[nodiscard]] std::byte* unitOf(const Field& field) const;
    [[nodiscard]] std::string fault(Cpu& cpu, std::string_view what,
                                    std::string_view value);

    const GuestMemory& memory_;
    PlatformOptions options_;
    std::vector<Cpu> cpus_;
    std::vector<SubspaceLayout> subspaceLayouts_;
    std::vector<PccResponder> responders_;
    std::uint64_t lastStepNs_;
    std::uint64_t failedShares_ = 0;
    std::uint64_t busyReadFailures_ = 0;
};

} // namespace cppcgov::platform
