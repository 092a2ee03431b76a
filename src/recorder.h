/* recorder.h - what the rest of the library may ask of the recorder. */
#ifndef SPS_RECORDER_H
#define SPS_RECORDER_H

#include <stddef.h>

#include "stepscope.h"

/*
 * The calling process's own record, for reading it in place (standalone
 * reports).  *base stays owned by the recorder and valid until exit; other
 * threads may be writing to it.  label gets the record's path or
 * "<memory record>".  Returns 0, or SPS_ESTATE when nothing was recorded.
 */
int sps__recorder_snapshot(const void **base, size_t *size, char *label, size_t label_len);

/*
 * The calling process's record header, for the mutable fields other parts
 * of the library publish (the cuda source's), or NULL while the process
 * has no record of its own (nothing recorded yet, a fork child before its
 * first event, recording failed).  Never creates the record.  The caller
 * serialises its own writes; the recorder never touches those fields.
 */
struct sps_rec_header;
struct sps_rec_header *sps__recorder_header(void);

/*
 * The calling thread's segment of the process's own record, to read its
 * rings in place (stepscope.last_step()), or NULL while the thread has
 * recorded nothing.  Only the calling thread writes it, so the calling
 * thread reads it without a race.  Never registers the thread.
 */
struct sps_rec_thread;
const struct sps_rec_thread *sps__recorder_thread_segment(void);

/*
 * Take back the calling thread's innermost open zone, step or micro-step
 * `token` without recording it: no event, no aggregate, as if it had never
 * begun; the zones that ran inside it become its parent's children (the
 * parent's self time still leaves them out).  For a layer that opened a
 * micro-step before knowing whether there would be micro-steps at all
 * (python/stepscope/torch.py).  Its open phase (sps_phase), if any, goes
 * on as the parent's, not ended: the parent's end or next phase ends it.
 * A token that is not the innermost open one (its phase aside)
 * is ended as sps_zone_end would; 0 is ignored.  Returns 1 when the zone
 * was taken back, 0 when it was ended (or ignored).  Calling thread only.
 */
int sps__zone_discard(sps_zone_t token);

/*
 * Hooks: what the layers above the recorder ask it to call, so that the
 * recorder never calls up into them (it includes nothing from gpu/,
 * render/ or report/).  Each setter stores one function pointer (NULL
 * removes it); any thread may call them at any time.
 *
 * open:     this process opened a record of its own for the first time
 *           (not in a fork child, which inherits its parent's choices).
 *           Called once, with the recorder's lock held, before the record
 *           exists: it must not record events or call the recorder.
 * exit:     the process is exiting (atexit) and its record is closed.
 *           Called once, in the process that opened the record.
 * step_end: the calling thread ended a step (a cold path, once per step;
 *           never on zones).  Called on that thread; it must not block.
 */
typedef void (*sps__recorder_hook)(void);
void sps__recorder_set_open_hook(sps__recorder_hook fn);
void sps__recorder_set_exit_hook(sps__recorder_hook fn);
void sps__recorder_set_step_end_hook(sps__recorder_hook fn);

/*
 * Record on the calling thread where a GPU zone of site (its zone site,
 * which the thread began, so its name is interned) ran on the GPU: an
 * SPS_REC_KIND_GPU_SPAN event in the values ring, from start to end (record
 * clock ticks, placed by the cuda source) on stream (the CUstream handle,
 * 0 for the legacy default stream).  No aggregate: its length is in the
 * "<name>.gpu_ms" value.  Nothing when the thread has no segment or the
 * site was never interned.  Calling thread only.
 */
void sps__record_gpu_span(struct sps_site *site, uint64_t start_ticks, uint64_t end_ticks, uint64_t stream);

#endif /* SPS_RECORDER_H */
