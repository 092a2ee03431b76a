#!/usr/bin/env python3
"""prom_test.py - `stepscope run --serve` and --prom-textfile, end to end.

    prom_test.py BUILD_DIR

A job of two ranks (two prom_workload processes with RANK=0 and RANK=1)
runs under `stepscope run --serve 127.0.0.1:PORT --prom-textfile`; a real
Prometheus server (Debian's prometheus package), started here on
127.0.0.1 with a generated config, a temporary storage directory and a
1 s scrape interval, scrapes it, and a PromQL rate() through its HTTP API
gives the job's step rate.  Also: promtool check metrics on the served
text and on the textfile, the OpenMetrics answer to Prometheus's Accept
header, the final textfile's histograms against report.json's step
count, and the two bad inputs (a port in use, a malformed address), after
which the job still runs and its exit code passes through.

Nothing here waits on a timing threshold: it waits for Prometheus to have
stored enough samples (with a hang limit far above what a loaded machine
needs), and the rate is checked against the job's own counts.  A tool
that is missing is said on stdout and the test exits 77 (skipped) after
running what it can without it.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import tally
from tally import check, skip

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
STEPSCOPE = os.path.join(BUILD, "stepscope")
PROM_WORKLOAD = os.path.join(BUILD, "prom_workload")
TEST_WORKLOAD = os.path.join(BUILD, "test_workload")
FAKE_NVML = os.path.join(BUILD, "fakes", "libfake_nvml.so")
HANG_S = 240  # only a hang limit: a loaded machine needs a fraction of it



def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, accept=None, timeout=10):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.headers.get("Content-Type", ""), r.read().decode()


def env():
    e = dict(os.environ)
    for k in ("STEPSCOPE_RUN_DIR", "STEPSCOPE_OUT", "STEPSCOPE_DISABLE", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        e.pop(k, None)
    e["STEPSCOPE_PROM_MS"] = "200"  # snapshots five times a second
    return e


# The one lint finding allowed: the GPU gauges' modelName label, spelled
# as dcgm-exporter's GPU metrics spell it (docs/prometheus.md says why).
MODELNAME_LINT = re.compile(r"^stepscope_gpu_[a-z_]+ label names should be written in 'snake_case' not 'camelCase'$")


def promtool_check(text, what):
    """promtool check metrics on text (the 0.0.4 format): it parses, and
    lints clean but for modelName.  None when promtool is absent."""
    if not shutil.which("promtool"):
        return None
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    findings = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    # exit 3: lint findings only (1: the text does not parse)
    ok = r.returncode == 0 or (r.returncode == 3 and all(MODELNAME_LINT.match(l) for l in findings)
                               and "modelName=" in text)
    check(ok, "promtool check metrics on %s (exit %d): %s" % (what, r.returncode, findings))
    return ok


def parse_text(text):
    """The samples of a 0.0.4 exposition: [(name, {label: value}, float)]."""
    out = []
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = line_re.match(line)
        check(m is not None, "a sample line parses: %r" % line)
        if m:
            out.append((m.group(1), dict(label_re.findall(m.group(2) or "")), float(m.group(3))))
    return out


def samples_of(samples, name, **labels):
    return [(l, v) for n, l, v in samples if n == name and all(l.get(k) == str(x) for k, x in labels.items())]


# ------------------------------------------------------------- prometheus


class Prometheus:
    def __init__(self, tmp, target_port):
        self.port = free_port()
        self.dir = os.path.join(tmp, "prometheus")
        os.makedirs(os.path.join(self.dir, "data"))
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: stepscope\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % target_port)
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("prometheus exited: see " + self.log.name)
            try:
                if http_get("http://127.0.0.1:%d/-/ready" % self.port, timeout=2)[1]:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus never became ready")

    def query(self, q, at=None):
        args = {"query": q}
        if at is not None:
            args["time"] = "%.3f" % at
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode(args))
        body = json.loads(http_get(url)[1])
        if body.get("status") != "success":
            raise RuntimeError("query %s: %s" % (q, body))
        return body["data"]["result"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def wait_for_samples(prom, series, n):
    """Wait until prometheus holds n increasing samples of series."""
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        r = prom.query("%s[5m]" % series)
        if r:
            values = [float(v) for _, v in r[0]["values"]]
            if len(values) >= n and values[-1] > values[0]:
                return r[0]["values"]
        time.sleep(0.5)
    return None


# -------------------------------------------------------------- the job


def scrape_job(tmp, have_prometheus):
    port = free_port()
    stop = os.path.join(tmp, "stop")
    out = os.path.join(tmp, "out")
    textfile = os.path.join(tmp, "job.prom")
    launcher = ("RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 %s %s & "
                "RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 %s %s; wait") % (PROM_WORKLOAD, stop, PROM_WORKLOAD, stop)
    prom = Prometheus(tmp, port) if have_prometheus else None
    job = subprocess.Popen([STEPSCOPE, "run", "-q", "--serve", "127.0.0.1:%d" % port, "--prom-textfile", textfile,
                            "-o", out, "--", "sh", "-c", launcher], env=env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        # the served text, in both formats, once both ranks have stepped
        deadline = time.monotonic() + HANG_S
        text = ""
        while time.monotonic() < deadline:
            try:
                text = http_get("http://127.0.0.1:%d/metrics" % port)[1]
            except OSError:
                text = ""
            if 'stepscope_steps_total{step="step",rank="1"' in text and 'rank="0"' in text:
                break
            time.sleep(0.2)
        check('stepscope_steps_total{step="step",rank="0"' in text, "served: rank 0's steps")
        check(promtool_check(text, "the served text") is not False, "served text passes promtool")
        ctype, om = http_get("http://127.0.0.1:%d/metrics" % port,
                             accept="application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
        check(ctype.startswith("application/openmetrics-text"), "OpenMetrics content type: " + ctype)
        check(om.endswith("# EOF\n"), "OpenMetrics ends with # EOF")
        check("# TYPE stepscope_steps counter" in om and "# TYPE stepscope_steps_total counter" in text,
              "a counter's family is named without _total in OpenMetrics only")
        check("# UNIT stepscope_step_duration_seconds seconds" in om, "OpenMetrics UNIT line")
        ctype4, _ = http_get("http://127.0.0.1:%d/metrics" % port, accept="text/plain")
        check(ctype4.startswith("text/plain; version=0.0.4"), "0.0.4 content type: " + ctype4)
        try:
            http_get("http://127.0.0.1:%d/nothing" % port)
            check(False, "an unknown path is 404")
        except urllib.error.HTTPError as e:
            check(e.code == 404, "an unknown path is 404: %d" % e.code)

        stored = None
        if prom:
            stored = wait_for_samples(prom, 'stepscope_steps_total{rank="0"}', 5)
            check(stored is not None, "prometheus stored 5 increasing samples of rank 0's steps")
            up = prom.query('up{job="stepscope"}')
            check(up and up[0]["value"][1] == "1", "the scrape is up (OpenMetrics parsed): %s" % up)
    finally:
        open(stop, "w").close()
        stdout, stderr = job.communicate(timeout=HANG_S)
    check(job.returncode == 0, "the job exits 0: %d %s" % (job.returncode, stderr))
    counts = [int(x) for x in stdout.split()]
    check(len(counts) == 2, "both ranks said their steps: %r" % stdout)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    nsteps = report["steps"]["count"]
    check(nsteps == sum(counts), "report.json counts every step: %d vs %r" % (nsteps, counts))

    final = textfile_checks(textfile, nsteps, counts)
    if prom:
        try:
            if stored:
                rate_checks(prom, stored, final)
        finally:
            prom.stop()


def textfile_checks(textfile, nsteps, counts):
    """The textfile written when the job ended: every step of the report."""
    with open(textfile) as f:
        text = f.read()
    promtool_check(text, "the textfile")
    s = parse_text(text)
    steps = samples_of(s, "stepscope_step_duration_seconds_count")
    check(sum(v for _, v in steps) == nsteps, "histogram counts add up to report.json's %d steps: %r" % (nsteps, steps))
    check(sorted(l.get("rank") for l, _ in steps) == ["0", "1"], "one step series per rank: %r" % steps)
    total = samples_of(s, "stepscope_steps_total")
    check(sum(v for _, v in total) == nsteps, "stepscope_steps_total adds up to %d" % nsteps)
    per_rank = {l["rank"]: v for l, v in total}
    check(sorted(per_rank.values()) == sorted(float(c) for c in counts), "each rank's steps: %r %r" % (per_rank, counts))
    for rank, n in per_rank.items():
        inf = samples_of(s, "stepscope_step_duration_seconds_bucket", rank=rank, le="+Inf")
        check(len(inf) == 1 and inf[0][1] == n, "rank %s: +Inf bucket = its steps" % rank)
        buckets = [v for l, v in samples_of(s, "stepscope_step_duration_seconds_bucket", rank=rank)]
        check(buckets == sorted(buckets), "rank %s: buckets are cumulative" % rank)
        # a step sleeps 5 ms, its forward 2 ms: none can fall at or below 1 ms
        check(samples_of(s, "stepscope_step_duration_seconds_bucket", rank=rank, le="0.001")[0][1] == 0,
              "rank %s: no step of 1 ms or less" % rank)
        fwd = samples_of(s, "stepscope_zone_duration_seconds_bucket", rank=rank, zone="forward", le="0.001")
        check(fwd and fwd[0][1] == 0, "rank %s: no forward of 1 ms or less" % rank)
        fwd_n = samples_of(s, "stepscope_zone_duration_seconds_count", rank=rank, zone="forward")
        check(fwd_n and fwd_n[0][1] == n, "rank %s: one forward a step" % rank)
        smp = samples_of(s, "stepscope_samples_total", rank=rank)
        check(smp and smp[0][1] == 4 * n, "rank %s: 4 samples a step" % rank)
        hosts = {l.get("Hostname") for l, _ in samples_of(s, "stepscope_steps_total", rank=rank)}
        check(hosts == {socket.gethostname()}, "rank %s: Hostname %r" % (rank, hosts))
    return per_rank


def rate_checks(prom, stored, per_rank):
    """rate() over the samples prometheus stored while the job ran."""
    t_first, t_last = float(stored[0][0]), float(stored[-1][0])
    window = max(int(t_last - t_first), 1)
    r = prom.query('rate(stepscope_steps_total{rank="0"}[%ds])' % window, at=t_last)
    check(len(r) == 1, "one rate series for rank 0: %r" % r)
    if not r:
        return
    rate = float(r[0]["value"][1])
    raw = prom.query('stepscope_steps_total{rank="0"}[%ds]' % window, at=t_last)[0]["values"]
    values = [float(v) for _, v in raw]
    check(values == sorted(values), "the stored counts never go down: %r" % values)
    check(values[-1] <= per_rank["0"], "no more steps stored than rank 0 made: %r vs %r" % (values[-1], per_rank))
    measured = (values[-1] - values[0]) / (float(raw[-1][0]) - float(raw[0][0]))
    print("rate(stepscope_steps_total{rank=\"0\"}[%ds]) = %.2f steps/s; from the stored samples %.2f; "
          "rank 0 made %d steps" % (window, rate, measured, per_rank["0"]))
    check(rate > 0, "the step rate is not zero")
    # every step sleeps 5 ms: 200/s is out of reach, whatever the load (the
    # margin covers where in a step each scrape's snapshot fell)
    check(rate <= 200 * 1.5, "the rate is one the job can make: %.1f" % rate)
    check(0.5 * measured <= rate <= 2 * measured, "the rate agrees with the stored counts: %.2f vs %.2f"
          % (rate, measured))


# ------------------------------------------------------------------ GPUs


def gpu_gauges(tmp):
    """The GPU gauges of a run whose sampler reads the suite's fake NVML
    (two GPUs, known readings), with dcgm-exporter's labels."""
    out = os.path.join(tmp, "gpus")
    textfile = os.path.join(tmp, "gpus.prom")
    e = env()
    e.pop("CUDA_VISIBLE_DEVICES", None)
    e.update({"STEPSCOPE_NVML_LIBRARY": FAKE_NVML, "FAKE_NVML_GPUS": "2",
              "FAKE_NVML_UUIDS": "GPU-aaaa-1111,GPU-bbbb-2222"})
    r = subprocess.run([STEPSCOPE, "run", "-q", "--prom-textfile", textfile, "-o", out, "--", TEST_WORKLOAD,
                        "--steps", "3", "--sleep-ms", "600"], env=e, capture_output=True, text=True, timeout=HANG_S)
    check(r.returncode == 0, "the GPU run exits 0: %s" % r.stderr)
    with open(textfile) as f:
        text = f.read()
    promtool_check(text, "the GPU textfile")
    s = parse_text(text)
    host = socket.gethostname()
    for i, uuid in enumerate(("GPU-aaaa-1111", "GPU-bbbb-2222")):
        labels = {"gpu": str(i), "UUID": uuid, "modelName": "Fake NVIDIA GPU %d" % i, "Hostname": host}
        want = {"stepscope_gpu_utilization_percent": 10.0 * (i + 1),
                "stepscope_gpu_memory_used_bytes": float((i + 1) << 30),
                "stepscope_gpu_memory_total_bytes": float(80 << 30),
                "stepscope_gpu_temperature_celsius": 40.0 + i}
        for name, value in want.items():
            got = [v for l, v in samples_of(s, name, gpu=i) if l == labels]
            check(got == [value], "%s of GPU %d with dcgm-exporter's labels: %r" % (name, i, samples_of(s, name, gpu=i)))
        power = samples_of(s, "stepscope_gpu_power_watts", gpu=i)
        check(len(power) == 1 and abs(power[0][1] - (100 + i / 1000.0)) < 1e-9, "GPU %d power: %r" % (i, power))


# ----------------------------------------------------------- bad input


def bad_serve(tmp, addr, expect, tag):
    """The job runs, its exit code passes through, one line says why."""
    out = os.path.join(tmp, "bad-" + tag)
    r = subprocess.run([STEPSCOPE, "run", "-q", "--serve", addr, "-o", out, "--", TEST_WORKLOAD, "--steps", "3",
                        "--exit", "7"], env=env(), capture_output=True, text=True, timeout=HANG_S)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 7, "%s: the job's exit code passes through: %d" % (tag, r.returncode))
    check(len(lines) == 1 and lines[0].startswith("stepscope: run: --serve") and expect in lines[0],
          "%s: one line naming the cause: %r" % (tag, lines))
    with open(os.path.join(out, "report.json")) as f:
        check(json.load(f)["steps"]["count"] == 3, "%s: the job ran and was reported" % tag)


def main():
    for path in (STEPSCOPE, PROM_WORKLOAD, TEST_WORKLOAD, FAKE_NVML):
        if not os.access(path, os.X_OK):
            print("FAIL: %s is not built" % path)
            return 1
    if not shutil.which("promtool"):
        skip("promtool is not installed (Debian: apt-get install prometheus): the text is not checked by it")
    have_prometheus = shutil.which("prometheus") is not None
    if not have_prometheus:
        skip("prometheus is not installed (Debian: apt-get install prometheus): no real scrape")
    tmp = tempfile.mkdtemp(prefix="stepscope-prom-")
    try:
        scrape_job(tmp, have_prometheus)
        gpu_gauges(tmp)
        with socket.socket() as held:  # a port in use
            held.bind(("127.0.0.1", 0))
            held.listen(1)
            bad_serve(tmp, "127.0.0.1:%d" % held.getsockname()[1], "Address already in use", "port-in-use")
        bad_serve(tmp, "localhost", "not HOST:PORT", "no-port")
        bad_serve(tmp, "127.0.0.1:99999", "not HOST:PORT", "port-too-big")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tally.exit_status()


if __name__ == "__main__":
    sys.exit(main())
