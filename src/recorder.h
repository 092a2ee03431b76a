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
 * Take back the calling thread's innermost open zone, step or micro-step
 * `token` without recording it: no event, no aggregate, as if it had never
 * begun; the zones that ran inside it become its parent's children (the
 * parent's self time still leaves them out).  For a layer that opened a
 * micro-step before knowing whether there would be micro-steps at all
 * (python/stepscope/torch.py).  A token that is not the innermost open one
 * is ended as sps_zone_end would; 0 is ignored.  Returns 1 when the zone
 * was taken back, 0 when it was ended (or ignored).  Calling thread only.
 */
int sps__zone_discard(sps_zone_t token);

#endif /* SPS_RECORDER_H */
