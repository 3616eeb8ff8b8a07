// SPDX-License-Identifier: Apache-2.0
/* The memory shared by the scheduler observer's BPF program
 * (sched_observe.bpf.c) and the daemon (sched_observer.cpp): plain C
 * layouts of the maps the daemon maps into its address space and reads or
 * writes in place. Both sides compile this file; the C++ side checks the
 * sizes it relies on. Everything is little-endian and naturally aligned,
 * so the same program serves x86-64 and arm64. */
#pragma once

#include <linux/types.h>

/* Slots: a hint's index in the slot table. */
#define CPPCGOV_MAX_SLOTS 16384u
/* The seen-slots bitmap of one window: one bit per slot in 256 words, and
 * a summary bit per word (4 words) so a reader visits only words in use. */
#define CPPCGOV_SLOT_WORDS (CPPCGOV_MAX_SLOTS / 64u)
#define CPPCGOV_SUMMARY_WORDS (CPPCGOV_SLOT_WORDS / 64u)
/* uclamp buckets as the kernel keeps them: 65 of 16 units over 0..1024. */
#define CPPCGOV_UTIL_SCALE 1024u
#define CPPCGOV_BUCKET_UNITS 16u
#define CPPCGOV_BUCKETS (CPPCGOV_UTIL_SCALE / CPPCGOV_BUCKET_UNITS + 1u)
/* Slots one task carries: its thread's, its process's, and up to four
 * inherited from the task that forked it. */
#define CPPCGOV_INHERITED 4u
#define CPPCGOV_TASK_SLOTS (2u + CPPCGOV_INHERITED)

/* A slot table entry (one __u64, written whole by the daemon with a
 * release store, read whole by the program):
 *   bits  0..15  util_min
 *   bits 16..31  util_max
 *   bits 32..63  generation; odd while the slot is in use, bumped when the
 *                slot is cleared and again when it is used anew. */
#ifdef __cplusplus
#define CPPCGOV_NARROW(type, v) static_cast<type>(v)
#else
#define CPPCGOV_NARROW(type, v) ((type)(v))
#endif
static inline __u16 cppcgov_slot_min(__u64 v)
{
    return CPPCGOV_NARROW(__u16, v & 0xffffu);
}
static inline __u16 cppcgov_slot_max(__u64 v)
{
    return CPPCGOV_NARROW(__u16, (v >> 16) & 0xffffu);
}
static inline __u32 cppcgov_slot_gen(__u64 v)
{
    return CPPCGOV_NARROW(__u32, v >> 32);
}
static inline int cppcgov_slot_in_use(__u64 v)
{
    return (cppcgov_slot_gen(v) & 1u) != 0;
}

/* Key of the targets hash map: a thread (kind THREAD, id = its tid) or a
 * thread group (kind PROCESS, id = its tgid), in the initial PID namespace. */
#define CPPCGOV_TARGET_THREAD 0u
#define CPPCGOV_TARGET_PROCESS 1u
struct cppcgov_target_key
{
    __u32 id;
    __u32 kind;
};

/* Value of the targets map: the slot and the generation it was bound in;
 * a binding counts only while the slot still has that generation. */
struct cppcgov_target_value
{
    __u32 slot;
    __u32 generation;
};

/* Slots a task inherited when it was forked, with their generations then. */
struct cppcgov_inherited
{
    __u32 n;
    __u32 slot[CPPCGOV_INHERITED];
    __u32 gen[CPPCGOV_INHERITED];
};

/* A task's resolved hints: its slots (slot, generation) and its clamp
 * (max of mins, max of maxes; [0,1024] without slots), valid while key is
 * hints_gen + 1. */
struct cppcgov_resolution
{
    __u64 key;
    __u16 min;
    __u16 max;
    __u32 nslots;
    __u32 slot[CPPCGOV_TASK_SLOTS];
    __u32 gen[CPPCGOV_TASK_SLOTS];
};

/* The task running on a CPU, as far as a window needs it when it starts
 * on an event that is not that task's: enough to resolve it again, and
 * the clamp it is counted with there. */
struct cppcgov_running
{
    __u32 pid; /* 0: idle, or not known yet */
    __u32 tgid;
    __u32 counted; /* counted on this CPU with qmin, qmax */
    /* qmin, qmax changed since it was switched in; its task record takes
     * them at its switch-out. */
    __u32 dirty;
    __u16 qmin;
    __u16 qmax;
    __u32 kthread; /* the running task is a kernel thread */
    struct cppcgov_inherited inherited;
    struct cppcgov_resolution res;
};

/* The aggregation of one window on one CPU. The record of window epoch E
 * is win[E & 1]; the program starts it at the CPU's first event in E from
 * the CPU's current aggregate and raises it at every enqueue; the daemon
 * reads it (and clears its bitmap) once E has ended, while the program
 * writes the other one; the program clears what the bitmap still holds
 * when it starts the window (a writer the daemon gave up waiting for may
 * have marked it after the daemon's read). */
struct cppcgov_window
{
    __u64 epoch;
    __u16 min;
    __u16 max;
    __u32 runnable; /* a task was runnable on the CPU in the window */
    __u64 summary[CPPCGOV_SUMMARY_WORDS];
    __u64 bits[CPPCGOV_SLOT_WORDS];
};

/* One CPU's record, one element per CPU of the mmapped "cpus" array,
 * cache-line aligned. Written by the program under that CPU's runqueue
 * lock, inside seq (odd while a write is under way). */
struct cppcgov_cpu
{
    __u32 seq;
    /* Bumped when the bookkeeping is reset: task records that counted
     * themselves in an older generation are not taken off again. */
    __u32 generation;
    /* Busy time: ns of completed runs of tasks other than idle, and since
     * when (bpf_ktime_get_ns, CLOCK_MONOTONIC) the current one runs, 0
     * while idle. A reader adds now - run_start_ns. */
    __u64 busy_ns;
    __u64 run_start_ns;
    /* Of busy_ns, the runs of the daemon's own threads (globals.own_tgid);
     * running.tgid says whose the current run is. */
    __u64 own_busy_ns;
    /* Tasks counted on the runqueue and their current aggregate: the value
     * of the highest non-empty bucket, 0 when none. */
    __u32 queued;
    __u16 agg_min;
    __u16 agg_max;
    /* Tasks the kernel had runnable here that are not counted (a task
     * migrated in, the others after a reset), as of the last switch or
     * migration away: they count as unhinted, as uclamp would count a task
     * without a clamp, until their next wakeup or switch-in counts them. */
    __u32 uncounted;
    struct cppcgov_running running;
    /* Counters (atomic adds; summed over CPUs by the reader). */
    __u64 events;    /* scheduler events handled for this CPU */
    __u64 switches;  /* of them, context switches on the CPU itself */
    __u64 missed;    /* events that could not be accounted */
    __u64 resets;    /* bookkeeping reset when the CPU went idle */
    __u64 anomalies; /* bookkeeping found inconsistent and repaired */
    /* bookkeeping reset at a switch because more tasks were counted than
     * the kernel had runnable there */
    __u64 overcounts;
    /* The buckets: tasks counted in each and the highest clamp counted
     * into it since it was last empty. */
    __u32 min_tasks[CPPCGOV_BUCKETS];
    __u32 max_tasks[CPPCGOV_BUCKETS];
    __u16 min_value[CPPCGOV_BUCKETS];
    __u16 max_value[CPPCGOV_BUCKETS];
    struct cppcgov_window win[2];
} __attribute__((aligned(64)));

/* The program's globals (.bss, mmapped by the skeleton). */
struct cppcgov_globals
{
    /* Bumped by the daemon after any change to slots or targets: task
     * records re-resolve their clamp when it moved. */
    __u64 hints_gen;
    /* The current window; bumped by the daemon to end it. */
    __u64 window_epoch;
    /* Set by the daemon while its tick sleeps longer than its period: the
     * first wake-up or switch-in of a task of another process that is not
     * a kernel thread clears it and puts the time (bpf_ktime_get_ns) in
     * the `wakes` ring buffer, which wakes the tick. */
    __u32 wake_armed;
    /* The daemon's own process, whose threads never wake the tick. */
    __u32 own_tgid;
};
