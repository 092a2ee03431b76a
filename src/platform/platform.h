/*
 * platform.h - the few things the core needs from the operating system
 * beyond POSIX.  One implementation per OS lives in its own folder
 * (src/platform/linux/); portable files never test the OS themselves.
 */
#ifndef SPS_PLATFORM_H
#define SPS_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* The calling thread's kernel id (what `top -H` and /proc show). */
int sps__platform_tid(void);

/* The calling process's command line, arguments separated by NUL bytes,
 * truncated to cap bytes.  Returns the number of bytes written (0 when it
 * cannot be read). */
size_t sps__platform_cmdline(char *buf, size_t cap);

/* The calling thread's name as the OS knows it ("" when unknown). */
void sps__platform_thread_name(char *buf, size_t cap);

/* Make orphaned descendants of the calling process its children, so it can
 * reap them and count their resource use.  Returns 0, or -1 where the OS
 * cannot (the caller then counts only what its children reap). */
int sps__platform_become_subreaper(void);

/* In a fork child, before exec: have the OS send sig to the calling
 * process when the thread that forked it dies (Linux's parent-death
 * signal: the thread, not the process, so fork from a thread that lives
 * as long as the child should be watched; it survives exec, except of a
 * set-user-ID program, and only this process gets it, not its own
 * children).  parent_pid is the forking process's pid, read before the
 * fork: a parent that died before the request took effect is caught by
 * comparing it with getppid().  Returns 0, 1 when the parent is already
 * gone (the caller should not go on), or -1 where the OS has no such
 * signal. */
int sps__platform_die_with_parent(int parent_pid, int sig);

/* Fork a guardian for process group pgid: a child of the caller that holds
 * no descriptor and waits, every signal blocked, for the caller's death
 * (its parent-death signal, so fork from a thread that lives as long as
 * the group should be guarded), then sends SIGTERM to the whole group and
 * exits.  For what a child's own parent-death signal misses: the group's
 * other processes (a shell script's children).  The caller stops it with
 * SIGKILL and reaps it once the group needs no guarding.  Returns the
 * guardian's pid, or -1 (fork failed, or the OS has no parent-death
 * signal: then nothing guards the group). */
int sps__platform_group_guardian(int pgid);

/* A process named so that a recycled pid does not match it: its pid and
 * its start time (in the OS's own units; 0 when unknown). */
struct sps_process_id {
    int pid;
    unsigned long long start;
};

/* The calling process's own id. */
struct sps_process_id sps__platform_self(void);

/* The calling process's ancestors, parent first, at most max; returns how
 * many (0 when they cannot be read). */
int sps__platform_ancestors(struct sps_process_id *ids, int max);

/* 1 when process id is running: its pid exists, has id's start time (a
 * recycled pid does not match) and has not exited (a zombie has). */
int sps__platform_process_running(struct sps_process_id id);

/* 1 when pid is running (it exists and has not exited: a zombie has), with
 * *age_ns how long ago it was created (to the OS's clock tick, 10 ms on
 * Linux); 0 otherwise. */
int sps__platform_running_age(int pid, uint64_t *age_ns);

/* 1 when process pid has the file at path mapped (the same device and
 * inode, or the same absolute path: overlayfs shows maps the device under
 * it), 0 when it has not or that cannot be read. */
int sps__platform_maps_file(int pid, const char *path);

/* CPUs the calling process may run on (its affinity mask, which a child
 * inherits), else the online CPUs; 0 when unknown. */
/* mkdir -p: path and its missing parents (0777 less the umask).
 * Returns 0, or -1 with errno.  Thread-safe. */
int sps__platform_mkdirs(const char *path);

int sps__platform_cpu_count(void);

/* Fault in the pages of [addr, addr+len) of a writable mapping (whole
 * pages, from the one that holds addr), as writes would, so that later
 * stores into it take no page fault; their contents stay as they are.
 * One system call where the kernel can (Linux 5.14's MADV_POPULATE_WRITE),
 * else an atomic add of 0 to a byte of each page.  Returns 0, or -1 when
 * the kernel refused (out of memory, I/O error): nothing is lost, the
 * stores then fault as usual. */
int sps__platform_prefault(void *addr, size_t len);

/* Give back to the kernel the whole pages inside [addr, addr + len) of
 * memory that will never be read again before it is freed (what they held
 * is lost: they read as zeros).  Partial pages at either end are kept.
 * Best effort; thread-safe. */
void sps__platform_release(void *addr, size_t len);

#endif /* SPS_PLATFORM_H */
