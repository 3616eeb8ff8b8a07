// SPDX-License-Identifier: Apache-2.0
#include "headroom_limiter.hpp"

#include <algorithm>

namespace cppcgov::daemon
{
namespace
{

// A bucket of any rate refills from empty to full in this long.
constexpr std::uint64_t bucketRefillUs = 1'000'000;

} // namespace

HeadroomLimiter::HeadroomLimiter(std::uint64_t minIntervalUs,
                                 std::uint32_t perUser) :
    minIntervalUs_(minIntervalUs),
    perUser_(perUser)
{}

HeadroomVerdict HeadroomLimiter::admit(std::string_view name, uid_t uid,
                                       std::uint64_t nowUs)
{
    if (lastCall_.size() + users_.size() >= sweepAt_)
    {
        sweep(nowUs);
        sweepAt_ =
            std::max<std::size_t>(64, 2 * (lastCall_.size() + users_.size()));
    }
    HeadroomVerdict verdict;
    const auto last = lastCall_.find(name);
    if (last != lastCall_.end() && nowUs >= last->second &&
        nowUs - last->second < minIntervalUs_)
    {
        verdict.retryInUs = minIntervalUs_ - (nowUs - last->second);
        return verdict;
    }
    auto user = users_.find(uid);
    if (user == users_.end())
    {
        user = users_.emplace(uid, User{TokenBucket(perUser_), nowUs}).first;
    }
    if (!user->second.bucket.take(nowUs))
    {
        verdict.byUser = true;
        verdict.retryInUs =
            perUser_ == 0 ? 0 : (bucketRefillUs + perUser_ - 1) / perUser_;
        return verdict;
    }
    user->second.lastUs = nowUs;
    if (last != lastCall_.end())
    {
        last->second = nowUs;
    }
    else
    {
        lastCall_.emplace(std::string(name), nowUs);
    }
    verdict.admitted = true;
    return verdict;
}

void HeadroomLimiter::sweep(std::uint64_t nowUs)
{
    std::erase_if(lastCall_, [&](const auto& entry) {
        return nowUs >= entry.second && nowUs - entry.second >= minIntervalUs_;
    });
    std::erase_if(users_, [&](const auto& entry) {
        return nowUs >= entry.second.lastUs &&
               nowUs - entry.second.lastUs >= bucketRefillUs;
    });
}

} // namespace cppcgov::daemon
