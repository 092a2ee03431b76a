/*
 * last_step.h - the calling thread's last completed step, read in place
 * from the process's own record (stepscope.last_step()).
 *
 * Nothing is kept on the hot path for it: the call finds the thread's
 * latest step event at its steps ring's head, then walks its zones and
 * values rings back from their heads over what the thread recorded since
 * that step began.  Its cost is paid by the call alone: the events of the
 * step and of what followed it, no system call.
 */
#ifndef SPS_LAST_STEP_H
#define SPS_LAST_STEP_H

#include <stdint.h>

#include "step_line.h"

/*
 * Fill *l with the calling thread's last completed step as the live
 * stream writes it (step_line.h): times relative to origin_mono_ns (0:
 * the process's own start, as its standalone report counts them), and no
 * machine readings (the caller adds them).  Values recorded after the
 * step's end count while the thread's next step has not begun, as in
 * report.json.  Returns 0, or -1 when the thread has completed no step
 * its record kept (none yet; the record full or failed; a keep-first ring
 * that refused the latest).  Calling thread only.
 */
int sps__last_step(struct sps__step_line *l, uint64_t origin_mono_ns);

/* The name of id in the process's own record, for sps__step_line_json
 * (ctx unused); NULL when there is none. */
const char *sps__last_step_name(void *ctx, uint32_t id);

#endif /* SPS_LAST_STEP_H */
