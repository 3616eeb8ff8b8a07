// SPDX-License-Identifier: Apache-2.0
#include "terminal_screen.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

namespace cppcgov::tools
{
namespace
{

// The alternate screen with the cursor hidden, and back.
constexpr const char* enterScreen = "\x1b[?1049h\x1b[?25l";
constexpr const char* leaveScreen = "\x1b[?25h\x1b[?1049l";

} // namespace

std::optional<TerminalSize> terminalSize(int fd)
{
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0)
    {
        return std::nullopt;
    }
    return TerminalSize{ws.ws_col, ws.ws_row};
}

TerminalScreen::TerminalScreen(int keyboard, std::ostream& out) :
    keyboard_(keyboard), out_(out)
{
    termios t{};
    if (keyboard_ >= 0 && ::isatty(keyboard_) == 1 &&
        ::tcgetattr(keyboard_, &t) == 0)
    {
        saved_ = t;
    }
    enter();
}

TerminalScreen::~TerminalScreen()
{
    leave();
}

void TerminalScreen::enter()
{
    if (entered_)
    {
        return;
    }
    if (saved_)
    {
        termios raw = *saved_;
        raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        (void)::tcsetattr(keyboard_, TCSANOW, &raw);
    }
    out_ << enterScreen << std::flush;
    entered_ = true;
}

void TerminalScreen::leave()
{
    if (!entered_)
    {
        return;
    }
    out_ << leaveScreen << std::flush;
    if (saved_)
    {
        (void)::tcsetattr(keyboard_, TCSANOW, &*saved_);
    }
    entered_ = false;
}

} // namespace cppcgov::tools
