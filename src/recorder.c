/*
 * recorder.c - the writing side of the flight recorder: the process's record,
 * per-thread segments, name interning, and the zone/value/counter hot paths.
 *
 * Everything that takes a lock, allocates or makes a system call happens on
 * a thread's first event or a site's first use ("prepare"); after that a zone
 * is two timestamps and a handful of stores into memory that only its thread
 * writes.  Because that memory is a MAP_SHARED file mapping in a run
 * directory, what was recorded survives any death of the process.
 */
#include "recorder.h"

#include <stddef.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "crc32.h"
#include "nvtx.h"
#include "platform/platform.h"
#include "record_format.h"
#include "record_clock.h"
#include "platform/env_path.h"

#if defined(__GNUC__) || defined(__clang__)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define COLD __attribute__((noinline, cold))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define UNLIKELY(x) (x)
#define LIKELY(x) (x)
#define COLD
#define ALWAYS_INLINE inline
#endif

/* The capacities of every record this library writes. */
enum { NAMES_CAP = 4096, THREADS_CAP = 1024 };

volatile int sps__enabled = 1;

enum proc_state {
    PROC_UNINIT = 0, /* nothing recorded yet */
    PROC_READY,      /* the record is open */
    PROC_FORKED,     /* a fork child that has not recorded yet */
    PROC_FAILED      /* recording is off for this process (see reason) */
};

/* Open addressing over the record's names (intern): twice their cap, so
 * a probe meets an empty slot within a few steps even when the table is
 * full.  Slots hold ids (1..NAMES_CAP), 0 is empty. */
enum { NAME_SLOTS = 2 * NAMES_CAP };
_Static_assert((NAME_SLOTS & (NAME_SLOTS - 1)) == 0, "NAME_SLOTS is a power of two");
_Static_assert(NAMES_CAP <= UINT16_MAX, "a name slot holds an id in 16 bits");

/* A site made at run time by sps_site_get(), chained in its hash bucket.
 * Never freed or moved: callers keep the pointer for the process's life. */
struct dyn_site {
    struct sps_site site;
    struct dyn_site *next; /* the next in its bucket */
    uint64_t hash;         /* of (name, kind): regrowing does not rehash the name */
    char name[];
};

static struct {
    pthread_mutex_t lock;
    int state; /* enum proc_state; read without the lock on slow paths only */
    enum sps_mode mode;
    pid_t pid;
    unsigned char *base;
    size_t size;
    int fd; /* the record file, -1 in memory mode */
    dev_t fd_dev; /* what fd must still be: the program may close it and */
    ino_t fd_ino; /* reuse the number for a file of its own */
    struct sps_rec_header *hdr;
    uint32_t sink_id; /* the id refused names get; its data is discarded */
    char path[512];
    char reason[256];
    pthread_key_t thread_key;
    int key_created;
    /* what a fork child takes over from its parent's record */
    unsigned char *inherited_base;
    size_t inherited_size;
    struct sps_rec_frame fork_stack[SPS_REC_STACK_FRAMES];
    uint32_t fork_depth;
    void *fork_thread; /* the TLS block of the thread that forked */
    /* sps_site_get()'s sites by (name, kind): a program that makes a site
     * per generated name (the Python module does, per new name) must not
     * pay for every earlier one.  Grown (doubled) at a load of 1. */
    struct dyn_site **dyn_buckets;
    size_t dyn_nbuckets; /* a power of two, or 0 before the first site */
    size_t dyn_count;
    /* the record's names by (name, kind), ids in the record (intern);
     * rebuilt from the record when one is opened (proc_open) */
    uint16_t name_slots[NAME_SLOTS];
    /* segments of exited threads, by directory index, for the next new
     * thread: a program that starts a thread per request or per epoch
     * would otherwise run out of record after a few dozen */
    uint32_t free_segs[THREADS_CAP];
    uint32_t nfree;
    volatile int anchor_busy;
} P = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* The layers above register these (recorder.h); read with relaxed loads:
 * a hook only has to arrive eventually, and it is one pointer. */
static sps__recorder_hook open_hook, exit_hook, step_end_hook;

void sps__recorder_set_open_hook(sps__recorder_hook fn) {
    __atomic_store_n(&open_hook, fn, __ATOMIC_RELAXED);
}

void sps__recorder_set_exit_hook(sps__recorder_hook fn) {
    __atomic_store_n(&exit_hook, fn, __ATOMIC_RELAXED);
}

void sps__recorder_set_step_end_hook(sps__recorder_hook fn) {
    __atomic_store_n(&step_end_hook, fn, __ATOMIC_RELAXED);
}

/* The calling thread's view of its segment, kept in TLS so the hot path
 * reaches everything with one fs-relative load.  initial-exec: no
 * __tls_get_addr call, even in the shared library. */
struct tls_state {
    struct sps_rec_thread *seg;
    unsigned char *base;
    uint32_t *agg_index;
    struct sps_rec_event *ring[SPS_RING_SLOTS];
    uint64_t mask[SPS_RING_SLOTS];
    /* Begins deeper than this take the cold path: SPS_REC_MAX_DEPTH, or
     * while the overhead guard thins, the levels it allows below a step
     * (thin_max_depth), so an unthinned begin pays one compare; 0 with an
     * NVTX tool attached, so that every begin and phase takes the cold
     * path, which announces it (set_depth_limit). */
    uint32_t max_depth;
    uint32_t thin_depth; /* the levels the overhead guard allows (thin_max_depth) */
    int refused; /* this thread cannot record (record full or failed) */
    int nvtx;    /* an NVTX tool is attached: zones push and pop its ranges */
    /* the rings' first pages, to fault in once the thread is registered
     * (prefault_rings), outside P.lock */
    unsigned char *prefault_at;
    size_t prefault_len;
    struct nvtx_stack *nvtx_stack; /* with a tool attached: the ranges pushed */
};
static __thread struct tls_state T __attribute__((tls_model("initial-exec")));

/*
 * NVTX (nvtx.h): with a tool attached, a thread's T.nvtx is 1 and its
 * T.max_depth 0, so its begins and phases leave the hot path at the depth
 * check they make anyway, and its ends at the check for an end that is not
 * the innermost frame's, which also reads T.nvtx; the cold paths push and
 * pop the tool's ranges.  Without a tool, begins and phases pay nothing and
 * an end one load of T.nvtx (the cache line T.seg is in) and a branch
 * never taken.  SPS_NVTX_HOOK=0 compiles that out: bench/bench_nvtx.c
 * builds the recorder both ways to measure the difference.
 */
#ifndef SPS_NVTX_HOOK
#define SPS_NVTX_HOOK 1
#endif
#define NVTX_ANNOUNCE() (SPS_NVTX_HOOK && UNLIKELY(T.nvtx))

/* The ranges a thread has pushed: the (name, start) of the frame each
 * level stands for.  Whatever changed the stack (an end, a chained phase,
 * a zone taken back, inner zones ended implicitly by an outer end), the
 * ranges are brought back in line with the open frames by popping the
 * levels that no longer match and pushing what is open above them
 * (nvtx_sync).  On the heap, made on the thread's first range: in TLS it
 * would grow the library's static TLS block, which a dlopen()ed copy (the
 * Python module) must find room for beside everything else loaded. */
struct nvtx_stack {
    uint32_t depth;
    uint32_t name[SPS_REC_STACK_FRAMES];
    uint64_t start[SPS_REC_STACK_FRAMES];
};

/* ------------------------------------------------------------- configuration */

static uint64_t env_u64(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi) {
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return dflt;
    return v;
}

static uint32_t pow2_at_least(uint64_t v) {
    uint32_t p = 1;
    while (p < v && p < (1u << 30))
        p <<= 1;
    return p;
}

static int env_int(const char *name) {
    const char *s = getenv(name);
    if (!s || !*s)
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    return (*end || v < 0 || v > INT32_MAX) ? -1 : (int)v;
}

/* ------------------------------------------------------------------ arena */

/* Zone-like aggregates (with their 58 KiB histogram) and thread segments
 * start on a page; value and counter aggregates share pages. */
static uint64_t agg_align(uint32_t kind) {
    return kind == SPS_KIND_VALUE || kind == SPS_KIND_COUNTER ? 64u : 4096u;
}

/* --------------------------------------------------------------- the record */

__attribute__((format(printf, 1, 2))) static void set_reason(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P.reason, sizeof P.reason, fmt, ap);
    va_end(ap);
}

/* The layout's fixed part: the header page, the name table (from
 * SPS_REC_HEADER_SIZE), the thread directory, then the arena on a page. */
static uint64_t threads_offset(uint32_t names_cap) {
    return SPS_REC_HEADER_SIZE + (uint64_t)names_cap * sizeof(struct sps_rec_name);
}

static uint64_t arena_offset(uint32_t names_cap, uint32_t threads_cap) {
    return (threads_offset(names_cap) + (uint64_t)threads_cap * sizeof(uint64_t) + 4095u) & ~(uint64_t)4095u;
}

/* Give [off, off+len) of a file-backed record real disk blocks.  The file
 * is sparse, and a store into a hole the filesystem cannot fill raises
 * SIGBUS in the workload: so every range the hot paths will write is
 * reserved here, on a slow path, where a full disk is just a refusal. */
/* The record file's descriptor, or -1 when it can no longer be opened.
 * P.lock held. */
static int record_fd(void) {
    struct stat st;
    if (P.fd < 0 || fstat(P.fd, &st) != 0 || st.st_dev != P.fd_dev || st.st_ino != P.fd_ino) {
        /* The program closed our descriptor (daemons close everything)
         * and the number may now be one of its files: never touch it, and
         * reopen the record by name instead. */
        P.fd = open(P.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (P.fd < 0 || fstat(P.fd, &st) != 0 || st.st_dev != P.fd_dev || st.st_ino != P.fd_ino) {
            if (P.fd >= 0)
                close(P.fd);
            P.fd = -1;
        }
    }
    return P.fd;
}

static int reserve(uint64_t off, uint64_t len) {
    if (P.mode != SPS_MODE_FILE)
        return 0; /* memory mode */
    if (record_fd() < 0) {
        snprintf(P.hdr->problem, sizeof P.hdr->problem, "the record file %s can no longer be opened", P.path);
        return -1;
    }
    int e = posix_fallocate(P.fd, (off_t)off, (off_t)len);
    if (e == 0)
        return 0;
    /* into the record too, so the report can say why data is missing */
    snprintf(P.hdr->problem, sizeof P.hdr->problem, "cannot reserve %llu bytes in %s: %s",
             (unsigned long long)len, P.path, strerror(e));
    return -1;
}

/* size bytes of the arena at an offset that is a multiple of align (a
 * power of two); 0 when the record is full.  P.lock held. */
static uint64_t arena_alloc(uint64_t size, uint64_t align) {
    struct sps_rec_header *h = P.hdr;
    uint64_t off = h->arena_off + ((h->arena_used + align - 1u) & ~(align - 1u));
    if (off + size > h->file_size) {
        snprintf(h->problem, sizeof h->problem, "the record is full (%llu MiB; STEPSCOPE_RECORD_MB sets it)",
                 (unsigned long long)(h->file_size >> 20));
        return 0;
    }
    if (reserve(off, size) != 0)
        return 0;
    __atomic_store_n(&h->arena_used, off + size - h->arena_off, __ATOMIC_RELEASE);
    return off;
}

/* A record is named <pid>-<seq>.sps with seq below this: an image that
 * finds them all taken (its pid exec'd that often) records in memory. */
#define SPS_RECORDS_PER_PID 1000

/* Why an O_DIRECTORY|O_NOFOLLOW open of dfd's name failed with errno e. */
static const char *not_dir_reason(int dfd, const char *name, int e) {
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return "it is a symbolic link (not followed)";
    return strerror(e);
}

/* run_dir/records, made when missing, opened without following a link at
 * either name (a records/ planted as a link to somebody's directory is
 * refused, never written into); -1 with the reason set. */
static int open_records_dir(const char *run_dir) {
    int dfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        set_reason("cannot create records in %s: %s", run_dir, not_dir_reason(AT_FDCWD, run_dir, errno));
        return -1;
    }
    if (mkdirat(dfd, "records", 0777) != 0 && errno != EEXIST) {
        set_reason("cannot create %s/records: %s", run_dir, strerror(errno));
        close(dfd);
        return -1;
    }
    int rfd = openat(dfd, "records", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rfd < 0)
        set_reason("cannot create records in %s/records: %s", run_dir, not_dir_reason(dfd, "records", errno));
    close(dfd);
    return rfd;
}

static int open_record_file(const char *run_dir, size_t size, uint64_t fixed) {
    char dir[512];
    if (snprintf(dir, sizeof dir, "%s/records", run_dir) >= (int)sizeof dir) {
        set_reason("run directory path too long: %s", run_dir);
        return -1;
    }
    int rfd = open_records_dir(run_dir);
    if (rfd < 0)
        return -1;
    int seq;
    for (seq = 0; seq < SPS_RECORDS_PER_PID; seq++) {
        char name[64];
        snprintf(name, sizeof name, "%d-%d.sps", (int)getpid(), seq);
        if (snprintf(P.path, sizeof P.path, "%s/%s", dir, name) >= (int)sizeof P.path) {
            set_reason("run directory path too long: %s", run_dir);
            break;
        }
        /* O_EXCL|O_NOFOLLOW: a fresh file, never one (or a link) planted at the name */
        int fd = openat(rfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0) {
            set_reason("cannot create %s: %s", P.path, strerror(errno));
            break;
        }
        if (ftruncate(fd, (off_t)size) != 0) {
            set_reason("cannot size %s: %s", P.path, strerror(errno));
            close(fd);
            unlinkat(rfd, name, 0);
            break;
        }
        int e = posix_fallocate(fd, 0, (off_t)fixed);
        if (e != 0) {
            set_reason("cannot reserve space in %s: %s", P.path, strerror(e));
            close(fd);
            unlinkat(rfd, name, 0);
            break;
        }
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            set_reason("cannot map %s: %s", P.path, strerror(errno));
            close(fd);
            unlinkat(rfd, name, 0);
            break;
        }
        struct stat st;
        fstat(fd, &st);
        P.base = m;
        P.fd = fd; /* kept open: arena allocations reserve their blocks */
        P.fd_dev = st.st_dev;
        P.fd_ino = st.st_ino;
        close(rfd);
        return 0;
    }
    close(rfd);
    if (seq == SPS_RECORDS_PER_PID) /* every name taken: a process that exec'd itself that often */
        set_reason("%d record files of pid %d already in %s", SPS_RECORDS_PER_PID, (int)getpid(), dir);
    P.path[0] = '\0';
    return -1;
}

static void copy_inherited_names(void) {
    const struct sps_rec_header *old = (const void *)P.inherited_base;
    uint32_t n = __atomic_load_n(&old->names_count, __ATOMIC_ACQUIRE);
    if (n > P.hdr->names_cap)
        n = P.hdr->names_cap;
    memcpy(P.base + P.hdr->names_off, P.inherited_base + old->names_off,
           (size_t)n * sizeof(struct sps_rec_name));
    P.hdr->names_count = n;
}

static void write_header(uint64_t size, uint32_t names_cap, uint32_t threads_cap,
                         const uint32_t ring_cap[SPS_RING_COUNT], uint32_t policy) {
    struct sps_rec_header *h = (struct sps_rec_header *)P.base;
    P.hdr = h;
    h->version = SPS_REC_VERSION;
    h->header_size = SPS_REC_HEADER_SIZE;
    h->endian_check = SPS_REC_ENDIAN_CHECK;
    h->clock_source = (uint32_t)sps__clock.source;
    h->file_size = size;
    h->pid = (int32_t)getpid();
    h->ppid = (int32_t)getppid();
    h->rank = env_int("RANK");
    h->local_rank = env_int("LOCAL_RANK");
    h->world_size = env_int("WORLD_SIZE");
    h->ring_policy = policy;
    h->ticks_per_second = sps__clock.ticks_per_second;
    h->ns_mult = sps__clock.ns_mult;
    sps__clock_anchor(&h->anchor0_ticks, &h->anchor0_mono_ns);
    h->start_realtime_ns = sps__realtime_ns();
    h->names_off = SPS_REC_HEADER_SIZE;
    h->names_cap = names_cap;
    h->threads_off = threads_offset(names_cap);
    h->threads_cap = threads_cap;
    h->arena_off = arena_offset(names_cap, threads_cap);
    memcpy(h->ring_cap, ring_cap, sizeof h->ring_cap);
    h->hist_buckets = SPS_HIST_BUCKETS;
    /* STEPSCOPE_HOSTNAME names the host instead: nodes of a test on one
     * machine, or a host whose name says less than the job's node names */
    const char *host = getenv("STEPSCOPE_HOSTNAME");
    if (host && *host)
        snprintf(h->hostname, sizeof h->hostname, "%s", host);
    else
        gethostname(h->hostname, sizeof h->hostname - 1);
    h->cmdline_len = (uint32_t)sps__platform_cmdline(h->cmdline, sizeof h->cmdline);
    h->anchor1_ticks = h->anchor0_ticks;
    h->anchor1_mono_ns = h->anchor0_mono_ns;
    h->state = SPS_REC_STATE_LIVE;
    memcpy(h->magic, SPS_REC_MAGIC, sizeof h->magic);
    h->header_crc = sps__crc32(h, offsetof(struct sps_rec_header, header_crc));
}

static void on_exit_handler(void);
static void thread_exit_handler(void *seg);
static void end_root_phase(void);
static void atfork_prepare(void);
static void index_record_names(void);
static void atfork_parent(void);
static void atfork_child(void);

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

static void setup(void) {
    /* The fork handlers must exist before P.lock is first taken: a fork
     * while another thread holds it would leave the child a lock nobody
     * releases.  The clock is calibrated here too, outside the lock. */
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    P.key_created = pthread_key_create(&P.thread_key, thread_exit_handler) == 0;
    atexit(on_exit_handler);
    sps__clock_init();
}

/* Take P.lock; the first call in the process sets up the hooks first.
 * Cancellation is off while it is held: some of what the slow paths do
 * (open, fprintf, posix_fallocate) are cancellation points, and a thread
 * cancelled there would leave the lock held for ever. */
static __thread int saved_cancel_state;

static void lock_process(void) {
    pthread_once(&setup_once, setup);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &saved_cancel_state);
    pthread_mutex_lock(&P.lock);
}

static void unlock_process(void) {
    pthread_mutex_unlock(&P.lock);
    pthread_setcancelstate(saved_cancel_state, NULL);
}

/* Open this process's record.  Called with P.lock held. */
static int proc_open(void) {
    int forked = P.state == PROC_FORKED;
    if (!forked) {
        const char *dis = getenv("STEPSCOPE_DISABLE");
        if (dis && *dis && strcmp(dis, "0") != 0) {
            sps__enabled = 0;
            P.state = PROC_FAILED;
            P.mode = SPS_MODE_FAILED;
            set_reason("disabled by STEPSCOPE_DISABLE=%s", dis);
            return -1;
        }
        sps__recorder_hook hook = __atomic_load_n(&open_hook, __ATOMIC_RELAXED);
        if (hook)
            hook(); /* e.g. the standalone report claims its directory */
    }
    uint32_t ring_cap[SPS_RING_COUNT];
    ring_cap[SPS_RING_ZONES] = pow2_at_least(env_u64("STEPSCOPE_RING_EVENTS", 65536, 16, 1u << 24));
    ring_cap[SPS_RING_STEPS] = pow2_at_least(env_u64("STEPSCOPE_STEP_EVENTS", 16384, 16, 1u << 24));
    ring_cap[SPS_RING_VALUES] = pow2_at_least(env_u64("STEPSCOPE_VALUE_EVENTS", 16384, 16, 1u << 24));
    const char *pol = getenv("STEPSCOPE_RING_POLICY");
    uint32_t policy = (pol && strcmp(pol, "keep-first") == 0) ? SPS_POLICY_KEEP_FIRST : SPS_POLICY_KEEP_LATEST;
    uint64_t size = env_u64("STEPSCOPE_RECORD_MB", 256, 8, 4095) << 20;
    const uint32_t names_cap = NAMES_CAP, threads_cap = THREADS_CAP;

    P.base = NULL;
    P.path[0] = '\0';
    P.reason[0] = '\0';
    P.fd = -1; /* a fork child closed the parent's in atfork_child */
    const char *run_dir = sps__env_path("STEPSCOPE_RUN_DIR");
    const char *asked = getenv("STEPSCOPE_RUN_DIR"); /* set, but privileged: only to say why */
    int run_asked = asked && *asked;
    if (run_dir) {
        if (open_record_file(run_dir, size, arena_offset(names_cap, threads_cap)) == 0)
            P.mode = SPS_MODE_FILE;
    } else if (run_asked) {
        set_reason("STEPSCOPE_RUN_DIR ignored in a privileged process (setuid, setgid or capabilities)");
    } else {
        set_reason("no run directory (STEPSCOPE_RUN_DIR unset): recording in memory");
    }
    if (!P.base) {
        /* Recording must never fail the workload: fall back to memory and
         * keep the reason for sps_status() and the report. */
        char why[256];
        snprintf(why, sizeof why, "%s", P.reason);
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            snprintf(P.reason, sizeof P.reason, "%s; memory fallback failed: %s", why, strerror(errno));
            P.state = PROC_FAILED;
            P.mode = SPS_MODE_FAILED;
            return -1;
        }
        P.base = m;
        P.mode = SPS_MODE_MEMORY;
        if (run_asked) {
            /* a run was asked for and this process will be missing from
             * its report: say so once, where the user will see it */
            snprintf(P.reason, sizeof P.reason, "%s; recording in memory", why);
            fprintf(stderr, "stepscope: %s\n", P.reason);
        }
    }
    P.size = size;
    P.pid = getpid();
    write_header(size, names_cap, threads_cap, ring_cap, policy);

    if (forked && P.inherited_base) {
        copy_inherited_names();
        /* a worker forked after the guard began thinning thins too */
        const struct sps_rec_header *parent = (const void *)P.inherited_base;
        P.hdr->thin_level = parent->thin_level;
        P.hdr->thin_since_mono_ns = parent->thin_since_mono_ns;
        munmap(P.inherited_base, P.inherited_size);
        P.inherited_base = NULL;
    }
    index_record_names();
    P.sink_id = names_cap + 1;
    P.nfree = 0;

    __atomic_store_n(&P.state, PROC_READY, __ATOMIC_RELEASE);
    return 0;
}

/* ------------------------------------------------------------------ threads */

/* Give the calling thread an aggregate for name id, so the hot paths can
 * update it without checking.  When the record is full, the pair writes to
 * the sink aggregate instead (counted as refused).  P.lock held. */
static void ensure_agg(uint32_t id, uint32_t kind) {
    if (T.agg_index[id])
        return;
    uint64_t off = arena_alloc(sps_rec_agg_size(kind), agg_align(kind));
    if (!off) {
        T.agg_index[id] = T.agg_index[P.sink_id];
        __atomic_add_fetch(&P.hdr->names_refused, 1, __ATOMIC_RELAXED);
        return;
    }
    struct sps_rec_agg *a = (struct sps_rec_agg *)(P.base + off);
    a->name = id;
    a->kind = kind;
    if (kind == SPS_KIND_VALUE) {
        a->u.v.min = INFINITY;
        a->u.v.max = -INFINITY;
    } else {
        a->u.z.min_ns = UINT64_MAX;
    }
    /* after the aggregate is initialised: an in-process reader may look */
    __atomic_store_n(&T.agg_index[id], (uint32_t)off, __ATOMIC_RELEASE);
}

/* The nesting a thread records below its innermost step at thin level
 * (enum sps_thin_level); an unknown level thins nothing. */
static uint32_t thin_max_depth(uint32_t level) {
    return level == SPS_THIN_STEPS ? 0u : level == SPS_THIN_PHASES ? 1u : SPS_REC_MAX_DEPTH;
}

/* The depth beyond which begins take the cold path: the thin level's, or
 * 0 with an NVTX tool attached (see T.max_depth). */
static void set_depth_limit(void) {
    T.max_depth = NVTX_ANNOUNCE() ? 0 : T.thin_depth;
}

/* Pick up the thin level the overhead guard wrote into the header (it
 * writes from another process: a relaxed load is all the ordering needed,
 * the level only has to arrive eventually). */
static void reread_thin_level(void) {
    T.thin_depth = thin_max_depth(__atomic_load_n(&P.hdr->thin_level, __ATOMIC_RELAXED));
    set_depth_limit();
}

/* A new thread's rings, up to SPS_PREFAULT_MAX bytes (all of them with the
 * default sizes: 3 MiB), are faulted in at its registration, on its first
 * event: in one system call rather than as 768 page faults spread over its
 * first 65,536 zones.  Without P.lock, so other threads go on meanwhile.
 * A thread given an exited thread's segment does the same (pages already
 * there cost little).  The price: the pages are resident (and counted in
 * the workload's RSS) from the thread's first event instead of as they
 * fill. */
#define SPS_PREFAULT_MAX ((size_t)4 << 20)

/* The calling thread was given seg: its rings are to be faulted in once
 * P.lock is released.  P.lock held. */
static void plan_prefault(const struct sps_rec_thread *seg) {
    uint64_t bytes = 0;
    for (int r = 0; r < SPS_RING_COUNT; r++)
        bytes += (uint64_t)P.hdr->ring_cap[r] * sizeof(struct sps_rec_event);
    T.prefault_at = P.base + seg->ring_off[0]; /* the rings lie one after another */
    T.prefault_len = bytes < SPS_PREFAULT_MAX ? (size_t)bytes : SPS_PREFAULT_MAX;
}

static void prefault_rings(void) {
    if (!T.prefault_len)
        return; /* this thread was registered before */
    size_t len = T.prefault_len;
    T.prefault_len = 0;
    sps__platform_prefault(T.prefault_at, len); /* a refusal only leaves the faults to the stores */
}

/* Point the calling thread's TLS at seg and give it the thread. */
static void bind_thread(struct sps_rec_thread *seg) {
    const struct sps_rec_header *h = P.hdr;
    seg->tid = sps__platform_tid();
    sps__platform_thread_name(seg->name, sizeof seg->name);
    for (int r = 0; r < SPS_RING_COUNT; r++) {
        T.ring[r] = (struct sps_rec_event *)(P.base + seg->ring_off[r]);
        T.mask[r] = h->ring_cap[r] - 1u;
    }
    T.agg_index = (uint32_t *)(P.base + seg->agg_index_off);
    T.base = P.base;
    reread_thin_level();
    if (P.fork_thread == (void *)&T) {
        /* The thread that forked carries its open zones into the child, so
         * their ends still match; but the parent records those zones, so
         * here they end into the sink aggregate and the discard slot. */
        memcpy(seg->stack, P.fork_stack, sizeof seg->stack);
        seg->depth = P.fork_depth;
        P.fork_thread = NULL;
        for (uint32_t d = 1; d <= seg->depth; d++) {
            seg->stack[d].name = P.sink_id;
            seg->stack[d].ring = SPS_RING_DISCARD;
        }
    }
    __atomic_store_n(&seg->state, SPS_REC_THREAD_RUNNING, __ATOMIC_RELEASE);
    if (P.key_created)
        pthread_setspecific(P.thread_key, seg);
    T.seg = seg;
}

static int thread_attach(void) {
    struct sps_rec_header *h = P.hdr;
    if (P.nfree) {
        /* a segment an exited thread left: its aggregates keep adding up
         * (per-name totals stay exact), its rings go on where they were */
        const uint64_t *dir = (const uint64_t *)(P.base + h->threads_off);
        struct sps_rec_thread *seg = (struct sps_rec_thread *)(P.base + dir[P.free_segs[--P.nfree]]);
        seg->depth = 0; /* zones the last thread left open died with it */
        for (uint32_t d = 0; d < SPS_REC_STACK_FRAMES; d++)
            seg->stack[d].phase_mark = 0;
        seg->reuses++;
        bind_thread(seg);
        plan_prefault(seg); /* the last thread may have filled only a few pages */
        return 0;
    }
    if (h->threads_count >= h->threads_cap) {
        snprintf(h->problem, sizeof h->problem, "more than %u threads recorded", h->threads_cap);
        goto refuse;
    }
    uint64_t index_bytes = ((uint64_t)(h->names_cap + 2) * sizeof(uint32_t) + 63u) & ~(uint64_t)63u;
    uint64_t seg_bytes = (sizeof(struct sps_rec_thread) + 63u) & ~(uint64_t)63u;
    uint64_t total = seg_bytes + index_bytes + sps_rec_agg_size(SPS_KIND_ZONE);
    for (int r = 0; r < SPS_RING_COUNT; r++)
        total += (uint64_t)h->ring_cap[r] * sizeof(struct sps_rec_event);
    uint64_t off = arena_alloc(total, 4096u);
    if (!off)
        goto refuse;
    uint64_t sink_off = off + total - sps_rec_agg_size(SPS_KIND_ZONE);

    struct sps_rec_thread *seg = (struct sps_rec_thread *)(P.base + off);
    seg->magic = SPS_REC_THREAD_MAGIC;
    seg->index = h->threads_count;
    seg->agg_index_off = off + seg_bytes;
    uint64_t ring_at = seg->agg_index_off + index_bytes;
    for (int r = 0; r < SPS_RING_COUNT; r++) {
        seg->ring_off[r] = ring_at;
        ring_at += (uint64_t)h->ring_cap[r] * sizeof(struct sps_rec_event);
        seg->limit[r] = h->ring_policy == SPS_POLICY_KEEP_FIRST ? h->ring_cap[r] : UINT64_MAX;
    }
    seg->limit[SPS_RING_DISCARD] = 0; /* stores nothing, ever */
    /* The thread's own sink: what refused names and (thread, name) pairs
     * write to (the reader skips it: its name is 0), and the target of the
     * first deferred histogram update, when nothing is pending yet. */
    ((uint32_t *)(P.base + seg->agg_index_off))[P.sink_id] = (uint32_t)sink_off;
    seg->pending_agg_off = sink_off;
    bind_thread(seg);
    /* the blocks are reserved (arena_alloc); the pages come next */
    plan_prefault(seg);

    uint64_t *dir = (uint64_t *)(P.base + h->threads_off);
    dir[seg->index] = off;
    __atomic_store_n(&h->threads_count, seg->index + 1, __ATOMIC_RELEASE);
    return 0;
refuse:
    __atomic_add_fetch(&h->threads_refused, 1, __ATOMIC_RELAXED);
    T.refused = 1;
    return -1;
}

/* A recording thread exits: its segment goes to the next new thread.  This
 * thread records nothing more (another destructor might try). */
static void thread_exit_handler(void *seg) {
    struct sps_rec_thread *s = seg;
    if (s && s == T.seg && __atomic_load_n(&P.state, __ATOMIC_ACQUIRE) == PROC_READY)
        end_root_phase();
    lock_process();
    if (s && s == T.seg && P.state == PROC_READY) {
        __atomic_store_n(&s->state, SPS_REC_THREAD_EXITED, __ATOMIC_RELEASE);
        if (P.nfree < sizeof P.free_segs / sizeof P.free_segs[0])
            P.free_segs[P.nfree++] = s->index;
    }
    T.seg = NULL;
    T.refused = 1;
    unlock_process();
    free(T.nvtx_stack);
    T.nvtx_stack = NULL;
}

/* ------------------------------------------------------------------- names */

/* Copy src into dst (cap bytes with the NUL), cutting at a UTF-8
 * character boundary when it must cut. */
static void copy_trunc(char *dst, size_t cap, const char *src) {
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++)
        dst[i] = src[i];
    if (src && src[i]) {
        /* cut inside a character: back up to its lead byte, which a valid
         * sequence has within 3 bytes (bytes that are not UTF-8 are kept
         * as they are; the report writer replaces them) */
        size_t j = i;
        while (j > 0 && i - j < 3 && ((unsigned char)src[j] & 0xC0) == 0x80)
            j--;
        if (((unsigned char)src[j] & 0xC0) == 0xC0 && j > 0)
            i = j;
    }
    dst[i] = '\0';
}

/* FNV-1a over the name's bytes, then the kind: the key of both tables. */
static uint64_t name_hash(const char *name, uint32_t kind) {
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    h = (h ^ kind) * 1099511628211ull;
    return h ^ (h >> 29); /* the low bits pick the slot: fold the high ones in */
}

/* The slot of key (a name as the record stores it) in P.name_slots: the
 * one holding its id, or the empty one where it would go.  P.lock held. */
static uint32_t name_slot(const struct sps_rec_name *names, const char *key, uint32_t kind) {
    uint32_t i = (uint32_t)name_hash(key, kind) & (NAME_SLOTS - 1u);
    for (;; i = (i + 1u) & (NAME_SLOTS - 1u)) {
        uint32_t id = P.name_slots[i];
        if (!id || (names[id - 1].kind == kind && strcmp(names[id - 1].name, key) == 0))
            return i;
    }
}

/* Index the names the record holds (a fork child's come from its parent).
 * Called with P.lock held, once the record's names are in place. */
static void index_record_names(void) {
    const struct sps_rec_header *h = P.hdr;
    const struct sps_rec_name *names = (const struct sps_rec_name *)(P.base + h->names_off);
    memset(P.name_slots, 0, sizeof P.name_slots);
    for (uint32_t i = 0; i < h->names_count; i++) {
        uint32_t slot = name_slot(names, names[i].name, names[i].kind);
        if (!P.name_slots[slot]) /* a duplicate keeps the first id, as a scan would */
            P.name_slots[slot] = (uint16_t)(i + 1);
    }
}

/* The id of (name, kind) in this process's record, interning it if new;
 * the sink id when the table is full.  Called with P.lock held. */
static uint32_t intern(const struct sps_site *site) {
    struct sps_rec_header *h = P.hdr;
    struct sps_rec_name *names = (struct sps_rec_name *)(P.base + h->names_off);
    char key[SPS_REC_NAME_LEN];
    copy_trunc(key, sizeof key, site->name);
    uint32_t slot = name_slot(names, key, site->kind);
    if (P.name_slots[slot])
        return P.name_slots[slot];
    if (h->names_count >= h->names_cap) {
        snprintf(h->problem, sizeof h->problem, "more than %u distinct names", h->names_cap);
        __atomic_add_fetch(&h->names_refused, 1, __ATOMIC_RELAXED);
        return P.sink_id;
    }
    struct sps_rec_name *n = &names[h->names_count];
    n->kind = site->kind;
    n->line = site->line;
    memcpy(n->name, key, sizeof key);
    copy_trunc(n->file, sizeof n->file, site->file);
    copy_trunc(n->func, sizeof n->func, site->func);
    __atomic_store_n(&h->names_count, h->names_count + 1, __ATOMIC_RELEASE);
    P.name_slots[slot] = (uint16_t)h->names_count;
    return h->names_count;
}

static int valid_kind(uint32_t kind) {
    return kind >= SPS_KIND_ZONE && kind <= SPS_KIND_WAIT;
}

/* Open the record if needed and give the calling thread its segment.
 * P.lock held.  Returns 0 or -1 (recording impossible: see P.reason). */
static int attach_locked(void) {
    if (P.state != PROC_READY && proc_open() != 0)
        return -1;
    return T.seg || thread_attach() == 0 ? 0 : -1;
}

/*
 * The slow path of every recording call: open the record, attach the thread,
 * intern the site's name and give this thread an aggregate for it.  Returns
 * the name id, or 0 when the event cannot be recorded.
 */
static uint32_t prepare(struct sps_site *site) {
    if (T.refused || !site || !site->name || !site->name[0] || !valid_kind(site->kind))
        return 0;
    if (__atomic_load_n(&P.state, __ATOMIC_ACQUIRE) == PROC_FAILED) {
        T.refused = 1;
        return 0;
    }
#if SPS_NVTX_HOOK
    /* the process's first event looks for an NVTX tool, outside the lock
     * (the tool's initialisation runs code of its own) */
    T.nvtx = sps__nvtx_attach();
#endif
    uint32_t id = 0;
    lock_process();
    if (attach_locked() != 0)
        goto out;
    id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    if (id > P.hdr->names_count && id != P.sink_id)
        id = 0; /* not one of ours (a site that was not zeroed): intern it */
    if (!id) {
        id = intern(site);
        __atomic_store_n(&site->id, id, __ATOMIC_RELEASE);
    }
    ensure_agg(id, site->kind);
out:
    unlock_process();
    prefault_rings();
    set_depth_limit(); /* T.nvtx may have just been set */
    return id;
}

/* Double the buckets of sps_site_get()'s table (the first time: make
 * them).  Out of memory, the table keeps its size: chains grow longer,
 * lookups stay right.  P.lock held. */
static void grow_dyn_sites(void) {
    size_t n = P.dyn_nbuckets ? P.dyn_nbuckets * 2 : 256;
    struct dyn_site **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < P.dyn_nbuckets; i++) {
        for (struct dyn_site *d = P.dyn_buckets[i], *next; d; d = next) {
            next = d->next;
            d->next = b[d->hash & (n - 1)];
            b[d->hash & (n - 1)] = d;
        }
    }
    free(P.dyn_buckets);
    P.dyn_buckets = b;
    P.dyn_nbuckets = n;
}

/* A new site for (name, kind) in bucket hash's chain; NULL out of memory.
 * P.lock held. */
static struct dyn_site *add_dyn_site(const char *name, uint32_t kind, uint64_t hash) {
    if (P.dyn_count >= P.dyn_nbuckets)
        grow_dyn_sites();
    if (!P.dyn_nbuckets)
        return NULL;
    size_t len = strlen(name);
    struct dyn_site *d = calloc(1, sizeof *d + len + 1);
    if (!d)
        return NULL;
    memcpy(d->name, name, len + 1);
    d->site.name = d->name;
    d->site.file = "";
    d->site.func = "";
    d->site.kind = kind;
    d->hash = hash;
    struct dyn_site **head = &P.dyn_buckets[hash & (P.dyn_nbuckets - 1)];
    d->next = *head;
    *head = d;
    P.dyn_count++;
    return d;
}

struct sps_site *sps_site_get(const char *name, enum sps_kind kind) {
    if (!name || !name[0] || !valid_kind((uint32_t)kind))
        return NULL;
    uint64_t hash = name_hash(name, (uint32_t)kind); /* outside the lock */
    lock_process();
    struct dyn_site *d = P.dyn_nbuckets ? P.dyn_buckets[hash & (P.dyn_nbuckets - 1)] : NULL;
    for (; d; d = d->next)
        if (d->hash == hash && d->site.kind == (uint32_t)kind && strcmp(d->name, name) == 0)
            break;
    if (!d)
        d = add_dyn_site(name, (uint32_t)kind, hash);
    unlock_process();
    return d ? &d->site : NULL;
}

/* ---------------------------------------------------------------- hot paths */

/* Write a fresh (ticks, monotonic) anchor when the last is over a second
 * old (or always, with force), so the reader can refine the tick rate over
 * the whole run.  Threads that find another one writing skip it. */
static COLD void refresh_anchor(uint64_t now, int force) {
    struct sps_rec_header *h = P.hdr;
    if (!force && now - h->anchor1_ticks < (uint64_t)sps__clock.ticks_per_second)
        return;
    if (__atomic_exchange_n(&P.anchor_busy, 1, __ATOMIC_ACQUIRE))
        return;
    uint64_t t, m;
    sps__clock_anchor(&t, &m);
    __atomic_add_fetch(&h->anchor_seq, 1, __ATOMIC_RELEASE);
    h->anchor1_ticks = t;
    h->anchor1_mono_ns = m;
    __atomic_add_fetch(&h->anchor_seq, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&P.anchor_busy, 0, __ATOMIC_RELEASE);
}

/*
 * The hot paths.  Each public function is a few checks that are always
 * false once a thread and a site are warmed up, then the work; everything
 * else lives in cold, never-inlined functions, so the hot code needs no
 * stack frame and keeps its values in registers.
 */

/* After a step's end, and every SPS_THIN_POLL_EVENTS zones of a ring (so a
 * thread that marks no steps still sees the guard): refresh the clock
 * anchor at steps, and the thin level. */
static COLD void step_end_or_poll(uint32_t ring, uint64_t now) {
    if (ring == SPS_RING_ZONES) {
        /* first: how long this zone end's bookkeeping took since its
         * timestamp (a sample, every SPS_THIN_POLL_EVENTS zones, of what
         * an end costs in this run: see end_samples) */
        uint64_t ns = sps__ticks_to_ns(sps__ticks() - now, sps__clock.ns_mult);
        if (ns <= SPS_END_SAMPLE_MAX_NS) {
            __atomic_add_fetch(&P.hdr->end_ns, ns, __ATOMIC_RELAXED);
            __atomic_add_fetch(&P.hdr->end_samples, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_add_fetch(&P.hdr->end_samples_dropped, 1, __ATOMIC_RELAXED);
        }
    }
    if (ring == SPS_RING_STEPS) {
        refresh_anchor(now, 0);
        /* a step end is where a loop's GPU work of earlier steps has
         * usually finished: the GPU layer resolves its zones here */
        sps__recorder_hook hook = __atomic_load_n(&step_end_hook, __ATOMIC_RELAXED);
        if (hook)
            hook();
    }
    reread_thin_level();
}

/* The clock read with the source known at compile time: the public
 * functions test the source once and call a copy specialised for it, so
 * the common (TSC) copy contains no call and needs no stack frame. */
static inline uint64_t ticks_now(int tsc) {
#if SPS__HAVE_TSC
    if (tsc)
        return __rdtsc();
#else
    (void)tsc;
#endif
    return sps__mono_ns();
}

static inline int clock_is_tsc(void) {
    return SPS__HAVE_TSC && sps__clock.source == SPS_CLOCK_TSC;
}

/* --------------------------------------------------------- NVTX ranges */

/* The name a frame's range shows: its interned name; a frame carried
 * across fork() (the sink's id) shows "stepscope". */
static const char *frame_name(uint32_t id) {
    const struct sps_rec_header *h = P.hdr;
    /* other threads intern names meanwhile: the count is published after
     * the entry (intern), so an id within it has its name written */
    if (!h || id == 0 || id > __atomic_load_n(&h->names_count, __ATOMIC_ACQUIRE))
        return "stepscope";
    return ((const struct sps_rec_name *)(P.base + h->names_off))[id - 1].name;
}

/* Push frame d of seg as level d of n.  A step carries its number: the
 * steps its thread has ended so far, which is its index in the report's
 * step rows (steps.rows[].index) for steps that do not nest. */
static void nvtx_push_frame(struct nvtx_stack *n, const struct sps_rec_thread *seg, uint32_t d) {
    const struct sps_rec_frame *f = &seg->stack[d];
    uint64_t step = f->kind == SPS_KIND_STEP ? seg->head[SPS_RING_STEPS] : SPS_NVTX_NO_STEP;
    sps__nvtx_push(frame_name(f->name), f->kind, step);
    n->name[d] = f->name;
    n->start[d] = f->start_ticks;
    n->depth = d;
}

/* Make levels 1..d of the pushed ranges stand for seg's frames 1..d.
 * Returns the thread's stack of ranges, NULL when it cannot have one (no
 * memory: no ranges, the zones are recorded all the same). */
static struct nvtx_stack *nvtx_sync_to(const struct sps_rec_thread *seg, uint32_t d) {
    struct nvtx_stack *n = T.nvtx_stack;
    if (!n && !(n = T.nvtx_stack = calloc(1, sizeof *n)))
        return NULL;
    uint32_t same = 0, both = n->depth < d ? n->depth : d;
    while (same < both && n->name[same + 1] == seg->stack[same + 1].name &&
           n->start[same + 1] == seg->stack[same + 1].start_ticks)
        same++;
    for (; n->depth > same; n->depth--)
        sps__nvtx_pop();
    while (n->depth < d)
        nvtx_push_frame(n, seg, n->depth + 1);
    return n;
}

/* After any change to the calling thread's stack: the ranges follow it. */
static COLD void nvtx_sync(void) {
    const struct sps_rec_thread *seg = T.seg;
    if (seg)
        nvtx_sync_to(seg, seg->depth);
}

/* A begin on frame d (its start not yet taken): what is open below it,
 * then its own range. */
static COLD void nvtx_begin(const struct sps_rec_thread *seg, uint32_t d) {
    struct nvtx_stack *n = nvtx_sync_to(seg, d - 1);
    if (n)
        nvtx_push_frame(n, seg, d);
}

/* A begin at depth d beyond T.max_depth (any depth with an NVTX tool):
 * record it, or refuse it because
 * the stack is full or the overhead guard thins at this depth (counted
 * either way). */
static COLD int deep_begin_allowed(struct sps_rec_thread *seg, uint32_t d, uint32_t kind) {
    if (d > SPS_REC_MAX_DEPTH) {
        seg->depth_overflows++;
        return 0;
    }
    if (kind == SPS_KIND_STEP || kind == SPS_KIND_MICROSTEP)
        return 1; /* the step table stays whole */
    uint32_t base = 0; /* the innermost open step's depth, 0 outside any */
    for (uint32_t k = d - 1; k >= 1; k--) {
        if (seg->stack[k].kind == SPS_KIND_STEP || seg->stack[k].kind == SPS_KIND_MICROSTEP) {
            base = k;
            break;
        }
    }
    if (d - base <= T.thin_depth)
        return 1;
    if (++seg->zones_thinned == 1u << 31) { /* carry before the 32 bits wrap */
        __atomic_add_fetch(&P.hdr->zones_thinned, (uint64_t)seg->zones_thinned, __ATOMIC_RELAXED);
        seg->zones_thinned = 0;
    }
    return 0;
}

/* Frame d begins.  announce: push the tool's range too (a constant in
 * the hot copy, which has no trace of it). */
static ALWAYS_INLINE sps_zone_t begin_frame(struct sps_rec_thread *seg, uint32_t d, uint32_t id, uint32_t kind,
                                            int tsc, int announce) {
    struct sps_rec_frame *f = &seg->stack[d];
    f->name = id;
    f->kind = (uint16_t)kind;
    /* steps get a ring of their own, so the step table outlives the
     * zones' ring; micro-steps are as frequent as zones and go with them */
    f->ring = kind == SPS_KIND_STEP ? SPS_RING_STEPS : SPS_RING_ZONES;
    f->child_ns = 0;
    seg->depth = d;
    /* the tool's push before the timestamp, outside the zone's time */
    if (announce)
        nvtx_begin(seg, d);
    /* the timestamp last, so the zone's own bookkeeping stays outside it */
    f->start_ticks = ticks_now(tsc);
    if (announce && T.nvtx_stack)
        T.nvtx_stack->start[d] = f->start_ticks;
    return d;
}

/* A begin beyond T.max_depth.  may_announce: 0 for a wait recorded after
 * the fact (sps_wait_record), which no range can stand for. */
static COLD sps_zone_t begin_beyond(struct sps_rec_thread *seg, uint32_t id, uint32_t kind, int tsc,
                                    int may_announce) {
    uint32_t d = seg->depth + 1;
    if (!deep_begin_allowed(seg, d, kind))
        return 0;
    if (may_announce && NVTX_ANNOUNCE())
        return begin_frame(seg, d, id, kind, tsc, 1);
    return begin_frame(seg, d, id, kind, tsc, 0);
}

static inline sps_zone_t begin_at(struct sps_rec_thread *seg, uint32_t id, uint32_t kind, int tsc, int may_announce) {
    uint32_t d = seg->depth + 1;
    if (UNLIKELY(d > T.max_depth))
        return begin_beyond(seg, id, kind, tsc, may_announce);
    return begin_frame(seg, d, id, kind, tsc, 0);
}

static COLD sps_zone_t begin_slow(struct sps_site *site, int may_announce) {
    uint32_t id = prepare(site); /* the first one attaches the NVTX tool */
    return id ? begin_at(T.seg, id, site->kind, clock_is_tsc(), may_announce) : 0;
}

static inline sps_zone_t begin_core(struct sps_site *site, int tsc, int may_announce) {
    if (UNLIKELY(!site))
        return 0;
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    struct sps_rec_thread *seg = T.seg;
    /* a value or counter site passed here is refused rather than
     * corrupting its aggregate */
    if (UNLIKELY(!sps_kind_is_timed(site->kind)))
        return 0;
    if (UNLIKELY(!seg || !id || !T.agg_index[id]))
        return begin_slow(site, may_announce);
    return begin_at(seg, id, site->kind, tsc, may_announce);
}

static inline sps_zone_t begin(struct sps_site *site, int tsc) {
    return begin_core(site, tsc, 1);
}

static COLD sps_zone_t begin_monotonic(struct sps_site *site) {
    return begin(site, 0);
}

sps_zone_t sps_zone_begin(struct sps_site *site) {
    if (LIKELY(clock_is_tsc()))
        return begin(site, 1);
    return begin_monotonic(site);
}

/* Close frame d of seg at time now: aggregates, then the event.  The zone
 * and step ends take it through end_at, the compiler's choice; a step's
 * end that first ends its phase (end_not_innermost) inlines it.  A phase
 * that a chain ends takes chain_end, below. */
static ALWAYS_INLINE void end_frame(struct sps_rec_thread *seg, uint32_t d, uint64_t now) {
    struct sps_rec_frame *f = &seg->stack[d];
    uint64_t dur = sps__ticks_to_ns(now - f->start_ticks, sps__clock.ns_mult);
    uint64_t self = dur >= f->child_ns ? dur - f->child_ns : 0;
    f[-1].child_ns += dur; /* frame 0 is a sentinel */
    seg->depth = d - 1;
    /* The previous zone's histogram bucket first (see pending_agg_off),
     * then this zone becomes the pending one, then its count: killed at
     * any point, the reader finds count - histogram = 1 only when the
     * pending bucket is this zone's. */
    sps_rec_agg_hist((struct sps_rec_agg *)(T.base + seg->pending_agg_off))[seg->pending_bucket]++;
    uint64_t agg_off = T.agg_index[f->name];
    /* release stores order what precedes them (plain stores on x86): the
     * bucket above before the pending offset, everything before the count
     * (in sps_rec_agg_add_zone) */
    __atomic_store_n(&seg->pending_agg_off, agg_off, __ATOMIC_RELEASE);
    seg->pending_bucket = sps_hist_bucket(dur);
    sps_rec_agg_add_zone((struct sps_rec_agg *)(T.base + agg_off), dur, self);

    uint32_t r = f->ring;
    uint64_t h = seg->head[r];
    if (LIKELY(h < seg->limit[r])) {
        struct sps_rec_event *e = &T.ring[r][h & T.mask[r]];
        e->start_ticks = f->start_ticks;
        e->end_ticks = now;
        e->a = self;
        e->name = f->name;
        e->depth = (uint16_t)(d - 1);
        e->kind = f->kind;
    }
    /* publish after the event is complete: a reader (or a post-mortem)
     * never counts a half-written event */
    __atomic_store_n(&seg->head[r], h + 1, __ATOMIC_RELEASE);
    if (UNLIKELY(r == SPS_RING_STEPS || (h & (SPS_THIN_POLL_EVENTS - 1)) == SPS_THIN_POLL_EVENTS - 1))
        step_end_or_poll(r, now);
}

/*
 * sps__ticks_to_ns without a 128-bit product: (t * mult) >> 32 is
 * (t >> 32) * mult + ((t & 0xffffffff) * mult >> 32) exactly, the same
 * bits, whenever mult <= 2^32 (a clock of at least 1 GHz, and
 * CLOCK_MONOTONIC's 2^32), where neither product can overflow.  In a
 * chained phase the 128-bit form costs a fifth of the chain: the compiler
 * spills the product through the stack, on the path from the clock read
 * to every store that waits for the duration.
 */
static ALWAYS_INLINE uint64_t chain_ticks_to_ns(uint64_t t, uint64_t mult) {
    if (UNLIKELY(mult > (uint64_t)1 << 32))
        return sps__ticks_to_ns(t, mult);
    return (t >> 32) * mult + (((t & 0xffffffffu) * mult) >> 32);
}

/* An event's name, depth and kind (its last 8 bytes), in one store where
 * the layout allows. */
static ALWAYS_INLINE void event_tail(struct sps_rec_event *e, uint32_t name, uint32_t depth, uint32_t kind) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t tail = name | (uint64_t)(uint16_t)depth << 32 | (uint64_t)(uint16_t)kind << 48;
    memcpy(&e->name, &tail, sizeof tail);
#else
    e->name = name;
    e->depth = (uint16_t)depth;
    e->kind = (uint16_t)kind;
#endif
}
_Static_assert(offsetof(struct sps_rec_event, depth) == offsetof(struct sps_rec_event, name) + 4 &&
                   offsetof(struct sps_rec_event, kind) == offsetof(struct sps_rec_event, name) + 6,
               "name, depth and kind fill the event's last 8 bytes");

/*
 * A phase's end in a chain (phase_at): what end_frame does for a frame on
 * the zones ring, the same fields with the same values in the same order
 * of publication, written with fewer stores, because in a chain the
 * clock read hides less of the bookkeeping than a zone's two reads do
 * (each store left out was measured, bench/bench_phase.c):
 *  - min and max are stored only when they change, the high half of the
 *    sum of squares only on a carry (a duration under 2^32 ns, 4.3 s,
 *    squares within 64 bits: one multiply, no 128-bit add);
 *  - the event's name, depth and kind go in one store (event_tail);
 *  - a phase with no zone inside takes its duration as its self time.
 * A process killed anywhere in it leaves what a zone's end would: the
 * phase recorded, or (its depth already taken back) lost, never open and
 * counted both (test_phase's test_killed_mid_chain).
 */
static ALWAYS_INLINE void chain_end(struct sps_rec_thread *seg, struct sps_rec_frame *f, uint32_t d, uint64_t now) {
    const uint64_t start = f->start_ticks;
    const uint32_t name = f->name;
    const uint64_t child = f->child_ns;
    uint64_t dur = chain_ticks_to_ns(now - start, sps__clock.ns_mult);
    /* most phases hold no zone: their self time is the duration, with no
     * work that waits for the clock */
    uint64_t self = LIKELY(child == 0) ? dur : dur >= child ? dur - child : 0;
    f[-1].child_ns += dur; /* frame 0 is a sentinel */
    seg->depth = d - 1;
    /* as in end_frame: the pending bucket, then this phase pending, then
     * its aggregate with the count last */
    sps_rec_agg_hist((struct sps_rec_agg *)(T.base + seg->pending_agg_off))[seg->pending_bucket]++;
    uint64_t agg_off = T.agg_index[name];
    __atomic_store_n(&seg->pending_agg_off, agg_off, __ATOMIC_RELEASE);
    seg->pending_bucket = sps_hist_bucket(dur);
    struct sps_rec_agg *a = (struct sps_rec_agg *)(T.base + agg_off);
    a->u.z.total_ns += dur;
    a->u.z.self_ns += self;
    if (UNLIKELY(dur < a->u.z.min_ns))
        a->u.z.min_ns = dur;
    if (UNLIKELY(dur > a->u.z.max_ns))
        a->u.z.max_ns = dur;
    if (LIKELY(dur >> 32 == 0)) {
        uint64_t sq = dur * dur, lo = a->u.z.sumsq_lo + sq;
        a->u.z.sumsq_lo = lo;
        if (UNLIKELY(lo < sq))
            a->u.z.sumsq_hi++;
    } else {
        unsigned __int128 sq = ((unsigned __int128)a->u.z.sumsq_hi << 64 | a->u.z.sumsq_lo) +
                               (unsigned __int128)dur * dur;
        a->u.z.sumsq_lo = (uint64_t)sq;
        a->u.z.sumsq_hi = (uint64_t)(sq >> 64);
    }
    __atomic_store_n(&a->count, a->count + 1, __ATOMIC_RELEASE);
    uint64_t h = seg->head[SPS_RING_ZONES];
    if (LIKELY(h < seg->limit[SPS_RING_ZONES])) {
        struct sps_rec_event *e = &T.ring[SPS_RING_ZONES][h & T.mask[SPS_RING_ZONES]];
        e->start_ticks = start;
        e->end_ticks = now;
        e->a = self;
        event_tail(e, name, d - 1, SPS_KIND_ZONE);
    }
    /* publish after the event is complete */
    __atomic_store_n(&seg->head[SPS_RING_ZONES], h + 1, __ATOMIC_RELEASE);
    if (UNLIKELY((h & (SPS_THIN_POLL_EVENTS - 1)) == SPS_THIN_POLL_EVENTS - 1))
        step_end_or_poll(SPS_RING_ZONES, now);
}

static inline void end_at(struct sps_rec_thread *seg, uint32_t d, uint64_t now) {
    end_frame(seg, d, now);
}

/* The segment of a thread that has none: only the thread that forked can
 * have open frames without one (those it began in the parent), and it
 * re-attaches in the child.  NULL for any other thread. */
static COLD struct sps_rec_thread *forked_thread_segment(void) {
    if (T.refused || P.fork_thread != (void *)&T)
        return NULL;
    lock_process();
    int ok = attach_locked() == 0;
    unlock_process();
    prefault_rings();
    return ok ? T.seg : NULL;
}

/* End the phase open on frame d of seg at now (see sps_phase). */
static inline void end_phase_at(struct sps_rec_thread *seg, uint32_t d, uint64_t now) {
    seg->stack[d].phase_mark = 0;
    end_at(seg, d, now);
}

static COLD void end_slow(sps_zone_t token, uint64_t now) {
    if (!token)
        return; /* a begin that recorded nothing */
    struct sps_rec_thread *seg = T.seg;
    if (!seg && !(seg = forked_thread_segment()))
        return;
    uint32_t d = seg->depth;
    if (token + 1 == d && sps_rec_frame_is_phase(&seg->stack[d])) {
        /* the zone's open phase ends first, at the zone's own end */
        end_phase_at(seg, d, now);
        d = token;
    } else if (token != d) {
        seg->mismatched_ends++;
        if (token > d || token == 0)
            return;
        /* inner zones left open (phases among them) are closed implicitly */
        for (uint32_t k = token + 1; k <= d; k++)
            seg->stack[k].phase_mark = 0;
        d = token;
    }
    end_at(seg, d, now);
}

/* An end that is not of the innermost frame: most often a step (or zone)
 * whose phase is open, which ends here, on a path kept out of the cold
 * section; anything else goes on to end_slow. */
static __attribute__((noinline)) void end_not_innermost(sps_zone_t token, uint64_t now) {
    struct sps_rec_thread *seg = T.seg;
    if (LIKELY(seg && token && token + 1 == seg->depth && sps_rec_frame_is_phase(&seg->stack[token + 1]))) {
        struct sps_rec_frame *f = &seg->stack[token + 1];
        f->phase_mark = 0;
        if (LIKELY(f->ring == SPS_RING_ZONES))
            chain_end(seg, f, token + 1, now);
        else
            end_at(seg, token + 1, now); /* carried across fork() */
        end_frame(seg, token, now); /* end_at's, inlined: no second call */
        return;
    }
    end_slow(token, now);
}

/* An end with an NVTX tool attached: the end, then the tool's pop (after
 * the timestamp, outside the zone's time). */
static COLD void end_announced(sps_zone_t token, uint64_t now) {
    struct sps_rec_thread *seg = T.seg;
    if (seg && token && token == seg->depth)
        end_at(seg, token, now);
    else
        end_not_innermost(token, now);
    nvtx_sync();
}

static inline void end(sps_zone_t token, int tsc) {
    uint64_t now = ticks_now(tsc);
    struct sps_rec_thread *seg = T.seg;
    if (UNLIKELY(!seg || !token || token != seg->depth || NVTX_ANNOUNCE())) {
        if (NVTX_ANNOUNCE())
            end_announced(token, now);
        else
            end_not_innermost(token, now);
        return;
    }
    end_at(seg, token, now);
}

static COLD void end_monotonic(sps_zone_t token) {
    end(token, 0);
}

void sps_zone_end(sps_zone_t token) {
    if (LIKELY(clock_is_tsc()))
        end(token, 1);
    else
        end_monotonic(token);
}

uint64_t sps_clock_now(void) {
    return ticks_now(clock_is_tsc());
}

/* A wait already over, as a zone begun and ended at the given ticks (see
 * stepscope.h): begun now through the ordinary path (slow path, overhead
 * guard and nesting limit included), then its frame's start moved back to
 * start and ended at end, both cut to [the enclosing frame's start, now]. */
void sps_wait_record(struct sps_site *site, uint64_t start, uint64_t end) {
    if (!sps__enabled || !site || site->kind != SPS_KIND_WAIT)
        return;
    int tsc = clock_is_tsc();
    sps_zone_t d = begin_core(site, tsc, 0);
    struct sps_rec_thread *seg = T.seg;
    if (!d || !seg)
        return;
    struct sps_rec_frame *f = &seg->stack[d];
    uint64_t now = f->start_ticks;
    uint64_t floor = d > 1 ? f[-1].start_ticks : 0; /* frame 0 is a sentinel */
    if (start < floor)
        start = floor;
    if (end > now)
        end = now;
    if (end <= start) {
        seg->depth = d - 1; /* nothing of it is left: taken back, as never begun */
        return;
    }
    f->start_ticks = start;
    end_frame(seg, d, end);
    /* its range would be pushed now and popped at once: none */
}

int sps__zone_discard(sps_zone_t token) {
    struct sps_rec_thread *seg = T.seg;
    if (seg && token && token + 1 == seg->depth && sps_rec_frame_is_phase(&seg->stack[token + 1])) {
        /* Its open phase goes on as the parent's, as zones inside a zone
         * taken back become the parent's: it moves down into the frame
         * taken back, and the parent's end will end it. */
        struct sps_rec_frame *f = &seg->stack[token];
        f[-1].child_ns += f->child_ns; /* frame 0 is a sentinel */
        f[0] = f[1];
        f[1].phase_mark = 0;
        seg->depth = token;
        if (NVTX_ANNOUNCE())
            nvtx_sync(); /* a range cannot be taken back: it ends here */
        return 1;
    }
    if (!seg || !token || token != seg->depth) {
        sps_zone_end(token);
        return 0;
    }
    struct sps_rec_frame *f = &seg->stack[token];
    f[-1].child_ns += f->child_ns; /* frame 0 is a sentinel */
    seg->depth = token - 1;
    if (NVTX_ANNOUNCE())
        nvtx_sync();
    return 1;
}

/* ------------------------------------------------------------ chained phases */

/*
 * sps_phase: the open frame at the top of the stack is either a phase (of
 * the innermost scope below it) or that scope itself (a zone, step,
 * micro-step, or frame 0: the thread).  One timestamp ends the first and
 * begins the next phase on the same frame, or begins the scope's first
 * phase one frame up.  Everything else is what a zone's begin and end do.
 *
 * phase_any handles every case; phase_at takes the two that a loop of
 * phases repeats (the next phase on a phase's frame, the first phase of a
 * step) with no call on the way, so the compiler keeps them in the hot
 * section (with the call in, gcc laid the phase-to-phase path out in the
 * cold one), and hands the rest (a phase carried across fork(), a depth
 * the stack or the overhead guard refuses) to phase_any.
 */
static COLD void phase_any(struct sps_rec_thread *seg, uint32_t id, uint64_t now) {
    uint32_t d = seg->depth;
    struct sps_rec_frame *f = &seg->stack[d];
    if (sps_rec_frame_is_phase(f)) {
        end_at(seg, d, now); /* the open phase ends where the next begins */
    } else {
        d++;
        f++;
    }
    if (UNLIKELY(d > T.max_depth) && !deep_begin_allowed(seg, d, SPS_KIND_ZONE)) {
        if (d <= SPS_REC_MAX_DEPTH)
            f->phase_mark = 0; /* the phase just ended there, if any */
    } else {
        f->name = id;
        f->kind = SPS_KIND_ZONE;
        f->ring = SPS_RING_ZONES;
        f->child_ns = 0;
        f->start_ticks = now;
        f->phase_mark = ~now;
        seg->depth = d;
    }
    /* with an NVTX tool every phase comes here (T.max_depth is 0): the
     * range of the phase that ended goes, the new one's comes, after the
     * timestamp, which ends the one phase and begins the other */
    if (NVTX_ANNOUNCE())
        nvtx_sync();
}

static ALWAYS_INLINE void phase_at(struct sps_rec_thread *seg, uint32_t id, uint64_t now) {
    uint32_t d = seg->depth;
    struct sps_rec_frame *f = &seg->stack[d];
    if (sps_rec_frame_is_phase(f)) {
        if (UNLIKELY(f->ring != SPS_RING_ZONES || d > T.max_depth)) {
            phase_any(seg, id, now);
            return;
        }
        /* the open phase ends where the next begins, on the same frame:
         * its kind and ring stay; the frame is rewritten only after the
         * phase's aggregate and event, with the depth back last, so a
         * process killed in between has the old phase recorded once and
         * the new one not yet open */
        chain_end(seg, f, d, now);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    } else {
        d++;
        f++;
        if (UNLIKELY(d > T.max_depth)) {
            phase_any(seg, id, now);
            return;
        }
        f->kind = SPS_KIND_ZONE;
        f->ring = SPS_RING_ZONES;
    }
    f->name = id;
    f->child_ns = 0;
    f->start_ticks = now;
    f->phase_mark = ~now;
    __atomic_store_n(&seg->depth, d, __ATOMIC_RELEASE);
}

void sps_phase_end(void) {
    struct sps_rec_thread *seg = T.seg;
    if (UNLIKELY(!seg) && !(seg = forked_thread_segment()))
        return;
    uint32_t d = seg->depth;
    if (sps_rec_frame_is_phase(&seg->stack[d]))
        end_phase_at(seg, d, sps__ticks());
    if (NVTX_ANNOUNCE())
        nvtx_sync();
}

static COLD void phase_slow(struct sps_site *site) {
    uint32_t id = 0;
    /* a site that is not a zone's: the open phase still ends (its time
     * must not run on into what follows), none begins */
    if (site && site->kind == SPS_KIND_ZONE)
        id = prepare(site);
    if (id)
        phase_at(T.seg, id, sps__ticks());
    else
        sps_phase_end();
    if (NVTX_ANNOUNCE())
        nvtx_sync(); /* prepare may just have attached the tool */
}

static ALWAYS_INLINE void phase(struct sps_site *site, int tsc) {
    if (UNLIKELY(!site)) {
        phase_slow(site);
        return;
    }
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    struct sps_rec_thread *seg = T.seg;
    if (UNLIKELY(site->kind != SPS_KIND_ZONE || !seg || !id || !T.agg_index[id])) {
        phase_slow(site);
        return;
    }
    phase_at(seg, id, ticks_now(tsc));
}

static COLD void phase_monotonic(struct sps_site *site) {
    phase(site, 0);
}

void sps_phase(struct sps_site *site) {
    if (LIKELY(clock_is_tsc()))
        phase(site, 1);
    else
        phase_monotonic(site);
}

/* A phase the thread itself owns (begun with nothing open) ends when the
 * thread does; anything open inside a step or zone dies with it, as the
 * step or zone does. */
static void end_root_phase(void) {
    struct sps_rec_thread *seg = T.seg;
    if (seg && seg->depth == 1 && sps_rec_frame_is_phase(&seg->stack[1]))
        end_phase_at(seg, 1, sps__ticks());
}

/* One event into the values ring, whose events are timed already
 * (values and counters at one instant, GPU spans over their placement). */
static inline void push_values_ring(struct sps_rec_thread *seg, uint32_t id, uint32_t kind, uint64_t start,
                                    uint64_t end, uint64_t a, uint16_t depth) {
    uint64_t h = seg->head[SPS_RING_VALUES];
    if (LIKELY(h < seg->limit[SPS_RING_VALUES])) {
        struct sps_rec_event *e = &T.ring[SPS_RING_VALUES][h & T.mask[SPS_RING_VALUES]];
        e->start_ticks = start;
        e->end_ticks = end;
        e->a = a;
        e->name = id;
        e->depth = depth;
        e->kind = (uint16_t)kind;
    }
    __atomic_store_n(&seg->head[SPS_RING_VALUES], h + 1, __ATOMIC_RELEASE);
}

static inline void push_value_event(struct sps_rec_thread *seg, uint32_t id, uint32_t kind, uint64_t now, uint64_t a,
                                    uint16_t depth) {
    push_values_ring(seg, id, kind, now, now, a, depth);
}

void sps__record_gpu_span(struct sps_site *site, uint64_t start_ticks, uint64_t end_ticks, uint64_t stream) {
    struct sps_rec_thread *seg = T.seg;
    uint32_t id = site ? __atomic_load_n(&site->id, __ATOMIC_ACQUIRE) : 0;
    if (!seg || !id || site->kind != SPS_KIND_ZONE || (id > P.hdr->names_count && id != P.sink_id) ||
        !T.agg_index[id])
        return;
    push_values_ring(seg, id, SPS_REC_KIND_GPU_SPAN, start_ticks, end_ticks, stream, 0);
}

static inline void value_agg(uint32_t id, double value) {
    struct sps_rec_agg *a = (struct sps_rec_agg *)(T.base + T.agg_index[id]);
    if (a->count == 0)
        a->u.v.first = value;
    a->u.v.sum += value;
    a->u.v.sumsq += value * value;
    if (value < a->u.v.min)
        a->u.v.min = value;
    if (value > a->u.v.max)
        a->u.v.max = value;
    a->u.v.last = value;
    a->count++;
}

static inline void value_at(uint32_t id, double value) {
    uint64_t now = sps__ticks();
    value_agg(id, value);
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    push_value_event(T.seg, id, SPS_KIND_VALUE, now, bits, (uint16_t)T.seg->depth);
}

static COLD void value_slow(struct sps_site *site, double value) {
    uint32_t id = prepare(site);
    if (id)
        value_at(id, value);
}

void sps_value(struct sps_site *site, double value) {
    if (UNLIKELY(!site))
        return;
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    if (UNLIKELY(site->kind != SPS_KIND_VALUE))
        return;
    if (UNLIKELY(!T.seg || !id || !T.agg_index[id])) {
        value_slow(site, value);
        return;
    }
    value_at(id, value);
}

/* ------------------------------------------------------ values at a time */

/* t_ns (sps_clock_ns()'s clock) in this record's ticks: the inverse of
 * the reader's conversion (record_clock.h) with the header's anchors as
 * they stand, so the reader gives t_ns back to within a nanosecond (and
 * within the rate's later refinement, tens of ns over a run).  Cut to the
 * record's start and to now. */
static uint64_t ticks_of_ns(uint64_t t_ns) {
    uint64_t now = sps__ticks();
    struct sps__rec_clock c;
    sps__rec_clock_setup(&c, P.hdr);
    if (t_ns <= c.anchor_ns)
        return c.anchor_ticks < now ? c.anchor_ticks : now;
    long double ticks = (long double)c.anchor_ticks + (long double)(t_ns - c.anchor_ns) * c.ticks_per_second / 1e9L;
    return ticks >= (long double)now ? now : (uint64_t)(ticks + 0.5L);
}

/* A value at an explicit time (see stepscope.h): the aggregates as
 * sps_value's, the event at t_ns and marked SPS_REC_DEPTH_TIMED, so the
 * model places it by its time alone, never by the frames open now. */
void sps_value_at(struct sps_site *site, double value, uint64_t t_ns) {
    if (UNLIKELY(!site) || site->kind != SPS_KIND_VALUE)
        return;
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    if (UNLIKELY(!T.seg || !id || !T.agg_index[id])) {
        id = prepare(site);
        if (!id)
            return;
    }
    value_agg(id, value);
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    push_value_event(T.seg, id, SPS_KIND_VALUE, ticks_of_ns(t_ns), bits, SPS_REC_DEPTH_TIMED);
}

static inline void count_at(uint32_t id, uint64_t n) {
    uint64_t now = sps__ticks();
    struct sps_rec_agg *a = (struct sps_rec_agg *)(T.base + T.agg_index[id]);
    a->u.z.total_ns += n; /* for counters: the sum of increments */
    a->count++;
    push_value_event(T.seg, id, SPS_KIND_COUNTER, now, n, (uint16_t)T.seg->depth);
}

static COLD void count_slow(struct sps_site *site, uint64_t n) {
    uint32_t id = prepare(site);
    if (id)
        count_at(id, n);
}

void sps_count(struct sps_site *site, uint64_t n) {
    if (UNLIKELY(!site))
        return;
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    if (UNLIKELY(site->kind != SPS_KIND_COUNTER))
        return;
    if (UNLIKELY(!T.seg || !id || !T.agg_index[id])) {
        count_slow(site, n);
        return;
    }
    count_at(id, n);
}

void sps_thread_name(const char *name) {
    if (!name)
        return;
    if (!T.seg) {
        if (T.refused || __atomic_load_n(&P.state, __ATOMIC_ACQUIRE) == PROC_FAILED)
            return;
        lock_process();
        int ok = attach_locked() == 0;
        unlock_process();
        prefault_rings();
        if (!ok)
            return;
    }
    copy_trunc(T.seg->name, sizeof T.seg->name, name);
}

void sps_set_enabled(int enabled) {
    sps__enabled = enabled ? 1 : 0;
}

int sps_is_enabled(void) {
    return sps__enabled;
}

/* --------------------------------------------------------- fork and exit */

static void atfork_prepare(void) {
    pthread_mutex_lock(&P.lock);
}

static void atfork_parent(void) {
    pthread_mutex_unlock(&P.lock);
}

static void atfork_child(void) {
    /* The child shares the parent's record mapping: it must never write
     * there.  Forget the segment and open a record of its own on the first
     * event, carrying over the names and this thread's open zones.  This
     * thread took P.lock in atfork_prepare: release it (re-initialising it
     * instead leaves TSan believing it held for the child's whole life, so
     * every later lock in the child reads as an inversion). */
    pthread_mutex_unlock(&P.lock);
    if (P.state == PROC_READY) {
        if (T.seg) {
            memcpy(P.fork_stack, T.seg->stack, sizeof P.fork_stack);
            P.fork_depth = T.seg->depth;
            P.fork_thread = (void *)&T;
        }
        P.inherited_base = P.base;
        P.inherited_size = P.size;
        P.base = NULL;
        P.hdr = NULL;
        P.state = PROC_FORKED;
        P.mode = SPS_MODE_UNINITIALISED;
    } else if (P.state == PROC_FAILED && P.mode == SPS_MODE_FAILED && sps__enabled) {
        P.state = PROC_FORKED; /* a failure (e.g. a full disk) may not last: retry */
    }
    if (P.fd >= 0) { /* the parent's record file: not ours to keep open */
        close(P.fd);
        P.fd = -1;
    }
    if (P.key_created)
        pthread_setspecific(P.thread_key, NULL);
    struct nvtx_stack *ranges = T.nvtx_stack;
    memset(&T, 0, sizeof T);
    if (ranges) { /* the parent's ranges are the parent's */
        ranges->depth = 0;
        T.nvtx_stack = ranges;
    }
    P.anchor_busy = 0;
}

/*
 * At exit: cut the record file to the bytes it handed out (the rest of
 * file_size is a hole), so a run directory copies, tars and uploads at its
 * real size.  Threads still running write only inside what they were
 * handed; one that allocates later extends the file again (posix_fallocate
 * in reserve), so nothing lands past the end.  Skipped while another thread
 * holds the lock: it may be allocating (`stepscope run` cuts it later).
 */
static void cut_to_used_size(void) {
    if (P.mode != SPS_MODE_FILE || pthread_mutex_trylock(&P.lock) != 0)
        return;
    if (record_fd() >= 0 && ftruncate(P.fd, (off_t)sps_rec_used_size(P.hdr)) != 0) {
        /* a refusal only leaves the file large: `stepscope run` cuts it later */
    }
    pthread_mutex_unlock(&P.lock);
}

/* STEPSCOPE_OUT asks for a report, and nothing registered the hook that
 * writes it: a program linked with the static library by hand, without
 * the reference that keeps the report writer (render/standalone.h).  One
 * line says so rather than nothing at all; the records are as they were. */
static void say_out_writer_missing(void) {
    const char *out = sps__env_path("STEPSCOPE_OUT");
    if (!out || sps__env_path("STEPSCOPE_RUN_DIR"))
        return; /* no report asked for, or `stepscope run` writes it */
    fprintf(stderr,
            "stepscope: report not written: STEPSCOPE_OUT=%s is set, but this program was linked without "
            "stepscope's report writer (libstepscope.a without -Wl,--undefined=sps__standalone_out_linked: link "
            "with `pkg-config --static --libs stepscope` or CMake's stepscope::stepscope_static, which add it)\n",
            out);
}

static void on_exit_handler(void) {
    if (P.state != PROC_READY || P.pid != getpid())
        return;
    end_root_phase(); /* the exiting thread's */
    struct sps_rec_header *h = P.hdr;
    h->end_ticks = sps__ticks();
    refresh_anchor(h->end_ticks, 1);
    __atomic_store_n(&h->state, SPS_REC_STATE_CLOSED, __ATOMIC_RELEASE);
    cut_to_used_size();
    sps__recorder_hook hook = __atomic_load_n(&exit_hook, __ATOMIC_RELAXED);
    if (hook)
        hook(); /* e.g. the standalone report (STEPSCOPE_OUT) */
    else
        say_out_writer_missing();
}

/* --------------------------------------------------------------- inspection */

int sps_status(struct sps_status *out) {
    if (!out)
        return SPS_EINVAL;
    memset(out, 0, sizeof *out);
    lock_process();
    out->mode = P.state == PROC_READY ? P.mode : P.state == PROC_FAILED ? SPS_MODE_FAILED : SPS_MODE_UNINITIALISED;
    out->clock = sps__clock.source;
    out->ticks_per_second = sps__clock.ticks_per_second;
    snprintf(out->record_path, sizeof out->record_path, "%s", P.state == PROC_READY ? P.path : "");
    snprintf(out->reason, sizeof out->reason, "%s", P.reason);
    if (P.state == PROC_READY) {
        const struct sps_rec_header *h = P.hdr;
        const uint64_t *dir = (const uint64_t *)(P.base + h->threads_off);
        out->threads_recording = h->threads_count;
        for (uint32_t i = 0; i < h->threads_count; i++) {
            const struct sps_rec_thread *s = (const void *)(P.base + dir[i]);
            for (int r = 0; r < SPS_RING_COUNT; r++) {
                uint64_t head = __atomic_load_n(&s->head[r], __ATOMIC_ACQUIRE);
                out->events_recorded += head;
                out->events_dropped += head - sps_rec_ring_kept(head, h->ring_cap[r], h->ring_policy);
            }
        }
    }
    unlock_process();
    return 0;
}

uint64_t sps_clock_ns(void) {
    pthread_once(&setup_once, setup); /* the shift is read there */
    return sps__mono_ns();
}

int sps_clock_offset_set(enum sps_sync_when when, int64_t offset_ns, uint64_t error_ns, uint64_t at_ns,
                         uint32_t rounds, const char *why) {
    if (when != SPS_SYNC_START && when != SPS_SYNC_END)
        return SPS_EINVAL;
    lock_process();
    if (P.state == PROC_UNINIT || P.state == PROC_FORKED)
        (void)proc_open();
    int rc = SPS_ESTATE;
    if (P.state == PROC_READY) {
        struct sps_rec_clock_sync *slot = &P.hdr->clock_sync[when];
        /* readers take state first: mark the slot unmeasured while it is rewritten */
        __atomic_store_n(&slot->state, SPS_REC_SYNC_NONE, __ATOMIC_RELEASE);
        slot->rounds = rounds;
        slot->offset_ns = why ? 0 : offset_ns;
        slot->error_ns = why ? 0 : error_ns;
        slot->at_ns = why ? 0 : at_ns;
        if (why)
            snprintf(P.hdr->clock_sync_reason, sizeof P.hdr->clock_sync_reason, "%s", why);
        __atomic_store_n(&slot->state, why ? SPS_REC_SYNC_FAILED : SPS_REC_SYNC_MEASURED, __ATOMIC_RELEASE);
        rc = 0;
    }
    unlock_process();
    return rc;
}

struct sps_rec_header *sps__recorder_header(void) {
    return __atomic_load_n(&P.state, __ATOMIC_ACQUIRE) == PROC_READY ? P.hdr : NULL;
}

int sps__recorder_snapshot(const void **base, size_t *size, char *label, size_t label_len) {
    if (__atomic_load_n(&P.state, __ATOMIC_ACQUIRE) != PROC_READY)
        return SPS_ESTATE;
    *base = P.base;
    *size = P.size;
    snprintf(label, label_len, "%s", P.mode == SPS_MODE_FILE ? P.path : "<memory record>");
    return 0;
}

const struct sps_rec_thread *sps__recorder_thread_segment(void) {
    return sps__recorder_header() && !T.refused ? T.seg : NULL;
}
