/*
 * bottleneck_classify.c - the verdict from the evidence: a pure function,
 * one rule per verdict tried in a fixed order (docs/analysis.md lists the
 * order, the thresholds and why).
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

static void verdict(struct sps_bn_verdict *v, enum sps_bn_kind kind, double confidence, const char *rec) {
    v->kind = kind;
    v->confidence = kind == SPS_BN_UNKNOWN ? NAN : clamp01(fmin(confidence, 0.95));
    snprintf(v->recommendation, sizeof v->recommendation, "%s", rec);
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

/* ---------------------------------------------------------------- rules */

static int rule_nothing(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (e->steps != 0 || e->cpu_readings != 0 || e->machine_readings != 0 || f->gpu)
        return 0;
    say(v, "no steps and no machine readings to judge");
    if (e->why_sampler)
        say(v, " (machine readings: %s)", e->why_sampler);
    static const struct advice a = {
        "mark each training step with `with stepscope.step():`, or let stepscope.torch.instrument(model, "
        "optimizer, loader) do it",
        "mark each training step with SPS_STEP()",
        "mark each training step (SPS_STEP() in C, `with stepscope.step():` in Python)"};
    verdict(v, SPS_BN_UNKNOWN, NAN, in_face(e, &a));
    return 1;
}

/* Memory first: swapping slows everything else, so any other verdict
 * would name a symptom. */
static int rule_memory(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    double avail = e->system_memory_available_min_percent, swap = e->system_swap_growth_bytes;
    int low = sps__bn_known(avail) && avail < MEM_AVAILABLE_LOW_PERCENT;
    int swapping = sps__bn_known(swap) && swap >= SWAP_GROWTH_BYTES &&
                   (!sps__bn_known(e->system_memory_total_bytes) || swap >= 0.01 * e->system_memory_total_bytes);
    if (!low && !swapping)
        return 0;
    if (sps__bn_known(avail) && sps__bn_known(e->system_memory_total_bytes))
        say(v, "memory available fell to %.1f%% of %.1f GiB", avail, e->system_memory_total_bytes / GIB);
    else if (sps__bn_known(avail))
        say(v, "memory available fell to %.1f%% of the total", avail);
    else
        say(v, "memory available unknown");
    if (sps__bn_known(swap))
        say(v, "; swap in use grew by %.0f MiB", swap / MIB);
    static const struct advice a = {
        "free memory: lower the batch size or the DataLoader's num_workers and prefetch_factor, or use a machine "
        "with more RAM (swapping makes every step wait on the disk)",
        "free memory: lower the batch size or the number of batches buffered ahead, or use a machine with more "
        "RAM (swapping makes every step wait on the disk)",
        "free memory: lower the batch size or the batches prepared ahead (the DataLoader's num_workers and "
        "prefetch_factor in PyTorch), or use a machine with more RAM (swapping makes every step wait on the disk)"};
    verdict(v, SPS_BN_MEMORY, (low && swapping ? 0.9 : 0.7) * f->scarce, in_face(e, &a));
    return 1;
}

static int rule_throttled(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (!f->gpu)
        return 0;
    double temp = e->gpu_temperature_max_celsius, drop = e->gpu_sm_clock_drop_percent;
    if (sps__bn_known(e->gpu_throttled_percent) && e->gpu_throttled_percent >= THROTTLED_PERCENT) {
        say(v, "the GPU slowed itself (thermal or hardware slowdown, reasons 0x%x) in %.0f%% of its readings",
            (unsigned)e->gpu_throttle_reasons_seen, e->gpu_throttled_percent);
        if (sps__bn_known(temp))
            say(v, "; peak %.0f °C", temp);
        if (sps__bn_known(drop))
            say(v, "; mean SM clock %.0f%% below its peak", drop);
        verdict(v, SPS_BN_THROTTLED, (0.5 + 0.5 * e->gpu_throttled_percent / 100) * f->scarce,
                "check the GPU's cooling (airflow, fans, inlet temperature) and power delivery; "
                "nvidia-smi -q -d PERFORMANCE names the active slowdown");
        return 1;
    }
    /* without throttle reasons (drm, nvidia-smi): a hot GPU whose clock
     * sags while it is busy */
    if (!sps__bn_known(e->gpu_throttled_percent) && sps__bn_known(temp) && temp >= HOT_GPU_CELSIUS && sps__bn_known(drop) &&
        drop >= CLOCK_DROP_PERCENT && f->util >= GPU_IDLE_PERCENT) {
        say(v,
            "the GPU reached %.0f °C and its mean SM clock was %.0f%% below its peak while %.0f%% busy "
            "(no throttle reasons from this GPU source)",
            temp, drop, f->util);
        verdict(v, SPS_BN_THROTTLED, 0.5 * f->scarce,
                "check the GPU's cooling (airflow, fans, inlet temperature); nvidia-smi -q -d PERFORMANCE names "
                "the active slowdown");
        return 1;
    }
    return 0;
}

static int rule_io(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    double iowait = e->system_iowait_mean_percent, disk = e->workload_disk_read_mean_bytes_per_second;
    int reading = sps__bn_known(disk) && disk >= DISK_READ_BYTES_PER_SECOND;
    if (!sps__bn_known(iowait) || iowait < IOWAIT_PERCENT || !(reading || (sps__bn_known(f->data) && f->data >= DATA_WEAK_PERCENT + 5)))
        return 0;
    say(v, "CPUs waited on I/O %.0f%% of the time", iowait);
    if (sps__bn_known(disk))
        say(v, " while the workload read %.1f MiB/s from storage", disk / MIB);
    say_data(v, f);
    static const struct advice a = {
        "the reads wait on storage: cache the dataset in RAM or on a local NVMe disk, pack small files into larger "
        "shards, and keep more reads in flight (more DataLoader workers)",
        "the reads wait on storage: cache the dataset in RAM or on a local NVMe disk, pack small files into larger "
        "shards, and keep more reads in flight (more loader threads, or asynchronous reads)",
        "the reads wait on storage: cache the dataset in RAM or on a local NVMe disk, pack small files into larger "
        "shards, and keep more reads in flight (more loader workers or threads)"};
    verdict(v, SPS_BN_IO, (0.55 + 0.4 * fmin(iowait, 40.0) / 40.0) * f->scarce, in_face(e, &a));
    return 1;
}

/* The workload's threads were ready to run but other work held the CPUs. */
static int rule_contended(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (f->gpu && f->util >= GPU_BUSY_PERCENT)
        return 0; /* the GPU is kept busy: the CPU side's waiting is not the limit */
    double wait = e->workload_cpu_wait_percent, delay = e->workload_run_delay_mean_percent;
    double pressure = e->cpu_pressure_some_mean_percent, share = e->workload_cpu_percent_of_machine;
    if (sps__bn_known(share) && share >= WORKLOAD_FILLS_MACHINE_PERCENT)
        return 0; /* its own threads queue for the cores: cpu-bound says so */
    int by_delay = sps__bn_known(wait) && sps__bn_known(delay) && wait >= CONTENDED_WAIT_PERCENT && delay >= CONTENDED_DELAY_PERCENT;
    int by_pressure = !sps__bn_known(wait) && sps__bn_known(pressure) && pressure >= CONTENDED_PRESSURE_PERCENT &&
                      sps__bn_known(f->sys) && f->sys >= MACHINE_BUSY_PERCENT &&
                      !(sps__bn_known(f->cpu) && f->cpu >= CPU_BUSY_PERCENT);
    if (!by_delay && !by_pressure)
        return 0;
    double c;
    if (by_delay) {
        say(v, "the workload was runnable but waiting for a CPU %.0f%% of the time it was ready to run", wait);
        if (e->contention_whole_run)
            say(v, " (over the whole run: no run delay reading in this window)");
        else if (sps__bn_known(f->cpu))
            say(v, " (%.2f s of run delay per second against %.2f s on a CPU)", delay / 100, f->cpu / 100);
        c = 0.55 + 0.4 * clamp01((wait - CONTENDED_WAIT_PERCENT) / (60 - CONTENDED_WAIT_PERCENT));
        if (e->run_delay_readings < 2)
            c *= 0.8;
    } else {
        say(v, "the workload's own run delay is unknown (%s), but the machine was saturated",
            e->why_run_delay ? e->why_run_delay : "not read");
        c = 0.4 * f->scarce;
    }
    if (sps__bn_known(pressure))
        say(v, "; CPU pressure %.0f%% (some task waited for a CPU %.0f%% of the time)", pressure, pressure);
    else
        say(v, "; CPU pressure unknown (%s)", e->why_pressure ? e->why_pressure : "not read");
    if (sps__bn_known(f->cpu))
        say(v, "; it ran %.0f%% of a core", f->cpu);
    if (sps__bn_known(f->sys))
        say(v, sps__bn_known(f->cpu) ? " while the machine's CPUs were %.0f%% busy" : "; the machine's CPUs were %.0f%% busy",
            f->sys);
    say_data(v, f);
    verdict(v, SPS_BN_CONTENDED, c,
            "other processes hold the CPUs: run on a quieter machine, or give the workload cores of its own "
            "(taskset -c, a cgroup cpuset) or the others a lower priority (nice); step times from this run "
            "include the waiting");
    return 1;
}

static int rule_input(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (!sps__bn_known(f->data) || f->data < DATA_INPUT_PERCENT)
        return 0;
    say(v, "%.0f%% of step time is spent in data loading zones", f->data);
    if (f->gpu)
        say(v, "; the GPU was busy %.0f%% of the time", f->util);
    else
        say(v, " (no GPU)");
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
    verdict(v, SPS_BN_INPUT, 0.5 + 0.45 * (f->data - DATA_INPUT_PERCENT) / (100 - DATA_INPUT_PERCENT),
            in_face(e, f->gpu ? &gpu : &cpu));
    return 1;
}

static int rule_gpu(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (!f->gpu || f->util < GPU_BUSY_PERCENT)
        return 0;
    say(v, "the GPU was busy %.0f%% of the time (p10 %.0f%%)", f->util, e->gpu_utilization_p10_percent);
    if (sps__bn_known(e->gpu_power_capped_percent) && e->gpu_power_capped_percent >= 50)
        say(v, ", at its power cap most of the time");
    static const struct advice a = {
        "the GPU is the limit: use bf16/fp16 mixed precision and fused kernels (torch.compile) to do the same work "
        "in less GPU time",
        "the GPU is the limit: use lower precision (bf16/fp16, tensor cores) and fused kernels to do the same work "
        "in less GPU time",
        "the GPU is the limit: use bf16/fp16 mixed precision and fused kernels (torch.compile in PyTorch) to do the "
        "same work in less GPU time"};
    verdict(v, SPS_BN_GPU, (0.55 + 0.4 * (f->util - GPU_BUSY_PERCENT) / (100 - GPU_BUSY_PERCENT)) * f->scarce,
            in_face(e, &a));
    return 1;
}

static int rule_idle_gpu(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (!f->gpu || f->util >= GPU_IDLE_PERCENT || !sps__bn_known(f->cpu) || f->cpu < CPU_BUSY_PERCENT || sps__bn_known(f->data))
        return 0;
    say(v,
        "the GPU was busy only %.0f%% of the time while the workload's CPU ran at %.0f%% of a core, and no data "
        "loading zone says where that CPU time went",
        f->util, f->cpu);
    static const struct advice a = {
        "wrap the batch fetch in `with stepscope.zone(\"data\"):` (or use stepscope.torch.instrument) to confirm, "
        "then raise the DataLoader's num_workers and set pin_memory=True",
        "wrap batch loading in SPS_ZONE(\"data\") to confirm, then prepare batches on another thread",
        "wrap batch loading in a zone named \"data\" to confirm (SPS_ZONE(\"data\") in C, `with "
        "stepscope.zone(\"data\"):` in Python), then prepare batches ahead"};
    verdict(v, SPS_BN_INPUT, 0.45 * f->scarce, in_face(e, &a));
    return 1;
}

/* CPU advice for Python that shows no torch: the interpreter runs one
 * thread of Python at a time */
#define PLAIN_PYTHON_THREADS                                                                                   \
    "use more processes (multiprocessing) or threads around code that releases the GIL, vectorise the loop "  \
    "(NumPy), or do more per call with a larger batch"

static int rule_cpu(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (!sps__bn_known(f->cpu) || f->cpu < CPU_BUSY_PERCENT)
        return 0;
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
    char rec[320];
    if (f->gpu)
        snprintf(rec, sizeof rec, "%s", in_face(e, &gpu));
    else if (e->cpu_count > 1 && sps__bn_known(machine) && machine < 75)
        snprintf(rec, sizeof rec, "it keeps %.1f of %d cores busy: %s", f->cpu / 100, e->cpu_count,
                 in_face_torch(e, &threads, PLAIN_PYTHON_THREADS));
    else
        snprintf(rec, sizeof rec, "%s", in_face(e, &full));
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
    double c = 0.6 + (!f->gpu ? 0.2 : f->util < GPU_IDLE_PERCENT ? 0.15 : 0.0) + (f->cpu >= 95 ? 0.1 : 0.0);
    verdict(v, SPS_BN_CPU, c * f->scarce, rec);
    return 1;
}

/* Less than a core's worth, but nothing else to wait on: with no GPU the
 * step is CPU work that did not get the whole core, or with a saturated
 * machine, other processes took the CPUs (when run delay and pressure
 * could not say so). */
static int rule_cpu_part(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    int crowded = sps__bn_known(f->sys) && f->sys >= MACHINE_BUSY_PERCENT;
    if (!sps__bn_known(f->cpu) || f->cpu < CPU_PART_BUSY_PERCENT || (f->gpu && !crowded) ||
        (sps__bn_known(f->data) && f->data >= DATA_WEAK_PERCENT))
        return 0;
    say(v, "the workload's CPU ran at %.0f%% of a core%s", f->cpu, f->gpu ? "" : " with no GPU");
    if (crowded)
        say(v, " while the machine's CPUs were %.0f%% busy", f->sys);
    say_data(v, f);
    static const struct advice work = {
        "the step is CPU work: use more threads for the math (torch.set_num_threads, OMP_NUM_THREADS), or move "
        "the compute to a GPU",
        "the step is CPU work: use more threads for the math (OpenMP and OMP_NUM_THREADS, a threaded BLAS), or "
        "move the compute to a GPU",
        "the step is CPU work: use more threads for the math (OMP_NUM_THREADS; torch.set_num_threads in "
        "PyTorch), or move the compute to a GPU"};
    verdict(v, SPS_BN_CPU, 0.5 * f->scarce,
            crowded ? "other work competes for the CPUs: run on a quieter machine, or give the workload cores of its "
                      "own (taskset -c, a cgroup cpuset)"
                    : in_face_torch(e, &work, "the step is CPU work: " PLAIN_PYTHON_THREADS));
    return 1;
}

static int rule_weak_input(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (!sps__bn_known(f->data) || f->data < DATA_WEAK_PERCENT)
        return 0;
    say(v, "%.0f%% of step time is spent in data loading zones, and ", f->data);
    if (f->gpu && sps__bn_known(f->cpu))
        say(v, "neither the CPU (%.0f%% of a core) nor the GPU (%.0f%% busy) is saturated", f->cpu, f->util);
    else if (f->gpu)
        say(v, "the GPU (%.0f%% busy) is not saturated", f->util);
    else if (sps__bn_known(f->cpu))
        say(v, "the CPU (%.0f%% of a core) is not saturated, with no GPU", f->cpu);
    else
        say(v, "there is no GPU and no CPU reading");
    static const struct advice a = {
        "raise the DataLoader's num_workers (or prefetch on another thread) so the next batch is ready before the "
        "step asks",
        "prepare the next batch on another thread so it is ready before the step asks",
        "prepare the next batch ahead (the DataLoader's num_workers in PyTorch; another thread in C) so it is "
        "ready before the step asks"};
    verdict(v, SPS_BN_INPUT, 0.35, in_face(e, &a));
    return 1;
}

static int rule_unread(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (e->cpu_readings != 0 || e->machine_readings != 0 || f->gpu)
        return 0;
    if (sps__bn_known(f->data))
        say(v, "%.0f%% of step time in data loading; without machine readings nothing else can be judged", f->data);
    else
        say(v, "no data loading zone and no machine readings: nothing to judge the steps by");
    if (e->why_sampler)
        say(v, " (machine readings: %s)", e->why_sampler);
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
    char rec[320];
    if (sps__bn_known(f->data))
        snprintf(rec, sizeof rec, "%s, to judge the rest", sample);
    else
        snprintf(rec, sizeof rec, "%s; and %s", sample, in_face(e, &WRAP_DATA));
    verdict(v, SPS_BN_UNKNOWN, NAN, rec);
    return 1;
}

/* Nothing saturated, and one zone (not data loading) holds most of the
 * step: the step waits in that zone, so name it rather than ask for zones. */
static int rule_waiting_zone(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (!sps__bn_known(e->top_zone_percent) || e->top_zone_percent < WAIT_ZONE_PERCENT ||
        (sps__bn_known(f->cpu) && f->cpu >= CPU_PART_BUSY_PERCENT))
        return 0;
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
    char rec[320];
    snprintf(rec, sizeof rec,
             "find what zone '%s' waits on (a sleep, a lock, a collective, a host-device copy, a queue) and remove "
             "it or overlap it with work; zones nested inside it tell its parts apart",
             e->top_zone);
    verdict(v, SPS_BN_UNKNOWN, NAN, rec);
    return 1;
}

/* Nothing saturated that was sampled: say what was seen, figure by figure. */
static void rule_unknown(const struct sps_bn_evidence *e, const struct facts *f, struct sps_bn_verdict *v) {
    if (rule_waiting_zone(e, f, v))
        return;
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
    static const struct advice a = {
        "wrap the waits (collectives, synchronisation, host-device copies, sleeps) in `with stepscope.zone(...):` "
        "blocks to see which one it is",
        "wrap the waits (collectives, synchronisation, host-device copies, sleeps) in SPS_ZONE(...) to see which "
        "one it is",
        "wrap the waits (collectives, synchronisation, host-device copies, sleeps) in zones (SPS_ZONE in C, "
        "stepscope.zone in Python) to see which one it is"};
    verdict(v, SPS_BN_UNKNOWN, NAN, in_face(e, &a));
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
    static int (*const rules[])(const struct sps_bn_evidence *, const struct facts *, struct sps_bn_verdict *) = {
        rule_nothing, rule_memory,   rule_throttled, rule_io,       rule_contended,   rule_input,
        rule_gpu,     rule_idle_gpu, rule_cpu,       rule_cpu_part, rule_weak_input, rule_unread,
    };
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (rules[i](e, &f, v))
            return;
    rule_unknown(e, &f, v);
}
