/*
 * sysfs_tree.h - building fixture /sys trees for the source tests: files
 * and symlinks under a root, parent folders made as needed.  A failure is
 * the test's own setup failing: it exits the binary (as write_file does).
 */
#ifndef SPS_TEST_SYSFS_TREE_H
#define SPS_TEST_SYSFS_TREE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"

static inline void tree_die(const char *what, const char *path) {
    fprintf(stderr, "fixture: %s %s: %s\n", what, path, strerror(errno));
    exit(99);
}

/* mkdir -p root/rel */
static inline void tree_mkdir(const char *root, const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            tree_die("mkdir", path);
        *p = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        tree_die("mkdir", path);
}

static inline void tree_parent(const char *root, const char *rel) {
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", rel);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = '\0';
        tree_mkdir(root, parent);
    }
}

/* root/rel holds text (created or replaced). */
static inline void tree_write(const char *root, const char *rel, const char *text) {
    char path[4096];
    tree_parent(root, rel);
    snprintf(path, sizeof path, "%s/%s", root, rel);
    write_file(path, text, strlen(text));
}

/* root/rel is a symlink to target (as sysfs writes them: relative). */
static inline void tree_symlink(const char *root, const char *rel, const char *target) {
    char path[4096];
    tree_parent(root, rel);
    snprintf(path, sizeof path, "%s/%s", root, rel);
    if (symlink(target, path) != 0)
        tree_die("symlink", path);
}

/* root/rel no longer exists (a file or an empty folder). */
static inline void tree_remove(const char *root, const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    if (remove(path) != 0)
        tree_die("remove", path);
}

#endif
