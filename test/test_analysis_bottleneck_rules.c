/*
 * test_analysis_bottleneck_rules.c - docs/analysis.md's classifier table
 * lists the classifier's rules in the order the code tries them: same
 * names, same verdicts, same count.  The verdicts themselves are tested in
 * test_analysis_bottleneck.c.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/bottleneck.h"
#include "check.h"
#include "support.h"

/* The text of the cell-th cell (0-based) of a "| ... | ... |" table row,
 * between its backticks, into out; 0 when it has one. */
static int cell_code(const char *row, int cell, char *out, size_t cap) {
    const char *p = row;
    for (int i = 0; i <= cell; i++) {
        p = strchr(p, '|');
        if (!p)
            return -1;
        p++;
    }
    const char *end = strchr(p, '|'), *open = strchr(p, '`');
    if (!end || !open || open > end)
        return -1;
    const char *close = strchr(open + 1, '`');
    if (!close || close > end || (size_t)(close - open - 1) >= cap)
        return -1;
    memcpy(out, open + 1, (size_t)(close - open - 1));
    out[close - open - 1] = '\0';
    return 0;
}

static void test_doc_lists_the_rules_in_order(void) {
    static char doc[1 << 20];
    long n = read_file(SPS_SOURCE_DIR "/docs/analysis.md", doc, sizeof doc);
    CHECK(n > 0);
    const char *table = strstr(doc, "**The classifier**");
    CHECK_MSG(table != NULL, "docs/analysis.md has no \"**The classifier**\" paragraph");
    if (!table)
        return;
    table = strstr(table, "\n| rule | verdict |");
    CHECK_MSG(table != NULL, "no \"| rule | verdict |\" table after the classifier paragraph");
    if (!table)
        return;
    const char *line = strchr(table + 1, '\n'); /* the |---| line */
    line = line ? line + 1 : NULL;
    size_t rows = 0, count = sps__bn_rule_count();
    while (line && line[0] == '|') {
        line = strchr(line, '\n');
        if (!line)
            break;
        line++;
        if (line[0] != '|')
            break;
        char name[64], verdict[64];
        int ok = cell_code(line, 0, name, sizeof name) == 0 && cell_code(line, 1, verdict, sizeof verdict) == 0;
        CHECK_MSG(ok, "row %zu has no `rule` and `verdict` cells: %.60s", rows + 1, line);
        if (ok && rows < count) {
            CHECK_MSG(strcmp(name, sps__bn_rule_name(rows)) == 0, "row %zu: the doc says `%s`, the code's rule is `%s`",
                      rows + 1, name, sps__bn_rule_name(rows));
            CHECK_MSG(strcmp(verdict, sps__bn_kind_name(sps__bn_rule_kind(rows))) == 0,
                      "row %zu (`%s`): the doc says `%s`, the code gives `%s`", rows + 1, name, verdict,
                      sps__bn_kind_name(sps__bn_rule_kind(rows)));
        }
        rows++;
    }
    CHECK_EQ_U(rows, count);
    /* the table is the code's: its first and last rules are these */
    CHECK(count > 2 && strcmp(sps__bn_rule_name(0), "nothing") == 0);
    CHECK(strcmp(sps__bn_rule_name(count - 1), "unsampled") == 0);
    CHECK(sps__bn_rule_name(count) == NULL);
}

/* The last rule always holds: evidence with nothing known reaches it only
 * when every rule before it declines, and then gets its verdict. */
static void test_last_rule_catches_the_rest(void) {
    struct sps_bn_evidence e;
    sps__bn_evidence_init(&e);
    e.steps = 10;
    e.cpu_readings = 5;
    e.machine_readings = 5;
    e.workload_cpu_mean_percent = 20;
    struct sps_bn_verdict v;
    sps__bn_classify(&e, &v);
    CHECK_EQ_I(v.kind, SPS_BN_UNKNOWN);
    CHECK(strstr(v.reason, "nothing sampled is saturated") == v.reason);
    CHECK_EQ_I(sps__bn_rule_kind(sps__bn_rule_count() - 1), SPS_BN_UNKNOWN);
}

int main(void) {
    RUN_TEST(test_doc_lists_the_rules_in_order);
    RUN_TEST(test_last_rule_catches_the_rest);
    return check_report();
}
