/*
 * bottleneck_classify.c - the verdict from the evidence: a pure function
 * over a rule table.  Each rule is a row: the verdict it gives, the
 * condition over the evidence that makes it hold, its confidence, and the
 * builders of its reason and its recommendation.  The rules are tried in
 * the table's order and the first that holds gives the verdict, so a cause
 * comes before its symptoms; docs/analysis.md lists the same rows in the
 * same order with their thresholds and why (test_analysis_bottleneck_rules
 * checks that it does).
 *
 * Every sentence is put together clause by clause from the figures that
 * are known: a figure the evidence lacks is left out of the sentence (or
 * named as unknown), never printed as 0.  The advice speaks the run's
 * language (enum sps_bn_face): Python runs are told about stepscope.zone
 * and the DataLoader, C runs about SPS_ZONE and threads.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/bottleneck.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/* Thresholds (docs/analysis.md lists them with their reasons). */
#define MEM_AVAILABLE_LOW_PERCENT 5.0
#define SWAP_GROWTH_BYTES (64.0 * MIB)
#define THROTTLED_PERCENT 20.0
#define HOT_GPU_CELSIUS 85.0
#define CLOCK_DROP_PERCENT 15.0
#define IOWAIT_PERCENT 10.0
#define DISK_READ_BYTES_PER_SECOND (1.0 * MIB)
#define DATA_INPUT_PERCENT 30.0
#define DATA_WEAK_PERCENT 15.0
#define GPU_BUSY_PERCENT 80.0
#define GPU_IDLE_PERCENT 50.0
#define CPU_BUSY_PERCENT 80.0 /* of one CPU: a core's worth of work, all the time */
#define CPU_PART_BUSY_PERCENT 50.0 /* half a core: busy, but not all the time */
#define WAIT_ZONE_PERCENT 50.0 /* of step time in one zone (not data loading): the step waits there */
#define MACHINE_BUSY_PERCENT 90.0
#define FEW_READINGS 3
/* Contention: of the time the workload's threads were ready to run, the
 * share they spent on a runqueue; and that waiting, per wall second, in
 * percent of one CPU (a workload that mostly sleeps can wait a large share
 * of a tiny runnable time and lose nothing that matters). */
#define CONTENDED_WAIT_PERCENT 25.0
#define CONTENDED_DELAY_PERCENT 10.0
/* The workload itself fills the machine: its waiting is its own threads
 * queueing for too few cores, not other work's doing. */
#define WORKLOAD_FILLS_MACHINE_PERCENT 90.0
/* Without run delay: CPU pressure this high on a saturated machine. */
#define CONTENDED_PRESSURE_PERCENT 50.0

const char *sps__bn_kind_name(enum sps_bn_kind kind) {
    switch (kind) {
    case SPS_BN_INPUT: return "input-bound";
    case SPS_BN_GPU: return "gpu-bound";
    case SPS_BN_CPU: return "cpu-bound";
    case SPS_BN_IO: return "io-bound";
    case SPS_BN_THROTTLED: return "throttled";
    case SPS_BN_MEMORY: return "memory-pressure";
    case SPS_BN_CONTENDED: return "cpu-contended";
    default: return "unknown";
    }
}

const char *sps__bn_face_name(enum sps_bn_face face) {
    switch (face) {
    case SPS_BN_FACE_C: return "c";
    case SPS_BN_FACE_PYTHON: return "python";
    default: return "unknown";
    }
}

static double clamp01(double x) {
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

/* Append a clause to the reason (cut at its size, never overrun). */
__attribute__((format(printf, 2, 3))) static void say(struct sps_bn_verdict *v, const char *fmt, ...) {
    size_t len = strnlen(v->reason, sizeof v->reason);
    if (len + 1 >= sizeof v->reason)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->reason + len, sizeof v->reason - len, fmt, ap);
    va_end(ap);
}

/* The advice, one text per face; unknown gives both languages' words. */
struct advice {
    const char *python, *c, *either;
};

static const char *in_face(const struct sps_bn_evidence *e, const struct advice *a) {
    return e->face == SPS_BN_FACE_PYTHON ? a->python : e->face == SPS_BN_FACE_C ? a->c : a->either;
}

/* Python advice that names torch's settings only where the records show
 * torch (e->torch); plain Python gets plain_python instead. */
static const char *in_face_torch(const struct sps_bn_evidence *e, const struct advice *a,
                                 const char *plain_python) {
    return e->face == SPS_BN_FACE_PYTHON && !e->torch ? plain_python : in_face(e, a);
}

/* What every rule looks at, derived once. */
struct facts {
    double data, util, cpu, sys;
    int gpu;       /* a GPU with utilisation readings */
    double scarce; /* 0.8 when the verdict rests on one or two sampler readings */
};

/* "; data loading took N% of step time" when some zone is named like data
 * loading; nothing otherwise (never an invented 0%). */
static void say_data(struct sps_bn_verdict *v, const struct facts *f) {
    if (sps__bn_known(f->data))
        say(v, "; data loading took %.0f%% of step time", f->data);
}

static const struct advice WRAP_DATA = {
    "wrap the batch fetch in `with stepscope.zone(\"data\"):` (stepscope.torch.instrument(model, optimizer, "
    "loader) does it for a DataLoader)",
    "wrap batch loading in SPS_ZONE(\"data\")",
    "wrap batch loading in a zone named \"data\" (SPS_ZONE(\"data\") in C, `with stepscope.zone(\"data\"):` in "
    "Python)"};

/* ---------------------------------------------------------------- rules
 *
 * Each rule's functions: holds (its condition), confidence (before the
 * scarce-readings factor where a rule applies it, the 0.95 cap and the
 * clamp to 0..1; NULL for an unknown verdict, which has none), reason
 * (appends its clauses to v->reason) and advice (writes the recommendation
 * into rec, cap bytes).  All pure.
 */

typedef int bn_holds_fn(const struct sps_bn_evidence *e, const struct facts *f);
typedef double bn_confidence_fn(const struct sps_bn_evidence *e, const struct facts *f);
typedef void bn_reason_fn(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v);
typedef void bn_advice_fn(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap);

/* -- nothing: no steps and no readings */

static int nothing_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    return e->steps == 0 && e->cpu_readings == 0 && e->machine_readings == 0 && !f->gpu;
}

static void nothing_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    (void)f;
    say(v, "no steps and no machine readings to judge");
    if (e->why_sampler)
        say(v, " (machine readings: %s)", e->why_sampler);
}

static void nothing_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)f;
    static const struct advice a = {
        "mark each training step with `with stepscope.step():`, or let stepscope.torch.instrument(model, "
        "optimizer, loader) do it",
        "mark each training step with SPS_STEP()",
        "mark each training step (SPS_STEP() in C, `with stepscope.step():` in Python)"};
    snprintf(rec, cap, "%s", in_face(e, &a));
}

/* -- memory: first, since swapping slows everything else, so any other
 * verdict would name a symptom */

static int memory_low(const struct sps_bn_evidence *e) {
    double avail = e->system_memory_available_min_percent;
    return sps__bn_known(avail) && avail < MEM_AVAILABLE_LOW_PERCENT;
}

static int memory_swapping(const struct sps_bn_evidence *e) {
    double swap = e->system_swap_growth_bytes;
    return sps__bn_known(swap) && swap >= SWAP_GROWTH_BYTES &&
           (!sps__bn_known(e->system_memory_total_bytes) || swap >= 0.01 * e->system_memory_total_bytes);
}

static int memory_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)f;
    return memory_low(e) || memory_swapping(e);
}

static double memory_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    return (memory_low(e) && memory_swapping(e) ? 0.9 : 0.7) * f->scarce;
}

static void memory_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    (void)f;
    double avail = e->system_memory_available_min_percent, swap = e->system_swap_growth_bytes;
    if (sps__bn_known(avail) && sps__bn_known(e->system_memory_total_bytes))
        say(v, "memory available fell to %.1f%% of %.1f GiB", avail, e->system_memory_total_bytes / GIB);
    else if (sps__bn_known(avail))
        say(v, "memory available fell to %.1f%% of the total", avail);
    else
        say(v, "memory available unknown");
    if (sps__bn_known(swap))
        say(v, "; swap in use grew by %.0f MiB", swap / MIB);
}

static void memory_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)f;
    static const struct advice a = {
        "free memory: lower the batch size or the DataLoader's num_workers and prefetch_factor, or use a machine "
        "with more RAM (swapping makes every step wait on the disk)",
        "free memory: lower the batch size or the number of batches buffered ahead, or use a machine with more "
        "RAM (swapping makes every step wait on the disk)",
        "free memory: lower the batch size or the batches prepared ahead (the DataLoader's num_workers and "
        "prefetch_factor in PyTorch), or use a machine with more RAM (swapping makes every step wait on the disk)"};
    snprintf(rec, cap, "%s", in_face(e, &a));
}

/* -- throttled, from the GPU's throttle reasons */

static int throttle_reasons_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    return f->gpu && sps__bn_known(e->gpu_throttled_percent) && e->gpu_throttled_percent >= THROTTLED_PERCENT;
}

static double throttle_reasons_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    return (0.5 + 0.5 * e->gpu_throttled_percent / 100) * f->scarce;
}

static void throttle_reasons_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    (void)f;
    double temp = e->gpu_temperature_max_celsius, drop = e->gpu_sm_clock_drop_percent;
    say(v, "the GPU slowed itself (thermal or hardware slowdown, reasons 0x%x) in %.0f%% of its readings",
        (unsigned)e->gpu_throttle_reasons_seen, e->gpu_throttled_percent);
    if (sps__bn_known(temp))
        say(v, "; peak %.0f °C", temp);
    if (sps__bn_known(drop))
        say(v, "; mean SM clock %.0f%% below its peak", drop);
}

static void throttle_reasons_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)e, (void)f;
    snprintf(rec, cap, "%s",
             "check the GPU's cooling (airflow, fans, inlet temperature) and power delivery; "
             "nvidia-smi -q -d PERFORMANCE names the active slowdown");
}

/* -- throttled, without throttle reasons (drm, nvidia-smi): a hot GPU
 * whose clock sags while it is busy */

static int throttle_heat_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    double temp = e->gpu_temperature_max_celsius, drop = e->gpu_sm_clock_drop_percent;
    return f->gpu && !sps__bn_known(e->gpu_throttled_percent) && sps__bn_known(temp) && temp >= HOT_GPU_CELSIUS &&
           sps__bn_known(drop) && drop >= CLOCK_DROP_PERCENT && f->util >= GPU_IDLE_PERCENT;
}

static double throttle_heat_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return 0.5 * f->scarce;
}

static void throttle_heat_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    say(v,
        "the GPU reached %.0f °C and its mean SM clock was %.0f%% below its peak while %.0f%% busy "
        "(no throttle reasons from this GPU source)",
        e->gpu_temperature_max_celsius, e->gpu_sm_clock_drop_percent, f->util);
}

static void throttle_heat_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)e, (void)f;
    snprintf(rec, cap, "%s",
             "check the GPU's cooling (airflow, fans, inlet temperature); nvidia-smi -q -d PERFORMANCE names "
             "the active slowdown");
}

/* -- io: the CPUs wait on storage while the workload reads */

static int io_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    double iowait = e->system_iowait_mean_percent, disk = e->workload_disk_read_mean_bytes_per_second;
    int reading = sps__bn_known(disk) && disk >= DISK_READ_BYTES_PER_SECOND;
    return sps__bn_known(iowait) && iowait >= IOWAIT_PERCENT &&
           (reading || (sps__bn_known(f->data) && f->data >= DATA_WEAK_PERCENT + 5));
}

static double io_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    return (0.55 + 0.4 * fmin(e->system_iowait_mean_percent, 40.0) / 40.0) * f->scarce;
}

static void io_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    double disk = e->workload_disk_read_mean_bytes_per_second;
    say(v, "CPUs waited on I/O %.0f%% of the time", e->system_iowait_mean_percent);
    if (sps__bn_known(disk))
        say(v, " while the workload read %.1f MiB/s from storage", disk / MIB);
    say_data(v, f);
}

static void io_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)f;
    static const struct advice a = {
        "the reads wait on storage: cache the dataset in RAM or on a local NVMe disk, pack small files into larger "
        "shards, and keep more reads in flight (more DataLoader workers)",
        "the reads wait on storage: cache the dataset in RAM or on a local NVMe disk, pack small files into larger "
        "shards, and keep more reads in flight (more loader threads, or asynchronous reads)",
        "the reads wait on storage: cache the dataset in RAM or on a local NVMe disk, pack small files into larger "
        "shards, and keep more reads in flight (more loader workers or threads)"};
    snprintf(rec, cap, "%s", in_face(e, &a));
}

/* -- contended: the workload's threads were ready to run but other work
 * held the CPUs.  Not while a GPU is kept busy (the CPU side's waiting is
 * not the limit), nor when the workload fills the machine itself (its own
 * threads queue for the cores: cpu-bound says so). */

static int contention_possible(const struct sps_bn_evidence *e, const struct facts *f) {
    double share = e->workload_cpu_percent_of_machine;
    return !(f->gpu && f->util >= GPU_BUSY_PERCENT) &&
           !(sps__bn_known(share) && share >= WORKLOAD_FILLS_MACHINE_PERCENT);
}

/* What every contended reason ends with: pressure, the workload's CPU, the
 * machine's, data loading. */
static void say_contention(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    double pressure = e->cpu_pressure_some_mean_percent;
    if (sps__bn_known(pressure))
        say(v, "; CPU pressure %.0f%% (some task waited for a CPU %.0f%% of the time)", pressure, pressure);
    else
        say(v, "; CPU pressure unknown (%s)", e->why_pressure ? e->why_pressure : "not read");
    if (sps__bn_known(f->cpu))
        say(v, "; it ran %.0f%% of a core", f->cpu);
    if (sps__bn_known(f->sys))
        say(v,
            sps__bn_known(f->cpu) ? " while the machine's CPUs were %.0f%% busy"
                                  : "; the machine's CPUs were %.0f%% busy",
            f->sys);
    say_data(v, f);
}

static void contention_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)e, (void)f;
    snprintf(rec, cap, "%s",
             "other processes hold the CPUs: run on a quieter machine, or give the workload cores of its own "
             "(taskset -c, a cgroup cpuset) or the others a lower priority (nice); step times from this run "
             "include the waiting");
}

/* contended, from the workload's own run delay */
static int contended_delay_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    double wait = e->workload_cpu_wait_percent, delay = e->workload_run_delay_mean_percent;
    return contention_possible(e, f) && sps__bn_known(wait) && sps__bn_known(delay) && wait >= CONTENDED_WAIT_PERCENT &&
           delay >= CONTENDED_DELAY_PERCENT;
}

static double contended_delay_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)f;
    double c = 0.55 + 0.4 * clamp01((e->workload_cpu_wait_percent - CONTENDED_WAIT_PERCENT) /
                                    (60 - CONTENDED_WAIT_PERCENT));
    return e->run_delay_readings < 2 ? c * 0.8 : c;
}

static void contended_delay_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    say(v, "the workload was runnable but waiting for a CPU %.0f%% of the time it was ready to run",
        e->workload_cpu_wait_percent);
    if (e->contention_whole_run)
        say(v, " (over the whole run: no run delay reading in this window)");
    else if (sps__bn_known(f->cpu))
        say(v, " (%.2f s of run delay per second against %.2f s on a CPU)", e->workload_run_delay_mean_percent / 100,
            f->cpu / 100);
    say_contention(e, f, v);
}

/* contended, without run delay: CPU pressure on a saturated machine */
static int contended_pressure_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    double pressure = e->cpu_pressure_some_mean_percent;
    return contention_possible(e, f) && !sps__bn_known(e->workload_cpu_wait_percent) && sps__bn_known(pressure) &&
           pressure >= CONTENDED_PRESSURE_PERCENT && sps__bn_known(f->sys) && f->sys >= MACHINE_BUSY_PERCENT &&
           !(sps__bn_known(f->cpu) && f->cpu >= CPU_BUSY_PERCENT);
}

static double contended_pressure_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return 0.4 * f->scarce;
}

static void contended_pressure_reason(const struct sps_bn_evidence *e, const struct facts *f,
                                      struct sps_bn_verdict *v) {
    say(v, "the workload's own run delay is unknown (%s), but the machine was saturated",
        e->why_run_delay ? e->why_run_delay : "not read");
    say_contention(e, f, v);
}

/* -- input: data loading takes a large share of the step */

static int input_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return sps__bn_known(f->data) && f->data >= DATA_INPUT_PERCENT;
}

static double input_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return 0.5 + 0.45 * (f->data - DATA_INPUT_PERCENT) / (100 - DATA_INPUT_PERCENT);
}

static void input_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    (void)e;
    say(v, "%.0f%% of step time is spent in data loading zones", f->data);
    if (f->gpu)
        say(v, "; the GPU was busy %.0f%% of the time", f->util);
    else
        say(v, " (no GPU)");
}

static void input_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    static const struct advice gpu = {
        "the step waits for its batch: raise the DataLoader's num_workers, set pin_memory=True and "
        "persistent_workers=True so the next batch is ready before the step asks",
        "the step waits for its batch: prepare the next batch on another thread, in pinned host memory, so it "
        "is ready before the step asks",
        "the step waits for its batch: prepare the next batch ahead, in pinned memory (the DataLoader's "
        "num_workers, pin_memory=True in PyTorch; another thread in C)"};
    static const struct advice cpu = {
        "the step waits for its batch: raise the DataLoader's num_workers (or prepare batches on another thread) "
        "so the next batch is ready before the step asks",
        "the step waits for its batch: prepare the next batch on another thread so it is ready before the step "
        "asks",
        "the step waits for its batch: prepare the next batch ahead (the DataLoader's num_workers in PyTorch; "
        "another thread in C) so it is ready before the step asks"};
    snprintf(rec, cap, "%s", in_face(e, f->gpu ? &gpu : &cpu));
}

/* -- gpu: the GPU is busy most of the time */

static int gpu_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return f->gpu && f->util >= GPU_BUSY_PERCENT;
}

static double gpu_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return (0.55 + 0.4 * (f->util - GPU_BUSY_PERCENT) / (100 - GPU_BUSY_PERCENT)) * f->scarce;
}

static void gpu_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    say(v, "the GPU was busy %.0f%% of the time (p10 %.0f%%)", f->util, e->gpu_utilization_p10_percent);
    if (sps__bn_known(e->gpu_power_capped_percent) && e->gpu_power_capped_percent >= 50)
        say(v, ", at its power cap most of the time");
}

static void gpu_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)f;
    static const struct advice a = {
        "the GPU is the limit: use bf16/fp16 mixed precision and fused kernels (torch.compile) to do the same work "
        "in less GPU time",
        "the GPU is the limit: use lower precision (bf16/fp16, tensor cores) and fused kernels to do the same work "
        "in less GPU time",
        "the GPU is the limit: use bf16/fp16 mixed precision and fused kernels (torch.compile in PyTorch) to do the "
        "same work in less GPU time"};
    snprintf(rec, cap, "%s", in_face(e, &a));
}

/* -- input, guessed: an idle GPU beside a busy CPU, and no data zone */

static int idle_gpu_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return f->gpu && f->util < GPU_IDLE_PERCENT && sps__bn_known(f->cpu) && f->cpu >= CPU_BUSY_PERCENT &&
           !sps__bn_known(f->data);
}

static double idle_gpu_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return 0.45 * f->scarce;
}

static void idle_gpu_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    (void)e;
    say(v,
        "the GPU was busy only %.0f%% of the time while the workload's CPU ran at %.0f%% of a core, and no data "
        "loading zone says where that CPU time went",
        f->util, f->cpu);
}

static void idle_gpu_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)f;
    static const struct advice a = {
        "wrap the batch fetch in `with stepscope.zone(\"data\"):` (or use stepscope.torch.instrument) to confirm, "
        "then raise the DataLoader's num_workers and set pin_memory=True",
        "wrap batch loading in SPS_ZONE(\"data\") to confirm, then prepare batches on another thread",
        "wrap batch loading in a zone named \"data\" to confirm (SPS_ZONE(\"data\") in C, `with "
        "stepscope.zone(\"data\"):` in Python), then prepare batches ahead"};
    snprintf(rec, cap, "%s", in_face(e, &a));
}

/* CPU advice for Python that shows no torch: the interpreter runs one
 * thread of Python at a time */
#define PLAIN_PYTHON_THREADS                                                                                   \
    "use more processes (multiprocessing) or threads around code that releases the GIL, vectorise the loop "  \
    "(NumPy), or do more per call with a larger batch"

/* -- cpu: the workload's CPU runs a core's worth or more */

static int cpu_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return sps__bn_known(f->cpu) && f->cpu >= CPU_BUSY_PERCENT;
}

static double cpu_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    double c = 0.6 + (!f->gpu ? 0.2 : f->util < GPU_IDLE_PERCENT ? 0.15 : 0.0) + (f->cpu >= 95 ? 0.1 : 0.0);
    return c * f->scarce;
}

static void cpu_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    double machine = e->workload_cpu_percent_of_machine;
    say(v, "the workload's CPU ran at %.0f%% of a core", f->cpu);
    if (sps__bn_known(machine))
        say(v, " (%.0f%% of %d CPUs)", machine, e->cpu_count);
    if (f->gpu)
        say(v, " while the GPU was busy %.0f%%", f->util);
    else
        say(v, " with no GPU");
    if (sps__bn_known(e->workload_cpu_wait_percent) && e->workload_cpu_wait_percent >= CONTENDED_WAIT_PERCENT)
        say(v, "; its threads waited for a CPU %.0f%% of the time they were ready to run (more runnable threads "
               "than cores)",
            e->workload_cpu_wait_percent);
    say_data(v, f);
}

/* With a GPU, the GPU waits on the CPU; without, a workload using part of
 * several cores is told to use more threads, one using them all to do less
 * work per step. */
static void cpu_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    double machine = e->workload_cpu_percent_of_machine;
    static const struct advice gpu = {
        "the GPU waits on the CPU: do less Python per step (a larger batch, torch.compile or CUDA graphs) and move "
        "preprocessing onto the GPU",
        "the GPU waits on the CPU: launch fewer, larger kernels (a larger batch, CUDA graphs) and move "
        "preprocessing onto the GPU",
        "the GPU waits on the CPU: do less host work per step (a larger batch, CUDA graphs, torch.compile in "
        "PyTorch) and move preprocessing onto the GPU"};
    static const struct advice threads = {
        "let the math use more threads (torch.set_num_threads, OMP_NUM_THREADS) or a larger batch per call",
        "let the math use more threads (OpenMP and OMP_NUM_THREADS, a threaded BLAS) or a larger batch per call",
        "let the math use more threads (OMP_NUM_THREADS; torch.set_num_threads in PyTorch) or a larger batch per "
        "call"};
    static const struct advice full = {
        "every core is busy: do less CPU work per step (vectorised or fused operations, lower precision) or move "
        "the compute to a GPU",
        "every core is busy: do less CPU work per step (vectorised or fused operations, lower precision) or move "
        "the compute to a GPU",
        "every core is busy: do less CPU work per step (vectorised or fused operations, lower precision) or move "
        "the compute to a GPU"};
    if (f->gpu)
        snprintf(rec, cap, "%s", in_face(e, &gpu));
    else if (e->cpu_count > 1 && sps__bn_known(machine) && machine < 75)
        snprintf(rec, cap, "it keeps %.1f of %d cores busy: %s", f->cpu / 100, e->cpu_count,
                 in_face_torch(e, &threads, PLAIN_PYTHON_THREADS));
    else
        snprintf(rec, cap, "%s", in_face(e, &full));
}

/* -- cpu, part of a core: less than a core's worth, but nothing else to
 * wait on: with no GPU the step is CPU work that did not get the whole
 * core, or with a saturated machine, other processes took the CPUs (when
 * run delay and pressure could not say so) */

static int machine_crowded(const struct facts *f) {
    return sps__bn_known(f->sys) && f->sys >= MACHINE_BUSY_PERCENT;
}

static int cpu_part_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return sps__bn_known(f->cpu) && f->cpu >= CPU_PART_BUSY_PERCENT && !(f->gpu && !machine_crowded(f)) &&
           !(sps__bn_known(f->data) && f->data >= DATA_WEAK_PERCENT);
}

static double cpu_part_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return 0.5 * f->scarce;
}

static void cpu_part_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    (void)e;
    say(v, "the workload's CPU ran at %.0f%% of a core%s", f->cpu, f->gpu ? "" : " with no GPU");
    if (machine_crowded(f))
        say(v, " while the machine's CPUs were %.0f%% busy", f->sys);
    say_data(v, f);
}

static void cpu_part_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    static const struct advice work = {
        "the step is CPU work: use more threads for the math (torch.set_num_threads, OMP_NUM_THREADS), or move "
        "the compute to a GPU",
        "the step is CPU work: use more threads for the math (OpenMP and OMP_NUM_THREADS, a threaded BLAS), or "
        "move the compute to a GPU",
        "the step is CPU work: use more threads for the math (OMP_NUM_THREADS; torch.set_num_threads in "
        "PyTorch), or move the compute to a GPU"};
    snprintf(rec, cap, "%s",
             machine_crowded(f) ? "other work competes for the CPUs: run on a quieter machine, or give the workload "
                                  "cores of its own (taskset -c, a cgroup cpuset)"
                                : in_face_torch(e, &work, "the step is CPU work: " PLAIN_PYTHON_THREADS));
}

/* -- input, weak: some data loading, and nothing saturated */

static int weak_input_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e;
    return sps__bn_known(f->data) && f->data >= DATA_WEAK_PERCENT;
}

static double weak_input_confidence(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e, (void)f;
    return 0.35;
}

static void weak_input_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    (void)e;
    say(v, "%.0f%% of step time is spent in data loading zones, and ", f->data);
    if (f->gpu && sps__bn_known(f->cpu))
        say(v, "neither the CPU (%.0f%% of a core) nor the GPU (%.0f%% busy) is saturated", f->cpu, f->util);
    else if (f->gpu)
        say(v, "the GPU (%.0f%% busy) is not saturated", f->util);
    else if (sps__bn_known(f->cpu))
        say(v, "the CPU (%.0f%% of a core) is not saturated, with no GPU", f->cpu);
    else
        say(v, "there is no GPU and no CPU reading");
}

static void weak_input_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)f;
    static const struct advice a = {
        "raise the DataLoader's num_workers (or prefetch on another thread) so the next batch is ready before the "
        "step asks",
        "prepare the next batch on another thread so it is ready before the step asks",
        "prepare the next batch ahead (the DataLoader's num_workers in PyTorch; another thread in C) so it is "
        "ready before the step asks"};
    snprintf(rec, cap, "%s", in_face(e, &a));
}

/* -- unread: steps, but no machine readings to judge them by */

static int unread_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    return e->cpu_readings == 0 && e->machine_readings == 0 && !f->gpu;
}

static void unread_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (sps__bn_known(f->data))
        say(v, "%.0f%% of step time in data loading; without machine readings nothing else can be judged", f->data);
    else
        say(v, "no data loading zone and no machine readings: nothing to judge the steps by");
    if (e->why_sampler)
        say(v, " (machine readings: %s)", e->why_sampler);
}

static void unread_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    /* the flag is named only to a run that used it (stepscope run says so
     * in the reason it gives for the missing sampler) */
    static const struct advice start = {
        "let the sampler run: run under `stepscope run`, or call stepscope.capture() once to start it",
        "let the sampler run: run under `stepscope run`, or call sps_sampler_start()",
        "let the sampler run: run under `stepscope run` (or start it in the program: sps_sampler_start() in C, "
        "stepscope.capture() in Python)"};
    const char *sample = e->why_sampler && strstr(e->why_sampler, "--no-sample")
                             ? "run again without --no-sample so the machine is sampled"
                             : in_face(e, &start);
    if (sps__bn_known(f->data))
        snprintf(rec, cap, "%s, to judge the rest", sample);
    else
        snprintf(rec, cap, "%s; and %s", sample, in_face(e, &WRAP_DATA));
}

/* -- waiting zone: nothing saturated, and one zone (not data loading)
 * holds most of the step: the step waits in that zone, so name it rather
 * than ask for zones */

static int waiting_zone_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    return sps__bn_known(e->top_zone_percent) && e->top_zone_percent >= WAIT_ZONE_PERCENT &&
           !(sps__bn_known(f->cpu) && f->cpu >= CPU_PART_BUSY_PERCENT);
}

static void waiting_zone_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    say(v, "the step spends %.0f%% of its time in zone '%s', which ", e->top_zone_percent, e->top_zone);
    if (f->gpu && sps__bn_known(f->cpu))
        say(v, "neither the CPU (%.0f%% of a core) nor the GPU (%.0f%% busy) accounts for", f->cpu, f->util);
    else if (f->gpu)
        say(v, "the GPU (%.0f%% busy) does not account for", f->util);
    else if (sps__bn_known(f->cpu))
        say(v, "the CPU does not account for (the workload ran at %.0f%% of a core, no GPU)", f->cpu);
    else
        say(v, "no CPU reading accounts for");
    say(v, ": it waits there");
}

static void waiting_zone_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)f;
    snprintf(rec, cap,
             "find what zone '%s' waits on (a sleep, a lock, a collective, a host-device copy, a queue) and remove "
             "it or overlap it with work; zones nested inside it tell its parts apart",
             e->top_zone);
}

/* -- unsampled: nothing saturated that was sampled: say what was seen,
 * figure by figure.  The last rule: it always holds. */

static int unsampled_holds(const struct sps_bn_evidence *e, const struct facts *f) {
    (void)e, (void)f;
    return 1;
}

static void unsampled_reason(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    say(v, "nothing sampled is saturated: ");
    if (f->gpu)
        say(v, "the GPU was busy %.0f%%, ", f->util);
    else
        say(v, "no GPU, ");
    if (sps__bn_known(f->cpu))
        say(v, "the workload's CPU ran at %.0f%% of a core", f->cpu);
    else
        say(v, "the workload's CPU is unknown");
    if (sps__bn_known(e->workload_cpu_wait_percent))
        say(v, " and waited for a CPU %.0f%% of the time it was ready to run", e->workload_cpu_wait_percent);
    else if (e->why_run_delay && !e->why_sampler)
        say(v, " (run delay unknown: %s)", e->why_run_delay);
    if (sps__bn_known(f->data))
        say(v, "; data loading took %.0f%% of step time", f->data);
    else
        say(v, "; no zone is named like data loading");
    say(v, ": the step waits on something not sampled");
}

static void unsampled_advice(const struct sps_bn_evidence *e, const struct facts *f, char *rec, size_t cap) {
    (void)f;
    static const struct advice a = {
        "wrap the waits (collectives, synchronisation, host-device copies, sleeps) in `with stepscope.zone(...):` "
        "blocks to see which one it is",
        "wrap the waits (collectives, synchronisation, host-device copies, sleeps) in SPS_ZONE(...) to see which "
        "one it is",
        "wrap the waits (collectives, synchronisation, host-device copies, sleeps) in zones (SPS_ZONE in C, "
        "stepscope.zone in Python) to see which one it is"};
    snprintf(rec, cap, "%s", in_face(e, &a));
}

/* ------------------------------------------------------------ the table */

struct bn_rule {
    const char *name; /* the rule's name in docs/analysis.md's classifier table */
    enum sps_bn_kind kind;
    bn_holds_fn *holds;
    bn_confidence_fn *confidence; /* NULL: an unknown verdict has none */
    bn_reason_fn *reason;
    bn_advice_fn *advice;
};

#define RULE(name, kind, prefix) {name, kind, prefix##_holds, prefix##_confidence, prefix##_reason, prefix##_advice}
#define UNKNOWN_RULE(name, prefix) {name, SPS_BN_UNKNOWN, prefix##_holds, NULL, prefix##_reason, prefix##_advice}

/* The order is the verdicts' precedence: a cause before its symptoms
 * (swapping slows data loading too), contention before input (a data
 * loader starved of CPU looks like a slow data loader), a busy GPU before
 * a busy CPU. */
static const struct bn_rule rules[] = {
    UNKNOWN_RULE("nothing", nothing),
    RULE("memory", SPS_BN_MEMORY, memory),
    RULE("throttle-reasons", SPS_BN_THROTTLED, throttle_reasons),
    RULE("throttle-heat", SPS_BN_THROTTLED, throttle_heat),
    RULE("io", SPS_BN_IO, io),
    {"contended-delay", SPS_BN_CONTENDED, contended_delay_holds, contended_delay_confidence, contended_delay_reason,
     contention_advice},
    {"contended-pressure", SPS_BN_CONTENDED, contended_pressure_holds, contended_pressure_confidence,
     contended_pressure_reason, contention_advice},
    RULE("input", SPS_BN_INPUT, input),
    RULE("gpu", SPS_BN_GPU, gpu),
    RULE("idle-gpu", SPS_BN_INPUT, idle_gpu),
    RULE("cpu", SPS_BN_CPU, cpu),
    RULE("cpu-part", SPS_BN_CPU, cpu_part),
    RULE("weak-input", SPS_BN_INPUT, weak_input),
    UNKNOWN_RULE("unread", unread),
    UNKNOWN_RULE("waiting-zone", waiting_zone),
    UNKNOWN_RULE("unsampled", unsampled),
};

#define NRULES (sizeof rules / sizeof rules[0])

size_t sps__bn_rule_count(void) {
    return NRULES;
}

const char *sps__bn_rule_name(size_t i) {
    return i < NRULES ? rules[i].name : NULL;
}

enum sps_bn_kind sps__bn_rule_kind(size_t i) {
    return i < NRULES ? rules[i].kind : SPS_BN_UNKNOWN;
}

void sps__bn_classify(const struct sps_bn_evidence *e, struct sps_bn_verdict *v) {
    memset(v, 0, sizeof *v);
    struct facts f = {e->data_loading_percent, e->gpu_utilization_mean_percent, e->workload_cpu_mean_percent,
                      e->system_cpu_mean_percent, 0, 1.0};
    f.gpu = e->gpus > 0 && sps__bn_known(f.util);
    /* a verdict resting on one or two sampler readings is a guess about a
     * short span: it keeps its kind but loses some confidence */
    if (e->cpu_readings < FEW_READINGS && e->machine_readings < FEW_READINGS)
        f.scarce = 0.8;
    const struct bn_rule *r = &rules[NRULES - 1]; /* unsampled: it always holds */
    for (size_t i = 0; i < NRULES; i++)
        if (rules[i].holds(e, &f)) {
            r = &rules[i];
            break;
        }
    v->kind = r->kind;
    v->confidence = r->confidence ? clamp01(fmin(r->confidence(e, &f), 0.95)) : NAN;
    r->reason(e, &f, v);
    r->advice(e, &f, v->recommendation, sizeof v->recommendation);
}
