// SPDX-License-Identifier: Apache-2.0
// Where the daemon's load and task placement come from: the fallbacks to
// procfs and the reasons they give, the capabilities dropped after the
// program loaded, and, on the real kernel (root and BTF; skipped
// otherwise), several hints on one target combined in its slot and
// recombined as they end. Each case that loads the program runs in a
// child: loading drops the capabilities of the process that loaded it.
#include "daemon/observation.hpp"
#include "run_in_child.hpp"

#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using cppc::test::exitStatusOf;

TEST(Observation, ProcfsWhenConfigured)
{
    const Observation o(SamplingSource::procfs, "/");
    EXPECT_FALSE(o.exact());
    EXPECT_EQ(o.source(), "procfs");
    EXPECT_EQ(o.why(), "sampling.source is procfs");
    EXPECT_TRUE(o.cpus().empty());
}

TEST(Observation, ProcfsOnAFakeRootSaysWhy)
{
    const Observation o(SamplingSource::automatic, "/tmp/fake-root");
    EXPECT_FALSE(o.exact());
    EXPECT_EQ(o.why(), "the root is '/tmp/fake-root', not /: the "
                       "scheduler's events are the live system's");
}

TEST(Observation, RequiredBpfRefusesWithTheReason)
{
    try
    {
        const Observation o(SamplingSource::bpf, "/tmp/fake-root");
        FAIL() << "constructed";
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_EQ(std::string(e.what()),
                  "sampling.source is bpf, but the scheduler's events "
                  "cannot be used: the root is '/tmp/fake-root', not /: "
                  "the scheduler's events are the live system's");
    }
}

TEST(Observation, ProcfsTakesClampsWithoutError)
{
    Observation o(SamplingSource::procfs, "/");
    EXPECT_FALSE(o.addClamp({1, {::getpid(), true}, {100, 200}}));
    o.endClamp(1);
    o.endClamp(2); // not known: nothing
    o.sample();
    EXPECT_EQ(o.counts().events, 0U);
}

// The bits of the process's effective capabilities from /proc/self/status.
std::uint64_t effectiveCapabilities()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
    {
        if (line.rfind("CapEff:", 0) == 0)
        {
            return std::stoull(line.substr(7), nullptr, 16);
        }
    }
    return ~std::uint64_t{0};
}

// Whether the program loads here; when not, why (for the skip message).
std::string bpfUnavailable()
{
    if (::geteuid() != 0)
    {
        return "loading the BPF program needs root";
    }
    std::string why;
    int pipeFds[2];
    if (::pipe(pipeFds) != 0)
    {
        return "pipe failed";
    }
    const int status = exitStatusOf([&]() {
        ::close(pipeFds[0]);
        const Observation o(SamplingSource::automatic, "/");
        const std::string text = o.exact() ? "" : o.why();
        (void)!::write(pipeFds[1], text.data(), text.size());
        ::_exit(0);
    });
    ::close(pipeFds[1]);
    char buffer[512];
    ssize_t n = 0;
    while ((n = ::read(pipeFds[0], buffer, sizeof buffer)) > 0)
    {
        why.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(pipeFds[0]);
    return status == 0 ? why : "the probe failed";
}

TEST(ObservationBpf, LoadingDropsTheTwoCapabilities)
{
    const std::string why = bpfUnavailable();
    if (!why.empty())
    {
        GTEST_SKIP() << why;
    }
    const int status = exitStatusOf([]() {
        const Observation o(SamplingSource::automatic, "/");
        const std::uint64_t caps = effectiveCapabilities();
        const auto has = [caps](int cap) {
            return (caps >> static_cast<unsigned>(cap)) & 1U;
        };
        // Gone: CAP_BPF and CAP_PERFMON; kept: the rest (root's others).
        ::_exit(!o.exact()                         ? 1
                : has(CAP_BPF) || has(CAP_PERFMON) ? 2
                : o.warning().empty()              ? 0
                                                   : 3);
    });
    EXPECT_EQ(status, 0);
}

// A child spinning on `cpu` until killed.
pid_t spinner(unsigned cpu)
{
    const pid_t pid = ::fork();
    if (pid == 0)
    {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        (void)::sched_setaffinity(0, sizeof(set), &set);
        volatile unsigned n = 0;
        for (;;)
        {
            n = n + 1U;
        }
    }
    return pid;
}

// Samples `o` until `done` holds for the window of `cpu` (at most 5 s).
bool waitFor(Observation& o, unsigned cpu,
             const std::function<bool(const ExactCpu&)>& done)
{
    for (int i = 0; i < 5000; ++i)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        o.sample();
        if (cpu < o.cpus().size() && done(o.cpus()[cpu]))
        {
            return true;
        }
    }
    return false;
}

// The handles seen in a window, ascending.
std::vector<std::uint64_t> handlesOf(const ExactCpu& c)
{
    std::vector<std::uint64_t> out;
    for (const HintSighting& s : c.hints)
    {
        out.push_back(s.handle);
    }
    std::sort(out.begin(), out.end());
    return out;
}

TEST(ObservationBpf, HintsOnOneTargetCombineAndRecombineAsTheyEnd)
{
    const std::string why = bpfUnavailable();
    if (!why.empty())
    {
        GTEST_SKIP() << why;
    }
    const unsigned cpu = std::thread::hardware_concurrency() - 1;
    // Minimums only: other tasks on the CPU (minimum 0) cannot change the
    // max of the minimums, so the checks hold on a busy machine too.
    const int status = exitStatusOf([cpu]() {
        Observation o(SamplingSource::automatic, "/");
        const pid_t pid = spinner(cpu);
        const HintTarget target{pid, true};
        int step = 0;
        const auto check = [&](bool ok) {
            ++step;
            if (!ok)
            {
                ::kill(pid, SIGKILL);
                ::_exit(10 + step);
            }
        };
        check(!o.addClamp({1, target, {300, 1024}}));
        check(!o.addClamp({2, target, {500, 1024}}));
        check(waitFor(o, cpu, [](const ExactCpu& c) {
            return c.clamp.min == 500 &&
                   handlesOf(c) == std::vector<std::uint64_t>{1, 2};
        }));
        // Each sighting carries its own hint's clamp.
        for (const HintSighting& s : o.cpus()[cpu].hints)
        {
            check(s.clamp.min == (s.handle == 1 ? 300 : 500));
        }
        o.endClamp(2);
        check(waitFor(o, cpu, [](const ExactCpu& c) {
            return c.clamp.min == 300 &&
                   handlesOf(c) == std::vector<std::uint64_t>{1};
        }));
        o.endClamp(1);
        check(waitFor(o, cpu, [](const ExactCpu& c) {
            return c.clamp.min == 0 && c.hints.empty();
        }));
        // The slot is free again: a new target takes it from scratch.
        check(!o.addClamp({3, {pid, false}, {700, 1024}}));
        check(waitFor(o, cpu, [](const ExactCpu& c) {
            return c.clamp.min == 700 &&
                   handlesOf(c) == std::vector<std::uint64_t>{3};
        }));
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        ::_exit(0);
    });
    EXPECT_EQ(status, 0) << "the step that failed is status - 10";
}

} // namespace
} // namespace cppcgov::daemon
