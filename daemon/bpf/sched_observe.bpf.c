// SPDX-License-Identifier: GPL-2.0-only OR Apache-2.0
/* The scheduler observer: per CPU, busy time in ns (and of it the daemon's
 * own) and the uclamp-style aggregation of the tasks runnable there, kept
 * from the scheduler's own events (tp_btf) in memory the daemon maps
 * (sched_observe_abi.h); and, while the daemon's tick sleeps long, a
 * ring-buffer record that wakes it when a task of another process wakes.
 *
 * CO-RE without a generated vmlinux.h: the few kernel fields read are
 * declared below with preserve_access_index, and libbpf relocates them
 * against the running kernel's BTF.
 *
 * Locking: sched_switch and sched_wakeup(_new) for CPU X run under X's
 * runqueue lock, sched_migrate_task under the source runqueue's lock. So a
 * CPU's record is written by one CPU at a time; migrate only takes the task
 * off its source, and the task is counted on its new CPU at its next wakeup
 * or switch-in there. */
#include "sched_observe_abi.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <linux/bpf.h>
#include <stdbool.h>

/* Dual-licensed: the kernel lets only GPL-compatible programs attach to
 * tp_btf tracepoints and call the helpers used here. */
char LICENSE[] SEC("license") = "GPL";

/* --- the kernel's types, as far as they are read ------------------------ */

struct rq;

/* A task's CFS runqueue (of its group, on its CPU) and that CPU's runqueue
 * (with group scheduling: the kernels that have `rq` here). At the top,
 * the CFS tasks queued below it, and of them those that can run: a CFS
 * task that sleeps may stay queued until its lag is spent (delayed
 * dequeue, 6.12 and later), counted in h_nr_queued (6.14 and later) but
 * not in h_nr_runnable, or in h_nr_delayed (6.13). */
struct cfs_rq
{
    struct rq* rq;
    unsigned int h_nr_queued;
    unsigned int h_nr_runnable;
    unsigned int h_nr_delayed;
} __attribute__((preserve_access_index));

/* A CPU's runqueue: its count of queued tasks (every class, the running
 * one included; not the tasks of throttled groups), its CPU and its CFS
 * runqueue. */
struct rq
{
    unsigned int nr_running;
    int cpu;
    struct cfs_rq cfs;
} __attribute__((preserve_access_index));

struct sched_entity
{
    struct cfs_rq* cfs_rq;
    unsigned char sched_delayed; /* 6.12 and later */
} __attribute__((preserve_access_index));

struct thread_info
{
    unsigned int cpu; /* 5.16 and later */
} __attribute__((preserve_access_index));

struct task_struct
{
    struct thread_info thread_info;
    unsigned int __state; /* 5.14 and later */
    long state;           /* before 5.14 */
    unsigned int cpu;     /* before 5.16 */
    int on_rq;            /* 0: not queued; 2: queued, being migrated */
    unsigned int flags;
    int pid;
    int tgid;
    struct sched_entity se;
} __attribute__((preserve_access_index));

/* task_struct.flags: a kernel thread (the same bit in every kernel). */
#define CPPCGOV_PF_KTHREAD 0x00200000u

/* What the kernel has on `cpu`'s runqueue, reached through `t`, a task on
 * it (a task's CFS runqueue is its group's on its CPU whatever its class),
 * with `cpu`'s runqueue lock held: `queued`, every task it counts there;
 * `runnable`, of them those that can run (not a sleeping task left queued
 * by delayed dequeue). Each -1 when this kernel does not tell (no group
 * scheduling; `runnable` on 6.12, whose delayed tasks are not counted) or
 * the runqueue reached is another CPU's. (Not the per-CPU `runqueues`
 * symbol: bpf_this_cpu_ptr() needs its address from kallsyms, which
 * kernels without CONFIG_KALLSYMS_ALL do not list, and a program that uses
 * it then does not load.) */
struct kernel_count
{
    long queued;
    long runnable;
};

static __always_inline struct kernel_count kernelCount(struct task_struct* t,
                                                       __u32 cpu)
{
    struct kernel_count n = {-1, -1};
    if (!bpf_core_field_exists(((struct cfs_rq*)0)->rq) ||
        !bpf_core_field_exists(((struct rq*)0)->cpu))
        return n;
    struct rq* rq = BPF_CORE_READ(t, se.cfs_rq, rq);
    if (!rq || (__u32)BPF_CORE_READ(rq, cpu) != cpu)
        return n;
    n.queued = BPF_CORE_READ(rq, nr_running);
    long delayed = -1;
    if (bpf_core_field_exists(rq->cfs.h_nr_runnable) &&
        bpf_core_field_exists(rq->cfs.h_nr_queued))
        delayed = (long)BPF_CORE_READ(rq, cfs.h_nr_queued) -
                  (long)BPF_CORE_READ(rq, cfs.h_nr_runnable);
    else if (bpf_core_field_exists(rq->cfs.h_nr_delayed))
        delayed = BPF_CORE_READ(rq, cfs.h_nr_delayed);
    else if (!bpf_core_field_exists(t->se.sched_delayed))
        delayed = 0;
    if (delayed >= 0 && delayed <= n.queued)
        n.runnable = n.queued - delayed;
    return n;
}

static __always_inline __u32 taskCpu(struct task_struct* t)
{
    if (bpf_core_field_exists(t->thread_info.cpu))
        return BPF_CORE_READ(t, thread_info.cpu);
    return BPF_CORE_READ(t, cpu);
}

/* TASK_RUNNING is 0 in every kernel. */
static __always_inline int taskRunning(struct task_struct* t)
{
    if (bpf_core_field_exists(t->__state))
        return BPF_CORE_READ(t, __state) == 0;
    return BPF_CORE_READ(t, state) == 0;
}

/* --- maps --------------------------------------------------------------- */

/* Sized to the CPUs the daemon reports before load. */
struct
{
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct cppcgov_cpu);
} cpus SEC(".maps");

struct
{
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, CPPCGOV_MAX_SLOTS);
    __type(key, __u32);
    __type(value, __u64);
} slots SEC(".maps");

struct
{
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, struct cppcgov_target_key);
    __type(value, struct cppcgov_target_value);
} targets SEC(".maps");

/* A task's bookkeeping. */
struct task_rec
{
    /* Where it is counted: CPU + 1 (0: nowhere), that CPU's generation
     * then, and the clamp it was counted with. */
    __u32 queued_cpu1;
    __u32 queued_gen;
    __u16 qmin;
    __u16 qmax;
    __u32 pad;
    struct cppcgov_inherited inherited;
    struct cppcgov_resolution res;
};

struct
{
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct task_rec);
} tasks SEC(".maps");

/* When a task woke the daemon's long-sleeping tick (globals.wake_armed:
 * bpf_ktime_get_ns); a record wakes the tick through the ring buffer's fd. */
struct
{
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4096);
} wakes SEC(".maps");

struct cppcgov_globals globals;

/* --- helpers ------------------------------------------------------------ */

static __always_inline struct cppcgov_cpu* cpuRecord(__u32 cpu)
{
    return bpf_map_lookup_elem(&cpus, &cpu);
}

static __always_inline void countMissed(void)
{
    struct cppcgov_cpu* rec = cpuRecord(bpf_get_smp_processor_id());
    if (rec)
        __sync_fetch_and_add(&rec->missed, 1);
}

/* The seqcount: the result of the fetch-add is used, so the add is a
 * fully ordered atomic (arm64: LDADDAL); the epoch is read after it. */
static __always_inline void writeBegin(struct cppcgov_cpu* rec)
{
    __u32 old = __sync_fetch_and_add(&rec->seq, 1);
    if (old & 1)
        __sync_fetch_and_add(&rec->anomalies, 1);
}

/* The result is used here too: an add whose result is unused is a plain
 * BPF_ADD, which arm64's JIT emits without ordering, and the reader could
 * see the count even before the record's stores. */
static __always_inline void writeEnd(struct cppcgov_cpu* rec)
{
    __u32 old = __sync_fetch_and_add(&rec->seq, 1);
    if (!(old & 1))
        __sync_fetch_and_add(&rec->anomalies, 1);
}

static __always_inline __u64 slotEntry(__u32 slot)
{
    __u64* v = bpf_map_lookup_elem(&slots, &slot);
    return v ? *(volatile __u64*)v : 0;
}

static __always_inline void markSlot(struct cppcgov_window* w, __u32 slot)
{
    if (slot >= CPPCGOV_MAX_SLOTS)
        return;
    __u32 word = slot / 64;
    w->bits[word & (CPPCGOV_SLOT_WORDS - 1)] |= 1ull << (slot % 64);
    w->summary[(word / 64) & (CPPCGOV_SUMMARY_WORDS - 1)] |=
        1ull << (word % 64);
}

static __always_inline void markResolution(struct cppcgov_window* w,
                                           struct cppcgov_resolution* res)
{
    for (__u32 i = 0; i < CPPCGOV_TASK_SLOTS; i++)
    {
        if (i >= res->nslots)
            break;
        markSlot(w, res->slot[i]);
    }
}

static __always_inline __u64 hintsKey(void)
{
    return *(volatile __u64*)&globals.hints_gen + 1;
}

/* The key to resolve with: read with a fully ordered atomic (its result
 * used), so that the slot table and the targets are read after it and a
 * resolution never carries a new key with an old slot (the daemon stores
 * the slots, then the generation with release). Only on the way to a
 * resolution: a plain read says whether one is needed. */
static __always_inline __u64 orderedHintsKey(void)
{
    /* An add of a constant 0 would be folded into a plain load. */
    __u64 zero = 0;
    asm volatile("" : "+r"(zero));
    return __sync_fetch_and_add(&globals.hints_gen, zero) + 1;
}

static __always_inline __u32 bucketOf(__u16 value)
{
    __u32 b = value / CPPCGOV_BUCKET_UNITS;
    /* Keeps the compiler from testing `value` instead of `b`, which the
     * verifier could not connect to the index. */
    asm volatile("" : "+r"(b));
    if (b >= CPPCGOV_BUCKETS)
        b = CPPCGOV_BUCKETS - 1;
    return b;
}

static __always_inline void bucketAdd(__u32* tasks, __u16* values, __u16* agg,
                                      __u16 value)
{
    __u32 b = bucketOf(value);
    tasks[b]++;
    if (values[b] < value)
        values[b] = value;
    if (*agg < values[b])
        *agg = values[b];
}

/* Returns 0 when the bucket was already empty (bookkeeping out of step). */
static __always_inline int bucketRemove(__u32* tasks, __u16* values, __u16* agg,
                                        __u16 value)
{
    __u32 b = bucketOf(value);
    if (tasks[b] == 0)
        return 0;
    if (--tasks[b] > 0)
        return 1;
    values[b] = 0;
    /* The aggregate: the value of the highest bucket still in use. */
    __u16 top = 0;
    for (int i = CPPCGOV_BUCKETS - 1; i >= 0; i--)
    {
        if (tasks[i])
        {
            top = values[i];
            break;
        }
    }
    *agg = top;
    return 1;
}

static __always_inline void resetBuckets(struct cppcgov_cpu* rec)
{
    for (__u32 i = 0; i < CPPCGOV_BUCKETS; i++)
    {
        rec->min_tasks[i] = 0;
        rec->max_tasks[i] = 0;
        rec->min_value[i] = 0;
        rec->max_value[i] = 0;
    }
    rec->queued = 0;
    rec->agg_min = 0;
    rec->agg_max = 0;
    rec->generation++;
}

/* Adds (slot, generation) to the resolution unless it is there already. */
static __always_inline void addSlot(struct cppcgov_resolution* res, __u32 slot,
                                    __u32 gen, __u64 entry)
{
    __u32 n = res->nslots;
    for (__u32 i = 0; i < CPPCGOV_TASK_SLOTS; i++)
    {
        if (i >= n)
            break;
        if (res->slot[i] == slot)
            return;
    }
    if (n >= CPPCGOV_TASK_SLOTS)
        return;
    res->slot[n] = slot;
    res->gen[n] = gen;
    res->nslots = n + 1;
    __u16 mn = cppcgov_slot_min(entry);
    __u16 mx = cppcgov_slot_max(entry);
    if (n == 0)
    {
        res->min = mn;
        res->max = mx;
        return;
    }
    if (res->min < mn)
        res->min = mn;
    if (res->max < mx)
        res->max = mx;
}

static __always_inline void addTarget(struct cppcgov_resolution* res, __u32 id,
                                      __u32 kind)
{
    struct cppcgov_target_key key = {.id = id, .kind = kind};
    struct cppcgov_target_value* v = bpf_map_lookup_elem(&targets, &key);
    if (!v)
        return;
    __u32 slot = v->slot;
    __u32 gen = v->generation;
    __u64 entry = slotEntry(slot);
    if (cppcgov_slot_in_use(entry) && cppcgov_slot_gen(entry) == gen)
        addSlot(res, slot, gen, entry);
}

/* Resolves a task's hints afresh: the slots of its thread and its thread
 * group, and those it inherited, as far as they keep their generation. */
static __always_inline void resolveInto(
    struct cppcgov_resolution* res, __u32 pid, __u32 tgid,
    struct cppcgov_inherited* inh, __u64 key)
{
    res->key = key;
    res->nslots = 0;
    res->min = 0;
    res->max = CPPCGOV_UTIL_SCALE;
    addTarget(res, pid, CPPCGOV_TARGET_THREAD);
    addTarget(res, tgid, CPPCGOV_TARGET_PROCESS);
    for (__u32 i = 0; i < CPPCGOV_INHERITED; i++)
    {
        if (i >= inh->n)
            break;
        __u32 slot = inh->slot[i];
        __u64 entry = slotEntry(slot);
        if (cppcgov_slot_in_use(entry) &&
            cppcgov_slot_gen(entry) == inh->gen[i])
            addSlot(res, slot, inh->gen[i], entry);
    }
}

/* The task's record, its hints re-resolved when one changed since. */
static __always_inline struct task_rec* resolve(struct task_struct* t)
{
    struct task_rec* r =
        bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!r)
    {
        countMissed();
        return 0;
    }
    if (r->res.key != hintsKey())
        resolveInto(&r->res, (__u32)BPF_CORE_READ(t, pid),
                    (__u32)BPF_CORE_READ(t, tgid), &r->inherited,
                    orderedHintsKey());
    return r;
}

/* Takes the task off the CPU it is counted on. */
static __always_inline void dequeue(struct task_rec* r)
{
    if (r->queued_cpu1 == 0)
        return;
    struct cppcgov_cpu* rec = cpuRecord(r->queued_cpu1 - 1);
    r->queued_cpu1 = 0;
    if (!rec || rec->generation != r->queued_gen)
        return; /* reset since: nothing of it is left there */
    int ok =
        bucketRemove(rec->min_tasks, rec->min_value, &rec->agg_min, r->qmin);
    ok &= bucketRemove(rec->max_tasks, rec->max_value, &rec->agg_max, r->qmax);
    if (!ok || rec->queued == 0)
        __sync_fetch_and_add(&rec->anomalies, 1);
    else
        rec->queued--;
}

static __always_inline void countClamp(struct cppcgov_cpu* rec, __u16 min,
                                       __u16 max)
{
    bucketAdd(rec->min_tasks, rec->min_value, &rec->agg_min, min);
    bucketAdd(rec->max_tasks, rec->max_value, &rec->agg_max, max);
}

/* Counts the task on `cpu` (whose record is `rec`, locked) with its
 * current clamp, unless it is already. */
static __always_inline void count(struct task_rec* r, __u32 cpu,
                                  struct cppcgov_cpu* rec)
{
    if (r->queued_cpu1 == cpu + 1 && r->queued_gen == rec->generation &&
        r->qmin == r->res.min && r->qmax == r->res.max)
        return;
    if (r->queued_cpu1 != 0 && r->queued_cpu1 != cpu + 1)
        __sync_fetch_and_add(&rec->anomalies, 1);
    dequeue(r);
    countClamp(rec, r->res.min, r->res.max);
    rec->queued++;
    r->queued_cpu1 = cpu + 1;
    r->queued_gen = rec->generation;
    r->qmin = r->res.min;
    r->qmax = r->res.max;
}

/* A changed hint applies to the running task at once: when a window
 * starts on an event that is not its own, it is resolved again from the
 * CPU's copy and counted anew. Its task record takes the new count at its
 * switch-out (takeRunningCount). */
static __always_inline void refreshRunning(struct cppcgov_cpu* rec)
{
    struct cppcgov_running* run = &rec->running;
    if (run->pid == 0 || !run->counted || run->res.key == hintsKey())
        return;
    resolveInto(&run->res, run->pid, run->tgid, &run->inherited,
                orderedHintsKey());
    if (run->res.min == run->qmin && run->res.max == run->qmax)
        return;
    int ok =
        bucketRemove(rec->min_tasks, rec->min_value, &rec->agg_min, run->qmin);
    ok &=
        bucketRemove(rec->max_tasks, rec->max_value, &rec->agg_max, run->qmax);
    if (!ok)
    {
        __sync_fetch_and_add(&rec->anomalies, 1);
        run->counted = 0;
        return;
    }
    countClamp(rec, run->res.min, run->res.max);
    run->qmin = run->res.min;
    run->qmax = run->res.max;
    run->dirty = 1;
}

static __always_inline void takeRunningCount(struct task_rec* r, __u32 cpu,
                                             struct cppcgov_cpu* rec)
{
    struct cppcgov_running* run = &rec->running;
    if (!run->dirty || r->queued_cpu1 != cpu + 1 ||
        r->queued_gen != rec->generation)
        return;
    r->qmin = run->qmin;
    r->qmax = run->qmax;
    run->dirty = 0;
}

/* Keeps the CPU's copy of its running task in step with its record. */
static __always_inline void copyRunning(struct task_rec* r, __u32 cpu,
                                        struct cppcgov_cpu* rec)
{
    struct cppcgov_running* run = &rec->running;
    run->counted = r->queued_cpu1 == cpu + 1;
    run->dirty = 0;
    run->qmin = r->qmin;
    run->qmax = r->qmax;
    run->inherited = r->inherited;
    run->res = r->res;
}

/* Tasks runnable on the CPU but not counted count as unhinted: no floor,
 * the full ceiling. */
static __always_inline void liftForUncounted(struct cppcgov_window* w)
{
    if (!w->runnable)
    {
        w->runnable = 1;
        w->min = 0;
    }
    w->max = CPPCGOV_UTIL_SCALE;
}

/* Clears what a window's bitmap still holds from an earlier epoch. The
 * daemon clears it as it reads the window, but a writer it did not wait
 * for (a read it gave up on, the record held) may mark it after that, or
 * after the daemon found it not yet started; those marks are no slot of
 * the epoch that starts. Mostly the bitmap is clear already: the summary
 * words' loads and nothing more. */
static __always_inline void clearStaleMarks(struct cppcgov_window* w)
{
    for (__u32 sw = 0; sw < CPPCGOV_SUMMARY_WORDS; sw++)
    {
        __u64 summary = w->summary[sw];
        if (!summary)
            continue;
        w->summary[sw] = 0;
        for (__u32 bit = 0; bit < 64; bit++)
        {
            if (summary & (1ull << bit))
                w->bits[(sw * 64 + bit) & (CPPCGOV_SLOT_WORDS - 1)] = 0;
        }
    }
}

/* The window of the current epoch, started from the CPU's aggregate at
 * its first event in the epoch (writers of one record are serialised by
 * its runqueue's lock, and the daemon reads a window only once its epoch
 * has ended, so nothing else touches it as it starts). */
static __always_inline struct cppcgov_window* windowOf(struct cppcgov_cpu* rec)
{
    __u64 epoch = *(volatile __u64*)&globals.window_epoch;
    struct cppcgov_window* w = &rec->win[epoch & 1];
    if (w->epoch != epoch)
    {
        clearStaleMarks(w);
        refreshRunning(rec);
        w->epoch = epoch;
        w->min = rec->agg_min;
        w->max = rec->agg_max;
        w->runnable = rec->queued > 0;
        if (rec->uncounted > 0)
            liftForUncounted(w);
        if (rec->running.pid != 0)
            markResolution(w, &rec->running.res);
    }
    return w;
}

/* Makes sure the task is counted on `cpu` (whose record is `rec`, locked)
 * with its current clamp, and raises the window with it. */
static __always_inline struct task_rec* ensureCounted(
    struct task_struct* t, __u32 cpu, struct cppcgov_cpu* rec,
    struct cppcgov_window* w)
{
    struct task_rec* r = resolve(t);
    if (!r)
        return 0;
    __u32 pid = (__u32)BPF_CORE_READ(t, pid);
    int running = rec->running.pid != 0 && rec->running.pid == pid;
    if (running)
        takeRunningCount(r, cpu, rec);
    count(r, cpu, rec);
    if (running)
        copyRunning(r, cpu, rec);
    if (!w->runnable)
    {
        w->runnable = 1;
        w->min = r->res.min;
        w->max = r->res.max;
    }
    else
    {
        if (w->min < r->res.min)
            w->min = r->res.min;
        if (w->max < r->res.max)
            w->max = r->res.max;
    }
    markResolution(w, &r->res);
    return r;
}

/* The switch-out of `prev`: the running copy of the CPU goes. */
static __always_inline void switchOut(struct task_struct* prev, __u32 cpu,
                                      struct cppcgov_cpu* rec,
                                      struct cppcgov_window* w, bool stays)
{
    struct task_rec* r = bpf_task_storage_get(&tasks, prev, 0, 0);
    if (r)
        takeRunningCount(r, cpu, rec);
    rec->running.pid = 0;
    rec->running.counted = 0;
    rec->running.dirty = 0;
    if (stays)
        ensureCounted(prev, cpu, rec, w);
    else if (r)
        dequeue(r);
}

static __always_inline void switchIn(struct task_struct* next, __u32 cpu,
                                     struct cppcgov_cpu* rec,
                                     struct cppcgov_window* w)
{
    struct task_rec* r = ensureCounted(next, cpu, rec, w);
    if (!r)
        return;
    rec->running.pid = (__u32)BPF_CORE_READ(next, pid);
    rec->running.tgid = (__u32)BPF_CORE_READ(next, tgid);
    rec->running.kthread =
        (BPF_CORE_READ(next, flags) & CPPCGOV_PF_KTHREAD) != 0;
    copyRunning(r, cpu, rec);
}

/* The cross-check against the kernel's own count at a switch to `next`,
 * after `prev`'s switch-out and `next`'s count, under the runqueue lock.
 * More tasks counted here than the kernel has runnable means that one left
 * without an event this program sees (the kernel does not trace some
 * switches of some tasks; a throttled group; a task whose record could not
 * be reached): the CPU's bookkeeping starts afresh (its generation moves,
 * as at the idle reset) from `prev` if it stays runnable and `next`, or
 * from `next` alone if that is still too many (`prev` was the one: a task
 * dequeued as its group was throttled still reads TASK_RUNNING). Fewer is
 * normal (a task migrated in is counted at its next wakeup or switch-in
 * here; so are the CPU's other tasks after a reset): the difference is
 * kept as the CPU's uncounted tasks, and lifts the window. */
static __always_inline void checkCount(
    struct task_struct* prev, bool prevStays, struct task_struct* next,
    __u32 cpu, struct cppcgov_cpu* rec, struct cppcgov_window* w)
{
    struct kernel_count kernel = kernelCount(next, cpu);
    long runnable = kernel.runnable >= 0 ? kernel.runnable : kernel.queued;
    if (runnable >= 0 && rec->queued > (__u64)runnable)
    {
        __sync_fetch_and_add(&rec->overcounts, 1);
        resetBuckets(rec);
        if (prevStays)
            ensureCounted(prev, cpu, rec, w);
        switchIn(next, cpu, rec, w);
        if (rec->queued > (__u64)runnable)
        {
            resetBuckets(rec);
            switchIn(next, cpu, rec, w);
        }
    }
    /* Only an exact count tells of tasks not counted: a kernel that keeps
     * sleeping tasks queued without saying how many would lift every
     * window they stay in. */
    rec->uncounted = 0;
    if (kernel.runnable > (long)rec->queued)
    {
        rec->uncounted = (__u32)(kernel.runnable - (long)rec->queued);
        liftForUncounted(w);
    }
}

/* `next` woke up, or was switched in: wakes the daemon's sleeping tick
 * (globals.wake_armed) unless `next` is a kernel thread or one of the
 * daemon's own. The switch-in catches a task that woke before the arming
 * onto a CPU then running one of the daemon's threads. Two CPUs may both
 * see it armed, and one that saw an earlier arming may write late: the
 * record holds the time, and the daemon drops what is older than its
 * arming. */
static __always_inline void wakeTick(struct task_struct* next)
{
    volatile __u32* armed = &globals.wake_armed;
    if (*armed == 0)
        return;
    if ((BPF_CORE_READ(next, flags) & CPPCGOV_PF_KTHREAD) != 0 ||
        (__u32)BPF_CORE_READ(next, tgid) == globals.own_tgid)
        return;
    *armed = 0;
    __u64 now = bpf_ktime_get_ns();
    bpf_ringbuf_output(&wakes, &now, sizeof(now), 0);
}

/* --- programs ----------------------------------------------------------- */

SEC("tp_btf/sched_switch")
int BPF_PROG(onSwitch, bool preempt, struct task_struct* prev,
             struct task_struct* next)
{
    __u32 cpu = bpf_get_smp_processor_id();
    struct cppcgov_cpu* rec = cpuRecord(cpu);
    if (!rec)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    writeBegin(rec);
    struct cppcgov_window* w = windowOf(rec);
    __sync_fetch_and_add(&rec->events, 1);
    rec->switches += 1; /* only this CPU writes it, under its runqueue lock */
    if (rec->run_start_ns != 0 && now > rec->run_start_ns)
    {
        rec->busy_ns += now - rec->run_start_ns;
        if (BPF_CORE_READ(prev, pid) != 0 &&
            (__u32)BPF_CORE_READ(prev, tgid) == globals.own_tgid)
            rec->own_busy_ns += now - rec->run_start_ns;
    }
    rec->run_start_ns = 0;

    /* Switch-out: a task that sleeps or died leaves the runqueue; one that
     * was preempted or is still TASK_RUNNING stays on it. */
    bool prevStays = false;
    if (BPF_CORE_READ(prev, pid) != 0)
    {
        prevStays = preempt || taskRunning(prev);
        switchOut(prev, cpu, rec, w, prevStays);
    }

    if (BPF_CORE_READ(next, pid) == 0)
    {
        /* Idle: nothing is runnable here any more. */
        rec->running.pid = 0;
        rec->uncounted = 0;
        if (rec->queued != 0)
        {
            __sync_fetch_and_add(&rec->resets, 1);
            resetBuckets(rec);
        }
    }
    else
    {
        rec->run_start_ns = now;
        switchIn(next, cpu, rec, w);
        checkCount(prev, prevStays, next, cpu, rec, w);
    }
    writeEnd(rec);
    if (BPF_CORE_READ(next, pid) != 0)
        wakeTick(next);
    return 0;
}

static __always_inline int onWakeup(struct task_struct* p)
{
    __u32 cpu = taskCpu(p);
    struct cppcgov_cpu* rec = cpuRecord(cpu);
    if (!rec)
        return 0;
    writeBegin(rec);
    struct cppcgov_window* w = windowOf(rec);
    __sync_fetch_and_add(&rec->events, 1);
    ensureCounted(p, cpu, rec, w);
    writeEnd(rec);
    wakeTick(p);
    return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(onWakeupExisting, struct task_struct* p)
{
    return onWakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(onWakeupNew, struct task_struct* p)
{
    return onWakeup(p);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(onMigrate, struct task_struct* p, int destCpu)
{
    (void)destCpu;
    struct task_rec* r = bpf_task_storage_get(&tasks, p, 0, 0);
    if (r && r->queued_cpu1 != 0)
    {
        struct cppcgov_cpu* rec = cpuRecord(r->queued_cpu1 - 1);
        if (!rec)
        {
            r->queued_cpu1 = 0;
            return 0;
        }
        if (rec->generation == r->queued_gen)
        {
            writeBegin(rec);
            /* The window starts before the task leaves: it was runnable
             * here. */
            windowOf(rec);
            __sync_fetch_and_add(&rec->events, 1);
            dequeue(r);
            writeEnd(rec);
            return 0;
        }
        dequeue(r); /* its count went with a reset */
    }
    /* A queued task (not one waking up) that its source CPU did not count:
     * one of that CPU's uncounted tasks goes. (Its new CPU's lock is not
     * held: that CPU counts it at its next switch.) */
    if (BPF_CORE_READ(p, on_rq) == 0)
        return 0;
    struct cppcgov_cpu* src = cpuRecord(taskCpu(p));
    if (!src || src->uncounted == 0)
        return 0;
    writeBegin(src);
    windowOf(src);
    __sync_fetch_and_add(&src->events, 1);
    src->uncounted--;
    writeEnd(src);
    return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(onFork, struct task_struct* parent, struct task_struct* child)
{
    struct cppcgov_cpu* rec = cpuRecord(bpf_get_smp_processor_id());
    if (rec)
        __sync_fetch_and_add(&rec->events, 1);
    struct task_rec* pr = resolve(parent);
    if (!pr || pr->res.nslots == 0)
        return 0;
    struct task_rec* cr =
        bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!cr)
    {
        countMissed();
        return 0;
    }
    /* The child carries every slot its parent carried (as uclamp is
     * inherited), as long as the slot keeps that generation. */
    __u32 n = 0;
    for (__u32 i = 0; i < CPPCGOV_TASK_SLOTS; i++)
    {
        if (i >= pr->res.nslots)
            break;
        if (n >= CPPCGOV_INHERITED)
        {
            if (rec)
                __sync_fetch_and_add(&rec->anomalies, 1);
            break;
        }
        cr->inherited.slot[n] = pr->res.slot[i];
        cr->inherited.gen[n] = pr->res.gen[i];
        n++;
    }
    cr->inherited.n = n;
    cr->res.key = 0;
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(onExit, struct task_struct* p)
{
    /* The task still runs; its last switch (TASK_DEAD) takes it off. */
    (void)p;
    struct cppcgov_cpu* rec = cpuRecord(bpf_get_smp_processor_id());
    if (rec)
        __sync_fetch_and_add(&rec->events, 1);
    return 0;
}
