/*
 * grow.c - a program that records nothing (no stepscope in it: any
 * command) and whose memory the tests know: for the leak analysis
 * against time under `stepscope run`.
 *
 *   --hold-mib H    first map H MiB and write every page (kept)
 *   --ticks N       then N ticks (default 100)
 *   --every-ms M    each M ms long (default 20): a sleep
 *   --kib K         each tick first maps K KiB more and writes every page
 *                   (kept): a steady leak of K KiB a tick (default 0: flat)
 *
 * Memory comes straight from mmap, so no allocator's pools or trimming
 * (nor a sanitizer's) come between the program and its resident set.
 * Prints "kept B bytes" on stdout at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Map bytes of anonymous memory and write every page; exits on failure. */
static void keep(size_t bytes) {
    if (bytes == 0)
        return;
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("grow: mmap");
        exit(2);
    }
    long page = sysconf(_SC_PAGESIZE);
    for (size_t off = 0; off < bytes; off += (size_t)page)
        p[off] = 1;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv) {
    long hold_mib = 0, ticks = 100, every_ms = 20, kib = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        long v = strtol(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "--hold-mib"))
            hold_mib = v;
        else if (!strcmp(argv[i], "--ticks"))
            ticks = v;
        else if (!strcmp(argv[i], "--every-ms"))
            every_ms = v;
        else if (!strcmp(argv[i], "--kib"))
            kib = v;
        else {
            fprintf(stderr, "grow: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (hold_mib < 0 || ticks < 0 || every_ms < 0 || kib < 0) {
        fprintf(stderr, "grow: negative figure\n");
        return 2;
    }
    size_t kept = (size_t)hold_mib << 20;
    keep(kept);
    for (long t = 0; t < ticks; t++) {
        keep((size_t)kib << 10);
        kept += (size_t)kib << 10;
        sleep_ms(every_ms);
    }
    printf("kept %zu bytes\n", kept);
    return 0;
}
