/*
 * atomic_file.h - the one way stepscope writes an output file: nothing
 * half-written is ever seen under the file's name, nothing is written
 * through a link somebody planted, and a writer killed half-way leaves
 * nothing behind.
 *
 *   open:   an anonymous temporary in the target's directory (O_TMPFILE:
 *           no name, so a kill, even SIGKILL, leaves nothing), mode 0644
 *           less the umask.  Where the filesystem or kernel has no
 *           O_TMPFILE (EOPNOTSUPP, EISDIR, EINVAL...), or /proc is not
 *           mounted, a named one beside the target instead,
 *           ".NAME.tmp-XXXXXXXXXXXX" with an unpredictable suffix, created
 *           exclusively (O_CREAT|O_EXCL|O_NOFOLLOW: an existing file or
 *           symlink of that name is never opened, a fresh name is drawn).
 *           Either way the writer holds an exclusive flock on it until it
 *           is closed, and first removes the named temporaries of its own
 *           target that an earlier writer left (killed before its commit):
 *           only regular files of this user, at least a minute old, that
 *           no live process holds the lock of (see atomic_file.c);
 *   write:  through the descriptor or a stdio stream on it;
 *   commit: flush, fsync, give it its name (an anonymous temporary is
 *           linked straight to the target when there is none, else to a
 *           fresh exclusive ".NAME.tmp-XXXXXXXXXXXX" first), rename over
 *           the target (a symlink at the target is replaced, never
 *           followed), fsync the directory;
 *   abort:  close and remove the temporary.
 *
 * A failed commit removes the temporary and leaves the earlier target
 * untouched.  Why the temporary is not "PATH.tmp-PID": a predictable name
 * in a shared directory lets another user plant a symlink there and have
 * the writer truncate whatever it points to (issue 13).
 *
 * One struct per file being written; not shared between threads.
 */
#ifndef SPS_PLATFORM_ATOMIC_FILE_H
#define SPS_PLATFORM_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

struct sps_atomic_file {
    int fd;        /* the temporary, open read-write; -1 once closed */
    FILE *f;       /* a stream over fd, once sps__atomic_stream made one */
    int anonymous; /* 1: made with O_TMPFILE, named only at the commit */
    char path[4096];
    char stem[256]; /* what temporaries are named after: path's name or the stem */
    char tmp[4096 + 64]; /* the temporary's name while it has one, else "" */
};

/* Commit flags. */
enum {
    /* skip both fsyncs: for a file whose contents keep changing after the
     * commit (the sampler's shared capture.bin), where durability at the
     * moment of the rename means nothing and the fsync costs the run */
    SPS_ATOMIC_NO_SYNC = 1u
};

/* Open flags (sps__atomic_open_flags). */
enum {
    /* the named temporary even where O_TMPFILE works: the path taken on
     * filesystems without it, for the tests to take it anywhere */
    SPS_ATOMIC_NAMED_TEMP = 1u
};

/* Create the temporary for path.  Returns 0, or SPS_EIO with err set to
 * "PATH: reason" (then nothing needs aborting). */
int sps__atomic_open(struct sps_atomic_file *a, const char *path, char *err, size_t errlen);

/* As sps__atomic_open, the temporary named ".STEM.tmp-XXXXXXXXXXXX" instead
 * of after path's own name (stem NULL or "": path's name): for a file whose
 * name a reader watching the directory picks files by (TensorBoard loads
 * every name holding "tfevents"), which must never see the temporary. */
int sps__atomic_open_as(struct sps_atomic_file *a, const char *path, const char *stem, char *err, size_t errlen);

/* As sps__atomic_open_as, with open flags (SPS_ATOMIC_NAMED_TEMP). */
int sps__atomic_open_flags(struct sps_atomic_file *a, const char *path, const char *stem, unsigned flags, char *err,
                           size_t errlen);

/* A stdio stream over the temporary (owned by a: commit and abort close
 * it); NULL with err set when it cannot be made. */
FILE *sps__atomic_stream(struct sps_atomic_file *a, char *err, size_t errlen);

/* Make the written temporary the target (see above).  Returns 0, or
 * SPS_EIO with err set; a is closed and the temporary gone either way. */
int sps__atomic_commit(struct sps_atomic_file *a, unsigned flags, char *err, size_t errlen);

/* Give up: close and remove the temporary.  Safe after a failed open and
 * after commit (then it does nothing). */
void sps__atomic_abort(struct sps_atomic_file *a);

#endif /* SPS_PLATFORM_ATOMIC_FILE_H */
