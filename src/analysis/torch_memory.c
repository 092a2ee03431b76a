/*
 * torch_memory.c - torch.cuda's allocator memory over the run (see
 * torch_memory.h).
 */
#include <math.h>
#include <string.h>

#include "analysis/torch_memory.h"
#include "model/run.h"
#include "stepscope.h"

/* The summary index of the value called name, or -1. */
static long value_index(const struct sps_run *run, const char *name) {
    for (size_t i = 0; i < run->nnames; i++)
        if (run->names[i].kind == SPS_KIND_VALUE && strcmp(run->names[i].name, name) == 0)
            return (long)i;
    return -1;
}

static double cell(const struct sps_step_row *r, long idx) {
    return idx >= 0 ? r->by_name[idx] : NAN;
}

static double max_known(double a, double b) {
    return isnan(a) ? b : isnan(b) ? a : fmax(a, b);
}

/* The stream summarised: the leak analysis's main one when it carries the
 * value, else the first row's that does.  Returns its first row, or -1. */
static long pick_stream(const struct sps_run *run, const struct sps_leaks *l, long alloc) {
    long first = -1;
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (isnan(cell(r, alloc)))
            continue;
        if (first < 0)
            first = (long)i;
        if (l && l->pid >= 0 && run->procs[r->process].pid == l->pid && r->tid == l->tid)
            return (long)i;
    }
    return first;
}

void sps__torch_memory_summarize(const struct sps_run *run, const struct sps_leaks *l, struct sps_torch_memory *out) {
    memset(out, 0, sizeof *out);
    out->pid = out->tid = -1;
    out->peak_allocated_bytes = out->peak_reserved_bytes = NAN;
    out->end_allocated_bytes = out->end_reserved_bytes = NAN;
    out->growth_bytes_per_step = NAN;
    out->verdict = SPS_LEAK_UNKNOWN;
    long alloc = value_index(run, SPS_TORCH_ALLOCATED);
    long at = alloc >= 0 ? pick_stream(run, l, alloc) : -1;
    if (at < 0)
        return;
    long reserved = value_index(run, SPS_TORCH_RESERVED);
    long peak = value_index(run, SPS_TORCH_PEAK_ALLOCATED);
    long peak_reserved = value_index(run, SPS_TORCH_PEAK_RESERVED);
    const struct sps_step_row *stream = &run->steps[at];
    out->present = 1;
    out->pid = run->procs[stream->process].pid;
    out->tid = stream->tid;
    for (size_t pi = 0; pi < run->nprocs; pi++)
        for (size_t i = 0; i < run->nsteps; i++)
            if (run->steps[i].process == pi && !isnan(cell(&run->steps[i], alloc))) {
                out->processes++;
                break;
            }
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *r = &run->steps[i];
        if (r->process != stream->process || r->tid != stream->tid || r->name != stream->name)
            continue;
        out->steps++;
        double a = cell(r, alloc);
        if (isnan(a))
            continue;
        out->steps_read++;
        out->peak_known += !isnan(cell(r, peak));
        out->peak_allocated_bytes = max_known(out->peak_allocated_bytes, max_known(a, cell(r, peak)));
        out->peak_reserved_bytes =
            max_known(out->peak_reserved_bytes, max_known(cell(r, reserved), cell(r, peak_reserved)));
        out->end_allocated_bytes = a;
        out->end_reserved_bytes = cell(r, reserved);
    }
    for (size_t i = 0; l && i < l->nseries; i++) {
        const struct sps_leak_series *s = &l->series[i];
        if (s->scope != SPS_LEAK_SCOPE_TORCH || s->pid != out->pid)
            continue;
        out->verdict = s->verdict;
        if (s->axis == SPS_LEAK_AXIS_STEPS)
            out->growth_bytes_per_step = s->slope;
    }
}
