// SPDX-License-Identifier: Apache-2.0
// Feedback counters: where delivered performance comes from.
//
// A CounterSource reads one CPU's reference and delivered performance
// counters (AMU counters through the kernel, PCC registers through a read
// command, or the simulator) and says how long the read took: a sample
// whose reads were slow is not trustworthy (see DESIGN: under memory
// pressure one read took 255 us instead of 0.5 us).
//
// DeliveredPerfEstimator turns a CPU's samples into delivered performance
// that can be trusted: over a window long against the read cost, from
// samples whose reads were fast, across counter wraparound, and only when
// the result is plausible; everything else is rejected with its reason and
// never published. FeedbackRoundRobin reads a large machine's CPUs a few
// per call, in turn, each through its own estimator.
// baselineDeliveredPerf() is Linux cppc_cpufreq's method
// (two samples 2 us apart, no checks), kept to be measured against.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppc
{

struct CounterSample
{
    std::uint64_t reference = 0; // raw counter values
    std::uint64_t delivered = 0;
    // When the read started and how long reading both counters took, on
    // the steady clock.
    std::chrono::steady_clock::time_point at{};
    std::chrono::nanoseconds readTime{0};
};

class CounterSource
{
  public:
    virtual ~CounterSource() = default;

    // Reads `cpu`'s counters into `out`. Must not allocate. A source that
    // reads off the caller's thread answers std::errc::operation_in_progress
    // while the CPU's reading is not in yet (FeedbackRoundRobin then asks
    // again later and keeps the CPU's estimator as it is). A source that
    // puts a read off (a CPU that stayed idle since its last read, whose
    // counters have not moved: FeedbackRoundRobin keeps its estimator and
    // its delivered performance, and asks again a period later) answers
    // std::errc::operation_would_block.
    virtual std::error_code read(unsigned cpu, CounterSample& out) noexcept = 0;
};

class CpcDescriptor;

// Waits for a short time on the calling thread, as the kernel's udelay()
// does. The simulator implements it by advancing its virtual clock.
class BusyWait
{
  public:
    virtual ~BusyWait() = default;

    // Returns after `duration` has passed. Must not allocate.
    virtual void wait(std::chrono::nanoseconds duration) noexcept = 0;
};

// What a CPU's _CPC says about its counters and performance range. All
// performance values are in the _CPC's abstract performance units, which
// ACPI defines as 32-bit values.
struct FeedbackLimits
{
    // ReferencePerformance: the performance level at which the reference
    // counter counts (NominalPerformance when the _CPC has none, as in
    // Linux). Must not be zero.
    std::uint32_t referencePerf = 0;
    std::uint32_t highestPerf = 0;
    std::uint32_t lowestPerf = 0;
    // Widths of the counters in bits (1 to 64): each counter wraps to zero
    // after 2^bits - 1. Bits of a raw value above the width are ignored.
    unsigned referenceCounterBits = 64;
    unsigned deliveredCounterBits = 64;
    // CounterWraparoundTime, in seconds: the shortest time in which a
    // counter can wrap around. 0 when the _CPC has none (or, as some
    // firmware writes, the Integer 0), which ACPI reads as "the counters
    // never wrap during the platform's lifetime".
    std::uint64_t counterWraparoundSeconds = 0;
};

// The limits a descriptor gives without reading any register: Highest and
// Lowest Performance must be Integers, and so must ReferencePerformance,
// unless it is not supported (absent, the NULL register or the Integer 0,
// as Linux reads it), in which case NominalPerformance stands in; the
// wraparound time must be an Integer or not supported (0: never wraps);
// both counters must be live registers, whose bit widths become the counter
// widths. Otherwise std::nullopt: the caller must read those registers and
// fill FeedbackLimits itself.
[[nodiscard]] std::optional<FeedbackLimits> limitsFromDescriptor(
    const CpcDescriptor& cpu);

// How the estimator decides what to trust.
//
// Reading the reference and the delivered counter are two reads at two
// instants somewhere inside the sample's read time. If the reads of the two
// samples bounding a window take at most R each, the intervals the two
// counter deltas cover differ by at most 2R, so at steady performance the
// estimate is off by at most 2R / (window - R). The estimator enforces
//
//     readTime <= readBound = min(maxReadTime, window / windowPerReadTime)
//
// on every sample it uses, which bounds that error by 2 / (K - 1) for
// K = windowPerReadTime: 0.81 % with the default K of 250, whatever the
// window. With the defaults (10 ms window, 20 us bound) it is 0.4 %.
//
// Why 20 us: a healthy counter read takes about 0.5 us, so 20 us leaves room
// for both reads, an interrupt and a few cache and TLB misses, while the
// 255 us reads seen under memory pressure are rejected; and it keeps the
// error bound at 0.4 % of a 10 ms window. Sources whose two counters are
// latched at one instant (a PCC read command) have no skew between them
// and may relax maxReadTime and windowPerReadTime to their command latency.
struct FeedbackOptions
{
    // The estimator publishes only once two usable samples are at least
    // this far apart (sample start to sample start). Must be positive.
    std::chrono::microseconds window{10'000};
    // The longest read of both counters a sample may take. Must be positive.
    std::chrono::nanoseconds maxReadTime{20'000};
    // K: the window must be at least K times any sample's read time. At
    // least 1.
    unsigned windowPerReadTime = 250;
};

// What became of a sample.
enum class FeedbackVerdict : std::uint8_t
{
    published,        // deliveredPerf is delivered performance over the window
    notYet,           // first usable sample, or the window has not elapsed
    slowRead,         // readTime above readBound (or negative); dropped
    outOfOrder,       // started before the baseline sample
    counterWrap,      // the samples are CounterWraparoundTime or more apart
    referenceStopped, // the reference counter did not advance
    implausible,      // outside [lowestPerf / 2, 1.1 x highestPerf]
};

inline constexpr std::size_t feedbackVerdictCount = 7;

// "published", "slow-read", ...: a short stable name for logs and tables.
[[nodiscard]] std::string_view verdictName(FeedbackVerdict verdict) noexcept;

// The outcome of one sample, with the numbers the verdict was decided on so
// that a caller can log a rejection without asking the estimator again.
struct FeedbackResult
{
    FeedbackVerdict verdict = FeedbackVerdict::notYet;
    // Delivered performance over [from, to]: the published value, or the
    // rejected one when the verdict is implausible; 0 otherwise.
    double deliveredPerf = 0;
    // Start of the baseline sample and of this sample; equal when there was
    // no baseline sample.
    std::chrono::steady_clock::time_point from{};
    std::chrono::steady_clock::time_point to{};
    // Counter advances between the two samples, after wraparound.
    std::uint64_t referenceDelta = 0;
    std::uint64_t deliveredDelta = 0;
    // This sample's read time and the bound it was held to.
    std::chrono::nanoseconds readTime{0};
    std::chrono::nanoseconds readBound{0};
    // The configured window and wraparound time (nanoseconds::max() when
    // the counters never wrap).
    std::chrono::nanoseconds window{0};
    std::chrono::nanoseconds wraparoundTime{0};
    // The plausible range [lowestPerf / 2, 1.1 x highestPerf].
    double plausibleMin = 0;
    double plausibleMax = 0;

    [[nodiscard]] bool published() const noexcept
    {
        return verdict == FeedbackVerdict::published;
    }
    // Whether the sample was refused (anything but published and notYet).
    [[nodiscard]] bool rejected() const noexcept
    {
        return verdict != FeedbackVerdict::published &&
               verdict != FeedbackVerdict::notYet;
    }
    [[nodiscard]] std::chrono::nanoseconds elapsed() const noexcept
    {
        return to - from;
    }
};

// One line saying what happened and why, with the offending numbers, e.g.
// "rejected (slow-read): reading the counters took 255.000 us, more than
// the 20.000 us bound". For logs; allocates.
[[nodiscard]] std::string describe(const FeedbackResult& result);

// Delivered performance of one CPU from successive counter samples:
//
//     delivered = referencePerf x delta(delivered) / delta(reference)
//
// computed exactly with 128-bit intermediates, each delta taken modulo its
// counter's width. A sample is used only if its reads took at most
// readBound (see FeedbackOptions); the estimator keeps the last usable
// sample as the baseline and publishes once a usable sample is at least a
// window after it. Not thread-safe: one estimator per CPU, fed by one
// thread.
class DeliveredPerfEstimator
{
  public:
    // Throws std::invalid_argument when the limits or options are unusable
    // (referencePerf or highestPerf zero, lowestPerf above highestPerf, a
    // counter width outside 1 to 64, a window or maxReadTime that is not
    // positive, windowPerReadTime zero).
    explicit DeliveredPerfEstimator(const FeedbackLimits& limits,
                                    const FeedbackOptions& options = {});

    // Takes the next sample of this CPU, in the order they were read, and
    // says whether it published delivered performance. A rejected sample
    // never changes what was published. After slowRead the previous
    // baseline stays; after the other rejections this sample becomes the
    // baseline, so one bad sample costs at most one window. Does not
    // allocate.
    [[nodiscard]] FeedbackResult update(const CounterSample& sample) noexcept;

    // Forgets the baseline sample (after the CPU was offline, say); the
    // verdict counts stay.
    void reset() noexcept;

    // How many samples got each verdict since construction.
    [[nodiscard]] std::uint64_t count(FeedbackVerdict verdict) const noexcept
    {
        return counts_[static_cast<std::size_t>(verdict)];
    }
    // min(maxReadTime, window / windowPerReadTime).
    [[nodiscard]] std::chrono::nanoseconds readBound() const noexcept
    {
        return readBound_;
    }

  private:
    FeedbackResult finish(FeedbackResult result) noexcept;

    FeedbackLimits limits_;
    std::chrono::nanoseconds window_;
    std::chrono::nanoseconds readBound_;
    std::chrono::nanoseconds wraparoundTime_;
    std::uint64_t referenceMask_;
    std::uint64_t deliveredMask_;
    double plausibleMin_;
    double plausibleMax_;
    std::optional<CounterSample> baseline_;
    std::array<std::uint64_t, feedbackVerdictCount> counts_{};
};

// Delivered performance of many CPUs, read a bounded number per call:
// each read is a call into the counter source (for the kernel's
// feedback_ctrs, a system call in which the kernel asks the CPU for its
// counters), so a large machine has its CPUs read in turn rather than all
// at once. Not thread-safe: one thread polls.
class FeedbackRoundRobin
{
  public:
    struct Options
    {
        // How long after a CPU's read it is due again. Must be positive.
        std::chrono::microseconds period{10'000};
        // How many CPUs one poll() reads at most. Must be at least 1.
        std::size_t maxReadsPerPoll = 16;
    };

    // One element of `estimators` per CPU; a CPU without an estimator is
    // never read and its delivered performance stays unknown. Every CPU is
    // due at the first poll. Throws std::invalid_argument for unusable
    // options.
    FeedbackRoundRobin(
        std::vector<std::optional<DeliveredPerfEstimator>> estimators,
        Options options);

    // Goes round the CPUs from where the previous call stopped, at most
    // once, and reads those that are due (`now` at least a period after
    // their previous read, on the caller's clock), until maxReadsPerPoll
    // were read. A CPU whose source answers operation_in_progress stays
    // due, does not count against maxReadsPerPoll, and keeps its estimator;
    // the next poll starts at the first such CPU, so that a source with few
    // reads in flight still goes round every CPU. One whose source answers
    // operation_would_block is due again a period later, with its
    // estimator and delivered performance kept, and does not count
    // against maxReadsPerPoll. A
    // published result becomes the CPU's delivered performance; a failed read
    // (an offline CPU, a counter the kernel could not read) resets the CPU's
    // estimator and makes its delivered performance unknown until two good
    // reads a window apart. Does not allocate.
    void poll(CounterSource& source, std::chrono::microseconds now) noexcept;

    // The CPU's last published delivered performance, rounded; 0 when
    // unknown. `cpu` below cpuCount().
    [[nodiscard]] std::uint32_t deliveredPerf(std::size_t cpu) const noexcept
    {
        return delivered_[cpu];
    }
    [[nodiscard]] std::size_t cpuCount() const noexcept
    {
        return delivered_.size();
    }
    // The counters' movement over the CPU's last window that had a
    // baseline (published, referenceStopped or implausible), for checks of
    // the counters themselves (firmware_sanity.hpp); sequence 0 until
    // there was one.
    struct Window
    {
        std::uint64_t referenceDelta = 0;
        std::uint64_t deliveredDelta = 0;
        std::chrono::nanoseconds elapsed{0};
        std::uint64_t sequence = 0;
    };
    [[nodiscard]] const Window& lastWindow(std::size_t cpu) const noexcept
    {
        return windows_[cpu];
    }
    // The CPU's estimator, for its verdict counts; nullptr when it has none.
    [[nodiscard]] const DeliveredPerfEstimator* estimator(
        std::size_t cpu) const noexcept
    {
        return estimators_[cpu] ? &*estimators_[cpu] : nullptr;
    }

  private:
    std::vector<std::optional<DeliveredPerfEstimator>> estimators_;
    Options options_;
    std::vector<std::uint32_t> delivered_;
    std::vector<Window> windows_;
    std::vector<std::chrono::microseconds> nextRead_;
    std::size_t cursor_ = 0;
};

// Linux's delivered performance from two samples (cppc_cpufreq's
// cppc_perf_from_fbctrs with get_delta): each delta is t1 - t0 in 64 bits,
// except that when t1 <= t0 and t0 fits in 32 bits it is the 32-bit
// difference; if either delta is zero the result is `desiredPerf` (the last
// request); otherwise referencePerf x delta(delivered) / delta(reference),
// with the 64-bit product wrapping as the kernel's does. No read-time or
// plausibility checks.
[[nodiscard]] std::uint64_t baselinePerfFromSamples(
    const CounterSample& first, const CounterSample& second,
    std::uint64_t referencePerf, std::uint64_t desiredPerf) noexcept;

// The gap Linux leaves between its two samples: udelay(2).
inline constexpr std::chrono::nanoseconds baselineGap{2'000};

struct BaselineReading
{
    std::uint64_t deliveredPerf = 0;
    CounterSample first;
    CounterSample second;
};

// Linux's cppc_cpufreq_get_rate(): reads `cpu`'s counters, waits
// baselineGap, reads them again and applies baselinePerfFromSamples().
// Returns the source's error if a read fails. Does not allocate.
[[nodiscard]] std::error_code baselineDeliveredPerf(
    CounterSource& source, BusyWait& busyWait, unsigned cpu,
    std::uint64_t referencePerf, std::uint64_t desiredPerf,
    BaselineReading& out) noexcept;

} // namespace cppc
