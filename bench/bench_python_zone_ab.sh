#!/bin/sh
# bench_python_zone_ab.sh - bench_python_zone.py on two builds of the
# module, interleaved run after run, so that a change to the zone's hot
# path (such as the auto-instrumentation stand-aside check in every begin)
# is measured against the build before it on the same busy machine.
#
#   usage: bench/bench_python_zone_ab.sh A_BUILD B_BUILD [runs] [iterations]
#
# A_BUILD and B_BUILD are build directories (their python/ goes on
# PYTHONPATH).  Prints, for the plain zone and the kept zone, each build's
# median and range over the runs (each run's figure is already its best of
# 7 interleaved rounds), and B over A for the medians and for the minima.
set -eu
a=$1 b=$2 runs=${3:-9} n=${4:-100000}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
while [ "$i" -lt "$runs" ]; do
    for side in a b; do
        if [ $side = a ]; then dir=$a; else dir=$b; fi
        PYTHONPATH=$dir/python /usr/bin/python3 "$here/bench_python_zone.py" "$n" >"$tmp/out" 2>&1
        grep "^with stepscope.zone('x')" "$tmp/out" | awk '{print $3}' >>"$tmp/$side.zone"
        grep "^with z (a kept" "$tmp/out" | awk '{print $6}' >>"$tmp/$side.kept"
    done
    i=$((i + 1))
done
/usr/bin/python3 - "$tmp" "$a" "$b" <<'PY'
import statistics, sys
tmp, a, b = sys.argv[1:4]
for what, label in (("zone", "with stepscope.zone('x')"), ("kept", "with z (a kept zone)")):
    med, low = {}, {}
    for side, name in (("a", a), ("b", b)):
        v = [float(x) for x in open("%s/%s.%s" % (tmp, side, what))]
        med[side], low[side] = statistics.median(v), min(v)
        print("%-26s %s %-40s median %6.1f ns  [%6.1f, %6.1f]  (%d runs)"
              % (label, side.upper(), name, med[side], min(v), max(v), len(v)))
    # the medians move with the machine's load; the minima are the least
    # disturbed runs of each build
    print("%-26s B/A %.3f (medians), %.3f (minima)" % (label, med["b"] / med["a"], low["b"] / low["a"]))
PY
