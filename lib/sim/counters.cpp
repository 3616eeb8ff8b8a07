// SPDX-License-Identifier: Apache-2.0
#include "counters.hpp"

#include "lib/error.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cppc::sim
{
namespace
{

using std::chrono::nanoseconds;
using std::chrono::steady_clock;

std::uint64_t ticks(nanoseconds d) noexcept
{
    return d.count() > 0 ? static_cast<std::uint64_t>(d.count()) : 0;
}

std::uint64_t ticks(steady_clock::time_point t) noexcept
{
    return ticks(std::chrono::duration_cast<nanoseconds>(t.time_since_epoch()));
}

steady_clock::time_point timePoint(std::uint64_t ns) noexcept
{
    return steady_clock::time_point(
        std::chrono::duration_cast<steady_clock::duration>(
            nanoseconds(static_cast<nanoseconds::rep>(ns))));
}

void checkConfig(const CounterConfig& config)
{
    if (config.cpus == 0)
    {
        throw std::invalid_argument("simulated counters: no CPUs");
    }
    if (config.counterBits == 0 || config.counterBits > 64)
    {
        throw std::invalid_argument(
            "simulated counters: counter width " +
            std::to_string(config.counterBits) + " is outside 1 to 64 bits");
    }
    if (config.unitTime <= nanoseconds(0) || config.readCost < nanoseconds(0))
    {
        throw std::invalid_argument(
            "simulated counters: unit time must be positive and read cost "
            "not negative");
    }
    const ReadStalls& s = config.stalls;
    if (!(s.probability >= 0 && s.probability <= 1) || s.min < nanoseconds(0) ||
        s.max < s.min)
    {
        throw std::invalid_argument(
            "simulated counters: stalls need a probability in [0, 1] and "
            "0 <= min <= max");
    }
}

} // namespace

VirtualCounters::VirtualCounters(const CounterConfig& config) :
    config_(config),
    mask_(config.counterBits >= 64
              ? ~std::uint64_t{0}
              : (std::uint64_t{1} << config.counterBits) - 1),
    now_(ticks(config.startTime)), randomState_(config.stalls.seed)
{
    checkConfig(config);
    cpus_.resize(config.cpus);
    for (Cpu& c : cpus_)
    {
        c.segments.push_back({now_, {}, config.deliveredPerf, false});
    }
}

VirtualCounters::Cpu& VirtualCounters::cpu(unsigned index)
{
    if (index >= cpus_.size())
    {
        throw std::out_of_range(
            "simulated counters: no CPU " + std::to_string(index));
    }
    return cpus_[index];
}

const VirtualCounters::Cpu& VirtualCounters::cpu(unsigned index) const
{
    if (index >= cpus_.size())
    {
        throw std::out_of_range(
            "simulated counters: no CPU " + std::to_string(index));
    }
    return cpus_[index];
}

VirtualCounters::Accumulated VirtualCounters::accumulatedAt(
    const Cpu& c, std::uint64_t t) const noexcept
{
    // Reads happen now, in the last segment; only trueDeliveredPerf looks
    // back.
    auto segment = std::prev(c.segments.end());
    if (t < segment->start)
    {
        segment = std::prev(
            std::upper_bound(c.segments.begin(), segment, t,
                             [](std::uint64_t value, const Segment& s) {
            return value < s.start;
            }));
    }
    Accumulated a = segment->atStart;
    if (!segment->idle && t > segment->start)
    {
        const Wide active = t - segment->start;
        a.reference += Wide{config_.referencePerf} * active;
        a.delivered += Wide{segment->perf} * active;
    }
    return a;
}

std::uint64_t VirtualCounters::counter(Wide accumulated,
                                       std::uint64_t start) const noexcept
{
    const Wide count = accumulated / ticks(config_.unitTime);
    return (start + static_cast<std::uint64_t>(count)) & mask_;
}

void VirtualCounters::beginSegment(Cpu& c, std::uint32_t perf, bool idle)
{
    const Segment s{now_, accumulatedAt(c, now_), perf, idle};
    if (c.segments.back().start == now_)
    {
        c.segments.back() = s;
    }
    else
    {
        c.segments.push_back(s);
    }
}

std::uint64_t VirtualCounters::random() noexcept
{
    // SplitMix64: the same sequence on every platform for a given seed.
    std::uint64_t z = (randomState_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

nanoseconds VirtualCounters::nextStall(Cpu& c) noexcept
{
    if (c.nextQueued < c.queued.size())
    {
        return c.queued[c.nextQueued++];
    }
    const ReadStalls& s = config_.stalls;
    if (s.probability <= 0)
    {
        return nanoseconds(0);
    }
    // 53 random bits as a fraction in [0, 1).
    const double u = static_cast<double>(random() >> 11) * 0x1.0p-53;
    if (u >= s.probability)
    {
        return nanoseconds(0);
    }
    const Wide span = ticks(s.max) - ticks(s.min) + Wide{1};
    const auto offset = static_cast<std::uint64_t>((random() * span) >> 64);
    return s.min + nanoseconds(static_cast<nanoseconds::rep>(offset));
}

std::error_code VirtualCounters::read(unsigned cpuIndex,
                                      CounterSample& out) noexcept
{
    if (cpuIndex >= cpus_.size())
    {
        return Errc::noSuchCpu;
    }
    Cpu& c = cpus_[cpuIndex];
    const std::uint64_t start = now_;
    for (int i = 0; i < 2; ++i)
    {
        const nanoseconds stall = nextStall(c);
        if (stall > nanoseconds(0))
        {
            ++stalledReads_;
        }
        now_ += ticks(config_.readCost) + ticks(stall);
        const Accumulated a = accumulatedAt(c, now_);
        const bool deliveredNow =
            (i == 0) == (config_.order == ReadOrder::deliveredFirst);
        if (deliveredNow)
        {
            out.delivered = counter(a.delivered, config_.deliveredStart);
        }
        else
        {
            out.reference = counter(a.reference, config_.referenceStart);
        }
    }
    out.at = timePoint(start);
    out.readTime = nanoseconds(static_cast<nanoseconds::rep>(now_ - start));
    return {};
}

void VirtualCounters::wait(nanoseconds duration) noexcept
{
    advance(duration);
}

steady_clock::time_point VirtualCounters::now() const noexcept
{
    return timePoint(now_);
}

void VirtualCounters::advance(nanoseconds duration) noexcept
{
    now_ += ticks(duration);
}

void VirtualCounters::advanceTo(steady_clock::time_point when) noexcept
{
    now_ = std::max(now_, ticks(when));
}

void VirtualCounters::setDeliveredPerf(unsigned cpuIndex, std::uint32_t perf)
{
    Cpu& c = cpu(cpuIndex);
    beginSegment(c, perf, c.segments.back().idle);
}

void VirtualCounters::setIdle(unsigned cpuIndex, bool idle)
{
    Cpu& c = cpu(cpuIndex);
    beginSegment(c, c.segments.back().perf, idle);
}

void VirtualCounters::queueStalls(unsigned cpuIndex,
                                  std::span<const nanoseconds> stalls)
{
    Cpu& c = cpu(cpuIndex);
    c.queued.erase(c.queued.begin(),
                   c.queued.begin() +
                       static_cast<std::ptrdiff_t>(c.nextQueued));
    c.nextQueued = 0;
    c.queued.insert(c.queued.end(), stalls.begin(), stalls.end());
}

double VirtualCounters::trueDeliveredPerf(unsigned cpuIndex,
                                          steady_clock::time_point from,
                                          steady_clock::time_point to) const
{
    const Cpu& c = cpu(cpuIndex);
    const std::uint64_t first = c.segments.front().start;
    const std::uint64_t a = std::clamp(ticks(from), first, now_);
    const std::uint64_t b = std::clamp(ticks(to), first, now_);
    if (b <= a)
    {
        return 0;
    }
    const Accumulated begin = accumulatedAt(c, a);
    const Accumulated end = accumulatedAt(c, b);
    const Wide reference = end.reference - begin.reference;
    if (reference == 0)
    {
        return 0;
    }
    return static_cast<double>(end.delivered - begin.delivered) *
           static_cast<double>(config_.referencePerf) /
           static_cast<double>(reference);
}

std::uint64_t VirtualCounters::referenceCount(unsigned cpuIndex) const
{
    return counter(accumulatedAt(cpu(cpuIndex), now_).reference,
                   config_.referenceStart);
}

std::uint64_t VirtualCounters::deliveredCount(unsigned cpuIndex) const
{
    return counter(accumulatedAt(cpu(cpuIndex), now_).delivered,
                   config_.deliveredStart);
}

} // namespace cppc::sim
