/*
 * export_html.c - write DIR/report.html from a run directory through
 * sps__export_html, for the headless-browser test (the CLI does not write
 * report.html yet).  Usage: export_html DIR
 */
#include <stdio.h>

#include "report/exporters.h"
#include "report/input.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: export_html DIR\n");
        return 2;
    }
    char err[1024], path[4200];
    struct sps_report_input in;
    if (sps__report_input_load(argv[1], &in, err, sizeof err) != 0) {
        fprintf(stderr, "export_html: %s\n", err);
        return 1;
    }
    snprintf(path, sizeof path, "%s/report.html", argv[1]);
    struct sps_out o;
    int rc = sps__out_open(&o, path, err, sizeof err);
    if (rc == 0) {
        rc = sps__export_html(&in, o.f, err, sizeof err);
        if (rc == 0)
            rc = sps__out_commit(&o, err, sizeof err);
        else
            sps__out_abort(&o);
    }
    sps__report_input_free(&in);
    if (rc != 0) {
        fprintf(stderr, "export_html: %s\n", err);
        return 1;
    }
    printf("%s\n", path);
    return 0;
}
