"""The `stepscope` command of a pip install: `stepscope ARGS` (the
console script) and `python -m stepscope ARGS` both exec the CLI built
into the package, stepscope/_bin/stepscope, with ARGS.

exec, not a child process: the CLI takes this process's place (same pid,
no Python left in the process tree), so signals sent to it (Ctrl-C,
kill, a scheduler's SIGTERM) reach `stepscope run`, which forwards them
to the workload, and its exit status is the command's.
"""
import os
import sys


def _binary():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "stepscope")


def main(argv=None):
    """Exec the CLI with argv (sys.argv[1:] by default); returns only when
    it cannot (with exit status 127, after one line on stderr)."""
    args = sys.argv[1:] if argv is None else list(argv)
    exe = _binary()
    env = dict(os.environ)
    # importing the package (to get here) set the standalone report's
    # default STEPSCOPE_OUT; the CLI and what it runs must not inherit it
    from . import _OUT_DEFAULTED
    if _OUT_DEFAULTED:
        env.pop("STEPSCOPE_OUT", None)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(exe, ["stepscope"] + args, env)
    except OSError as e:
        sys.stderr.write("stepscope: cannot run %s: %s (pip install builds it into the package; a CMake "
                         "build's is build/stepscope)\n" % (exe, e.strerror))
        return 127


if __name__ == "__main__":
    sys.exit(main())
