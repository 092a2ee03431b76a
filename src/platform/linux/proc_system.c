/*
 * proc_system.c - the proc source's system half: the host's CPU busy and
 * iowait shares from /proc/stat, memory and swap from /proc/meminfo, and
 * network bytes (all interfaces but lo) from /proc/net/dev.  The files stay
 * open and are re-read with pread.
 */
#include "proc_parse.h"
#include "proc_state.h"
#include "sources/sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* (Re)open a system file kept open between reads; path receives its path
 * when it is not open yet (for the caller's messages; reads of an open one
 * build no path).  -errno when absent. */
static int open_system_file(int *fd, const char *root, const char *name, char *path, size_t path_cap) {
    if (*fd >= 0)
        return 0;
    if (sps__path(path, path_cap, root, "%s", name) != 0)
        return -ENAMETOOLONG;
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    return *fd >= 0 ? 0 : -errno;
}

/* The "cpu " line of /proc/stat.  Returns 0, -errno, or -EINVAL when
 * malformed. */
static int read_cpu_times(struct proc_state *st, struct sps__proc_cpu_times *out) {
    ssize_t n = sps__pread_record(st->stat_fd, st->text, sizeof st->text);
    if (n < 0)
        return (int)n;
    return sps__proc_parse_cpu_line(st->text, out) == 0 ? 0 : -EINVAL;
}

static int read_system_cpu(struct proc_state *st, const char *root, struct sps__sample *s, char *reason, size_t cap,
                           int *failed) {
    char path[512];
    struct sps__proc_cpu_times now;
    int err = read_cpu_times(st, &now);
    if (err < 0)
        sps__path(path, sizeof path, root, "/proc/stat");
    if (err == -EINVAL) {
        set_error(reason, cap, failed, "malformed", path, "no \"cpu\" line with four or more numbers");
        return -1;
    }
    if (err < 0) {
        set_error(reason, cap, failed, "cannot read", path, strerror(-err));
        return -1;
    }
    uint64_t busy = growth(now.busy, st->cpu_busy), idle = growth(now.idle, st->cpu_idle),
             iowait = growth(now.iowait, st->cpu_iowait);
    uint64_t total = busy + idle + iowait;
    if (total > 0) {
        s->host[SPS_M_SYSTEM_CPU_PERCENT] = 100.0 * (double)busy / (double)total;
        s->host[SPS_M_SYSTEM_IOWAIT_PERCENT] = 100.0 * (double)iowait / (double)total;
    }
    st->cpu_busy = now.busy;
    st->cpu_idle = now.idle;
    st->cpu_iowait = now.iowait;
    return 0;
}


static void read_memory(struct proc_state *st, const char *root, struct sps__sample *s, char *reason, size_t cap,
                        int *failed) {
    char path[512];
    int err = open_system_file(&st->meminfo_fd, root, "/proc/meminfo", path, sizeof path);
    ssize_t n = err < 0 ? err : sps__pread_record(st->meminfo_fd, st->text, sizeof st->text);
    if (n < 0) {
        sps__path(path, sizeof path, root, "/proc/meminfo");
        char note[600];
        snprintf(note, sizeof note, "no memory readings: cannot read %s: %s", path, strerror((int)-n));
        add_note(reason, cap, note);
        return;
    }
    struct sps__proc_meminfo m;
    if (sps__proc_parse_meminfo(st->text, &m) != 0) {
        sps__path(path, sizeof path, root, "/proc/meminfo");
        set_error(reason, cap, failed, "malformed", path, "no MemTotal");
        return;
    }
    s->host[SPS_M_SYSTEM_MEMORY_TOTAL_BYTES] = (double)m.total_kb * 1024.0;
    if (m.has_available) { /* MemAvailable: Linux 3.14 and later */
        uint64_t used = m.total_kb > m.available_kb ? m.total_kb - m.available_kb : 0;
        s->host[SPS_M_SYSTEM_MEMORY_AVAILABLE_BYTES] = (double)m.available_kb * 1024.0;
        s->host[SPS_M_SYSTEM_MEMORY_USED_BYTES] = (double)used * 1024.0;
    }
    if (m.has_swap)
        s->host[SPS_M_SYSTEM_SWAP_USED_BYTES] =
            (double)(m.swap_total_kb > m.swap_free_kb ? m.swap_total_kb - m.swap_free_kb : 0) * 1024.0;
}

static struct net_iface *find_iface(struct proc_state *st, const char *name, size_t hint) {
    if (hint < st->niface && strcmp(st->ifaces[hint].name, name) == 0)
        return &st->ifaces[hint];
    for (size_t i = 0; i < st->niface; i++)
        if (strcmp(st->ifaces[i].name, name) == 0)
            return &st->ifaces[i];
    if (st->niface == st->iface_cap) {
        size_t cap = st->iface_cap ? st->iface_cap * 2 : 8;
        struct net_iface *grown = realloc(st->ifaces, cap * sizeof *grown);
        if (!grown)
            return NULL;
        st->ifaces = grown;
        st->iface_cap = cap;
    }
    struct net_iface *f = &st->ifaces[st->niface++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

/*
 * Read /proc/net/dev and add every interface's growth since the last
 * parse to the totals (all but lo).  An interface seen for the first time
 * after the baseline counts from zero; a counter that went down was reset
 * (the interface was recreated) and counts from zero again.  Returns 0,
 * -errno, or -EINVAL when malformed.
 */
static int read_net_dev(struct proc_state *st) {
    ssize_t n;
    /* a full buffer may have cut the file short: grow until it all fits */
    while ((n = sps__pread_text(st->netdev_fd, st->netdev_text, st->netdev_cap)) == (ssize_t)st->netdev_cap - 1 &&
           st->netdev_cap < NETDEV_TEXT_MAX) {
        char *grown = realloc(st->netdev_text, st->netdev_cap * 2);
        if (!grown)
            return -ENOMEM;
        st->netdev_text = grown;
        st->netdev_cap *= 2;
    }
    if (n < 0)
        return (int)n;
    if (n == (ssize_t)st->netdev_cap - 1) { /* still cut short: drop the partial last line */
        char *last = strrchr(st->netdev_text, '\n');
        if (last)
            last[1] = '\0';
    }
    /* two header lines */
    const char *line = strchr(st->netdev_text, '\n');
    line = line ? strchr(line + 1, '\n') : NULL;
    if (!line)
        return -EINVAL;
    line++;
    if (++st->net_generation == 0) /* 0 marks an interface never seen */
        st->net_generation = 1;
    unsigned generation = st->net_generation;
    size_t index = 0;
    while (*line) {
        const char *nl = strchr(line, '\n');
        char ifname[32];
        uint64_t rx, tx;
        if (sps__proc_parse_netdev_line(line, ifname, sizeof ifname, &rx, &tx) != 0)
            return -EINVAL;
        if (strcmp(ifname, "lo") != 0) {
            struct net_iface *f = find_iface(st, ifname, index);
            if (!f)
                return -ENOMEM;
            int is_new = f->seen == 0;
            if (st->net_baseline) {
                /* a new interface appeared after the baseline: all its
                 * traffic is new (the counters of a new device start at 0) */
                st->net_rx_total += is_new || rx < f->rx ? rx : rx - f->rx;
                st->net_tx_total += is_new || tx < f->tx ? tx : tx - f->tx;
            }
            f->rx = rx;
            f->tx = tx;
            f->seen = generation;
            index++;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    /* interfaces that went away: forget them, so one that comes back is new */
    size_t kept = 0;
    for (size_t i = 0; i < st->niface; i++)
        if (st->ifaces[i].seen == generation)
            st->ifaces[kept++] = st->ifaces[i];
    st->niface = kept;
    st->net_baseline = 1;
    return 0;
}

static void read_network(struct proc_state *st, const char *root, struct sps__sample *s, int64_t now_ns,
                         char *reason, size_t cap, int *failed) {
    char path[512];
    int err = open_system_file(&st->netdev_fd, root, "/proc/net/dev", path, sizeof path);
    if (err == 0)
        err = read_net_dev(st);
    if (err < 0) {
        sps__path(path, sizeof path, root, "/proc/net/dev");
        st->net_rx_rate.valid = st->net_tx_rate.valid = 0;
        if (err == -EINVAL) {
            set_error(reason, cap, failed, "malformed", path, "an interface line without its byte counters");
        } else {
            char note[600];
            snprintf(note, sizeof note, "no network readings: cannot read %s: %s", path, strerror(-err));
            add_note(reason, cap, note);
        }
        return;
    }
    s->host[SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES] = (double)st->net_rx_total;
    s->host[SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES] = (double)st->net_tx_total;
    s->host[SPS_M_SYSTEM_NETWORK_RECEIVE_BYTES_PER_SECOND] =
        rate_update(&st->net_rx_rate, (double)st->net_rx_total, now_ns);
    s->host[SPS_M_SYSTEM_NETWORK_TRANSMIT_BYTES_PER_SECOND] =
        rate_update(&st->net_tx_rate, (double)st->net_tx_total, now_ns);
}

int sps__proc_system_open(struct proc_state *st, const char *root, char *reason, size_t cap) {
    char path[512];
    int err = open_system_file(&st->stat_fd, root, "/proc/stat", path, sizeof path);
    struct sps__proc_cpu_times base;
    if (err == 0)
        err = read_cpu_times(st, &base);
    if (err < 0) {
        if (err == -EINVAL)
            snprintf(reason, cap, "malformed %s: no \"cpu\" line with four or more numbers", path);
        else
            snprintf(reason, cap, "cannot read %s: %s", path, strerror(-err));
        return -1;
    }
    /* the first read's CPU percent covers the time since open */
    st->cpu_busy = base.busy;
    st->cpu_idle = base.idle;
    st->cpu_iowait = base.iowait;

    /* network totals count from open (or, when /proc/net/dev cannot be
     * parsed now, from the first read that can) */
    if (open_system_file(&st->netdev_fd, root, "/proc/net/dev", path, sizeof path) == 0 && read_net_dev(st) != 0) {
        st->niface = 0;
        st->net_baseline = 0;
    }
    open_system_file(&st->meminfo_fd, root, "/proc/meminfo", path, sizeof path);
    open_system_file(&st->loadavg_fd, root, "/proc/loadavg", path, sizeof path);
    return 0;
}

void sps__proc_system_read(struct proc_state *st, const char *root, struct sps__sample *s, int64_t now_ns,
                           char *reason, size_t cap, int *failed) {
    read_system_cpu(st, root, s, reason, cap, failed);
    read_memory(st, root, s, reason, cap, failed);
    read_network(st, root, s, now_ns, reason, cap, failed);
}
