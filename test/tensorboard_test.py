#!/usr/bin/env python3
"""tensorboard_test.py - TensorBoard event files, end to end.

    tensorboard_test.py BUILD_DIR

`stepscope run --tensorboard DIR` on the test workload (zones "a" and
"b", the value "loss", the counter "samples", a collective wait
"all_reduce", one GPU of the fake NVML) and on a Python script using
the stepscope module, then every record of every event file read back with a
TFRecord reader written here (its own bit-at-a-time CRC-32C) and decoded
with a schema declared here and compiled by protoc (Debian's
protobuf-compiler, python3-protobuf): both CRCs of every record, the
file_version record first, the step numbers (exactly report.json's rows,
in order, per rank), and the values against report.json's (step time,
phase self times, the wait, loss, samples) and steps.csv's (the machine
readings) within float32 rounding.  `stepscope report --format
tensorboard` of the same run gives the same events; without -o it is a
usage error.  A two-rank job (two processes with RANK set) writes
DIR/rank-0 and DIR/rank-1.  A --tensorboard DIR that cannot be a
directory stops the run before COMMAND starts (which would make a marker
file); `stepscope run -o D` removes the event files an earlier run wrote
into D and leaves another writer's.

Without protoc or the protobuf module, or without the Python module (a
sanitizer build), the test says so and exits 77 (skipped) after the
checks it could make.
"""
import csv
import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import tally
from tally import check, skip

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
STEPSCOPE = os.path.join(BUILD, "stepscope")
WORKLOAD = os.path.join(BUILD, "test_workload")
FAKE_NVML = os.path.join(BUILD, "fakes", "libfake_nvml.so")


# The schema: only the fields stepscope writes, with TensorBoard's field
# numbers (tensorboard/compat/proto/event.proto and summary.proto),
# declared here rather than copied.
SCHEMA = """
syntax = "proto3";
package stepscope_test;
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what {
    string file_version = 3;
    Summary summary = 5;
  }
}
message Summary {
  message Value {
    string tag = 1;
    oneof value {
      float simple_value = 2;
    }
  }
  repeated Value value = 1;
}
"""


PY_WORKLOAD = """
import time, stepscope
for i in range(6):
    with stepscope.step():
        with stepscope.zone("forward"):
            time.sleep(0.004)
        with stepscope.zone("backward"):
            time.sleep(0.002)
        stepscope.record("loss", 2.0 / (i + 1))
        stepscope.count("samples", 32)
"""


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    """Every record's data, both CRCs checked."""
    with open(path, "rb") as f:
        blob = f.read()
    out, off, bad = [], 0, 0
    while off < len(blob):
        if off + 12 > len(blob):
            check(False, f"{path}: a truncated header at {off}")
            break
        (length,) = struct.unpack_from("<Q", blob, off)
        (len_crc,) = struct.unpack_from("<I", blob, off + 8)
        bad += len_crc != masked(crc32c(blob[off:off + 8]))
        data = blob[off + 12:off + 12 + length]
        if len(data) != length or off + 16 + length > len(blob):
            check(False, f"{path}: a truncated record at {off}")
            break
        (data_crc,) = struct.unpack_from("<I", blob, off + 12 + length)
        bad += data_crc != masked(crc32c(data))
        out.append(data)
        off += 16 + length
    check(bad == 0, f"{path}: {bad} CRCs do not match")
    return out


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same_f32(got, want):
    """got (a float32 read back) is want rounded to float32."""
    return got == f32(want) or abs(got - want) <= abs(want) * 2.0 ** -23


def run(args, env=None, expect=0):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    check(p.returncode == expect, f"{' '.join(args)}: exit {p.returncode}, wanted {expect}: {p.stderr[-2000:]}")
    return p


class Decoder:
    def __init__(self, tmp):
        self.Event = None
        if not shutil.which("protoc"):
            self.why = "protoc is not installed (Debian: protobuf-compiler)"
            return
        try:
            import google.protobuf  # noqa: F401
        except ImportError:
            self.why = "the protobuf module is not installed (Debian: python3-protobuf)"
            return
        with open(os.path.join(tmp, "tb_event.proto"), "w") as f:
            f.write(SCHEMA)
        p = subprocess.run(["protoc", "-I", tmp, "--python_out", tmp, os.path.join(tmp, "tb_event.proto")],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"protoc: {p.stderr}")
        sys.path.insert(0, tmp)
        import tb_event_pb2
        self.Event = tb_event_pb2.Event

    def events(self, path):
        """The file's events: the first must be the file_version record."""
        recs = records(path)
        evs = []
        for i, data in enumerate(recs):
            e = self.Event()
            e.ParseFromString(data)
            check(e.SerializeToString() == data, f"{path}: record {i} is not canonical protobuf")
            evs.append(e)
        check(len(evs) > 0 and evs[0].WhichOneof("what") == "file_version" and evs[0].file_version == "brain.Event:2",
              f"{path}: the first record is not file_version brain.Event:2")
        check(all(e.WhichOneof("what") == "summary" for e in evs[1:]), f"{path}: a record past the first is no summary")
        return evs[1:]


def event_files(d):
    return sorted(glob.glob(os.path.join(d, "**", "events.out.tfevents.*"), recursive=True))


def scalars(e):
    return {v.tag: v.simple_value for v in e.summary.value}


def check_against_report(dec, tb, rundir, nsteps, waits=True):
    """One process, no rank: one file in tb itself, its events the rows
    of report.json and steps.csv."""
    files = event_files(tb)
    check(len(files) == 1 and os.path.dirname(files[0]) == tb, f"one event file in {tb} itself: {files}")
    if not files:
        return
    name = os.path.basename(files[0])
    check(name.startswith("events.out.tfevents.") and name.endswith(".stepscope"), f"file name {name}")
    with open(os.path.join(rundir, "report.json")) as f:
        rep = json.load(f)
    rows = rep["steps"]["rows"]
    with open(os.path.join(rundir, "steps.csv"), newline="") as f:
        table = list(csv.DictReader(f))
    evs = dec.events(files[0])
    check([e.step for e in evs] == [r["index"] for r in rows], "the events' steps are report.json's rows, in order")
    check(len(rows) == nsteps, f"{nsteps} steps ({len(rows)})")
    started = rep["started_unix_s"]
    compared = {"step": 0, "phase": 0, "wait": 0, "loss": 0, "samples": 0, "machine": 0}
    for e, row, line in zip(evs, rows, table):
        s = scalars(e)
        want_wall = started + row["start_s"] + row["duration_s"]
        check(abs(e.wall_time - want_wall) < 1e-6, f"step {e.step}: wall_time {e.wall_time!r} vs {want_wall!r}")
        check(same_f32(s.get("stepscope/step_ms", math.nan), row["duration_s"] * 1e3),
              f"step {e.step}: step_ms {s.get('stepscope/step_ms')} vs {row['duration_s'] * 1e3}")
        compared["step"] += 1
        for zone, v in row["zones_self_s"].items():
            tag = f"stepscope/phase/{zone}_ms"
            check(same_f32(s.get(tag, math.nan), v * 1e3), f"step {e.step}: {tag} {s.get(tag)} vs {v * 1e3}")
            compared["phase"] += 1
        for wait, v in row["waits_s"].items():
            tag = f"stepscope/wait/{wait}_ms"
            check(same_f32(s.get(tag, math.nan), v * 1e3), f"step {e.step}: {tag} {s.get(tag)} vs {v * 1e3}")
            compared["wait"] += 1
        loss = row["values"].get("loss")
        check(loss is not None and same_f32(s.get("stepscope/value/loss", math.nan), loss),
              f"step {e.step}: loss {s.get('stepscope/value/loss')} vs {loss}")
        compared["loss"] += 1
        n = row["counters"].get("samples")
        check(same_f32(s.get("stepscope/counter/samples", math.nan), n), f"step {e.step}: samples")
        check(same_f32(s.get("stepscope/throughput/samples_per_s", math.nan), n / row["duration_s"]),
              f"step {e.step}: samples_per_s")
        compared["samples"] += 1
        # the machine readings: steps.csv's ":mean" cells, bytes in MiB
        want_tags = set()
        for col, cell in line.items():
            if not col.endswith(":mean") or cell == "":
                continue
            stem = col[:-len(":mean")]
            value = float(cell)
            if stem.startswith("sensor:"):
                _, label, unit = stem.split(":", 2)
                tag = f"sensor/{label}_{unit}"
            else:
                tag = stem.replace(":", "/")
                if tag.endswith("_bytes"):
                    tag, value = tag[:-len("_bytes")] + "_mib", value / 1048576.0
            tag = "stepscope/machine/" + tag
            want_tags.add(tag)
            check(same_f32(s.get(tag, math.nan), value), f"step {e.step}: {tag} {s.get(tag)} vs {value}")
            compared["machine"] += 1
        got_machine = {t for t in s if t.startswith("stepscope/machine/")}
        check(got_machine == want_tags, f"step {e.step}: machine tags {sorted(got_machine ^ want_tags)} differ")
    check(compared["wait"] == (len(rows) if waits else 0) and compared["phase"] >= 2 * len(rows),
          f"compared {compared}")
    check(compared["machine"] > 0, "some machine reading compared (workload_rss_mib at least)")
    check(any("stepscope/machine/workload_rss_mib" in scalars(e) for e in evs), "workload_rss_mib is written")
    gpu = [scalars(e) for e in evs if "stepscope/machine/gpu0/gpu_utilization_percent" in scalars(e)]
    check(not waits or len(gpu) > 0, "the fake GPU is read in the C workload's run")
    check(all(s["stepscope/machine/gpu0/gpu_utilization_percent"] == 10.0 and
                               s["stepscope/machine/gpu0/gpu_memory_used_mib"] == 1024.0 for s in gpu),
          f"the fake GPU's utilisation (10 %) and memory used (1024 MiB) in {len(gpu)} events")
    print("compared:", compared, flush=True)
    return evs


def same_events(dec, a_dir, b_dir):
    """The files of two renderings of one run: the same names, the same
    events, the same bytes."""
    a, b = event_files(a_dir), event_files(b_dir)
    rel = lambda fs, d: [os.path.relpath(f, d) for f in fs]  # noqa: E731
    check(rel(a, a_dir) == rel(b, b_dir), f"the same files: {rel(a, a_dir)} vs {rel(b, b_dir)}")
    for fa, fb in zip(a, b):
        with open(fa, "rb") as x, open(fb, "rb") as y:
            check(x.read() == y.read(), f"{fb} is {fa}, byte for byte")
        ea, eb = dec.events(fa), dec.events(fb)
        check(len(ea) == len(eb), f"{fa}: {len(ea)} events, {fb}: {len(eb)}")
        for x, y in zip(ea, eb):
            check(x.step == y.step and abs(x.wall_time - y.wall_time) < 1e-6 and
                  x.summary.SerializeToString() == y.summary.SerializeToString(),
                  f"step {x.step}: the report's event differs from the run's")


def main():
    tmp = tempfile.mkdtemp(prefix="sps-tb-")
    try:
        dec = Decoder(tmp)
        rundir, tb = os.path.join(tmp, "run"), os.path.join(tmp, "tb")
        # one GPU, the fake NVML's (utilisation 10 %, 1 GiB used), read every 10 ms
        # over steps of about 17 ms: readings over the steps even when a busy
        # machine delays the sampler's thread by several intervals
        gpu_env = dict(os.environ, STEPSCOPE_NVML_LIBRARY=FAKE_NVML, FAKE_NVML_GPUS="1")
        run([STEPSCOPE, "run", "-q", "-o", rundir, "--interval", "10", "--machine-interval", "10",
             "--tensorboard", tb, "--", WORKLOAD, "--steps", "12", "--wait-ms", "2", "--zone-sleep-ms", "15"],
            env=gpu_env)
        check(len(event_files(tb)) == 1, f"stepscope run --tensorboard wrote one file: {event_files(tb)}")

        # the usage errors: no -o, -o -
        p = run([STEPSCOPE, "report", rundir, "--format", "tensorboard"], expect=2)
        check("-o DIR" in p.stderr and p.stderr.count("\n") <= 2, f"a clear usage error: {p.stderr!r}")
        run([STEPSCOPE, "report", rundir, "--format", "tensorboard", "-o", "-"], expect=2)
        p = run([STEPSCOPE, "run", "--tensorboard"], expect=2)
        # --tensorboard DIR is checked before COMMAND runs, as -o is: one
        # line, exit 1, and the workload never starts (it would make its
        # marker); the -o directory's earlier files are left as they were
        blocker = os.path.join(tmp, "a-file")
        open(blocker, "w").close()
        bad, marker = os.path.join(tmp, "bad"), os.path.join(tmp, "workload-ran")
        for tbdir, why in ((os.path.join(blocker, "tb"), "Not a directory"), (blocker, "not a directory"),
                           ("/proc/nope", "No such file or directory")):
            p = run([STEPSCOPE, "run", "-q", "-o", bad, "--tensorboard", tbdir, "--", "sh", "-c", f"touch {marker}"],
                    expect=1)
            check(f"--tensorboard {tbdir}: {why}" in p.stderr and p.stderr.count("\n") == 1,
                  f"one line naming {tbdir}: {p.stderr!r}")
            check(not os.path.exists(marker), f"--tensorboard {tbdir}: the workload ran")
            check(not os.path.exists(bad), f"--tensorboard {tbdir}: the -o directory was made")
        # a missing directory is made, with its parents, before the workload
        made = os.path.join(tmp, "made", "tb")
        p = run([STEPSCOPE, "run", "-q", "-o", bad, "--tensorboard", made, "--", "sh", "-c",
                 f"test -d {made} && touch {marker}"])
        check(os.path.exists(marker), "the missing --tensorboard directory existed when the workload started")
        os.unlink(marker)
        # a directory this user cannot write into (root writes anywhere: as
        # root the run is made as nobody, through setpriv)
        ro_home = os.path.join(tmp, "ro-home")
        os.makedirs(os.path.join(ro_home, "ro"))
        os.chmod(os.path.join(ro_home, "ro"), 0o555)
        os.chmod(ro_home, 0o1777)  # sticky, as /tmp: else refused as a directory others may change
        os.chmod(tmp, 0o711)
        as_user = []
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            as_user = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] if setpriv else None
        if as_user is None:
            print("note: running as root without setpriv: the read-only --tensorboard directory is not checked")
        else:
            ro_marker = os.path.join(ro_home, "workload-ran")
            p = run(as_user + [STEPSCOPE, "run", "-q", "-o", os.path.join(ro_home, "out"), "--tensorboard",
                               os.path.join(ro_home, "ro"), "--", "sh", "-c", f"touch {ro_marker}"], expect=1)
            check("cannot write into it: Permission denied" in p.stderr and p.stderr.count("\n") == 1,
                  f"one line for a directory it cannot write into: {p.stderr!r}")
            check(not os.path.exists(ro_marker), "a read-only --tensorboard directory: the workload ran")
        # a run without steps: a note, no file, exit 0
        p = run([STEPSCOPE, "run", "-q", "-o", os.path.join(tmp, "nosteps"), "--tensorboard",
                 os.path.join(tmp, "tb0"), "--", WORKLOAD, "--steps", "0"])
        check("no step" in p.stderr and not event_files(os.path.join(tmp, "tb0")), f"no steps: {p.stderr!r}")

        tb2 = os.path.join(tmp, "tb2")
        run([STEPSCOPE, "report", rundir, "--format", "tensorboard", "-o", tb2])
        # again into the same directory: its file is replaced, not doubled
        p = run([STEPSCOPE, "report", rundir, "--format", "tensorboard", "-o", tb2])
        check(len(event_files(tb2)) == 1, f"rendered twice into one directory: one file {event_files(tb2)}")
        check(p.stderr == "", f"the same run again: no note {p.stderr!r}")
        # another run into a directory that holds the first's: a note
        other = os.path.join(tmp, "other")
        shutil.copytree(tb2, other)
        p = run([STEPSCOPE, "run", "-q", "-o", os.path.join(tmp, "run2"), "--tensorboard", other, "--",
                 WORKLOAD, "--steps", "3"])
        check("1 other event file beside these" in p.stderr and p.stderr.count("\n") == 1,
              f"a note about the other run's file: {p.stderr!r}")
        check(len(event_files(other)) == 2, "both runs' files are kept")

        # `run -o D --tensorboard D`, then `run -o D` again: D is the run's, and
        # the earlier run's event file goes with its other files; another
        # writer's event file in D stays.  Again with --tensorboard D: one
        # file, this run's, not two
        same = os.path.join(tmp, "same")
        run([STEPSCOPE, "run", "-q", "-o", same, "--tensorboard", same, "--", WORKLOAD, "--steps", "2"])
        first = event_files(same)
        check(len(first) == 1 and first[0].endswith(".stepscope"), f"run -o D --tensorboard D: one file {first}")
        theirs = os.path.join(same, "events.out.tfevents.1700000000.host.99.0")
        open(theirs, "wb").close()
        run([STEPSCOPE, "run", "-q", "-o", same, "--", WORKLOAD, "--steps", "2"])
        check(event_files(same) == [theirs], f"run -o D again: the earlier run's event file is gone: {event_files(same)}")
        run([STEPSCOPE, "run", "-q", "-o", same, "--tensorboard", same, "--", WORKLOAD, "--steps", "3"])
        run([STEPSCOPE, "run", "-q", "-o", same, "--tensorboard", same, "--", WORKLOAD, "--steps", "3"])
        ours = [f for f in event_files(same) if f != theirs]
        check(len(ours) == 1 and theirs in event_files(same), f"twice with --tensorboard D: one file of ours {ours}")

        # two ranks: two processes of one job, each with RANK set
        job, tbr = os.path.join(tmp, "job"), os.path.join(tmp, "tbr")
        script = (f"RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 {WORKLOAD} --steps 4 & "
                  f"RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 {WORKLOAD} --steps 6 & wait")
        run([STEPSCOPE, "run", "-q", "-o", job, "--tensorboard", tbr, "--", "sh", "-c", script])
        files = event_files(tbr)
        check([os.path.relpath(os.path.dirname(f), tbr) for f in files] == ["rank-0", "rank-1"],
              f"rank-0/ and rank-1/: {files}")

        if dec.Event is None:
            skip(dec.why)
            return

        check_against_report(dec, tb, rundir, 12)
        # the Python module's steps, zones, loss and samples
        pyrun, tbpy = os.path.join(tmp, "py"), os.path.join(tmp, "tbpy")
        if os.path.isdir(os.path.join(BUILD, "python", "stepscope")):
            run([STEPSCOPE, "run", "-q", "-o", pyrun, "--interval", "10", "--tensorboard", tbpy, "--",
                 "/usr/bin/python3", "-c", PY_WORKLOAD], env=dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python")))
            check_against_report(dec, tbpy, pyrun, 6, waits=False)
        else:
            skip(f"the Python run: no Python module in {BUILD}/python (a sanitizer build makes none)")
        same_events(dec, tb, tb2)
        with open(os.path.join(job, "report.json")) as f:
            rows = json.load(f)["steps"]["rows"]
        for r in (0, 1):
            fs = event_files(os.path.join(tbr, f"rank-{r}"))
            if fs:
                evs = dec.events(fs[0])
                want = [row["index"] for row in rows if row.get("rank") == r]
                check([e.step for e in evs] == want and len(want) == 4 + 2 * r,
                      f"rank {r}: steps {[e.step for e in evs]} vs {want}")
                durations = [row["duration_s"] * 1e3 for row in rows if row.get("rank") == r]
                check(all(same_f32(scalars(e)["stepscope/step_ms"], d) for e, d in zip(evs, durations)),
                      f"rank {r}: step_ms")
        tbr2 = os.path.join(tmp, "tbr2")
        run([STEPSCOPE, "report", job, "--format", "tensorboard", "-o", tbr2])
        same_events(dec, tbr, tbr2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(tally.exit_status())


if __name__ == "__main__":
    main()
