// SPDX-License-Identifier: Apache-2.0
// A hostile client of cppcgovd's D-Bus API for the integration tests: it
// sends a seeded random stream of method calls, good and bad (wrong
// methods, interfaces, object paths, signatures, argument values and file
// descriptors), and requires every call to be answered within 5 s, either
// with a method return or with an error, and every answer to agree with the
// contract (daemon/dbus/org.cppcgov.Governor1.xml): calls that must fail do
// fail, handles returned are new and belong to valid requests. The methods
// and their signatures come from the daemon's Introspect at the start: a
// method whose arguments bus_fuzz cannot make is a failure, not a method
// skipped, and at the end every method must have been called with its own
// signature. Every few
// calls it checks that the daemon still answers Peer.Ping and a property
// read. At the end it closes its connection and checks, on a fresh one,
// that the daemon dropped every handle the first connection held.
//
// Usage: bus_fuzz --bus-address ADDRESS [--seed N] [--seconds N | --calls N]
//                 [--check-every N] [--verbose]
//
// Prints the seed, the number of calls and a histogram of the answers
// (error name -> count). Exits 0 when everything held, 1 on any failure
// (after saying which call failed and how), 2 on a usage error.
//
// The client is in fuzzer.hpp, its options in fuzz_options.hpp; this file
// makes the tasks and descriptors the calls name, and runs it.
#include "lib/backend/fd.hpp"
#include "lib/backend/pidfd.hpp"
#include "tests/integration/fuzz_options.hpp"
#include "tests/integration/fuzzer.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <utility>
#include <vector>

using cppc::backend::Fd;
using cppcgov::test::fuzz::FdChoice;
using cppcgov::test::fuzz::Fuzzer;
using cppcgov::test::fuzz::parseOptions;

namespace
{

// A pidfd of process `pid`, or of the thread `pid`; empty when it cannot be
// opened.
Fd pidfdOf(pid_t pid, cppc::backend::PidfdOf of)
{
    Fd fd;
    (void)cppc::backend::openPidfd(pid, of, fd);
    return fd;
}

// Forks a child that waits to be killed (and dies with this process).
pid_t sleeper()
{
    const pid_t pid = ::fork();
    if (pid == 0)
    {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        while (true)
        {
            ::pause();
        }
    }
    return pid;
}

} // namespace

int main(int argc, char** argv)
{
    const auto options = parseOptions(argc, argv);
    if (!options)
    {
        std::cerr << "usage: bus_fuzz --bus-address ADDRESS [--seed N] "
                     "[--seconds N | --calls N] [--check-every N] "
                     "[--verbose]\n";
        return 2;
    }
    // The tasks the calls name, made before any bus connection exists.
    const pid_t child = sleeper();
    const pid_t dead = ::fork();
    if (child < 0 || dead < 0)
    {
        std::cerr << "bus_fuzz: fork: " << std::strerror(errno) << '\n';
        return 1;
    }
    if (dead == 0)
    {
        ::_exit(0);
    }
    std::vector<FdChoice> fds;
    using cppc::backend::PidfdOf;
    fds.push_back(
        {"pidfd(child)", pidfdOf(child, PidfdOf::process), true, child});
    fds.push_back({"pidfd(self)", pidfdOf(::getpid(), PidfdOf::process), true,
                   ::getpid()});
    fds.push_back(
        {"pidfd(dead child)", pidfdOf(dead, PidfdOf::process), false, dead});
    ::waitpid(dead, nullptr, 0);
    // Kernels before 6.9 cannot hold a thread.
    if (Fd thread = pidfdOf(static_cast<pid_t>(::gettid()), PidfdOf::thread);
        thread)
    {
        fds.push_back(
            {"pidfd(own thread)", std::move(thread), true, ::getpid()});
    }
    fds.push_back(
        {"plain file", Fd(::open("/proc/self/exe", O_RDONLY)), false, 0});
    fds.push_back({"/dev/null", Fd(::open("/dev/null", O_RDWR)), false, 0});
    for (auto& fd : fds)
    {
        if (fd.fd.get() < 0)
        {
            std::cerr << "bus_fuzz: cannot open " << fd.what << ": "
                      << std::strerror(errno) << '\n';
            ::kill(child, SIGKILL);
            return 1;
        }
    }

    bool ok = false;
    {
        Fuzzer fuzzer(*options, child, dead, std::move(fds));
        ok = fuzzer.run();
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return ok ? 0 : 1;
}
