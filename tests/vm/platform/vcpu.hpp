// SPDX-License-Identifier: Apache-2.0
// A guest CPU as the host sees it: QEMU's thread for it (TCG runs one
// thread a virtual CPU), how long that thread was not asleep, and the
// share of a host CPU it may use.
//
// Busy time: the thread's run time plus its run-queue wait from
// /proc/PID/task/TID/schedstat. A virtual CPU that executes WFI sleeps in
// QEMU until its next interrupt, so time asleep is the guest's idle time;
// time throttled by the quota below counts as waiting, so a CPU slowed
// down by the platform stays busy for as long as its work takes, as on
// silicon. schedstat moves in lumps (run time at the host's ticks and
// switches, a wait only once it ends: a whole throttled stretch at once),
// so what a short stretch cannot hold is carried into the next
// (BusyEstimate). Sampled every 0.5 ms, a guest CPU busy throughout reads
// 99.4-99.98 % busy over 2 s, throttled or not; an idle one 2-4 %.
//
// The share: the thread alone in a cgroup of its own with a CPU quota,
// under cgroup v1's `cpu` controller (cpu.cfs_period_us, cpu.cfs_quota_us,
// tasks) or cgroup v2's (a threaded subtree: cpu.max, cgroup.threads).
// Made at start, removed at the end with the thread put back where it was.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace cppcgov::platform
{

struct Schedstat
{
    std::uint64_t runNs = 0;
    std::uint64_t waitNs = 0;
    std::uint64_t runs = 0;
};

// Parses schedstat's "RUN WAIT RUNS".
[[nodiscard]] std::optional<Schedstat> parseSchedstat(std::string_view);

// Thread `tid` of process `pid`'s schedstat; nothing once the thread is
// gone or the file cannot be read.
class BusyClock
{
  public:
    BusyClock(int pid, int tid);
    ~BusyClock();
    BusyClock(const BusyClock&) = delete;
    BusyClock& operator=(const BusyClock&) = delete;

    [[nodiscard]] std::optional<Schedstat> read() const;

  private:
    int fd_ = -1;
};

// Busy time from successive schedstat readings (above): run + wait, at
// most the stretch between two readings, the rest carried (up to
// maxCarriedNs).
class BusyEstimate
{
  public:
    // The reading at `nowNs`; returns the busy nanoseconds so far.
    std::uint64_t add(std::uint64_t nowNs, const Schedstat& reading);

  private:
    bool started_ = false;
    std::uint64_t lastNs_ = 0;
    Schedstat last_;
    std::uint64_t busy_ = 0;
    std::uint64_t carried_ = 0;
    // A quota period and more: the longest wait a throttled thread shows
    // at once.
    static constexpr std::uint64_t maxCarriedNs = 50'000'000;
};

enum class CgroupKind
{
    v1,
    v2,
};

// The cgroups that hold the virtual CPUs' threads, one each, under a
// directory of the platform's own.
class CpuQuota
{
  public:
    // Moves thread `tid` of process `pid` into `<root>/<name>/vcpu<index>`
    // (made when missing), with a quota period of `periodUs`. For v2,
    // `root` must be a cgroup whose subtree may hold threaded children: the
    // process is moved into `<root>/<name>` first. Throws
    // std::system_error naming the file that refused.
    CpuQuota(CgroupKind kind, const std::filesystem::path& root,
             const std::string& name, unsigned index, int pid, int tid,
             std::uint64_t periodUs);
    ~CpuQuota();
    CpuQuota(const CpuQuota&) = delete;
    CpuQuota& operator=(const CpuQuota&) = delete;

    // Lets the thread use `share` (0 < share <= 1) of one host CPU: the
    // quota is share x period, at least 1000 us (the kernel's minimum).
    // Returns false when the write failed.
    bool set(double share);
    // Puts the thread back in the cgroup it came from and removes the
    // cgroup; false when either failed (the message in lastError()).
    bool release();
    [[nodiscard]] const std::string& lastError() const noexcept
    {
        return error_;
    }
    [[nodiscard]] std::uint64_t quotaUs() const noexcept
    {
        return quota_;
    }

  private:
    CgroupKind kind_;
    std::filesystem::path dir_;
    std::filesystem::path home_; // the thread's cgroup before
    int pid_;
    int tid_;
    std::uint64_t period_;
    std::uint64_t quota_ = 0;
    bool released_ = false;
    std::string error_;
};

// Which controller the host offers under `/sys/fs/cgroup` (or `root`): v1's
// `cpu` hierarchy at <root>/cpu (or cpu,cpuacct), else v2 with `cpu` in
// its controllers; nothing when neither can be had.
struct CgroupChoice
{
    CgroupKind kind;
    std::filesystem::path root;
};
[[nodiscard]] std::optional<CgroupChoice> findCpuController(
    const std::filesystem::path& root = "/sys/fs/cgroup");

} // namespace cppcgov::platform
