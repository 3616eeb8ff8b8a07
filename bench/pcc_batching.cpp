// SPDX-License-Identifier: Apache-2.0
// Doorbells and commands per request on a PCC subspace, batched against
// unbatched, measured side by side in one run.
//
// For N = 1, 2, 4, 8, 16 and 32 CPUs, N threads each write their own CPU's
// DesiredPerformance through one pcc::Channel on the simulated Altra-like
// platform (type 2, 50 us latency, 60 us minimum turnaround). A barrier
// releases all N at once, so their requests fall in one window; that is
// one round, and each row is `rounds` rounds. The same rounds run with the
// channel's batching on (every write queued behind a command in flight
// goes out in the next single command), with batching and a 50 us batching
// window (the first writer waits one nominal latency for others before
// sending), and with batching off (one command per write), one after the
// other per N, with the channel's default options otherwise except a 1 s
// timeout floor. Doorbells and commands are counted by the platform and
// cross-checked against the channel; after the rounds every CPU's last
// value must be what the platform latched, or the program fails. The
// time of a request is from its write() call to its return, and each row
// prints the median over all N x rounds requests.
//
// Batching without a window carries the first writer alone (nothing is in
// flight when it arrives) and the others in the next command, so N
// writers released together need at least 2 doorbells for N >= 2 (1.0 per
// request at N = 2); the window lets one command carry them all.
#include "lib/pcc/channel.hpp"
#include "lib/sim/pcc_platform.hpp"

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace
{

using cppc::PccRegister;
using cppc::PccWrite;
using cppc::pcc::Nanos;

constexpr unsigned rounds = 50;
constexpr std::uint8_t subspace = 2;

PccRegister desired(unsigned cpu)
{
    return {cpu * 0x80U + 0x14U, 0, 32};
}

struct Result
{
    double doorbellsPerRequest = 0;
    double commandsPerRequest = 0;
    double medianRequestUs = 0;
    std::uint64_t failures = 0; // requests that returned an error
    bool consistent = true;     // counts and values check out
};

enum class Mode
{
    batched,
    window,
    unbatched,
};

Result run(unsigned cpus, Mode mode)
{
    cppc::sim::PccPlatform platform; // Altra-like defaults
    cppc::pcc::ChannelOptions options;
    options.batching = mode != Mode::unbatched;
    if (mode == Mode::window)
    {
        options.batchWindow = std::chrono::microseconds{50};
    }
    // Counts are what is measured: a responder starved on a busy machine
    // must not turn into timeouts.
    options.timeoutFloor = std::chrono::seconds{1};
    cppc::pcc::Channel channel(platform.subspace(), platform.region(),
                               platform.registers(), options);

    std::barrier sync(static_cast<std::ptrdiff_t>(cpus + 1));
    std::vector<std::vector<Nanos>> took(cpus);
    std::vector<std::uint64_t> failures(cpus, 0);
    std::vector<std::thread> threads;
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
    {
        threads.emplace_back([&, cpu] {
            took[cpu].reserve(rounds);
            for (unsigned r = 0; r < rounds; ++r)
            {
                const PccWrite w{desired(cpu), r * 100U + cpu};
                sync.arrive_and_wait();
                const Nanos start = cppc::pcc::monotonicNow();
                if (channel.write(subspace, std::span(&w, 1)))
                {
                    ++failures[cpu];
                }
                took[cpu].push_back(cppc::pcc::monotonicNow() - start);
                sync.arrive_and_wait();
            }
        });
    }
    for (unsigned r = 0; r < rounds; ++r)
    {
        sync.arrive_and_wait(); // go
        sync.arrive_and_wait(); // all done
    }
    for (std::thread& t : threads)
    {
        t.join();
    }
    platform.sync();

    Result res;
    const double requests = static_cast<double>(cpus) * rounds;
    const cppc::sim::PccPlatformCounts counts = platform.counts();
    const cppc::pcc::ChannelStats stats = channel.stats();
    res.doorbellsPerRequest = static_cast<double>(counts.doorbells) / requests;
    res.commandsPerRequest =
        static_cast<double>(counts.writeCommands) / requests;
    std::vector<Nanos> all;
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
    {
        all.insert(all.end(), took[cpu].begin(), took[cpu].end());
        res.failures += failures[cpu];
        if (platform.received(desired(cpu)) != (rounds - 1) * 100U + cpu)
        {
            res.consistent = false;
        }
    }
    std::sort(all.begin(), all.end());
    res.medianRequestUs =
        static_cast<double>(all[all.size() / 2].count()) / 1e3;
    if (stats.doorbells != counts.doorbells ||
        stats.writeCommands != counts.writeCommands ||
        stats.writeRequests != std::uint64_t{cpus} * rounds)
    {
        res.consistent = false;
    }
    return res;
}

} // namespace

int main()
{
    std::printf("PCC write batching on the simulated Altra-like platform "
                "(type 2, 50 us latency,\n60 us turnaround); %u rounds of N "
                "concurrent writers per row: batched, batched\nwith a 50 us "
                "window, unbatched.\n\n",
                rounds);
    std::printf("%4s | %-31s | %-24s | %-24s\n", "", "doorbells / request",
                "commands / request", "median request, us");
    std::printf("%4s | %7s %7s %7s %7s | %7s %7s %8s | %7s %7s %8s\n", "N",
                "batched", "window", "unbatch", "u/b", "batched", "window",
                "unbatch", "batched", "window", "unbatch");
    bool ok = true;
    for (unsigned cpus : {1U, 2U, 4U, 8U, 16U, 32U})
    {
        const Result b = run(cpus, Mode::batched);
        const Result w = run(cpus, Mode::window);
        const Result u = run(cpus, Mode::unbatched);
        std::printf("%4u | %7.3f %7.3f %7.3f %6.2fx | %7.3f %7.3f %8.3f | "
                    "%7.1f %7.1f %8.1f\n",
                    cpus, b.doorbellsPerRequest, w.doorbellsPerRequest,
                    u.doorbellsPerRequest,
                    u.doorbellsPerRequest / b.doorbellsPerRequest,
                    b.commandsPerRequest, w.commandsPerRequest,
                    u.commandsPerRequest, b.medianRequestUs, w.medianRequestUs,
                    u.medianRequestUs);
        const std::uint64_t failures = b.failures + w.failures + u.failures;
        const bool consistent = b.consistent && w.consistent && u.consistent;
        if (failures != 0 || !consistent)
        {
            std::printf("     N=%u: %llu failed requests; counts and latched "
                        "values %s\n",
                        cpus, static_cast<unsigned long long>(failures),
                        consistent ? "agree" : "DISAGREE");
            ok = false;
        }
    }
    std::printf("\nu/b = unbatched / batched doorbells per request. No "
                "request failed, and every\nCPU's last value is what the "
                "platform latched: %s\n",
                ok ? "yes" : "NO");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
