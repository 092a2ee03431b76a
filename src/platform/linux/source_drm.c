/*
 * source_drm.c - GPUs whose kernel driver reports load and memory through
 * /sys/class/drm/cardN/device (amdgpu above all), with temperature and
 * power from the card's hwmon chip.
 *
 * A card counts when it has gpu_busy_percent or mem_info_vram_used: the
 * NVIDIA driver and display-only cards (simpledrm, virtio, ASPEED server
 * consoles) have neither and are left to other sources.  open() finds which
 * files each card has and keeps their paths; read() reads only those, so a
 * metric a card does not report stays NAN without a failed open per read.
 *
 * GPUs are numbered in card order, which need not be the order ROCm or
 * HIP_VISIBLE_DEVICES use.
 */
#include "sources/source.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sources/sysfs.h"

enum { MAX_DRM_CARDS = 256, MAX_CARD_HWMONS = 16, MAX_HWMON_TEMPS = 32 };

/* The files a card may have; path NULL when it has not. */
enum card_file {
    FILE_GPU_BUSY,    /* percent */
    FILE_MEMORY_BUSY, /* percent */
    FILE_VRAM_USED,   /* bytes */
    FILE_VRAM_TOTAL,  /* bytes */
    FILE_TEMPERATURE, /* millidegrees C */
    FILE_POWER,       /* microwatts */
    FILE_ENERGY,      /* microjoules, a running counter */
    FILE_SCLK_TABLE,  /* pp_dpm_sclk */
    FILE_MCLK_TABLE,  /* pp_dpm_mclk */
    CARD_FILE_COUNT
};

struct drm_card {
    char name[64];
    char uuid[96];
    char *path[CARD_FILE_COUNT];
    int energy_baseline_set;
    uint64_t energy_last_uj;
    uint64_t energy_total_uj; /* since open (or the first good read) */
};

struct drm_state {
    int count;
    struct drm_card card[SPS_CAPTURE_MAX_GPUS];
};

static const struct {
    unsigned id;
    const char *name;
} pci_vendors[] = {
    {0x1002, "AMD"},
    {0x8086, "Intel"},
    {0x10de, "NVIDIA"},
};

static const char *vendor_name(unsigned id) {
    for (size_t i = 0; i < sizeof pci_vendors / sizeof pci_vendors[0]; i++)
        if (pci_vendors[i].id == id)
            return pci_vendors[i].name;
    return NULL;
}

/* A "0x1002" id file; -1 when absent or malformed. */
static long read_hex_id(const char *path) {
    char text[32];
    if (sps__read_line(path, text, sizeof text) <= 0)
        return -1;
    char *end;
    errno = 0;
    unsigned long id = strtoul(text, &end, 16);
    if (errno || end == text || *end != '\0' || id > 0xffff)
        return -1;
    return (long)id;
}

/* The path when it exists, copied; NULL when it does not (or no memory:
 * the metric is then unavailable, as for a card without the file). */
static char *existing_path(const char *path) {
    return access(path, F_OK) == 0 ? strdup(path) : NULL;
}

/*
 * The card's temperature, power and energy files from its hwmon chips:
 * the temperature labelled "edge" (amdgpu: the die's edge, what tools show
 * as "the" GPU temperature; junction and memory are hotter) or else temp1;
 * average power (amdgpu before RDNA3) or else instantaneous power.
 */
static void find_hwmon_files(const char *device_dir, struct drm_card *card) {
    char dir[PATH_MAX], path[PATH_MAX];
    int hwmons[MAX_CARD_HWMONS], temps[MAX_HWMON_TEMPS];
    if (sps__path(dir, sizeof dir, "", "%s/hwmon", device_dir) != 0)
        return;
    int nhwmons = sps__list_numbered(dir, "hwmon", "", hwmons, MAX_CARD_HWMONS);
    char *edge = NULL;
    for (int h = 0; h < nhwmons && h < MAX_CARD_HWMONS; h++) {
        if (sps__path(dir, sizeof dir, "", "%s/hwmon/hwmon%d", device_dir, hwmons[h]) != 0)
            continue;
        int ntemps = sps__list_numbered(dir, "temp", "_input", temps, MAX_HWMON_TEMPS);
        for (int t = 0; t < ntemps && t < MAX_HWMON_TEMPS && !edge; t++) {
            char label[32];
            if (sps__path(path, sizeof path, "", "%s/temp%d_label", dir, temps[t]) == 0 &&
                sps__read_line(path, label, sizeof label) > 0 && strcmp(label, "edge") == 0 &&
                sps__path(path, sizeof path, "", "%s/temp%d_input", dir, temps[t]) == 0)
                edge = strdup(path);
        }
        if (!card->path[FILE_TEMPERATURE] && sps__path(path, sizeof path, "", "%s/temp1_input", dir) == 0)
            card->path[FILE_TEMPERATURE] = existing_path(path);
        if (!card->path[FILE_POWER] && sps__path(path, sizeof path, "", "%s/power1_average", dir) == 0)
            card->path[FILE_POWER] = existing_path(path);
        if (!card->path[FILE_POWER] && sps__path(path, sizeof path, "", "%s/power1_input", dir) == 0)
            card->path[FILE_POWER] = existing_path(path);
        if (!card->path[FILE_ENERGY] && sps__path(path, sizeof path, "", "%s/energy1_input", dir) == 0)
            card->path[FILE_ENERGY] = existing_path(path);
    }
    if (edge) {
        free(card->path[FILE_TEMPERATURE]);
        card->path[FILE_TEMPERATURE] = edge;
    }
}

static void card_free(struct drm_card *card) {
    for (int f = 0; f < CARD_FILE_COUNT; f++) {
        free(card->path[f]);
        card->path[f] = NULL;
    }
}

/* Fill card from /sys/class/drm/cardN/device.  Returns 1 when it is a GPU
 * this source reads, 0 when not (card left empty). */
static int card_probe(const char *root, int number, struct drm_card *card) {
    static const struct {
        enum card_file file;
        const char *name;
    } device_files[] = {
        {FILE_GPU_BUSY, "gpu_busy_percent"},  {FILE_MEMORY_BUSY, "mem_busy_percent"},
        {FILE_VRAM_USED, "mem_info_vram_used"}, {FILE_VRAM_TOTAL, "mem_info_vram_total"},
        {FILE_SCLK_TABLE, "pp_dpm_sclk"},     {FILE_MCLK_TABLE, "pp_dpm_mclk"},
    };
    char device_dir[PATH_MAX], path[PATH_MAX];
    memset(card, 0, sizeof *card);
    if (sps__path(device_dir, sizeof device_dir, root, "/sys/class/drm/card%d/device", number) != 0)
        return 0;
    for (size_t i = 0; i < sizeof device_files / sizeof device_files[0]; i++)
        if (sps__path(path, sizeof path, "", "%s/%s", device_dir, device_files[i].name) == 0)
            card->path[device_files[i].file] = existing_path(path);
    if (!card->path[FILE_GPU_BUSY] && !card->path[FILE_VRAM_USED]) {
        card_free(card);
        return 0;
    }
    find_hwmon_files(device_dir, card);

    if (sps__path(path, sizeof path, "", "%s/product_name", device_dir) != 0 ||
        sps__read_line(path, card->name, sizeof card->name) <= 0) {
        /* amdgpu has product_name only where the board carries FRU data
         * (mostly data-centre parts): name the card by its PCI ids. */
        long vendor = -1, device = -1;
        if (sps__path(path, sizeof path, "", "%s/vendor", device_dir) == 0)
            vendor = read_hex_id(path);
        if (sps__path(path, sizeof path, "", "%s/device", device_dir) == 0)
            device = read_hex_id(path);
        const char *maker = vendor >= 0 ? vendor_name((unsigned)vendor) : NULL;
        char ids[24] = "";
        if (vendor >= 0 && device >= 0)
            snprintf(ids, sizeof ids, ", %04lx:%04lx", (unsigned long)vendor, (unsigned long)device);
        snprintf(card->name, sizeof card->name, "%s%sGPU (card%d%s)", maker ? maker : "", maker ? " " : "", number,
                 ids);
    }
    if (sps__path(path, sizeof path, "", "%s/unique_id", device_dir) != 0 ||
        sps__read_line(path, card->uuid, sizeof card->uuid) < 0)
        card->uuid[0] = '\0';

    if (card->path[FILE_ENERGY] && sps__read_u64(card->path[FILE_ENERGY], &card->energy_last_uj) == 0)
        card->energy_baseline_set = 1;
    return 1;
}

static void drm_close(void *state_) {
    struct drm_state *state = state_;
    if (!state)
        return;
    for (int i = 0; i < state->count; i++)
        card_free(&state->card[i]);
    free(state);
}

static int drm_open(const struct sps__source_ctx *ctx, void **state_out, char *reason, size_t cap) {
    *state_out = NULL;
    char dir[PATH_MAX];
    struct drm_state *state = calloc(1, sizeof *state);
    int *cards = malloc(MAX_DRM_CARDS * sizeof *cards);
    if (!state || !cards) {
        free(state);
        free(cards);
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    int ncards = 0, unlisted = 0;
    if (sps__path(dir, sizeof dir, ctx->root, "/sys/class/drm") == 0)
        ncards = sps__list_numbered(dir, "card", "", cards, MAX_DRM_CARDS);
    for (int i = 0; i < ncards && i < MAX_DRM_CARDS; i++) {
        struct drm_card probe;
        if (!card_probe(ctx->root, cards[i], &probe))
            continue;
        if (state->count == SPS_CAPTURE_MAX_GPUS) {
            card_free(&probe);
            unlisted++;
            continue;
        }
        state->card[state->count++] = probe;
    }
    free(cards);
    if (state->count == 0) {
        free(state);
        snprintf(reason, cap, "no GPU with utilisation or VRAM files under /sys/class/drm");
        return -1;
    }
    if (unlisted)
        snprintf(reason, cap, "%d more GPUs not read (at most %d)", unlisted, SPS_CAPTURE_MAX_GPUS);
    else if (cap > 0)
        reason[0] = '\0';
    *state_out = state;
    return 0;
}

/*
 * The current level of a pp_dpm_* table, in hertz: the line marked '*'
 * ("0: 500Mhz\n1: 1800Mhz *\n"; some APUs have a sleep level "S: 19Mhz").
 * NAN when no line is marked or it does not parse.
 */
static double current_dpm_hz(const char *table) {
    static const struct {
        const char *unit;
        double hz;
    } units[] = {{"ghz", 1e9}, {"mhz", 1e6}, {"khz", 1e3}, {"hz", 1.0}};
    for (const char *line = table; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *star = memchr(line, '*', len);
        const char *colon = memchr(line, ':', len);
        if (star && colon && colon < star) {
            char *end;
            errno = 0;
            double value = strtod(colon + 1, &end);
            if (errno || end == colon + 1 || value < 0 || !isfinite(value))
                return NAN;
            while (*end == ' ')
                end++;
            for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
                size_t ulen = strlen(units[u].unit);
                if (strncasecmp(end, units[u].unit, ulen) == 0 && !isalpha((unsigned char)end[ulen]))
                    return value * units[u].hz;
            }
            return NAN;
        }
        if (!eol)
            break;
        line = eol + 1;
    }
    return NAN;
}

/* One file's value in its metric's unit; 0 or -errno (-EINVAL when
 * malformed). */
static int read_card_file(struct drm_card *card, enum card_file file, double *value) {
    const char *path = card->path[file];
    uint64_t u;
    int64_t i;
    int rc;
    switch (file) {
    case FILE_GPU_BUSY:
    case FILE_MEMORY_BUSY:
    case FILE_VRAM_USED:
    case FILE_VRAM_TOTAL:
        if ((rc = sps__read_u64(path, &u)) == 0)
            *value = (double)u;
        return rc;
    case FILE_TEMPERATURE:
        if ((rc = sps__read_i64(path, &i)) == 0)
            *value = (double)i / 1000.0;
        return rc;
    case FILE_POWER:
        if ((rc = sps__read_u64(path, &u)) == 0)
            *value = (double)u / 1e6;
        return rc;
    case FILE_ENERGY:
        if ((rc = sps__read_u64(path, &u)) != 0)
            return rc;
        if (!card->energy_baseline_set) {
            card->energy_last_uj = u;
            card->energy_baseline_set = 1;
        }
        /* a lower reading is a reset (driver reload, GPU reset), not a wrap:
         * the hwmon energy counters are 64-bit */
        card->energy_total_uj += u >= card->energy_last_uj ? u - card->energy_last_uj : u;
        card->energy_last_uj = u;
        *value = (double)card->energy_total_uj / 1e6;
        return 0;
    case FILE_SCLK_TABLE:
    case FILE_MCLK_TABLE: {
        char table[1024];
        ssize_t n = sps__read_text(path, table, sizeof table);
        if (n < 0)
            return (int)n;
        *value = current_dpm_hz(table);
        return isnan(*value) ? -EINVAL : 0;
    }
    case CARD_FILE_COUNT:
        break;
    }
    return -EINVAL;
}

static const int metric_of_file[CARD_FILE_COUNT] = {
    [FILE_GPU_BUSY] = SPS_M_GPU_UTILIZATION_PERCENT,
    [FILE_MEMORY_BUSY] = SPS_M_GPU_MEMORY_UTILIZATION_PERCENT,
    [FILE_VRAM_USED] = SPS_M_GPU_MEMORY_USED_BYTES,
    [FILE_VRAM_TOTAL] = SPS_M_GPU_MEMORY_TOTAL_BYTES,
    [FILE_TEMPERATURE] = SPS_M_GPU_TEMPERATURE_CELSIUS,
    [FILE_POWER] = SPS_M_GPU_POWER_WATTS,
    [FILE_ENERGY] = SPS_M_GPU_ENERGY_JOULES,
    [FILE_SCLK_TABLE] = SPS_M_GPU_SM_CLOCK_HERTZ,
    [FILE_MCLK_TABLE] = SPS_M_GPU_MEMORY_CLOCK_HERTZ,
};

/*
 * A file that cannot be read (or holds no number) leaves its metric NAN for
 * this read and the others still count; the read fails only when nothing
 * at all could be read (every card gone).
 */
static int drm_read(void *state_, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns,
                    char *reason, size_t cap) {
    (void)ctx;
    (void)now_ns;
    struct drm_state *state = state_;
    int read_ok = 0, first_error = 0;
    const char *first_failed = NULL;
    for (int i = 0; i < state->count; i++) {
        struct drm_card *card = &state->card[i];
        struct sps__gpu_sample *gpu = &s->gpu[i];
        gpu->index = i;
        gpu->source = SPS_SOURCE_DRM;
        memcpy(gpu->name, card->name, sizeof gpu->name);
        memcpy(gpu->uuid, card->uuid, sizeof gpu->uuid);
        for (int f = 0; f < CARD_FILE_COUNT; f++) {
            gpu->v[metric_of_file[f]] = NAN;
            if (!card->path[f])
                continue;
            double value;
            int rc = read_card_file(card, (enum card_file)f, &value);
            if (rc == 0) {
                gpu->v[metric_of_file[f]] = value;
                read_ok++;
            } else if (!first_failed) {
                first_failed = card->path[f];
                first_error = rc;
            }
        }
    }
    s->ngpus = state->count;
    if (read_ok == 0) {
        sps__reason_errno(reason, cap, "drm", first_failed ? first_failed : "/sys/class/drm", first_error);
        return -1;
    }
    return 0;
}

const struct sps__source sps__source_drm = {
    .id = SPS_SOURCE_DRM,
    .name = "drm",
    .what = "GPU load, VRAM, temperature, power and clocks from /sys/class/drm (amdgpu and others)",
    .is_gpu = 1,
    .slow = 0,
    .open = drm_open,
    .read = drm_read,
    .close = drm_close,
};
