/* visible_devices.c - CUDA_VISIBLE_DEVICES, as CUDA reads it (see visible_devices.h). */
#include "gpu/visible_devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int all_digits(const char *s, size_t len) {
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

void sps__visible_devices_parse(const char *value, struct sps__visible_devices *out) {
    memset(out, 0, sizeof *out);
    if (!value) {
        out->all = 1;
        return;
    }
    const char *p = value;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *start = p, *end = comma ? comma : p + strlen(p);
        while (start < end && is_space(*start))
            start++;
        while (end > start && is_space(end[-1]))
            end--;
        size_t len = (size_t)(end - start);

        if (out->count == SPS__VISIBLE_MAX_ENTRIES) {
            snprintf(out->note, sizeof out->note, "CUDA_VISIBLE_DEVICES lists more than %d entries; the rest are ignored",
                     SPS__VISIBLE_MAX_ENTRIES);
            return;
        }
        struct sps__gpu_selector *sel = &out->entry[out->count];
        snprintf(sel->text, sizeof sel->text, "%.*s", (int)len, start);
        if (all_digits(start, len)) {
            /* an index too large to be a GPU's ends the list like any
             * other index no GPU has: keep it and let resolve say so */
            unsigned long v = len > 9 ? 999999999UL : strtoul(sel->text, NULL, 10);
            sel->kind = SPS__SELECT_INDEX;
            sel->index = (unsigned)v;
        } else if (len > 4 && strncasecmp(start, "GPU-", 4) == 0) {
            sel->kind = SPS__SELECT_UUID;
        } else if (len > 4 && strncasecmp(start, "MIG-", 4) == 0) {
            /* CUDA would show the workload one MIG instance; we read whole
             * GPUs only, so the list stops here (resolve explains) */
            sel->kind = SPS__SELECT_UNSUPPORTED;
            out->count++;
            return;
        } else {
            if (len == 0 && out->count == 0 && !comma)
                snprintf(out->note, sizeof out->note, "CUDA_VISIBLE_DEVICES is empty: no GPU is visible");
            else
                snprintf(out->note, sizeof out->note,
                         "CUDA_VISIBLE_DEVICES entry %d \"%.40s\" is not a GPU index or UUID; the list ends there",
                         out->count, sel->text);
            memset(sel, 0, sizeof *sel);
            return;
        }
        out->count++;
        if (!comma)
            return;
        p = comma + 1;
    }
}

/* Position in found[] of the one GPU whose UUID starts with prefix; -1 for
 * none, -2 for several.  CUDA compares UUIDs without regard to case. */
static int find_uuid(const struct sps__gpu_identity *found, int n, const char *prefix) {
    size_t len = strlen(prefix);
    int match = -1;
    for (int i = 0; i < n; i++) {
        if (!found[i].uuid || strncasecmp(found[i].uuid, prefix, len) != 0)
            continue;
        if (match >= 0)
            return -2;
        match = i;
    }
    return match;
}

int sps__visible_devices_resolve(const struct sps__visible_devices *vd, const struct sps__gpu_identity *found, int n,
                                 int *position, int cap, char *note, size_t note_cap) {
    char sink[8];
    if (!note || note_cap == 0) {
        note = sink;
        note_cap = sizeof sink;
    }
    note[0] = '\0';
    int count = 0;
    if (vd->all) {
        for (int i = 0; i < n && count < cap; i++)
            position[count++] = i;
        return count;
    }
    for (int e = 0; e < vd->count; e++) {
        const struct sps__gpu_selector *sel = &vd->entry[e];
        int at = -1;
        if (sel->kind == SPS__SELECT_UNSUPPORTED) {
            snprintf(note, note_cap, "CUDA_VISIBLE_DEVICES entry %d \"%.40s\" is a MIG instance (not supported); "
                     "the list ends there", e, sel->text);
            return count;
        }
        if (sel->kind == SPS__SELECT_INDEX) {
            for (int i = 0; i < n; i++)
                if (found[i].index >= 0 && (unsigned)found[i].index == sel->index)
                    at = i;
            if (at < 0) {
                snprintf(note, note_cap, "CUDA_VISIBLE_DEVICES entry %d: no GPU has index %.40s; the list ends there",
                         e, sel->text);
                return count;
            }
        } else {
            at = find_uuid(found, n, sel->text);
            if (at < 0) {
                snprintf(note, note_cap, "CUDA_VISIBLE_DEVICES entry %d \"%.40s\" matches %s GPU; the list ends there",
                         e, sel->text, at == -1 ? "no" : "more than one");
                return count;
            }
        }
        for (int k = 0; k < count; k++)
            if (position[k] == at) {
                snprintf(note, note_cap, "CUDA_VISIBLE_DEVICES entry %d \"%.40s\" names a GPU already listed; "
                         "the list ends there", e, sel->text);
                return count;
            }
        if (count == cap) {
            snprintf(note, note_cap, "more than %d GPUs visible; the rest are not read", cap);
            return count;
        }
        position[count++] = at;
    }
    snprintf(note, note_cap, "%s", vd->note);
    return count;
}
