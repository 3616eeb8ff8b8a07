// SPDX-License-Identifier: Apache-2.0
// SignalWatch: turns termination signals into readable events for as long
// as it lives, so that a command waiting in a poll loop can end cleanly
// (release its handle, forward the signal to a child) instead of dying.
// It blocks the signals and opens a signalfd for them; destroying it
// restores the signal mask it found. Single-threaded programs only (it
// sets the process's mask). Watched signals still pending when it is
// destroyed are discarded: the program is ending what they asked it to.
#pragma once

#include "lib/backend/fd.hpp"

#include <signal.h>

#include <initializer_list>
#include <optional>

namespace cppcgov::tools
{

class SignalWatch
{
  public:
    // One signal taken from the descriptor.
    struct Received
    {
        int signal = 0;
        // Sent by a process with kill(2) or sigqueue(2), as opposed to by
        // the kernel (a terminal's Ctrl-C, a hangup).
        bool fromProcess = false;
        pid_t sender = 0; // when fromProcess
    };

    // Blocks `signals` and opens a signalfd for them. Throws
    // std::system_error.
    explicit SignalWatch(std::initializer_list<int> signals);
    ~SignalWatch();

    SignalWatch(const SignalWatch&) = delete;
    SignalWatch& operator=(const SignalWatch&) = delete;

    // Readable when a watched signal is pending.
    int fd() const noexcept
    {
        return fd_.get();
    }

    // The mask in force before this watch: a forked child restores it
    // before exec.
    const sigset_t& previousMask() const noexcept
    {
        return previous_;
    }

    // Takes one pending signal, or nothing when none is pending.
    [[nodiscard]] std::optional<Received> take();

  private:
    sigset_t previous_{};
    cppc::backend::Fd fd_;
};

} // namespace cppcgov::tools
