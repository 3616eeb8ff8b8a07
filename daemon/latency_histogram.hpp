// SPDX-License-Identifier: Apache-2.0
// Durations counted into fixed buckets since the daemon started, for the
// metrics' histograms (metrics.hpp): unlike the statistics' percentiles
// over the last few values, these counters only grow, as Prometheus's
// rate() and histogram_quantile() need. Not thread-safe.
#pragma once

#include "daemon/prometheus_text.hpp"

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace cppcgov::daemon
{

class LatencyHistogram
{
  public:
    // The buckets' upper bounds in nanoseconds, ascending.
    explicit LatencyHistogram(std::initializer_list<std::uint64_t> boundsNs);

    void add(std::uint64_t ns) noexcept;

    // The counts so far, the bounds and the sum in seconds.
    [[nodiscard]] HistogramValues values() const;
    // The same into `out`, whose vectors keep their memory: the tick
    // publishes these every tick and allocates nothing for it.
    void valuesInto(HistogramValues& out) const;

  private:
    std::vector<std::uint64_t> boundsNs_;
    std::vector<std::uint64_t> counts_; // per bucket, not cumulative
    std::uint64_t count_ = 0;
    std::uint64_t sumNs_ = 0;
};

// Tick lateness: 10 us to 100 ms.
[[nodiscard]] LatencyHistogram tickLatenessHistogram();
// Hint to write: 100 us to 1 s.
[[nodiscard]] LatencyHistogram hintToWriteHistogram();

} // namespace cppcgov::daemon
