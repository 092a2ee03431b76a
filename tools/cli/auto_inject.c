/*
 * auto_inject.c - the environment that puts stepscope's Python startup
 * hook into the workload (auto_inject.h says what it sets and why).
 */
#include "auto_inject.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "model/run_info.h"
#include "platform/env_path.h"

#define HOOK_FILE "sitecustomize.py"

#ifdef SPS_AUTO_BUILD_DIR
const char sps_auto_hook_places[] = "STEPSCOPE_AUTO_DIR, the build tree, " SPS_AUTO_INSTALL_REL;
#else
const char sps_auto_hook_places[] = "STEPSCOPE_AUTO_DIR, " SPS_AUTO_INSTALL_REL;
#endif

/* dir, made absolute, into out when it holds the hook. */
static int hook_dir_at(const char *dir, char *out) {
    char file[PATH_MAX + 32];
    if (!dir || !*dir || snprintf(file, sizeof file, "%s/" HOOK_FILE, dir) >= (int)sizeof file)
        return 0;
    return access(file, R_OK) == 0 && realpath(dir, out) != NULL;
}

/* The directory of this executable, into out (PATH_MAX bytes). */
static int exe_dir(char *out) {
    ssize_t n = readlink("/proc/self/exe", out, PATH_MAX - 1);
    if (n <= 0)
        return 0;
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    return 1;
}

/* rel from the executable's directory, made absolute, into out when it
 * holds probe (a file, relative to it). */
static int beside_exe(const char *rel, const char *probe, char *out) {
    char exe[PATH_MAX], dir[PATH_MAX * 2 + 2], file[PATH_MAX * 3];
    if (!exe_dir(exe))
        return 0;
    snprintf(dir, sizeof dir, "%s/%s", exe, rel);
    if (snprintf(file, sizeof file, "%s/%s", dir, probe) >= (int)sizeof file)
        return 0;
    return access(file, R_OK) == 0 && realpath(dir, out) != NULL;
}

/* Where the hook is (see auto_inject.h); 0 when nowhere.  A
 * STEPSCOPE_AUTO_DIR that holds no hook is not passed over: the user
 * asked for that one. */
static int find_hook_dir(char *out) {
    const char *env = sps__env_path("STEPSCOPE_AUTO_DIR");
    if (env)
        return hook_dir_at(env, out);
#ifdef SPS_AUTO_BUILD_DIR
    if (hook_dir_at(SPS_AUTO_BUILD_DIR, out))
        return 1;
#endif
    /* the install tree's (SPS_AUTO_INSTALL_REL: CMake's share/stepscope/
     * auto, the wheel's stepscope/_hook) */
    return beside_exe(SPS_AUTO_INSTALL_REL, HOOK_FILE, out);
}

/* The directory holding the stepscope package this CLI came with, into
 * out: the build tree's python/ (SPS_PYTHON_BUILD_DIR), or the one the
 * wheel installed it in (SPS_PYTHON_INSTALL_REL from the executable: its
 * site-packages).  0 when neither (a CMake install has no package). */
static int python_package_dir(char *out) {
#ifdef SPS_PYTHON_BUILD_DIR
    char pkg[PATH_MAX + 32];
    snprintf(pkg, sizeof pkg, "%s/stepscope/__init__.py", SPS_PYTHON_BUILD_DIR);
    if (access(pkg, R_OK) == 0 && snprintf(out, PATH_MAX, "%s", SPS_PYTHON_BUILD_DIR) < PATH_MAX)
        return 1;
#endif
#ifdef SPS_PYTHON_INSTALL_REL
    if (beside_exe(SPS_PYTHON_INSTALL_REL, "stepscope/__init__.py", out))
        return 1;
#endif
    (void)out;
    return 0;
}

int sps_auto_hook_dir(char *out) {
    return find_hook_dir(out);
}

/* The file cmd names, as execvp would find it, into out. */
static int resolve_command(const char *cmd, char *out, size_t len) {
    if (strchr(cmd, '/'))
        return snprintf(out, len, "%s", cmd) < (int)len;
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        if (snprintf(out, len, "%.*s/%s", (int)n, n ? p : ".", cmd) < (int)len && access(out, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

/* Whether cmd runs Python: its name is an interpreter's (python3,
 * python3.11, pypy3), or it is a script whose #! line names one (torchrun,
 * accelerate, a console script). */
static int is_python_command(const char *cmd) {
    const char *base = strrchr(cmd, '/');
    base = base ? base + 1 : cmd;
    if (!strncmp(base, "python", 6) || !strncmp(base, "pypy", 4))
        return 1;
    char file[PATH_MAX];
    if (!resolve_command(cmd, file, sizeof file))
        return 0;
    FILE *f = fopen(file, "rb");
    if (!f)
        return 0;
    char line[256];
    int python = fgets(line, sizeof line, f) && line[0] == '#' && line[1] == '!' && strstr(line, "python");
    fclose(f);
    return python;
}

/* PYTHONPATH with dir first (the user's entries after it, as they were). */
static int prepend_pythonpath(const char *dir) {
    const char *old = getenv("PYTHONPATH");
    size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
    char *v = malloc(n);
    if (!v)
        return -1;
    if (old && *old)
        snprintf(v, n, "%s:%s", dir, old);
    else
        snprintf(v, n, "%s", dir);
    int rc = setenv("PYTHONPATH", v, 1);
    free(v);
    return rc;
}

int sps_auto_inject_env(int no_auto, char *const *cmd) {
    if (no_auto) {
        setenv("STEPSCOPE_AUTO", "0", 1); /* a hook inherited from elsewhere stays idle too */
        return SPS_AUTO_INJECT_OFF;
    }
    char dir[PATH_MAX];
    if (!find_hook_dir(dir) || prepend_pythonpath(dir) != 0) {
        unsetenv("STEPSCOPE_AUTO");
        if (cmd[0] && is_python_command(cmd[0])) {
            const char *env = sps__env_path("STEPSCOPE_AUTO_DIR");
            char why[PATH_MAX + 128];
            if (env)
                snprintf(why, sizeof why, "no startup hook (" HOOK_FILE ") in %s: the run goes on without it", env);
            else
                snprintf(why, sizeof why,
                         "no startup hook (" HOOK_FILE ") where this stepscope looks (%s): the run goes on without it",
                         sps_auto_hook_places);
            sps_cli_error("run", "auto-instrumentation", why, 0);
        }
        return SPS_AUTO_INJECT_MISSING;
    }
    setenv("STEPSCOPE_AUTO", "1", 1);
    char pkg[PATH_MAX];
    if (python_package_dir(pkg))
        setenv("STEPSCOPE_PYTHON_PATH", pkg, 1);
    return SPS_AUTO_INJECT_ON;
}
