/*
 * peek.h - the workload's steps as they stand now, read from the records
 * in a run directory while their writers are still running (the data of
 * `stepscope run`'s live view).
 *
 * It reads only what the view shows, with pread and never a mapping (a
 * record cut short or on a full filesystem gives a short read here, not a
 * SIGBUS): each record's header and thread directory, the thread segments'
 * heads, the aggregates of the thread that has completed the most steps,
 * that step's histogram and its latest event.  A few dozen small reads per
 * record, whatever the ring sizes.  Nothing read is trusted: offsets are
 * checked against the file, and a record that does not look right yet (a
 * header still being written) is tried again next time; one that is
 * corrupt is left alone.
 *
 * Not thread-safe: one thread owns a struct sps__live_peek.  The writers
 * are other processes and need no cooperation beyond the record format's
 * release stores.
 */
#ifndef SPS_LIVE_PEEK_H
#define SPS_LIVE_PEEK_H

#include <stdint.h>

#define SPS_LIVE_MAX_PHASES 6
#define SPS_LIVE_NAME_LEN 48

/* One part of the phase split: a zone's self time (time in it and not in
 * a zone nested in it) on the stepping thread. */
struct sps__live_phase {
    char name[SPS_LIVE_NAME_LEN];
    uint64_t self_ns;
};

struct sps__live_steps {
    int records;   /* record files read this time */
    int have_step; /* a step has completed somewhere */
    /* The step with the most completions over all processes and threads
     * (ranks of a distributed job each count their own: the busiest is
     * shown). */
    char step_name[SPS_LIVE_NAME_LEN];
    int pid, rank; /* the process that recorded it; rank -1 when not set */
    uint64_t count;      /* steps completed */
    uint64_t total_ns;   /* their summed duration */
    uint64_t last_ns;    /* the latest step's duration; 0 when unknown */
    uint64_t median_ns;  /* over all of them, from the histogram (within 0.4%) */
    /* Self time on the stepping thread by zone, largest first, for the
     * run so far; the step's own self time (in no zone) and every zone
     * past the first SPS_LIVE_MAX_PHASES - 1 are summed into a last entry
     * named "other".  phase_total_ns is the sum of all of them. */
    int nphases;
    struct sps__live_phase phase[SPS_LIVE_MAX_PHASES];
    uint64_t phase_total_ns;
    /* What every thread of every record has paid for so far (the overhead
     * guard's count): zones, steps and micro-steps offered to the rings,
     * values and counter increments offered, and zones the thin level
     * left out. */
    uint64_t zones_offered, values_offered, zones_thinned;
    /* and the Python module's own work on top, in ns: each record's counts
     * of what its Python face recorded times the costs it measured (the
     * header's py_* and hook_* fields; a cost not measured counts 0) */
    double python_ns;
    uint32_t thin_level; /* the lowest thin level among the records read */
    /* A distributed job: the ranks (records with a rank) that completed a
     * step, and the one the others wait for so far: the highest compute a
     * step (its busiest stepping thread's step time less its time in wait
     * zones, over the run so far), by excess_ms over the other ranks'
     * median.  slowest_rank is -1 with fewer than two ranks or when no
     * rank recorded a wait (then a collective equalises the ranks' step
     * times and they cannot name one). */
    int nranks;
    int slowest_rank;
    double slowest_excess_ms;
};

struct sps__live_peek;

/* Follow the records in records_dir (which may not exist yet).  Returns
 * NULL only when out of memory.  The caller owns the result. */
struct sps__live_peek *sps__live_peek_open(const char *records_dir);

/* Read the records as they are now into *out.  Records that appear later
 * (a DataLoader worker forked) are picked up.  Returns 0; a record that
 * cannot be read is skipped, not an error. */
int sps__live_peek_read(struct sps__live_peek *pk, struct sps__live_steps *out);

/* Raise the thin level (enum sps_thin_level) of every record read so far
 * that has a lower one to level, with since_ns (CLOCK_MONOTONIC) as when
 * thinning began where none is set: two pwrites into the header, which
 * its threads reread at their next step end.  Returns how many records
 * were written; a record that cannot be opened for writing is skipped
 * (the next call tries again). */
int sps__live_peek_set_thin(struct sps__live_peek *pk, uint32_t level, uint64_t since_ns);

/* Close every file and free pk.  NULL is a no-op. */
void sps__live_peek_close(struct sps__live_peek *pk);

#endif /* SPS_LIVE_PEEK_H */
