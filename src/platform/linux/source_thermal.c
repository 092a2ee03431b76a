/*
 * source_thermal.c - temperature sensors from hwmon and thermal zones, and
 * cpu_temperature_celsius, the hottest CPU sensor among them.
 *
 * open() discovers the sensors once and keeps the paths of the ones it
 * lists; read() only reads those files.  Sensors that appear later (a
 * module loaded mid-run) are not seen until the source is opened again.
 *
 * Which sensors count as the CPU: hwmon chips whose driver measures the CPU
 * die (coretemp, k10temp, ...).  Thermal zones of a CPU type count only on
 * machines with no such chip, because where both exist they measure the
 * same die and a zone may lag or be coarser.  A thermal zone is skipped
 * altogether when the thermal core already registered it as an hwmon chip
 * (same name, '-' written '_'): the reading would be listed twice.
 */
#include "sources/source.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sources/sysfs.h"

/* Bounds on what discovery looks at; machines with more (hundreds of
 * drives with drivetemp) only lose sensors that would not be listed. */
enum { MAX_HWMON_CHIPS = 1024, MAX_INPUTS_PER_CHIP = 128, MAX_THERMAL_ZONES = 1024 };

/* hwmon drivers that measure the CPU die. */
static const char *const cpu_chip_names[] = {
    "coretemp",    /* Intel */
    "k10temp",     /* AMD family 10h and later */
    "k8temp",      /* AMD K8 */
    "zenpower",    /* AMD Zen, out-of-tree */
    "via_cputemp", /* VIA */
    "cpu_thermal", /* Arm SoCs (Raspberry Pi, ...) through thermal_hwmon */
    "cpu-thermal",
    "soc_thermal",
};

/* thermal_zone types that measure the CPU; any type starting with "cpu"
 * also does ("cpu0-thermal", "cpuss-0-usr", ...). */
static const char *const cpu_zone_types[] = {
    "x86_pkg_temp",
    "cpu-thermal",
    "cpu_thermal",
    "soc-thermal",
};

struct sensor {
    char label[48];
    int is_cpu;
    char *input_path; /* millidegrees C */
};

struct thermal_state {
    int count;
    struct sensor sensor[SPS_CAPTURE_MAX_SENSORS];
};

/* A sensor found by discovery, before the ones to list are chosen. */
struct candidate {
    struct sensor sensor;
    char chip[32];    /* hwmon name; "" for a thermal zone */
    int from_zone;    /* 0: hwmon, 1: thermal zone */
    int device;       /* N of hwmonN or thermal_zoneN */
    int rank;         /* position among its chip's inputs (0 for a zone) */
};

struct candidates {
    struct candidate *item;
    size_t count, cap;
};

static int name_in(const char *name, const char *const *table, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, table[i]) == 0)
            return 1;
    return 0;
}

static int is_cpu_chip(const char *chip) {
    return name_in(chip, cpu_chip_names, sizeof cpu_chip_names / sizeof cpu_chip_names[0]);
}

static int is_cpu_zone_type(const char *type) {
    return strncmp(type, "cpu", 3) == 0 || name_in(type, cpu_zone_types, sizeof cpu_zone_types / sizeof cpu_zone_types[0]);
}

/* Returns the new candidate (zeroed but for the path), or NULL when out of
 * memory; path is copied. */
static struct candidate *candidate_add(struct candidates *list, const char *input_path) {
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 32;
        struct candidate *grown = realloc(list->item, cap * sizeof *grown);
        if (!grown)
            return NULL;
        list->item = grown;
        list->cap = cap;
    }
    char *path = strdup(input_path);
    if (!path)
        return NULL;
    struct candidate *c = &list->item[list->count++];
    memset(c, 0, sizeof *c);
    c->sensor.input_path = path;
    return c;
}

static void candidates_free(struct candidates *list) {
    for (size_t i = 0; i < list->count; i++)
        free(list->item[i].sensor.input_path);
    free(list->item);
}

/* Every temp*_input of every hwmon chip.  Returns 0 or -ENOMEM. */
static int discover_hwmon(const char *root, struct candidates *list) {
    char dir[PATH_MAX], path[PATH_MAX];
    int inputs[MAX_INPUTS_PER_CHIP];
    if (sps__path(dir, sizeof dir, root, "/sys/class/hwmon") != 0)
        return 0;
    int *chips = malloc(MAX_HWMON_CHIPS * sizeof *chips);
    if (!chips)
        return -ENOMEM;
    int nchips = sps__list_numbered(dir, "hwmon", "", chips, MAX_HWMON_CHIPS);
    for (int i = 0; i < nchips && i < MAX_HWMON_CHIPS; i++) {
        char chip[32];
        if (sps__path(dir, sizeof dir, root, "/sys/class/hwmon/hwmon%d", chips[i]) != 0)
            continue;
        if (sps__path(path, sizeof path, "", "%s/name", dir) != 0 || sps__read_line(path, chip, sizeof chip) <= 0)
            snprintf(chip, sizeof chip, "hwmon%d", chips[i]);
        int ninputs = sps__list_numbered(dir, "temp", "_input", inputs, MAX_INPUTS_PER_CHIP);
        for (int k = 0; k < ninputs && k < MAX_INPUTS_PER_CHIP; k++) {
            char label[48];
            if (sps__path(path, sizeof path, "", "%s/temp%d_label", dir, inputs[k]) != 0 ||
                sps__read_line(path, label, sizeof label) <= 0)
                snprintf(label, sizeof label, "temp%d", inputs[k]);
            if (sps__path(path, sizeof path, "", "%s/temp%d_input", dir, inputs[k]) != 0)
                continue;
            struct candidate *c = candidate_add(list, path);
            if (!c) {
                free(chips);
                return -ENOMEM;
            }
            snprintf(c->sensor.label, sizeof c->sensor.label, "%s %s", chip, label);
            snprintf(c->chip, sizeof c->chip, "%s", chip);
            c->sensor.is_cpu = is_cpu_chip(chip);
            c->device = chips[i];
            c->rank = k;
        }
    }
    free(chips);
    return 0;
}

/* Is type the name of one of the first nhwmon candidates' chips (the
 * thermal core's own hwmon copy of a zone: hwmon names cannot hold '-', so
 * it writes '_')? */
static int zone_has_hwmon_copy(const struct candidates *list, size_t nhwmon, const char *type) {
    char as_hwmon[32];
    snprintf(as_hwmon, sizeof as_hwmon, "%s", type);
    for (char *p = as_hwmon; *p; p++)
        if (*p == '-')
            *p = '_';
    for (size_t i = 0; i < nhwmon; i++)
        if (strcmp(list->item[i].chip, as_hwmon) == 0)
            return 1;
    return 0;
}

/* Every thermal zone not already listed through hwmon, after the hwmon
 * candidates.  Returns 0 or -ENOMEM. */
static int discover_zones(const char *root, struct candidates *list, int have_cpu_chip) {
    char dir[PATH_MAX], path[PATH_MAX];
    if (sps__path(dir, sizeof dir, root, "/sys/class/thermal") != 0)
        return 0;
    int *zones = malloc(MAX_THERMAL_ZONES * sizeof *zones);
    if (!zones)
        return -ENOMEM;
    int nzones = sps__list_numbered(dir, "thermal_zone", "", zones, MAX_THERMAL_ZONES);
    size_t nhwmon = list->count;
    int rc = 0;
    for (int i = 0; i < nzones && i < MAX_THERMAL_ZONES; i++) {
        char type[32];
        if (sps__path(path, sizeof path, root, "/sys/class/thermal/thermal_zone%d/type", zones[i]) != 0)
            continue;
        if (sps__read_line(path, type, sizeof type) <= 0)
            snprintf(type, sizeof type, "unknown");
        if (zone_has_hwmon_copy(list, nhwmon, type))
            continue;
        if (sps__path(path, sizeof path, root, "/sys/class/thermal/thermal_zone%d/temp", zones[i]) != 0 ||
            access(path, F_OK) != 0)
            continue;
        struct candidate *c = candidate_add(list, path);
        if (!c) {
            rc = -ENOMEM;
            break;
        }
        snprintf(c->sensor.label, sizeof c->sensor.label, "thermal_zone%d %s", zones[i], type);
        c->sensor.is_cpu = !have_cpu_chip && is_cpu_zone_type(type);
        c->from_zone = 1;
        c->device = zones[i];
    }
    free(zones);
    return rc;
}

/*
 * Two sockets have two chips with the same labels ("coretemp Core 0"):
 * every label but the first of its kind gets the chip's hwmon name, so a
 * series keyed by label stays one sensor's.
 */
static void make_labels_unique(struct candidates *list) {
    for (size_t i = 1; i < list->count; i++) {
        struct candidate *c = &list->item[i];
        if (c->from_zone) /* "thermal_zoneN ..." is unique already */
            continue;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(list->item[j].sensor.label, c->sensor.label) == 0) {
                char suffix[24];
                int suffix_len = snprintf(suffix, sizeof suffix, " (hwmon%d)", c->device);
                size_t keep = sizeof c->sensor.label - 1 - (size_t)suffix_len;
                if (strlen(c->sensor.label) < keep)
                    keep = strlen(c->sensor.label);
                memcpy(c->sensor.label + keep, suffix, (size_t)suffix_len + 1);
                break;
            }
        }
    }
}

/*
 * The listing order.  CPU sensors first, and among them each chip's first
 * sensor before any chip's second: on a two-socket machine both packages
 * make the list even when one chip alone has more than its slots.  Then
 * the rest, hwmon chips before thermal zones, each chip's sensors
 * together.  Every tie is broken by the device number, then the rank,
 * numerically, so the order is the same on every open.
 */
static int candidate_order(const void *a_, const void *b_) {
    const struct candidate *a = a_, *b = b_;
    if (a->sensor.is_cpu != b->sensor.is_cpu)
        return b->sensor.is_cpu - a->sensor.is_cpu;
    if (a->sensor.is_cpu && a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->from_zone != b->from_zone)
        return a->from_zone - b->from_zone;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static void thermal_close(void *state_) {
    struct thermal_state *state = state_;
    if (!state)
        return;
    for (int i = 0; i < state->count; i++)
        free(state->sensor[i].input_path);
    free(state);
}

static int thermal_open(const struct sps__source_ctx *ctx, void **state_out, char *reason, size_t cap) {
    *state_out = NULL;
    struct candidates list = {NULL, 0, 0};
    int have_cpu_chip = 0;
    int rc = discover_hwmon(ctx->root, &list);
    for (size_t i = 0; i < list.count; i++)
        have_cpu_chip |= list.item[i].sensor.is_cpu;
    if (rc == 0)
        rc = discover_zones(ctx->root, &list, have_cpu_chip);
    if (rc != 0) {
        candidates_free(&list);
        snprintf(reason, cap, "out of memory while listing temperature sensors");
        return -1;
    }
    if (list.count == 0) {
        candidates_free(&list);
        snprintf(reason, cap, "no hwmon or thermal_zone temperature sensor under /sys/class (usual in virtual machines)");
        return -1;
    }
    struct thermal_state *state = calloc(1, sizeof *state);
    if (!state) {
        candidates_free(&list);
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    make_labels_unique(&list);
    qsort(list.item, list.count, sizeof list.item[0], candidate_order);
    for (size_t i = 0; i < list.count; i++) {
        if (state->count < SPS_CAPTURE_MAX_SENSORS) {
            state->sensor[state->count++] = list.item[i].sensor; /* the path moves into state */
            list.item[i].sensor.input_path = NULL;
        }
    }
    size_t unlisted = list.count - (size_t)state->count;
    candidates_free(&list);
    if (unlisted > 0)
        snprintf(reason, cap, "%zu more sensors not listed (at most %d)", unlisted, SPS_CAPTURE_MAX_SENSORS);
    else if (cap > 0)
        reason[0] = '\0';
    *state_out = state;
    return 0;
}

/* A sensor reads below absolute zero when its driver reports "no sensor
 * here" as a large negative number. */
static int read_celsius(const char *path, double *celsius) {
    int64_t millidegrees;
    int rc = sps__read_i64(path, &millidegrees);
    if (rc != 0)
        return rc;
    if (millidegrees < -273150)
        return -EINVAL;
    *celsius = (double)millidegrees / 1000.0;
    return 0;
}

/*
 * A sensor that cannot be read this time is NAN and the others still count;
 * the read fails only when no sensor at all could be read.
 */
static int thermal_read(void *state_, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns,
                        char *reason, size_t cap) {
    (void)ctx;
    (void)now_ns;
    struct thermal_state *state = state_;
    double hottest_cpu = NAN;
    int readable = 0, first_failure = -1, first_error = 0;
    for (int i = 0; i < state->count; i++) {
        const struct sensor *sensor = &state->sensor[i];
        struct sps__sensor_sample *out = &s->sensor[i];
        memcpy(out->label, sensor->label, sizeof out->label);
        out->is_cpu = sensor->is_cpu;
        out->celsius = NAN;
        double celsius;
        int rc = read_celsius(sensor->input_path, &celsius);
        if (rc != 0) {
            if (first_failure < 0) {
                first_failure = i;
                first_error = rc;
            }
            continue;
        }
        out->celsius = celsius;
        readable++;
        if (sensor->is_cpu && (isnan(hottest_cpu) || celsius > hottest_cpu))
            hottest_cpu = celsius;
    }
    s->nsensors = state->count;
    s->host[SPS_M_CPU_TEMPERATURE_CELSIUS] = hottest_cpu;
    if (readable == 0) {
        sps__reason_errno(reason, cap, state->sensor[first_failure].label, state->sensor[first_failure].input_path,
                          first_error);
        return -1;
    }
    return 0;
}

const struct sps__source sps__source_thermal = {
    .id = SPS_SOURCE_THERMAL,
    .name = "thermal",
    .what = "temperature sensors (hwmon, thermal zones) and the hottest CPU sensor",
    .is_gpu = 0,
    .slow = 0,
    .open = thermal_open,
    .read = thermal_read,
    .close = thermal_close,
};
