#!/bin/sh
# bench_sampler_share.sh - the sampler thread's own CPU share under a real
# workload, for two builds, interleaved in one session.
#
#     bench/bench_sampler_share.sh BASE_BUILD NEW_BUILD [PAIRS] [SECONDS]
#
# Each build directory holds a `stepscope` CLI and python/stepscope (the
# module).  Each pair runs bench/torch_loader_workload.py (python + torch, a
# DataLoader with 2 worker processes) for SECONDS (default 20) under
# `stepscope run` of the base build, then of the new one (PAIRS times,
# default 3), and reads from each report.json the sampler thread's CPU time
# (analysis.overhead.sampler_cpu_s) over the run's wall time, and the
# sampler's tick counts.  It prints each run, then per build the median and
# the range of the shares, and new/base of the medians.  The target is under
# 0.1% of one core.
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 BASE_BUILD NEW_BUILD [PAIRS] [SECONDS]" >&2
    exit 2
fi
base=$1 new=$2 pairs=${3:-3} seconds=${4:-20}
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d /tmp/bench_sampler_share.XXXXXX)
trap 'rm -rf "$out"' EXIT
for b in "$base" "$new"; do
    if [ ! -x "$b/stepscope" ] || [ ! -d "$b/python/stepscope" ]; then
        echo "$0: $b: no stepscope CLI or python/stepscope module there" >&2
        exit 2
    fi
done

i=0
while [ "$i" -lt "$pairs" ]; do
    for side in base new; do
        if [ "$side" = base ]; then b=$base; else b=$new; fi
        dir="$out/$side-$i"
        PYTHONPATH="$b/python" "$b/stepscope" run -q -o "$dir" -- \
            "$python" "$here/torch_loader_workload.py" "$seconds" 2 >/dev/null
        echo "$side $dir/report.json" >>"$out/runs"
    done
    i=$((i + 1))
done

"$python" - "$out/runs" <<'EOF'
import json, statistics, sys
shares = {"base": [], "new": []}
for line in open(sys.argv[1]):
    side, path = line.split()
    r = json.load(open(path))
    cpu = r["analysis"]["overhead"]["sampler_cpu_s"]
    wall = r["timing"]["wall_s"]
    o = r["overhead"]
    pct = 100.0 * cpu / wall
    shares[side].append(pct)
    pss = r["metrics"].get("workload_pss_bytes", {}).get("samples")
    print("%-4s sampler %.4f s CPU over %.2f s wall = %.4f%% of one core; ticks %d (machine %d), "
          "PSS reads %s" % (side, cpu, wall, pct, o["sampler_ticks"], o["sampler_machine_ticks"],
                            "-" if pss is None else pss))
for side in ("base", "new"):
    v = shares[side]
    print("%-4s median %.4f%% of one core (range %.4f to %.4f, %d runs)" % (side, statistics.median(v), min(v),
                                                                          max(v), len(v)))
print("new / base (medians): %.2fx   target: new under 0.1%%" % (statistics.median(shares["new"]) /
                                                                statistics.median(shares["base"])))
EOF
