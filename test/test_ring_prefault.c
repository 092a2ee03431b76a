/*
 * test_ring_prefault.c - a new thread's event rings are faulted in when it
 * registers (its first event), so its first 65,536 zones take no page
 * fault: every page of its rings is mapped right after its first zone, in
 * memory and in a record file, where the stores would have faulted in only
 * the pages they reached (one per ring).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "platform/platform.h"
#include "record_format.h"
#include "recorder.h"
#include "stepscope.h"

static void *one_zone(void *arg) {
    (void)arg;
    SPS_ZONE("first_zone");
    return NULL;
}

/* Pages of [at, at+len) that this process has not mapped yet (the
 * "present" bit of /proc/self/pagemap: a store there would fault); -1 when
 * pagemap cannot be read. */
static long unmapped_pages(const unsigned char *at, size_t len) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)at / (uintptr_t)page, hi = ((uintptr_t)at + len + (uintptr_t)page - 1) / (uintptr_t)page;
    FILE *f = fopen("/proc/self/pagemap", "rb");
    if (!f)
        return -1;
    long absent = 0;
    if (fseeko(f, (off_t)(lo * sizeof(uint64_t)), SEEK_SET) != 0)
        absent = -1;
    for (uintptr_t p = lo; absent >= 0 && p < hi; p++) {
        uint64_t entry;
        if (fread(&entry, sizeof entry, 1, f) != 1)
            absent = -1;
        else
            absent += !(entry >> 63 & 1);
    }
    fclose(f);
    return absent;
}

static void test_new_thread_rings_resident(void) {
    /* the process's first recording thread: its segment is a new one, not
     * an exited thread's whose pages earlier events touched */
    pthread_t t;
    pthread_create(&t, NULL, one_zone, NULL);
    pthread_join(t, NULL);
    const void *base;
    size_t size;
    char label[512];
    CHECK(sps__recorder_snapshot(&base, &size, label, sizeof label) == 0);
    const struct sps_rec_header *h = base;
    CHECK_EQ_U(h->threads_count, 1);
    const uint64_t *dir = (const void *)((const unsigned char *)base + h->threads_off);
    const struct sps_rec_thread *seg = (const void *)((const unsigned char *)base + dir[0]);
    CHECK_EQ_U(seg->head[SPS_RING_ZONES], 1);
    uint64_t bytes = 0;
    for (int r = 0; r < SPS_RING_COUNT; r++)
        bytes += (uint64_t)h->ring_cap[r] * sizeof(struct sps_rec_event);
    /* the default rings: 65,536 + 16,384 + 16,384 events, 3 MiB, 768 pages */
    CHECK_EQ_U(bytes, 3u << 20);
    CHECK_EQ_I(unmapped_pages((const unsigned char *)base + seg->ring_off[0], bytes), 0);
}

/* The platform call itself: every page of a range that starts and ends
 * inside a page is mapped after it, and what the pages held is kept. */
static void test_prefault_keeps_contents(void) {
    long page = sysconf(_SC_PAGESIZE);
    size_t len = 16 * (size_t)page;
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return;
    m[3 * page + 7] = 0xA5; /* two pages in use, the rest never touched */
    m[9 * page] = 0x5A;
    CHECK_EQ_I(unmapped_pages(m, len), 14);
    CHECK_EQ_I(sps__platform_prefault(m + 100, len - 200), 0);
    CHECK_EQ_I(unmapped_pages(m, len), 0);
    CHECK_EQ_U(m[3 * page + 7], 0xA5);
    CHECK_EQ_U(m[9 * page], 0x5A);
    size_t nonzero = 0;
    for (size_t i = 0; i < len; i++)
        nonzero += m[i] != 0;
    CHECK_EQ_U(nonzero, 2);
    munmap(m, len);
}

int main(void) {
    unsetenv("STEPSCOPE_RING_EVENTS");
    unsetenv("STEPSCOPE_STEP_EVENTS");
    unsetenv("STEPSCOPE_VALUE_EVENTS");
    const char *dir = getenv("STEPSCOPE_RUN_DIR");
    if (!dir || !*dir) {
        /* in memory; then again as a record file in a run directory */
        fprintf(stderr, "== in memory\n");
        RUN_TEST(test_new_thread_rings_resident);
        RUN_TEST(test_prefault_keeps_contents);
        char run_dir[] = "/tmp/test_ring_prefault.XXXXXX";
        if (!mkdtemp(run_dir))
            return 1;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            setenv("STEPSCOPE_RUN_DIR", run_dir, 1);
            execl("/proc/self/exe", "test_ring_prefault", (char *)NULL);
            _exit(127);
        }
        int status = -1;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the record-file run failed (status %d)", status);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", run_dir);
        CHECK(system(cmd) == 0);
    } else {
        fprintf(stderr, "== in a record file\n");
        RUN_TEST(test_new_thread_rings_resident);
    }
    return check_report();
}
