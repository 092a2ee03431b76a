/*
 * auto_inject.h - how `stepscope run` gets auto-instrumentation into the
 * workload's Python interpreters: a startup hook (python/auto/
 * sitecustomize.py) first on PYTHONPATH, and STEPSCOPE_AUTO=1.
 */
#ifndef SPS_CLI_AUTO_INJECT_H
#define SPS_CLI_AUTO_INJECT_H

/*
 * Set the environment the workload inherits (call before it is forked):
 *
 *  - no_auto (--no-auto): STEPSCOPE_AUTO=0 and nothing else; PYTHONPATH is
 *    left as it is.
 *  - else the hook's directory goes first on PYTHONPATH (the user's
 *    PYTHONPATH after it), STEPSCOPE_AUTO=1, and STEPSCOPE_PYTHON_PATH
 *    names the directory of the stepscope package this CLI came with when
 *    there is one: the build tree's python/, or for the pip wheel's CLI
 *    the site-packages it was installed in (the hook falls back on it
 *    when the interpreter cannot import stepscope).
 *
 * The environment is the whole tree's, whatever cmd is: `bash train.sh`
 * reaches the Python it starts, and programs that are not Python never
 * read these variables.  The hook's directory: STEPSCOPE_AUTO_DIR when
 * set, else the build tree's, else SPS_AUTO_INSTALL_REL from the
 * executable's directory (a CMake install's ../share/stepscope/auto, the
 * wheel's ../_hook beside stepscope/_bin/).  When there is none, nothing is injected, and one
 * line on stderr says so when cmd is a Python program (an interpreter, or
 * a script whose #! names one); other commands get no message.
 *
 * Returns the enum sps_auto_inject (src/model/run_info.h) for the report.
 * Not thread-safe (setenv): call from the CLI's main thread.
 */
int sps_auto_inject_env(int no_auto, char *const *cmd);

/*
 * The directory `stepscope run` would take the startup hook from, made
 * absolute, into out (PATH_MAX bytes), by the rules above (for `stepscope
 * doctor`).  Returns 1, or 0 when there is none (out undefined).
 */
int sps_auto_hook_dir(char *out);

/* Where this build looks for the hook, in words, for messages:
 * "STEPSCOPE_AUTO_DIR, the build tree, ../share/stepscope/auto" (the pip
 * wheel's CLI has no build tree: "STEPSCOPE_AUTO_DIR, ../_hook"). */
extern const char sps_auto_hook_places[];

#endif
