// SPDX-License-Identifier: Apache-2.0
#include "daemon/latency_histogram.hpp"

#include <algorithm>

namespace cppcgov::daemon
{

LatencyHistogram::LatencyHistogram(
    std::initializer_list<std::uint64_t> boundsNs) :
    boundsNs_(boundsNs),
    counts_(boundsNs.size(), 0)
{}

void LatencyHistogram::add(std::uint64_t ns) noexcept
{
    // The first bound at or above ns: Prometheus's le is inclusive.
    const auto it = std::lower_bound(boundsNs_.begin(), boundsNs_.end(), ns);
    if (it != boundsNs_.end())
    {
        ++counts_[static_cast<std::size_t>(it - boundsNs_.begin())];
    }
    ++count_;
    sumNs_ += ns;
}

HistogramValues LatencyHistogram::values() const
{
    HistogramValues v;
    valuesInto(v);
    return v;
}

void LatencyHistogram::valuesInto(HistogramValues& v) const
{
    v.bounds.clear();
    v.cumulative.clear();
    std::uint64_t below = 0;
    for (std::size_t i = 0; i < boundsNs_.size(); ++i)
    {
        below += counts_[i];
        v.bounds.push_back(static_cast<double>(boundsNs_[i]) / 1e9);
        v.cumulative.push_back(below);
    }
    v.count = count_;
    v.sum = static_cast<double>(sumNs_) / 1e9;
}

LatencyHistogram tickLatenessHistogram()
{
    return LatencyHistogram(
        {10'000, 25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000,
         2'500'000, 5'000'000, 10'000'000, 25'000'000, 100'000'000});
}

LatencyHistogram hintToWriteHistogram()
{
    return LatencyHistogram(
        {100'000, 250'000, 500'000, 1'000'000, 2'500'000, 5'000'000, 10'000'000,
         25'000'000, 100'000'000, 250'000'000, 1'000'000'000});
}

} // namespace cppcgov::daemon
