/*
 * source.h - where machine readings come from.
 *
 * A source is a small vtable: open (available, or unavailable with a
 * reason), read into its own slots of a struct sps__sample, close.  The
 * table in sources.c lists them in a fixed order; there are no
 * constructors.  The sampler walks the table at its intervals; `stepscope
 * doctor` opens each one on its own to say whether it works and what a
 * read costs.
 *
 * An unavailable reading is NAN in the sample, never a fake 0: a source
 * leaves every slot it could not read as the sampler set it (NAN).
 *
 * Paths under /proc and /sys are joined to ctx->root so tests can point a
 * source at a fixture tree.  Sources are not thread-safe: one thread opens,
 * reads and closes a given state.
 */
#ifndef SPS_SOURCES_SOURCE_H
#define SPS_SOURCES_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "stepscope.h"

struct sps__gpu_sample {
    int index;                 /* as the workload numbers it */
    int source;                /* enum sps_source_id */
    char name[64];
    char uuid[96];
    double v[SPS_GPU_METRIC_COUNT]; /* NAN: unavailable */
};

struct sps__sensor_sample {
    char label[48];
    int is_cpu;
    double celsius; /* NAN: unavailable */
};

/*
 * One sample of every source.  read_ns[s] is when source s last filled its
 * slots (CLOCK_MONOTONIC ns; 0: never): every reading's age is the age of
 * its source's read.  Plain data, no pointers: the sampler publishes it
 * byte for byte to other processes.
 */
struct sps__sample {
    int64_t read_ns[SPS_SOURCE_COUNT];          /* each source's latest read (0: never) */
    int64_t host_read_ns[SPS_HOST_METRIC_COUNT]; /* each host metric's latest read: the cadences differ */
    double host[SPS_HOST_METRIC_COUNT];
    int32_t ngpus;
    int32_t nsensors;
    struct sps__gpu_sample gpu[SPS_CAPTURE_MAX_GPUS];
    struct sps__sensor_sample sensor[SPS_CAPTURE_MAX_SENSORS];
};

/* Every reading NAN, no GPUs, no sensors, never read. */
void sps__sample_clear(struct sps__sample *s);

/* Is pid one of the watched process tree's?  (GPU per-process memory.) */
typedef int (*sps__tree_query)(void *arg, int pid);

/* The watched tree's live processes: up to cap pids into pids, in pid
 * order; returns how many there are (which may exceed cap).  (The sched
 * source's run delay.) */
typedef size_t (*sps__tree_list)(void *arg, int *pids, size_t cap);

struct sps__source_ctx {
    const char *root;      /* prefix of /proc and /sys paths; "" for the real ones */
    int tree_pid;          /* root of the watched process tree; 0: none */
    const char *nvml_path; /* library to load; NULL: "libnvidia-ml.so.1" */
    const char *smi_path;  /* nvidia-smi to run; NULL: "nvidia-smi" on PATH */
    int smi_timeout_ms;    /* 0: 2000 */
    const char *cuda_visible_devices; /* CUDA_VISIBLE_DEVICES; NULL: unset */
    sps__tree_query in_tree;          /* NULL: only tree_pid itself counts; unused when tree_pid is 0 */
    int interval_only; /* this read is at the interval alone: read only the SPS_EVERY_INTERVAL metrics
                          (the rest keep their values); 0: read everything */
    int due_now;       /* a fresh read (captures, snapshots): a full read also reads the SPS_WHEN_DUE metrics
                          (the tree's PSS), and looks for new processes, whether or not their cadence says so */
    void *in_tree_arg;
    sps__tree_list tree_members; /* NULL: the tree is tree_pid alone; called with in_tree_arg */
};

struct sps__source {
    enum sps_source_id id;
    const char *name; /* "proc" */
    const char *what; /* one line: what it reads */
    int is_gpu;       /* part of the GPU chain (read every machine interval) */
    int slow;         /* a read costs milliseconds */
    /*
     * Open the source.  Returns 0 with *state set (it may be NULL) when it
     * can read, or a negative value with a one-line reason in reason (no
     * state to close).  When available, reason may carry a note ("" if
     * none).
     */
    int (*open)(const struct sps__source_ctx *ctx, void **state, char *reason, size_t cap);
    /*
     * Read into the source's own slots of s at now_ns.  Returns 0, or a
     * negative value with a one-line reason when this read failed (its
     * slots stay NAN; the next read tries again).  GPU sources set
     * s->ngpus and the gpu[] entries; thermal sets the sensors.
     */
    int (*read)(void *state, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns, char *reason,
                size_t cap);
    void (*close)(void *state);
};

/* The source with this id (every id below SPS_SOURCE_COUNT has one).  The
 * ids without is_gpu are the host sources; those with it, in id order, are
 * the GPU chain, tried in that order. */
const struct sps__source *sps__source_get(enum sps_source_id id);

/* The host source (proc, thermal or rapl) a host metric comes from, as
 * the catalogue says.  Thread-safe. */
enum sps_source_id sps__host_metric_source(int metric);

/* The same for every host metric at once, indexed by enum sps_host_metric
 * (static storage): for loops over all of them on a hot path. */
const enum sps_source_id *sps__host_metric_sources(void);

extern const struct sps__source sps__source_proc;
extern const struct sps__source sps__source_thermal;
extern const struct sps__source sps__source_rapl;
extern const struct sps__source sps__source_nvml;
extern const struct sps__source sps__source_drm;
extern const struct sps__source sps__source_nvidia_smi;
extern const struct sps__source sps__source_sched;

/*
 * The share of one core the proc source lets the tree's PSS reads cost: a
 * read of every tree process's smaps_rollup is due (at a full read) when
 * the time since the last one, at this share, pays for its predicted CPU
 * cost (the tree's RSS sum times the last read's price per KiB).  0.01%:
 * with the rest of the sampler at about 0.085% of a core on the busy VM it
 * was measured on, the whole stays under 0.1%.  A source sets the
 * sample's host_read_ns of an SPS_WHEN_DUE metric itself, to the read's
 * time, when it reads it (or finds it unavailable or no longer current).
 */
#define SPS_PSS_CPU_SHARE 0.0001

/* The proc source's PSS reads so far and the CPU time they cost (this
 * thread's clock around them).  state is the proc source's open state. */
void sps__proc_pss_cost(void *state, uint64_t *reads, uint64_t *cpu_ns);

/*
 * The proc source also answers "is pid in the tree?" from what its last
 * read found, so the GPU sources can count the workload's own memory.
 * state is the proc source's open state.
 */
int sps__proc_tree_contains(void *state, int pid);

/* A command name as /proc/PID/status gives it: at most 15 bytes (the
 * kernel's TASK_COMM_LEN less its NUL), plus ours. */
#define SPS_PROC_COMM_LEN 16

/* One tree process's resident set at the proc source's latest read. */
struct sps__proc_rss {
    int pid;
    int first;            /* the first reading of this process to go out (it is new to the tree) */
    uint64_t start_ticks; /* its start time in clock ticks: with pid, it names one process */
    char comm[SPS_PROC_COMM_LEN]; /* its command name at its latest status read ("" if none yet) */
    double rss_bytes;
};

/*
 * The tree processes whose resident set the proc source's latest read
 * read, in pid order: the per-process readings that the sample, a fixed
 * layout shared with other processes, has no room for.  The sampler calls
 * it right after each read of the source.  *out points into the state:
 * valid until the next read or close, read on the thread that reads the
 * source.  Returns the count (0 with no tree, or when the read could not
 * list /proc).
 */
size_t sps__proc_tree_rss(void *state, const struct sps__proc_rss **out);

/* The tree's processes alive at the proc source's latest read: up to cap
 * pids, in pid order; returns how many (which may exceed cap).  state is
 * the proc source's open state (NULL: none).  Same thread rules as
 * sps__proc_tree_rss. */
size_t sps__proc_tree_pids(void *state, int *pids, size_t cap);

#endif /* SPS_SOURCES_SOURCE_H */
