/*
 * render_ranks.c - the words for each rank's phases in a comparison
 * (see render.h): which of a rank's phase and wait changes stand out, and
 * the one line a rank gets in the text and Markdown forms.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compare/render.h"
#include "render/render.h"

/* With one run a side no verdict of slower or faster exists (how runs
 * differ is unknown); a change still clears the runs' own drift after the
 * adjustment for ranks x phases, and that is worth naming as such.  As
 * sps__compare_decide judges it, less the 3 runs. */
static int beyond_drift(const struct sps_compare_params *p, const struct sps_comparison *c) {
    if (c->verdict != SPS_VERDICT_INCONCLUSIVE || c->runs_base + c->runs_new >= 3 || !(c->p < p->alpha) ||
        c->noise_used == SPS_NOISE_NONE)
        return 0;
    int known = isfinite(c->ratio_lo) && isfinite(c->ratio_hi);
    int zero_base = !isfinite(c->ratio) && !(c->median_base > 0) && c->median_new > 0;
    return zero_base || (known && (c->ratio_lo > 1 + p->threshold || c->ratio_hi < 1 - p->threshold));
}

enum sps_cmp_standing sps__cmp_phase_standing(const struct sps_compare_params *p, const struct sps_cmp_row *phase) {
    if (phase->c.verdict == SPS_VERDICT_SLOWER || phase->c.verdict == SPS_VERDICT_FASTER)
        return SPS_CMP_CONCLUSIVE;
    return beyond_drift(p, &phase->c) ? SPS_CMP_BEYOND_DRIFT : SPS_CMP_UNREMARKABLE;
}

static void seconds(double s, char *buf, size_t len) {
    if (!isfinite(s))
        snprintf(buf, len, "-");
    else if (s == 0)
        snprintf(buf, len, "0");
    else
        sps__fmt_seconds(s, buf, len);
}

/* "data 114 us -> 21.0 ms +18321% slower" */
static int phase_words(const struct sps_cmp_row *ph, enum sps_cmp_standing st, int markdown, char *buf, size_t len) {
    char b[32], n[32], change[32], name[160];
    seconds(ph->c.median_base, b, sizeof b);
    seconds(ph->c.median_new, n, sizeof n);
    if (isfinite(ph->c.ratio))
        snprintf(change, sizeof change, " %+.0f%%", (ph->c.ratio - 1) * 100);
    else
        change[0] = '\0';
    size_t o = 0;
    for (const char *s = ph->name; *s && o + 3 < sizeof name; s++) {
        if (markdown && strchr("|*_`<>[]\\", *s))
            name[o++] = '\\';
        name[o++] = *s;
    }
    name[o] = '\0';
    const char *word = st == SPS_CMP_BEYOND_DRIFT                 ? "beyond drift"
                       : ph->c.verdict == SPS_VERDICT_SLOWER ? "slower"
                                                                  : "faster";
    return snprintf(buf, len, "%s %s -> %s%s %s%s%s", name, b, n, change, markdown ? "**" : "", word,
                    markdown ? "**" : "");
}

size_t sps__cmp_rank_line(const struct sps_compare_params *p, const struct sps_cmp_row *rank, int markdown,
                          char *buf, size_t len) {
    buf[0] = '\0';
    if (rank->presence != SPS_CMP_BOTH) {
        snprintf(buf, len, "not in %s", rank->presence == SPS_CMP_BASE_ONLY ? "new" : "base");
        return 0;
    }
    size_t used = 0, named = 0, more = 0;
    for (size_t i = 0; i < rank->nphases; i++) {
        enum sps_cmp_standing st = sps__cmp_phase_standing(p, &rank->phases[i]);
        if (st == SPS_CMP_UNREMARKABLE)
            continue;
        if (named == SPS_CMP_RANK_CHANGES_SHOWN) {
            more++;
            continue;
        }
        char words[256];
        phase_words(&rank->phases[i], st, markdown, words, sizeof words);
        int w = snprintf(buf + used, len - used, "%s%s", named ? "; " : "", words);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
        named++;
    }
    if (more && used < len)
        snprintf(buf + used, len - used, "; %zu more", more);
    if (!named)
        snprintf(buf, len, "no phase or wait changed conclusively");
    return named + more;
}
