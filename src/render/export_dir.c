/* export_dir.c - the run directory's files, or one anywhere (see export_dir.h). */
#include "render/export_dir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "render/exporters.h"
#include "render/render.h"
#include "render/tensorboard.h"
#include "stepscope.h"

static const char *const format_names[SPS_EXPORT_FORMATS] = {"html", "csv", "trace", "json", "summary",
                                                                   "tensorboard"};

int sps__export_format_parse(const char *name) {
    for (int i = 0; i < SPS_EXPORT_FORMATS; i++)
        if (strcmp(name, format_names[i]) == 0)
            return i;
    return -1;
}

typedef int (*file_writer)(struct sps_report *rep, FILE *out, uint64_t trace_max, char *err,
                           size_t errlen);

static int write_html(struct sps_report *rep, FILE *out, uint64_t trace_max, char *err, size_t errlen) {
    (void)trace_max;
    return sps__export_html(rep, out, err, errlen);
}

static int write_steps(struct sps_report *rep, FILE *out, uint64_t trace_max, char *err, size_t errlen) {
    (void)trace_max;
    return sps__export_steps_csv(rep, out, err, errlen);
}

static int write_timeline(struct sps_report *rep, FILE *out, uint64_t trace_max, char *err,
                          size_t errlen) {
    (void)trace_max;
    return sps__export_timeline_csv(rep, out, err, errlen);
}

static int write_trace(struct sps_report *rep, FILE *out, uint64_t trace_max, char *err, size_t errlen) {
    return sps__export_trace_taking_events(rep, out, trace_max, err, errlen); /* trace.json is written last */
}

/* report.json rendered from the model: what `stepscope run` wrote (the
 * model was read from it), written again. */
static int write_json(struct sps_report *rep, FILE *out, uint64_t trace_max, char *err, size_t errlen) {
    (void)trace_max;
    sps__report_json_print(out, rep);
    if (ferror(out)) {
        snprintf(err, errlen, "cannot write the JSON");
        return SPS_EIO;
    }
    return 0;
}

/* One file: to stdout ("-"), or atomically to path; named: the user
 * named path (-o), which may be a device or FIFO to write into, else it is
 * a name of ours in a directory, where nothing at the name is followed
 * (output_file.h). */
static int write_file(struct sps_report *rep, file_writer w, const char *path, int named, uint64_t trace_max,
                      char *err, size_t errlen) {
    if (strcmp(path, "-") == 0) {
        int rc = w(rep, stdout, trace_max, err, errlen);
        if (rc == 0 && fflush(stdout) != 0) {
            snprintf(err, errlen, "standard output: %s", strerror(errno));
            rc = SPS_EIO;
        }
        return rc;
    }
    struct sps_out o;
    int rc = named ? sps__out_open(&o, path, err, errlen) : sps__out_open_fresh(&o, path, NULL, err, errlen);
    if (rc != 0)
        return rc;
    rc = w(rep, o.f, trace_max, err, errlen);
    if (rc != 0) {
        sps__out_abort(&o);
        char inner[512];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, errlen, "%s: %s", path, inner);
        return rc;
    }
    return sps__out_commit(&o, err, errlen);
}

static int in_dir(char *buf, size_t cap, const char *dir, const char *name, char *err, size_t errlen) {
    if (snprintf(buf, cap, "%s/%s", dir, name) >= (int)cap) {
        snprintf(err, errlen, "%s/%s: path too long", dir, name);
        return SPS_EINVAL;
    }
    return 0;
}

int sps__export_one(struct sps_report *rep, const char *dir, enum sps_export_format format,
                    const char *out_path, uint64_t trace_max_bytes, char *err, size_t errlen) {
    char path[4096 + 64];
    switch (format) {
    case SPS_EXPORT_CSV: {
        const char *into = out_path ? out_path : dir;
        if (strcmp(into, "-") == 0) {
            snprintf(err, errlen, "csv makes two files (steps.csv, timeline.csv): -o takes a directory, not -");
            return SPS_EINVAL;
        }
        struct stat sb;
        if (stat(into, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            snprintf(err, errlen, "%s: %s", into, errno && stat(into, &sb) != 0 ? strerror(errno) : "not a directory");
            return SPS_EIO;
        }
        int rc = in_dir(path, sizeof path, into, "steps.csv", err, errlen);
        if (rc == 0)
            rc = write_file(rep, write_steps, path, 0, trace_max_bytes, err, errlen);
        if (rc == 0)
            rc = in_dir(path, sizeof path, into, "timeline.csv", err, errlen);
        if (rc == 0)
            rc = write_file(rep, write_timeline, path, 0, trace_max_bytes, err, errlen);
        return rc;
    }
    case SPS_EXPORT_TENSORBOARD:
        if (!out_path || strcmp(out_path, "-") == 0) {
            snprintf(err, errlen, "tensorboard makes a directory of event files: -o takes a directory");
            return SPS_EINVAL;
        }
        return sps__export_tensorboard(rep, out_path, NULL, err, errlen);
    case SPS_EXPORT_HTML:
    case SPS_EXPORT_TRACE:
    case SPS_EXPORT_JSON: {
        static const char *const usual[] = {[SPS_EXPORT_HTML] = "report.html", [SPS_EXPORT_TRACE] = "trace.json",
                                            [SPS_EXPORT_JSON] = "report.json"};
        static const file_writer writers[] = {
            [SPS_EXPORT_HTML] = write_html, [SPS_EXPORT_TRACE] = write_trace, [SPS_EXPORT_JSON] = write_json};
        int named = out_path != NULL;
        if (!out_path) {
            int rc = in_dir(path, sizeof path, dir, usual[format], err, errlen);
            if (rc != 0)
                return rc;
            out_path = path;
        }
        return write_file(rep, writers[format], out_path, named, trace_max_bytes, err, errlen);
    }
    default:
        snprintf(err, errlen, "format %s is not a file", format < SPS_EXPORT_FORMATS ? format_names[format] : "?");
        return SPS_EINVAL;
    }
}

int sps__export_all(struct sps_report *rep, const char *dir, uint64_t trace_max_bytes, char *err,
                    size_t errlen) {
    static const enum sps_export_format all[] = {SPS_EXPORT_HTML, SPS_EXPORT_CSV, SPS_EXPORT_TRACE};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int rc = sps__export_one(rep, dir, all[i], NULL, trace_max_bytes, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}
