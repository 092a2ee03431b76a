/*
 * standalone.h - the report a recording process writes of itself, without
 * `stepscope run` (sps_report_write() in stepscope.h is the public face).
 */
#ifndef SPS_RENDER_STANDALONE_H
#define SPS_RENDER_STANDALONE_H

#include <stddef.h>

/*
 * Read the calling process's own record in place and write DIR/NAME
 * (report.json, or a per-process name: standalone_out.c) atomically,
 * creating DIR.  When NAME is report.json, the HTML, CSV and trace files an
 * earlier run left in DIR are removed after it is written: they would
 * describe another run.  Other threads may go on recording meanwhile.
 * Returns 0 or an SPS_E* code with errbuf set (errbuf may be NULL).
 */
int sps__standalone_write(const char *dir, const char *name, char *errbuf, size_t errlen);

/*
 * Referenced by the static library's users (CMake adds
 * -Wl,--undefined=sps__standalone_out_linked), so that standalone_out.c,
 * which registers the STEPSCOPE_OUT hooks with the recorder at load, is
 * linked in although nothing calls it by name.
 */
extern const int sps__standalone_out_linked;

#endif /* SPS_RENDER_STANDALONE_H */
