// SPDX-License-Identifier: Apache-2.0
// What the kernel's cpufreq and acpi_cppc attributes hold and accept, for
// pccfs: every policy starts under schedutil at its full range, its
// setspeed shows "<unsupported>" unless the governor is userspace, kHz
// written are clamped into the limits as the kernel clamps them, and
// every CPU's feedback counters advance with the performance in force.
// No timing here: the mailbox decides when an access completes, this
// decides what it reads or what it changes.
#pragma once

#include "tree.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pccfs
{

// The CPPC capabilities every CPU has (those of the integration tests'
// kernel rig): cppc_cpufreq's conversion is perf x 10000 kHz both ways.
inline constexpr std::uint32_t highestPerf = 300;
inline constexpr std::uint32_t nominalPerf = 250;
inline constexpr std::uint32_t lowestNonlinearPerf = 100;
inline constexpr std::uint32_t lowestPerf = 50;
inline constexpr std::uint32_t lowestFreqMhz = 500;
inline constexpr std::uint32_t nominalFreqMhz = 2500;
inline constexpr std::uint32_t khzPerPerf = 10'000;
// The reference counter's rate, counts per microsecond.
inline constexpr std::uint64_t referenceCountsPerUs = 100;

class KernelModel
{
  public:
    using Clock = std::chrono::steady_clock;

    // `transitionLatencyNs` is what cpuinfo_transition_latency shows.
    KernelModel(unsigned cpus, unsigned cpusPerPolicy,
                std::uint64_t transitionLatencyNs, Clock::time_point now);

    // The text of file `role` of CPU or policy `index` at `now`.
    std::string show(Role role, unsigned index, Clock::time_point now) const;

    // Whether `text` may be written to `role` of `index` now; the kernel
    // refuses at once (before any PCC access) what this refuses.
    std::error_code check(Role role, unsigned index,
                          std::string_view text) const;

    // Applies a write that check() accepted; PCC writes land here when
    // their doorbell completes.
    void store(Role role, unsigned index, std::string_view text,
               Clock::time_point now);

    // The CPUs of `role` of `index`: the CPU, or every CPU of the policy.
    std::vector<unsigned> cpusOf(Role role, unsigned index) const;

    // "key value" lines of the policies: setspeed_khz, writes, governor.
    std::string policyStats() const;

    unsigned cpuCount() const noexcept
    {
        return static_cast<unsigned>(cpus_.size());
    }

    // Counts a PCC write landed on policy `index`.
    void countWrite(unsigned index) noexcept;

  private:
    struct Counters
    {
        std::uint64_t reference = 0;
        std::uint64_t delivered = 0;
        Clock::time_point since;
        std::uint32_t perf = 0;
    };
    struct Cpu
    {
        unsigned policy = 0;
        std::string latency = "0";
        Counters counters;
    };
    struct Policy
    {
        std::vector<unsigned> cpus;
        std::string governor = "schedutil";
        std::uint32_t minRequest = 0;
        std::uint32_t maxRequest = 0;
        std::uint32_t curKhz = 0; // the performance in force
        std::uint64_t writes = 0;
        std::uint32_t minKhz() const noexcept;
    };

    const Policy& policy(unsigned index) const;
    Policy& policy(unsigned index);
    // Moves policy `p` to min(max(khz, min), max), the counters with it.
    void setCurrent(Policy& p, std::uint32_t khz, Clock::time_point now);
    // `c` carried forward to `now` at its performance.
    static Counters advanced(const Counters& c, Clock::time_point now) noexcept;
    std::string counters(unsigned cpu, Clock::time_point now) const;

    std::uint64_t transitionLatencyNs_;
    std::vector<Cpu> cpus_;
    std::vector<Policy> policies_; // by number; unused numbers empty
};

} // namespace pccfs
