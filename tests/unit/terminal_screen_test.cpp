// SPDX-License-Identifier: Apache-2.0
// TerminalScreen on a pseudo-terminal: it turns canonical mode and echo
// off while it lives and puts every setting back when it ends, also
// around leave() and enter(); it switches to the alternate screen and
// back; without a keyboard terminal it changes no settings. terminalSize()
// reads the size a terminal has been given.
#include "tools/terminal_screen.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

namespace cppcgov::tools
{
namespace
{

// A pseudo-terminal pair, closed at the end.
class Pty
{
  public:
    Pty()
    {
        master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
        if (master_ < 0)
        {
            // Under qemu-user with a target root (-L), /dev/ptmx is the
            // root's device node, which need not open; this path is the
            // host's.
            master_ = ::open("/proc/self/root/dev/ptmx", O_RDWR | O_NOCTTY);
        }
        if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0)
        {
            throw std::runtime_error("no pseudo-terminal");
        }
        const char* name = ::ptsname(master_);
        slave_ = name ? ::open(name, O_RDWR | O_NOCTTY) : -1;
        if (slave_ < 0)
        {
            throw std::runtime_error("cannot open the pseudo-terminal");
        }
    }
    ~Pty()
    {
        ::close(slave_);
        ::close(master_);
    }
    Pty(const Pty&) = delete;
    Pty& operator=(const Pty&) = delete;

    int slave() const
    {
        return slave_;
    }

    termios settings() const
    {
        termios t{};
        EXPECT_EQ(::tcgetattr(slave_, &t), 0);
        return t;
    }

  private:
    int master_ = -1;
    int slave_ = -1;
};

bool same(const termios& a, const termios& b)
{
    return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag &&
           a.c_cflag == b.c_cflag && a.c_lflag == b.c_lflag &&
           std::memcmp(a.c_cc, b.c_cc, sizeof a.c_cc) == 0;
}

TEST(TerminalScreenTest, KeysOneByOneWhileItLivesSettingsBackAfter)
{
    Pty pty;
    const termios before = pty.settings();
    ASSERT_NE(before.c_lflag & ICANON, 0U);
    ASSERT_NE(before.c_lflag & ECHO, 0U);
    std::ostringstream out;
    {
        TerminalScreen screen(pty.slave(), out);
        EXPECT_TRUE(screen.keys());
        termios now = pty.settings();
        EXPECT_EQ(now.c_lflag & (ICANON | ECHO), 0U);
        EXPECT_NE(now.c_lflag & ISIG, 0U) << "Ctrl-C must still signal";
        EXPECT_EQ(now.c_cc[VMIN], 0);
        EXPECT_EQ(out.str(), "\x1b[?1049h\x1b[?25l");

        screen.leave();
        EXPECT_TRUE(same(pty.settings(), before));
        screen.leave(); // twice is once
        screen.enter();
        now = pty.settings();
        EXPECT_EQ(now.c_lflag & (ICANON | ECHO), 0U);
    }
    EXPECT_TRUE(same(pty.settings(), before));
    EXPECT_EQ(out.str(), "\x1b[?1049h\x1b[?25l"
                         "\x1b[?25h\x1b[?1049l"
                         "\x1b[?1049h\x1b[?25l"
                         "\x1b[?25h\x1b[?1049l");
}

TEST(TerminalScreenTest, SettingsBackWhenAnExceptionPasses)
{
    Pty pty;
    const termios before = pty.settings();
    std::ostringstream out;
    try
    {
        TerminalScreen screen(pty.slave(), out);
        throw std::runtime_error("the bus broke");
    }
    catch (const std::runtime_error&)
    {}
    EXPECT_TRUE(same(pty.settings(), before));
    EXPECT_EQ(out.str(), "\x1b[?1049h\x1b[?25l\x1b[?25h\x1b[?1049l");
}

TEST(TerminalScreenTest, WithoutAKeyboardTerminalNoSettingsChange)
{
    std::ostringstream out;
    int pipeFds[2];
    ASSERT_EQ(::pipe(pipeFds), 0);
    {
        TerminalScreen screen(pipeFds[0], out);
        EXPECT_FALSE(screen.keys());
    }
    {
        TerminalScreen screen(-1, out);
        EXPECT_FALSE(screen.keys());
    }
    ::close(pipeFds[0]);
    ::close(pipeFds[1]);
    EXPECT_EQ(out.str(), "\x1b[?1049h\x1b[?25l\x1b[?25h\x1b[?1049l"
                         "\x1b[?1049h\x1b[?25l\x1b[?25h\x1b[?1049l");
}

TEST(TerminalSizeTest, ReadsTheSizeGiven)
{
    Pty pty;
    winsize ws{};
    ws.ws_col = 100;
    ws.ws_row = 30;
    ASSERT_EQ(::ioctl(pty.slave(), TIOCSWINSZ, &ws), 0);
    const auto size = terminalSize(pty.slave());
    ASSERT_TRUE(size);
    EXPECT_EQ(size->columns, 100U);
    EXPECT_EQ(size->rows, 30U);
    ws = {};
    ASSERT_EQ(::ioctl(pty.slave(), TIOCSWINSZ, &ws), 0);
    EXPECT_FALSE(terminalSize(pty.slave()));
    int pipeFds[2];
    ASSERT_EQ(::pipe(pipeFds), 0);
    EXPECT_FALSE(terminalSize(pipeFds[1]));
    ::close(pipeFds[0]);
    ::close(pipeFds[1]);
}

} // namespace
} // namespace cppcgov::tools
