// SPDX-License-Identifier: Apache-2.0
// cppcgovd's log: one line per message on stderr with the sd-daemon(3)
// priority prefix, which systemd turns into the journal entry's priority
// (and which reads fine on a terminal). Only the daemon logs; lib/ and
// policies/ return errors instead.
#pragma once

#include <string_view>

namespace cppcgov::daemon::log
{

void error(std::string_view message) noexcept;
void warning(std::string_view message) noexcept;
void notice(std::string_view message) noexcept;
void info(std::string_view message) noexcept;

} // namespace cppcgov::daemon::log
