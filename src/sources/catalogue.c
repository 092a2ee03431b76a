/* catalogue.c - the metric catalogue's rows (stepscope.h holds the table). */
#include "stepscope.h"

#define ROW(id, name_, unit_, source_, kind_, cadence_, what_)                                                   \
    [SPS_M_##id] = {.name = name_, .unit = unit_, .source = source_, .kind = kind_, .cadence = cadence_,        \
                    .description = what_},

static const struct sps_metric_info host_rows[SPS_HOST_METRIC_COUNT] = {SPS_HOST_METRICS(ROW)};
static const struct sps_metric_info gpu_rows[SPS_GPU_METRIC_COUNT] = {SPS_GPU_METRICS(ROW)};

const struct sps_metric_info *sps_host_metric_info(int id) {
    return id >= 0 && id < SPS_HOST_METRIC_COUNT ? &host_rows[id] : NULL;
}

const struct sps_metric_info *sps_gpu_metric_info(int id) {
    return id >= 0 && id < SPS_GPU_METRIC_COUNT ? &gpu_rows[id] : NULL;
}
