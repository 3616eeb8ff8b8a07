// SPDX-License-Identifier: Apache-2.0
// A token bucket for call rates: `rate` calls per second, with a burst of
// `rate` calls. The bucket starts full at its first take() and refills
// continuously. Tokens are counted in millionths of a call, so refilling at
// `rate` per second adds exactly `rate` millionths per microsecond: no
// rounding, no drift.
//
// Time is a parameter (microseconds of a monotonic clock): there is no
// clock in here. Time going backwards refills nothing. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>

namespace cppcgov::daemon
{

class TokenBucket
{
  public:
    // One call's worth of tokens.
    static constexpr std::uint64_t tokenUnit = 1'000'000;

    // A bucket of `perSecond` calls per second, also the burst; 0 means
    // unlimited.
    explicit TokenBucket(std::uint32_t perSecond = 0) noexcept :
        rate_(perSecond)
    {}

    // Takes one call's token at time `nowUs`: true when there was one (or
    // the rate is unlimited), false when the call is over the rate, which
    // takes nothing. The first take() on a limited bucket finds it full.
    [[nodiscard]] bool take(std::uint64_t nowUs) noexcept
    {
        if (rate_ == 0)
        {
            return true;
        }
        const std::uint64_t rate = rate_;
        const std::uint64_t capacity = rate * tokenUnit;
        if (!started_)
        {
            started_ = true;
            tokens_ = capacity;
            lastUs_ = nowUs;
        }
        else if (nowUs > lastUs_)
        {
            // A whole second refills any bucket: cap the interval so the
            // product cannot overflow.
            const std::uint64_t elapsed = std::min(nowUs - lastUs_, tokenUnit);
            tokens_ = std::min(capacity, tokens_ + elapsed * rate);
            lastUs_ = nowUs;
        }
        tokens_ = std::min(tokens_, capacity);
        if (tokens_ < tokenUnit)
        {
            return false;
        }
        tokens_ -= tokenUnit;
        return true;
    }

    // Changes the rate (and burst) to `perSecond`, 0 for unlimited. The
    // tokens left are kept, capped at the new burst; time since the last
    // take() refills at the new rate.
    void setRate(std::uint32_t perSecond) noexcept
    {
        rate_ = perSecond;
        if (rate_ != 0)
        {
            tokens_ = std::min(tokens_, std::uint64_t{rate_} * tokenUnit);
        }
    }

    // Calls per second, 0 for unlimited.
    std::uint32_t rate() const noexcept
    {
        return rate_;
    }

  private:
    std::uint32_t rate_ = 0;
    bool started_ = false;
    std::uint64_t tokens_ = 0; // millionths of a call
    std::uint64_t lastUs_ = 0;
};

} // namespace cppcgov::daemon
