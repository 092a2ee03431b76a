/* sampler.c - the sampler thread, series and publishing (see sampler.h). */
#include "sampler/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "platform/atomic_file.h"

struct sps__sampler {
    pthread_mutex_t lock; /* sources, sample, result, publishing */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake;
    int stop_requested; /* under wake_lock */
    int running;
    int locks_ready;
    pthread_t thread;
    uint64_t thread_started_ns;

    struct sps__sampler_config cfg;
    char *root, *nvml_path, *smi_path, *cuda_visible; /* owned copies */
    struct sps__source_ctx ctx;
    void *state[SPS_SOURCE_COUNT];
    int open[SPS_SOURCE_COUNT];
    int gpu_source; /* the GPU chain's source in use; -1: none */

    struct sps__sample sample;
    struct sps__published_source pub_sources[SPS_SOURCE_COUNT];
    struct sps__published *pub;
    int pub_mapped; /* pub is a shared mapping (munmap), else malloc'd */

    struct sps__sampler_result result;
};

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

static int tree_query(void *arg, int pid) {
    struct sps__sampler *s = arg;
    if (s->open[SPS_SOURCE_PROC])
        return sps__proc_tree_contains(s->state[SPS_SOURCE_PROC], pid);
    return pid == s->ctx.tree_pid;
}

/* The tree's live processes as the proc source's latest read found them
 * (the sched source reads their threads' run delay). */
static size_t tree_members(void *arg, int *pids, size_t cap) {
    struct sps__sampler *s = arg;
    return s->open[SPS_SOURCE_PROC] ? sps__proc_tree_pids(s->state[SPS_SOURCE_PROC], pids, cap) : 0;
}

static void open_source(struct sps__sampler *s, enum sps_source_id id) {
    const struct sps__source *src = sps__source_get(id);
    struct sps__source_result *r = &s->result.sources[id];
    r->tried = 1;
    r->slow = src->slow;
    r->reason[0] = '\0';
    void *st = NULL;
    if (src->open(&s->ctx, &st, r->reason, sizeof r->reason) == 0) {
        s->open[id] = 1;
        s->state[id] = st;
        r->available = 1;
        r->in_use = 1;
    } else if (!r->reason[0]) {
        snprintf(r->reason, sizeof r->reason, "unavailable");
    }
}

/* The publish file: made under a temporary name and renamed (the atomic
 * writer), so a reader never maps a half-initialised one.  No fsync: the
 * sampler rewrites it all run long, and nobody reads it after a crash. */
static struct sps__published *map_publish_file(const char *path, char *err, size_t errlen) {
    struct sps_atomic_file out;
    if (sps__atomic_open(&out, path, err, errlen) != 0)
        return NULL;
    struct sps__published *p = MAP_FAILED;
    int e = posix_fallocate(out.fd, 0, (off_t)sizeof *p);
    if (e == 0)
        p = mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED, out.fd, 0);
    else
        errno = e;
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        sps__atomic_abort(&out);
        return NULL;
    }
    sps__published_init(p, 0);
    if (sps__atomic_commit(&out, SPS_ATOMIC_NO_SYNC, err, errlen) != 0) {
        munmap(p, sizeof *p);
        return NULL;
    }
    return p;
}

struct sps__sampler *sps__sampler_open(const struct sps__sampler_config *cfg, char *err, size_t errlen) {
    if (err && errlen)
        err[0] = '\0';
    struct sps__sampler *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    if (s->cfg.interval_ms <= 0)
        s->cfg.interval_ms = SPS_SAMPLER_DEFAULT_INTERVAL_MS;
    if (s->cfg.machine_interval_ms <= 0)
        s->cfg.machine_interval_ms = SPS_SAMPLER_DEFAULT_MACHINE_MS;
    if (s->cfg.series_points < 2)
        s->cfg.series_points = SPS_SAMPLER_DEFAULT_POINTS;
    s->root = strdup(cfg->root ? cfg->root : "");
    s->nvml_path = dup_or_null(cfg->nvml_path);
    s->smi_path = dup_or_null(cfg->smi_path);
    s->cuda_visible = dup_or_null(cfg->cuda_visible_devices);
    if (!s->root || (cfg->nvml_path && !s->nvml_path) || (cfg->smi_path && !s->smi_path) ||
        (cfg->cuda_visible_devices && !s->cuda_visible)) {
        snprintf(err, errlen, "out of memory");
        sps__sampler_close(s);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->wake_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    s->locks_ready = 1;

    s->ctx = (struct sps__source_ctx){
        .root = s->root,
        .tree_pid = cfg->tree_pid,
        .nvml_path = s->nvml_path,
        .smi_path = s->smi_path,
        .smi_timeout_ms = cfg->smi_timeout_ms,
        .cuda_visible_devices = s->cuda_visible,
        .in_tree = tree_query,
        .in_tree_arg = s,
        .tree_members = tree_members,
    };

    struct sps__sampler_result *r = &s->result;
    r->interval_ms = s->cfg.interval_ms;
    r->machine_interval_ms = s->cfg.machine_interval_ms;
    r->tree_pid = cfg->tree_pid;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        sps__series_init(&r->host[i], s->cfg.series_points);
    for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            sps__series_init(&r->gpu[g].m[i], s->cfg.series_points);
    for (int k = 0; k < SPS_CAPTURE_MAX_SENSORS; k++)
        sps__series_init(&r->sensor[k].celsius, s->cfg.series_points);
    for (int k = 0; k < SPS_SAMPLER_MAX_PROCESSES; k++)
        sps__series_init(&r->process[k].rss_bytes, s->cfg.series_points);

    /* every host source; the GPU chain up to the first that opens */
    s->gpu_source = -1;
    for (int id = 0; id < SPS_SOURCE_COUNT; id++) {
        const struct sps__source *src = sps__source_get(id);
        if (src->is_gpu && s->gpu_source >= 0) {
            snprintf(r->sources[id].reason, sizeof r->sources[id].reason, "not needed: %s serves the GPUs",
                     sps__source_get(s->gpu_source)->name);
            r->sources[id].slow = src->slow;
            continue;
        }
        open_source(s, id);
        if (src->is_gpu && s->open[id])
            s->gpu_source = id;
    }
    for (int i = 0; i < SPS_SOURCE_COUNT; i++) {
        struct sps__published_source *ps = &s->pub_sources[i];
        ps->available = r->sources[i].available;
        ps->in_use = r->sources[i].in_use;
        ps->slow = r->sources[i].slow;
        memcpy(ps->reason, r->sources[i].reason, sizeof ps->reason);
    }

    sps__sample_clear(&s->sample);
    if (cfg->publish_path) {
        s->pub = map_publish_file(cfg->publish_path, err, errlen);
        s->pub_mapped = s->pub != NULL;
    }
    if (!s->pub) {
        s->pub = malloc(sizeof *s->pub);
        if (!s->pub) {
            snprintf(err, errlen, "out of memory");
            sps__sampler_close(s);
            return NULL;
        }
    }
    sps__published_init(s->pub, cfg->tree_pid);
    return s;
}

void sps__sampler_set_tree(struct sps__sampler *s, int pid) {
    pthread_mutex_lock(&s->lock);
    s->ctx.tree_pid = pid;
    s->result.tree_pid = pid;
    __atomic_store_n(&s->pub->tree_pid, pid, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->lock);
}

/* Read one source into the sample, keeping its account. */
static void read_source(struct sps__sampler *s, enum sps_source_id id, int64_t now) {
    struct sps__source_result *r = &s->result.sources[id];
    char reason[192] = "";
    uint64_t t0 = sps__mono_ns();
    int rc = sps__source_get(id)->read(s->state[id], &s->ctx, &s->sample, now, reason, sizeof reason);
    r->read_ns_total += sps__mono_ns() - t0;
    r->reads++;
    s->sample.read_ns[id] = now;
    if (rc != 0) {
        r->failed_reads++;
        snprintf(r->last_error, sizeof r->last_error, "%s", reason[0] ? reason : "read failed");
    } else if (reason[0]) {
        snprintf(r->note, sizeof r->note, "%s", reason);
    }
}

/* Add the proc source's per-process readings to each process's series: a
 * process seen for the first time gets a series while there is room, and
 * is counted as left out otherwise. */
static void keep_process_rss(struct sps__sampler *s, int64_t now) {
    struct sps__sampler_result *r = &s->result;
    const struct sps__proc_rss *readings;
    size_t n = sps__proc_tree_rss(s->state[SPS_SOURCE_PROC], &readings);
    for (size_t i = 0; i < n; i++) {
        const struct sps__proc_rss *rd = &readings[i];
        struct sps__process_series *ps = NULL;
        /* newest first: a process is most often one of the latest seen */
        for (int k = r->nprocesses - 1; k >= 0 && !ps; k--)
            if (r->process[k].pid == rd->pid && r->process[k].start_ticks == rd->start_ticks)
                ps = &r->process[k];
        if (!ps) {
            if (r->nprocesses == SPS_SAMPLER_MAX_PROCESSES) {
                r->processes_left_out += rd->first != 0;
                continue;
            }
            ps = &r->process[r->nprocesses++];
            ps->pid = rd->pid;
            ps->start_ticks = rd->start_ticks;
            ps->first_seen_ns = now;
        }
        if (rd->comm[0])
            memcpy(ps->comm, rd->comm, sizeof ps->comm);
        sps__series_add(&ps->rss_bytes, now, rd->rss_bytes);
    }
}

/* The proc source's PSS reads and their cost; the largest RSS sum read
 * while the published PSS is current (has a value). */
static void keep_pss_account(struct sps__sampler *s) {
    struct sps__sampler_result *r = &s->result;
    uint64_t cpu_ns;
    sps__proc_pss_cost(s->state[SPS_SOURCE_PROC], &r->pss_reads, &cpu_ns);
    r->pss_cpu_seconds = (double)cpu_ns * 1e-9;
    double pss = s->sample.host[SPS_M_WORKLOAD_PSS_BYTES], rss = s->sample.host[SPS_M_WORKLOAD_RSS_BYTES];
    if (!isnan(pss) && s->sample.host_read_ns[SPS_M_WORKLOAD_PSS_BYTES] && !isnan(rss) &&
        rss > r->rss_sum_max_pss_current)
        r->rss_sum_max_pss_current = rss;
}

/* Is metric read by a read of its source at this tick?  Every metric on a
 * machine tick; the SPS_EVERY_INTERVAL ones alone on the other ticks.  The
 * SPS_WHEN_DUE ones are the source's to decide (when_due). */
static int refreshed(int metric, int machine) {
    enum sps_cadence c = sps_host_metric_info(metric)->cadence;
    return c == SPS_EVERY_INTERVAL || (machine && c == SPS_EVERY_MACHINE_INTERVAL);
}

static int when_due(int metric) {
    return sps_host_metric_info(metric)->cadence == SPS_WHEN_DUE;
}

/* Read the host source id: the metrics this tick refreshes start NAN (a
 * read that cannot produce one leaves it unavailable, never stale), then
 * each gets a point in its series and its read time.  An SPS_WHEN_DUE
 * metric keeps its last reading unless the source read it now (it sets the
 * metric's read time to now). */
static void read_host_source(struct sps__sampler *s, enum sps_source_id id, int machine, int64_t now) {
    const enum sps_source_id *source_of = sps__host_metric_sources();
    int any = 0;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        if (source_of[i] == id && refreshed(i, machine)) {
            s->sample.host[i] = NAN;
            any = 1;
        }
    if (!any && !machine)
        return; /* all its metrics wait for the machine interval */
    if (id == SPS_SOURCE_THERMAL) {
        s->sample.nsensors = 0;
        for (int i = 0; i < SPS_CAPTURE_MAX_SENSORS; i++)
            s->sample.sensor[i].celsius = NAN;
    }
    s->ctx.interval_only = !machine;
    read_source(s, id, now);
    s->ctx.interval_only = 0;
    if (id == SPS_SOURCE_PROC) {
        keep_process_rss(s, now);
        keep_pss_account(s);
    }
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        if (source_of[i] != id)
            continue;
        if (refreshed(i, machine)) {
            sps__series_add(&s->result.host[i], now, s->sample.host[i]);
            s->sample.host_read_ns[i] = now;
        } else if (when_due(i) && s->sample.host_read_ns[i] == now) {
            sps__series_add(&s->result.host[i], now, s->sample.host[i]);
        }
    }
}

static void tick_locked(struct sps__sampler *s, int interval, int machine) {
    uint64_t t0 = sps__mono_ns();
    int64_t now = (int64_t)t0;
    struct sps__sampler_result *r = &s->result;
    for (enum sps_source_id id = 0; id < SPS_SOURCE_COUNT; id++)
        if (s->open[id] && !sps__source_get(id)->is_gpu)
            read_host_source(s, id, machine, now);
    if (machine && s->open[SPS_SOURCE_THERMAL]) {
        int n = s->sample.nsensors;
        if (n > r->nsensors)
            r->nsensors = n;
        for (int k = 0; k < n; k++) {
            struct sps__sensor_series *ss = &r->sensor[k];
            memcpy(ss->label, s->sample.sensor[k].label, sizeof ss->label);
            ss->label[sizeof ss->label - 1] = '\0';
            ss->is_cpu = s->sample.sensor[k].is_cpu;
            sps__series_add(&ss->celsius, now, s->sample.sensor[k].celsius);
        }
    }
    if (machine && s->gpu_source >= 0) {
        s->sample.ngpus = 0;
        for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++)
            for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
                s->sample.gpu[g].v[i] = NAN;
        read_source(s, (enum sps_source_id)s->gpu_source, now);
        int n = s->sample.ngpus;
        if (n > r->ngpus)
            r->ngpus = n;
        for (int g = 0; g < n; g++) {
            struct sps__gpu_series *gs = &r->gpu[g];
            const struct sps__gpu_sample *gp = &s->sample.gpu[g];
            gs->index = gp->index;
            gs->source = gp->source;
            memcpy(gs->name, gp->name, sizeof gs->name);
            gs->name[sizeof gs->name - 1] = '\0';
            memcpy(gs->uuid, gp->uuid, sizeof gs->uuid);
            gs->uuid[sizeof gs->uuid - 1] = '\0';
            for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
                sps__series_add(&gs->m[i], now, gp->v[i]);
        }
    }
    r->interval_ticks += interval != 0;
    r->machine_ticks += machine != 0;
    if (!r->started_ns)
        r->started_ns = now;
    /* the sources' status is fixed at open: published with the first tick */
    sps__published_write(s->pub, &s->sample, r->ticks == 0 ? s->pub_sources : NULL);
    r->ticks++;
    r->tick_ns_total += sps__mono_ns() - t0;
}

void sps__sampler_tick(struct sps__sampler *s, int interval, int machine) {
    pthread_mutex_lock(&s->lock);
    tick_locked(s, interval, machine);
    pthread_mutex_unlock(&s->lock);
}

void sps__sampler_tick_now(struct sps__sampler *s) {
    pthread_mutex_lock(&s->lock);
    s->ctx.due_now = 1;
    tick_locked(s, 1, 1);
    s->ctx.due_now = 0;
    pthread_mutex_unlock(&s->lock);
}

/* The CLOCK_MONOTONIC deadline of ns on stepscope's clock (sps__mono_ns,
 * which a test may shift). */
static struct timespec ts_of_ns(int64_t ns) {
    ns -= sps__clock_shift_ns;
    return (struct timespec){.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
}

static void *sampler_main(void *arg) {
    struct sps__sampler *s = arg;
    const int64_t interval_ns = (int64_t)s->cfg.interval_ms * 1000000;
    const int64_t machine_ns = (int64_t)s->cfg.machine_interval_ms * 1000000;
    int64_t now = (int64_t)sps__mono_ns();
    /* start() ticked both just now */
    int64_t next_interval = now + interval_ns, next_machine = now + machine_ns;
    pthread_mutex_lock(&s->wake_lock);
    while (!s->stop_requested) {
        int64_t next = next_interval < next_machine ? next_interval : next_machine;
        struct timespec until = ts_of_ns(next);
        while (!s->stop_requested) {
            int rc = pthread_cond_timedwait(&s->wake, &s->wake_lock, &until);
            if (rc == ETIMEDOUT || (int64_t)sps__mono_ns() >= next)
                break;
        }
        if (s->stop_requested)
            break;
        pthread_mutex_unlock(&s->wake_lock);
        now = (int64_t)sps__mono_ns();
        int interval = now >= next_interval, machine = now >= next_machine;
        sps__sampler_tick(s, interval, machine);
        /* keep the cadence; after a stall (a stopped process, a slow
         * nvidia-smi) skip the missed ticks instead of bursting */
        if (interval)
            next_interval = next_interval + interval_ns > now ? next_interval + interval_ns : now + interval_ns;
        if (machine)
            next_machine = next_machine + machine_ns > now ? next_machine + machine_ns : now + machine_ns;
        pthread_mutex_lock(&s->wake_lock);
    }
    pthread_mutex_unlock(&s->wake_lock);
    /* each start makes a new thread whose CPU clock starts at zero */
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
        pthread_mutex_lock(&s->lock);
        s->result.thread_cpu_seconds += (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9;
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

int sps__sampler_start(struct sps__sampler *s, int fresh) {
    if (s->running)
        return 0;
    if (fresh)
        sps__sampler_tick_now(s);
    else
        sps__sampler_tick(s, 1, 1);
    s->stop_requested = 0;
    /* the workload's signals are not ours: the thread blocks them all so
     * they reach the threads that expect them */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, sampler_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    pthread_setname_np(s->thread, "stepscope-samp");
    s->running = 1;
    s->thread_started_ns = sps__mono_ns();
    return 0;
}

void sps__sampler_stop(struct sps__sampler *s) {
    if (!s || !s->running)
        return;
    pthread_mutex_lock(&s->wake_lock);
    s->stop_requested = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->wake_lock);
    pthread_join(s->thread, NULL);
    s->running = 0;
    pthread_mutex_lock(&s->lock);
    uint64_t now = sps__mono_ns();
    s->result.thread_ns_total += now - s->thread_started_ns;
    pthread_mutex_unlock(&s->lock);
}

int sps__sampler_running(const struct sps__sampler *s) {
    return s->running;
}

const struct sps__published *sps__sampler_published(const struct sps__sampler *s) {
    return s->pub;
}

const struct sps__sampler_result *sps__sampler_result(const struct sps__sampler *s) {
    return &s->result;
}

void sps__sampler_result_clear(struct sps__sampler_result *r) {
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        sps__series_free(&r->host[i]);
    for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            sps__series_free(&r->gpu[g].m[i]);
    for (int k = 0; k < SPS_CAPTURE_MAX_SENSORS; k++)
        sps__series_free(&r->sensor[k].celsius);
    for (int k = 0; k < SPS_SAMPLER_MAX_PROCESSES; k++)
        sps__series_free(&r->process[k].rss_bytes);
}

void sps__sampler_result_free(struct sps__sampler_result *r) {
    if (!r)
        return;
    sps__sampler_result_clear(r);
    free(r);
}

void sps__sampler_close(struct sps__sampler *s) {
    if (!s)
        return;
    sps__sampler_stop(s);
    for (int i = 0; i < SPS_SOURCE_COUNT; i++)
        if (s->open[i])
            sps__source_get(i)->close(s->state[i]);
    sps__sampler_result_clear(&s->result);
    if (s->pub) {
        if (s->pub_mapped)
            munmap(s->pub, sizeof *s->pub);
        else
            free(s->pub);
    }
    if (s->locks_ready) {
        pthread_mutex_destroy(&s->lock);
        pthread_mutex_destroy(&s->wake_lock);
        pthread_cond_destroy(&s->wake);
    }
    free(s->root);
    free(s->nvml_path);
    free(s->smi_path);
    free(s->cuda_visible);
    free(s);
}

static int pss_covers_peak(const struct sps__sampler_result *r) {
    const struct sps__series *rss = &r->host[SPS_M_WORKLOAD_RSS_BYTES];
    return r->host[SPS_M_WORKLOAD_PSS_BYTES].n && rss->n && r->rss_sum_max_pss_current >= 0.9 * rss->max;
}

enum sps_host_metric sps__tree_memory_metric(const struct sps__sampler_result *r) {
    return pss_covers_peak(r) ? SPS_M_WORKLOAD_PSS_BYTES : SPS_M_WORKLOAD_RSS_BYTES;
}

enum sps_host_metric sps__tree_memory_peak_metric(const struct sps__sampler_result *r) {
    return pss_covers_peak(r) ? SPS_M_WORKLOAD_PSS_PEAK_BYTES : SPS_M_WORKLOAD_RSS_PEAK_BYTES;
}
