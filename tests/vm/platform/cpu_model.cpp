// SPDX-License-Identifier: Apache-2.0
#include "tests/vm/platform/cpu_model.hpp"

#include <algorithm>
#include <cmath>

namespace cppcgov::platform
{

namespace
{

constexpr std::uint64_t defaultWindowUs = 10000;
constexpr std::size_t pendingLimit = 1024;

} // namespace

CpuModel::CpuModel(const Scale& scale, PowerCurve curve,
                   std::uint64_t latencyNs, std::uint64_t startNs) :
    scale_(scale),
    curve_(curve), latency_(latencyNs), lastNs_(startNs),
    applied_(scale.lowest), heading_(scale.lowest), frozen_(scale.lowest)
{}

std::uint32_t CpuModel::choose(const Request& r) const noexcept
{
    std::uint32_t low = scale_.lowest;
    std::uint32_t high = scale_.highest;
    if (r.minimum != 0)
    {
        low = std::clamp(r.minimum, scale_.lowest, scale_.highest);
    }
    if (r.maximum != 0)
    {
        high = std::clamp(r.maximum, scale_.lowest, scale_.highest);
    }
    low = std::min(low, high);
    if (r.autonomous)
    {
        const double bias =
            (256.0 - std::min<std::uint32_t>(r.epp, 255)) / 128.0;
        const double share = std::min(1.0, busyShare_ * bias);
        const auto span =
            static_cast<double>(scale_.highest - scale_.lowestNonlinear);
        const auto chosen = static_cast<std::uint32_t>(
            std::lround(scale_.lowestNonlinear + span * share));
        return std::clamp(chosen, low, high);
    }
    if (faults_.ignoreDesired)
    {
        return frozen_;
    }
    return std::clamp(r.desired, low, high);
}

void CpuModel::request(std::uint64_t nowNs, const Request& r)
{
    if (seenRequest_ && r.desired != asked_.desired)
    {
        ++totals_.desiredChanges;
    }
    seenRequest_ = true;
    asked_ = r;
    const std::uint32_t wanted = choose(r);
    if (wanted == heading_)
    {
        return;
    }
    if (pending_.size() == pendingLimit)
    {
        pending_.pop_front();
    }
    pending_.push_back({std::max(nowNs, lastNs_) + latency_, wanted});
    heading_ = wanted;
}

void CpuModel::setCap(std::uint32_t cap) noexcept
{
    capLevel_ = cap;
}

void CpuModel::setFaults(const Faults& f) noexcept
{
    if (f.ignoreDesired && !faults_.ignoreDesired)
    {
        frozen_ = heading_;
    }
    faults_ = f;
}

std::uint32_t CpuModel::delivered() const noexcept
{
    return capLevel_ != 0
               ? std::min(applied_, std::max(capLevel_, scale_.lowest))
               : applied_;
}

std::uint32_t CpuModel::excursions() const noexcept
{
    const std::uint32_t now = delivered();
    std::uint32_t bits = 0;
    if (!asked_.autonomous && now < applied_)
    {
        bits |= desiredExcursion;
    }
    if (asked_.minimum != 0 && now < std::min(asked_.minimum, scale_.highest))
    {
        bits |= minimumExcursion;
    }
    return bits;
}

void CpuModel::run(std::uint64_t ns, std::uint64_t busyNs)
{
    if (ns == 0)
    {
        return;
    }
    // The proportional split of a stretch's busy time rounds down part by
    // part, so the last part can be left a few nanoseconds more than it
    // lasts.
    const std::uint64_t busy = std::min(busyNs, ns);
    const std::uint32_t level = delivered();
    totals_.wallNs += ns;
    totals_.busyNs += busy;
    totals_.levelNs[level] += ns;
    totals_.busyPerfNs +=
        static_cast<long double>(level) * static_cast<long double>(busy);
    if (level < applied_)
    {
        totals_.throttledNs += ns;
    }
    const double ratio = static_cast<double>(level) / scale_.highest;
    totals_.energyJoules +=
        (busyWatts(curve_, ratio) * static_cast<double>(busy) +
         idleWatts(curve_, ratio) * static_cast<double>(ns - busy)) *
        1e-9;
    if (faults_.countersStalled)
    {
        return;
    }
    // counts = MHz x 1e6 x (perf / nominal) x ns x 1e-9
    //        = MHz x perf x ns / (nominal x 1000), remainder carried.
    const Wide nominalDiv = Wide{scale_.nominal} * 1000U;
    const Wide refNum = Wide{scale_.nominalMhz} * scale_.effectiveReference() *
                            busy * faults_.referenceRatePercent +
                        referenceRemainder_;
    const Wide refDiv = nominalDiv * 100U;
    reference_ += static_cast<std::uint64_t>(refNum / refDiv);
    referenceRemainder_ = refNum % refDiv;
    const Wide delNum =
        Wide{scale_.nominalMhz} * level * busy + deliveredRemainder_;
    deliveredCount_ += static_cast<std::uint64_t>(delNum / nominalDiv);
    deliveredRemainder_ = delNum % nominalDiv;
}

void CpuModel::advance(std::uint64_t nowNs, std::uint64_t busyNs)
{
    if (nowNs <= lastNs_)
    {
        return;
    }
    const std::uint64_t total = nowNs - lastNs_;
    const std::uint64_t busy = std::min(busyNs, total);
    // The stretch split where queued targets take effect; busy time spread
    // evenly over it.
    std::uint64_t busyLeft = busy;
    std::uint64_t at = lastNs_;
    while (!pending_.empty() && pending_.front().dueNs <= nowNs)
    {
        const std::uint64_t due = std::max(pending_.front().dueNs, at);
        const std::uint64_t part = due - at;
        const auto partBusy =
            static_cast<std::uint64_t>(static_cast<Wide>(busy) * part / total);
        run(part, std::min(partBusy, busyLeft));
        busyLeft -= std::min(partBusy, busyLeft);
        at = due;
        applied_ = pending_.front().level;
        pending_.pop_front();
    }
    run(nowNs - at, busyLeft);
    lastNs_ = nowNs;
    const std::uint64_t windowUs =
        asked_.windowUs != 0 ? asked_.windowUs : defaultWindowUs;
    const double alpha =
        1.0 - std::exp(-static_cast<double>(total) /
                       (static_cast<double>(windowUs) * 1000.0));
    busyShare_ +=
        alpha *
        (static_cast<double>(busy) / static_cast<double>(total) - busyShare_);
}

} // namespace cppcgov::platform
