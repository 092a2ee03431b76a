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
#   2. prints `stepscope doctor`'s GPU lines;
#   3. energy: runs a ~15 s load (2 s of bf16 matmuls, 1 s idle, over and
#      over) under `stepscope run` and compares the energy counter's
#      increase with the power readings integrated over the same span
#      (trapezoids): they must agree within 5%;
#   4. readings: while a load runs, `stepscope snapshot` between two
#      `nvidia-smi --query-gpu` reads, three times, GPU by GPU (matched
#      by UUID): memory used (within 32 MiB: both leave out what the
#      driver reserves), memory total (1 MiB) and temperature (3 C outside
#      the two nvidia-smi readings: it moves several degrees a second as
#      the load starts and stops) pass or fail;
#      utilisation, power and the SM clock move within a second and are
#      printed beside nvidia-smi's, not judged;
#   5. seed classes, under `stepscope run`: CUDATimer.measure on 30 regions
#      each between two torch.cuda.Events (mean, min, max, latest within
#      2%), CUDATimer.time (warmup 3, repeat 20: the run counts, and mean
#      and median within 2% of a torch.cuda.Event pair inside each run),
#      StreamProfiler on two streams of matmuls, the second started after
#      the first's 10th (each stream's busy time and the wall within 2% of
#      the torch.cuda.Event intervals', the overlap within 2% of the wall;
#      overlap, concurrency and efficiency printed beside those the events
#      give), MemoryTracker's get_stats() against torch.cuda.memory_stats()
#      read around its block (equal; "not present: skipped" without
#      stepscope.memory), and the per-step torch.cuda.allocated_bytes /
#      reserved_bytes values in report.json against memory_allocated() /
#      memory_reserved() read at the end of each of 12 steps (count, first,
#      last, min, max equal; skipped when the build records none);
#   6. cost: CUDATimer.measure, a Python stepscope.gpu_zone, a plain
#      stepscope.zone and a torch.cuda.Event pair (two events made and
#      recorded), interleaved in one process, 7 rounds of 20000 calls:
#      medians, ranges and ratios, printed, not judged.
# All of it takes about a minute and a half.  Without nvidia-smi, a GPU, or torch.cuda
# it prints "no GPU: skipped" and exits 0.  Exit 1: a check failed (said
# why); 2: BUILD_DIR is not a build.
#
# On an NVIDIA H200 (driver 580.159.04, CUDA 13.0, torch 2.11.0+cu130): GPU
# zones against torch.cuda.Event +0.7% and +0.5% (means); energy counter /
# integrated power 0.9996 over 18.5 s; gpu_zone 8226 ns median, zone 113
# ns, torch.cuda.Event pair 15583 ns.
# On an NVIDIA H100 80GB HBM3 (same driver and torch, 2026-11-26, GPU zones
# placed on the GPU timeline): GPU zones -0.6% and -0.4% of torch.cuda.Event
# (means); counter / integrated power 0.9989 over 15.0 s; CUDATimer means
# -0.5% (measure) and +0.5% (time); StreamProfiler busy, wall and overlap
# within 0.01% (overlap 73.1%, efficiency 87.2%); MemoryTracker and the
# per-step torch.cuda values equal to memory_stats(); gpu_zone 15878 ns
# median, zone 203 ns, CUDATimer.measure 21104 ns, torch.cuda.Event pair
# 28590 ns.
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

# a load for the energy and readings checks: SECONDS of 2 s of matmuls
# then 1 s idle, so that power rises and falls
cat >"$WORK/load.py" <<'EOF'
import sys, time
import torch
end = time.time() + float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
while time.time() < end:
    busy = time.time()
    while time.time() - busy < 2.0 and time.time() < end:
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()
    time.sleep(1.0)
EOF

cat >"$WORK/energy.py" <<'EOF'
# the energy counter's increase against the power readings integrated over
# the same span, GPU 0 of report.json's series
import json, sys
report = json.load(open(sys.argv[1] + "/report.json"))
series = {(m["metric"], m.get("gpu")): m for m in report["series"]["metrics"]}
energy, power = series.get(("gpu_energy_joules", 0)), series.get(("gpu_power_watts", 0))
if not energy or not power or len(energy["t_s"]) < 2:
    print("energy: no energy counter or power series on GPU 0: not checked (the GPU or driver lacks one)")
    sys.exit(0)
t0, t1 = energy["t_s"][0], energy["t_s"][-1]
counter = energy["mean"][-1] - energy["mean"][0]
t, w = power["t_s"], power["mean"]
integral = sum((t[i + 1] - t[i]) * (w[i] + w[i + 1]) / 2 for i in range(len(t) - 1) if t[i] >= t0 and t[i + 1] <= t1)
if integral <= 0:
    print("energy: FAILED: no power readings inside the counter's span")
    sys.exit(1)
ratio = counter / integral
ok = abs(ratio - 1) <= 0.05
print("energy over %.1f s: counter %.1f J, integrated power %.1f J, counter/integral %.4f (%d power readings, "
      "mean %.1f W, max %.1f W): %s" % (t1 - t0, counter, integral, ratio, len(w), sum(w) / len(w), max(w),
                                         "ok (within 5%)" if ok else "FAILED (more than 5% apart)"))
sys.exit(0 if ok else 1)
EOF

cat >"$WORK/readings.py" <<'EOF'
# stepscope snapshot against nvidia-smi --query-gpu read in the same second,
# GPU by GPU (by UUID); exit 1 when a judged reading disagrees in a round
import json, subprocess, sys, time
stepscope, rounds = sys.argv[1], int(sys.argv[2])
FIELDS = "uuid,memory.used,memory.total,temperature.gpu,utilization.gpu,power.draw,clocks.sm"
MIB = 1 << 20
# (label, stepscope metric, scale to nvidia-smi's unit, nvidia-smi column,
# tolerance, or None: printed, not judged)
READINGS = [("memory used MiB", "gpu_memory_used_bytes", 1.0 / MIB, 1, 32),
            ("memory total MiB", "gpu_memory_total_bytes", 1.0 / MIB, 2, 1),
            ("temperature C", "gpu_temperature_celsius", 1.0, 3, 3),
            ("utilisation %", "gpu_utilization_percent", 1.0, 4, None),
            ("power W", "gpu_power_watts", 1.0, 5, None),
            ("SM clock MHz", "gpu_sm_clock_hertz", 1e-6, 6, None)]


def number(text):
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def smi_rows():
    smi = subprocess.run(["nvidia-smi", "--query-gpu=" + FIELDS, "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in smi.strip().splitlines():
        cols = [c.strip() for c in line.split(",")]
        rows[cols[0]] = cols
    return rows


bad = []
for r in range(rounds):
    # nvidia-smi just before and just after the snapshot: under a load that
    # starts and stops, a temperature can move several degrees within the
    # second they take, so a reading is judged against the span of the two
    before = smi_rows()
    snap = json.loads(subprocess.run([stepscope, "snapshot", "--wait", "200"], capture_output=True, text=True,
                                     check=True).stdout)
    after = smi_rows()
    for g in snap.get("gpus", []):
        row, row_after = before.get(g.get("uuid")), after.get(g.get("uuid"))
        if row is None or row_after is None:
            print("round %d GPU %s: %s not in nvidia-smi's list" % (r + 1, g.get("index"), g.get("uuid")))
            bad.append("GPU %s not matched" % g.get("index"))
            continue
        print("round %d GPU %s %s (%s):" % (r + 1, g.get("index"), g.get("name"), g.get("source")))
        metrics = g.get("metrics", {})
        for label, key, scale, col, tolerance in READINGS:
            value = (metrics.get(key) or {}).get("value")
            ours = value * scale if value is not None else None
            theirs, theirs_after = number(row[col]), number(row_after[col])
            if ours is None or theirs is None or theirs_after is None:
                verdict = "not read (stepscope %s, nvidia-smi %r, %r)" % (ours, row[col], row_after[col])
            elif tolerance is None:
                verdict = "printed (moves within a second)"
            elif min(theirs, theirs_after) - tolerance <= ours <= max(theirs, theirs_after) + tolerance:
                verdict = "ok (within %g)" % tolerance
            else:
                verdict = "FAILED (more than %g outside)" % tolerance
                bad.append("round %d GPU %s %s: stepscope %.1f, nvidia-smi %.1f before and %.1f after"
                           % (r + 1, g.get("index"), label, ours, theirs, theirs_after))
            print("  %-17s stepscope %10s  nvidia-smi before/after %10s %10s  %s" % (
                label, "-" if ours is None else "%.1f" % ours, "-" if theirs is None else "%.1f" % theirs,
                "-" if theirs_after is None else "%.1f" % theirs_after, verdict))
    time.sleep(1.0)
print("readings: " + ("FAILED: " + "; ".join(bad) if bad else "stepscope agrees with nvidia-smi"))
sys.exit(1 if bad else 0)
EOF

cat >"$WORK/tools.py" <<'EOF'
# the seed classes on the GPU: CUDATimer and StreamProfiler against
# torch.cuda.Event pairs on the same regions, MemoryTracker against
# torch.cuda.memory_stats(), and torch.cuda.memory_allocated() read at the
# end of each step for the per-step values report.json must carry
import json, statistics, sys
import torch
import stepscope
from stepscope.gpu_tools import stream_figures

out_path = sys.argv[1]
bad = []
N = 2048
a = torch.randn(N, N, device="cuda")
b = torch.randn(N, N, device="cuda")
torch.cuda.synchronize()


def event():
    return torch.cuda.Event(enable_timing=True)


def judge(label, ours, theirs, rel=0.02, abs_ms=0.0):
    diff = ours - theirs
    ok = abs(diff) <= rel * abs(theirs) + abs_ms
    print("  %-30s stepscope %10.4f  torch.cuda.Event %10.4f  %+7.2f%%  %s" % (
        label, ours, theirs, 100 * diff / theirs if theirs else 0.0, "ok" if ok else "FAILED"))
    if not ok:
        bad.append("%s: stepscope %.4f, torch.cuda.Event %.4f" % (label, ours, theirs))


def count(label, got, want):
    print("  %-30s %d (want %d)  %s" % (label, got, want, "ok" if got == want else "FAILED"))
    if got != want:
        bad.append("%s: %d, want %d" % (label, got, want))


print("CUDATimer.measure: 30 regions of (a @ b) @ b, each between two torch.cuda.Events (within 2%)")
timer = stepscope.CUDATimer()
# One region first, left out of the comparison: the process's first GPU
# zone creates its CUDA events (a driver call of milliseconds on the CPU),
# and on a GPU that has caught up the torch.cuda.Events outside the block
# see that CPU time too (seen on an H100: 55.2 ms against 52.4 ms, the
# other 29 regions within 0.4%).
with timer.measure("timer_warmup"):
    (a @ b) @ b
pairs = []
for _ in range(30):
    s, e = event(), event()
    s.record()
    with timer.measure("timer_region"):
        (a @ b) @ b
    e.record()
    pairs.append((s, e))
st = timer.get_stats("timer_region")     # synchronize=True: waits with gpu_wait, no device sync
latest = timer.get_elapsed("timer_region")
torch.cuda.synchronize()
ms = [s.elapsed_time(e) for s, e in pairs]
count("measurements resolved", st["count"], 30)
judge("mean ms", st["mean"], statistics.mean(ms))
judge("min ms", st["min"], min(ms))
judge("max ms", st["max"], max(ms))
judge("latest (get_elapsed) ms", latest, ms[-1])

print("CUDATimer.time: warmup 3, repeat 20, a torch.cuda.Event pair inside each run (within 2%)")
inner = []


def work():
    s, e = event(), event()
    s.record()
    (a @ b) @ b
    e.record()
    inner.append((s, e))


st = stepscope.CUDATimer(warmup=3, repeat=20).time("timer_bench", work)
torch.cuda.synchronize()
ms = [s.elapsed_time(e) for s, e in inner[3:]]
count("runs of fn", len(inner), 23)
count("measured runs", st["count"], 20)
judge("mean ms", st["mean"], statistics.mean(ms))
judge("median ms", st["median"], statistics.median(ms))

print("StreamProfiler: two streams of 40 4096x4096 matmuls, the second started after the first's 10th")
M = 4096
c = torch.randn(M, M, device="cuda")
s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
# Each stream's first matmul sets up cuBLAS for it (tens of ms on the CPU,
# seen on an H100: stream b then began only as a ended), and each zone
# name's first use builds its objects: both done before the block, so it
# measures how the streams' work overlaps, not the set-up.
for st_ in (s1, s2):
    with torch.cuda.stream(st_):
        for zname in ("stream_a", "stream_b"):
            with stepscope.gpu_zone(zname):
                c @ c
torch.cuda.synchronize()
stepscope.gpu_wait(5.0)
ev = {k: event() for k in ("ref", "a0", "a1", "b0", "b1")}
mid = torch.cuda.Event()
prof = stepscope.StreamProfiler(num_streams=2, name="gpu_check.streams")
with prof:
    ev["ref"].record()
    with torch.cuda.stream(s1):
        s1.wait_event(ev["ref"])
        ev["a0"].record()
        with stepscope.gpu_zone("stream_a"):
            for i in range(40):
                x = c @ c
                if i == 9:
                    mid.record()
        ev["a1"].record()
    with torch.cuda.stream(s2):
        s2.wait_event(mid)
        ev["b0"].record()
        with stepscope.gpu_zone("stream_b"):
            for i in range(40):
                y = c @ c
        ev["b1"].record()
    torch.cuda.current_stream().wait_stream(s1)
    torch.cuda.current_stream().wait_stream(s2)
ours = prof.get_stats()
prof.print_stream_efficiency()
torch.cuda.synchronize()
at = {k: round(ev["ref"].elapsed_time(e) * 1e6) for k, e in ev.items() if k != "ref"}
theirs = stream_figures([(1, "stream_a", s1.cuda_stream, at["a0"], at["a1"], (at["a1"] - at["a0"]) / 1e6),
                         (2, "stream_b", s2.cuda_stream, at["b0"], at["b1"], (at["b1"] - at["b0"]) / 1e6)], 2)
print("  torch.cuda.Event intervals from the block's first event: stream a %.4f-%.4f ms, stream b %.4f-%.4f ms"
      % (at["a0"] / 1e6, at["a1"] / 1e6, at["b0"] / 1e6, at["b1"] / 1e6))
count("GPU zones in the block", ours["zones"], 2)
for st_ in (s1, s2):
    mine = ours["streams"].get(st_.cuda_stream)
    if mine is None:
        bad.append("stream %#x: no GPU zone seen" % st_.cuda_stream)
        continue
    judge("busy ms, stream %#x" % st_.cuda_stream, mine["busy_ms"], theirs["streams"][st_.cuda_stream]["busy_ms"])
judge("GPU wall ms", ours["wall_ms"], theirs["wall_ms"])
judge("overlap ms", ours["overlap_ms"], theirs["overlap_ms"], rel=0, abs_ms=0.02 * theirs["wall_ms"])
for k in ("overlap", "concurrency", "efficiency"):
    print("  %-30s stepscope %10.4f  torch.cuda.Event %10.4f  (printed)" % (k, ours[k] or 0, theirs[k] or 0))

print("MemoryTracker: get_stats() against torch.cuda.memory_stats() read around the block")
try:
    from stepscope.memory import MemoryTracker
except ImportError as e:
    print("  MemoryTracker: not present (%s): skipped" % e)
else:
    torch.cuda.synchronize()
    keep = []
    before = torch.cuda.memory_stats()
    tracker = MemoryTracker()
    with tracker:
        for i in range(8):
            keep.append(torch.empty((i + 1) << 20, dtype=torch.uint8, device="cuda"))
        tmp = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
        del tmp
    after = torch.cuda.memory_stats()
    ms_ = tracker.get_stats()
    want = {"allocated": after["allocated_bytes.all.current"], "reserved": after["reserved_bytes.all.current"],
            "num_alloc": after["allocation.all.allocated"] - before["allocation.all.allocated"],
            "num_free": after["allocation.all.freed"] - before["allocation.all.freed"],
            "peak_reserved": after["reserved_bytes.all.peak"]}
    if ms_.get("peak_allocated_method") != "bound":
        want["peak_allocated"] = after["allocated_bytes.all.peak"]
    for k, v in want.items():
        got = ms_.get(k)
        ok = got == v
        print("  %-30s MemoryTracker %14s  torch.cuda.memory_stats() %14d  %s" % (k, got, v, "ok" if ok else "FAILED"))
        if not ok:
            bad.append("MemoryTracker %s: %s, memory_stats %d" % (k, got, v))
    rows = tracker.get_allocation_timeline()
    print("  peak_allocated_method %s; get_allocation_timeline(): %d rows; %s" % (
        ms_.get("peak_allocated_method"), len(rows), ms_.get("timeline_source")))
    # torch 2.1+ has timestamped history: the timeline must end at the
    # allocator's own total and peak where memory_stats() says, in time order
    if str(ms_.get("timeline_source", "")).startswith("torch allocation history"):
        checks = {"last row = allocated at exit": (rows[-1][1] if rows else None, after["allocated_bytes.all.current"]),
                  "rows in time order": (all(rows[i][0] <= rows[i + 1][0] for i in range(len(rows) - 1)), True)}
        if ms_.get("peak_allocated_method") == "history":
            checks["max row = peak_allocated"] = (max(r[1] for r in rows) if rows else None, ms_.get("peak_allocated"))
        for label, (got, want) in checks.items():
            print("  %-30s %s (want %s)  %s" % (label, got, want, "ok" if got == want else "FAILED"))
            if got != want:
                bad.append("timeline %s: %s, want %s" % (label, got, want))
    else:
        print("  timeline: no timestamped history in torch %s: sampled (printed, not judged)" % torch.__version__)
    del keep

print("per step: torch.cuda.memory_allocated() and memory_reserved() read at each step's end (12 steps)")
steps = {"allocated": [], "reserved": []}
held = None
for i in range(12):
    with stepscope.step():
        held = torch.empty(((i % 4) + 1) << 21, dtype=torch.uint8, device="cuda")
        (a @ b).sum()
        steps["allocated"].append(torch.cuda.memory_allocated())   # the step's last act
        steps["reserved"].append(torch.cuda.memory_reserved())
torch.cuda.synchronize()
stepscope.gpu_flush()
with open(out_path, "w") as f:
    json.dump({"bad": bad, "steps": steps}, f)
EOF

cat >"$WORK/tools_compare.py" <<'EOF'
# the per-step torch.cuda values in report.json against the loop's own readings
import json, sys
report = json.load(open(sys.argv[1] + "/report.json"))
side = json.load(open(sys.argv[2]))
values = {v["name"]: v for v in report["values"]}
bad = list(side["bad"])
for key, name in (("allocated", "torch.cuda.allocated_bytes"), ("reserved", "torch.cuda.reserved_bytes")):
    mine, v = side["steps"][key], values.get(name)
    if v is None:
        print("  %-28s not in report.json (this build records no torch.cuda values per step): skipped" % name)
        continue
    want = {"count": len(mine), "first": mine[0], "last": mine[-1], "min": min(mine), "max": max(mine)}
    got = {k: v.get(k) for k in want}
    ok = got == want
    print("  %-28s report %s  torch.cuda in the loop %s  %s" % (name, got, want, "ok" if ok else "FAILED"))
    if not ok:
        bad.append("%s: report %s, loop %s" % (name, got, want))
# trace.json: a track per stream the GPU zones ran on, and the timeline's counter
trace = json.load(open(sys.argv[1] + "/trace.json"))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
tracks = sorted({e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
                 and str(e.get("args", {}).get("name", "")).startswith("GPU ")})
counter = sum(1 for e in events if e.get("ph") == "C" and e.get("name") == "GPU memory allocated (torch)")
gpu_spans = sum(1 for e in events if e.get("cat") == "gpu" and e.get("ph") == "X")
print("  trace.json: GPU tracks %s, %d GPU spans, %d timeline counter points" % (tracks, gpu_spans, counter))
if len(tracks) < 2 or not gpu_spans:
    bad.append("trace.json: want GPU spans on two stream tracks, saw %s with %d spans" % (tracks, gpu_spans))
print("seed classes: " + ("FAILED: " + "; ".join(bad) if bad else "agree with torch.cuda.Event and torch.cuda"))
sys.exit(1 if bad else 0)
EOF

cat >"$WORK/cost.py" <<'EOF'
# CUDATimer.measure, a Python gpu_zone, a plain zone and a torch.cuda.Event pair, interleaved
import statistics, time
import torch
import stepscope
N, ROUNDS = 20000, 7


def per_call(body):
    t = time.perf_counter_ns()
    body()
    return (time.perf_counter_ns() - t) / N


def gpu_zones():
    for _ in range(N):
        with stepscope.gpu_zone("g"):
            pass


def zones():
    for _ in range(N):
        with stepscope.zone("z"):
            pass


timer = stepscope.CUDATimer(synchronize=False)


def timer_measures():
    for _ in range(N):
        with timer.measure("t"):
            pass


def event_pairs():
    for _ in range(N):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        end.record()


torch.cuda.synchronize()
res = {"gpu_zone": [], "zone": [], "torch.cuda.Event pair": [], "CUDATimer.measure": []}
for _ in range(ROUNDS):
    with stepscope.step():
        res["zone"].append(per_call(zones))
        res["gpu_zone"].append(per_call(gpu_zones))
        res["torch.cuda.Event pair"].append(per_call(event_pairs))
        res["CUDATimer.measure"].append(per_call(timer_measures))
    torch.cuda.synchronize()
    stepscope.gpu_flush()
    timer.reset()
for k, v in res.items():
    print("%-22s median %7.0f ns  range %.0f-%.0f ns" % (k, statistics.median(v), min(v), max(v)))
med = {k: statistics.median(v) for k, v in res.items()}
print("gpu_zone / zone: %.1fx   gpu_zone / torch.cuda.Event pair: %.2fx" % (
    med["gpu_zone"] / med["zone"], med["gpu_zone"] / med["torch.cuda.Event pair"]))
print("CUDATimer.measure / gpu_zone: %.2fx   CUDATimer.measure / torch.cuda.Event pair: %.2fx" % (
    med["CUDATimer.measure"] / med["gpu_zone"], med["CUDATimer.measure"] / med["torch.cuda.Event pair"]))
print("cuda_status: %s" % stepscope.cuda_status())
EOF

ENERGY_S=${GPU_CHECK_ENERGY_S:-15}
echo
echo "== energy: the counter against integrated power, over a $ENERGY_S s load"
PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} "$STEPSCOPE" run --no-live --no-auto -o "$WORK/energy" -- \
    "$PY" "$WORK/load.py" "$ENERGY_S" >"$WORK/energy.txt" 2>&1
if [ -f "$WORK/energy/report.json" ]; then
    grep -E '^(GPU|energy) ' "$WORK/energy.txt"
    "$PY" "$WORK/energy.py" "$WORK/energy" || status=1
else
    echo "energy: FAILED: stepscope run left no report"
    tail -n 20 "$WORK/energy.txt"
    status=1
fi

echo
echo "== readings: stepscope snapshot between two nvidia-smi reads, under load"
"$PY" "$WORK/load.py" 12 >/dev/null 2>&1 &
load=$!
sleep 4
"$PY" "$WORK/readings.py" "$STEPSCOPE" 3 || status=1
wait $load

echo
echo "== seed classes: CUDATimer, StreamProfiler, MemoryTracker and the per-step torch.cuda values"
PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} "$STEPSCOPE" run --no-live --no-auto -q -o "$WORK/tools" -- \
    "$PY" "$WORK/tools.py" "$WORK/tools.json"
rc=$?
if [ $rc -ne 0 ] || [ ! -f "$WORK/tools.json" ]; then
    echo "seed classes: FAILED: stepscope run exited $rc"
    status=1
else
    "$PY" "$WORK/tools_compare.py" "$WORK/tools" "$WORK/tools.json" || status=1
fi

echo
echo "== cost: CUDATimer.measure, a Python gpu_zone, a plain zone, a torch.cuda.Event pair (one process, interleaved)"
PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} "$STEPSCOPE" run --no-live --no-auto -q -o "$WORK/cost" -- \
    "$PY" "$WORK/cost.py" || status=1
exit $status
