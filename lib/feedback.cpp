// SPDX-License-Identifier: Apache-2.0
#include "feedback.hpp"

#include "cpc_descriptor.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace cppc
{
namespace
{

using std::chrono::nanoseconds;

// GCC and Clang's 128-bit integer; __extension__ keeps -Wpedantic quiet.
__extension__ using Uint128 = unsigned __int128;

constexpr std::uint64_t maxU32 = std::numeric_limits<std::uint32_t>::max();

static_assert(static_cast<std::size_t>(FeedbackVerdict::implausible) + 1 ==
                  feedbackVerdictCount,
              "feedbackVerdictCount must count every verdict");

std::uint64_t widthMask(unsigned bits) noexcept
{
    return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

nanoseconds wraparoundTime(std::uint64_t seconds) noexcept
{
    constexpr std::uint64_t perSecond = 1'000'000'000;
    constexpr auto maxSeconds =
        static_cast<std::uint64_t>(nanoseconds::max().count()) / perSecond;
    if (seconds == 0 || seconds > maxSeconds)
    {
        return nanoseconds::max();
    }
    return nanoseconds(static_cast<nanoseconds::rep>(seconds * perSecond));
}

// num / den as a double, exact to the double's precision.
double quotient(Uint128 num, std::uint64_t den) noexcept
{
    const Uint128 whole = num / den;
    const Uint128 rest = num % den;
    return static_cast<double>(whole) +
           static_cast<double>(rest) / static_cast<double>(den);
}

std::string formatDuration(nanoseconds d)
{
    if (d == nanoseconds::max())
    {
        return "never";
    }
    std::ostringstream s;
    s << std::fixed << std::setprecision(3);
    const auto ns = static_cast<double>(d.count());
    if (d < std::chrono::milliseconds(1) && d > -std::chrono::milliseconds(1))
    {
        s << ns / 1e3 << " us";
    }
    else if (d < std::chrono::seconds(10) && d > -std::chrono::seconds(10))
    {
        s << ns / 1e6 << " ms";
    }
    else
    {
        s << ns / 1e9 << " s";
    }
    return s.str();
}

std::optional<std::uint32_t> integer32(const CpcValue& v) noexcept
{
    if (v.kind != CpcValue::Kind::integer || v.integer > maxU32)
    {
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(v.integer);
}

// Linux's !CPC_SUPPORTED: absent, the NULL register, or the Integer 0.
bool unsupported(const CpcValue& v) noexcept
{
    switch (v.kind)
    {
        case CpcValue::Kind::absent:
            return true;
        case CpcValue::Kind::integer:
            return v.integer == 0;
        case CpcValue::Kind::reg:
            return v.reg.isNull();
    }
    return true;
}

std::optional<unsigned> counterBits(const CpcValue& v) noexcept
{
    if (!v.isLiveRegister() || v.reg.bitWidth == 0 || v.reg.bitWidth > 64)
    {
        return std::nullopt;
    }
    return v.reg.bitWidth;
}

// Linux's get_delta(): a plain 64-bit difference, except that a counter
// that went backwards while below 2^32 is taken to be a wrapped 32-bit one.
std::uint64_t linuxDelta(std::uint64_t t1, std::uint64_t t0) noexcept
{
    if (t1 > t0 || t0 > maxU32)
    {
        return t1 - t0;
    }
    return static_cast<std::uint32_t>(
        static_cast<std::uint32_t>(t1) - static_cast<std::uint32_t>(t0));
}

} // namespace

std::optional<FeedbackLimits> limitsFromDescriptor(const CpcDescriptor& cpu)
{
    FeedbackLimits limits;
    const std::optional<std::uint32_t> highest =
        integer32(cpu.entry(CpcEntry::highestPerf));
    const std::optional<std::uint32_t> lowest =
        integer32(cpu.entry(CpcEntry::lowestPerf));
    const CpcValue& ref = cpu.entry(CpcEntry::referencePerf);
    const std::optional<std::uint32_t> reference =
        unsupported(ref) ? integer32(cpu.entry(CpcEntry::nominalPerf))
                         : integer32(ref);
    const std::optional<unsigned> refBits =
        counterBits(cpu.entry(CpcEntry::referencePerfCounter));
    const std::optional<unsigned> delBits =
        counterBits(cpu.entry(CpcEntry::deliveredPerfCounter));
    if (!highest || !lowest || !reference || !refBits || !delBits)
    {
        return std::nullopt;
    }
    const CpcValue& wrap = cpu.entry(CpcEntry::counterWraparoundTime);
    if (wrap.kind == CpcValue::Kind::integer)
    {
        limits.counterWraparoundSeconds = wrap.integer;
    }
    else if (!unsupported(wrap))
    {
        return std::nullopt;
    }
    limits.highestPerf = *highest;
    limits.lowestPerf = *lowest;
    limits.referencePerf = *reference;
    limits.referenceCounterBits = *refBits;
    limits.deliveredCounterBits = *delBits;
    return limits;
}

std::string_view verdictName(FeedbackVerdict verdict) noexcept
{
    switch (verdict)
    {
        case FeedbackVerdict::published:
            return "published";
        case FeedbackVerdict::notYet:
            return "not-yet";
        case FeedbackVerdict::slowRead:
            return "slow-read";
        case FeedbackVerdict::outOfOrder:
            return "out-of-order";
        case FeedbackVerdict::counterWrap:
            return "counter-wrap";
        case FeedbackVerdict::referenceStopped:
            return "reference-stopped";
        case FeedbackVerdict::implausible:
            return "implausible";
    }
    return "unknown";
}

std::string describe(const FeedbackResult& r)
{
    std::ostringstream s;
    s << std::fixed << std::setprecision(2);
    if (r.rejected())
    {
        s << "rejected (" << verdictName(r.verdict) << "): ";
    }
    switch (r.verdict)
    {
        case FeedbackVerdict::published:
            s << "delivered performance " << r.deliveredPerf << " over "
              << formatDuration(r.elapsed());
            break;
        case FeedbackVerdict::notYet:
            s << "not yet: " << formatDuration(r.elapsed()) << " of a "
              << formatDuration(r.window) << " window";
            break;
        case FeedbackVerdict::slowRead:
            s << "reading the counters took " << formatDuration(r.readTime)
              << ", more than the " << formatDuration(r.readBound) << " bound";
            break;
        case FeedbackVerdict::outOfOrder:
            s << "the sample was taken " << formatDuration(-r.elapsed())
              << " before the previous one";
            break;
        case FeedbackVerdict::counterWrap:
            s << formatDuration(r.elapsed() + r.readTime)
              << " between samples is not less than the counters' "
                 "wraparound time of "
              << formatDuration(r.wraparoundTime);
            break;
        case FeedbackVerdict::referenceStopped:
            s << "the reference counter did not advance in "
              << formatDuration(r.elapsed()) << " (delivered advanced by "
              << r.deliveredDelta << ')';
            break;
        case FeedbackVerdict::implausible:
            s << "delivered performance " << r.deliveredPerf
              << " is outside the plausible [" << r.plausibleMin << ", "
              << r.plausibleMax << "] (reference advanced by "
              << r.referenceDelta << ", delivered by " << r.deliveredDelta
              << " in " << formatDuration(r.elapsed()) << ')';
            break;
    }
    return s.str();
}

DeliveredPerfEstimator::DeliveredPerfEstimator(const FeedbackLimits& limits,
                                               const FeedbackOptions& options) :
    limits_(limits),
    window_(options.window),
    readBound_(std::min(
        options.maxReadTime,
        options.windowPerReadTime == 0
            ? nanoseconds(0)
            : nanoseconds(options.window) / options.windowPerReadTime)),
    wraparoundTime_(wraparoundTime(limits.counterWraparoundSeconds)),
    referenceMask_(widthMask(limits.referenceCounterBits)),
    deliveredMask_(widthMask(limits.deliveredCounterBits)),
    plausibleMin_(static_cast<double>(limits.lowestPerf) / 2),
    plausibleMax_(static_cast<double>(limits.highestPerf) * 11 / 10)
{
    if (limits.referencePerf == 0 || limits.highestPerf == 0)
    {
        throw std::invalid_argument(
            "feedback: reference and highest performance must not be zero");
    }
    if (limits.lowestPerf > limits.highestPerf)
    {
        throw std::invalid_argument(
            "feedback: lowest performance above highest performance");
    }
    for (unsigned bits :
         {limits.referenceCounterBits, limits.deliveredCounterBits})
    {
        if (bits == 0 || bits > 64)
        {
            throw std::invalid_argument(
                "feedback: counter width " + std::to_string(bits) +
                " bits is outside 1 to 64");
        }
    }
    if (options.window <= std::chrono::microseconds(0) ||
        options.maxReadTime <= nanoseconds(0))
    {
        throw std::invalid_argument(
            "feedback: the window and the read-time bound must be positive");
    }
    if (options.windowPerReadTime == 0)
    {
        throw std::invalid_argument(
            "feedback: the window-to-read-time ratio must be at least 1");
    }
}

void DeliveredPerfEstimator::reset() noexcept
{
    baseline_.reset();
}

FeedbackResult DeliveredPerfEstimator::finish(FeedbackResult result) noexcept
{
    ++counts_[static_cast<std::size_t>(result.verdict)];
    return result;
}

FeedbackResult DeliveredPerfEstimator::update(
    const CounterSample& sample) noexcept
{
    FeedbackResult r;
    r.to = sample.at;
    r.readTime = sample.readTime;
    r.readBound = readBound_;
    r.window = window_;
    r.wraparoundTime = wraparoundTime_;
    r.plausibleMin = plausibleMin_;
    r.plausibleMax = plausibleMax_;

    // A slow read's two counters may be far apart in time: drop it and
    // keep the baseline, which was read fast.
    if (sample.readTime < nanoseconds(0) || sample.readTime > readBound_)
    {
        r.from = baseline_ ? baseline_->at : sample.at;
        r.verdict = FeedbackVerdict::slowRead;
        return finish(r);
    }
    if (!baseline_)
    {
        baseline_ = sample;
        r.from = sample.at;
        r.verdict = FeedbackVerdict::notYet;
        return finish(r);
    }

    const CounterSample& base = *baseline_;
    r.from = base.at;
    if (sample.at < base.at)
    {
        r.verdict = FeedbackVerdict::outOfOrder;
    }
    else if (sample.at - base.at < window_)
    {
        r.verdict = FeedbackVerdict::notYet;
        return finish(r);
    }
    // The counters may have been latched as late as the end of this read.
    else if (sample.at - base.at + sample.readTime >= wraparoundTime_)
    {
        r.verdict = FeedbackVerdict::counterWrap;
    }
    else
    {
        r.referenceDelta = (sample.reference - base.reference) & referenceMask_;
        r.deliveredDelta = (sample.delivered - base.delivered) & deliveredMask_;
        if (r.referenceDelta == 0)
        {
            r.verdict = FeedbackVerdict::referenceStopped;
        }
        else
        {
            // delivered = num / den. referencePerf and highestPerf are
            // below 2^32 and the deltas below 2^64, so no product below
            // reaches 2^101.
            const Uint128 num =
                Uint128{limits_.referencePerf} * r.deliveredDelta;
            const Uint128 den = r.referenceDelta;
            r.deliveredPerf = quotient(num, r.referenceDelta);
            const bool tooLow = 2 * num < Uint128{limits_.lowestPerf} * den;
            const bool tooHigh =
                10 * num > 11 * Uint128{limits_.highestPerf} * den;
            r.verdict = tooLow || tooHigh ? FeedbackVerdict::implausible
                                          : FeedbackVerdict::published;
        }
    }
    baseline_ = sample;
    return finish(r);
}

FeedbackRoundRobin::FeedbackRoundRobin(
    std::vector<std::optional<DeliveredPerfEstimator>> estimators,
    Options options) :
    estimators_(std::move(estimators)),
    options_(options), delivered_(estimators_.size(), 0),
    windows_(estimators_.size()),
    nextRead_(estimators_.size(), std::chrono::microseconds{0})
{
    if (options_.period <= std::chrono::microseconds{0})
    {
        throw std::invalid_argument(
            "feedback round robin: the period must be positive");
    }
    if (options_.maxReadsPerPoll == 0)
    {
        throw std::invalid_argument(
            "feedback round robin: at least one read per poll");
    }
}

void FeedbackRoundRobin::poll(CounterSource& source,
                              std::chrono::microseconds now) noexcept
{
    const std::size_t count = estimators_.size();
    std::size_t budget = options_.maxReadsPerPoll;
    // The first CPU left waiting: the next poll starts there, so that the
    // CPUs after it get their turn rather than those before it again.
    std::optional<std::size_t> firstWaiting;
    for (std::size_t k = 0; k < count && budget > 0; ++k)
    {
        const std::size_t cpu = cursor_;
        cursor_ = cursor_ + 1 == count ? 0 : cursor_ + 1;
        if (!estimators_[cpu] || now < nextRead_[cpu])
        {
            continue;
        }
        CounterSample s;
        const std::error_code ec = source.read(static_cast<unsigned>(cpu), s);
        if (ec == std::errc::operation_in_progress)
        {
            // Still due; asked again at the next poll.
            firstWaiting = firstWaiting.value_or(cpu);
            continue;
        }
        nextRead_[cpu] = now + options_.period;
        if (ec == std::errc::operation_would_block)
        {
            continue; // put off by the source
        }
        --budget;
        if (ec)
        {
            estimators_[cpu]->reset();
            delivered_[cpu] = 0;
            continue;
        }
        const FeedbackResult r = estimators_[cpu]->update(s);
        if (r.published() || r.verdict == FeedbackVerdict::referenceStopped ||
            r.verdict == FeedbackVerdict::implausible)
        {
            Window& w = windows_[cpu];
            w = {r.referenceDelta, r.deliveredDelta, r.elapsed(),
                 w.sequence + 1};
        }
        if (r.published())
        {
            delivered_[cpu] = static_cast<std::uint32_t>(
                std::min(std::lround(r.deliveredPerf),
                         long{std::numeric_limits<std::uint32_t>::max()}));
        }
    }
    if (firstWaiting)
    {
        cursor_ = *firstWaiting;
    }
}

std::uint64_t baselinePerfFromSamples(
    const CounterSample& first, const CounterSample& second,
    std::uint64_t referencePerf, std::uint64_t desiredPerf) noexcept
{
    const std::uint64_t reference =
        linuxDelta(second.reference, first.reference);
    const std::uint64_t delivered =
        linuxDelta(second.delivered, first.delivered);
    if (reference == 0 || delivered == 0)
    {
        return desiredPerf;
    }
    return referencePerf * delivered / reference;
}

std::error_code baselineDeliveredPerf(CounterSource& source, BusyWait& busyWait,
                                      unsigned cpu, std::uint64_t referencePerf,
                                      std::uint64_t desiredPerf,
                                      BaselineReading& out) noexcept
{
    if (std::error_code ec = source.read(cpu, out.first))
    {
        return ec;
    }
    busyWait.wait(baselineGap);
    if (std::error_code ec = source.read(cpu, out.second))
    {
        return ec;
    }
    out.deliveredPerf = baselinePerfFromSamples(out.first, out.second,
                                                referencePerf, desiredPerf);
    return {};
}

} // namespace cppc
