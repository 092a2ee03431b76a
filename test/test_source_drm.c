/* test_source_drm.c - the drm source on fixture /sys/class/drm trees:
 * which cards count, GPU names and order, every metric's file and unit,
 * clock tables, broken and vanishing files, and the real machine. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "sources/source.h"
#include "stepscope.h"
#include "support.h"
#include "sysfs_tree.h"

static const struct sps__source *drm = &sps__source_drm;

#define SECOND 1000000000LL

/*
 * cardN as sysfs has it: the PCI device folder pci (its files go there),
 * DEVICE/drm/cardN with a "device" link back up to it, and the class entry
 * a link to DEVICE/drm/cardN.
 */
static void drm_card(const char *root, int n, const char *pci) {
    char rel[256], target[256];
    snprintf(rel, sizeof rel, "sys/devices/pci0000:00/%s/drm/card%d/device", pci, n);
    snprintf(target, sizeof target, "../../../%s", pci);
    tree_symlink(root, rel, target);
    snprintf(rel, sizeof rel, "sys/class/drm/card%d", n);
    snprintf(target, sizeof target, "../../devices/pci0000:00/%s/drm/card%d", pci, n);
    tree_symlink(root, rel, target);
}

/* A file of the PCI device folder pci ("vendor", "hwmon/hwmon3/temp1_input"). */
static void pci_file(const char *root, const char *pci, const char *file, const char *text) {
    char rel[320];
    snprintf(rel, sizeof rel, "sys/devices/pci0000:00/%s/%s", pci, file);
    tree_write(root, rel, text);
}

static void pci_remove(const char *root, const char *pci, const char *file) {
    char rel[320];
    snprintf(rel, sizeof rel, "sys/devices/pci0000:00/%s/%s", pci, file);
    tree_remove(root, rel);
}

#define RX6900 "0000:03:00.0"
#define MI210 "0000:43:00.0"
#define IGPU "0000:0a:00.0"
#define VIRTIO "0000:00:02.0"

static const char *fixture(void) {
    const char *root = tmpdir_new("drm");
    /* card0: a display-only card (a VM's console): not a GPU here */
    drm_card(root, 0, VIRTIO);
    pci_file(root, VIRTIO, "vendor", "0x1af4\n");
    pci_file(root, VIRTIO, "device", "0x1050\n");
    tree_mkdir(root, "sys/class/drm/card0-Virtual-1");
    tree_write(root, "sys/class/drm/card0-Virtual-1/status", "connected\n");
    tree_write(root, "sys/class/drm/renderD128/dev", "226:128\n");
    tree_write(root, "sys/class/drm/version", "drm 1.1.0 20060810\n");

    /* card1: a Radeon without product_name, two temperatures (edge is
     * temp2 here), average and instantaneous power, clock tables */
    drm_card(root, 1, RX6900);
    pci_file(root, RX6900, "vendor", "0x1002\n");
    pci_file(root, RX6900, "device", "0x73bf\n");
    pci_file(root, RX6900, "unique_id", "6a2b1c0d9e8f7a65\n");
    pci_file(root, RX6900, "gpu_busy_percent", "87\n");
    pci_file(root, RX6900, "mem_busy_percent", "41\n");
    pci_file(root, RX6900, "mem_info_vram_used", "8589934592\n");
    pci_file(root, RX6900, "mem_info_vram_total", "17163091968\n");
    pci_file(root, RX6900, "pp_dpm_sclk", "0: 500Mhz \n1: 1800Mhz *\n2: 2500Mhz \n");
    pci_file(root, RX6900, "pp_dpm_mclk", "0: 96Mhz \n1: 456Mhz \n2: 673Mhz \n3: 1000Mhz *\n");
    pci_file(root, RX6900, "hwmon/hwmon4/name", "amdgpu\n");
    pci_file(root, RX6900, "hwmon/hwmon4/temp1_label", "junction\n");
    pci_file(root, RX6900, "hwmon/hwmon4/temp1_input", "70000\n");
    pci_file(root, RX6900, "hwmon/hwmon4/temp2_label", "edge\n");
    pci_file(root, RX6900, "hwmon/hwmon4/temp2_input", "52000\n");
    pci_file(root, RX6900, "hwmon/hwmon4/temp3_label", "mem\n");
    pci_file(root, RX6900, "hwmon/hwmon4/temp3_input", "64000\n");
    pci_file(root, RX6900, "hwmon/hwmon4/power1_average", "150000000\n");
    pci_file(root, RX6900, "hwmon/hwmon4/power1_input", "160000000\n");

    /* card2: a named data-centre part: VRAM only, instantaneous power, an
     * energy counter, an unlabelled temperature */
    drm_card(root, 2, MI210);
    pci_file(root, MI210, "vendor", "0x1002\n");
    pci_file(root, MI210, "device", "0x740f\n");
    pci_file(root, MI210, "product_name", "AMD Instinct MI210\n");
    pci_file(root, MI210, "mem_info_vram_used", "1048576\n");
    pci_file(root, MI210, "mem_info_vram_total", "68702699520\n");
    pci_file(root, MI210, "hwmon/hwmon7/temp1_input", "35000\n");
    pci_file(root, MI210, "hwmon/hwmon7/power1_input", "42000000\n");
    pci_file(root, MI210, "hwmon/hwmon7/energy1_input", "5000000000\n");

    /* card10 (after card2 numerically): busy only, an unknown vendor, an
     * empty product_name, a sleep-level clock line */
    drm_card(root, 10, IGPU);
    pci_file(root, IGPU, "vendor", "0xabcd\n");
    pci_file(root, IGPU, "device", "0x0042\n");
    pci_file(root, IGPU, "product_name", "\n");
    pci_file(root, IGPU, "gpu_busy_percent", "3\n");
    pci_file(root, IGPU, "pp_dpm_sclk", "0: 200Mhz\nS: 19MHz *\n");
    return root;
}

static int open_at(const char *root, void **state, char *reason, size_t cap) {
    struct sps__source_ctx ctx = {.root = root};
    reason[0] = '\0';
    return drm->open(&ctx, state, reason, cap);
}

static int read_at(void *state, struct sps__sample *s, int64_t now_ns, char *reason, size_t cap) {
    struct sps__source_ctx ctx = {.root = ""};
    sps__sample_clear(s);
    reason[0] = '\0';
    return drm->read(state, &ctx, s, now_ns, reason, cap);
}

#define V(s, g, metric) ((s)->gpu[g].v[SPS_M_GPU_##metric])
#define CHECK_NAN(x) CHECK_MSG(isnan(x), "%s is %g, want NAN", #x, (double)(x))

static void test_cards_and_metrics(void) {
    const char *root = fixture();
    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    CHECK_MSG(reason[0] == '\0', "no note expected, got \"%s\"", reason);
    static struct sps__sample s;
    CHECK_EQ_I(read_at(state, &s, SECOND, reason, sizeof reason), 0);
    CHECK_EQ_I(s.ngpus, 3);
    for (int g = 0; g < 3; g++) {
        CHECK_EQ_I(s.gpu[g].index, g);
        CHECK_EQ_I(s.gpu[g].source, SPS_SOURCE_DRM);
        CHECK_NAN(V(&s, g, THROTTLE_REASONS));
        CHECK_NAN(V(&s, g, WORKLOAD_MEMORY_BYTES));
    }

    CHECK_MSG(strcmp(s.gpu[0].name, "AMD GPU (card1, 1002:73bf)") == 0, "name \"%s\"", s.gpu[0].name);
    CHECK_MSG(strcmp(s.gpu[0].uuid, "6a2b1c0d9e8f7a65") == 0, "uuid \"%s\"", s.gpu[0].uuid);
    CHECK_NEAR(V(&s, 0, UTILIZATION_PERCENT), 87, 0);
    CHECK_NEAR(V(&s, 0, MEMORY_UTILIZATION_PERCENT), 41, 0);
    CHECK_NEAR(V(&s, 0, MEMORY_USED_BYTES), 8589934592.0, 0);
    CHECK_NEAR(V(&s, 0, MEMORY_TOTAL_BYTES), 17163091968.0, 0);
    CHECK_NEAR(V(&s, 0, TEMPERATURE_CELSIUS), 52.0, 1e-9); /* edge, not junction */
    CHECK_NEAR(V(&s, 0, POWER_WATTS), 150.0, 1e-9);        /* the average */
    CHECK_NAN(V(&s, 0, ENERGY_JOULES));
    CHECK_NEAR(V(&s, 0, SM_CLOCK_HERTZ), 1.8e9, 0);
    CHECK_NEAR(V(&s, 0, MEMORY_CLOCK_HERTZ), 1.0e9, 0);

    CHECK_MSG(strcmp(s.gpu[1].name, "AMD Instinct MI210") == 0, "name \"%s\"", s.gpu[1].name);
    CHECK_MSG(s.gpu[1].uuid[0] == '\0', "uuid \"%s\"", s.gpu[1].uuid);
    CHECK_NAN(V(&s, 1, UTILIZATION_PERCENT));
    CHECK_NAN(V(&s, 1, MEMORY_UTILIZATION_PERCENT));
    CHECK_NEAR(V(&s, 1, MEMORY_USED_BYTES), 1048576.0, 0);
    CHECK_NEAR(V(&s, 1, MEMORY_TOTAL_BYTES), 68702699520.0, 0);
    CHECK_NEAR(V(&s, 1, TEMPERATURE_CELSIUS), 35.0, 1e-9);
    CHECK_NEAR(V(&s, 1, POWER_WATTS), 42.0, 1e-9);
    CHECK_NEAR(V(&s, 1, ENERGY_JOULES), 0.0, 0);
    CHECK_NAN(V(&s, 1, SM_CLOCK_HERTZ));

    CHECK_MSG(strcmp(s.gpu[2].name, "GPU (card10, abcd:0042)") == 0, "name \"%s\"", s.gpu[2].name);
    CHECK_NEAR(V(&s, 2, UTILIZATION_PERCENT), 3, 0);
    CHECK_NAN(V(&s, 2, MEMORY_USED_BYTES));
    CHECK_NAN(V(&s, 2, TEMPERATURE_CELSIUS));
    CHECK_NAN(V(&s, 2, POWER_WATTS));
    CHECK_NEAR(V(&s, 2, SM_CLOCK_HERTZ), 19e6, 0);

    /* the second read sees new values; energy is a total since open, and a
     * lower counter (a GPU reset) counts from 0 */
    pci_file(root, RX6900, "gpu_busy_percent", "100\n");
    pci_file(root, RX6900, "mem_info_vram_used", "17000000000\n");
    pci_file(root, RX6900, "pp_dpm_sclk", "0: 500Mhz *\n1: 1800Mhz\n2: 2500Mhz\n");
    pci_file(root, RX6900, "hwmon/hwmon4/temp2_input", "-1500\n");
    pci_file(root, MI210, "hwmon/hwmon7/energy1_input", "5300000000\n");
    CHECK_EQ_I(read_at(state, &s, 2 * SECOND, reason, sizeof reason), 0);
    CHECK_NEAR(V(&s, 0, UTILIZATION_PERCENT), 100, 0);
    CHECK_NEAR(V(&s, 0, MEMORY_USED_BYTES), 17000000000.0, 0);
    CHECK_NEAR(V(&s, 0, SM_CLOCK_HERTZ), 500e6, 0);
    CHECK_NEAR(V(&s, 0, TEMPERATURE_CELSIUS), -1.5, 1e-9);
    CHECK_NEAR(V(&s, 1, ENERGY_JOULES), 300.0, 1e-9);
    pci_file(root, MI210, "hwmon/hwmon7/energy1_input", "1000000\n");
    CHECK_EQ_I(read_at(state, &s, 3 * SECOND, reason, sizeof reason), 0);
    CHECK_NEAR(V(&s, 1, ENERGY_JOULES), 301.0, 1e-9);
    drm->close(state);
}

/* Clock tables and values that do not parse are NAN, never 0; a file that
 * vanishes is NAN and the rest still read; with every file gone the read
 * fails. */
static void test_malformed_and_vanished(void) {
    const char *root = fixture();
    void *state = NULL;
    char reason[192];
    CHECK_EQ_I(open_at(root, &state, reason, sizeof reason), 0);
    static struct sps__sample s;

    pci_file(root, RX6900, "pp_dpm_sclk", "0: 500Mhz\n1: 1800Mhz\n"); /* no level marked */
    pci_file(root, RX6900, "pp_dpm_mclk", "1: fastMhz *\n");
    pci_file(root, RX6900, "gpu_busy_percent", "n/a\n");
    pci_file(root, RX6900, "mem_busy_percent", "-3\n");
    pci_file(root, RX6900, "hwmon/hwmon4/temp2_input", "");
    pci_file(root, MI210, "mem_info_vram_used", "12 MiB\n");
    pci_file(root, IGPU, "pp_dpm_sclk", "0: 200 furlongs *\n");
    CHECK_EQ_I(read_at(state, &s, SECOND, reason, sizeof reason), 0);
    CHECK_NAN(V(&s, 0, SM_CLOCK_HERTZ));
    CHECK_NAN(V(&s, 0, MEMORY_CLOCK_HERTZ));
    CHECK_NAN(V(&s, 0, UTILIZATION_PERCENT));
    CHECK_NAN(V(&s, 0, MEMORY_UTILIZATION_PERCENT));
    CHECK_NAN(V(&s, 0, TEMPERATURE_CELSIUS));
    CHECK_NEAR(V(&s, 0, MEMORY_USED_BYTES), 8589934592.0, 0);
    CHECK_NAN(V(&s, 1, MEMORY_USED_BYTES));
    CHECK_NAN(V(&s, 2, SM_CLOCK_HERTZ));

    /* clock lines as other kernels print them */
    pci_file(root, RX6900, "pp_dpm_sclk", "0: 500MHz\n1: 2.1GHz*\n");
    pci_file(root, RX6900, "pp_dpm_mclk", "0: 96Mhz \n1: 1000Mhz *");
    CHECK_EQ_I(read_at(state, &s, SECOND, reason, sizeof reason), 0);
    CHECK_NEAR(V(&s, 0, SM_CLOCK_HERTZ), 2.1e9, 1);
    CHECK_NEAR(V(&s, 0, MEMORY_CLOCK_HERTZ), 1.0e9, 0);

    /* the Radeon's busy file and whole hwmon chip vanish mid-run */
    pci_file(root, RX6900, "gpu_busy_percent", "50\n");
    pci_remove(root, RX6900, "gpu_busy_percent");
    pci_remove(root, RX6900, "hwmon/hwmon4/temp2_input");
    pci_remove(root, RX6900, "hwmon/hwmon4/power1_average");
    CHECK_EQ_I(read_at(state, &s, 2 * SECOND, reason, sizeof reason), 0);
    CHECK_EQ_I(s.ngpus, 3);
    CHECK_NAN(V(&s, 0, UTILIZATION_PERCENT));
    CHECK_NAN(V(&s, 0, TEMPERATURE_CELSIUS));
    CHECK_NAN(V(&s, 0, POWER_WATTS)); /* not power1_input instead: the file chosen at open is gone */
    CHECK_NEAR(V(&s, 0, MEMORY_TOTAL_BYTES), 17163091968.0, 0);
    CHECK_NEAR(V(&s, 1, POWER_WATTS), 42.0, 1e-9);

    /* every GPU unplugged: the devices are gone, the read fails */
    static const char *const files[][2] = {
        {RX6900, "mem_busy_percent"},     {RX6900, "mem_info_vram_used"},    {RX6900, "mem_info_vram_total"},
        {RX6900, "pp_dpm_sclk"},          {RX6900, "pp_dpm_mclk"},           {MI210, "mem_info_vram_used"},
        {MI210, "mem_info_vram_total"},   {MI210, "hwmon/hwmon7/temp1_input"}, {MI210, "hwmon/hwmon7/power1_input"},
        {MI210, "hwmon/hwmon7/energy1_input"}, {IGPU, "gpu_busy_percent"},  {IGPU, "pp_dpm_sclk"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        pci_remove(root, files[i][0], files[i][1]);
    CHECK(read_at(state, &s, 3 * SECOND, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "No such file or directory");
    printf("every GPU gone: %s\n", reason);
    CHECK_EQ_I(s.ngpus, 3);
    CHECK_NAN(V(&s, 1, MEMORY_USED_BYTES));
    drm->close(state);
}

/* Cards with neither gpu_busy_percent nor mem_info_vram_used (NVIDIA's
 * driver, display-only cards) do not count. */
static void test_no_gpu(void) {
    void *state = (void *)&state;
    char reason[192];
    const char *root = tmpdir_new("drm");
    CHECK(open_at(root, &state, reason, sizeof reason) < 0);
    CHECK(state == NULL);
    CHECK_MSG(strcmp(reason, "no GPU with utilisation or VRAM files under /sys/class/drm") == 0, "reason \"%s\"",
              reason);

    drm_card(root, 0, VIRTIO);
    pci_file(root, VIRTIO, "vendor", "0x1af4\n");
    drm_card(root, 1, "0000:81:00.0");
    pci_file(root, "0000:81:00.0", "vendor", "0x10de\n");
    pci_file(root, "0000:81:00.0", "device", "0x2330\n");
    /* a connector folder with a busy-looking file is not a card */
    tree_write(root, "sys/class/drm/card1-DP-1/device/gpu_busy_percent", "5\n");
    CHECK(open_at(root, &state, reason, sizeof reason) < 0);
    CHECK_STR_HAS(reason, "no GPU with utilisation or VRAM files");
}

static void test_real_machine(void) {
    void *state = NULL;
    char reason[192];
    int rc = open_at("", &state, reason, sizeof reason);
    if (rc != 0) {
        CHECK_MSG(reason[0] != '\0', "an unavailable source must say why");
        printf("drm on this machine: unavailable: %s\n", reason);
        return;
    }
    static struct sps__sample s;
    rc = read_at(state, &s, 1, reason, sizeof reason);
    CHECK_MSG(rc == 0 || reason[0] != '\0', "a failed read must say why");
    for (int g = 0; g < s.ngpus; g++)
        printf("drm on this machine: gpu %d: %s, %.0f%% busy, %.0f bytes VRAM used\n", g, s.gpu[g].name,
               V(&s, g, UTILIZATION_PERCENT), V(&s, g, MEMORY_USED_BYTES));
    drm->close(state);
}

int main(void) {
    RUN_TEST(test_cards_and_metrics);
    RUN_TEST(test_malformed_and_vanished);
    RUN_TEST(test_no_gpu);
    RUN_TEST(test_real_machine);
    return check_report();
}
