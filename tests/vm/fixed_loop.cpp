// SPDX-License-Identifier: Apache-2.0
// A fixed amount of work for the VM suite's speed check: ROUNDS rounds of
// a dependent integer loop (no memory traffic, no system call), then the
// wall time it took in microseconds on standard output. On a guest CPU
// whose speed the platform sets, the time is in proportion to the speed.
// Usage: fixed_loop ROUNDS
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string_view>

namespace
{

std::uint64_t nowUs()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000U +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000U;
}

} // namespace

int main(int argc, char** argv)
{
    std::uint64_t rounds = 0;
    const std::string_view text = argc == 2 ? argv[1] : "";
    const auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), rounds);
    if (argc != 2 || ec != std::errc{} || end != text.data() + text.size() ||
        rounds == 0)
    {
        std::fputs("usage: fixed_loop ROUNDS\n", stderr);
        return 2;
    }
    const std::uint64_t start = nowUs();
    std::uint64_t x = 88172645463325252U;
    for (std::uint64_t i = 0; i < rounds; ++i)
    {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    const std::uint64_t took = nowUs() - start;
    // x printed so that the loop is not optimised away.
    std::printf("%llu us %llu\n", static_cast<unsigned long long>(took),
                static_cast<unsigned long long>(x & 0xFF));
    return 0;
}
