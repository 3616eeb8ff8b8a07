// Feedback counters: where delivered performance comes from.
//
// A CounterSource reads one CPU's reference and delivered performance
// counters (AMU counters through the kernel, PCC registers through a read
// command, or the simulator) and says how long the read took: a sample
// whose reads were slow is not trustworthy (see DESIGN: under memory
// pressure one read took 255 us instead of 0.5 us).
#pragma once

#include <chrono>
#include <cstdint>
#include <system_error>

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

    // Reads `cpu`'s counters into `out`. Must not allocate.
    virtual std::error_code read(unsigned cpu, CounterSample& out) noexcept = 0;
};

} // namespace cppc
