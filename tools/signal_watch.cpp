// SPDX-License-Identifier: Apache-2.0
#include "signal_watch.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace cppcgov::tools
{

SignalWatch::SignalWatch(std::initializer_list<int> signals)
{
    sigset_t set;
    sigemptyset(&set);
    for (const int s : signals)
    {
        sigaddset(&set, s);
    }
    if (sigprocmask(SIG_BLOCK, &set, &previous_) != 0)
    {
        throw std::system_error(errno, std::generic_category(),
                                "blocking signals");
    }
    fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd_)
    {
        const int e = errno;
        sigprocmask(SIG_SETMASK, &previous_, nullptr);
        throw std::system_error(e, std::generic_category(), "signalfd");
    }
}

SignalWatch::~SignalWatch()
{
    // Signals still pending were seen by no one but are answered by what
    // the watch's owner did: unblocking them now would kill the process.
    while (take())
    {}
    fd_.reset();
    sigprocmask(SIG_SETMASK, &previous_, nullptr);
}

std::optional<SignalWatch::Received> SignalWatch::take()
{
    signalfd_siginfo info{};
    ssize_t n = 0;
    do
    {
        n = ::read(fd_.get(), &info, sizeof info);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof info))
    {
        return std::nullopt;
    }
    Received r;
    r.signal = static_cast<int>(info.ssi_signo);
    r.fromProcess = info.ssi_code == SI_USER || info.ssi_code == SI_QUEUE;
    r.sender = r.fromProcess ? static_cast<pid_t>(info.ssi_pid) : 0;
    return r;
}

} // namespace cppcgov::tools
