#!/usr/bin/env python3
"""prom_libmicrohttpd_test.py - `stepscope run --serve` loads libmicrohttpd
at run time (tools/cli/prom_http.c): where it is missing the job runs on.

    prom_libmicrohttpd_test.py BUILD_DIR

STEPSCOPE_LIBMICROHTTPD names the library to load.  Pointed at a file
that does not exist, and at a library without libmicrohttpd's calls
(libm), --serve says so in one line on stderr (with dlopen's or dlsym's
reason), and the job runs as without --serve: its exit status passes
through, its run directory holds the same files with its exact step
count, and --prom-textfile, which needs no server, is written.  Pointed
at the real library by its full path, the metrics are served.
`stepscope doctor`'s serve line and its JSON say the same in each case.

Needs no Prometheus.  Where libmicrohttpd.so.12 is not installed, the
served check is skipped, said on stdout, and the test exits 77 after the
rest.
"""
import ctypes.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import tally
from tally import check, skip

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
STEPSCOPE = os.path.join(BUILD, "stepscope")
PROM_WORKLOAD = os.path.join(BUILD, "prom_workload")
TEST_WORKLOAD = os.path.join(BUILD, "test_workload")
HANG_S = 240  # only a hang limit: a loaded machine needs a fraction of it
NEEDS = ("stepscope: run: --serve: needs libmicrohttpd (Debian/Ubuntu: libmicrohttpd12; Fedora/RHEL: "
         "libmicrohttpd; Arch, Alpine: libmicrohttpd): ")
AFTER = "; the job runs without /metrics; --prom-textfile FILE writes the same metrics"
NEEDS_DOCTOR = NEEDS.replace("stepscope: run: --serve: ", "--serve ")


def env(library=None):
    e = dict(os.environ)
    for k in ("STEPSCOPE_RUN_DIR", "STEPSCOPE_OUT", "STEPSCOPE_DISABLE", "STEPSCOPE_LIBMICROHTTPD", "RANK",
              "WORLD_SIZE", "LOCAL_RANK"):
        e.pop(k, None)
    if library is not None:
        e["STEPSCOPE_LIBMICROHTTPD"] = library
    return e


def files_of(run_dir):
    """The run directory's files, the records' pids made PID."""
    return sorted(re.sub(r"^records/\d+-", "records/PID-", os.path.relpath(os.path.join(d, n), run_dir))
                  for d, _, names in os.walk(run_dir) for n in names)


def steps_total(textfile):
    with open(textfile) as f:
        return [float(m.group(1)) for m in re.finditer(r'^stepscope_steps_total\{step="step"[^}]*\} (\S+)$',
                                                         f.read(), re.M)]


def run_job(tmp, tag, library, serve=True):
    out = os.path.join(tmp, tag)
    textfile = os.path.join(tmp, tag + ".prom")
    cmd = [STEPSCOPE, "run", "-q", "-o", out, "--prom-textfile", textfile]
    if serve:
        cmd += ["--serve", "127.0.0.1:0"]
    r = subprocess.run(cmd + ["--", TEST_WORKLOAD, "--steps", "3", "--exit", "7"], env=env(library),
                       capture_output=True, text=True, timeout=HANG_S)
    return r, out, textfile


def missing(tmp, reference, tag, library, reason):
    """--serve with STEPSCOPE_LIBMICROHTTPD=library: one line whose reason
    (a regular expression) is dlopen's or dlsym's, and the job as the
    reference run without --serve made it."""
    r, out, textfile = run_job(tmp, tag, library)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 7, "%s: the job's exit status passes through: %d" % (tag, r.returncode))
    check(len(lines) == 1 and re.fullmatch(re.escape(NEEDS) + reason + re.escape(AFTER), lines[0]) is not None,
          "%s: one line naming the library and why: %r" % (tag, lines))
    with open(os.path.join(out, "report.json")) as f:
        check(json.load(f)["steps"]["count"] == 3, "%s: the job's 3 steps are reported" % tag)
    check(files_of(out) == files_of(reference), "%s: the run directory holds what one without --serve does: %s"
          % (tag, files_of(out)))
    check(steps_total(textfile) == [3.0], "%s: --prom-textfile has the 3 steps: %r" % (tag, steps_total(textfile)))


def doctor(tag, library, available, where):
    """stepscope doctor with STEPSCOPE_LIBMICROHTTPD=library: its serve
    object, and its serve line, say available and where (a regular
    expression: the library's file, or why --serve cannot load it)."""
    r = subprocess.run([STEPSCOPE, "doctor", "--json"], env=env(library), capture_output=True, text=True,
                       timeout=HANG_S)
    serve = json.loads(r.stdout).get("serve") if r.stdout else None
    key = "library" if available else "reason"
    check(serve is not None and serve["available"] == available and re.fullmatch(where, serve[key] or "")
          and serve["reason" if available else "library"] is None, "%s: doctor --json's serve: %r" % (tag, serve))
    r = subprocess.run([STEPSCOPE, "doctor"], env=env(library), capture_output=True, text=True, timeout=HANG_S)
    lines = [l for l in r.stdout.splitlines() if l.startswith("serve ")]
    if available:
        want = r"serve +ok +- +- +stepscope run --serve answers /metrics with " + where
    else:
        want = r"serve +unavailable +- +- +" + where + re.escape("; --prom-textfile FILE writes the same metrics")
    check(len(lines) == 1 and re.fullmatch(want, lines[0]), "%s: doctor's serve line: %r" % (tag, lines))


def installed_library():
    """The full path of the installed libmicrohttpd.so.12, or None."""
    name = ctypes.util.find_library("microhttpd")  # its soname, from ldconfig's cache
    if name != "libmicrohttpd.so.12":
        return None
    try:
        ctypes.CDLL(name)
    except OSError:
        return None
    # where the loader found it
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libmicrohttpd.so"):
                return path
    return None


def served(tmp, library):
    """The real library by its full path: /metrics answers with the
    steps of a job that is still stepping."""
    stop = os.path.join(tmp, "stop")
    port_line = re.compile(r"serving metrics on http://127\.0\.0\.1:(\d+)/metrics")
    job = subprocess.Popen([STEPSCOPE, "run", "--serve", "127.0.0.1:0", "-o", os.path.join(tmp, "served"), "--",
                            PROM_WORKLOAD, stop], env=env(library), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    text = ""
    try:
        first = job.stderr.readline()
        m = port_line.search(first)
        check(m is not None, "the served address is said: %r" % first)
        deadline = time.monotonic() + HANG_S
        while m and time.monotonic() < deadline:
            with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % m.group(1), timeout=10) as r:
                text = r.read().decode()
            if re.search(r'^stepscope_steps_total\{step="step"[^}]*\} [1-9]', text, re.M):
                break
            time.sleep(0.2)
    finally:
        open(stop, "w").close()
        job.communicate(timeout=HANG_S)
    check(re.search(r'^stepscope_steps_total\{step="step"[^}]*\} [1-9]', text, re.M) is not None,
          "served through %s: the job's steps: %r" % (library, text[:200]))
    check(job.returncode == 0, "the served job exits 0: %d" % job.returncode)


def main():
    for path in (STEPSCOPE, PROM_WORKLOAD, TEST_WORKLOAD):
        if not os.access(path, os.X_OK):
            print("FAIL: %s is not built" % path)
            return 1
    tmp = tempfile.mkdtemp(prefix="stepscope-libmhd-")
    try:
        r, reference, textfile = run_job(tmp, "reference", None, serve=False)
        check(r.returncode == 7 and r.stderr == "", "the reference run: exit %d, %r" % (r.returncode, r.stderr))
        check(steps_total(textfile) == [3.0], "the reference textfile has the 3 steps")
        gone = os.path.join(tmp, "no-such-dir", "libmicrohttpd.so.12")
        gone_why = re.escape("%s: cannot open shared object file: No such file or directory" % gone)
        missing(tmp, reference, "nonexistent", gone, gone_why)
        doctor("nonexistent", gone, False, re.escape(NEEDS_DOCTOR) + gone_why)
        # a real library, without libmicrohttpd's calls: the first is missing
        libm_why = r"/\S*/libm\.so\.6: undefined symbol: MHD_start_daemon"
        missing(tmp, reference, "libm", "libm.so.6", libm_why)
        doctor("libm", "libm.so.6", False, re.escape(NEEDS_DOCTOR) + libm_why)
        library = installed_library()
        if library:
            served(tmp, library)
            doctor("installed", library, True, re.escape(library))
        else:
            skip("libmicrohttpd.so.12 is not installed (Debian: apt-get install libmicrohttpd12): "
                 "no scrape through STEPSCOPE_LIBMICROHTTPD")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tally.exit_status()


if __name__ == "__main__":
    sys.exit(main())
