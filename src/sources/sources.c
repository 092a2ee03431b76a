/* sources.c - the table of sources, in the order the sampler reads them. */
#include "sources/source.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static const struct sps__source *const sources[SPS_SOURCE_COUNT] = {
    [SPS_SOURCE_PROC] = &sps__source_proc,
    [SPS_SOURCE_THERMAL] = &sps__source_thermal,
    [SPS_SOURCE_RAPL] = &sps__source_rapl,
    [SPS_SOURCE_NVML] = &sps__source_nvml,
    [SPS_SOURCE_DRM] = &sps__source_drm,
    [SPS_SOURCE_NVIDIA_SMI] = &sps__source_nvidia_smi,
    [SPS_SOURCE_SCHED] = &sps__source_sched,
};

const struct sps__source *sps__source_get(enum sps_source_id id) {
    return (unsigned)id < SPS_SOURCE_COUNT ? sources[id] : NULL;
}

/* The catalogue names each host metric's source as text; the sampler asks
 * for the id on every tick, so the names are matched once. */
static enum sps_source_id host_metric_source[SPS_HOST_METRIC_COUNT];
static pthread_once_t host_metric_source_once = PTHREAD_ONCE_INIT;

static void match_host_metric_sources(void) {
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        const char *name = sps_host_metric_info(i)->source;
        host_metric_source[i] = SPS_SOURCE_PROC;
        for (int id = 0; id < SPS_SOURCE_COUNT; id++)
            if (strcmp(sources[id]->name, name) == 0)
                host_metric_source[i] = (enum sps_source_id)id;
    }
}

const enum sps_source_id *sps__host_metric_sources(void) {
    pthread_once(&host_metric_source_once, match_host_metric_sources);
    return host_metric_source;
}

enum sps_source_id sps__host_metric_source(int metric) {
    return metric >= 0 && metric < SPS_HOST_METRIC_COUNT ? sps__host_metric_sources()[metric] : SPS_SOURCE_PROC;
}

void sps__sample_clear(struct sps__sample *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++)
        s->host[i] = NAN;
    for (int g = 0; g < SPS_CAPTURE_MAX_GPUS; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++)
            s->gpu[g].v[i] = NAN;
    for (int i = 0; i < SPS_CAPTURE_MAX_SENSORS; i++)
        s->sensor[i].celsius = NAN;
}
