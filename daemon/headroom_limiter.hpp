// SPDX-License-Identifier: Apache-2.0
// How often the headroom query may be asked: at most once per
// minIntervalUs per connection (a client, by its unique bus name), as
// Android asks of getCpuHeadroom's callers, and at most `perUser` calls per
// second over all of a user's connections (a token bucket with a burst of
// as many, token_bucket.hpp), so that a client opening fresh connections
// gains nothing past its user's rate. Both come on top of the call rates
// every method counts (handles.hpp).
//
// A refused call leaves no trace: it neither restarts its connection's
// interval nor takes a token. The state kept is bounded: a connection is
// forgotten once its interval has passed, a user once its bucket is full
// again (a second after its last call), both swept as calls come.
//
// No clock (time is a parameter, microseconds of a monotonic clock), no
// D-Bus, no logging. Not thread-safe.
#pragma once

#include "daemon/token_bucket.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace cppcgov::daemon
{

// The default minimum interval per connection, and calls per second per
// user.
inline constexpr std::uint64_t headroomMinIntervalUs = 1'000'000;
inline constexpr std::uint32_t headroomCallsPerUser = 10;

// What admit() decided.
struct HeadroomVerdict
{
    bool admitted = false;
    // When refused: which limit, and after how long a retry can be
    // admitted (for the user's rate, the time its next token takes at
    // most).
    bool byUser = false;
    std::uint64_t retryInUs = 0;
};

class HeadroomLimiter
{
  public:
    explicit HeadroomLimiter(
        std::uint64_t minIntervalUs = headroomMinIntervalUs,
        std::uint32_t perUser = headroomCallsPerUser);

    // Admits or refuses a call of connection `name` of user `uid` at
    // `nowUs`; an admitted call starts the connection's interval and takes
    // one of the user's tokens.
    HeadroomVerdict admit(std::string_view name, uid_t uid,
                          std::uint64_t nowUs);

    std::uint64_t minIntervalUs() const noexcept
    {
        return minIntervalUs_;
    }
    std::uint32_t perUser() const noexcept
    {
        return perUser_;
    }

    // How many connections and users are remembered.
    std::size_t connections() const noexcept
    {
        return lastCall_.size();
    }
    std::size_t users() const noexcept
    {
        return users_.size();
    }

  private:
    struct User
    {
        TokenBucket bucket;
        std::uint64_t lastUs = 0;
    };

    // Forgets the connections whose interval has passed and the users
    // whose bucket is full again.
    void sweep(std::uint64_t nowUs);

    std::uint64_t minIntervalUs_;
    std::uint32_t perUser_;
    std::map<std::string, std::uint64_t, std::less<>> lastCall_;
    std::map<uid_t, User> users_;
    // Sweep when the maps have grown past this since the last sweep.
    std::size_t sweepAt_ = 64;
};

} // namespace cppcgov::daemon
