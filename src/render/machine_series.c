/* machine_series.c - the sampler's series as report.json lists them (see machine_series.h). */
#include "render/machine_series.h"

size_t sps__machine_series_list(const struct sps__sampler_result *r, struct sps__machine_series *out) {
    size_t n = 0;
    if (!r)
        return 0;
    for (int i = 0; i < SPS_HOST_METRIC_COUNT; i++) {
        if (!r->host[i].count)
            continue;
        const struct sps_metric_info *m = sps_host_metric_info(i);
        out[n++] = (struct sps__machine_series){
            .metric = m->name,
            .unit = m->unit,
            .gpu = -1,
            .interval_ms = m->cadence == SPS_EVERY_INTERVAL ? r->interval_ms : r->machine_interval_ms,
            .s = &r->host[i],
        };
    }
    for (int g = 0; g < r->ngpus && g < SPS_CAPTURE_MAX_GPUS; g++)
        for (int i = 0; i < SPS_GPU_METRIC_COUNT; i++) {
            if (!r->gpu[g].m[i].count)
                continue;
            const struct sps_metric_info *m = sps_gpu_metric_info(i);
            out[n++] = (struct sps__machine_series){
                .metric = m->name,
                .unit = m->unit,
                .gpu = r->gpu[g].index,
                .interval_ms = r->machine_interval_ms,
                .s = &r->gpu[g].m[i],
            };
        }
    for (int k = 0; k < r->nsensors && k < SPS_CAPTURE_MAX_SENSORS; k++) {
        if (!r->sensor[k].celsius.count)
            continue;
        out[n++] = (struct sps__machine_series){
            .metric = "sensor_temperature_celsius",
            .unit = "celsius",
            .gpu = -1,
            .sensor = r->sensor[k].label,
            .interval_ms = r->machine_interval_ms,
            .s = &r->sensor[k].celsius,
        };
    }
    return n;
}

int64_t sps__report_origin_ns(const struct sps_report *rep) {
    if (rep->run.start_ns)
        return (int64_t)rep->run.start_ns;
    return rep->info.sampler ? rep->info.sampler->started_ns : 0;
}
