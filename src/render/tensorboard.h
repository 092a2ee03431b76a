/*
 * tensorboard.h - TensorBoard event files made from the report model:
 * one scalar per step for the step time, each phase's self time, each
 * collective wait, each value and counter, and the machine readings over
 * the step, under stepscope/... tags, step = the step's number, wall
 * time = when the step ended.  docs/tensorboard.md is the contract: the
 * tags, their units, the directory layout.
 *
 * Layout: one event file per step stream (a thread's steps of one name).
 * A run whose processes carry ranks writes DIR/rank-N/ per rank (so
 * TensorBoard shows the ranks as runs over the same tags); without ranks
 * the main stream goes into DIR itself.  Any other stream of a rank goes
 * into a subdirectory named after its step name.  File names are
 * events.out.tfevents.<run start, Unix s>.<host>.<pid>.<tid>.stepscope,
 * the shape TensorBoard's own EventFileWriter gives its files
 * ("events.out.tfevents.%010d.%s.%s.%s" of time, host, pid and a
 * per-process uid, then a suffix): two runs or two streams do not share a
 * path, and the same run rendered again (stepscope report) replaces its
 * files rather than adding a second copy of every step.
 *
 * Reads the report, never changes it; not thread-safe per report.
 */
#ifndef SPS_RENDER_TENSORBOARD_H
#define SPS_RENDER_TENSORBOARD_H

#include <stddef.h>

#include "render/output_file.h"
#include "report/report.h"

/* Every step stream of rep into dir (created with its parents when
 * missing), each file written atomically (a temporary renamed over it).
 * *others (when others is not NULL) gets how many other event files the
 * directories written into already held: TensorBoard would show them as
 * part of the same runs, and the caller may say so.  Returns 0, or an
 * SPS_E* code with err set to one line; files written before a failure
 * stay (each one whole). */
int sps__export_tensorboard(const struct sps_report *rep, const char *dir, size_t *others, char *err,
                            size_t errlen);

/* Open the event file path for writing (render/output_file.h), its
 * temporary named ".stepscope-events.tmp-XXXXXXXXXXXX": TensorBoard loads
 * every file whose name holds "tfevents" (io_wrapper's
 * IsTensorFlowEventsFile), so a temporary named after the event file would
 * be read by a TensorBoard watching dir, and then the committed file
 * again: every step twice.  Returns 0, or SPS_EIO with err set. */
int sps__tensorboard_open(struct sps_out *o, const char *path, char *err, size_t errlen);

/* Remove the event files stepscope wrote into dir and the directories its
 * layout makes under it (rank-N/ and a step name's subdirectory below
 * that): regular files named events.out.tfevents.*.stepscope, never
 * another writer's event files, never through a symlink.  For `stepscope
 * run -o DIR`, which replaces what an earlier run left in DIR.  Returns
 * how many it removed, or -1 with err set when one could not be removed. */
int sps__tensorboard_remove_own(const char *dir, char *err, size_t errlen);

/* As sps__tensorboard_remove_own, on the directory open as dfd (path names
 * it in err), moving the files to the same relative place under the
 * directory open as to_dfd (subdirectories made there as needed) instead
 * when to_dfd is not -1; a top-level subdirectory whose name starts with
 * skip (NULL: none) is not entered.  For `stepscope run -o DIR`, which sets an earlier run's
 * outputs aside.  Neither descriptor is closed.  Returns how many it
 * moved (removed), or -1 with err set when one could not be. */
int sps__tensorboard_move_own(int dfd, int to_dfd, const char *path, const char *skip, char *err, size_t errlen);

#endif /* SPS_RENDER_TENSORBOARD_H */
