/* input.c - load a run directory for the exporters (see input.h). */
#include "render/input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "render/render.h"
#include "stepscope.h"

/* The note on skipped records: how many, and the first one's error.  A
 * format or system error names its file already; "out of memory reading
 * this record" does not (report-format.md), so the file is put before it. */
static void note_skipped(struct sps_report_input *in) {
    const char *path = in->run.skipped[0].path, *error = in->run.skipped[0].error;
    int named = strncmp(error, path, strlen(path)) == 0;
    snprintf(in->records_note, sizeof in->records_note, "%zu record(s) skipped, first: %s%s%s", in->run.nskipped,
             named ? "" : path, named ? "" : ": ", error);
}

int sps__report_input_load_raw(const char *dir, struct sps_report_input *in, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    if (snprintf(in->dir, sizeof in->dir, "%s", dir) >= (int)sizeof in->dir) {
        snprintf(err, errlen, "%s: path too long", dir);
        return SPS_EINVAL;
    }
    char path[sizeof in->dir + 32];
    snprintf(path, sizeof path, "%s/report.json", dir);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: %s", dir, errno && stat(dir, &sb) != 0 ? strerror(errno) : "not a directory");
        return SPS_EIO;
    }
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "%s: %s (is %s a run directory?)", path, strerror(errno), dir);
        return SPS_EIO;
    }
    json_error_t jerr;
    in->report = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!in->report) {
        snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        return SPS_EFORMAT;
    }
    const char *schema = json_string_value(json_object_get(in->report, "schema"));
    if (!json_is_object(in->report) || !schema || strcmp(schema, SPS_REPORT_SCHEMA) != 0) {
        snprintf(err, errlen, "%s: schema is %s%s%s, not \"%s\"", path, schema ? "\"" : "", schema ? schema : "missing",
                 schema ? "\"" : "", SPS_REPORT_SCHEMA);
        json_decref(in->report);
        in->report = NULL;
        return SPS_EFORMAT;
    }

    char records[sizeof in->dir + 32];
    snprintf(records, sizeof records, "%s/records", dir);
    if (stat(records, &sb) != 0) {
        snprintf(in->records_note, sizeof in->records_note,
                 "no records (%s: %s): zones are summarised in report.json only", records, strerror(errno));
        return 0;
    }
    char rerr[512];
    int rc = sps__run_load_dir(&in->run, records, rerr, sizeof rerr);
    if (rc == 0)
        rc = sps__run_build(&in->run);
    if (rc != 0) {
        sps__run_free(&in->run);
        memset(&in->run, 0, sizeof in->run);
        snprintf(in->records_note, sizeof in->records_note, "records unreadable: %s",
                 rc == SPS_ENOMEM ? "out of memory" : rerr);
        return 0;
    }
    in->have_records = in->run.nprocs > 0;
    if (in->run.nskipped > 0)
        note_skipped(in);
    else if (!in->have_records)
        snprintf(in->records_note, sizeof in->records_note, "%s holds no record", records);
    /* one time origin with report.json: the run's start (see report-format.md) */
    return 0;
}

int sps__report_input_load(const char *dir, struct sps_report_input *in, char *err, size_t errlen) {
    int rc = sps__report_input_load_raw(dir, in, err, errlen);
    if (rc != 0)
        return rc;
    rc = sps__report_load_dir(&in->model, dir, err, errlen);
    if (rc != 0) {
        sps__report_input_free(in);
        return rc;
    }
    in->have_model = 1;
    return 0;
}

void sps__report_input_free(struct sps_report_input *in) {
    if (!in)
        return;
    json_decref(in->report);
    sps__run_free(&in->run);
    if (in->have_model)
        sps__report_free(&in->model);
    memset(in, 0, sizeof *in);
}

int sps__out_open(struct sps_out *o, const char *path, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    if (sps__atomic_open(&o->file, path, err, errlen) != 0)
        return SPS_EIO;
    o->f = sps__atomic_stream(&o->file, err, errlen);
    if (!o->f) {
        sps__atomic_abort(&o->file);
        return SPS_EIO;
    }
    return 0;
}

int sps__out_commit(struct sps_out *o, char *err, size_t errlen) {
    o->f = NULL;
    return sps__atomic_commit(&o->file, 0, err, errlen);
}

void sps__out_abort(struct sps_out *o) {
    o->f = NULL;
    sps__atomic_abort(&o->file);
}

json_t *sps__json_at(json_t *root, const char *dotted) {
    char key[256];
    const char *p = dotted;
    json_t *cur = root;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len >= sizeof key)
            return NULL;
        memcpy(key, p, len);
        key[len] = '\0';
        cur = json_object_get(cur, key);
        p = dot ? dot + 1 : p + len;
    }
    return cur;
}
