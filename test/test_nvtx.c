/*
 * test_nvtx.c - stepscope's zones, steps and GPU zones as NVTX ranges,
 * seen by a tool: the fake injection library (fakes/fake_nvtx.c) that the
 * workload loads through NVTX_INJECTION64_PATH, as under `nsys profile`,
 * and that writes down every range it receives.
 *
 * Each case runs this binary again as the workload ("test_nvtx workload"),
 * so that each process looks for its tool afresh, and asserts the exact
 * sequence of ranges per thread, what the workload printed on stderr, and
 * the workload's own report (recording is the same with or without ranges).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "record_format.h" /* SPS_THIN_STEPS */
#include "recorder.h"      /* sps__zone_discard, sps__recorder_header */
#include "stepscope.h"
#include "support.h"

/* ----------------------------------------------------------- the workload */

static void *eval_thread(void *arg) {
    (void)arg;
    SPS_STEP_NAMED("eval_step");
    SPS_ZONE("eval");
    return NULL;
}

/* Everything that opens or closes a frame: steps with zones and chained
 * phases, a GPU zone, another thread, an end that closes an inner zone
 * left open, a zone taken back, a wait recorded after the fact. */
static int workload(void) {
    for (int i = 0; i < 2; i++) {
        SPS_STEP();
        {
            SPS_ZONE("forward");
            SPS_ZONE("attention");
        }
        SPS_PHASE("backward");
        SPS_PHASE("optimizer");
    }
    struct sps_site *gpu = sps_site_get("gpu_matmul", SPS_KIND_ZONE);
    sps_gpu_zone_t g = sps_gpu_zone_begin(gpu, (void *)(uintptr_t)0x5000);
    sps_gpu_zone_end(g);

    pthread_t t;
    if (pthread_create(&t, NULL, eval_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 2;

    SPS_ZONE_BEGIN(outer, "outer");
    SPS_ZONE_BEGIN(inner, "inner");
    (void)inner;
    SPS_ZONE_END(outer); /* ends "inner" too */

    SPS_ZONE_BEGIN(maybe, "maybe");
    sps__zone_discard(maybe);

    uint64_t t0 = sps_clock_now();
    SPS_ZONE("collective_call");
    sps_wait_record(sps_site_get("all_reduce", SPS_KIND_WAIT), t0, sps_clock_now());

    struct sps_cuda_status cuda;
    sps_cuda_status(&cuda);
    printf("cuda %d\n", cuda.available);
    return 0;
}

/* Threads whose first zones race (the tool is looked for once, by
 * whichever comes first), each with steps of its own. */
enum { RACERS = 4, RACER_STEPS = 50 };
static pthread_barrier_t start_line, end_line;

static void *racer(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < RACER_STEPS; i++) {
        SPS_STEP();
        SPS_ZONE("work");
    }
    /* none exits before all are done: a thread that did would leave its
     * segment, and its step numbers, to the next (report-format.md) */
    pthread_barrier_wait(&end_line);
    return NULL;
}

static int racing_workload(void) {
    /* the clock calibrated first: threads racing the process's very first
     * zone read sps__clock while the first of them sets it up (a race of
     * the recorder's, not of NVTX: the tool is looked for after it) */
    (void)sps_clock_ns();
    pthread_t t[RACERS];
    pthread_barrier_init(&start_line, NULL, RACERS);
    pthread_barrier_init(&end_line, NULL, RACERS);
    for (int i = 0; i < RACERS; i++)
        if (pthread_create(&t[i], NULL, racer, NULL) != 0)
            return 2;
    for (int i = 0; i < RACERS; i++)
        pthread_join(t[i], NULL);
    return 0;
}

/* The overhead guard thinning to steps only (as `stepscope run` does to a
 * workload whose zones cost too much): a zone it leaves out has no range. */
static int thinned_workload(void) {
    SPS_ZONE_BEGIN(before, "before");
    SPS_ZONE_END(before);
    __atomic_store_n(&sps__recorder_header()->thin_level, SPS_THIN_STEPS, __ATOMIC_RELAXED);
    {
        SPS_STEP(); /* its end is where the thread rereads the level */
    }
    {
        SPS_STEP();
        SPS_ZONE("thinned");
    }
    return 0;
}

/* --------------------------------------------------------------- the cases */

static char self[4096];

struct outcome {
    int status;
    char err[4096];  /* the workload's stderr */
    char *ranges;    /* what the fake wrote ("" when nothing) */
    json_t *report;  /* the workload's own report (STEPSCOPE_OUT) */
    char out[4096];  /* its stdout */
};

/* Run the workload (which: "workload" or "racing") with
 * NVTX_INJECTION64_PATH = tool (NULL: unset) and the fake in mode (NULL:
 * its default). */
static struct outcome run_which(const char *which, const char *tool, const char *mode) {
    struct outcome o;
    memset(&o, 0, sizeof o);
    const char *dir = tmpdir_new("nvtx");
    char log[4200], out_dir[4200], out_file[4200];
    snprintf(log, sizeof log, "%s/ranges.txt", dir);
    snprintf(out_dir, sizeof out_dir, "%s/report", dir);
    snprintf(out_file, sizeof out_file, "%s/stdout.txt", dir);
    if (tool)
        setenv("NVTX_INJECTION64_PATH", tool, 1);
    else
        unsetenv("NVTX_INJECTION64_PATH");
    if (mode)
        setenv("FAKE_NVTX_MODE", mode, 1);
    else
        unsetenv("FAKE_NVTX_MODE");
    setenv("FAKE_NVTX_LOG", log, 1);
    setenv("STEPSCOPE_OUT", out_dir, 1);
    setenv("STEPSCOPE_LIBCUDA", FAKE_CUDA_PATH, 1);
    char *argv[] = {self, (char *)which, NULL};
    o.status = run_capture_to(argv, out_file, o.err, sizeof o.err);
    /* the standalone report's own line is not the workload's to check */
    char *said = strstr(o.err, "stepscope: report written to ");
    if (said) {
        char *eol = strchr(said, '\n');
        memmove(said, eol ? eol + 1 : said + strlen(said), strlen(eol ? eol + 1 : "") + 1);
    }
    unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("STEPSCOPE_OUT");
    o.ranges = read_whole(log, NULL);
    if (!o.ranges)
        o.ranges = strdup("");
    o.report = report_load(out_dir);
    read_file(out_file, o.out, sizeof o.out);
    return o;
}

static struct outcome run_workload(const char *tool, const char *mode) {
    return run_which("workload", tool, mode);
}

static void outcome_free(struct outcome *o) {
    free(o->ranges);
    json_decref(o->report);
}

/* The lines a tool attached through the domain calls receives from the
 * workload, with push and pop spelled as the fake writes them for the
 * calls used ("dpush"/"dpop", "push"/"pop", "pusha"/"pop"). */
static char *expected_ranges(const char *push, const char *pop, int payloads) {
    static char buf[4096];
    const char *lines[] = {
        "t1 PUSH step 0 PAYLOAD0", "t1 PUSH forward", "t1 PUSH attention", "t1 POP", "t1 POP",
        "t1 PUSH backward", "t1 POP", "t1 PUSH optimizer", "t1 POP", "t1 POP",
        "t1 PUSH step 1 PAYLOAD1", "t1 PUSH forward", "t1 PUSH attention", "t1 POP", "t1 POP",
        "t1 PUSH backward", "t1 POP", "t1 PUSH optimizer", "t1 POP", "t1 POP",
        "t1 PUSH gpu_matmul", "t1 POP",
        "t2 PUSH eval_step 0 PAYLOAD0", "t2 PUSH eval", "t2 POP", "t2 POP",
        "t1 PUSH outer", "t1 PUSH inner", "t1 POP", "t1 POP",
        "t1 PUSH maybe", "t1 POP",
        "t1 PUSH collective_call", "t1 POP",
    };
    size_t at = 0;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *s = lines[i];
        while (*s) {
            if (strncmp(s, "PUSH", 4) == 0) {
                at += (size_t)snprintf(buf + at, sizeof buf - at, "%s", push);
                s += 4;
            } else if (strncmp(s, "POP", 3) == 0) {
                at += (size_t)snprintf(buf + at, sizeof buf - at, "%s", pop);
                s += 3;
            } else if (strncmp(s, " PAYLOAD", 8) == 0) {
                if (payloads)
                    at += (size_t)snprintf(buf + at, sizeof buf - at, " payload=%c", s[8]);
                s += 9;
            } else {
                buf[at++] = *s++;
            }
        }
        buf[at++] = '\n';
    }
    buf[at] = '\0';
    return buf;
}

#define TABLES_LINE "init version=3 core=16 cuda=9 opencl=15 cudart=7 core2=16 sync=7 module7=refused etid2=null\n"

/* Recording is the same with or without a tool: the report has every zone. */
static void check_report_whole(json_t *r) {
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_I(json_num(r, "steps.count"), 3); /* step x2, eval_step */
    const char *names[] = {"forward", "attention", "backward", "optimizer"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        json_t *z = report_find(r, "zones", names[i]);
        CHECK_MSG(z != NULL, "zone %s in the report", names[i]);
        if (z)
            CHECK_EQ_I(json_integer_value(json_object_get(z, "count")), 2);
    }
    const char *once[] = {"gpu_matmul", "eval", "outer", "collective_call", "all_reduce"};
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) {
        json_t *z = report_find(r, "zones", once[i]);
        CHECK_MSG(z != NULL, "zone %s in the report", once[i]);
        if (z)
            CHECK_EQ_I(json_integer_value(json_object_get(z, "count")), 1);
    }
    /* an inner zone an outer end closed, and a zone taken back, are named
     * but not counted (their ranges still ended where they did) */
    const char *uncounted[] = {"inner", "maybe"};
    for (size_t i = 0; i < 2; i++) {
        json_t *z = report_find(r, "zones", uncounted[i]);
        CHECK_MSG(z != NULL, "zone %s in the report", uncounted[i]);
        if (z)
            CHECK_EQ_I(json_integer_value(json_object_get(z, "count")), 0);
    }
}

/* A tool with the domain calls gets every range in the "stepscope"
 * domain, nested as the zones were, steps numbered, on the right thread;
 * the GPU zone (through the fake libcuda) is one of them. */
static void test_ranges_in_the_domain(void) {
    struct outcome o = run_workload(FAKE_NVTX_PATH, NULL);
    CHECK_EQ_I(exit_code_of(o.status), 0);
    char want[8192];
    snprintf(want, sizeof want, "%sdomain stepscope\n%s", TABLES_LINE, expected_ranges("dpush", "dpop", 1));
    CHECK_MSG(strcmp(o.ranges, want) == 0, "ranges:\n%s\nexpected:\n%s", o.ranges, want);
    CHECK_MSG(strcmp(o.err, "") == 0, "nothing on stderr: %s", o.err);
    CHECK_STR_HAS(o.out, "cuda 1"); /* the GPU zone went through the fake libcuda */
    check_report_whole(o.report);
    outcome_free(&o);
}

/* A tool without the domain calls: nvtxRangePushEx, then nvtxRangePushA. */
static void test_ranges_core_calls(void) {
    struct outcome o = run_workload(FAKE_NVTX_PATH, "core-ex");
    char want[8192];
    snprintf(want, sizeof want, "%s%s", TABLES_LINE, expected_ranges("push", "pop", 1));
    CHECK_MSG(strcmp(o.ranges, want) == 0, "ranges:\n%s\nexpected:\n%s", o.ranges, want);
    CHECK_MSG(strcmp(o.err, "") == 0, "nothing on stderr: %s", o.err);
    outcome_free(&o);

    o = run_workload(FAKE_NVTX_PATH, "core-a");
    snprintf(want, sizeof want, "%s%s", TABLES_LINE, expected_ranges("pusha", "pop", 0));
    CHECK_MSG(strcmp(o.ranges, want) == 0, "ranges:\n%s\nexpected:\n%s", o.ranges, want);
    CHECK_MSG(strcmp(o.err, "") == 0, "nothing on stderr: %s", o.err);
    outcome_free(&o);
}

/* No variable: nothing is loaded, nothing said, the fake sees nothing. */
static void test_no_tool(void) {
    struct outcome o = run_workload(NULL, NULL);
    CHECK_EQ_I(exit_code_of(o.status), 0);
    CHECK_MSG(strcmp(o.ranges, "") == 0, "the fake saw nothing: %s", o.ranges);
    CHECK_MSG(strcmp(o.err, "") == 0, "nothing on stderr: %s", o.err);
    check_report_whole(o.report);
    outcome_free(&o);
}

/* A variable that names no usable tool: one line on stderr that names it
 * and says why, no ranges, and the workload's report whole. */
static void check_refused(const char *tool, const char *mode, const char *why) {
    struct outcome o = run_workload(tool, mode);
    CHECK_EQ_I(exit_code_of(o.status), 0);
    char head[4300];
    snprintf(head, sizeof head, "stepscope: NVTX_INJECTION64_PATH=%s: ", tool);
    CHECK_MSG(strncmp(o.err, head, strlen(head)) == 0, "stderr begins with %s: %s", head, o.err);
    CHECK_STR_HAS(o.err, why);
    CHECK_STR_HAS(o.err, "stepscope's zones will not show as NVTX ranges");
    CHECK_EQ_I(count_lines(o.err), 1);
    CHECK_MSG(strstr(o.ranges, "push") == NULL, "no range reached the tool: %s", o.ranges);
    check_report_whole(o.report);
    outcome_free(&o);
}

static void test_bad_tools(void) {
    check_refused("/nonexistent/libToolsInjection64.so", NULL, "cannot load it (");
    /* a library that loads but is no NVTX tool */
    check_refused(FAKE_CUDA_PATH, NULL, "has no InitializeInjectionNvtx2");
    check_refused(FAKE_NVTX_PATH, "refuse", "refused (returned 0)");
    check_refused(FAKE_NVTX_PATH, "none", "implements no NVTX range push/pop");
}

/* Threads whose first zones race: each gets its own ranges, whole and in
 * order, whatever the interleaving. */
static void test_racing_threads(void) {
    struct outcome o = run_which("racing", FAKE_NVTX_PATH, NULL);
    CHECK_EQ_I(exit_code_of(o.status), 0);
    CHECK_MSG(strcmp(o.err, "") == 0, "nothing on stderr: %s", o.err);
    for (int t = 1; t <= RACERS; t++) {
        char want[65536], got[65536], prefix[16];
        size_t w = 0, g = 0;
        for (int i = 0; i < RACER_STEPS; i++)
            w += (size_t)snprintf(want + w, sizeof want - w,
                                  "dpush step %d payload=%d\ndpush work\ndpop\ndpop\n", i, i);
        int n = snprintf(prefix, sizeof prefix, "t%d ", t);
        for (const char *line = o.ranges; *line;) {
            const char *eol = strchr(line, '\n');
            size_t len = eol ? (size_t)(eol - line) + 1 : strlen(line);
            if (strncmp(line, prefix, (size_t)n) == 0 && g + len < sizeof got) {
                memcpy(got + g, line + n, len - (size_t)n);
                g += len - (size_t)n;
            }
            line += len;
        }
        got[g] = '\0';
        CHECK_MSG(strcmp(got, want) == 0, "thread t%d's ranges:\n%s", t, got);
    }
    CHECK_EQ_I(json_num(o.report, "steps.count"), RACERS * RACER_STEPS);
    outcome_free(&o);
}

static void test_thinned_zones(void) {
    struct outcome o = run_which("thinned", FAKE_NVTX_PATH, NULL);
    CHECK_EQ_I(exit_code_of(o.status), 0);
    const char *want = TABLES_LINE "domain stepscope\n"
                                   "t1 dpush before\nt1 dpop\n"
                                   "t1 dpush step 0 payload=0\nt1 dpop\n"
                                   "t1 dpush step 1 payload=1\nt1 dpop\n";
    CHECK_MSG(strcmp(o.ranges, want) == 0, "ranges:\n%s\nexpected:\n%s", o.ranges, want);
    CHECK_EQ_I(json_num(o.report, "steps.count"), 2);
    json_t *z = report_find(o.report, "zones", "thinned");
    CHECK_MSG(!z || json_integer_value(json_object_get(z, "count")) == 0, "the thinned zone is not counted");
    outcome_free(&o);
}

/* `stepscope doctor`'s nvtx line (text and JSON) for each way of being
 * run: no tool, a tool that attaches, a path that does not load. */
static void doctor(const char *tool, char *out, size_t cap, int json) {
    char path[4200], bin[4200], err[2048];
    snprintf(path, sizeof path, "%s/doctor.txt", tmpdir_new("nvtx-doctor"));
    snprintf(bin, sizeof bin, "%s/stepscope", SPS_BIN_DIR);
    if (tool)
        setenv("NVTX_INJECTION64_PATH", tool, 1);
    else
        unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("FAKE_NVTX_LOG");
    unsetenv("FAKE_NVTX_MODE");
    char *argv[] = {bin, "doctor", json ? "--json" : NULL, NULL};
    int st = run_capture_to(argv, path, err, sizeof err);
    unsetenv("NVTX_INJECTION64_PATH");
    CHECK_MSG(exit_code_of(st) == 0 || exit_code_of(st) == 1, "doctor ran: %s", err);
    read_file(path, out, cap);
}

static const char *line_of(const char *text, const char *head) {
    static char line[2048];
    const char *at = strstr(text, head);
    if (!at)
        return "";
    at += head[0] == '\n'; /* the line, not the newline before it */
    size_t n = strcspn(at, "\n");
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), at);
    return line;
}

static void test_doctor(void) {
    static char out[65536];
    doctor(NULL, out, sizeof out, 0);
    CHECK_MSG(strcmp(line_of(out, "\nnvtx "),
                     "nvtx        off                   -         -  no NVTX tool injected (NVTX_INJECTION64_PATH "
                     "unset); run under nsys profile to see stepscope's zones in Nsight") == 0,
              "%s", line_of(out, "\nnvtx "));
    doctor(FAKE_NVTX_PATH, out, sizeof out, 0);
    char want[4096];
    snprintf(want, sizeof want,
             "nvtx        ok                    -         -  tool %s loaded: zones, steps and GPU zones show as NVTX "
             "ranges (nvtxDomainRangePushEx/nvtxDomainRangePop in domain \"stepscope\")",
             FAKE_NVTX_PATH);
    CHECK_MSG(strcmp(line_of(out, "\nnvtx "), want) == 0, "%s", line_of(out, "\nnvtx "));
    doctor("/nonexistent/libnvtx.so", out, sizeof out, 0);
    CHECK_STR_HAS(line_of(out, "\nnvtx "), "unavailable           -         -  tool /nonexistent/libnvtx.so not used: "
                                           "cannot load it (");

    doctor(FAKE_NVTX_PATH, out, sizeof out, 1);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    CHECK_MSG(j != NULL, "doctor --json parses: %s", e.text);
    json_t *n = json_object_get(j, "nvtx");
    CHECK(json_is_true(json_object_get(n, "requested")));
    CHECK(json_is_true(json_object_get(n, "attached")));
    CHECK(json_is_string(json_object_get(n, "library")) &&
          strcmp(json_string_value(json_object_get(n, "library")), FAKE_NVTX_PATH) == 0);
    CHECK(json_is_null(json_object_get(n, "reason")));
    json_decref(j);
    doctor(NULL, out, sizeof out, 1);
    j = json_loads(out, 0, &e);
    n = json_object_get(j, "nvtx");
    CHECK(json_is_false(json_object_get(n, "requested")));
    CHECK(json_is_false(json_object_get(n, "attached")));
    CHECK(json_is_null(json_object_get(n, "library")));
    CHECK(json_is_string(json_object_get(n, "reason")) &&
          strcmp(json_string_value(json_object_get(n, "reason")), "NVTX_INJECTION64_PATH unset") == 0);
    json_decref(j);
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "workload") == 0)
        return workload();
    if (argc >= 2 && strcmp(argv[1], "racing") == 0)
        return racing_workload();
    if (argc >= 2 && strcmp(argv[1], "thinned") == 0)
        return thinned_workload();
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "cannot find this program (/proc/self/exe)\n");
        return 1;
    }
    self[n] = '\0';
    RUN_TEST(test_ranges_in_the_domain);
    RUN_TEST(test_ranges_core_calls);
    RUN_TEST(test_no_tool);
    RUN_TEST(test_bad_tools);
    RUN_TEST(test_racing_threads);
    RUN_TEST(test_thinned_zones);
    RUN_TEST(test_doctor);
    return check_report();
}
