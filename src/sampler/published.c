/* published.c - the seqlock'd latest sample (see published.h). */
#include "sampler/published.h"

#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(struct sps__published) % 8 == 0, "copied in 8-byte words");
_Static_assert(sizeof(struct sps__sample) % 8 == 0, "copied in 8-byte words");
_Static_assert(sizeof(struct sps__gpu_sample) % 8 == 0, "copied in 8-byte words");
_Static_assert(sizeof(struct sps__sensor_sample) % 8 == 0, "copied in 8-byte words");
_Static_assert(sizeof(struct sps__published_source) % 8 == 0, "copied in 8-byte words");
_Static_assert(offsetof(struct sps__published, sources) % 8 == 0, "aligned");
_Static_assert(offsetof(struct sps__sample, gpu) % 8 == 0 && offsetof(struct sps__sample, sensor) % 8 == 0, "aligned");

static void store_words(void *dst, const void *src, size_t bytes) {
    uint64_t *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < bytes / 8; i++) {
        uint64_t w;
        memcpy(&w, s + i * 8, 8);
        __atomic_store_n(&d[i], w, __ATOMIC_RELAXED);
    }
}

static void load_words(void *dst, const void *src, size_t bytes) {
    unsigned char *d = dst;
    const uint64_t *s = src;
    for (size_t i = 0; i < bytes / 8; i++) {
        uint64_t w = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
        memcpy(d + i * 8, &w, 8);
    }
}

void sps__published_init(struct sps__published *p, int tree_pid) {
    memset(p, 0, sizeof *p);
    memcpy(p->magic, SPS_PUBLISHED_MAGIC, 8);
    p->version = SPS_PUBLISHED_VERSION;
    p->size = (uint32_t)sizeof *p;
    p->tree_pid = tree_pid;
    p->writer_pid = (int32_t)getpid();
}

void sps__published_write(struct sps__published *p, const struct sps__sample *sample,
                          const struct sps__published_source *sources) {
    uint64_t seq = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELAXED);
    /* the odd seq must be visible before any data word changes */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    if (sources)
        store_words(p->sources, sources, sizeof p->sources);
    /* only what a reader reads: the head and the GPUs and sensors in use
     * (the sample is 9 KiB, the head about 0.5 KiB) */
    int32_t ngpus = sample->ngpus, nsensors = sample->nsensors;
    if (ngpus < 0 || ngpus > SPS_CAPTURE_MAX_GPUS)
        ngpus = 0;
    if (nsensors < 0 || nsensors > SPS_CAPTURE_MAX_SENSORS)
        nsensors = 0;
    store_words(&p->sample, sample, offsetof(struct sps__sample, gpu));
    store_words(p->sample.gpu, sample->gpu, sizeof sample->gpu[0] * (size_t)ngpus);
    store_words(p->sample.sensor, sample->sensor, sizeof sample->sensor[0] * (size_t)nsensors);
    __atomic_store_n(&p->seq, seq + 2, __ATOMIC_RELEASE);
}

int sps__published_read(const struct sps__published *p, struct sps__sample *sample,
                        struct sps__published_source *sources) {
    const size_t head = offsetof(struct sps__sample, gpu);
    /* A writer holds the lock for microseconds; one that died holding it
     * (the CLI killed mid-write) must not hang the workload: give up after
     * far longer than any write takes. */
    for (long tries = 0; tries < 1000000; tries++) {
        uint64_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
        if (s1 == 0)
            return -1;
        if (s1 & 1)
            continue;
        load_words(sample, &p->sample, head);
        int32_t ngpus = sample->ngpus, nsensors = sample->nsensors;
        /* torn counts are caught by the seq check below; bound them first */
        if (ngpus < 0 || ngpus > SPS_CAPTURE_MAX_GPUS)
            ngpus = 0;
        if (nsensors < 0 || nsensors > SPS_CAPTURE_MAX_SENSORS)
            nsensors = 0;
        load_words(sample->gpu, p->sample.gpu, sizeof sample->gpu[0] * (size_t)ngpus);
        load_words(sample->sensor, p->sample.sensor, sizeof sample->sensor[0] * (size_t)nsensors);
        if (sources)
            load_words(sources, p->sources, sizeof p->sources);
        /* every data load must complete before seq is read again */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) == s1) {
            sample->ngpus = ngpus;
            sample->nsensors = nsensors;
            return 0;
        }
    }
    return -1;
}

int sps__published_valid(const struct sps__published *p, uint64_t size) {
    return size >= sizeof *p && memcmp(p->magic, SPS_PUBLISHED_MAGIC, 8) == 0 &&
           p->version == SPS_PUBLISHED_VERSION && p->size == sizeof *p;
}
