/*
 * visible_devices.h - which GPUs the workload sees, as CUDA_VISIBLE_DEVICES
 * says, and in which order (the workload's cuda:N is the N-th entry).
 *
 * CUDA reads the variable as a comma-separated list of entries: a decimal
 * index, "GPU-" followed by a UUID or a unique prefix of one, or "MIG-..."
 * for a MIG instance.  The list ends at the first entry that is not valid
 * (so "", "-1" and "none" leave no GPU visible); unset, every GPU is visible
 * in the driver's order.  Both GPU sources that enumerate devices (nvml,
 * nvidia-smi) resolve the list here against what they found.
 *
 * Reentrant; nothing allocates.
 */
#ifndef SPS_GPU_VISIBLE_DEVICES_H
#define SPS_GPU_VISIBLE_DEVICES_H

#include <stddef.h>

/* Entries parsed at most; a longer list is cut there (no machine has that
 * many GPUs, and a capture reports at most SPS_CAPTURE_MAX_GPUS). */
#define SPS__VISIBLE_MAX_ENTRIES 64

enum sps__gpu_selector_kind {
    SPS__SELECT_INDEX = 1,      /* a decimal index in the driver's order */
    SPS__SELECT_UUID = 2,       /* "GPU-<uuid or unique prefix>" */
    SPS__SELECT_UNSUPPORTED = 3 /* "MIG-...": valid for CUDA, not readable here; ends the list */
};

struct sps__gpu_selector {
    enum sps__gpu_selector_kind kind;
    unsigned index; /* SPS__SELECT_INDEX */
    char text[96];  /* the entry as written, spaces trimmed (cut to fit) */
};

struct sps__visible_devices {
    int all;   /* 1: the variable is unset, every GPU is visible */
    int count; /* valid entries, in order (an unsupported one is last) */
    struct sps__gpu_selector entry[SPS__VISIBLE_MAX_ENTRIES];
    char note[128]; /* why the list ended early ("" when it did not) */
};

/* Parse CUDA_VISIBLE_DEVICES (NULL: unset) into *out.  Never fails: what
 * cannot be parsed ends the list, and out->note says where. */
void sps__visible_devices_parse(const char *value, struct sps__visible_devices *out);

/* A GPU as a source enumerated it. */
struct sps__gpu_identity {
    int index;        /* the driver's index (NVML, nvidia-smi "index") */
    const char *uuid; /* "GPU-..." or "" when unknown */
};

/*
 * Resolve the parsed list against the n GPUs found: position[k] receives
 * the position in found[] of the workload's k-th GPU (its cuda:k).  An
 * index that no GPU has, a UUID prefix that matches none or several, a GPU
 * listed twice and an unsupported entry each end the list there, as CUDA
 * does; note (when not NULL) then says why.  Returns how many positions
 * were written (at most cap).
 */
int sps__visible_devices_resolve(const struct sps__visible_devices *vd, const struct sps__gpu_identity *found, int n,
                                 int *position, int cap, char *note, size_t note_cap);

#endif /* SPS_GPU_VISIBLE_DEVICES_H */
