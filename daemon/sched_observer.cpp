// SPDX-License-Identifier: Apache-2.0
#include "sched_observer.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#if CPPCGOV_HAVE_BPF

#include "daemon/bpf/sched_observe_abi.h"
#include "lib/monotonic_clock.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cstdarg>
#include <cstdio>

// The skeleton names its global data after the ABI's types. It is C as
// bpftool writes it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wcast-align"
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "daemon/bpf/sched_observe.skel.h"
#pragma GCC diagnostic pop

namespace cppcgov::daemon
{

namespace
{

static_assert(SchedObserver::maxSlots == CPPCGOV_MAX_SLOTS);
static_assert(sizeof(cppcgov_cpu) % 64 == 0, "per-CPU records fill lines");
static_assert(alignof(cppcgov_cpu) == 64);
static_assert(sizeof(cppcgov_globals) == 24);

constexpr const char* btfPath = "/sys/kernel/btf/vmlinux";

// How often a reader retries a record a writer is busy with. A writer
// holds it for a few hundred instructions with interrupts off, unless its
// CPU is itself stopped (a vCPU the host preempted): the reader then takes
// the CPU's last complete reading rather than wait or use a torn one.
constexpr int maxReadTries = 4096;

// The first warning libbpf printed while the program was opened and
// loaded (on the constructing thread), for the constructor's errors: the
// one that names what failed first.
std::array<char, 256> firstLibbpfLine{};

__attribute__((format(printf, 2, 0))) int keepFirstLine(
    enum libbpf_print_level level, const char* format, va_list args)
{
    if (level == LIBBPF_DEBUG || firstLibbpfLine[0] != '\0')
    {
        return 0;
    }
    std::array<char, firstLibbpfLine.size()> line{};
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    const int n = std::vsnprintf(line.data(), line.size(), format, args);
    if (n <= 0)
    {
        return 0;
    }
    std::string_view text(line.data());
    if (text.starts_with("libbpf: "))
    {
        text.remove_prefix(8);
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    {
        text.remove_suffix(1);
    }
    std::copy(text.begin(), text.end(), firstLibbpfLine.begin());
    firstLibbpfLine[text.size()] = '\0';
    return 0;
}

std::string errnoText(int error)
{
    return std::strerror(error);
}

std::string withLibbpfDetail(std::string message)
{
    if (firstLibbpfLine[0] != '\0')
    {
        message += " (libbpf: ";
        message += firstLibbpfLine.data();
        message += ")";
    }
    return message;
}

std::uint64_t monotonicNs() noexcept
{
    // clock_gettime through the vDSO: no system call.
    return static_cast<std::uint64_t>(cppc::monotonicNow().count());
}

template <typename T>
T load(const T& value,
       std::memory_order order = std::memory_order_relaxed) noexcept
{
    // The memory is shared with the program; atomic_ref wants it mutable.
    return std::atomic_ref<T>(const_cast<T&>(value)).load(order);
}

template <typename T>
void store(T& at, std::type_identity_t<T> value,
           std::memory_order order = std::memory_order_release) noexcept
{
    std::atomic_ref<T>(at).store(value, order);
}

void cpuRelax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

std::uint64_t slotValue(std::uint32_t generation, policies::Clamp clamp)
{
    const auto scale = static_cast<std::uint16_t>(CPPCGOV_UTIL_SCALE);
    const std::uint16_t max = std::min(clamp.max, scale);
    const std::uint16_t min = std::min(clamp.min, max);
    return (std::uint64_t{generation} << 32) | (std::uint64_t{max} << 16) |
           std::uint64_t{min};
}

// What the reader takes from a record inside one seqcount read.
struct Snapshot
{
    std::uint64_t busyNs = 0;
    std::uint64_t ownBusyNs = 0;
    std::uint64_t runStartNs = 0;
    std::uint64_t events = 0;
    std::uint64_t switches = 0;
    std::uint32_t queued = 0;
    std::uint16_t aggMin = 0;
    std::uint16_t aggMax = 0;
    std::uint32_t uncounted = 0;
    bool running = false; // a task other than idle runs, known by the program
    std::uint32_t runningTgid = 0;
    bool runningKthread = false;
    std::uint32_t runningSlots = 0;
    std::array<std::uint32_t, CPPCGOV_TASK_SLOTS> runningSlot{};
    std::array<std::uint32_t, CPPCGOV_TASK_SLOTS> runningGen{};
};

void copyRecord(const cppcgov_cpu& rec, Snapshot& s) noexcept
{
    s.busyNs = load(rec.busy_ns);
    s.ownBusyNs = load(rec.own_busy_ns);
    s.events = load(rec.events);
    s.switches = load(rec.switches);
    s.runStartNs = load(rec.run_start_ns);
    s.queued = load(rec.queued);
    s.aggMin = load(rec.agg_min);
    s.aggMax = load(rec.agg_max);
    s.uncounted = load(rec.uncounted);
    const cppcgov_running& run = rec.running;
    s.running = load(run.pid) != 0;
    s.runningTgid = load(run.tgid);
    s.runningKthread = load(run.kthread) != 0;
    s.runningSlots =
        s.running
            ? std::min<std::uint32_t>(load(run.res.nslots), CPPCGOV_TASK_SLOTS)
            : 0;
    for (std::uint32_t i = 0; i < s.runningSlots; ++i)
    {
        s.runningSlot[i] = load(run.res.slot[i]);
        s.runningGen[i] = load(run.res.gen[i]);
    }
}

} // namespace

struct SchedObserver::State
{
    sched_observe* skel = nullptr;
    std::uint32_t cpus = 0;
    cppcgov_cpu* records = nullptr;
    std::size_t recordsBytes = 0;
    std::uint64_t* slots = nullptr;
    std::size_t slotsBytes = 0;
    cppcgov_globals* globals = nullptr;
    int targetsFd = -1;
    ring_buffer* wakes = nullptr;
    std::size_t wakesTaken = 0;
    // When the wake-up was last armed (CLOCK_MONOTONIC ns): older records
    // are late ones of an earlier arming.
    std::uint64_t armedNs = 0;
    std::uint32_t ownTgid = 0;

    std::uint64_t epoch = 0;
    std::uint64_t lastNs = 0;
    bool started = false;
    std::vector<std::uint64_t> lastBusy;
    std::vector<std::uint64_t> lastOwnBusy;
    std::vector<std::uint64_t> lastEvents;
    std::vector<std::uint64_t> lastSwitches;
    // Each CPU's last complete reading, and how often it stood in.
    std::vector<Snapshot> lastRead;
    std::atomic<std::uint64_t> unread{0};
    // slotsSeen(): maxSlots entries per CPU, left untouched (and so not
    // backed by memory) beyond what a window fills.
    std::unique_ptr<std::uint32_t[]> seen;
    std::vector<std::uint32_t> seenCount;

    ~State()
    {
        if (records != nullptr)
        {
            ::munmap(records, recordsBytes);
        }
        if (slots != nullptr)
        {
            ::munmap(slots, slotsBytes);
        }
        ring_buffer__free(wakes);     // accepts nullptr
        sched_observe::destroy(skel); // detaches; accepts nullptr
    }

    void bumpHints() noexcept
    {
        store(globals->hints_gen, load(globals->hints_gen) + 1);
    }

    bool slotInUse(std::uint32_t slot, std::uint32_t generation) const noexcept
    {
        const std::uint64_t v = load(slots[slot], std::memory_order_acquire);
        return cppcgov_slot_in_use(v) && cppcgov_slot_gen(v) == generation;
    }

    void readCpu(std::uint32_t cpu, std::uint64_t endedEpoch, bool report,
                 ObservedCpu& out) noexcept;
};

namespace
{

void* mapArray(bpf_map* map, std::size_t& bytes, const char* what)
{
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t valueSize = (bpf_map__value_size(map) + 7U) & ~7U;
    bytes = (valueSize * bpf_map__max_entries(map) + page - 1) / page * page;
    void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                      bpf_map__fd(map), 0);
    if (at == MAP_FAILED)
    {
        throw ObserverUnavailable(std::string("mapping the BPF ") + what +
                                  " failed: " + errnoText(errno));
    }
    return at;
}

void attach(bpf_program* program, bpf_link*& link, const char* event)
{
    link = bpf_program__attach(program);
    if (link == nullptr)
    {
        const int error = errno;
        throw ObserverUnavailable(withLibbpfDetail(
            std::string("attaching to ") + event +
            " failed: " + errnoText(error) +
            (error == EPERM ? " (it needs CAP_BPF and CAP_PERFMON)" : "")));
    }
}

} // namespace

SchedObserver::SchedObserver(std::uint32_t cpus) :
    state_(std::make_unique<State>())
{
    if (::access(btfPath, R_OK) != 0)
    {
        throw ObserverUnavailable(
            std::string("the kernel has no BTF (") + btfPath +
            (errno == ENOENT ? " is missing)"
                             : " cannot be read: " + errnoText(errno) + ")"));
    }
    firstLibbpfLine[0] = '\0';
    libbpf_set_print(keepFirstLine);

    State& s = *state_;
    if (cpus == 0)
    {
        const int possible = libbpf_num_possible_cpus();
        if (possible <= 0)
        {
            throw ObserverUnavailable(
                "counting the possible CPUs failed: " + errnoText(-possible));
        }
        cpus = static_cast<std::uint32_t>(possible);
    }
    s.cpus = cpus;

    s.skel = sched_observe::open();
    if (s.skel == nullptr)
    {
        throw ObserverUnavailable(withLibbpfDetail(
            "opening the BPF program failed: " + errnoText(errno)));
    }
    if (const int err = bpf_map__set_max_entries(s.skel->maps.cpus, cpus))
    {
        throw ObserverUnavailable(
            "sizing the BPF per-CPU map failed: " + errnoText(-err));
    }
    if (const int err = sched_observe::load(s.skel))
    {
        const int error = -err;
        std::string message =
            "loading the BPF program failed: " + errnoText(error);
        if (error == ENOSYS)
        {
            throw ObserverUnavailable(
                message + " (there is no bpf() system call here)");
        }
        if (error == EPERM)
        {
            // libbpf's first complaint is then about RLIMIT_MEMLOCK, which
            // it could not raise either: the capabilities are what is
            // missing.
            throw ObserverUnavailable(
                message + " (it needs CAP_BPF and CAP_PERFMON)");
        }
        throw ObserverUnavailable(withLibbpfDetail(std::move(message)));
    }
    if (s.skel->bss == nullptr)
    {
        throw ObserverUnavailable(
            "the BPF program's globals could not be mapped");
    }
    s.globals = &s.skel->bss->globals;
    s.records = static_cast<cppcgov_cpu*>(
        mapArray(s.skel->maps.cpus, s.recordsBytes, "per-CPU map"));
    s.slots = static_cast<std::uint64_t*>(
        mapArray(s.skel->maps.slots, s.slotsBytes, "slot table"));
    s.targetsFd = bpf_map__fd(s.skel->maps.targets);
    s.ownTgid = static_cast<std::uint32_t>(::getpid());
    store(s.globals->own_tgid, s.ownTgid);
    s.wakes = ring_buffer__new(
        bpf_map__fd(s.skel->maps.wakes),
        [](void* context, void* data, std::size_t size) {
        auto& state = *static_cast<State*>(context);
        std::uint64_t at = 0;
        if (size >= sizeof(at))
        {
            std::memcpy(&at, data, sizeof(at));
        }
        state.wakesTaken += at >= state.armedNs ? 1 : 0;
        return 0;
        },
        &s, nullptr);
    if (s.wakes == nullptr)
    {
        throw ObserverUnavailable(withLibbpfDetail(
            "setting up the BPF wake-up ring failed: " + errnoText(errno)));
    }

    s.lastBusy.assign(cpus, 0);
    s.lastOwnBusy.assign(cpus, 0);
    s.lastEvents.assign(cpus, 0);
    s.lastSwitches.assign(cpus, 0);
    s.lastRead.assign(cpus, Snapshot{});
    s.seenCount.assign(cpus, 0);
    // Not value-initialized: pages stay untouched until a window fills them.
    s.seen.reset(new std::uint32_t[std::size_t{cpus} * maxSlots]);

    attach(s.skel->progs.onSwitch, s.skel->links.onSwitch, "sched_switch");
    attach(s.skel->progs.onWakeupExisting, s.skel->links.onWakeupExisting,
           "sched_wakeup");
    attach(s.skel->progs.onWakeupNew, s.skel->links.onWakeupNew,
           "sched_wakeup_new");
    attach(s.skel->progs.onMigrate, s.skel->links.onMigrate,
           "sched_migrate_task");
    attach(s.skel->progs.onFork, s.skel->links.onFork, "sched_process_fork");
    attach(s.skel->progs.onExit, s.skel->links.onExit, "sched_process_exit");
}

SchedObserver::~SchedObserver() = default;

std::uint32_t SchedObserver::cpus() const noexcept
{
    return state_->cpus;
}

void SchedObserver::State::readCpu(std::uint32_t cpu, std::uint64_t endedEpoch,
                                   bool report, ObservedCpu& out) noexcept
{
    cppcgov_cpu& rec = records[cpu];
    Snapshot snap;
    std::uint64_t now = 0;
    bool complete = false;
    for (int tries = 0; tries < maxReadTries && !complete; ++tries)
    {
        // Ordered after the epoch's store: a writer that has not yet
        // taken the record sees the new epoch, one that has makes seq odd.
        const std::uint32_t before = load(rec.seq, std::memory_order_seq_cst);
        if ((before & 1U) != 0)
        {
            cpuRelax();
            continue;
        }
        // The clock before the copy: a run read as going on has begun
        // before it or is not counted yet.
        now = monotonicNs();
        copyRecord(rec, snap);
        std::atomic_thread_fence(std::memory_order_acquire);
        complete = load(rec.seq) == before;
    }
    if (complete)
    {
        lastRead[cpu] = snap;
    }
    else
    {
        // Nothing later than the last reading is known: the runqueue as it
        // stood then, its run going on up to now.
        snap = lastRead[cpu];
        now = monotonicNs();
        unread.fetch_add(1, std::memory_order_relaxed);
    }

    // Busy time: what completed plus what runs now.
    const std::uint64_t runningNs =
        snap.runStartNs != 0 && now > snap.runStartNs
            ? now - snap.runStartNs
            : 0;
    // The running part is counted up to this reader's clock, while the
    // program ends a run at its own, taken before it takes the record: a
    // run read as going on up to `now` may have ended a little before.
    // The total then falls back; what was counted past the end is taken
    // off the next windows rather than counted twice.
    const auto since = [](std::uint64_t total, std::uint64_t& last) {
        const std::uint64_t delta = total > last ? total - last : 0;
        last = std::max(total, last);
        return delta;
    };
    const std::uint64_t busy = since(snap.busyNs + runningNs, lastBusy[cpu]);
    // The same for the daemon's own threads.
    const bool ownRuns = snap.running && snap.runningTgid == ownTgid;
    const std::uint64_t ownBusy =
        since(snap.ownBusyNs + (ownRuns ? runningNs : 0), lastOwnBusy[cpu]);

    // The window that ended: no writer touches it until its epoch comes
    // round again, two windows on, but one this read gave up waiting for
    // (the record held, unread above): what that one marks after this
    // read, the program clears when it starts the window again.
    cppcgov_window& w = rec.win[endedEpoch & 1U];
    std::uint32_t* const list = seen.get() + std::size_t{cpu} * maxSlots;
    std::uint32_t count = 0;
    policies::Clamp clamp;
    if (w.epoch == endedEpoch)
    {
        if (w.runnable != 0)
        {
            clamp = {w.min, w.max};
        }
        for (std::uint32_t sw = 0; sw < CPPCGOV_SUMMARY_WORDS; ++sw)
        {
            std::uint64_t summary = w.summary[sw];
            while (summary != 0)
            {
                const auto word = sw * 64U + static_cast<std::uint32_t>(
                                                 std::countr_zero(summary));
                summary &= summary - 1;
                std::uint64_t bits = w.bits[word];
                while (bits != 0)
                {
                    const std::uint32_t slot =
                        word * 64U +
                        static_cast<std::uint32_t>(std::countr_zero(bits));
                    bits &= bits - 1;
                    if (cppcgov_slot_in_use(load(slots[slot])))
                    {
                        list[count++] = slot;
                    }
                }
                w.bits[word] = 0;
            }
            w.summary[sw] = 0;
        }
    }
    else if (snap.queued > 0 || snap.uncounted > 0)
    {
        // Nothing happened: the window is the runqueue as it stands, its
        // uncounted tasks unhinted. With only the running task there, its
        // clamp is resolved afresh from the slot table, so a changed or
        // cleared hint shows at once.
        policies::Clamp resolved{0, 0};
        bool hinted = false;
        for (std::uint32_t i = 0; i < snap.runningSlots; ++i)
        {
            const std::uint32_t slot = snap.runningSlot[i];
            if (slot >= maxSlots || !slotInUse(slot, snap.runningGen[i]))
            {
                continue;
            }
            const std::uint64_t v = load(slots[slot]);
            resolved.min = std::max(resolved.min, cppcgov_slot_min(v));
            resolved.max = std::max(resolved.max, cppcgov_slot_max(v));
            hinted = true;
            list[count++] = slot;
        }
        std::sort(list, list + count);
        count =
            static_cast<std::uint32_t>(std::unique(list, list + count) - list);
        if (snap.uncounted > 0)
        {
            clamp = {snap.aggMin, policies::utilScale};
        }
        else if (snap.queued == 1 && snap.running)
        {
            clamp = hinted ? resolved : policies::Clamp{};
        }
        else
        {
            clamp = {snap.aggMin, snap.aggMax};
        }
    }
    seenCount[cpu] = report ? count : 0;
    out.busyNs = busy;
    out.ownBusyNs = std::min(ownBusy, busy);
    out.events = snap.events - lastEvents[cpu];
    lastEvents[cpu] = snap.events;
    out.switches = snap.switches - lastSwitches[cpu];
    lastSwitches[cpu] = snap.switches;
    out.clamp = clamp;
    out.othersRunning = snap.running && snap.runningTgid != ownTgid &&
                        !snap.runningKthread;
}

std::uint64_t SchedObserver::sample(std::span<ObservedCpu> out) noexcept
{
    State& s = *state_;
    const std::uint64_t now = monotonicNs();
    const std::uint64_t ended = s.epoch;
    s.epoch = ended + 1;
    store(s.globals->window_epoch, s.epoch, std::memory_order_seq_cst);

    const bool report = s.started;
    ObservedCpu ignored;
    for (std::uint32_t cpu = 0; cpu < s.cpus; ++cpu)
    {
        ObservedCpu& o = cpu < out.size() ? out[cpu] : ignored;
        s.readCpu(cpu, ended, report, o);
        if (!report)
        {
            o = ObservedCpu{};
        }
    }
    const std::uint64_t length = report && now > s.lastNs ? now - s.lastNs : 0;
    s.lastNs = now;
    s.started = true;
    return length;
}

std::span<const std::uint32_t> SchedObserver::slotsSeen(
    std::uint32_t cpu) const noexcept
{
    const State& s = *state_;
    if (cpu >= s.cpus)
    {
        return {};
    }
    return {s.seen.get() + std::size_t{cpu} * maxSlots, s.seenCount[cpu]};
}

void SchedObserver::setSlotClamp(std::uint32_t slot,
                                 policies::Clamp clamp) noexcept
{
    State& s = *state_;
    if (slot >= maxSlots)
    {
        return;
    }
    std::uint32_t generation = cppcgov_slot_gen(load(s.slots[slot]));
    if ((generation & 1U) == 0)
    {
        ++generation;
    }
    store(s.slots[slot], slotValue(generation, clamp));
    s.bumpHints();
}

void SchedObserver::clearSlot(std::uint32_t slot) noexcept
{
    State& s = *state_;
    if (slot >= maxSlots)
    {
        return;
    }
    const std::uint64_t v = load(s.slots[slot]);
    if (!cppcgov_slot_in_use(v))
    {
        return;
    }
    store(s.slots[slot], slotValue(cppcgov_slot_gen(v) + 1, {}));
    s.bumpHints();
}

namespace
{

cppcgov_target_key targetKey(const HintTarget& target)
{
    return {static_cast<__u32>(target.pid),
            target.wholeProcess ? CPPCGOV_TARGET_PROCESS
                                : CPPCGOV_TARGET_THREAD};
}

} // namespace

std::error_code SchedObserver::bindTarget(const HintTarget& target,
                                          std::uint32_t slot) noexcept
{
    State& s = *state_;
    if (slot >= maxSlots || target.pid <= 0)
    {
        return {EINVAL, std::system_category()};
    }
    if (!cppcgov_slot_in_use(load(s.slots[slot])))
    {
        setSlotClamp(slot, {});
    }
    const cppcgov_target_key key = targetKey(target);
    const cppcgov_target_value value{slot,
                                     cppcgov_slot_gen(load(s.slots[slot]))};
    if (bpf_map_update_elem(s.targetsFd, &key, &value, BPF_ANY) != 0)
    {
        return {errno, std::system_category()};
    }
    s.bumpHints();
    return {};
}

std::error_code SchedObserver::unbindTarget(const HintTarget& target) noexcept
{
    State& s = *state_;
    const cppcgov_target_key key = targetKey(target);
    if (bpf_map_delete_elem(s.targetsFd, &key) != 0)
    {
        return {errno, std::system_category()};
    }
    s.bumpHints();
    return {};
}

int SchedObserver::wakeFd() const noexcept
{
    return ring_buffer__epoll_fd(state_->wakes);
}

void SchedObserver::armWake(bool armed) noexcept
{
    State& s = *state_;
    if (armed)
    {
        s.armedNs = monotonicNs();
    }
    store(s.globals->wake_armed, armed ? 1U : 0U, std::memory_order_seq_cst);
    // The reads that follow an arming (runningOther()) must not be taken
    // before the flag is seen: a task that woke before it is then found
    // running, or its wake-up fires.
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool SchedObserver::runningOther(std::uint32_t cpu) const noexcept
{
    const State& s = *state_;
    if (cpu >= s.cpus)
    {
        return false;
    }
    const cppcgov_running& run = s.records[cpu].running;
    return load(run.pid, std::memory_order_seq_cst) != 0 &&
           load(run.tgid, std::memory_order_seq_cst) != s.ownTgid &&
           load(run.kthread, std::memory_order_seq_cst) == 0;
}

std::size_t SchedObserver::takeWakes() noexcept
{
    State& s = *state_;
    s.wakesTaken = 0;
    (void)ring_buffer__consume(s.wakes);
    return s.wakesTaken;
}

ObserverStats SchedObserver::stats() const noexcept
{
    const State& s = *state_;
    ObserverStats total;
    for (std::uint32_t cpu = 0; cpu < s.cpus; ++cpu)
    {
        const cppcgov_cpu& rec = s.records[cpu];
        total.events += load(rec.events);
        total.missed += load(rec.missed);
        total.resets += load(rec.resets);
        total.anomalies += load(rec.anomalies);
        total.overcounts += load(rec.overcounts);
    }
    total.unread = s.unread.load(std::memory_order_relaxed);
    return total;
}

} // namespace cppcgov::daemon

#else // CPPCGOV_HAVE_BPF

namespace cppcgov::daemon
{

struct SchedObserver::State
{};

SchedObserver::SchedObserver(std::uint32_t /*cpus*/)
{
    throw ObserverUnavailable("cppcgovd was built without BPF support");
}

SchedObserver::~SchedObserver() = default;

std::uint32_t SchedObserver::cpus() const noexcept
{
    return 0;
}

std::uint64_t SchedObserver::sample(std::span<ObservedCpu> /*out*/) noexcept
{
    return 0;
}

std::span<const std::uint32_t> SchedObserver::slotsSeen(
    std::uint32_t /*cpu*/) const noexcept
{
    return {};
}

void SchedObserver::setSlotClamp(std::uint32_t /*slot*/,
                                 policies::Clamp /*clamp*/) noexcept
{}

void SchedObserver::clearSlot(std::uint32_t /*slot*/) noexcept {}

std::error_code SchedObserver::bindTarget(const HintTarget& /*target*/,
                                          std::uint32_t /*slot*/) noexcept
{
    return {ENOSYS, std::system_category()};
}

std::error_code SchedObserver::unbindTarget(
    const HintTarget& /*target*/) noexcept
{
    return {ENOSYS, std::system_category()};
}

int SchedObserver::wakeFd() const noexcept
{
    return -1;
}

void SchedObserver::armWake(bool /*armed*/) noexcept {}

bool SchedObserver::runningOther(std::uint32_t /*cpu*/) const noexcept
{
    return false;
}

std::size_t SchedObserver::takeWakes() noexcept
{
    return 0;
}

ObserverStats SchedObserver::stats() const noexcept
{
    return {};
}

} // namespace cppcgov::daemon

#endif // CPPCGOV_HAVE_BPF
