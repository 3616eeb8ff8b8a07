// SPDX-License-Identifier: Apache-2.0
// The scheduler observer on the real kernel: the BPF program is loaded and
// attached, child processes pinned to one CPU spin, sleep, fork and exit,
// and the windows sample() returns must show it. Needs root and a kernel
// with BTF; skipped otherwise (and in a build without BPF support). No timing
// is asserted: every condition is waited for by sampling windows, with a
// generous bound.
#include "daemon/bpf/sched_observe_abi.h"
#include "daemon/sched_observer.hpp"
#include "lib/monotonic_clock.hpp"
#include "run_in_child.hpp"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using namespace std::chrono_literals;

std::uint64_t nowNs()
{
    return static_cast<std::uint64_t>(cppc::monotonicNow().count());
}

void pinTo(unsigned cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof(set), &set) != 0)
    {
        ::_exit(120);
    }
}

[[noreturn]] void spinForever()
{
    volatile std::uint64_t n = 0;
    for (;;)
    {
        n = n + 1;
    }
}

// Busy `busyUs` out of every `periodUs`, on the clock.
[[noreturn]] void dutyCycle(std::uint64_t busyUs, std::uint64_t periodUs)
{
    std::uint64_t start = nowNs();
    for (;;)
    {
        while (nowNs() - start < busyUs * 1000)
        {}
        start += periodUs * 1000;
        cppc::sleepUntil(cppc::Nanos{start});
    }
}

// Process `pid`'s CPU time in ns (its process CPU clock: for another
// process, as new as the last tick or switch that updated it, so up to its
// current run behind while it runs). 0 once it is gone.
std::uint64_t cpuTimeOf(pid_t pid)
{
    clockid_t clock{};
    timespec t{};
    if (::clock_getcpuclockid(pid, &clock) != 0 ||
        ::clock_gettime(clock, &t) != 0)
    {
        return 0;
    }
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000U +
           static_cast<std::uint64_t>(t.tv_nsec);
}

// A child process in its own process group. It waits until go(), tells
// ready() once `setup` has run, then runs `body` until it is killed with
// its whole group (children it forked included).
class Worker
{
  public:
    Worker(const std::function<void()>& setup,
           const std::function<void()>& body)
    {
        int goPipe[2];
        int readyPipe[2];
        if (::pipe2(goPipe, O_CLOEXEC) != 0 ||
            ::pipe2(readyPipe, O_CLOEXEC) != 0)
        {
            throw std::system_error(errno, std::system_category(), "pipe2");
        }
        pid_ = ::fork();
        if (pid_ < 0)
        {
            throw std::system_error(errno, std::system_category(), "fork");
        }
        if (pid_ == 0)
        {
            // It spins: it must not outlive a test that was killed.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            ::setpgid(0, 0);
            ::close(goPipe[1]);
            ::close(readyPipe[0]);
            char c = 0;
            while (::read(goPipe[0], &c, 1) < 0 && errno == EINTR)
            {}
            setup();
            while (::write(readyPipe[1], &c, 1) < 0 && errno == EINTR)
            {}
            body();
            for (;;)
            {
                ::pause();
            }
        }
        ::setpgid(pid_, pid_);
        ::close(goPipe[0]);
        ::close(readyPipe[1]);
        go_ = goPipe[1];
        ready_ = readyPipe[0];
    }

    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    ~Worker()
    {
        stop();
        ::close(go_);
        ::close(ready_);
    }

    pid_t pid() const
    {
        return pid_;
    }

    // Lets it run and waits until its setup is done.
    void start()
    {
        char c = 1;
        while (::write(go_, &c, 1) < 0 && errno == EINTR)
        {}
        while (::read(ready_, &c, 1) < 0 && errno == EINTR)
        {}
    }

    // Kills it (and what it forked) and reaps it.
    void stop()
    {
        if (!reaped_)
        {
            reaped_ = true;
            ::kill(-pid_, SIGKILL);
            while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR)
            {}
        }
    }

    // Its CPU time so far in ns (cpuTimeOf()).
    std::uint64_t cpuTimeNs() const
    {
        return cpuTimeOf(pid_);
    }

    // The same with the children it forked.
    std::uint64_t treeCpuTimeNs() const
    {
        std::uint64_t ns = cpuTimeOf(pid_);
        const std::string self = std::to_string(pid_);
        std::ifstream children("/proc/" + self + "/task/" + self + "/children");
        pid_t child = 0;
        while (children >> child)
        {
            ns += cpuTimeOf(child);
        }
        return ns;
    }

  private:
    pid_t pid_ = -1;
    int go_ = -1;
    int ready_ = -1;
    bool reaped_ = false;
};

// Holds CPU `cpu`'s record in the observer's map as a writer does while
// it updates it (its sequence count odd), as when the writer's CPU stops
// mid-update (a vCPU the host preempted); the program's own updates keep
// the count's parity. Found among this process's own BPF map descriptors.
class HeldRecord
{
  public:
    explicit HeldRecord(unsigned cpu)
    {
        const std::string fds = "/proc/self/fd/";
        for (int fd = 0; fd < 1024 && records_ == nullptr; ++fd)
        {
            char target[64] = {};
            const std::string path = fds + std::to_string(fd);
            if (::readlink(path.c_str(), target, sizeof(target) - 1) <= 0 ||
                std::string_view(target) != "anon_inode:bpf-map")
            {
                continue;
            }
            bpf_map_info info{};
            __u32 size = sizeof(info);
            if (bpf_obj_get_info_by_fd(fd, &info, &size) != 0 ||
                std::string_view(info.name) != "cpus" ||
                info.value_size != sizeof(cppcgov_cpu) ||
                cpu >= info.max_entries)
            {
                continue;
            }
            bytes_ = std::size_t{info.value_size} * info.max_entries;
            const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
            bytes_ = (bytes_ + page - 1) / page * page;
            void* at = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                              MAP_SHARED, fd, 0);
            if (at == MAP_FAILED)
            {
                reason_ = std::string("mmap: ") + std::strerror(errno);
                return;
            }
            records_ = static_cast<cppcgov_cpu*>(at);
        }
        if (records_ == nullptr)
        {
            reason_ = reason_.empty() ? "no per-CPU map among the descriptors"
                                      : reason_;
            return;
        }
        seq_ = &records_[cpu].seq;
        std::atomic_ref<__u32>(*seq_).fetch_add(1);
    }

    HeldRecord(const HeldRecord&) = delete;
    HeldRecord& operator=(const HeldRecord&) = delete;

    ~HeldRecord()
    {
        release();
        if (records_ != nullptr)
        {
            ::munmap(records_, bytes_);
        }
    }

    void release()
    {
        if (seq_ != nullptr)
        {
            std::atomic_ref<__u32>(*seq_).fetch_add(1);
            seq_ = nullptr;
        }
    }

    bool usable() const
    {
        return seq_ != nullptr;
    }

    const std::string& reason() const
    {
        return reason_;
    }

  private:
    cppcgov_cpu* records_ = nullptr;
    std::size_t bytes_ = 0;
    __u32* seq_ = nullptr;
    std::string reason_;
};

// A cpu cgroup of the test's own whose tasks may run `quotaUs` of every
// `periodUs` (CFS bandwidth): under cgroup v1's cpu controller, or under
// cgroup2's root when its cpu controller is enabled there (the test does
// not enable it). Removed when destroyed, once its tasks are gone.
class ThrottledGroup
{
  public:
    ThrottledGroup(std::uint64_t quotaUs, std::uint64_t periodUs)
    {
        const std::string name = "cppcgov-test-" + std::to_string(::getpid());
        const std::string v1 = "/sys/fs/cgroup/cpu";
        if (::access((v1 + "/cpu.cfs_quota_us").c_str(), W_OK) == 0)
        {
            make(v1 + "/" + name);
            usable_ = usable_ &&
                      write("cpu.cfs_period_us", std::to_string(periodUs)) &&
                      write("cpu.cfs_quota_us", std::to_string(quotaUs));
            return;
        }
        std::ifstream controllers("/sys/fs/cgroup/cgroup.subtree_control");
        std::string controller;
        while (controllers >> controller)
        {
            if (controller == "cpu")
            {
                make("/sys/fs/cgroup/" + name);
                usable_ = usable_ &&
                          write("cpu.max", std::to_string(quotaUs) + " " +
                                               std::to_string(periodUs));
                return;
            }
        }
        reason_ = "no cpu controller (cgroup v1 cpu, or cpu in cgroup2's "
                  "root subtree_control)";
    }

    ThrottledGroup(const ThrottledGroup&) = delete;
    ThrottledGroup& operator=(const ThrottledGroup&) = delete;

    ~ThrottledGroup()
    {
        // Its tasks were killed and reaped before; their exit may still
        // be on its way out of the group.
        for (int i = 0; !dir_.empty() && i < 1000; ++i)
        {
            if (::rmdir(dir_.c_str()) == 0 || errno != EBUSY)
            {
                break;
            }
            std::this_thread::sleep_for(1ms);
        }
    }

    bool usable() const
    {
        return usable_;
    }

    const std::string& reason() const
    {
        return reason_;
    }

    bool add(pid_t pid)
    {
        return write("cgroup.procs", std::to_string(pid));
    }

  private:
    void make(const std::string& dir)
    {
        if (::mkdir(dir.c_str(), 0755) != 0)
        {
            reason_ = "mkdir " + dir + ": " + std::strerror(errno);
            return;
        }
        dir_ = dir;
        usable_ = true;
    }

    bool write(const std::string& file, const std::string& value)
    {
        std::ofstream out(dir_ + "/" + file);
        out << value << std::endl;
        if (!out)
        {
            reason_ = "writing " + value + " to " + dir_ + "/" + file +
                      " failed";
            return false;
        }
        return true;
    }

    std::string dir_;
    std::string reason_;
    bool usable_ = false;
};

// Idle time of `cpu` from /proc/stat in ns (USER_HZ steps).
std::uint64_t idleNs(unsigned cpu)
{
    std::ifstream in("/proc/stat");
    const std::string name = "cpu" + std::to_string(cpu);
    std::string line;
    while (std::getline(in, line))
    {
        std::istringstream fields(line);
        std::string label;
        fields >> label;
        if (label != name)
        {
            continue;
        }
        std::uint64_t v[5] = {};
        for (std::uint64_t& x : v)
        {
            fields >> x;
        }
        const auto hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
        return (v[3] + v[4]) * (1'000'000'000U / hz); // idle + iowait
    }
    return 0;
}

// Whether a window may be asserted to hold every task of a test that is
// runnable on its CPU. When the program heals its counts
// (ObserverStats::overcounts: it counted more tasks on a CPU than the
// kernel had runnable there) it forgets the CPU's waiting tasks until
// each runs again: windows are not asserted from the one a heal showed in
// until the one after every task in `tasks` ran again.
class HealWatch
{
  public:
    HealWatch(const SchedObserver& observer, std::vector<const Worker*> tasks) :
        observer_(observer), tasks_(std::move(tasks)),
        heals_(observer.stats().overcounts)
    {}

    // After each window.
    bool settled()
    {
        const std::uint64_t heals = observer_.stats().overcounts;
        if (heals != heals_)
        {
            heals_ = heals;
            ran_.clear();
            for (const Worker* task : tasks_)
            {
                ran_.push_back(task->cpuTimeNs());
            }
            pending_ = true;
            return false;
        }
        if (pending_)
        {
            bool all = true;
            for (std::size_t i = 0; i < tasks_.size(); ++i)
            {
                all = all && tasks_[i]->cpuTimeNs() > ran_[i];
            }
            pending_ = !all;
            return false;
        }
        return true;
    }

  private:
    const SchedObserver& observer_;
    std::vector<const Worker*> tasks_;
    std::uint64_t heals_ = 0;
    std::vector<std::uint64_t> ran_;
    bool pending_ = false;
};

// Whether the observer cannot be here at all, whatever its privileges.
bool notHere(const ObserverUnavailable& e)
{
    return std::strstr(e.what(), "without BPF support") != nullptr ||
           std::strstr(e.what(), "no bpf() system call") != nullptr;
}

bool contains(std::span<const std::uint32_t> slots, std::uint32_t slot)
{
    return std::find(slots.begin(), slots.end(), slot) != slots.end();
}

// In a test body: waitAlone() held, or the test skips when other tasks
// crowded the CPU.
#define ASSERT_ALONE(call)                                                     \
    do                                                                         \
    {                                                                          \
        const Alone alone = (call);                                            \
        if (alone == Alone::crowded)                                           \
        {                                                                      \
            GTEST_SKIP() << crowded_;                                          \
        }                                                                      \
        ASSERT_EQ(alone, Alone::held);                                         \
    } while (false)

class SchedObserverTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        if (::geteuid() != 0)
        {
            GTEST_SKIP() << "loading the BPF program needs root";
        }
        if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
        {
            GTEST_SKIP() << "the kernel has no BTF (/sys/kernel/btf/vmlinux)";
        }
        try
        {
            observer_ = std::make_unique<SchedObserver>();
        }
        catch (const ObserverUnavailable& e)
        {
            // Without BPF support in the build, or without the system
            // call (an emulator), there is nothing to test; as root on a
            // kernel with BTF anything else is a failure.
            if (notHere(e))
            {
                GTEST_SKIP() << e.what();
            }
            FAIL() << "the observer does not load: " << e.what();
        }
        out_.resize(observer_->cpus());
        cpu_set_t set;
        CPU_ZERO(&set);
        ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
        for (unsigned cpu = 0; cpu < observer_->cpus(); ++cpu)
        {
            if (CPU_ISSET(cpu, &set))
            {
                allowed_.push_back(cpu);
            }
        }
        ASSERT_FALSE(allowed_.empty());
        EXPECT_EQ(observer_->sample(out_), 0U); // the first only starts

        // Other tasks may keep a CPU busy (this machine may be shared): a
        // test that needs windows with only its own tasks in them runs
        // its children where the CPU idled most in a survey of windows.
        idleWindows_.assign(observer_->cpus(), 0);
        for (int i = 0; i < 100; ++i)
        {
            const std::uint64_t length = window();
            for (const unsigned cpu : allowed_)
            {
                idleWindows_[cpu] += out_[cpu].busyNs < length / 4 ? 1 : 0;
            }
        }
        std::vector<unsigned> byQuiet = allowed_;
        std::stable_sort(byQuiet.begin(), byQuiet.end(),
                         [this](unsigned a, unsigned b) {
            return idleWindows_[a] > idleWindows_[b];
        });
        cpuA_ = byQuiet[0];
        cpuB_ = byQuiet.size() > 1 ? byQuiet[1] : cpuA_;
    }

    void TearDown() override
    {
        if (observer_)
        {
            const ObserverStats stats = observer_->stats();
            std::printf("observer: %llu events, %llu missed, %llu resets, "
                        "%llu overcounts, %llu anomalies, %llu unread\n",
                        static_cast<unsigned long long>(stats.events),
                        static_cast<unsigned long long>(stats.missed),
                        static_cast<unsigned long long>(stats.resets),
                        static_cast<unsigned long long>(stats.overcounts),
                        static_cast<unsigned long long>(stats.anomalies),
                        static_cast<unsigned long long>(stats.unread));
        }
    }

    // Ends a window of about 2 ms and returns its length in ns.
    std::uint64_t window()
    {
        std::this_thread::sleep_for(2ms);
        return observer_->sample(out_);
    }

    // Samples windows until `holds()` is true of one; false when it was
    // not within a bound far beyond any scheduling delay.
    bool waitFor(const std::function<bool()>& holds)
    {
        for (int i = 0; i < 10000; ++i)
        {
            window();
            if (holds())
            {
                return true;
            }
        }
        return false;
    }

    enum class Alone
    {
        held,
        crowded,
        failed
    };

    // For a condition that needs a window in which only this test's one
    // spinning task (`own` or its child) was runnable on `cpu`, such as an
    // exact maximum (any other task counts as [0,1024]): waits as
    // waitFor(). When no window held, the test fails if the CPU was its
    // task's alone: four windows in five without scheduler events, and
    // other tasks' time there (its busy time less the task's own) below
    // 0.5 %. Otherwise other tasks were runnable there, even ones that
    // hardly ran (niced ones wait long), this machine is too busy to
    // tell, and the test skips.
    Alone waitAlone(unsigned cpu, const Worker& own,
                    const std::function<bool()>& holds)
    {
        const std::uint64_t own0 = own.treeCpuTimeNs();
        std::uint64_t busy = 0;
        std::uint64_t length = 0;
        int quiet = 0;
        int windows = 0;
        for (; windows < 10000; ++windows)
        {
            length += window();
            busy += out_[cpu].busyNs;
            quiet += out_[cpu].events == 0 ? 1 : 0;
            if (holds())
            {
                return Alone::held;
            }
        }
        const std::uint64_t ownNs = own.treeCpuTimeNs() - own0;
        const std::uint64_t others = busy > ownNs ? busy - ownNs : 0;
        crowded_ =
            "other tasks came by CPU " + std::to_string(cpu) + " in " +
            std::to_string(windows - quiet) + " of " + std::to_string(windows) +
            " windows and ran " + std::to_string(others / 1000U) + " us of " +
            std::to_string(length / 1000U);
        const bool alone = quiet * 5 >= windows * 4 && others * 200 < length;
        return alone ? Alone::failed : Alone::crowded;
    }

    // Runs `check` after each of `count` windows that `watch` lets be
    // asserted, in at most twenty times as many; false when heals left
    // fewer (the test then skips).
    bool eachSettledWindow(HealWatch& watch, int count,
                           const std::function<void(int)>& check)
    {
        int asserted = 0;
        for (int i = 0; asserted < count && i < 20 * count; ++i)
        {
            window();
            if (watch.settled())
            {
                check(asserted++);
            }
        }
        return asserted == count;
    }

    // What a failed check of `cpu`'s last window prints beside it.
    std::string windowText(unsigned cpu) const
    {
        const ObservedCpu& o = out_[cpu];
        const ObserverStats stats = observer_->stats();
        return "the window: " + std::to_string(o.events) + " events, " +
               std::to_string(o.switches) + " switches, busy " +
               std::to_string(o.busyNs) + " ns; so far " +
               std::to_string(stats.overcounts) + " overcounts, " +
               std::to_string(stats.resets) + " resets, " +
               std::to_string(stats.anomalies) + " anomalies, " +
               std::to_string(stats.unread) + " unread";
    }

    static constexpr const char* tooManyHeals =
        "the program healed its counts too often here to assert windows";

    // Skips a test that needs windows in which only its own tasks ran on
    // `cpu` when other tasks kept it busy all through the survey.
    void needQuiet(unsigned cpu)
    {
        if (idleWindows_[cpu] == 0)
        {
            GTEST_SKIP() << "other tasks keep CPU " << cpu << " busy";
        }
    }

    void needTwoCpus()
    {
        if (cpuA_ == cpuB_)
        {
            GTEST_SKIP() << "needs two CPUs";
        }
    }

    std::unique_ptr<SchedObserver> observer_;
    std::vector<ObservedCpu> out_;
    std::vector<unsigned> allowed_;
    std::vector<unsigned> idleWindows_;
    std::string crowded_;
    unsigned cpuA_ = 0;
    unsigned cpuB_ = 0;
};

TEST_F(SchedObserverTest, BusyTimeOfAPinnedDutyCycleAgreesWithItsCpuTime)
{
    const unsigned cpu = cpuA_;
    Worker worker([cpu] { pinTo(cpu); }, [] { dutyCycle(5000, 10000); });
    worker.start();

    window(); // from here on, the windows cover the CPU times read below
    const std::uint64_t idle0 = idleNs(cpu);
    const std::uint64_t cpu0 = worker.cpuTimeNs();
    std::uint64_t busy = 0;
    std::uint64_t length = 0;
    // Half a second of its CPU time, in windows of a few ms.
    std::uint64_t cpu1 = cpu0;
    while (cpu1 - cpu0 < 500'000'000U)
    {
        length += window();
        busy += out_[cpu].busyNs;
        cpu1 = worker.cpuTimeNs();
    }
    const std::uint64_t idle1 = idleNs(cpu);
    length += observer_->sample(out_);
    busy += out_[cpu].busyNs;

    const std::uint64_t child = cpu1 - cpu0;
    const std::uint64_t idle = idle1 > idle0 ? idle1 - idle0 : 0;
    std::printf("%llu ns of windows: busy %llu ns, the child's CPU time %llu "
                "ns, idle %llu ns\n",
                static_cast<unsigned long long>(length),
                static_cast<unsigned long long>(busy),
                static_cast<unsigned long long>(child),
                static_cast<unsigned long long>(idle));
    // At least the child's own time: it ran only there, within the windows.
    // Its first reading of its clock may be behind by the run it was in
    // (5 ms of spinning), which the child's time then overstates.
    EXPECT_GE(busy + 6'000'000U, child)
        << "busy " << busy << " ns, the child's CPU time " << child << " ns";
    // At most what the kernel counts as not idle there (its idle time is
    // in 10 ms steps; a margin of 5 % and three steps): the child's time
    // and any other task's. (Not idle is not all busy time: interrupts
    // taken while idle count there too, and a lot in an emulator.)
    const std::uint64_t notIdle = length > idle ? length - idle : 0;
    EXPECT_LE(busy, notIdle + length / 20 + 30'000'000U);
    EXPECT_LE(busy, length + 1'000'000U);
}

TEST_F(SchedObserverTest, AHintedTaskShowsItsClampOnItsCpu)
{
    const unsigned cpu = cpuA_;
    needQuiet(cpu);
    Worker worker([cpu] { pinTo(cpu); }, spinForever);
    observer_->setSlotClamp(3, {600, 800});
    ASSERT_FALSE(observer_->bindTarget({worker.pid(), true}, 3));
    worker.start();

    ASSERT_ALONE(waitAlone(cpu, worker, [&] {
        return out_[cpu].clamp == policies::Clamp{600, 800} &&
               contains(observer_->slotsSeen(cpu), 3);
    }));
    // While it is runnable there, every window carries its minimum (other
    // tasks may raise the maximum, never lower the minimum). (Its slot is
    // listed only in the windows in which it ran: slotsSeen().)
    HealWatch watch(*observer_, {&worker});
    if (!eachSettledWindow(watch, 50, [&](int i) {
            EXPECT_GE(out_[cpu].clamp.min, 600)
                << "window " << i << ", " << windowText(cpu);
        }))
    {
        GTEST_SKIP() << tooManyHeals;
    }
    EXPECT_GT(observer_->stats().events, 0U);
}

TEST_F(SchedObserverTest, ATaskUnderSeveralHintsTakesTheMaxOfEach)
{
    const unsigned cpu = cpuA_;
    needQuiet(cpu);
    Worker worker([cpu] { pinTo(cpu); }, spinForever);
    observer_->setSlotClamp(20, {200, 700});
    observer_->setSlotClamp(21, {500, 600});
    ASSERT_FALSE(observer_->bindTarget({worker.pid(), true}, 20));
    ASSERT_FALSE(observer_->bindTarget({worker.pid(), false}, 21));
    worker.start();

    ASSERT_ALONE(waitAlone(cpu, worker, [&] {
        const std::span<const std::uint32_t> seen = observer_->slotsSeen(cpu);
        return out_[cpu].clamp == policies::Clamp{500, 700} &&
               seen.size() == 2 && seen[0] == 20 && seen[1] == 21;
    }));
}

TEST_F(SchedObserverTest, AnUnhintedTaskBesideAHintedOneLiftsTheMax)
{
    const unsigned cpu = cpuA_;
    needQuiet(cpu);
    Worker hinted([cpu] { pinTo(cpu); }, spinForever);
    Worker other([cpu] { pinTo(cpu); }, spinForever);
    observer_->setSlotClamp(1, {0, 300});
    ASSERT_FALSE(observer_->bindTarget({hinted.pid(), true}, 1));
    hinted.start();
    other.start();

    ASSERT_TRUE(
        waitFor([&] { return contains(observer_->slotsSeen(cpu), 1); }));
    // Both are runnable there all along: the unhinted one's 1024 counts,
    // as the kernel takes the max over every runnable task.
    window();
    HealWatch watch(*observer_, {&hinted, &other});
    if (!eachSettledWindow(watch, 50, [&](int i) {
            EXPECT_EQ(out_[cpu].clamp.max, 1024)
                << "window " << i << ", " << windowText(cpu);
        }))
    {
        GTEST_SKIP() << tooManyHeals;
    }

    other.stop();
    ASSERT_ALONE(waitAlone(cpu, hinted, [&] {
        return out_[cpu].clamp == policies::Clamp{0, 300} &&
               contains(observer_->slotsSeen(cpu), 1);
    }));
}

TEST_F(SchedObserverTest, AWaitingHintedTaskCountsItsMin)
{
    // The two share the CPU: in many windows only one of them runs, but
    // the hinted one is runnable in all of them.
    const unsigned cpu = cpuA_;
    Worker hinted([cpu] { pinTo(cpu); }, spinForever);
    Worker other([cpu] { pinTo(cpu); }, spinForever);
    observer_->setSlotClamp(9, {700, 1024});
    ASSERT_FALSE(observer_->bindTarget({hinted.pid(), true}, 9));
    hinted.start();
    other.start();

    ASSERT_TRUE(
        waitFor([&] { return contains(observer_->slotsSeen(cpu), 9); }));
    window();
    HealWatch watch(*observer_, {&hinted});
    if (!eachSettledWindow(watch, 200, [&](int i) {
            EXPECT_GE(out_[cpu].clamp.min, 700)
                << "window " << i << ", " << windowText(cpu);
        }))
    {
        GTEST_SKIP() << tooManyHeals;
    }
}

TEST_F(SchedObserverTest, AHeldRecordReadsAsItLastStood)
{
    // While its record is held, a CPU reads as its last complete reading:
    // the hinted task runnable there, not an empty runqueue.
    const unsigned cpu = cpuA_;
    Worker hinted([cpu] { pinTo(cpu); }, spinForever);
    observer_->setSlotClamp(12, {700, 1024});
    ASSERT_FALSE(observer_->bindTarget({hinted.pid(), true}, 12));
    hinted.start();
    ASSERT_TRUE(waitFor([&] {
        return out_[cpu].clamp.min >= 700 &&
               contains(observer_->slotsSeen(cpu), 12);
    }));
    window();

    HeldRecord held(cpu);
    ASSERT_TRUE(held.usable()) << held.reason();
    const std::uint64_t unread0 = observer_->stats().unread;
    // Every event on the held CPU finds its record odd, and counts as an
    // anomaly: the windows without any read the record itself, which
    // stands as it last read.
    HealWatch watch(*observer_, {&hinted});
    std::uint64_t anomalies = observer_->stats().anomalies;
    int windows = 0;
    int quiet = 0;
    for (; windows < 5000 && quiet < 20; ++windows)
    {
        window();
        const std::uint64_t now = observer_->stats().anomalies;
        if (watch.settled() && now == anomalies)
        {
            EXPECT_GE(out_[cpu].clamp.min, 700)
                << "window " << windows << ", " << windowText(cpu);
            ++quiet;
        }
        anomalies = now;
    }
    // (An event on it makes the count even while it runs: a window read
    // then reads complete.)
    const std::uint64_t unread = observer_->stats().unread - unread0;
    EXPECT_GE(unread, static_cast<std::uint64_t>(quiet));
    EXPECT_LE(unread, static_cast<std::uint64_t>(windows));
    if (quiet < 20)
    {
        GTEST_SKIP() << "events kept coming to CPU " << cpu << ": " << quiet
                     << " windows of " << windows << " without any";
    }

    held.release();
    const std::uint64_t unread1 = observer_->stats().unread;
    for (int i = 0; i < 20; ++i)
    {
        window();
    }
    EXPECT_EQ(observer_->stats().unread, unread1);
    EXPECT_GE(out_[cpu].clamp.min, 700) << windowText(cpu);
}

TEST_F(SchedObserverTest, AThrottledHintedTaskStopsCountingOnABusyCpu)
{
    // The hinted task may run 10 ms of every 100 (CFS bandwidth) and is
    // not runnable for the rest; an unhinted one spins beside it, so the
    // CPU never goes idle. The kernel takes the throttled task off its
    // runqueue's count with no event the program sees; only the
    // cross-check against the kernel's count drops its minimum.
    const unsigned cpu = cpuA_;
    ThrottledGroup group(10'000, 100'000);
    if (!group.usable())
    {
        GTEST_SKIP() << group.reason();
    }
    Worker other([cpu] { pinTo(cpu); }, spinForever);
    Worker hinted([cpu] { pinTo(cpu); }, spinForever);
    ASSERT_TRUE(group.add(hinted.pid())) << group.reason();
    observer_->setSlotClamp(4, {700, 1024});
    ASSERT_FALSE(observer_->bindTarget({hinted.pid(), true}, 4));
    other.start();
    hinted.start();

    ASSERT_TRUE(waitFor([&] {
        return out_[cpu].clamp.min >= 700 &&
               contains(observer_->slotsSeen(cpu), 4);
    }));
    ASSERT_TRUE(waitFor([&] { return out_[cpu].clamp.min == 0; }))
        << "the throttled task stayed counted";
    EXPECT_GT(observer_->stats().overcounts, 0U);
    // Counted again once its group may run.
    ASSERT_TRUE(waitFor([&] {
        return out_[cpu].clamp.min >= 700 &&
               contains(observer_->slotsSeen(cpu), 4);
    }));
}

TEST_F(SchedObserverTest, AForkedChildInheritsTheHintUntilItIsCleared)
{
    needTwoCpus();
    const unsigned home = cpuB_;
    const unsigned away = cpuA_;
    needQuiet(away);
    // The hinted process sleeps on one CPU; the child it forks spins on
    // the other.
    Worker parent([home] { pinTo(home); },
                  [away] {
        if (::fork() == 0)
        {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            pinTo(away);
            spinForever();
        }
    });
    observer_->setSlotClamp(5, {500, 600});
    ASSERT_FALSE(observer_->bindTarget({parent.pid(), true}, 5));
    parent.start();

    ASSERT_ALONE(waitAlone(away, parent, [&] {
        return out_[away].clamp == policies::Clamp{500, 600} &&
               contains(observer_->slotsSeen(away), 5);
    }));

    observer_->clearSlot(5);
    ASSERT_TRUE(waitFor([&] {
        return out_[away].clamp.min == 0 &&
               !contains(observer_->slotsSeen(away), 5);
    }));
    for (int i = 0; i < 50; ++i)
    {
        window();
        EXPECT_EQ(out_[away].clamp.min, 0);
        EXPECT_FALSE(contains(observer_->slotsSeen(away), 5));
    }
    // The slot may serve again; the old binding and inheritance are void.
    observer_->setSlotClamp(5, {200, 400});
    for (int i = 0; i < 50; ++i)
    {
        window();
        EXPECT_EQ(out_[away].clamp.min, 0);
        EXPECT_FALSE(contains(observer_->slotsSeen(away), 5));
    }
}

TEST_F(SchedObserverTest, AThreadInheritsItsCreatorsThreadHint)
{
    needTwoCpus();
    const unsigned home = cpuB_;
    const unsigned away = cpuA_;
    Worker parent([home] { pinTo(home); },
                  [away] {
        std::thread([away] {
            pinTo(away);
            spinForever();
        }).detach();
    });
    // The main thread only: its new thread carries the slot by inheritance.
    observer_->setSlotClamp(7, {450, 1024});
    ASSERT_FALSE(observer_->bindTarget({parent.pid(), false}, 7));
    parent.start();

    ASSERT_TRUE(waitFor([&] {
        return out_[away].clamp.min == 450 &&
               contains(observer_->slotsSeen(away), 7);
    }));
}

TEST_F(SchedObserverTest, UnbindingATargetTakesItsHintAway)
{
    const unsigned cpu = cpuA_;
    Worker worker([cpu] { pinTo(cpu); }, spinForever);
    observer_->setSlotClamp(11, {650, 700});
    ASSERT_FALSE(observer_->bindTarget({worker.pid(), true}, 11));
    worker.start();
    ASSERT_TRUE(waitFor([&] {
        return out_[cpu].clamp.min == 650 &&
               contains(observer_->slotsSeen(cpu), 11);
    }));

    ASSERT_FALSE(observer_->unbindTarget({worker.pid(), true}));
    ASSERT_TRUE(waitFor([&] {
        return out_[cpu].clamp.min == 0 &&
               !contains(observer_->slotsSeen(cpu), 11);
    }));
    EXPECT_EQ(observer_->unbindTarget({worker.pid(), true}),
              std::error_code(ENOENT, std::system_category()));
    EXPECT_EQ(
        observer_->bindTarget({worker.pid(), true}, SchedObserver::maxSlots),
        std::error_code(EINVAL, std::system_category()));
}

TEST_F(SchedObserverTest, SamplingGoesOnAfterAChildExits)
{
    const unsigned cpu = cpuA_;
    auto worker = std::make_unique<Worker>([cpu] { pinTo(cpu); }, spinForever);
    observer_->setSlotClamp(2, {800, 1024});
    ASSERT_FALSE(observer_->bindTarget({worker->pid(), true}, 2));
    worker->start();
    ASSERT_TRUE(
        waitFor([&] { return contains(observer_->slotsSeen(cpu), 2); }));

    worker.reset(); // killed and reaped: its last switch took it off
    ASSERT_TRUE(waitFor([&] {
        return out_[cpu].clamp.min < 800 &&
               !contains(observer_->slotsSeen(cpu), 2);
    }));
    for (int i = 0; i < 20; ++i)
    {
        EXPECT_GT(window(), 0U);
        EXPECT_FALSE(contains(observer_->slotsSeen(cpu), 2));
    }
}

// Whether `fd` is readable within `timeoutMs`.
bool readable(int fd, int timeoutMs)
{
    pollfd p{fd, POLLIN, 0};
    int n = 0;
    while ((n = ::poll(&p, 1, timeoutMs)) < 0 && errno == EINTR)
    {}
    return n > 0;
}

// A child that sleeps 5 ms and spins 1 ms, over and over: it leaves idle
// on its CPU some 150 times a second.
[[noreturn]] void sleepAndSpin()
{
    for (;;)
    {
        std::this_thread::sleep_for(5ms);
        const std::uint64_t until = nowNs() + 1'000'000;
        while (nowNs() < until)
        {}
    }
}

TEST_F(SchedObserverTest, AnArmedWakeFiresOnceWhenAnotherProcessWakes)
{
    ASSERT_GE(observer_->wakeFd(), 0);
    const unsigned cpu = cpuA_;
    Worker worker([cpu] { pinTo(cpu); }, sleepAndSpin);
    worker.start();
    // Disarmed, nothing fires however often a task leaves idle.
    observer_->armWake(false);
    (void)observer_->takeWakes();
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(readable(observer_->wakeFd(), 0));
    EXPECT_EQ(observer_->takeWakes(), 0U);

    // Armed, the next wake-up or switch-in of another process's task fires
    // (the worker's, or any other process's on this machine) ...
    observer_->armWake(true);
    ASSERT_TRUE(readable(observer_->wakeFd(), 2000));
    const std::size_t first = observer_->takeWakes();
    EXPECT_GE(first, 1U);
    // ... once, or once on each CPU that saw it armed at the same time;
    // then it is disarmed until armed again.
    EXPECT_LE(first, std::size_t{observer_->cpus()});
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(readable(observer_->wakeFd(), 0));
    EXPECT_EQ(observer_->takeWakes(), 0U);

    observer_->armWake(true);
    EXPECT_TRUE(readable(observer_->wakeFd(), 2000));
    EXPECT_GE(observer_->takeWakes(), 1U);
    observer_->armWake(false);
}

TEST_F(SchedObserverTest, ThisProcesssOwnThreadsAreTheirOwn)
{
    const unsigned cpu = cpuA_;
    Worker worker([cpu] { pinTo(cpu); }, spinForever);
    worker.start();
    ASSERT_TRUE(waitFor([&] { return out_[cpu].othersRunning; }));
    worker.stop();
    // This process's own thread spinning there is not another's, and its
    // busy time is this process's own.
    std::atomic<bool> stop{false};
    std::thread own([cpu, &stop] {
        pinTo(cpu);
        while (!stop.load(std::memory_order_relaxed))
        {}
    });
    const bool shown = waitFor([&] {
        return !out_[cpu].othersRunning && out_[cpu].busyNs > 0 &&
               out_[cpu].ownBusyNs * 2 > out_[cpu].busyNs;
    });
    stop.store(true);
    own.join();
    EXPECT_TRUE(shown);
}

#if !CPPCGOV_HAVE_BPF
TEST(SchedObserverBuild, WithoutBpfSupportTheConstructorSaysSo)
{
    try
    {
        SchedObserver observer;
        FAIL() << "a build without BPF support constructed an observer";
    }
    catch (const ObserverUnavailable& e)
    {
        EXPECT_STREQ(e.what(), "cppcgovd was built without BPF support");
    }
}
#endif

TEST(SchedObserverPrivileges, WithoutCapabilitiesTheErrorNamesThem)
{
#if !CPPCGOV_HAVE_BPF
    GTEST_SKIP() << "built without BPF support";
#endif
    if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    {
        GTEST_SKIP() << "the kernel has no BTF (/sys/kernel/btf/vmlinux)";
    }
    // In a child that gives up every capability (root or not).
    const int status = cppc::test::exitStatusOf([] {
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct data[2] = {};
        if (::syscall(SYS_capset, &header, data) != 0)
        {
            ::_exit(10);
        }
        try
        {
            SchedObserver observer;
            ::_exit(11);
        }
        catch (const ObserverUnavailable& e)
        {
            std::fprintf(stderr, "ObserverUnavailable: %s\n", e.what());
            if (notHere(e))
            {
                ::_exit(13);
            }
            ::_exit(std::strstr(e.what(), "CAP_BPF") != nullptr ? 0 : 12);
        }
    });
    if (status == 13)
    {
        GTEST_SKIP() << "BPF cannot be used here at all";
    }
    EXPECT_EQ(status, 0) << "10: capset failed, 11: it loaded, 12: the "
                            "error does not name the capability";
}

} // namespace
} // namespace cppcgov::daemon
