/*
 * proc_parse.c - the /proc file parsers of the proc source (proc_parse.h):
 * text in, numbers out, no state.
 */
#include "proc_parse.h"

#include <string.h>

static const char *skip_blanks(const char *p) {
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* An unsigned decimal at *p (after blanks); advances *p past it.  Returns
 * 0, or -1 when there are no digits. */
static int take_u64(const char **p, uint64_t *out) {
    const char *q = skip_blanks(*p);
    if (*q < '0' || *q > '9')
        return -1;
    uint64_t v = 0;
    while (*q >= '0' && *q <= '9')
        v = v * 10 + (uint64_t)(*q++ - '0');
    *p = q;
    *out = v;
    return 0;
}

/* Skip one space-separated field (which may be negative or not a number). */
static int skip_field(const char **p) {
    const char *q = skip_blanks(*p);
    if (*q == '\0' || *q == '\n')
        return -1;
    while (*q && *q != ' ' && *q != '\t' && *q != '\n')
        q++;
    *p = q;
    return 0;
}

unsigned sps__proc_parse_keyed(const char *text, const char *const *keys, int nkeys, uint64_t *vals) {
    unsigned found = 0, all = (1u << nkeys) - 1;
    for (const char *line = text; *line && found != all;) {
        for (int i = 0; i < nkeys; i++) {
            size_t len = strlen(keys[i]);
            if (!(found & (1u << i)) && strncmp(line, keys[i], len) == 0) {
                const char *p = line + len;
                if (take_u64(&p, &vals[i]) == 0)
                    found |= 1u << i;
                break;
            }
        }
        const char *nl = strchr(line, '\n');
        if (!nl)
            break;
        line = nl + 1;
    }
    return found;
}

int sps__proc_parse_cpu_line(const char *text, struct sps__proc_cpu_times *out) {
    if (strncmp(text, "cpu ", 4) != 0)
        return -1;
    /* user nice system idle iowait irq softirq steal (guest, guest_nice
     * are already inside user and nice); older kernels stop earlier */
    uint64_t f[8] = {0};
    const char *p = text + 4;
    int nfields = 0;
    while (nfields < 8 && take_u64(&p, &f[nfields]) == 0)
        nfields++;
    if (nfields < 4)
        return -1;
    out->busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    out->idle = f[3];
    out->iowait = f[4];
    return 0;
}

int sps__proc_parse_meminfo(const char *text, struct sps__proc_meminfo *out) {
    static const char *const keys[] = {"MemTotal:", "MemAvailable:", "SwapTotal:", "SwapFree:"};
    uint64_t kb[4] = {0};
    unsigned found = sps__proc_parse_keyed(text, keys, 4, kb);
    out->total_kb = kb[0];
    out->available_kb = kb[1];
    out->swap_total_kb = kb[2];
    out->swap_free_kb = kb[3];
    out->has_total = (found & 1) != 0;
    out->has_available = (found & 2) != 0;
    out->has_swap = (found & 12) == 12;
    return out->has_total ? 0 : -1;
}

int sps__proc_parse_netdev_line(const char *line, char *name, size_t cap, uint64_t *rx, uint64_t *tx) {
    const char *colon = strchr(line, ':'), *nl = strchr(line, '\n');
    if (!colon || (nl && colon > nl))
        return -1;
    const char *start = skip_blanks(line);
    size_t len = (size_t)(colon - start);
    if (len == 0 || len >= cap)
        return -1;
    const char *p = colon + 1;
    uint64_t rx_bytes, tx_bytes, skipped;
    if (take_u64(&p, &rx_bytes) != 0)
        return -1;
    for (int i = 0; i < 7; i++) /* packets errs drop fifo frame compressed multicast */
        if (take_u64(&p, &skipped) != 0)
            return -1;
    if (take_u64(&p, &tx_bytes) != 0)
        return -1;
    memcpy(name, start, len);
    name[len] = '\0';
    *rx = rx_bytes;
    *tx = tx_bytes;
    return 0;
}

int sps__proc_parse_pid_stat(const char *text, struct sps__proc_pid_stat *out) {
    const char *p = strrchr(text, ')');
    if (!p)
        return -1;
    p++;
    uint64_t ppid, utime, stime, start;
    if (skip_field(&p) != 0 || take_u64(&p, &ppid) != 0) /* state, ppid */
        return -1;
    for (int i = 0; i < 9; i++) /* pgrp .. cmajflt */
        if (skip_field(&p) != 0)
            return -1;
    if (take_u64(&p, &utime) != 0 || take_u64(&p, &stime) != 0)
        return -1;
    for (int i = 0; i < 6; i++) /* cutime .. itrealvalue */
        if (skip_field(&p) != 0)
            return -1;
    if (take_u64(&p, &start) != 0 || ppid > 0x7fffffff)
        return -1;
    out->ppid = (int)ppid;
    out->cpu_ticks = utime + stime;
    out->start_ticks = start;
    return 0;
}

int sps__proc_parse_statm_resident(const char *text, uint64_t *pages) {
    const char *p = text;
    uint64_t size, resident;
    if (take_u64(&p, &size) != 0 || take_u64(&p, &resident) != 0)
        return -1;
    *pages = resident;
    return 0;
}

/* The "Name:" line into out (cut to cap - 1 bytes); 0, or -1 (out
 * untouched) when there is none. */
static int parse_status_name(const char *text, char *out, size_t cap) {
    for (const char *line = text; *line;) {
        if (strncmp(line, "Name:", 5) == 0) {
            const char *p = skip_blanks(line + 5);
            size_t len = strcspn(p, "\n");
            if (len >= cap)
                len = cap - 1;
            memcpy(out, p, len);
            out[len] = '\0';
            return 0;
        }
        const char *nl = strchr(line, '\n');
        if (!nl)
            break;
        line = nl + 1;
    }
    return -1;
}

void sps__proc_parse_status(const char *text, struct sps__proc_status *out) {
    memset(out, 0, sizeof *out);
    out->has_name = parse_status_name(text, out->name, sizeof out->name) == 0;
    static const char *const keys[] = {"VmRSS:", "VmHWM:", "Threads:"};
    uint64_t v[3] = {0};
    unsigned found = sps__proc_parse_keyed(text, keys, 3, v);
    out->rss_kb = v[0];
    out->hwm_kb = v[1];
    out->threads = v[2];
    out->has_rss = (found & 1) != 0;
    out->has_hwm = (found & 2) != 0;
    out->has_threads = (found & 4) != 0;
}

int sps__proc_parse_io(const char *text, uint64_t *read_bytes, uint64_t *write_bytes) {
    static const char *const keys[] = {"read_bytes:", "write_bytes:"};
    uint64_t v[2];
    if (sps__proc_parse_keyed(text, keys, 2, v) != 3)
        return -1;
    *read_bytes = v[0];
    *write_bytes = v[1];
    return 0;
}

int sps__proc_parse_smaps_rollup(const char *text, uint64_t *pss_bytes, uint64_t *uss_bytes) {
    static const char *const keys[] = {"Pss:", "Private_Clean:", "Private_Dirty:"};
    uint64_t kb[3];
    if (sps__proc_parse_keyed(text, keys, 3, kb) != 7)
        return -1;
    *pss_bytes = kb[0] * 1024;
    *uss_bytes = (kb[1] + kb[2]) * 1024;
    return 0;
}

int64_t sps__proc_parse_last_pid(const char *loadavg) {
    const char *p = strrchr(loadavg, ' ');
    uint64_t pid;
    if (!p || take_u64(&p, &pid) != 0 || pid > 0x7fffffff)
        return -1;
    return (int64_t)pid;
}
