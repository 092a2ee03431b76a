/*
 * nvtx.h - stepscope's zones, steps and GPU zones as NVTX ranges, for a
 * tool injected through NVTX_INJECTION64_PATH (Nsight Systems sets it
 * under `nsys profile`).  The recorder calls these only on a thread that
 * found a tool attached (sps__nvtx_attach), so without one they cost
 * nothing but that one check (see recorder.c).
 */
#ifndef SPS_NVTX_H
#define SPS_NVTX_H

#include <stdint.h>

/*
 * Look for the tool once per process (later calls return the first
 * answer): load the library NVTX_INJECTION64_PATH names, hand it
 * stepscope's export tables, and see which range calls it filled in.  A
 * variable that names a library that does not load or refuses gets one
 * line on stderr, once, and no ranges.  Returns 1 when ranges go to a
 * tool, else 0.  Any thread; never call it with the recorder's lock held
 * (the tool's initialisation runs arbitrary code).
 */
int sps__nvtx_attach(void);

/* No step number (sps__nvtx_push). */
#define SPS_NVTX_NO_STEP UINT64_MAX

/*
 * Push a range named name (the zone's name) of kind (enum sps_kind) on the
 * calling thread; a step's number (when not SPS_NVTX_NO_STEP) is added to
 * the message ("step 42") and carried as the range's payload.  Pop the
 * calling thread's innermost stepscope range.  Only after
 * sps__nvtx_attach() returned 1.  Any thread (the tool keeps a stack per
 * thread).
 */
void sps__nvtx_push(const char *name, uint32_t kind, uint64_t step);
void sps__nvtx_pop(void);

/* What `stepscope doctor` says about NVTX. */
struct sps__nvtx_status {
    int requested;      /* NVTX_INJECTION64_PATH is set and not empty */
    int attached;       /* ranges go to the tool */
    char library[512];  /* the variable's value, "" when unset */
    const char *api;    /* the calls ranges go through, when attached */
    char reason[320];   /* why not attached, when requested */
};

/* Fill *out, attaching first if nothing did yet (so under a tool, doctor
 * loads it as a workload would).  Any thread. */
void sps__nvtx_status(struct sps__nvtx_status *out);

#endif /* SPS_NVTX_H */
