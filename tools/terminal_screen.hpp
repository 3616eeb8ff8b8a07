// SPDX-License-Identifier: Apache-2.0
// A full-screen view on a terminal for as long as it lives: the keyboard
// in non-canonical mode without echo (keys arrive one by one, Ctrl-C still
// raises SIGINT), the output on the alternate screen with the cursor
// hidden. Destroying it puts the terminal back exactly as it was, on every
// way out (a return, an exception, a signal the program watches); leave()
// and enter() do so around a stop (Ctrl-Z).
#pragma once

#include "monitor_layout.hpp"

#include <termios.h>

#include <optional>
#include <ostream>

namespace cppcgov::tools
{

// The size of the terminal on `fd`, or nothing when `fd` is not one (or
// says it has no size).
[[nodiscard]] std::optional<TerminalSize> terminalSize(int fd);

class TerminalScreen
{
  public:
    // `keyboard`: a descriptor of the terminal to read keys from, or -1 for
    // none; `out` writes to the terminal.
    TerminalScreen(int keyboard, std::ostream& out);
    ~TerminalScreen();

    TerminalScreen(const TerminalScreen&) = delete;
    TerminalScreen& operator=(const TerminalScreen&) = delete;

    // Whether keys can be read from the keyboard descriptor.
    [[nodiscard]] bool keys() const noexcept
    {
        return saved_.has_value();
    }

    // Puts the terminal back as it was / takes it again.
    void leave();
    void enter();

  private:
    int keyboard_;
    std::ostream& out_;
    std::optional<termios> saved_;
    bool entered_ = false;
};

} // namespace cppcgov::tools
