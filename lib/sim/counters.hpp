// SPDX-License-Identifier: Apache-2.0
// Simulated feedback counters for N CPUs, in virtual time.
//
// Each CPU's reference counter advances by referencePerf and its delivered
// counter by the CPU's current delivered performance every `unitTime` of a
// virtual nanosecond clock that only the test or benchmark moves (reading
// and waiting move it too; nothing sleeps). Counts are exact integers and
// wrap at the configured width. Each counter read costs readCost plus an
// injected stall, scripted or drawn from a seeded generator, during which
// every counter keeps running; the value is latched when the read ends. So
// a stall between the reads of the two counters skews them exactly as a
// slow read on hardware does, and the sample's readTime shows it.
#pragma once

#include "lib/feedback.hpp"

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

namespace cppc::sim
{

// Which counter a sample reads first. Linux's cppc_get_perf_ctrs reads
// the delivered counter first.
enum class ReadOrder : std::uint8_t
{
    deliveredFirst,
    referenceFirst,
};

// Random stalls: each counter read independently stalls with
// `probability`, for a time drawn uniformly from [min, max].
struct ReadStalls
{
    double probability = 0;
    std::chrono::nanoseconds min{0};
    std::chrono::nanoseconds max{0};
    std::uint64_t seed = 1;
};

struct CounterConfig
{
    unsigned cpus = 1;
    // The reference counter advances by referencePerf, and the delivered
    // counter by the CPU's delivered performance, every unitTime.
    std::uint32_t referencePerf = 100;
    std::uint32_t deliveredPerf = 100; // every CPU's, at the start
    std::chrono::nanoseconds unitTime{1'000};
    unsigned counterBits = 64; // both counters wrap at 2^counterBits
    // Counter values at the start (reduced to the width).
    std::uint64_t referenceStart = 0;
    std::uint64_t deliveredStart = 0;
    ReadOrder order = ReadOrder::deliveredFirst;
    // What each counter read costs without a stall.
    std::chrono::nanoseconds readCost{250};
    ReadStalls stalls;
    // The virtual clock's reading at the start.
    std::chrono::nanoseconds startTime{std::chrono::seconds(1)};
};

class VirtualCounters final : public CounterSource, public BusyWait
{
  public:
    // Throws std::invalid_argument for zero CPUs, a width outside 1 to 64,
    // a unitTime that is not positive, a negative readCost, or stalls with
    // a probability outside [0, 1] or min > max or min < 0.
    explicit VirtualCounters(const CounterConfig& config);

    // Reads both counters of `cpu` in the configured order. Each read
    // advances the clock by readCost plus its stall (a scripted one if any
    // is queued for the CPU, else a random one) and latches the counter
    // when it ends. `at` is the clock when the first read began, readTime
    // the time both took. Errc::noSuchCpu for an unknown CPU. Does not
    // allocate.
    std::error_code read(unsigned cpu, CounterSample& out) noexcept override;

    // Advances the clock by `duration` (not below zero).
    void wait(std::chrono::nanoseconds duration) noexcept override;

    // The virtual clock, on the steady clock's scale.
    [[nodiscard]] std::chrono::steady_clock::time_point now() const noexcept;
    void advance(std::chrono::nanoseconds duration) noexcept;
    // Advances to `when`; does nothing if the clock is already past it.
    void advanceTo(std::chrono::steady_clock::time_point when) noexcept;

    // From now on `cpu` delivers `perf`. Throws std::out_of_range for an
    // unknown CPU.
    void setDeliveredPerf(unsigned cpu, std::uint32_t perf);
    // From now on both counters of `cpu` stop (true) or run again (false),
    // as AMU counters do while a core is in WFI. Throws std::out_of_range.
    void setIdle(unsigned cpu, bool idle);

    // Stalls for `cpu`'s next counter reads, one per read in order, taken
    // before any random stall. Throws std::out_of_range.
    void queueStalls(unsigned cpu,
                     std::span<const std::chrono::nanoseconds> stalls);

    // The exact average delivered performance of `cpu` over [from, to]
    // while it was not idle: referencePerf x delivered ticks / reference
    // ticks with no read skew and no rounding. 0 when the CPU was idle
    // throughout or to <= from. Throws std::out_of_range; from and to
    // before the start count from the start, after now up to now.
    [[nodiscard]] double trueDeliveredPerf(
        unsigned cpu, std::chrono::steady_clock::time_point from,
        std::chrono::steady_clock::time_point to) const;

    // The counters' values now, without a read (no cost, no stall).
    [[nodiscard]] std::uint64_t referenceCount(unsigned cpu) const;
    [[nodiscard]] std::uint64_t deliveredCount(unsigned cpu) const;

    [[nodiscard]] unsigned cpus() const noexcept
    {
        return static_cast<unsigned>(cpus_.size());
    }
    // How many reads stalled so far (scripted or random, non-zero).
    [[nodiscard]] std::uint64_t stalledReads() const noexcept
    {
        return stalledReads_;
    }

  private:
    // __extension__ keeps -Wpedantic quiet about the 128-bit type.
    __extension__ using Wide = unsigned __int128;

    // Sums of perf x active nanoseconds since the start.
    struct Accumulated
    {
        Wide reference = 0;
        Wide delivered = 0;
    };
    // The CPU's state from `start` until the next segment's start.
    struct Segment
    {
        std::uint64_t start = 0; // virtual ns
        Accumulated atStart;
        std::uint32_t perf = 0;
        bool idle = false;
    };
    struct Cpu
    {
        std::vector<Segment> segments; // never empty; starts ascending
        std::vector<std::chrono::nanoseconds> queued;
        std::size_t nextQueued = 0;
    };

    Cpu& cpu(unsigned index);
    const Cpu& cpu(unsigned index) const;
    Accumulated accumulatedAt(const Cpu& c, std::uint64_t t) const noexcept;
    std::uint64_t counter(Wide accumulated, std::uint64_t start) const noexcept;
    void beginSegment(Cpu& c, std::uint32_t perf, bool idle);
    std::chrono::nanoseconds nextStall(Cpu& c) noexcept;
    std::uint64_t random() noexcept;

    CounterConfig config_;
    std::uint64_t mask_;
    std::uint64_t now_;
    std::uint64_t randomState_;
    std::uint64_t stalledReads_ = 0;
    std::vector<Cpu> cpus_;
};

} // namespace cppc::sim
