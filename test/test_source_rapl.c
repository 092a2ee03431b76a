/* test_source_rapl.c - the rapl source on fixture powercap trees: totals
 * since open, power between reads, counter wraparound and resets, missing
 * dram, unreadable and vanishing counters, and the real machine. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sources/source.h"
#include "stepscope.h"
#include "support.h"
#include "sysfs_tree.h"

static const struct sps__source *rapl = &sps__source_rapl;

#define SECOND 1000000000LL

/* Where sysfs keeps the zones; /sys/class/powercap has symlinks to them. */
#define ZONES "sys/devices/virtual/powercap/intel-rapl"

/* A zone: zone is "intel-rapl:0" or "intel-rapl:0:1", parent the folder it
 * lives in under ZONES ("" for a package, "intel-rapl:0" for its
 * subzones).  max_range NULL: no max_energy_range_uj file. */
static void rapl_zone(const char *root, const char *parent, const char *zone, const char *name, const char *energy,
                      const char *max_range) {
    char dir[256], rel[320], target[320];
    snprintf(dir, sizeof dir, "%s%s%s/%s", ZONES, *parent ? "/" : "", parent, zone);
    snprintf(rel, sizeof rel, "%s/name", dir);
    tree_write(root, rel, name);
    snprintf(rel, sizeof rel, "%s/energy_uj", dir);
    tree_write(root, rel, energy);
    if (max_range) {
        snprintf(rel, sizeof rel, "%s/max_energy_range_uj", dir);
        tree_write(root, rel, max_range);
    }
    snprintf(rel, sizeof rel, "sys/class/powercap/%s", zone);
    snprintf(target, sizeof target, "../../%s", dir + strlen("sys/"));
    tree_symlink(root, rel, target);
}

static void set_energy(const char *root, const char *parent, const char *zone, const char *energy) {
    char rel[320];
    snprintf(rel, sizeof rel, "%s%s%s/%s/energy_uj", ZONES, *parent ? "/" : "", parent, zone);
    tree_write(root, rel, energy);
}

static int open_at(const char *root, void **state, char *reason, size_t cap) {
    struct sps__source_ctx ctx = {.root = root};
    reason[0] = '\0';
    return rapl->open(&ctx, state, reason, cap);
}

static int read_at(void *state, struct sps__sample *s, int64_t now_ns, char *reason, size_t cap) {
    struct sps__source_ctx ctx = {.root = ""};
    sps__sample_clear(s);
    reason[0] = '\0';
    return rapl->read(state, &ctx, s, now_ns, reason, cap);
}

#define PKG_J(s) ((s)->host[SPS_M_CPU_PACKAGE_ENERGY_JOULES])
#define PKG_W(s) ((s)->host[SPS_M_CPU_PACKAGE_POWER_WATTS])
#define DRAM_J(s) ((s)->host[SPS_M_DRAM_ENERGY_JOULES])
#define DRAM_W(s) ((s)->host[SPS_M_DRAM_POWER_WATTS])

/*
 * A two-socket server: package and dram domains on each, core/uncore and
 * psys zones (not counted), and an intel-rapl-mmio copy of package 0 (not
 * counted twice).
 */
static const char *two_socket_tree(void) {
    const char *root = tmpdir_new("rapl");
    rapl_zone(root, "", "intel-rapl:0", "package-0\n", "1000000\n", "10000000\n");
    rapl_zone(root, "intel-rapl:0", "intel-rapl:0:0", "core\n", "700000\n", "10000000\n");
    rapl_zone(root, "intel-rapl:0", "intel-rapl:0:1", "uncore\n", "100000\n", "10000000\n");
    rapl_zone(root, "intel-rapl:0", "intel-rapl:0:2", "dram\n", "500000\n", "10000000\n");
    rapl_zone(root, "", "intel-rapl:1", "package-1\n", "2000000\n", NULL);
    rapl_zone(root, "intel-rapl:1", "intel-rapl:1:0", "dram\n", "800000\n", "65712999613\n");
    rapl_zone(root, "", "intel-rapl:2", "psys\n", "9000000\n", "262143328850\n");
    tree_write(root, "sys/devices/virtual/powercap/intel-rapl-mmio/intel-rapl-mmio:0/name", "package-0\n");
    tree_write(root, "sys/devices/virtual/powercap/intel-rapl-mmio/intel-rapl-mmio:0/energy_uj", "4000000\n");
    tree_symlink(root, "sys/class/powercap/intel-rapl-mmio:0",
                 "../../devices/virtual/powercap/intel-rapl-mmio/intel-rapl-mmio:0");
    tree_mkdir(root, "sys/devices/virtual/powercap/intel-rapl");
    tree_symlink(root, "sys/class/powercap/intel-rapl", "../../devices/virtual/powercap/intel-rapl");
    return root;
}

static void test_totals_power_and_wraparound(void) {
    const char *root = two_socket_tree();
    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    CHECK_MSG(reason[0] == '\0', "no note expected, got \"%s\"", reason);
    static struct sps__sample s;

    /* first read: nothing used since open; no interval for power yet */
    CHECK_EQ_I(read_at(state, &s, 10 * SECOND, reason, sizeof reason), 0);
    CHECK_NEAR(PKG_J(&s), 0.0, 1e-12);
    CHECK_NEAR(DRAM_J(&s), 0.0, 1e-12);
    CHECK(isnan(PKG_W(&s)));
    CHECK(isnan(DRAM_W(&s)));
    CHECK(isnan(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS]));

    /* 0.5 s later: package 0 +2 J, package 1 +0.5 J, dram 0 +0.25 J; the
     * core, psys and mmio zones move too but are not counted */
    set_energy(root, "", "intel-rapl:0", "3000000\n");
    set_energy(root, "", "intel-rapl:1", "2500000\n");
    set_energy(root, "intel-rapl:0", "intel-rapl:0:2", "750000\n");
    set_energy(root, "intel-rapl:0", "intel-rapl:0:0", "2700000\n");
    set_energy(root, "", "intel-rapl:2", "99000000\n");
    tree_write(root, "sys/devices/virtual/powercap/intel-rapl-mmio/intel-rapl-mmio:0/energy_uj", "9000000\n");
    CHECK_EQ_I(read_at(state, &s, 10 * SECOND + SECOND / 2, reason, sizeof reason), 0);
    CHECK_NEAR(PKG_J(&s), 2.5, 1e-9);
    CHECK_NEAR(PKG_W(&s), 5.0, 1e-9);
    CHECK_NEAR(DRAM_J(&s), 0.25, 1e-9);
    CHECK_NEAR(DRAM_W(&s), 0.5, 1e-9);

    /* 1 s later package 0 wrapped at 10 J: 3 J -> 10 J -> 1 J is 8 J; package
     * 1 has no max_energy_range_uj, so a lower reading is a reset and counts
     * from 0: +0.25 J */
    set_energy(root, "", "intel-rapl:0", "1000000\n");
    set_energy(root, "", "intel-rapl:1", "250000\n");
    CHECK_EQ_I(read_at(state, &s, 11 * SECOND + SECOND / 2, reason, sizeof reason), 0);
    CHECK_NEAR(PKG_J(&s), 2.5 + 8.25, 1e-9);
    CHECK_NEAR(PKG_W(&s), 8.25, 1e-9);
    CHECK_NEAR(DRAM_J(&s), 0.25, 1e-9);
    CHECK_NEAR(DRAM_W(&s), 0.0, 1e-12);

    /* a read at the same instant has no interval: energy yes, power no */
    CHECK_EQ_I(read_at(state, &s, 11 * SECOND + SECOND / 2, reason, sizeof reason), 0);
    CHECK_NEAR(PKG_J(&s), 10.75, 1e-9);
    CHECK(isnan(PKG_W(&s)));
    rapl->close(state);
}

/* A dram counter vanishes mid-run: dram is NAN while the package reads on;
 * when it is back, the energy of the gap is counted and the power is over
 * the whole gap.  When every counter is gone the read fails. */
static void test_vanished_and_malformed(void) {
    const char *root = two_socket_tree();
    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, &s, SECOND, reason, sizeof reason), 0);

    char rel[320];
    snprintf(rel, sizeof rel, "%s/intel-rapl:1/intel-rapl:1:0/energy_uj", ZONES);
    tree_remove(root, rel);
    set_energy(root, "", "intel-rapl:0", "2000000\n");
    CHECK_EQ_I(read_at(state, &s, 2 * SECOND, reason, sizeof reason), 0);
    CHECK_NEAR(PKG_J(&s), 1.0, 1e-9);
    CHECK_NEAR(PKG_W(&s), 1.0, 1e-9);
    CHECK(isnan(DRAM_J(&s)));
    CHECK(isnan(DRAM_W(&s)));

    set_energy(root, "intel-rapl:1", "intel-rapl:1:0", "4800000\n"); /* +4 J over 2 s */
    CHECK_EQ_I(read_at(state, &s, 3 * SECOND, reason, sizeof reason), 0);
    CHECK_NEAR(DRAM_J(&s), 4.0, 1e-9);
    CHECK_NEAR(DRAM_W(&s), 2.0, 1e-9);
    CHECK_NEAR(PKG_W(&s), 0.0, 1e-12);

    /* a counter that holds no number: its group is NAN, not 0 */
    set_energy(root, "", "intel-rapl:1", "n/a\n");
    CHECK_EQ_I(read_at(state, &s, 4 * SECOND, reason, sizeof reason), 0);
    CHECK(isnan(PKG_J(&s)));
    CHECK(isnan(PKG_W(&s)));
    CHECK_NEAR(DRAM_J(&s), 4.0, 1e-9);

    /* all gone */
    set_energy(root, "", "intel-rapl:1", "");
    snprintf(rel, sizeof rel, "%s/intel-rapl:0/energy_uj", ZONES);
    tree_remove(root, rel);
    snprintf(rel, sizeof rel, "%s/intel-rapl:0/intel-rapl:0:2/energy_uj", ZONES);
    tree_remove(root, rel);
    snprintf(rel, sizeof rel, "%s/intel-rapl:1/intel-rapl:1:0/energy_uj", ZONES);
    tree_remove(root, rel);
    CHECK(read_at(state, &s, 5 * SECOND, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "energy_uj");
    printf("every counter gone: %s\n", reason);
    CHECK(isnan(PKG_J(&s)));
    CHECK(isnan(DRAM_J(&s)));
    rapl->close(state);
}

/* A desktop part without a dram domain: dram NAN, the package reads. */
static void test_no_dram(void) {
    const char *root = tmpdir_new("rapl");
    rapl_zone(root, "", "intel-rapl:0", "package-0\n", "123456789\n", "262143328850\n");
    rapl_zone(root, "intel-rapl:0", "intel-rapl:0:0", "core\n", "1000\n", "262143328850\n");
    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    CHECK_STR_HAS(reason, "no dram domain");
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, &s, SECOND, reason, sizeof reason), 0);
    set_energy(root, "", "intel-rapl:0", "153456789\n");
    CHECK_EQ_I(read_at(state, &s, 2 * SECOND, reason, sizeof reason), 0);
    CHECK_NEAR(PKG_J(&s), 30.0, 1e-9);
    CHECK_NEAR(PKG_W(&s), 30.0, 1e-9);
    CHECK(isnan(DRAM_J(&s)));
    CHECK(isnan(DRAM_W(&s)));
    rapl->close(state);
}

static void test_unavailable_reasons(void) {
    void *state = (void *)&state;
    char reason[192];
    const char *root = tmpdir_new("rapl");
    CHECK(open_at(root, &state, reason, sizeof reason) < 0);
    CHECK(state == NULL);
    CHECK_STR_HAS(reason, "no RAPL domains under /sys/class/powercap");

    /* only the mmio copy and psys: still no package domain */
    tree_write(root, "sys/class/powercap/intel-rapl-mmio:0/name", "package-0\n");
    tree_write(root, "sys/class/powercap/intel-rapl-mmio:0/energy_uj", "5\n");
    tree_write(root, "sys/class/powercap/intel-rapl:1/name", "psys\n");
    tree_write(root, "sys/class/powercap/intel-rapl:1/energy_uj", "5\n");
    CHECK(open_at(root, &state, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "no RAPL domains");

    /* a package counter that cannot be read: the reason names the file */
    tree_write(root, "sys/class/powercap/intel-rapl:0/name", "package-0\n");
    tree_mkdir(root, "sys/class/powercap/intel-rapl:0/energy_uj");
    CHECK(open_at(root, &state, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "intel-rapl:0/energy_uj");
    CHECK_STR_HAS(reason, "Is a directory");

    /* an unreadable dram counter is left out, with a note */
    tree_remove(root, "sys/class/powercap/intel-rapl:0/energy_uj");
    tree_write(root, "sys/class/powercap/intel-rapl:0/energy_uj", "100\n");
    tree_write(root, "sys/class/powercap/intel-rapl:0:0/name", "dram\n");
    tree_write(root, "sys/class/powercap/intel-rapl:0:0/energy_uj", "lots\n");
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    CHECK_STR_HAS(reason, "dram left out");
    CHECK_STR_HAS(reason, "not a number");
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, &s, SECOND, reason, sizeof reason), 0);
    CHECK_NEAR(PKG_J(&s), 0.0, 1e-12);
    CHECK(isnan(DRAM_J(&s)));
    rapl->close(state);

    /* the second package unreadable after the dram domain was left out:
     * unavailable, and everything found so far is freed once */
    tree_write(root, "sys/class/powercap/intel-rapl:1/name", "package-1\n");
    tree_remove(root, "sys/class/powercap/intel-rapl:1/energy_uj");
    tree_mkdir(root, "sys/class/powercap/intel-rapl:1/energy_uj");
    CHECK(open_at(root, &state, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "intel-rapl:1/energy_uj");
}

/*
 * energy_uj is mode 0400 since CVE-2020-8694, and root reads it anyway: the
 * permission reason is checked in a child that gives up root.  Skipped
 * (with a line saying so) where the child cannot change its user.
 */
static void test_permission_reason(void) {
    const char *root = tmpdir_new("rapl");
    tree_write(root, "sys/class/powercap/intel-rapl:0/name", "package-0\n");
    tree_write(root, "sys/class/powercap/intel-rapl:0/energy_uj", "100\n");
    char path[4096];
    snprintf(path, sizeof path, "%s/sys/class/powercap/intel-rapl:0/energy_uj", root);
    if (chmod(path, 0400) != 0 || chmod(root, 0755) != 0) {
        printf("permission reason: skipped (chmod failed)\n");
        return;
    }
    int fds[2];
    if (pipe(fds) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (setgid(65534) != 0 || setuid(65534) != 0 || access(path, F_OK) != 0)
            _exit(77);
        void *state = NULL;
        char reason[192];
        int rc = open_at(root, &state, reason, sizeof reason);
        if (write(fds[1], reason, strlen(reason) + 1) < 0)
            _exit(2);
        _exit(rc < 0 ? 0 : 1);
    }
    close(fds[1]);
    char reason[192] = "";
    ssize_t n = read(fds[0], reason, sizeof reason - 1);
    reason[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        printf("permission reason: skipped (cannot run as nobody here)\n");
        return;
    }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "open as nobody must fail (status %d)", status);
    CHECK_STR_HAS(reason, "CVE-2020-8694");
    CHECK_STR_HAS(reason, "run as root or grant read access with a udev rule");
    printf("as nobody: %s\n", reason);
}

static void test_real_machine(void) {
    void *state = NULL;
    char reason[192];
    int rc = open_at("", &state, reason, sizeof reason);
    if (rc != 0) {
        CHECK_MSG(reason[0] != '\0', "an unavailable source must say why");
        printf("rapl on this machine: unavailable: %s\n", reason);
        return;
    }
    static struct sps__sample s;
    rc = read_at(state, &s, 1, reason, sizeof reason);
    CHECK_MSG(rc == 0 || reason[0] != '\0', "a failed read must say why");
    printf("rapl on this machine: package %.3f J since open\n", PKG_J(&s));
    rapl->close(state);
}

int main(void) {
    RUN_TEST(test_totals_power_and_wraparound);
    RUN_TEST(test_vanished_and_malformed);
    RUN_TEST(test_no_dram);
    RUN_TEST(test_unavailable_reasons);
    RUN_TEST(test_permission_reason);
    RUN_TEST(test_real_machine);
    return check_report();
}
