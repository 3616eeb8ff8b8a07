// SPDX-License-Identifier: Apache-2.0
// A task of known duty for the VM suite: every PERIOD_MS milliseconds it
// runs (spins) for RUN_MS, then sleeps the rest, until it is killed. Its
// CPU time grows every period while its CPU is far from saturated, so a
// clamp on it binds without its load raising the CPU's performance by
// itself.
// Usage: duty_task RUN_MS PERIOD_MS
#include <charconv>
#include <cstdio>
#include <ctime>
#include <string_view>

namespace
{

// A whole number of milliseconds from 1 to 10000, or 0 when `text` is not.
long parseMs(std::string_view text)
{
    long value = 0;
    auto [end,
          ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 1 ||
        value > 10000)
    {
        return 0;
    }
    return value;
}

long long nowNs()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

} // namespace

int main(int argc, char** argv)
{
    long runMs = argc == 3 ? parseMs(argv[1]) : 0;
    long periodMs = argc == 3 ? parseMs(argv[2]) : 0;
    if (runMs == 0 || periodMs == 0 || runMs > periodMs)
    {
        std::fputs("usage: duty_task RUN_MS PERIOD_MS (1 <= RUN_MS <= "
                   "PERIOD_MS <= 10000)\n",
                   stderr);
        return 2;
    }
    long long start = nowNs();
    for (long long period = 0;; ++period)
    {
        long long begin = start + period * periodMs * 1000000LL;
        while (nowNs() < begin + runMs * 1000000LL)
        {}
        long long next = begin + periodMs * 1000000LL;
        timespec until{static_cast<time_t>(next / 1000000000LL),
                       static_cast<long>(next % 1000000000LL)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr);
    }
}
