/* followed.c - see followed.h. */
#include "live/followed.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/run.h"

/* Name entries read with one pread. */
#define NAME_BATCH 32u

int sps__followed_dir_init(struct sps__followed_dir *d, const char *records_dir, size_t each) {
    memset(d, 0, sizeof *d);
    d->each = each < sizeof(struct sps__followed) ? sizeof(struct sps__followed) : each;
    d->dir = strdup(records_dir);
    return d->dir ? 0 : -1;
}

static int known(const struct sps__followed_dir *d, const char *file) {
    for (uint32_t i = 0; i < d->nrec; i++)
        if (strcmp(d->rec[i]->file, file) == 0)
            return 1;
    return 0;
}

void sps__followed_discover(struct sps__followed_dir *d) {
    /* O_NOFOLLOW, here and for each file: a records/ swapped for a link
     * to somebody's directory is not followed, nor are its files (a
     * followed record may be written into: sps__live_peek_set_thin) */
    int dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *dir = dfd < 0 ? NULL : fdopendir(dfd);
    if (!dir) {
        if (dfd >= 0)
            close(dfd);
        return; /* not created yet */
    }
    struct dirent *e;
    while ((e = readdir(dir)) && d->nrec < SPS_LIVE_MAX_RECORDS) {
        if (!sps__is_record_name(e->d_name) || known(d, e->d_name))
            continue;
        int fd = openat(dirfd(dir), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
            continue;
        struct sps__followed *f = calloc(1, d->each);
        struct sps__followed **grown = realloc(d->rec, (d->nrec + 1u) * sizeof *grown);
        if (grown)
            d->rec = grown;
        if (!f || !grown || !(f->file = strdup(e->d_name))) {
            free(f);
            close(fd);
            break;
        }
        f->fd = fd;
        f->state = SPS_LIVE_REC_PENDING;
        d->rec[d->nrec++] = f;
    }
    closedir(dir);
}

void sps__followed_dir_close(struct sps__followed_dir *d) {
    for (uint32_t i = 0; i < d->nrec; i++) {
        struct sps__followed *f = d->rec[i];
        close(f->fd);
        free(f->kind);
        free(f->name);
        free(f->file);
        free(f);
    }
    free(d->rec);
    free(d->dir);
    memset(d, 0, sizeof *d);
}

int sps__followed_read_header(struct sps__followed *f) {
    const size_t mut = offsetof(struct sps_rec_header, state);
    if (sps__live_pread(f->fd, (char *)&f->h + mut, sizeof f->h - mut, mut) != 0)
        return -1;
    /* a file cut at its process's exit grows again when a thread still
     * running allocates: its new segments lie past the size first seen.
     * The writer extends the file before it counts the bytes in
     * arena_used, so the file is looked at again only then (an fstat at
     * every read would cost the view a tenth of its time). */
    if (f->size < f->h.arena_off || f->h.arena_used > f->size - f->h.arena_off) {
        struct stat sb;
        if (fstat(f->fd, &sb) == 0 && (uint64_t)sb.st_size > f->size)
            f->size = (uint64_t)sb.st_size;
    }
    return 0;
}

static int names_room(struct sps__followed *f, uint32_t n) {
    if (n <= f->names_alloc)
        return 0;
    uint32_t want = n < 64u ? 64u : n;
    uint8_t *kind = realloc(f->kind, want);
    if (kind)
        f->kind = kind;
    char(*name)[SPS_REC_NAME_LEN] = realloc(f->name, (size_t)want * sizeof *name);
    if (name)
        f->name = name;
    if (!kind || !name)
        return -1;
    f->names_alloc = want;
    return 0;
}

int sps__followed_read_names(struct sps__followed *f) {
    uint32_t n = f->h.names_count;
    if (n > f->h.names_cap)
        return -1;
    if (n > SPS_LIVE_MAX_NAMES)
        n = SPS_LIVE_MAX_NAMES;
    if (f->nnames >= n)
        return 0;
    if (names_room(f, n) != 0)
        return -1;
    struct sps_rec_name batch[NAME_BATCH];
    while (f->nnames < n) {
        uint32_t k = n - f->nnames < NAME_BATCH ? n - f->nnames : NAME_BATCH;
        if (sps__live_pread(f->fd, batch, k * sizeof *batch, f->h.names_off + (uint64_t)f->nnames * sizeof *batch) != 0)
            return -1;
        for (uint32_t i = 0; i < k; i++) {
            const struct sps_rec_name *e = &batch[i];
            if (e->kind < SPS_KIND_ZONE || e->kind > SPS_KIND_LAST || !memchr(e->name, '\0', sizeof e->name) ||
                !e->name[0])
                return 0; /* not published whole yet */
            f->kind[f->nnames] = (uint8_t)e->kind;
            memcpy(f->name[f->nnames], e->name, SPS_REC_NAME_LEN);
            f->nnames++;
        }
    }
    return 0;
}

uint32_t sps__followed_threads(const struct sps__followed *f) {
    uint32_t n = f->h.threads_count;
    if (n > f->h.threads_cap)
        return 0;
    /* no more than the file holds segments and rings for: more share
     * rings (record_format.h), and the stream would read the same events
     * once per segment */
    uint64_t fit = f->size > f->h.arena_off ? (f->size - f->h.arena_off) / sps_rec_thread_min_bytes(&f->h) : 0;
    if (n > fit)
        n = (uint32_t)fit;
    return n < SPS_LIVE_MAX_THREADS ? n : SPS_LIVE_MAX_THREADS;
}

int sps__followed_thread_seg(const struct sps__followed *f, uint32_t i, uint64_t *off) {
    if (sps__live_pread(f->fd, off, sizeof *off, f->h.threads_off + (uint64_t)i * sizeof *off) != 0 ||
        !sps__followed_in_arena(f, *off, sizeof(struct sps_rec_thread)))
        return -1;
    return 0;
}

int sps__followed_refresh(struct sps__followed *f) {
    if (f->state == SPS_LIVE_REC_PENDING)
        f->state = sps__live_rec_header(f->fd, &f->h, &f->size);
    return f->state == SPS_LIVE_REC_OK && sps__followed_read_header(f) == 0 && sps__followed_read_names(f) == 0;
}
