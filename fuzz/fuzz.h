/*
 * fuzz.h - what the libFuzzer harnesses under fuzz/ share (docs/fuzzing.md).
 *
 * Each harness is one file defining LLVMFuzzerTestOneInput: it hands the
 * input to one of stepscope's readers of files it did not write itself,
 * through the entry point the CLI uses, then to what the CLI does with the
 * result, and frees everything (leak checking is on).  The same file links
 * with libFuzzer (-DSPS_FUZZ=ON, clang) or with replay.c, which runs every
 * file of a corpus once: the suite's regression test of the corpus.
 *
 * Not thread-safe: one input at a time, as libFuzzer calls it.
 */
#ifndef SPS_FUZZ_H
#define SPS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* libFuzzer's entry point (declared here for -Wmissing-prototypes).
 * Returns 0: every input may be kept in the corpus. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The input as a file the readers can open by path: an anonymous memory
 * file (memfd), named "/proc/self/fd/N", whose contents are replaced by
 * each call.  Returns the path (static storage), or NULL when it cannot be
 * made (the harness then aborts: a fuzzer that reads nothing finds nothing).
 */
const char *sps_fuzz_memfile(const uint8_t *data, size_t size);

/*
 * A directory of the process's own under $TMPDIR (or /tmp), removed at
 * exit, holding the input as its only file, DIR/name, made anew by each
 * call (name: a plain file name, the same at every call of a harness).
 * Returns DIR (static storage) or NULL as above.
 */
const char *sps_fuzz_dir_file(const char *name, const uint8_t *data, size_t size);

/*
 * The record readers check a CRC-32 of the header's fixed part first, so
 * nearly every mutation of it would stop there.  The record harnesses run
 * each input as it is (the check itself is fuzzed) and, when its header's
 * checksum does not match, again as this copy with the checksum made
 * right, which gets the mutated fields to the checks behind it.  Returns
 * the copy (the caller frees it), or NULL when the input is shorter than
 * a header or its checksum already matches.
 */
uint8_t *sps_fuzz_header_crc_fixed(const uint8_t *data, size_t size);

/* /dev/null open for writing: where the harnesses render what they read
 * (the formatting runs, nothing is kept).  Never NULL. */
FILE *sps_fuzz_sink(void);

/* A reader's rejection of the input: printed to stderr when
 * SPS_FUZZ_VERBOSE is set (to see why a seed does not get past a reader;
 * never while fuzzing, where most inputs are rejected). */
void sps_fuzz_rejected(const char *err);

struct sps_report;

/* Everything `stepscope report` makes of a report (fuzz_render.c): the
 * summary and analysis text, report.json, report.html, steps.csv,
 * timeline.csv and trace.json, each written to the sink. */
void sps_fuzz_render(const struct sps_report *rep);

/* What `stepscope run` does with a records directory after the workload
 * (fuzz_render.c): load it (sps__run_load_dir: the records, the torch-ops
 * files, merge.tsv), build the run and the report, and render it. */
void sps_fuzz_load_dir(const char *dir);

#endif /* SPS_FUZZ_H */
