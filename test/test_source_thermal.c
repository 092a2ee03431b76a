/* test_source_thermal.c - the thermal source on fixture /sys trees: labels,
 * listing order, which sensors count as the CPU, broken and vanishing
 * files, and the real machine. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "sources/source.h"
#include "stepscope.h"
#include "support.h"
#include "sysfs_tree.h"

static const struct sps__source *thermal = &sps__source_thermal;

/* An hwmon chip as sysfs has it: the device's folder, and the class entry
 * a relative symlink to it. */
static void hwmon_chip(const char *root, int n, const char *device, const char *name) {
    char rel[256], target[256];
    snprintf(rel, sizeof rel, "sys/devices/%s/hwmon/hwmon%d/name", device, n);
    tree_write(root, rel, name);
    snprintf(rel, sizeof rel, "sys/class/hwmon/hwmon%d", n);
    snprintf(target, sizeof target, "../../devices/%s/hwmon/hwmon%d", device, n);
    tree_symlink(root, rel, target);
}

/* temp<k>_input (and temp<k>_label when label is not NULL) of hwmon<n>. */
static void hwmon_temp(const char *root, int n, int k, const char *label, const char *millidegrees) {
    char rel[256];
    if (label) {
        snprintf(rel, sizeof rel, "sys/class/hwmon/hwmon%d/temp%d_label", n, k);
        tree_write(root, rel, label);
    }
    snprintf(rel, sizeof rel, "sys/class/hwmon/hwmon%d/temp%d_input", n, k);
    tree_write(root, rel, millidegrees);
}

static void zone(const char *root, int n, const char *type, const char *millidegrees) {
    char rel[256];
    snprintf(rel, sizeof rel, "sys/class/thermal/thermal_zone%d/type", n);
    tree_write(root, rel, type);
    snprintf(rel, sizeof rel, "sys/class/thermal/thermal_zone%d/temp", n);
    tree_write(root, rel, millidegrees);
}

static int open_at(const char *root, void **state, char *reason, size_t cap) {
    struct sps__source_ctx ctx = {.root = root};
    reason[0] = '\0';
    return thermal->open(&ctx, state, reason, cap);
}

static int read_at(void *state, const char *root, struct sps__sample *s, int64_t now_ns, char *reason, size_t cap) {
    struct sps__source_ctx ctx = {.root = root};
    sps__sample_clear(s);
    reason[0] = '\0';
    return thermal->read(state, &ctx, s, now_ns, reason, cap);
}

#define CHECK_SENSOR(s, i, want_label, want_cpu, want_celsius) \
    do { \
        CHECK_MSG(strcmp((s)->sensor[i].label, want_label) == 0, "sensor %d label \"%s\", want \"%s\"", i, \
                  (s)->sensor[i].label, want_label); \
        CHECK_EQ_I((s)->sensor[i].is_cpu, want_cpu); \
        CHECK_NEAR((s)->sensor[i].celsius, want_celsius, 1e-9); \
    } while (0)

/*
 * Two k10temp sockets, non-CPU chips at hwmon1, hwmon3 and hwmon10 (which
 * a lexical sort would put before hwmon3), a thermal zone the thermal core
 * also registered as hwmon (acpitz: listed once), and an x86_pkg_temp zone
 * that does not count as the CPU because k10temp does.
 */
static void test_hwmon_labels_and_order(void) {
    const char *root = tmpdir_new("thermal");
    hwmon_chip(root, 2, "pci0000:00/0000:00:18.3", "k10temp\n");
    hwmon_temp(root, 2, 1, "Tctl\n", "45000\n");
    hwmon_temp(root, 2, 3, "Tccd1\n", "50500\n");
    hwmon_chip(root, 11, "pci0000:40/0000:40:18.3", "k10temp\n");
    hwmon_temp(root, 11, 1, "Tctl\n", "61000\n");
    hwmon_temp(root, 11, 3, "Tccd1\n", "58250\n");
    hwmon_chip(root, 1, "LNXSYSTM:00/LNXSYBUS:01/LNXTHERM:00", "acpitz\n");
    hwmon_temp(root, 1, 1, NULL, "27800\n");
    hwmon_chip(root, 3, "platform/drivetemp.0", "drivetemp\n");
    hwmon_temp(root, 3, 1, NULL, "33000\n");
    hwmon_chip(root, 10, "pci0000:00/0000:00:01.1/nvme/nvme0", "nvme\n");
    hwmon_temp(root, 10, 1, "Composite\n", "38850\n");
    hwmon_temp(root, 10, 10, NULL, "41850\n");
    hwmon_temp(root, 10, 2, "Sensor 1\n", "36850\n");
    zone(root, 0, "acpitz\n", "27800\n");
    zone(root, 1, "x86_pkg_temp\n", "60000\n");

    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    CHECK_MSG(reason[0] == '\0', "no note expected, got \"%s\"", reason);
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, root, &s, 1000000000, reason, sizeof reason), 0);
    CHECK_EQ_I(s.nsensors, 10);
    /* CPU sensors first, each chip's first before any chip's second */
    CHECK_SENSOR(&s, 0, "k10temp Tctl", 1, 45.0);
    CHECK_SENSOR(&s, 1, "k10temp Tctl (hwmon11)", 1, 61.0);
    CHECK_SENSOR(&s, 2, "k10temp Tccd1", 1, 50.5);
    CHECK_SENSOR(&s, 3, "k10temp Tccd1 (hwmon11)", 1, 58.25);
    /* then the rest: hwmon numerically, inputs numerically, then zones */
    CHECK_SENSOR(&s, 4, "acpitz temp1", 0, 27.8);
    CHECK_SENSOR(&s, 5, "drivetemp temp1", 0, 33.0);
    CHECK_SENSOR(&s, 6, "nvme Composite", 0, 38.85);
    CHECK_SENSOR(&s, 7, "nvme Sensor 1", 0, 36.85);
    CHECK_SENSOR(&s, 8, "nvme temp10", 0, 41.85);
    CHECK_SENSOR(&s, 9, "thermal_zone1 x86_pkg_temp", 0, 60.0);
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 61.0, 1e-9);
    /* the source touches no other host slot */
    CHECK(isnan(s.host[SPS_M_SYSTEM_CPU_PERCENT]));
    CHECK(isnan(s.host[SPS_M_CPU_PACKAGE_ENERGY_JOULES]));

    /* values change between reads, labels and order do not */
    hwmon_temp(root, 2, 1, NULL, "72125\n");
    hwmon_temp(root, 10, 1, NULL, "-5000\n");
    CHECK_EQ_I(read_at(state, root, &s, 2000000000, reason, sizeof reason), 0);
    CHECK_SENSOR(&s, 0, "k10temp Tctl", 1, 72.125);
    CHECK_SENSOR(&s, 6, "nvme Composite", 0, -5.0);
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 72.125, 1e-9);
    thermal->close(state);
}

/* No CPU hwmon chip: CPU-type zones count, in zone order, before the
 * other sensors. */
static void test_zone_fallback(void) {
    const char *root = tmpdir_new("thermal");
    hwmon_chip(root, 0, "pci0000:00/0000:00:01.1/nvme/nvme0", "nvme\n");
    hwmon_temp(root, 0, 1, "Composite\n", "38000\n");
    zone(root, 0, "acpitz\n", "27800\n");
    zone(root, 2, "x86_pkg_temp\n", "55000\n");
    zone(root, 10, "cpu1-thermal\n", "57500\n");
    zone(root, 3, "iwlwifi_1\n", "40000\n");
    zone(root, 1, "pch_cannonlake\n", "48000\n");

    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, root, &s, 1000, reason, sizeof reason), 0);
    CHECK_EQ_I(s.nsensors, 6);
    CHECK_SENSOR(&s, 0, "thermal_zone2 x86_pkg_temp", 1, 55.0);
    CHECK_SENSOR(&s, 1, "thermal_zone10 cpu1-thermal", 1, 57.5);
    CHECK_SENSOR(&s, 2, "nvme Composite", 0, 38.0);
    CHECK_SENSOR(&s, 3, "thermal_zone0 acpitz", 0, 27.8);
    CHECK_SENSOR(&s, 4, "thermal_zone1 pch_cannonlake", 0, 48.0);
    CHECK_SENSOR(&s, 5, "thermal_zone3 iwlwifi_1", 0, 40.0);
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 57.5, 1e-9);

    /* a zone whose driver has no reading (wifi down) is NAN; the rest read */
    zone(root, 3, "iwlwifi_1\n", "");
    zone(root, 2, "x86_pkg_temp\n", "66000\n");
    CHECK_EQ_I(read_at(state, root, &s, 2000, reason, sizeof reason), 0);
    CHECK(isnan(s.sensor[5].celsius));
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 66.0, 1e-9);
    thermal->close(state);
}

/* An Arm board: the thermal core's hwmon copy of "cpu-thermal" is the CPU
 * chip "cpu_thermal", and the zone itself is not listed a second time. */
static void test_zone_hwmon_copy_counted_once(void) {
    const char *root = tmpdir_new("thermal");
    hwmon_chip(root, 0, "virtual/thermal/thermal_zone0", "cpu_thermal\n");
    hwmon_temp(root, 0, 1, NULL, "51540\n");
    zone(root, 0, "cpu-thermal\n", "51540\n");
    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, root, &s, 1000, reason, sizeof reason), 0);
    CHECK_EQ_I(s.nsensors, 1);
    CHECK_SENSOR(&s, 0, "cpu_thermal temp1", 1, 51.54);
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 51.54, 1e-9);
    thermal->close(state);
}

/* Broken files never crash and never read as 0; a sensor that vanishes
 * is NAN; when every sensor is gone the read fails with a reason. */
static void test_malformed_and_vanished(void) {
    const char *root = tmpdir_new("thermal");
    hwmon_chip(root, 0, "platform/coretemp.0", "coretemp\n");
    hwmon_temp(root, 0, 1, "Package id 0\n", "70000\n");
    hwmon_temp(root, 0, 2, "Core 0\n", "hot\n");
    hwmon_temp(root, 0, 3, "Core 1\n", "");
    hwmon_temp(root, 0, 4, "Core 2\n", "-300000\n"); /* below absolute zero: "no sensor" */
    hwmon_temp(root, 0, 5, "Core 3\n", "65000 degrees\n");
    hwmon_temp(root, 0, 6, "Core 4\n", "99999999999999999999999\n");
    hwmon_temp(root, 0, 7, "Core 5\n", "64000\n");
    /* a chip without a name file, a label far longer than a label slot */
    tree_mkdir(root, "sys/class/hwmon/hwmon7");
    hwmon_temp(root, 7, 1, "a label much longer than the forty-seven characters a sensor label can hold\n",
               "30000\n");

    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, root, &s, 1000, reason, sizeof reason), 0);
    CHECK_EQ_I(s.nsensors, 8);
    CHECK_SENSOR(&s, 0, "coretemp Package id 0", 1, 70.0);
    for (int i = 1; i <= 5; i++)
        CHECK_MSG(isnan(s.sensor[i].celsius), "sensor %d (%s) reads %g, want NAN", i, s.sensor[i].label,
                  s.sensor[i].celsius);
    CHECK_SENSOR(&s, 6, "coretemp Core 5", 1, 64.0);
    CHECK_EQ_I(strlen(s.sensor[7].label), sizeof s.sensor[7].label - 1);
    CHECK(strncmp(s.sensor[7].label, "hwmon7 a label much longer", 26) == 0);
    CHECK_EQ_I(s.sensor[7].is_cpu, 0);
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 70.0, 1e-9);

    /* the hottest sensor vanishes mid-run: it is NAN, the max moves on */
    tree_remove(root, "sys/class/hwmon/hwmon0/temp1_input");
    CHECK_EQ_I(read_at(state, root, &s, 2000, reason, sizeof reason), 0);
    CHECK(isnan(s.sensor[0].celsius));
    CHECK_EQ_I(s.nsensors, 8);
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 64.0, 1e-9);

    /* every readable sensor gone: the read fails, saying which file */
    tree_remove(root, "sys/class/hwmon/hwmon0/temp7_input");
    tree_remove(root, "sys/class/hwmon/hwmon7/temp1_input");
    int rc = read_at(state, root, &s, 3000, reason, sizeof reason);
    CHECK(rc < 0);
    CHECK_STR_HAS(reason, "temp1_input");
    printf("all sensors gone: %s\n", reason);
    CHECK(isnan(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS]));

    /* and a sensor that comes back reads again */
    hwmon_temp(root, 0, 7, NULL, "62000\n");
    CHECK_EQ_I(read_at(state, root, &s, 4000, reason, sizeof reason), 0);
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 62.0, 1e-9);
    thermal->close(state);
}

/* More sensors than slots: CPU sensors keep theirs, the open says what was
 * left out. */
static void test_more_sensors_than_slots(void) {
    const char *root = tmpdir_new("thermal");
    hwmon_chip(root, 0, "pci0000:00/0000:00:01.1/nvme/nvme0", "nvme\n");
    hwmon_temp(root, 0, 1, "Composite\n", "38000\n");
    hwmon_chip(root, 1, "platform/coretemp.0", "coretemp\n");
    hwmon_temp(root, 1, 1, "Package id 0\n", "70000\n");
    for (int core = 0; core < 20; core++) {
        char label[32], value[32];
        snprintf(label, sizeof label, "Core %d\n", core);
        snprintf(value, sizeof value, "%d\n", 50000 + core * 1000);
        hwmon_temp(root, 1, core + 2, label, value);
    }
    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    CHECK_STR_HAS(reason, "6 more sensors not listed");
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, root, &s, 1000, reason, sizeof reason), 0);
    CHECK_EQ_I(s.nsensors, SPS_CAPTURE_MAX_SENSORS);
    CHECK_SENSOR(&s, 0, "coretemp Package id 0", 1, 70.0);
    CHECK_SENSOR(&s, 15, "coretemp Core 14", 1, 64.0);
    CHECK_NEAR(s.host[SPS_M_CPU_TEMPERATURE_CELSIUS], 70.0, 1e-9);
    thermal->close(state);
}

static void test_no_sensors(void) {
    char reason[192];
    void *state = (void *)&state;
    const char *root = tmpdir_new("thermal");
    CHECK(open_at(root, &state, reason, sizeof reason) < 0);
    CHECK(state == NULL);
    CHECK_STR_HAS(reason, "no hwmon or thermal_zone temperature sensor under /sys/class");
    /* folders present but empty, as in this VM; a chip with no temperature */
    tree_mkdir(root, "sys/class/thermal");
    hwmon_chip(root, 0, "platform/fan.0", "pwmfan\n");
    tree_write(root, "sys/class/hwmon/hwmon0/fan1_input", "1200\n");
    CHECK(open_at(root, &state, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "usual in virtual machines");
}

static void test_real_machine(void) {
    void *state = NULL;
    char reason[192];
    int rc = open_at("", &state, reason, sizeof reason);
    if (rc != 0) {
        CHECK_MSG(reason[0] != '\0', "an unavailable source must say why");
        printf("thermal on this machine: unavailable: %s\n", reason);
        return;
    }
    static struct sps__sample s;
    rc = read_at(state, "", &s, 1, reason, sizeof reason);
    CHECK_MSG(rc == 0 || reason[0] != '\0', "a failed read must say why");
    printf("thermal on this machine: %d sensors, CPU %.1f C\n", s.nsensors, s.host[SPS_M_CPU_TEMPERATURE_CELSIUS]);
    thermal->close(state);
}

int main(void) {
    RUN_TEST(test_hwmon_labels_and_order);
    RUN_TEST(test_zone_fallback);
    RUN_TEST(test_zone_hwmon_copy_counted_once);
    RUN_TEST(test_malformed_and_vanished);
    RUN_TEST(test_more_sensors_than_slots);
    RUN_TEST(test_no_sensors);
    RUN_TEST(test_real_machine);
    return check_report();
}
