/*
 * followed.h - the records of a directory followed while their processes
 * still write them: what the live view (peek.c), the live stream
 * (stream.c) and the Prometheus collector (prom_collect.c) share.
 *
 * A followed record is its open file, its header (the immutable part
 * checked once, the mutable part reread at each refresh) and the names it
 * has published so far.  Each reader keeps what it computes from the
 * records in a struct of its own that begins with a struct sps__followed
 * (sps__followed_dir_init is told that struct's size), and casts back.
 *
 * Not thread-safe: one reader thread owns a directory and its records.
 */
#ifndef SPS_LIVE_FOLLOWED_H
#define SPS_LIVE_FOLLOWED_H

#include <stddef.h>
#include <stdint.h>

#include "live/record_file.h"
#include "record_format.h"

/* Bounds on what one read looks at, so a huge or hostile directory or
 * record costs a bounded amount of work.  A stepscope recorder publishes
 * at most 4096 names; names past the bound are not followed. */
#define SPS_LIVE_MAX_RECORDS 1024u
#define SPS_LIVE_MAX_NAMES 8192u
/* A stepscope recorder gives at most 1024 threads a segment; threads
 * past the bound are not read. */
#define SPS_LIVE_MAX_THREADS 4096u

struct sps__followed {
    char *file; /* name within the directory */
    int fd;
    enum sps__live_rec_state state;
    uint64_t size;           /* of the file, as of the last refresh */
    struct sps_rec_header h; /* immutable part checked once; mutable part refreshed */
    uint32_t nnames;         /* names cached below, ids 1..nnames */
    uint32_t names_alloc;    /* entries kind and name have room for */
    uint8_t *kind;           /* by name id - 1 */
    char (*name)[SPS_REC_NAME_LEN];
};

struct sps__followed_dir {
    char *dir;
    size_t each; /* bytes of one reader's record struct, a struct sps__followed first */
    struct sps__followed **rec;
    uint32_t nrec;
};

/* Follow the records under records_dir (which need not exist yet); each
 * is allocated `each` bytes, zeroed.  0, or -1 when out of memory. */
int sps__followed_dir_init(struct sps__followed_dir *d, const char *records_dir, size_t each);

/* Start following the record files that appeared since the last call
 * (as PENDING: no header read yet).  Files that cannot be opened are
 * looked at again next time. */
void sps__followed_discover(struct sps__followed_dir *d);

/* Close and free every record and the directory's name; the reader frees
 * what it added to its records first.  d may be zeroed (never inited). */
void sps__followed_dir_close(struct sps__followed_dir *d);

/* The header's mutable part, and the file's size when the arena the
 * writer has handed out (arena_used) reaches past the size known.
 * 0, or -1 when the record cannot be read now. */
int sps__followed_read_header(struct sps__followed *f);

/*
 * Cache the names published since the last call (up to
 * SPS_LIVE_MAX_NAMES), from the names_count of the last header read.  A
 * published entry of an unknown kind, or an empty or unterminated name, is
 * not whole yet (src/model/reader.c refuses it): caching stops there until
 * a later call.  0, or -1 when the record cannot be read now or out of
 * memory (the names cached stay).
 */
int sps__followed_read_names(struct sps__followed *f);

/* Is off a place where the writer could have put len bytes of a thing
 * that lives in the arena (in the file as of the last refresh)? */
static inline int sps__followed_in_arena(const struct sps__followed *f, uint64_t off, uint64_t len) {
    return off >= f->h.arena_off && off % 8 == 0 && off <= f->size && len <= f->size - off;
}

/* The threads f has published as of the last refresh, at most
 * SPS_LIVE_MAX_THREADS and at most as many as the file has room for
 * (sps_rec_thread_min_bytes); 0 while the count is past the table. */
uint32_t sps__followed_threads(const struct sps__followed *f);

/* The offset of thread i's segment in *off: 0, or -1 while it is not
 * readable (published, but its entry or segment not in the file yet). */
int sps__followed_thread_seg(const struct sps__followed *f, uint32_t i, uint64_t *off);

/* One read's look at f: its header checked if still PENDING, then the
 * mutable part and the new names.  1 when f can be read this time, else 0. */
int sps__followed_refresh(struct sps__followed *f);

#endif /* SPS_LIVE_FOLLOWED_H */
