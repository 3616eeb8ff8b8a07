// SPDX-License-Identifier: Apache-2.0
// The firmware checks while the daemon runs (lib/firmware_sanity.hpp has
// the checks and the facts they stand on), per CPU and reported per _PSD
// domain of the machine's topology:
//   reference-perf  the CPU's ReferencePerformance (as the machine computes
//                   delivered performance with it) is no performance level
//                   of the CPU, or lies at no positive frequency;
//   counter-rate    the reference counter's measured rate is not the rate
//                   ReferencePerformance implies (NominalFrequency x
//                   ReferencePerformance / NominalPerformance): every
//                   delivered figure is off by a constant factor;
//   counters-stuck  the reference or the delivered counter stood still over
//                   `stuckReadings` successive readings taken while the CPU
//                   was busy;
//   follow          while the CPU was busy and its request steady for
//                   `followWindowS`, delivered performance stayed more than
//                   `tolerance` below the request with no PerformanceLimited
//                   excursion, or above a request the platform should
//                   honour.
//
// What "busy" means: at least half the time of a stretch (a follow window)
// by the sum of CpuSample::busyUs over it (summed whole: procfs reports
// busy time in 10 ms steps, more than one short tick); a counter reading counts
// for counters-stuck when the CPU was busy at least half the time since the
// previous reading, and for counter-rate when it was busy at least 90 % of it
// (the Arm AMU's constant counter does not count while the CPU sleeps, so an
// idle stretch reads slow; the rate taken is the highest seen, each over
// busy readings that together span at least 100 ms: over one short reading
// the time a read takes, or a platform that counts in lumps, moves the rate
// by more than the tolerance). A machine that
// reports no busy time (busyUs 0) is never busy here: checks 2 and 3 stay
// quiet on it. A finding stays, with the reason it was found with, until a
// later window or reading finds nothing wrong; findings never change the
// requests.
//
// No logging, no clock, no D-Bus: fed once per CPU per tick by the
// governor. Not thread-safe.
#pragma once

#include "daemon/config.hpp"
#include "daemon/machine.hpp"
#include "lib/firmware_sanity.hpp"
#include "policies/policy.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::daemon
{

class FirmwareWatch
{
  public:
    explicit FirmwareWatch(const policies::Topology& topology,
                           const SanityConfig& config = {},
                           bool readsPerfLimited = false);

    // Takes new settings; a follow window in progress starts over.
    void configure(const SanityConfig& config);

    // CPU `cpu`'s sample of the tick at `nowUs` and the desired performance
    // in force for it. `platformSelects`: the platform chooses the CPU's
    // performance itself (autonomous selection), so Desired is only a hint
    // and the follow check does not judge it.
    void observe(std::uint64_t nowUs, std::uint32_t cpu,
                 const CpuSample& sample, std::uint32_t requested,
                 bool platformSelects = false);

    // The finding shown for domain `domain` (an index into the topology's
    // domains): "firmware: " and the reason of its first CPU that has one
    // (by check, in the order above), with that CPU named when the domain
    // has several; empty when there is none.
    [[nodiscard]] std::string_view finding(std::size_t domain) const noexcept
    {
        return shown_[domain];
    }
    // Whether any CPU of `domain` has a finding of `check` now.
    [[nodiscard]] bool active(std::size_t domain,
                              cppc::SanityCheck check) const noexcept;
    // Goes up by one at every change of any domain's finding().
    [[nodiscard]] std::uint64_t changes() const noexcept
    {
        return changes_;
    }

  private:
    struct CpuState
    {
        std::optional<std::uint64_t> lastUs;
        // The follow check's current stretch.
        std::uint32_t runRequest = 0;
        std::uint64_t runElapsedUs = 0;
        std::uint64_t runBusyUs = 0;
        double deliveredSum = 0; // delivered x microseconds
        std::uint64_t deliveredUs = 0;
        bool limited = false;
        // Since the last counter reading.
        std::uint64_t window = 0;
        std::uint64_t sinceElapsedUs = 0;
        std::uint64_t sinceBusyUs = 0;
        std::uint32_t referenceStuck = 0;
        std::uint32_t deliveredStuck = 0;
        double fastestHz = 0; // the reference counter's highest busy rate
        std::uint32_t rateReadings = 0;
        // Busy readings summed until they span a rate window.
        std::uint64_t rateDelta = 0;
        std::uint64_t rateElapsedUs = 0;
        std::uint32_t referencePerf = 0; // as last checked
        std::array<std::optional<std::string>, cppc::sanityCheckCount> findings;
    };

    void follow(CpuState& s, std::uint32_t cpu, const CpuSample& sample,
                std::uint32_t requested, bool platformSelects,
                std::uint64_t dtUs);
    void counters(CpuState& s, std::uint32_t cpu, const CpuSample& sample);
    // Sets one check's finding of one CPU; reshows its domain on a change.
    void set(std::uint32_t cpu, cppc::SanityCheck check,
             std::optional<std::string> reason);
    void reshow(std::size_t domain);

    const policies::Topology& topology_;
    SanityConfig config_;
    bool readsPerfLimited_;
    std::vector<CpuState> cpus_;
    std::vector<std::size_t> domainOf_;
    std::vector<std::string> shown_; // per domain
    std::uint64_t changes_ = 0;
};

} // namespace cppcgov::daemon
