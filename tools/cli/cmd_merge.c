/*
 * cmd_merge.c - `stepscope merge DIR... -o OUT`: run directories recorded
 * on several machines (one `stepscope run` per node) joined into one run:
 * every record copied into OUT/records under a name that says its input
 * and host, records/merge.tsv saying how each maps onto rank 0's host's
 * clock (src/model/align.h), then the model built from OUT/records as any
 * reader of OUT builds it, and report.json and the usual files written.
 * The inputs are only read.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "run_lock.h"
#include "platform/atomic_file.h"
#include "model/align.h"
#include "model/run.h"
#include "render/analysis_views.h"
#include "render/export_dir.h"
#include "render/exporters.h"
#include "render/render.h"
#include "report/report.h"
#include "stepscope.h"

static const char merge_usage[] =
    "usage: stepscope merge DIR... -o OUT [options]\n"
    "\n"
    "Join run directories recorded on several machines (one `stepscope run`\n"
    "per node) into one run directory OUT: every rank, its host, one\n"
    "timeline; then OUT/report.json, report.html, steps.csv, timeline.csv and\n"
    "trace.json for the whole job. Times are put on rank 0's host's clock:\n"
    "a process on another host by the clock offset a rank of its host\n"
    "measured to rank 0 (torch.distributed jobs, at start and end, with an\n"
    "error bound), else by the realtime clocks (the report says so).\n"
    "\n"
    "options:\n"
    "  -o, --output OUT        the merged run directory, which must not exist\n"
    "                          or must be empty\n"
    "      --max-clock-error MS\n"
    "                          refuse when a measured offset's error bound\n"
    "                          exceeds MS milliseconds (default 1)\n"
    "      --force             merge anyway; the report says which error\n"
    "                          exceeded the tolerance\n"
    "      --trace-max-mb N    size budget of trace.json in MiB (default 100)\n"
    "  -q, --quiet             no summary\n"
    "  -h, --help              this help\n"
    "\n"
    "exit status: 0; 1 when an input is not a run directory, is held by a\n"
    "`stepscope run` still running, holds no or damaged records, holds a rank\n"
    "of a host another input holds, a clock error exceeds the tolerance, the\n"
    "reference input's report.json is another run's (`stepscope report DIR`\n"
    "rebuilds it), or OUT cannot be written (one line says which); 2 for a\n"
    "usage error. The inputs are never modified.\n";

struct merge_options {
    const char **dirs;
    size_t ndirs;
    const char *out;
    uint64_t tolerance_ns;
    int force, quiet;
    unsigned long trace_mb;
};

static int parse_options(int argc, char **argv, struct merge_options *o) {
    memset(o, 0, sizeof *o);
    o->tolerance_ns = SPS_MERGE_DEFAULT_TOLERANCE_NS;
    o->trace_mb = 100;
    o->dirs = calloc((size_t)argc, sizeof *o->dirs);
    if (!o->dirs)
        return sps_cli_error("merge", "options", "out of memory", 1);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes_value = !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--max-clock-error") ||
                          !strcmp(a, "--trace-max-mb");
        if (takes_value && i + 1 >= argc)
            return sps_cli_usage_error("merge", "option '%s' needs a value", a);
        char *end;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(merge_usage, stdout);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--max-clock-error")) {
            errno = 0;
            double ms = strtod(argv[++i], &end);
            if (errno || *end || end == argv[i] || !(ms >= 0) || ms > 1e6)
                return sps_cli_usage_error("merge", "--max-clock-error: '%s' is not a number of ms from 0 to 1000000",
                                           argv[i]);
            o->tolerance_ns = (uint64_t)llround(ms * 1e6);
        } else if (!strcmp(a, "--trace-max-mb")) {
            errno = 0;
            o->trace_mb = strtoul(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || argv[i][0] == '-' || o->trace_mb < 1 || o->trace_mb > (1ul << 20))
                return sps_cli_usage_error("merge", "--trace-max-mb: '%s' is not a number from 1 to 1048576", argv[i]);
        } else if (!strcmp(a, "--force")) {
            o->force = 1;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            return sps_cli_usage_error("merge", "unknown option '%s'", a);
        } else {
            o->dirs[o->ndirs++] = a;
        }
    }
    if (!o->ndirs)
        return sps_cli_usage_error("merge", "which run directories? (stepscope merge DIR... -o OUT)");
    if (!o->out)
        return sps_cli_usage_error("merge", "where to? (-o OUT)");
    return -1;
}

/* ------------------------------------------------------------ the inputs */

/* Load dir's records into run, refusing anything but a whole run
 * directory.  Returns 0, or 1 after printing why. */
static int load_input(const char *dir, struct sps_run *run) {
    char records[PATH_MAX], err[1024];
    struct stat st;
    if (stat(dir, &st) != 0)
        return sps_cli_error("merge", dir, strerror(errno), 1);
    if (!S_ISDIR(st.st_mode))
        return sps_cli_error("merge", dir, "not a directory (a stepscope run directory was expected)", 1);
    if (snprintf(records, sizeof records, "%s/records", dir) >= (int)sizeof records)
        return sps_cli_error("merge", dir, "path too long", 1);
    if (stat(records, &st) != 0 || !S_ISDIR(st.st_mode))
        return sps_cli_error("merge", dir, "not a run directory: no records/ in it", 1);
    int rc = sps__run_load_dir(run, records, err, sizeof err);
    if (rc != 0)
        return sps_cli_error("merge", "cannot read the records", err, 1);
    if (run->nskipped) {
        snprintf(err, sizeof err, "%s (%s)", run->skipped[0].error, run->skipped[0].path);
        return sps_cli_error("merge", "damaged record", err, 1);
    }
    if (!run->nprocs)
        return sps_cli_error("merge", records, "holds no record", 1);
    if (run->merge.ninputs)
        return sps_cli_error("merge", dir, "is a merged run already: merge the runs it was made from", 1);
    return 0;
}

/* path made absolute with its links resolved, where its last components
 * need not exist yet (OUT usually does not): the nearest existing ancestor
 * resolved, the rest appended.  Returns NULL when no ancestor resolves, or
 * out of memory.  The caller frees. */
static char *resolve_maybe_missing(const char *path) {
    char *head = strdup(path);
    if (!head)
        return NULL;
    size_t len = strlen(head);
    while (len > 1 && head[len - 1] == '/')
        head[--len] = '\0';
    char *tail_at = NULL; /* where the missing components start in path */
    for (;;) {
        char *real = realpath(*head ? head : ".", NULL);
        if (real) {
            const char *tail = tail_at ? path + (tail_at - head) : "";
            char *joined = malloc(strlen(real) + strlen(tail) + 2);
            if (joined)
                sprintf(joined, "%s%s%s", real, *tail && real[strlen(real) - 1] != '/' ? "/" : "", tail);
            free(real);
            free(head);
            return joined;
        }
        char *slash = strrchr(head, '/');
        if (!slash || errno != ENOENT) {
            if (!slash && errno == ENOENT) { /* a relative name with no slash: under . */
                tail_at = head;
                head[0] = '\0';
                continue;
            }
            free(head);
            return NULL;
        }
        tail_at = slash + 1;
        *slash = '\0';
        if (slash == head) { /* "/x": the root exists */
            char *joined = strdup(path);
            free(head);
            return joined;
        }
    }
}

/* An input a run still holds, the same directory given twice, or OUT
 * inside (or the same as) an input. */
static int check_paths(const struct merge_options *o) {
    char **real = calloc(o->ndirs, sizeof *real);
    int rc = real ? 0 : sps_cli_error("merge", "options", "out of memory", 1);
    char who[1200];
    for (size_t i = 0; !rc && i < o->ndirs; i++) {
        /* a run still writing it: its records are still growing and its
         * report.json is not written yet */
        if (sps_run_lock_held(o->dirs[i], who, sizeof who)) {
            char why[1300];
            snprintf(why, sizeof why, "in use by %s; merge it when that run has ended", who);
            rc = sps_cli_error("merge", o->dirs[i], why, 1);
            break;
        }
        real[i] = realpath(o->dirs[i], NULL);
        for (size_t k = 0; real[i] && k < i; k++)
            if (real[k] && !strcmp(real[i], real[k])) {
                char why[PATH_MAX + 64];
                snprintf(why, sizeof why, "given twice (as %s and %s)", o->dirs[k], o->dirs[i]);
                rc = sps_cli_error("merge", o->dirs[i], why, 1);
            }
    }
    char *out_real = resolve_maybe_missing(o->out);
    for (size_t i = 0; !rc && out_real && i < o->ndirs; i++) {
        size_t n = real[i] ? strlen(real[i]) : 0;
        if (n && !strncmp(out_real, real[i], n) && (out_real[n] == '\0' || out_real[n] == '/'))
            rc = sps_cli_error("merge", o->out, "is an input or inside one: the inputs are never written to", 1);
    }
    free(out_real);
    for (size_t i = 0; real && i < o->ndirs; i++)
        free(real[i]);
    free(real);
    return rc;
}

/* ------------------------------------------------------------ the output */

/* OUT must not exist or be empty; then OUT/records is made.  Returns 0,
 * or 1 after printing why. */
static int make_output(const char *out, char *records, size_t len) {
    struct stat st;
    if (lstat(out, &st) == 0) {
        if (S_ISLNK(st.st_mode)) /* never followed: name the directory itself */
            return sps_cli_error("merge", out, "is a symbolic link (name a new directory)", 1);
        if (!S_ISDIR(st.st_mode))
            return sps_cli_error("merge", out, "exists and is not a directory", 1);
        if (rmdir(out) != 0) /* succeeds only when empty */
            return sps_cli_error("merge", out, "exists and is not empty (the merged run needs a directory of its own)",
                                 1);
    }
    if (mkdir(out, 0777) != 0)
        return sps_cli_error("merge", out, strerror(errno), 1);
    snprintf(records, len, "%s/records", out);
    if (mkdir(records, 0777) != 0)
        return sps_cli_error("merge", records, strerror(errno), 1);
    return 0;
}

/* A record's name in OUT/records: input number, host (letters, digits,
 * '.', '-', '_' only) and the name it had, so equal pids of different
 * hosts never collide. */
static void merged_name(char *buf, size_t len, size_t input, const char *host, const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char safe[64];
    size_t k = 0;
    for (const char *s = host; *s && k + 1 < sizeof safe; s++)
        safe[k++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
                            *s == '-' || *s == '_'
                        ? *s
                        : '_';
    safe[k] = '\0';
    snprintf(buf, len, "n%zu-%s-%s", input, k ? safe : "host", base);
}

static int copy_file(const char *from, const char *to, char *err, size_t errlen) {
    int in = open(from, O_RDONLY | O_CLOEXEC);
    /* O_EXCL|O_NOFOLLOW: a fresh file, never through a link planted at the name */
    int out = in < 0 ? -1 : open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    int rc = 0;
    char buf[1 << 16];
    ssize_t n = 0;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w <= 0) {
                n = -1;
                break;
            }
            done += w;
        }
    if (in < 0 || out < 0 || n < 0) {
        snprintf(err, errlen, "%s: %s", in < 0 ? from : to, strerror(errno));
        rc = SPS_EIO;
    }
    if (out >= 0 && close(out) != 0 && !rc) {
        snprintf(err, errlen, "%s: %s", to, strerror(errno));
        rc = SPS_EIO;
    }
    if (in >= 0)
        close(in);
    return rc;
}

/* Copy every input's records into records/ and write records/merge.tsv. */
static int write_records(const struct merge_options *o, struct sps_run *runs, struct sps_align **aligns,
                         struct sps_run_merge *merge, const char *records, char *err, size_t errlen) {
    char path[PATH_MAX], name[512];
    snprintf(path, sizeof path, "%s/%s", records, SPS_MERGE_FILE);
    /* merge.tsv through the atomic writer: its temporary is unpredictable
     * and exclusive, never a planted link */
    struct sps_atomic_file a;
    if (sps__atomic_open(&a, path, err, errlen) != 0)
        return SPS_EIO;
    FILE *f = sps__atomic_stream(&a, err, errlen);
    if (!f) {
        sps__atomic_abort(&a);
        return SPS_EIO;
    }
    int rc = sps__merge_file_begin(f, merge);
    for (size_t i = 0; !rc && i < o->ndirs; i++)
        for (size_t j = 0; !rc && j < runs[i].nprocs; j++) {
            const struct sps_process_data *p = &runs[i].procs[j];
            merged_name(name, sizeof name, i, p->hostname, p->path);
            char to[PATH_MAX + 600];
            snprintf(to, sizeof to, "%s/%s", records, name);
            rc = copy_file(p->path, to, err, errlen);
            if (!rc && sps__merge_file_record(f, name, &aligns[i][j]) != 0) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                rc = SPS_EIO;
            }
        }
    if (rc) {
        sps__atomic_abort(&a);
        return rc;
    }
    return sps__atomic_commit(&a, 0, err, errlen);
}

/* The merged model from OUT/records (merge.tsv applied by the reader), with
 * the reference input's report.json for what the records do not hold (the
 * command, its exit, the reference host's machine metrics); then every
 * file.  Returns 0 or an SPS_E* code with err set. */
static int build_and_render(const struct merge_options *o, const struct sps_report *ref, const char *rerr,
                            const char *records, char *err, size_t errlen) {
    struct sps_run run = {0};
    int rc = sps__run_load_dir(&run, records, err, errlen);
    if (!rc)
        rc = sps__run_build(&run);
    char path[PATH_MAX];
    int have_ref = !rc && ref;
    struct sps_run_info info = {0};
    char absent[PATH_MAX + 1200];
    if (have_ref) {
        info = ref->info;
        if (!info.sampler) {
            snprintf(absent, sizeof absent, "%s", info.sampler_absent_reason ? info.sampler_absent_reason : "none");
            info.sampler_absent_reason = absent;
        }
        if (info.start_mono_ns && (run.nprocs == 0 || run.start_ns > info.start_mono_ns))
            run.start_ns = info.start_mono_ns;
    } else if (!rc) {
        snprintf(absent, sizeof absent, "the reference run's report.json could not be read (%s)", rerr);
        info.sampler_absent_reason = absent;
        info.record_cost_absent_reason = absent;
    }
    info.analysis = NULL;
    struct sps_report rep;
    int built = 0;
    if (!rc) {
        rc = sps__report_build(&rep, &run, &info);
        built = 1;
        if (rc == SPS_ENOMEM)
            snprintf(err, errlen, "out of memory while analysing the merged run");
    }
    if (!rc) {
        snprintf(path, sizeof path, "%s/report.json", o->out);
        rc = sps__report_json_write(&rep, path, err, errlen);
    }
    sps__run_free(&run);
    if (!rc)
        rc = sps__export_all(&rep, o->out, (uint64_t)o->trace_mb << 20, err, errlen);
    if (!rc && !o->quiet) {
        sps__summary_print(stderr, &rep, 0);
        sps__analysis_print(stderr, &rep.analysis);
        fprintf(stderr, "report: %s/report.html (also report.json, steps.csv, timeline.csv, trace.json)\n", o->out);
    }
    if (built)
        sps__report_free(&rep);
    return rc;
}

/* Remove a file or directory of the output this command made. */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* ----------------------------------------------------------- the command */

static int plan(const struct merge_options *o, struct sps_run *runs, struct sps_align **aligns,
                struct sps_run_merge *merge) {
    const struct sps_run **rp = calloc(o->ndirs, sizeof *rp);
    if (!rp)
        return sps_cli_error("merge", "plan", "out of memory", 1);
    for (size_t i = 0; i < o->ndirs; i++) {
        rp[i] = &runs[i];
        if (!(aligns[i] = calloc(runs[i].nprocs, sizeof *aligns[i]))) {
            free(rp);
            return sps_cli_error("merge", "plan", "out of memory", 1);
        }
    }
    char err[1024];
    int rc = sps__merge_plan(rp, o->dirs, o->ndirs, o->tolerance_ns, o->force, aligns, merge, err, sizeof err);
    free(rp);
    if (rc)
        return sps_cli_error("merge", "refused", err, 1);
    merge->inputs = calloc(o->ndirs, sizeof *merge->inputs);
    for (size_t i = 0; merge->inputs && i < o->ndirs; i++)
        if ((merge->inputs[i] = strdup(o->dirs[i])))
            merge->ninputs++;
    if (merge->ninputs != o->ndirs)
        return sps_cli_error("merge", "plan", "out of memory", 1);
    if (merge->forced)
        fprintf(stderr, "stepscope: merge: warning: --force: %s\n", merge->forced_why);
    return 0;
}

/* The reference input's report.json into *ref (*have 1), for what its
 * records do not hold (the command, its exit, its host's machine
 * metrics); unreadable or absent: *have 0 and rerr says why.  One that is
 * another run's (report.h: sps__report_records_stale: copied in from
 * elsewhere, or an earlier run's over newer records) would put that
 * run's command and machine into the merge: refused.  Returns 0, or 1
 * after one line. */
static int read_reference(const char *dir, const struct sps_run *recs, struct sps_report *ref, int *have, char *rerr,
                          size_t rerrlen) {
    char path[PATH_MAX], why[1024], line[PATH_MAX + 1200];
    *have = 0;
    if (snprintf(path, sizeof path, "%s/report.json", dir) >= (int)sizeof path) {
        snprintf(rerr, rerrlen, "%s: path too long", dir);
        return 0;
    }
    if (sps__report_read(ref, path, rerr, rerrlen) != 0)
        return 0;
    if (sps__report_records_stale(&ref->run, recs, why, sizeof why)) {
        sps__report_free(ref);
        snprintf(line, sizeof line, "%s; `stepscope report %s` rebuilds it from the records", why, dir);
        return sps_cli_error("merge", dir, line, 1);
    }
    *have = 1;
    return 0;
}

/* The input that holds the reference process (for its report.json). */
static size_t reference_input(const struct sps_run *runs, size_t n, const struct sps_run_merge *merge) {
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i].nprocs; j++)
            if (!strcmp(runs[i].procs[j].hostname, merge->reference_host) &&
                (merge->reference_rank < 0 || runs[i].procs[j].rank == 0))
                return i;
    return 0;
}

int sps_cmd_merge(int argc, char **argv) {
    struct merge_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) {
        free(o.dirs);
        return rc;
    }
    struct sps_run *runs = calloc(o.ndirs, sizeof *runs);
    struct sps_align **aligns = calloc(o.ndirs, sizeof *aligns);
    struct sps_run_merge merge = {0};
    rc = runs && aligns ? check_paths(&o) : sps_cli_error("merge", "inputs", "out of memory", 1);
    for (size_t i = 0; !rc && i < o.ndirs; i++)
        rc = load_input(o.dirs[i], &runs[i]);
    if (!rc)
        rc = plan(&o, runs, aligns, &merge);
    char records[PATH_MAX], err[1024];
    size_t ref = rc ? 0 : reference_input(runs, o.ndirs, &merge);
    struct sps_report ref_rep;
    char rerr[1024] = "";
    int have_ref = 0;
    if (!rc)
        rc = read_reference(o.dirs[ref], &runs[ref], &ref_rep, &have_ref, rerr, sizeof rerr);
    int made_out = 0;
    if (!rc && !(rc = make_output(o.out, records, sizeof records)))
        made_out = 1;
    if (!rc && write_records(&o, runs, aligns, &merge, records, err, sizeof err) != 0)
        rc = sps_cli_error("merge", "cannot write", err, 1);
    for (size_t i = 0; runs && i < o.ndirs; i++) {
        sps__run_free(&runs[i]); /* before the merged copy is loaded: one copy at a time */
        if (aligns)
            free(aligns[i]);
    }
    if (!rc && build_and_render(&o, have_ref ? &ref_rep : NULL, rerr, records, err, sizeof err) != 0)
        rc = sps_cli_error("merge", "report", err, 1);
    if (have_ref)
        sps__report_free(&ref_rep);
    /* a merge that failed after making OUT leaves nothing half-made: OUT
     * was created empty by this command, so all of it goes */
    if (rc && made_out)
        (void)nftw(o.out, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    sps__run_merge_free(&merge);
    free(runs);
    free(aligns);
    free(o.dirs);
    return rc;
}
