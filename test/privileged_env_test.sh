#!/bin/sh
# privileged_env_test.sh PROBE MARKER_LIB - a setgid program linking
# libstepscope ignores the path-valued variables (secure_getenv): it loads
# no library they name and writes no report where STEPSCOPE_OUT points.
# The same program without setgid does both, so the test can fail.
# Needs root (to make the setgid copy) and setpriv (to run it as nobody):
# skips (77) with the reason otherwise, or where the kernel does not mark
# the copy AT_SECURE (a nosuid file system).
set -u
probe=$1 marker_lib=$2
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root to make a setgid copy of the probe"; exit 77; fi
setpriv=$(command -v setpriv) || { echo "SKIP: setpriv (util-linux) not installed"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/sps-privileged-XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
chmod 0755 "$t"
mkdir "$t/w" && chmod 0777 "$t/w"
cp "$probe" "$t/plain" && cp "$probe" "$t/setgid" && cp "$marker_lib" "$t/marker.so" || exit 1
chmod 0755 "$t/plain" "$t/marker.so"
chgrp 1 "$t/setgid" && chmod 2755 "$t/setgid"   # a group nobody is not in
fail=0

# run_as_nobody PROGRAM VAR=VALUE...: the probe as nobody, output in $t/w/out
run_as_nobody() {
    program=$1; shift
    "$setpriv" --reuid=65534 --regid=65534 --clear-groups env "$@" "$program" >"$t/w/out" 2>"$t/w/err"
}

run_as_nobody "$t/setgid" || { echo "FAIL: the setgid probe did not run:"; cat "$t/w/err"; exit 1; }
if ! grep -qx 'secure 1' "$t/w/out"; then
    echo "SKIP: the setgid copy is not AT_SECURE here ($(cat "$t/w/out")): a nosuid file system?"
    exit 77
fi

for var in STEPSCOPE_LIBCUDA STEPSCOPE_NVML_LIBRARY NVTX_INJECTION64_PATH; do
    for prog in plain setgid; do
        m="$t/w/loaded-$var-$prog"
        run_as_nobody "$t/$prog" "$var=$t/marker.so" "SPS_TEST_MARKER=$m" ||
            { echo "FAIL: $prog probe with $var exited non-zero:"; cat "$t/w/err"; fail=1; }
        if [ "$prog" = plain ] && [ ! -e "$m" ]; then
            echo "FAIL: unprivileged, $var=$t/marker.so was not loaded (the test proves nothing)"; fail=1
        elif [ "$prog" = setgid ] && [ -e "$m" ]; then
            echo "FAIL: setgid, $var=$t/marker.so was loaded"; fail=1
        else
            echo "ok   $var $prog"
        fi
    done
done

for prog in plain setgid; do
    out="$t/w/out-$prog"
    run_as_nobody "$t/$prog" "STEPSCOPE_OUT=$out" ||
        { echo "FAIL: $prog probe with STEPSCOPE_OUT exited non-zero:"; cat "$t/w/err"; fail=1; }
    if [ "$prog" = plain ] && [ ! -f "$out/report.json" ]; then
        echo "FAIL: unprivileged, no $out/report.json"; cat "$t/w/err"; fail=1
    elif [ "$prog" = setgid ] && [ -e "$out" ]; then
        echo "FAIL: setgid, STEPSCOPE_OUT was followed: $(ls -A "$out")"; fail=1
    else
        echo "ok   STEPSCOPE_OUT $prog"
    fi
done
# STEPSCOPE_RUN_DIR: the records go there only unprivileged; the privileged
# process records in memory and its one stderr line says why
for prog in plain setgid; do
    run="$t/w/run-$prog"
    mkdir "$run" && chmod 0777 "$run"   # as `stepscope run` makes it
    run_as_nobody "$t/$prog" "STEPSCOPE_RUN_DIR=$run" ||
        { echo "FAIL: $prog probe with STEPSCOPE_RUN_DIR exited non-zero:"; cat "$t/w/err"; fail=1; }
    if [ "$prog" = plain ] && [ ! -d "$run/records" ]; then
        echo "FAIL: unprivileged, nothing recorded into $run"; cat "$t/w/err"; fail=1
    elif [ "$prog" = setgid ] && [ -n "$(ls -A "$run")" ]; then
        echo "FAIL: setgid, STEPSCOPE_RUN_DIR was followed: $(ls -A "$run")"; fail=1
    elif [ "$prog" = setgid ] && ! grep -q 'STEPSCOPE_RUN_DIR ignored in a privileged process' "$t/w/err"; then
        echo "FAIL: setgid, stderr does not say STEPSCOPE_RUN_DIR was ignored: $(cat "$t/w/err")"; fail=1
    else
        echo "ok   STEPSCOPE_RUN_DIR $prog"
    fi
done
[ "$fail" = 0 ] && echo "privileged_env_test: all passed"
exit "$fail"
