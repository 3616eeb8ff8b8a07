// SPDX-License-Identifier: Apache-2.0
// What the daemon logs about the firmware checks (firmware_watch.hpp): per
// domain, its first finding at once (at start-up, the one line that says
// what the firmware got wrong), a finding that goes away at once, and a
// change soon after the domain's last line only once `interval` has passed
// since it (those in between are counted in the next line). Returns the
// lines; the daemon writes them. No clock: time is a parameter.
#pragma once

#include "daemon/firmware_watch.hpp"
#include "policies/policy.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

struct FirmwareLogLine
{
    bool finding = false; // a finding (a warning); otherwise it went away
    std::string text;
};

class FirmwareLog
{
  public:
    FirmwareLog(const policies::Topology& topology, std::uint64_t intervalUs);

    // Whether update() has something to do at `nowUs`: the watch changed
    // since the last update(), or a held-back change is due.
    [[nodiscard]] bool due(const FirmwareWatch& watch,
                           std::uint64_t nowUs) const noexcept;

    // The lines to log now, for every domain whose finding differs from
    // the one last logged.
    [[nodiscard]] std::vector<FirmwareLogLine> update(
        const FirmwareWatch& watch, std::uint64_t nowUs);

  private:
    struct Domain
    {
        std::string label; // "CPUs 1-4"
        std::string logged;
        std::optional<std::uint64_t> atUs;
        std::uint64_t unlogged = 0;
    };

    std::vector<Domain> domains_;
    std::uint64_t intervalUs_;
    std::uint64_t changes_ = 0;
    std::optional<std::uint64_t> recheckUs_;
};

} // namespace cppcgov::daemon
