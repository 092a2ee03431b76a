/*
 * published.h - the latest sample, shared under a seqlock.
 *
 * The sampler writes its latest sample into a struct sps__published; any
 * number of readers copy it out without a lock or a system call.  Under
 * `stepscope run` the struct is a file in the run directory (capture.bin)
 * that the CLI maps shared and every workload process maps read-only, so a
 * child's sps_capture() costs a copy; in a process with its own sampler it
 * lives in that process's memory.  One code path.
 *
 * Seqlock: the writer makes seq odd, writes, makes it even again; a reader
 * copies between two reads of seq and retries if seq was odd or changed.
 * Both sides move the data as relaxed 8-byte atomic words, so the race a
 * seqlock allows is not a data race in C11 terms (and TSan agrees).
 *
 * The layout is the file format: version and size are checked by readers,
 * which ignore a file they do not understand (the library then samples for
 * itself).
 */
#ifndef SPS_SAMPLER_PUBLISHED_H
#define SPS_SAMPLER_PUBLISHED_H

#include <stdint.h>

#include "sources/source.h"

#define SPS_PUBLISHED_MAGIC "SPSCAPT"
#define SPS_PUBLISHED_VERSION 3u /* 2: per-metric read times; 3: the sched source and its metrics */
#define SPS_PUBLISHED_FILE "capture.bin"

struct sps__published_source {
    int32_t available, in_use, slow, pad_;
    char reason[192];
};

struct sps__published {
    char magic[8];
    uint32_t version;
    uint32_t size;    /* sizeof(struct sps__published) */
    int32_t tree_pid; /* root of the process tree the workload metrics cover */
    int32_t writer_pid;
    uint64_t seq;     /* even: stable; odd: being written; 0: nothing yet */
    struct sps__published_source sources[SPS_SOURCE_COUNT];
    struct sps__sample sample;
};

/* Initialise an empty published area (magic, version, size; seq 0). */
void sps__published_init(struct sps__published *p, int tree_pid);

/* Write sample and the source statuses (may be NULL: unchanged).  One
 * writer at a time (the sampler's lock). */
void sps__published_write(struct sps__published *p, const struct sps__sample *sample,
                          const struct sps__published_source *sources);

/* Copy the latest sample (only its filled GPU and sensor entries) and, when
 * sources is not NULL, the source statuses.  Returns 0, or -1 when nothing
 * was published yet. */
int sps__published_read(const struct sps__published *p, struct sps__sample *sample,
                        struct sps__published_source *sources);

/* Does p (size bytes mapped) look like a published area this build reads? */
int sps__published_valid(const struct sps__published *p, uint64_t size);

#endif /* SPS_SAMPLER_PUBLISHED_H */
