#!/bin/sh
# gpu-check.sh [BUILD_DIR] - check GPU zones and the GPU readings on a real
# NVIDIA GPU, which the test suite cannot (it runs against a fake libcuda).
#
#   ./scripts/gpu-check.sh build            # PYTHON=/path/to/python3 to pick the torch install
#
# It builds nothing: BUILD_DIR must hold the stepscope CLI and the Python
# module (cmake --build BUILD_DIR).  It
#   1. runs a short torch CUDA matmul loop under `stepscope run`, each
#      region inside a stepscope.gpu_zone and between two torch.cuda.Event,
#      on the default stream and on a side stream (the current stream that
#      gpu_zone must follow), and prints the report's <zone>.gpu_ms next to
#      the torch.cuda.Event times of the same regions, and report.json's cuda;
#   2. prints `stepscope doctor`'s GPU lines next to nvidia-smi's own query.
# Without nvidia-smi, a GPU, or torch.cuda it prints "no GPU: skipped" and
# exits 0.  Exit 1: a check failed (said why); 2: BUILD_DIR is not a build.
set -u

BUILD=${1:-build}
PY=${PYTHON:-/usr/bin/python3}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
STEPSCOPE=$BUILD/stepscope

if [ ! -x "$STEPSCOPE" ] || [ ! -d "$BUILD/python/stepscope" ]; then
    echo "gpu-check: $BUILD has no stepscope CLI or Python module (cmake --build $BUILD first)" >&2
    exit 2
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu-check: no GPU: skipped (nvidia-smi not found)"
    exit 0
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: no GPU: skipped (nvidia-smi -L failed: $(nvidia-smi -L 2>&1 | head -1))"
    exit 0
fi
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    echo "gpu-check: no GPU: skipped (torch.cuda is not available to $PY)"
    exit 0
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT INT TERM
unset STEPSCOPE_LIBCUDA STEPSCOPE_RUN_DIR STEPSCOPE_OUT STEPSCOPE_DISABLE

cat >"$WORK/loop.py" <<'EOF'
# matmuls on the GPU: each region inside a gpu_zone and between torch.cuda.Events
import json, sys
import torch
import stepscope

steps, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
a = torch.randn(n, n, device="cuda")
b = torch.randn(n, n, device="cuda")
side = torch.cuda.Stream()
torch.cuda.synchronize()
events = {"matmul": [], "side_matmul": []}


def region(name, work):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()                      # on the current stream, as gpu_zone's events
    with stepscope.gpu_zone(name):      # stream=None: the current stream
        work()
    end.record()
    events[name].append((start, end))


for i in range(steps):
    with stepscope.step():
        region("matmul", lambda: (a @ b) @ b)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            region("side_matmul", lambda: a @ (b @ a))
        torch.cuda.current_stream().wait_stream(side)
        stepscope.record("checksum", float(a[0, 0]))   # .item(): the CPU waits for the GPU here
torch.cuda.synchronize()
stepscope.gpu_flush()
times = {k: [s.elapsed_time(e) for s, e in v] for k, v in events.items()}
with open(out, "w") as f:
    json.dump({"torch_ms": times, "cuda_status": stepscope.cuda_status(),
               "device": torch.cuda.get_device_name(0), "torch": torch.__version__}, f)
EOF

cat >"$WORK/compare.py" <<'EOF'
import json, statistics, sys
report = json.load(open(sys.argv[1] + "/report.json"))
side = json.load(open(sys.argv[2]))
steps = int(sys.argv[3])
print("device %s, torch %s" % (side["device"], side["torch"]))
print("cuda_status() in the workload: %s" % side["cuda_status"])
print("report.json cuda: %s" % json.dumps(report.get("cuda")))
values = {v["name"]: v for v in report["values"]}
bad = []
print("%-12s %-22s %6s %10s %10s %10s %10s %10s" % ("zone", "source", "count", "mean ms", "min ms", "max ms",
                                                    "first ms", "last ms"))
for zone, ms in side["torch_ms"].items():
    v = values.get(zone + ".gpu_ms")
    print("%-12s %-22s %6d %10.4f %10.4f %10.4f %10.4f %10.4f" % (
        zone, "torch.cuda.Event", len(ms), statistics.mean(ms), min(ms), max(ms), ms[0], ms[-1]))
    if not v:
        print("%-12s %-22s no %s.gpu_ms in report.json" % (zone, "stepscope.gpu_zone", zone))
        bad.append("%s: no GPU times recorded" % zone)
        continue
    print("%-12s %-22s %6d %10.4f %10.4f %10.4f %10.4f %10.4f" % (
        zone, "stepscope .gpu_ms", v["count"], v["mean"], v["min"], v["max"], v["first"], v["last"]))
    if v["count"] != steps:
        bad.append("%s: %d of %d regions resolved" % (zone, v["count"], steps))
    # the torch events enclose gpu_zone's: a little longer, never much
    diff = statistics.mean(ms) - v["mean"]
    print("%-12s torch - stepscope mean: %+.4f ms (%+.1f%%)" % (zone, diff, 100 * diff / statistics.mean(ms)))
    if abs(diff) > 0.05 * statistics.mean(ms) + 0.02:
        bad.append("%s: means differ by %.4f ms" % (zone, diff))
cuda = report.get("cuda") or {}
if not cuda.get("available"):
    bad.append("report.json says GPU zones were unavailable: %s" % cuda.get("reason"))
print("gpu-check: " + ("FAILED: " + "; ".join(bad) if bad else "GPU zones agree with torch.cuda.Event"))
sys.exit(1 if bad else 0)
EOF

STEPS=${GPU_CHECK_STEPS:-50}
N=${GPU_CHECK_N:-2048}
echo "== stepscope run: $STEPS steps of ${N}x$N matmuls"
PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} "$STEPSCOPE" run --no-live -o "$WORK/out" -- \
    "$PY" "$WORK/loop.py" "$STEPS" "$N" "$WORK/torch.json" 2>"$WORK/summary.txt"
rc=$?
grep -E '^(stepscope:|GPU|gpu zones|step |matmul|side_matmul)' "$WORK/summary.txt"
if [ $rc -ne 0 ] || [ ! -f "$WORK/torch.json" ]; then
    echo "gpu-check: FAILED: stepscope run exited $rc"
    cat "$WORK/summary.txt"
    exit 1
fi
"$PY" "$WORK/compare.py" "$WORK/out" "$WORK/torch.json" "$STEPS"
status=$?

echo
echo "== stepscope doctor (GPU lines)"
"$STEPSCOPE" doctor 2>&1 | grep -E '^(source|nvml|drm|nvidia-smi|cuda) |^GPUs'
echo "== nvidia-smi"
nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu,temperature.gpu,power.draw --format=csv
echo "== stepscope snapshot (gpus)"
"$STEPSCOPE" snapshot 2>/dev/null | "$PY" -c '
import json, sys
keys = ("gpu_memory_used_bytes", "gpu_memory_total_bytes", "gpu_utilization_percent",
        "gpu_temperature_celsius", "gpu_power_watts")
for g in json.load(sys.stdin).get("gpus", []):
    m = g.get("metrics", {})
    print(g.get("index"), g.get("name"), "(%s):" % g.get("source"),
          ", ".join("%s %s" % (k, (m.get(k) or {}).get("value")) for k in keys))
' || echo "(snapshot could not be read)"
exit $status
