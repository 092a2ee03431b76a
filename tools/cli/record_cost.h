/*
 * record_cost.h - what one zone and one value cost the workload on this
 * machine, measured, so the report can say what recording cost.
 */
#ifndef SPS_CLI_RECORD_COST_H
#define SPS_CLI_RECORD_COST_H

/*
 * Time zone begin+end pairs and value records in a short-lived child
 * process (so stepscope's own process never records, and the child
 * records into memory, not into the run), taking the fastest of a few
 * repeats: the cost a warmed-up call site pays, timestamps included;
 * and of a zone the overhead guard's thin level leaves out.
 * *end_ns: the recorder's own samples of a zone end's bookkeeping
 * (record_format.h, end_samples) in that warm loop (0: none taken), to
 * compare with the run's.
 * About 10 ms of CPU.  Returns 0 with *zone_ns and *value_ns set, or -1 when the
 * child could not run (the report then says the cost was not measured).
 * Call with no other thread of the caller running.
 */
int sps_measure_record_cost(double *zone_ns, double *value_ns, double *thinned_zone_ns, double *end_ns);

#endif /* SPS_CLI_RECORD_COST_H */
