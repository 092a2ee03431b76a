/*
 * capture.c - sps_capture(), sps_source_status() and this process's own
 * sampler (sps_sampler_start/stop).
 *
 * The latest sample comes from one of two places, found once:
 *   - the run directory's capture.bin, published by `stepscope run`'s
 *     sampler (the workload needs no thread of its own), or
 *   - this process's sampler thread, started by sps_sampler_start() or by
 *     the first sps_capture().
 * Either way the copy is a seqlock read of a struct sps__published.
 */
#include "stepscope.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "clock.h"
#include "sampler/sampler.h"
#include "platform/env_path.h"

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
/* Where captures read from; set once under cap_lock, then read without it. */
static const struct sps__published *current;
static int looked_for_parent;           /* under cap_lock */
static const struct sps__published *parent; /* capture.bin of the run, mapped read-only */
static struct sps__sampler *own;        /* this process's sampler (never freed: captures may be reading it) */
static struct sps__sampler *fresh_local; /* fresh reads under a parent's publisher */

static void atfork_prepare(void) {
    pthread_mutex_lock(&cap_lock);
}
static void atfork_parent(void) {
    pthread_mutex_unlock(&cap_lock);
}
/* The child has no sampler thread: forget the parent process's samplers
 * (leaked, not freed: their locks may have been held at the fork).  A
 * published run directory stays: its mapping is shared and still valid. */
static void atfork_child(void) {
    own = NULL;
    fresh_local = NULL;
    __atomic_store_n(&current, parent, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&cap_lock);
}

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static void setup(void) {
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* The run directory's published sample, if `stepscope run` made one this
 * build can read.  Under cap_lock. */
static const struct sps__published *find_parent(void) {
    if (looked_for_parent)
        return parent;
    looked_for_parent = 1;
    const char *dir = sps__env_path("STEPSCOPE_RUN_DIR");
    if (!dir)
        return NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, SPS_PUBLISHED_FILE) >= (int)sizeof path)
        return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= sizeof(struct sps__published))
        map = mmap(NULL, sizeof(struct sps__published), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return NULL;
    if (!sps__published_valid(map, (uint64_t)st.st_size)) {
        munmap(map, sizeof(struct sps__published));
        return NULL;
    }
    parent = map;
    return parent;
}

void sps__sampler_config_from_env(struct sps__sampler_config *cfg) {
    cfg->root = sps__env_path("STEPSCOPE_ROOT");
    cfg->nvml_path = sps__env_path("STEPSCOPE_NVML_LIBRARY");
    cfg->smi_path = sps__env_path("STEPSCOPE_NVIDIA_SMI");
    cfg->cuda_visible_devices = getenv("CUDA_VISIBLE_DEVICES");
}

/* Start this process's sampler.  Under cap_lock. */
/* Start (or resume) the process's own sampler; its first tick is a
 * fresh read (the tree's PSS too) when fresh, else an ordinary one. */
static int start_own(const struct sps_sampler_config *config, int fresh) {
    if (own) /* stopped earlier: resume it */
        return sps__sampler_start(own, fresh) == 0 ? SPS_OK : SPS_EIO;
    struct sps__sampler_config cfg = {0};
    sps__sampler_config_from_env(&cfg);
    cfg.tree_pid = config && config->pid > 0 ? config->pid : (int)getpid();
    cfg.interval_ms = config ? config->interval_ms : 0;
    cfg.machine_interval_ms = config ? config->machine_interval_ms : 0;
    char err[256];
    struct sps__sampler *s = sps__sampler_open(&cfg, err, sizeof err);
    if (!s)
        return SPS_ENOMEM;
    if (sps__sampler_start(s, fresh) != 0) {
        sps__sampler_close(s);
        return SPS_EIO;
    }
    own = s;
    __atomic_store_n(&current, sps__sampler_published(s), __ATOMIC_RELEASE);
    return SPS_OK;
}

int sps_sampler_start(const struct sps_sampler_config *config) {
    if (config && (config->interval_ms < 0 || config->machine_interval_ms < 0 || config->pid < 0))
        return SPS_EINVAL;
    pthread_once(&setup_once, setup);
    pthread_mutex_lock(&cap_lock);
    int rc;
    if (find_parent())
        rc = SPS_ESTATE;
    else if (own && sps__sampler_running(own))
        rc = SPS_ESTATE;
    else
        rc = start_own(config, 0);
    pthread_mutex_unlock(&cap_lock);
    return rc;
}

void sps_sampler_stop(void) {
    pthread_once(&setup_once, setup);
    pthread_mutex_lock(&cap_lock);
    if (own)
        sps__sampler_stop(own); /* the last sample stays readable */
    pthread_mutex_unlock(&cap_lock);
}

const struct sps__sampler_result *sps__capture_pause(int *was_running) {
    pthread_once(&setup_once, setup);
    pthread_mutex_lock(&cap_lock);
    const struct sps__sampler_result *r = NULL;
    *was_running = 0;
    if (own) {
        *was_running = sps__sampler_running(own);
        sps__sampler_stop(own);
        r = sps__sampler_result(own);
    }
    pthread_mutex_unlock(&cap_lock);
    return r;
}

void sps__capture_resume(int was_running) {
    pthread_mutex_lock(&cap_lock);
    if (own && was_running && !sps__sampler_running(own))
        sps__sampler_start(own, 0);
    pthread_mutex_unlock(&cap_lock);
}

static void fill_reading(struct sps_reading *r, double v, int64_t read_ns, int64_t now) {
    r->value = v;
    if (isnan(v) || read_ns == 0) {
        r->value = NAN;
        r->available = 0;
        r->age_ns = -1;
    } else {
        r->available = 1;
        r->age_ns = now > read_ns ? now - read_ns : 0;
    }
}

/* Turn a published sample into the public form. */
void sps__capture_from_sample(struct sps_capture *out, const struct sps__sample *s, int64_t now) {
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        fill_reading(&out->metric[i], s->host[i], s->host_read_ns[i], now);
    out->gpu_count = s->ngpus;
    for (int g = 0; g < s->ngpus; g++) {
        const struct sps__gpu_sample *gs = &s->gpu[g];
        struct sps_capture_gpu *cg = &out->gpu[g];
        cg->index = gs->index;
        cg->source = (enum sps_source_id)gs->source;
        memcpy(cg->name, gs->name, sizeof cg->name);
        cg->name[sizeof cg->name - 1] = '\0';
        memcpy(cg->uuid, gs->uuid, sizeof cg->uuid);
        cg->uuid[sizeof cg->uuid - 1] = '\0';
        int64_t t = (unsigned)gs->source < SPS_SOURCE_COUNT ? s->read_ns[gs->source] : 0;
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            fill_reading(&cg->metric[i], gs->v[i], t, now);
    }
    /* PSS when there is a reading of it, else the RSS sum */
    out->tree_memory_metric =
        out->metric[SPS_M_WORKLOAD_PSS_BYTES].available ? SPS_M_WORKLOAD_PSS_BYTES : SPS_M_WORKLOAD_RSS_BYTES;
    out->tree_memory = out->metric[out->tree_memory_metric];
    out->sensor_count = s->nsensors;
    for (int k = 0; k < s->nsensors; k++) {
        struct sps_capture_sensor *cs = &out->sensor[k];
        memcpy(cs->label, s->sensor[k].label, sizeof cs->label);
        cs->label[sizeof cs->label - 1] = '\0';
        cs->is_cpu = s->sensor[k].is_cpu;
        fill_reading(&cs->celsius, s->sensor[k].celsius, s->read_ns[SPS_SOURCE_THERMAL], now);
    }
}

static void fill_unavailable(struct sps_capture *out) {
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        fill_reading(&out->metric[i], NAN, 0, 0);
    out->tree_memory_metric = SPS_M_WORKLOAD_PSS_BYTES;
    fill_reading(&out->tree_memory, NAN, 0, 0);
    out->gpu_count = 0;
    out->sensor_count = 0;
}

/* The fresh path and the first capture: under cap_lock. */
static const struct sps__published *slow_source(unsigned flags, int *fresh, int *rc) {
    const struct sps__published *p = find_parent();
    if (p) {
        __atomic_store_n(&current, p, __ATOMIC_RELEASE);
        if (!(flags & SPS_CAPTURE_FRESH))
            return p;
        if (!fresh_local) {
            struct sps__sampler_config cfg = {0};
            sps__sampler_config_from_env(&cfg);
            cfg.tree_pid = __atomic_load_n(&p->tree_pid, __ATOMIC_RELAXED);
            char err[256];
            fresh_local = sps__sampler_open(&cfg, err, sizeof err);
            if (!fresh_local) {
                *rc = SPS_ENOMEM;
                return NULL;
            }
        }
        sps__sampler_tick_now(fresh_local);
        *fresh = 1;
        return sps__sampler_published(fresh_local);
    }
    if (!own) {
        /* ticks once before it returns: a fresh read when one is asked for */
        *rc = start_own(NULL, (flags & SPS_CAPTURE_FRESH) != 0);
        if (*rc != SPS_OK)
            return NULL;
        *fresh = 1;
    }
    if ((flags & SPS_CAPTURE_FRESH) && !*fresh) {
        sps__sampler_tick_now(own);
        *fresh = 1;
    }
    return sps__sampler_published(own);
}

int sps_capture(struct sps_capture *out, unsigned flags) {
    if (!out)
        return SPS_EINVAL;
    pthread_once(&setup_once, setup);
    const struct sps__published *p = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    int fresh = 0, rc = SPS_OK;
    if (!p || (flags & SPS_CAPTURE_FRESH)) {
        pthread_mutex_lock(&cap_lock);
        p = slow_source(flags, &fresh, &rc);
        pthread_mutex_unlock(&cap_lock);
    }
    struct sps__sample s;
    out->fresh = fresh;
    out->published = p == parent && p != NULL;
    out->tree_pid = p ? __atomic_load_n(&p->tree_pid, __ATOMIC_RELAXED) : 0;
    int64_t now = (int64_t)sps__mono_ns();
    out->time_ns = now;
    if (!p || sps__published_read(p, &s, NULL) != 0) {
        fill_unavailable(out);
        return rc;
    }
    sps__capture_from_sample(out, &s, now);
    return SPS_OK;
}

int sps_source_status(enum sps_source_id id, struct sps_source_status *out) {
    if (!out || (unsigned)id >= SPS_SOURCE_COUNT)
        return SPS_EINVAL;
    pthread_once(&setup_once, setup);
    const struct sps__published *p = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    if (!p) {
        pthread_mutex_lock(&cap_lock);
        p = find_parent();
        pthread_mutex_unlock(&cap_lock);
    }
    if (!p)
        return SPS_ESTATE;
    struct sps__sample s;
    struct sps__published_source src[SPS_SOURCE_COUNT];
    if (sps__published_read(p, &s, src) != 0)
        return SPS_ESTATE;
    memset(out, 0, sizeof *out);
    out->id = id;
    out->name = sps__source_get(id)->name;
    out->available = src[id].available;
    out->in_use = src[id].in_use;
    out->slow = src[id].slow;
    memcpy(out->reason, src[id].reason, sizeof out->reason);
    out->reason[sizeof out->reason - 1] = '\0';
    return SPS_OK;
}

int sps__capture_published(struct sps__sample *out) {
    pthread_once(&setup_once, setup);
    pthread_mutex_lock(&cap_lock);
    const struct sps__published *p = find_parent();
    pthread_mutex_unlock(&cap_lock);
    return p ? sps__published_read(p, out, NULL) : -1;
}
