/* support.h - helpers shared by the tests: temporary directories, running
 * the CLI and reading report.json (with jansson). */
#ifndef SPS_TEST_SUPPORT_H
#define SPS_TEST_SUPPORT_H

#include <jansson.h>
#include <stddef.h>

#ifndef SPS_BIN_DIR
#error "SPS_BIN_DIR must name the build directory"
#endif

#ifndef SPS_TEST_SCALE
#error "SPS_TEST_SCALE must be set (test/CMakeLists.txt)"
#endif
/* n steps of a workload whose steps are long in CPU, divided by
 * SPS_TEST_SCALE: a sanitizer build, whose every step costs about that many
 * times more, runs as long with fewer.  Only for tests whose assertions
 * rest on the run's length (readings taken), not on the count itself. */
#define SPS_TEST_SCALED(n) ((n) / SPS_TEST_SCALE)

/* A new empty directory under $TMPDIR (or /tmp); the path is static storage
 * valid until the next call. */
const char *tmpdir_new(const char *tag);

/* Run argv (argv[0] a path), wait, and return the raw wait status.  stderr
 * of the command is captured into err (NUL-terminated) when err is given. */
int run_capture(char *const argv[], char *err, size_t errlen);

/* The same with the command's stdout written to out_path (NULL: dropped). */
int run_capture_to(char *const argv[], const char *out_path, char *err, size_t errlen);

/* Exit code for a wait status: the code, or 128+signal. */
int exit_code_of(int status);

/* Parse DIR/report.json; NULL (and a message on stderr) on failure. */
json_t *report_load(const char *dir);

/* The element of report["zones"] (or "values"/"counters") named name. */
json_t *report_find(json_t *report, const char *array, const char *name);

/* report[a][b]...: a path of object keys (or, in an array, indexes)
 * separated by '.', e.g. "processes.0.pid". */
json_t *json_path(json_t *root, const char *path);
double json_num(json_t *root, const char *path);

/* Read path into buf (at most len - 1 bytes, then a NUL).  Returns the
 * bytes read, or -1 when path cannot be opened (buf is then ""). */
long read_file(const char *path, char *buf, size_t len);

/* path read whole into a malloc'd, NUL-terminated buffer (free it);
 * *len (may be NULL) its size.  NULL when it cannot be read. */
char *read_whole(const char *path, size_t *len);

/* Create or replace path with len bytes of data; exits the test binary
 * when it cannot (the test's own setup failed, not the code under test). */
void write_file(const char *path, const void *data, size_t len);

struct sps_run;
/* Build *run from this process's own (live) record; exits the test binary
 * when there is none or it does not parse (the check the caller wants). */
void run_of_this_process(struct sps_run *run);

/* Number of lines in s (a final line without '\n' counts). */
int count_lines(const char *s);

/* How many entries of dir have names beginning with prefix (0 when dir
 * cannot be read). */
int files_named(const char *dir, const char *prefix);

#endif
