// SPDX-License-Identifier: Apache-2.0
// What the PCC-speed sysfs benchmark adds to the daemon's world: the pccfs
// rig serving <root>/sys (started, controlled, its statistics read, and
// stopped even with accesses held), and the load: <root>/proc/stat
// rewritten every millisecond, from the rig's set speeds, so that every
// CPU's request moves at every tick. pcc_sysfs_bench.cpp has the rows.
#pragma once

#include "bench/daemon_bench_world.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace cppcgov::bench
{

// The rig cannot run here: its program is missing, mounting needs root or
// /dev/fuse, or the mount did not come up. The benchmark is then skipped.
class RigUnavailable : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

// Throws RigUnavailable saying why when `pccfs` cannot run on this machine
// (not executable, not root, no /dev/fuse).
void checkRigCanRun(const fs::path& pccfs);

// The rig's machine: how many CPUs (one policy each) and the latency and
// turnaround of its mailbox.
struct RigSettings
{
    unsigned cpus = 128;
    unsigned latencyUs = 100;
    unsigned turnaroundUs = 110;
};

// The rig's <mount>/pccfs/stats, "key value" per line.
class RigStats
{
  public:
    RigStats() = default;
    // Parses the text of the file; lines without a space are skipped.
    explicit RigStats(const std::string& text);

    // The number under `key`, 0 when it is absent or not a number.
    std::uint64_t number(const std::string& key) const;
    // The text under `key`, "" when it is absent.
    std::string text(const std::string& key) const;

    // policy<n>.setspeed_khz and policy<n>.governor.
    std::uint64_t setspeedKhz(unsigned policy) const
    {
        return number("policy" + std::to_string(policy) + ".setspeed_khz");
    }
    std::string governor(unsigned policy) const
    {
        return text("policy" + std::to_string(policy) + ".governor");
    }

  private:
    std::map<std::string, std::string> values_;
};

// A running pccfs on one mount point.
class PccFs
{
  public:
    // Starts `binary` on `mountpoint` (an empty directory) with `settings`,
    // its output to `log`, and waits until its statistics can be read.
    // Throws RigUnavailable with its output when it exits or has not
    // mounted within 10 s.
    PccFs(const fs::path& binary, const fs::path& mountpoint,
          const RigSettings& settings, const fs::path& log);
    // Stops it with SIGTERM (it answers what it holds and unmounts), after
    // 5 s with SIGKILL and a lazy unmount.
    ~PccFs();

    PccFs(const PccFs&) = delete;
    PccFs& operator=(const PccFs&) = delete;

    pid_t pid() const noexcept
    {
        return child_->pid();
    }

    // Writes one command to its control file ("hang 7", "clear"); throws
    // std::runtime_error naming the command when the write fails.
    void control(const std::string& command) const;
    // Reads its statistics; throws std::runtime_error when it cannot. Safe
    // from several threads at once.
    RigStats stats() const;

  private:
    fs::path mountpoint_;
    fs::path log_;
    std::unique_ptr<Child> child_;
    int statsFd_ = -1; // kept open: each read is then one request
};

// The load: a thread that rewrites <root>/proc/stat every millisecond and
// right after each read of it (inotify IN_ACCESS: the daemon's sampling).
// The file has a line per CPU whose busy (user) or idle counter advances
// with the time, in units of 10 us (procfs counts 10 ms, which a 1 ms tick
// would mostly see standing still): the busy one while the CPU's direction
// is up, the idle one while it is down. The daemon's utilization is
// frequency-invariant (busy x the performance in force), so a fixed pattern
// would settle at the floor or the ceiling; the direction therefore follows
// what the CPU's policy is set to: down from `high` up, up from `low` down
// (perf units). Directions turn only right after a read, so that every
// window between two of the daemon's reads is wholly busy or wholly idle:
// with the policy's headroom at 2, a 1 ms tick then moves the request by
// about 2 % of itself, far from the floor and the ceiling (ticks of tens of
// milliseconds move it by half or more, sometimes onto one of them).
class StatLoad
{
  public:
    // Fills `perf` (one element per CPU) with each CPU's set performance.
    using Observe = std::function<void(std::vector<std::uint32_t>& perf)>;

    static constexpr std::uint32_t low = 140;
    static constexpr std::uint32_t high = 180;

    // Writes the first file (every CPU idle, counters at 0) so that the
    // daemon can start on it. Throws std::runtime_error naming it when it
    // cannot.
    StatLoad(const fs::path& root, unsigned cpus, Observe observe);
    ~StatLoad();

    StatLoad(const StatLoad&) = delete;
    StatLoad& operator=(const StatLoad&) = delete;

    // Starts the thread; stop() ends it, leaving the file as last written
    // (counters that no longer move: the daemon repeats each CPU's last
    // fraction, so each request goes on to the floor or the ceiling).
    void start();
    void stop();

    // How many times the file was written, and how many of those rounds
    // could not read the set speeds (the directions were kept).
    std::uint64_t rounds() const noexcept
    {
        return rounds_.load();
    }
    std::uint64_t blindRounds() const noexcept
    {
        return blindRounds_.load();
    }
    // Whether a write of the file failed, which ended the thread.
    bool failed() const noexcept
    {
        return failed_.load();
    }

  private:
    void run();
    // Reads the set speeds and turns the directions.
    void turn();
    // Writes the file from the counters; false (errno set) when it fails.
    bool write();

    fs::path path_;
    int fd_ = -1;
    Observe observe_;
    std::vector<std::uint64_t> busy_;
    std::vector<std::uint64_t> idle_;
    std::vector<bool> up_;
    std::vector<std::uint32_t> perf_;
    std::string text_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> failed_{false};
    std::atomic<std::uint64_t> rounds_{0};
    std::atomic<std::uint64_t> blindRounds_{0};
    std::thread thread_;
};

} // namespace cppcgov::bench
