/*
 * torch_memory.h - torch.cuda's allocator memory over the run, from the
 * values the Python module records at each step's end
 * (python/src/torch_memory.c): the largest peak known, the memory at the
 * run's last step, how many steps knew their peak, and the per-step
 * growth the leak analysis found (leaks.h, series
 * "torch_cuda_allocated_bytes").  One line in the terminal summary, an
 * object in report.json's analysis ("torch_cuda_memory",
 * docs/report-format.md).
 *
 * Pure: a function of the Run model and the leak analysis, no I/O.
 */
#ifndef SPS_ANALYSIS_TORCH_MEMORY_H
#define SPS_ANALYSIS_TORCH_MEMORY_H

#include <stddef.h>

#include "analysis/leaks.h"

struct sps_run;
struct sps_jw;

/* The value names the Python module records (docs/python.md). */
#define SPS_TORCH_ALLOCATED "torch.cuda.allocated_bytes"
#define SPS_TORCH_RESERVED "torch.cuda.reserved_bytes"
#define SPS_TORCH_PEAK_ALLOCATED "torch.cuda.peak_allocated_bytes"
#define SPS_TORCH_PEAK_RESERVED "torch.cuda.peak_reserved_bytes"

struct sps_torch_memory {
    int present;              /* some step carries torch.cuda.allocated_bytes; all else is 0/NAN without */
    int pid, tid;             /* the step stream summarised (the leak analysis's main one, else the first
                                 stream that carries the value) */
    size_t processes;         /* processes whose rows carry torch.cuda.allocated_bytes */
    size_t steps;             /* that stream's rows */
    size_t steps_read;        /* of them, rows carrying torch.cuda.allocated_bytes */
    size_t peak_known;        /* rows carrying torch.cuda.peak_allocated_bytes: their peak within the step */
    double peak_allocated_bytes; /* the largest step peak known, or allocated reading, NAN: none */
    double peak_reserved_bytes;  /* likewise for reserved */
    double end_allocated_bytes, end_reserved_bytes; /* the last row read */
    /* the leak analysis's verdict and slope on torch_cuda_allocated_bytes
     * (NAN, unknown: not judged) */
    enum sps_leak_verdict verdict;
    double growth_bytes_per_step;
};

/* Summarise run's rows (built) with its leak analysis l (may be NULL).
 * Thread-safe. */
void sps__torch_memory_summarize(const struct sps_run *run, const struct sps_leaks *l, struct sps_torch_memory *out);

/* Write "torch_cuda_memory": {...} (only when present) into the open
 * analysis object (src/render/report_json_analysis.c). */
void sps__torch_memory_json(struct sps_jw *w, const struct sps_torch_memory *t);

#endif /* SPS_ANALYSIS_TORCH_MEMORY_H */
