/*
 * fuzz_common.c - what the harnesses share (fuzz.h): the input as a file
 * for the readers that take a path, the records' checksum made right, and
 * the sink.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crc32.h"
#include "fuzz.h"
#include "record_format.h"

static void die(const char *what) {
    fprintf(stderr, "fuzz: %s: %s\n", what, strerror(errno));
    abort();
}

/* Replace fd's contents by data. */
static void refill(int fd, const uint8_t *data, size_t size) {
    if (ftruncate(fd, 0) != 0)
        die("ftruncate");
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("pwrite");
        done += (size_t)n;
    }
}

const char *sps_fuzz_memfile(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("sps-fuzz-input", MFD_CLOEXEC);
        if (fd < 0)
            die("memfd_create");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    refill(fd, data, size);
    return path;
}

static char input_dir[4096];
static char input_path[4200];

static void remove_input_dir(void) {
    if (input_path[0])
        unlink(input_path);
    rmdir(input_dir);
}

const char *sps_fuzz_dir_file(const char *name, const uint8_t *data, size_t size) {
    if (!input_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(input_dir, sizeof input_dir, "%s/sps-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(input_dir))
            die(input_dir);
        atexit(remove_input_dir);
    }
    snprintf(input_path, sizeof input_path, "%s/%s", input_dir, name);
    /* a new file each time: a reader that keeps a record open (the live
     * ones do, between polls) sees the file as a writer would leave it */
    int fd = open(input_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        die(input_path);
    refill(fd, data, size);
    close(fd);
    return input_dir;
}

uint8_t *sps_fuzz_header_crc_fixed(const uint8_t *data, size_t size) {
    struct sps_rec_header h;
    if (size < sizeof h)
        return NULL;
    memcpy(&h, data, sizeof h);
    uint32_t crc = sps__crc32(&h, offsetof(struct sps_rec_header, header_crc));
    if (h.header_crc == crc)
        return NULL;
    uint8_t *copy = malloc(size);
    if (!copy)
        die("malloc");
    memcpy(copy, data, size);
    memcpy(copy + offsetof(struct sps_rec_header, header_crc), &crc, sizeof crc);
    return copy;
}

FILE *sps_fuzz_sink(void) {
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        die("/dev/null");
    return sink;
}

void sps_fuzz_rejected(const char *err) {
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("SPS_FUZZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "rejected: %s\n", err);
}
