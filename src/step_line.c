/*
 * step_line.c - gather what one step owns (see step_line.h).
 */
#include "step_line.h"

#include <math.h>
#include <string.h>

#include "record_format.h"
#include "stepscope.h"

const int sps__step_line_host_metric[SPS_STEP_LINE_HOST_METRICS] = {
    SPS_M_WORKLOAD_CPU_PERCENT, SPS_M_WORKLOAD_RSS_BYTES, SPS_M_SYSTEM_CPU_PERCENT, SPS_M_SYSTEM_MEMORY_USED_BYTES};

void sps__step_line_init(struct sps__step_line *l, uint64_t index, uint32_t name, int pid, int rank, int tid,
                         int64_t start_ns, int64_t end_ns) {
    memset(l, 0, sizeof *l);
    l->index = index;
    l->name = name;
    l->pid = pid;
    l->rank = rank;
    l->tid = tid;
    l->start_ns = start_ns;
    l->end_ns = end_ns;
    for (int m = 0; m < SPS_STEP_LINE_HOST_METRICS; m++)
        l->machine.host[m] = NAN;
}

/* The entry of name among n, a new one when there is room, else NULL
 * (and the name is counted as left out). */
static struct sps__step_named *entry(struct sps__step_line *l, struct sps__step_named *a, uint32_t *n,
                                     uint32_t name) {
    for (uint32_t i = 0; i < *n; i++)
        if (a[i].name == name)
            return &a[i];
    if (*n == SPS_STEP_LINE_NAMES) {
        l->names_left_out++;
        return NULL;
    }
    struct sps__step_named *e = &a[(*n)++];
    e->name = name;
    e->ns = 0;
    e->last = NAN;
    e->first = INT64_MAX;
    return e;
}

void sps__step_line_zone(struct sps__step_line *l, uint32_t name, int64_t start, uint64_t self_ns) {
    struct sps__step_named *e = entry(l, l->zone, &l->nzones, name);
    if (!e)
        return;
    e->ns += self_ns;
    if (start < e->first)
        e->first = start;
}

void sps__step_line_wait(struct sps__step_line *l, uint32_t name, int64_t start, uint64_t self_ns) {
    struct sps__step_named *e = entry(l, l->wait, &l->nwaits, name);
    if (!e)
        return;
    e->ns += self_ns;
    if (start < e->first)
        e->first = start;
}

void sps__step_line_value(struct sps__step_line *l, uint32_t name, double v) {
    struct sps__step_named *e = entry(l, l->value, &l->nvalues, name);
    if (e)
        e->last = v;
}

void sps__step_line_count(struct sps__step_line *l, uint32_t name, uint64_t inc) {
    struct sps__step_named *e = entry(l, l->counter, &l->ncounters, name);
    if (e)
        e->ns += inc;
}
