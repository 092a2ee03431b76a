/*
 * leaks_trend.c - the verdict on one memory series against its axis (the
 * step number, or time): the Theil-Sen slope, Sen's interval, the three
 * rules and the refusals to guess (see leaks.h and docs/analysis.md,
 * "Memory leaks").  leaks.c puts each series on its axis.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/leaks.h"
#include "stepscope.h"
#include "stats.h"

/* The 97.5% quantile of the standard normal: a two-sided 95% interval. */
#define Z_95 1.959963984540054

const char *sps__leak_rule_name(enum sps_leak_rule r) {
    switch (r) {
    case SPS_LEAK_RULE_INTERVAL: return "interval";
    case SPS_LEAK_RULE_GROWTH: return "growth";
    case SPS_LEAK_RULE_PERSISTENCE: return "persistence";
    case SPS_LEAK_RULE_ALL: return "all";
    default: return NULL;
    }
}

const char *sps__leak_window_name(enum sps_leak_window w) {
    switch (w) {
    case SPS_LEAK_WINDOW_ALL: return "all";
    case SPS_LEAK_WINDOW_LAST_HALF: return "last half";
    default: return NULL;
    }
}

const char *sps__leak_verdict_name(enum sps_leak_verdict v) {
    switch (v) {
    case SPS_LEAK_FOUND:
        return "leak";
    case SPS_LEAK_NONE:
        return "no leak";
    default:
        return "unknown";
    }
}

const char *sps__leak_axis_name(enum sps_leak_axis axis) {
    switch (axis) {
    case SPS_LEAK_AXIS_STEPS: return "steps";
    case SPS_LEAK_AXIS_TIME: return "time";
    default: return NULL;
    }
}

/* The median of v[0..n) without touching v; NAN when out of memory. */
static double median_of(const double *v, size_t n) {
    double *copy = malloc(n * sizeof *copy);
    if (!copy)
        return NAN;
    memcpy(copy, v, n * sizeof *copy);
    double m = sps__median_inplace(copy, n);
    free(copy);
    return m;
}

int sps__theil_sen(const double *x, const double *y, size_t n, double *slope, double *lo, double *hi) {
    *slope = *lo = *hi = NAN;
    if (n < 2)
        return -1;
    double *slopes = malloc(n * (n - 1) / 2 * sizeof *slopes);
    if (!slopes)
        return SPS_ENOMEM;
    size_t npairs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (x[j] != x[i]) /* a pair at one step says nothing about the slope */
                slopes[npairs++] = (y[j] - y[i]) / (x[j] - x[i]);
    if (npairs < 2) {
        free(slopes);
        return -1;
    }
    qsort(slopes, npairs, sizeof *slopes, sps__cmp_double);
    *slope = npairs % 2 ? slopes[npairs / 2] : 0.5 * (slopes[npairs / 2 - 1] + slopes[npairs / 2]);
    /* Sen (1968): the interval's ends are order statistics of the slopes,
     * at ranks set by Kendall's S's normal approximation.  Ranks are
     * 1-based; rounding them outwards keeps the coverage at least 95%. */
    double dn = (double)n;
    double c = Z_95 * sqrt(dn * (dn - 1) * (2 * dn + 5) / 18.0);
    double rank_lo = floor(((double)npairs - c) / 2.0);
    double rank_hi = ceil(((double)npairs + c) / 2.0) + 1.0;
    if (rank_lo < 1)
        rank_lo = 1;
    if (rank_hi > (double)npairs)
        rank_hi = (double)npairs;
    *lo = slopes[(size_t)rank_lo - 1];
    *hi = slopes[(size_t)rank_hi - 1];
    free(slopes);
    return 0;
}

/* An unjudged series: every figure unknown, the axis's bookkeeping set. */
static void reset(struct sps_leak_series *out, enum sps_leak_axis axis, const double *x, size_t n,
                  double allowance_bytes) {
    out->axis = axis;
    out->verdict = SPS_LEAK_UNKNOWN;
    out->rule = SPS_LEAK_RULE_OTHER;
    out->window = SPS_LEAK_WINDOW_ALL;
    out->window_from = NAN;
    out->points = n;
    out->steps_analysed = 0;
    out->seconds_analysed = NAN;
    out->first_at = n ? x[0] : NAN;
    out->last_at = n ? x[n - 1] : NAN;
    out->slope = out->ci95_low = out->ci95_high = NAN;
    out->growth_bytes = out->median_bytes = out->min_growth_bytes = NAN;
    out->first_segment_median_bytes = out->last_segment_median_bytes = NAN;
    out->rising_segments = -1;
    out->allowance_bytes = allowance_bytes;
}

/* "only 6 readings" / "only 1 reading" / "no readings" */
static void count_readings(char *buf, size_t len, size_t n) {
    if (n == 0)
        snprintf(buf, len, "no readings");
    else
        snprintf(buf, len, "only %zu reading%s", n, n == 1 ? "" : "s");
}

/*
 * Persistence: cut the readings into consecutive segments and count the
 * transitions where a segment's median sits above the previous one's by a
 * fair share of what the trend predicts between them.  A steady leak
 * passes every one; a sawtooth (each segment holds whole teeth), a plateau
 * (the later segments are level) or a one-off allocation (one transition
 * holds the jump) fails most of them, although Theil-Sen alone can give
 * each of those a positive slope.  Returns the count, or -1 when out of
 * memory.
 */
static int rising_segments(const double *x, const double *y, size_t n, double slope, double *first_median,
                           double *last_median) {
    double seg_x[SPS_LEAK_SEGMENTS], seg_y[SPS_LEAK_SEGMENTS];
    double *buf = malloc(n * sizeof *buf);
    if (!buf)
        return -1;
    for (int s = 0; s < SPS_LEAK_SEGMENTS; s++) {
        size_t from = n * (size_t)s / SPS_LEAK_SEGMENTS, to = n * (size_t)(s + 1) / SPS_LEAK_SEGMENTS;
        memcpy(buf, x + from, (to - from) * sizeof *buf);
        seg_x[s] = sps__median_inplace(buf, to - from);
        memcpy(buf, y + from, (to - from) * sizeof *buf);
        seg_y[s] = sps__median_inplace(buf, to - from);
    }
    free(buf);
    *first_median = seg_y[0];
    *last_median = seg_y[SPS_LEAK_SEGMENTS - 1];
    int rising = 0;
    for (int s = 0; s + 1 < SPS_LEAK_SEGMENTS; s++) {
        double predicted = slope * (seg_x[s + 1] - seg_x[s]);
        if (predicted > 0 && seg_y[s + 1] - seg_y[s] >= SPS_LEAK_SEGMENT_RISE * predicted)
            rising++;
    }
    return rising;
}

/*
 * The trend and the three rules over n readings (enough of them, already
 * checked) spanning `span` units of the axis (steps or seconds).  unit
 * ("step" or "s") and span_words ("the 50 steps", "the 3.2 s") word the
 * reasons.
 */
static int judge_trend(const double *x, const double *y, size_t n, double span, const char *unit,
                       const char *span_words, struct sps_leak_series *out) {
    out->median_bytes = median_of(y, n);
    if (isnan(out->median_bytes))
        return SPS_ENOMEM;
    int rc = sps__theil_sen(x, y, n, &out->slope, &out->ci95_low, &out->ci95_high);
    if (rc == SPS_ENOMEM)
        return rc;
    if (rc != 0) {
        snprintf(out->reason, sizeof out->reason,
                 out->axis == SPS_LEAK_AXIS_STEPS ? "the readings all fall within one step: no trend against steps"
                                                  : "the readings all fall at one time: no trend against time");
        return 0;
    }
    out->growth_bytes = out->slope * span;
    double fraction = SPS_LEAK_MIN_GROWTH_FRACTION * fabs(out->median_bytes);
    out->min_growth_bytes =
        (fraction > SPS_LEAK_MIN_GROWTH_BYTES ? fraction : SPS_LEAK_MIN_GROWTH_BYTES) + out->allowance_bytes;
    int rising = rising_segments(x, y, n, out->slope, &out->first_segment_median_bytes,
                                 &out->last_segment_median_bytes);
    if (rising < 0)
        return SPS_ENOMEM;
    out->rising_segments = rising;

    if (!(out->ci95_low > 0)) {
        out->verdict = SPS_LEAK_NONE;
        out->rule = SPS_LEAK_RULE_INTERVAL;
        snprintf(out->reason, sizeof out->reason,
                 "the slope's 95%% interval (%.4g to %.4g bytes/%s) does not exclude no growth", out->ci95_low,
                 out->ci95_high, unit);
    } else if (out->growth_bytes < out->min_growth_bytes) {
        out->verdict = SPS_LEAK_NONE;
        out->rule = SPS_LEAK_RULE_GROWTH;
        /* a series that holds none of stepscope's bytes (a GPU's, torch's)
         * has no allowance to speak of */
        char rings[64] = "";
        if (out->allowance_bytes > 0)
            snprintf(rings, sizeof rings, ", plus %.4g bytes of stepscope's own rings", out->allowance_bytes);
        snprintf(out->reason, sizeof out->reason,
                 "growth over %s (%.4g bytes) is under the %.4g bytes that matter (the larger of 1 MiB "
                 "and 1%% of the median level%s)",
                 span_words, out->growth_bytes, out->min_growth_bytes, rings);
    } else if (rising < SPS_LEAK_SEGMENTS - 1) {
        out->verdict = SPS_LEAK_NONE;
        out->rule = SPS_LEAK_RULE_PERSISTENCE;
        snprintf(out->reason, sizeof out->reason,
                 "the rise does not persist: %d of %d segments rise with the trend (a sawtooth, a plateau or a "
                 "one-off allocation)",
                 rising, SPS_LEAK_SEGMENTS - 1);
    } else {
        out->verdict = SPS_LEAK_FOUND;
        out->rule = SPS_LEAK_RULE_ALL;
        snprintf(out->reason, sizeof out->reason,
                 "grows %.4g bytes/%s (95%% CI %.4g to %.4g) over %s, every one of %d segments higher "
                 "than the last",
                 out->slope, unit, out->ci95_low, out->ci95_high, span_words, SPS_LEAK_SEGMENTS);
    }
    return 0;
}

/* The first of x[0..n) (ascending) at or after from. */
static size_t first_from(const double *x, size_t n, double from) {
    size_t k = 0;
    while (k < n && x[k] < from)
        k++;
    return k;
}

/* The highest median of the readings before the window (y[0..k)), cut
 * into stretches of `len` readings as the window's segments are; NAN when
 * out of memory or there are none. */
static double first_half_high(const double *y, size_t k, size_t len) {
    if (k == 0 || len == 0)
        return NAN;
    double *buf = malloc(len * sizeof *buf);
    if (!buf)
        return NAN;
    double high = -INFINITY;
    for (size_t from = 0; from < k; from += len) {
        size_t m = k - from < len ? k - from : len;
        memcpy(buf, y + from, m * sizeof *buf);
        double med = sps__median_inplace(buf, m);
        if (med > high)
            high = med;
    }
    free(buf);
    return high;
}

/*
 * A leak that starts mid-run (evaluation begins, a list starts keeping
 * tensors with their graph): the whole run's segments do not all rise, so
 * the whole is no leak.  The window [from, end] (its last half, `span`
 * units long, readings x[k..n)) judged by the same rules, with the same
 * allowance, is adopted into *out when it leaks and its last segment ends
 * above every stretch before it by SPS_LEAK_LATE_ABOVE of its growth: a
 * sawtooth or a level that only returns to where it was does not.
 * *late arrives reset, its window's span set.  Returns 0 or SPS_ENOMEM.
 */
static int adopt_last_half(const double *x, const double *y, size_t n, size_t k, double from, double span,
                           const char *unit, const char *span_words, struct sps_leak_series *late,
                           struct sps_leak_series *out) {
    int rc = judge_trend(x + k, y + k, n - k, span, unit, span_words, late);
    if (rc != 0 || late->verdict != SPS_LEAK_FOUND)
        return rc;
    double high = first_half_high(y, k, (n - k) / SPS_LEAK_SEGMENTS);
    if (isnan(high))
        return k ? SPS_ENOMEM : 0;
    if (!(late->last_segment_median_bytes - high >= SPS_LEAK_LATE_ABOVE * late->growth_bytes))
        return 0;
    const char *whole = sps__leak_rule_name(out->rule);
    late->window = SPS_LEAK_WINDOW_LAST_HALF;
    late->window_from = from;
    char since[48];
    if (late->axis == SPS_LEAK_AXIS_STEPS)
        snprintf(since, sizeof since, "step %.0f", from);
    else
        snprintf(since, sizeof since, "%.4g s", from);
    snprintf(late->reason, sizeof late->reason,
             "grows %.4g bytes/%s (95%% CI %.4g to %.4g) since %s, over %s (the run's last half): every one of %d "
             "segments higher than the last, the end above the first half (the whole run: rule %s)",
             late->slope, unit, late->ci95_low, late->ci95_high, since, span_words, SPS_LEAK_SEGMENTS,
             whole ? whole : "none");
    *out = *late;
    return 0;
}

/* On steps: the last steps_analysed / 2 steps, up to the last reading,
 * when the whole run is no leak and the half has enough of both. */
static int judge_last_half_steps(const double *x, const double *y, size_t n, size_t steps_analysed,
                                 struct sps_leak_series *out) {
    size_t half = steps_analysed / 2;
    if (out->verdict != SPS_LEAK_NONE || half < SPS_LEAK_MIN_STEPS || n == 0)
        return 0;
    double from = x[n - 1] - (double)half;
    size_t k = first_from(x, n, from);
    if (n - k < SPS_LEAK_MIN_POINTS)
        return 0;
    struct sps_leak_series late = *out;
    reset(&late, SPS_LEAK_AXIS_STEPS, x + k, n - k, out->allowance_bytes);
    late.steps_analysed = half;
    char span_words[48];
    snprintf(span_words, sizeof span_words, "the last %zu steps", half);
    return adopt_last_half(x, y, n, k, from, (double)half, "step", span_words, &late, out);
}

int sps__leak_judge(const double *x, const double *y, size_t n, size_t steps_analysed, double allowance_bytes,
                    struct sps_leak_series *out) {
    reset(out, SPS_LEAK_AXIS_STEPS, x, n, allowance_bytes);
    out->steps_analysed = steps_analysed;
    if (steps_analysed < SPS_LEAK_MIN_STEPS) {
        snprintf(out->reason, sizeof out->reason, "only %zu steps after warm-up (the trend needs %d)", steps_analysed,
                 SPS_LEAK_MIN_STEPS);
        return 0;
    }
    if (n < SPS_LEAK_MIN_POINTS) {
        char readings[40];
        count_readings(readings, sizeof readings, n);
        snprintf(out->reason, sizeof out->reason,
                 "%s during the %zu steps after warm-up (the trend needs %d): a longer run, or a "
                 "shorter sampling interval, gives enough",
                 readings, steps_analysed, SPS_LEAK_MIN_POINTS);
        return 0;
    }
    char span_words[48];
    snprintf(span_words, sizeof span_words, "the %zu steps", steps_analysed);
    int rc = judge_trend(x, y, n, (double)steps_analysed, "step", span_words, out);
    return rc != 0 ? rc : judge_last_half_steps(x, y, n, steps_analysed, out);
}

/* The longest stretch of [from, to] with no reading in it. */
static double longest_gap(const double *x, size_t n, double from, double to) {
    if (n == 0)
        return to - from;
    double gap = x[0] - from;
    for (size_t i = 1; i < n; i++)
        if (x[i] - x[i - 1] > gap)
            gap = x[i] - x[i - 1];
    return to - x[n - 1] > gap ? to - x[n - 1] : gap;
}

/* On time: the last half of [from_s, to_s], when the whole is no leak and
 * the half has enough seconds and readings, and no hole. */
static int judge_last_half_time(const double *x, const double *y, size_t n, double from_s, double to_s,
                                struct sps_leak_series *out) {
    double half = 0.5 * (to_s - from_s), from = to_s - half;
    if (out->verdict != SPS_LEAK_NONE || half < SPS_LEAK_TIME_MIN_SECONDS)
        return 0;
    size_t k = first_from(x, n, from);
    if (n - k < SPS_LEAK_TIME_MIN_POINTS || longest_gap(x + k, n - k, from, to_s) > SPS_LEAK_TIME_MAX_GAP_FRACTION * half)
        return 0;
    struct sps_leak_series late = *out;
    reset(&late, SPS_LEAK_AXIS_TIME, x + k, n - k, out->allowance_bytes);
    late.seconds_analysed = half;
    char span_words[48];
    snprintf(span_words, sizeof span_words, "the last %.3g s", half);
    return adopt_last_half(x, y, n, k, from, half, "s", span_words, &late, out);
}

int sps__leak_judge_time(const double *x, const double *y, size_t n, double from_s, double to_s,
                         double allowance_bytes, struct sps_leak_series *out) {
    reset(out, SPS_LEAK_AXIS_TIME, x, n, allowance_bytes);
    double seconds = to_s > from_s ? to_s - from_s : 0.0;
    out->seconds_analysed = seconds;
    if (seconds < SPS_LEAK_TIME_MIN_SECONDS) {
        snprintf(out->reason, sizeof out->reason,
                 "only %.3g s after warm-up (the trend needs %g s): a longer run gives enough", seconds,
                 SPS_LEAK_TIME_MIN_SECONDS);
        return 0;
    }
    if (n < SPS_LEAK_TIME_MIN_POINTS) {
        char readings[40];
        count_readings(readings, sizeof readings, n);
        snprintf(out->reason, sizeof out->reason,
                 "%s during the %.3g s after warm-up (the trend needs %d): a longer run, or a shorter "
                 "sampling interval, gives enough",
                 readings, seconds, SPS_LEAK_TIME_MIN_POINTS);
        return 0;
    }
    /* A hole in the readings (the sampler held off a busy machine's CPUs,
     * or a series read rarely) leaves a stretch whose memory is a guess:
     * the trend across it is not asked for. */
    double gap = longest_gap(x, n, from_s, to_s);
    if (gap > SPS_LEAK_TIME_MAX_GAP_FRACTION * seconds) {
        snprintf(out->reason, sizeof out->reason,
                 "the readings leave %.3g s of the %.3g s after warm-up unread (at most %g%% may be): the sampler "
                 "was held off",
                 gap, seconds, 100.0 * SPS_LEAK_TIME_MAX_GAP_FRACTION);
        return 0;
    }
    char span_words[48];
    snprintf(span_words, sizeof span_words, "the %.3g s", seconds);
    int rc = judge_trend(x, y, n, seconds, "s", span_words, out);
    return rc != 0 ? rc : judge_last_half_time(x, y, n, from_s, to_s, out);
}
