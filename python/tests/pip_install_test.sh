#!/bin/sh
# pip_install_test.sh PYTHON WORKDIR - the pip install docs/python.md
# documents, as a pip-only user gets it: the sdist built from the checkout
# (python -m build --sdist, else setup.py sdist), installed with
# `pip install --no-build-isolation --no-index` into a fresh venv made with
# --system-site-packages; then, from outside the tree with no PYTHONPATH,
# the `stepscope` command (console script and python -m), two recorded
# runs with their exact step counts, compare, report, /metrics scraped
# from `run --serve` (skipped, said, where libmicrohttpd12 is not
# installed: the wheel's CLI loads it at run time); the wheel's tag
# against what its ELF files justify (readelf), and no path into the
# build tree or the checkout in the installed ELF files.
#
# Exit 77 (skipped, with the reason) when this Python has no venv or pip,
# or the venv has no setuptools or wheel to build with (pip would fetch
# them from the network, which the test never uses).
set -eu
py=$1
work=$2
# the installed package and command must be the ones run: a PYTHONPATH
# inherited from the caller (a build's python/ directory) would come first
unset PYTHONPATH PYTHONHOME STEPSCOPE_AUTO_DIR STEPSCOPE_OUT STEPSCOPE_RUN_DIR STEPSCOPE_LIBMICROHTTPD
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work/tmp" "$work/sdist" "$work/runs"

fail() {
    echo "pip install test: FAIL: $*"
    exit 1
}

if ! "$py" -m venv --system-site-packages "$work/venv" >"$work/venv.log" 2>&1; then
    echo "pip install test skipped: $py -m venv failed (install python3-venv):"
    tail -n 3 "$work/venv.log"
    exit 77
fi
vpy=$work/venv/bin/python
if ! "$vpy" -m pip --version >/dev/null 2>&1; then
    echo "pip install test skipped: no pip in the venv (install python3-pip)"
    exit 77
fi
if ! "$vpy" -c 'import setuptools, wheel' >"$work/setuptools.log" 2>&1; then
    echo "pip install test skipped: the venv has no setuptools or wheel to build with (install python3-setuptools"
    echo "  python3-wheel; pip would fetch them from the network otherwise):"
    tail -n 1 "$work/setuptools.log"
    exit 77
fi

# --- the sdist, from the checkout (what a release would publish). The
# egg-info an earlier build left in python/ goes first: setuptools adds
# the files its SOURCES.txt lists to the next sdist, whatever MANIFEST.in
# says now
rm -rf "$src/python/stepscope.egg-info"
if "$py" -c 'import build' 2>/dev/null; then
    (cd "$src" && "$py" -m build --sdist --no-isolation -o "$work/sdist" .) >"$work/sdist.log" 2>&1 ||
        { cat "$work/sdist.log"; fail "python -m build --sdist failed"; }
else
    echo "pip install test: no python3-build, so the sdist comes from setup.py sdist"
    (cd "$src" && "$py" setup.py -q sdist -d "$work/sdist") >"$work/sdist.log" 2>&1 ||
        { cat "$work/sdist.log"; fail "setup.py sdist failed"; }
fi
rm -rf "$src/python/stepscope.egg-info" # made for the sdist; the checkout stays as it was
sdist=$(ls "$work"/sdist/stepscope-*.tar.gz)
# what it carries (MANIFEST.in): the build's inputs, nothing else
top=$(tar tzf "$sdist" | cut -d/ -f2 | LC_ALL=C sort -u | tr '\n' ' ')
[ "$top" = " CMakeLists.txt MANIFEST.in PKG-INFO README.md docs include pyproject.toml python setup.cfg setup.py src tools " ] ||
    fail "the sdist's top level: $top"
sub=$(tar tzf "$sdist" | cut -d/ -f2,3 | grep -e '^python/.' -e '^tools/.' -e '^docs/.' | LC_ALL=C sort -u | tr '\n' ' ')
[ "$sub" = "docs/stepscope.1 python/CMakeLists.txt python/auto python/src python/stepscope python/stepscope.egg-info tools/cli tools/pip " ] ||
    fail "the sdist's docs/, python/ and tools/: $sub"

# --- pip install of the sdist: it builds in a copy under $work/tmp (TMPDIR),
# which the installed files must not name. -q keeps the compiler quiet
# unless it fails.
if ! TMPDIR=$work/tmp "$vpy" -m pip install -q --no-build-isolation --no-index --no-cache-dir "$sdist" \
        >"$work/pip.log" 2>&1; then
    cat "$work/pip.log"
    if grep -q -e "No matching distribution" -e "Could not find a version" "$work/pip.log"; then
        echo "pip install test skipped: pip wanted a package from the network (see above)"
        exit 77
    fi
    fail "pip install of $sdist failed"
fi

site=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
pkg=$site/stepscope
bin=$work/venv/bin
cd "$work/runs"

# --- the command, both ways, and exit statuses passed through
want=$(sed -n 's/^#define SPS_VERSION_STRING "\(.*\)"$/\1/p' "$src/include/stepscope.h")
[ "$("$bin/stepscope" --version)" = "stepscope $want" ] || fail "stepscope --version: $("$bin/stepscope" --version)"
[ "$("$vpy" -m stepscope --version)" = "stepscope $want" ] || fail "python -m stepscope --version"
rc=0
"$vpy" -m stepscope report "$work/no-such-run" 2>"$work/report-missing.err" || rc=$?
[ "$rc" = 1 ] || fail "python -m stepscope report of a missing run: exit $rc, not 1"
grep -q "^stepscope: report: " "$work/report-missing.err" || fail "its error: $(cat "$work/report-missing.err")"
[ -f "$work/venv/share/man/man1/stepscope.1" ] || fail "no share/man/man1/stepscope.1 in the venv"

# --- two runs of a Python workload: each report's exact step count
train() { # train RUN STEPS
    STEPS=$2 "$bin/stepscope" run -q -o "$1" -- "$vpy" -c '
import os
import stepscope
for i in range(int(os.environ["STEPS"])):
    with stepscope.step():
        with stepscope.zone("forward"):
            sum(range(20000))
        with stepscope.zone("backward"):
            sum(range(10000))
' || fail "stepscope run -o $1 failed"
    n=$("$vpy" -c 'import json, sys; print(json.load(open(sys.argv[1]))["steps"]["count"])' "$1/report.json")
    [ "$n" = "$2" ] || fail "$1/report.json: $n steps, not $2"
}
train A 5
train B 7
"$bin/stepscope" compare --skip 0 A B >compare.txt || fail "stepscope compare A B: exit $?"
grep -q "verdict" compare.txt || { cat compare.txt; fail "no verdict in stepscope compare's output"; }
grep -q "A/report.json: 1 run, 5 steps" compare.txt && grep -q "B/report.json: 1 run, 7 steps" compare.txt || { cat compare.txt; fail "compare: step counts"; }
"$bin/stepscope" report A --format summary >summary.txt || fail "stepscope report A --format summary"
grep -q "forward" summary.txt || { cat summary.txt; fail "the summary has no forward zone"; }

# --- the CLI took the wrapper's place (exec: no Python between it and the
# workload), found its startup hook in the package and hands the hook the
# installed package; the standalone default STEPSCOPE_OUT that importing
# the package set is not in the CLI's environment
"$bin/stepscope" run -q -o C -- "$vpy" -c '
import os
ppid = os.getppid()
print(os.readlink("/proc/%d/exe" % ppid))
print(os.environ.get("PYTHONPATH", "").split(":")[0])
print(os.environ.get("STEPSCOPE_PYTHON_PATH"))
with open("/proc/%d/environ" % ppid) as f:
    print([e for e in f.read().split("\0") if e.startswith("STEPSCOPE_OUT=")])
' >env.txt || fail "stepscope run -o C failed"
[ "$(sed -n 1p env.txt)" = "$pkg/_bin/stepscope" ] || fail "the workload's parent is $(sed -n 1p env.txt)"
[ "$(sed -n 2p env.txt)" = "$pkg/_hook" ] || fail "the startup hook on PYTHONPATH: $(sed -n 2p env.txt)"
[ "$(sed -n 3p env.txt)" = "$site" ] || fail "STEPSCOPE_PYTHON_PATH=$(sed -n 3p env.txt)"
[ "$(sed -n 4p env.txt)" = "[]" ] || fail "the CLI's environment has $(sed -n 4p env.txt)"
# its exit status is the workload's, through the console script
rc=0
"$bin/stepscope" run -q -o E -- "$vpy" -c 'raise SystemExit(3)' || rc=$?
[ "$rc" = 3 ] || fail "stepscope run of a workload exiting 3: exit $rc"
# a signal sent to the pid the shell started `stepscope` as reaches the
# workload: that pid is stepscope run's (exec), which forwards it. (A
# Python wrapper with the CLI as its child would die of it instead, and
# the workload would sleep on.)
"$bin/stepscope" run -q -o F -- "$vpy" -c '
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))
open("started", "w").close()
time.sleep(120)
' &
cli=$!
n=0
while [ ! -e started ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
kill -TERM "$cli"
rc=0
wait "$cli" || rc=$?
[ "$rc" = 7 ] || fail "SIGTERM to the stepscope command: exit $rc, not the workload's 7 from its SIGTERM handler"

# --- --serve: the wheel's CLI loads libmicrohttpd.so.12 where the system
# has it. /metrics is scraped while a Python workload that made 6 steps
# waits, until the served counter says 6; then the workload ends.
serve="scraped"
if ! "$vpy" -c 'import ctypes; ctypes.CDLL("libmicrohttpd.so.12")' 2>/dev/null; then
    serve="skipped"
    echo "pip install test: SKIP the --serve scrape (only): libmicrohttpd.so.12 is not installed" \
         "(Debian/Ubuntu: apt-get install libmicrohttpd12)"
else
    "$vpy" - "$bin/stepscope" "$vpy" <<'EOF' || fail "stepscope run --serve: /metrics (see above)"
import os, re, subprocess, sys, time, urllib.request
stepscope, vpy = sys.argv[1:]
workload = """
import os, time
import stepscope
for i in range(6):
    with stepscope.step():
        with stepscope.zone("forward"):
            sum(range(20000))
while not os.path.exists("scraped"):
    time.sleep(0.05)
"""
job = subprocess.Popen([stepscope, "run", "--serve", "127.0.0.1:0", "-o", "S", "--", vpy, "-c", workload],
                       env=dict(os.environ, STEPSCOPE_PROM_MS="100"), stderr=subprocess.PIPE, text=True)
text, steps = "", re.compile(r'^stepscope_steps_total\{step="step"[^}]*\} (\S+)$', re.M)
try:
    line = job.stderr.readline()
    m = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
    if not m:
        sys.exit("no serving line: %r" % line)
    deadline = time.monotonic() + 240  # a hang limit only
    while time.monotonic() < deadline and steps.findall(text) != ["6"]:
        time.sleep(0.1)
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % m.group(1), timeout=10) as r:
            text = r.read().decode()
finally:
    open("scraped", "w").close()
    err = job.communicate(timeout=240)[1]
if steps.findall(text) != ["6"]:
    sys.exit("/metrics never said 6 steps: %r; stderr: %s" % (steps.findall(text), err))
if job.returncode != 0:
    sys.exit("stepscope run --serve: exit %d: %s" % (job.returncode, err))
EOF
fi

# --- the wheel's tag, against what readelf says its ELF files need
command -v readelf >/dev/null || fail "no readelf (binutils, part of build-essential) to check the wheel's tag"
elfs="$pkg/_bin/stepscope $pkg/_stepscope.abi3.so"
tag=$(sed -n 's/^Tag: //p' "$site"/stepscope-*.dist-info/WHEEL)
arch=$(uname -m)
glibc=$(readelf -V $elfs | grep -o 'GLIBC_2\.[0-9]*' | sed 's/GLIBC_2\.//' | sort -n | tail -n 1)
others=$(readelf -d $elfs | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u |
         grep -v -x -e libc.so.6 -e libm.so.6 -e libdl.so.2 -e libpthread.so.0 -e librt.so.1 -e 'ld-linux.*' || true)
if [ -z "$others" ]; then
    expect=cp38-abi3-manylinux_2_${glibc}_$arch
else
    expect=cp38-abi3-linux_$arch
fi
[ "$tag" = "$expect" ] || fail "the wheel is tagged $tag; its ELF files (glibc 2.$glibc; needing ${others:-nothing else}) justify $expect"
if readelf -d $elfs | grep -q -e RPATH -e RUNPATH; then
    fail "an RPATH or RUNPATH in the installed ELF files: $(readelf -d $elfs | grep -e RPATH -e RUNPATH)"
fi
for f in $elfs; do
    for p in "$work" "$src"; do
        ! grep -a -q -F "$p" "$f" || fail "$f names $p: $(grep -a -o -F "$p[^[:cntrl:]]*" "$f" | head -n 1)"
    done
done
echo "pip install test: ok ($tag; readelf: glibc 2.$glibc, needing ${others:-only the manylinux libraries};" \
     "--serve $serve)"
