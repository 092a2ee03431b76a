/*
 * replay.c - a harness without libFuzzer: runs every file named on the
 * command line (a directory: every file in it) through the harness's
 * LLVMFuzzerTestOneInput once, in name order.  The suite's regression
 * test of each corpus (fuzz/CMakeLists.txt), in every build, the
 * sanitizer builds included; and a way to replay a crash with gcc.
 * Exit 0 when every input ran, 1 when one could not be read (a crash is
 * the sanitizer's or the signal's own exit).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint8_t *data = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *grown = realloc(data, cap);
            if (!grown) {
                fprintf(stderr, "%s: out of memory\n", path);
                free(data);
                fclose(f);
                return 1;
            }
            data = grown;
        }
        size_t n = fread(data + size, 1, cap - size, f);
        size += n;
        if (n == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        perror(path);
        free(data);
        return 1;
    }
    /* a copy of exactly size bytes: ASan sees a read past the input */
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact) {
        free(data);
        return 1;
    }
    memcpy(exact, data, size);
    free(data);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
    printf("ran %s (%zu bytes)\n", path, size);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count) {
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    int failed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        char *path = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (grown)
            names = grown;
        if (!grown || !path) {
            free(path);
            failed = 1;
            break;
        }
        sprintf(path, "%s/%s", dir, e->d_name);
        names[n++] = path;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        failed |= run_file(names[i]);
        ++*count;
        free(names[i]);
    }
    free(names);
    return failed;
}

int main(int argc, char **argv) {
    int failed = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode))
            failed |= run_dir(argv[i], &count);
        else {
            failed |= run_file(argv[i]);
            count++;
        }
    }
    if (count == 0) {
        fprintf(stderr, "replay: no input given (usage: %s FILE|DIR...)\n", argv[0]);
        return 1;
    }
    printf("%d input%s ran\n", count, count == 1 ? "" : "s");
    return failed;
}
