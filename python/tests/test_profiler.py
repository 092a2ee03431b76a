"""stepscope.Profiler, the first seed's PerformanceProfiler: the figures of a
block, partial results, nesting, threads, the leak rule, FLOPs, GPU figures
(from a played capture: this machine may have no GPU) and its zones in a
`stepscope run` report.  Most run in pytest's own process (no report:
conftest sets STEPSCOPE_OUT="")."""
import json
import re
import threading
import time

import pytest

import stepscope
from stepscope import profiler as profiler_module

def sampler_of(p):
    """The Profiler's sampler thread, or None."""
    with p._lock:
        return p._sampler[0] if p._sampler else None


def wait_for_next_sample(op):
    seen = op.samples
    while op.samples == seen:
        time.sleep(0.001)


def test_names_and_the_seed_alias():
    assert stepscope.PerformanceProfiler is stepscope.Profiler
    p = stepscope.PerformanceProfiler()
    assert (p.track_gpu, p.track_carbon, p.detailed_memory, p.memory_interval, p.estimate_flops) == (
        True, False, False, 0.5, False)
    assert p.sample_interval == 0.5
    assert stepscope.Profiler(memory_interval=0.2, detailed_memory=True).sample_interval == pytest.approx(0.05)
    assert not p.has_results()


def test_timing_of_a_cpu_bound_block():
    p = stepscope.Profiler()
    with p.profile("spin"):
        total = 0
        for i in range(300000):
            total += i * i
    m = p.get_metrics()
    t = m.timing
    assert m.operation_name == "spin" and m.completed and m.error is None
    assert t.wall_time_s > 0 and t.cpu_time_s > 0
    assert t.user_time_s >= 0 and t.system_time_s >= 0
    assert t.user_time_s + t.system_time_s == pytest.approx(t.cpu_time_s, abs=1e-12)
    assert m.compute.cpu_utilization_percent == pytest.approx(t.cpu_time_s / t.wall_time_s * 100)
    # process CPU over wall: one busy thread, whatever else the machine does;
    # getrusage ticks may put it a little over 100
    assert 0 < m.compute.cpu_utilization_percent < 150
    assert p.get_timing_breakdown() == {"spin": t.wall_time_s}


def test_a_block_of_system_calls_has_system_time():
    import os
    import resource
    p = stepscope.Profiler()
    with p.profile("syscalls"):
        # read /dev/zero (the kernel fills the buffer) until this process has
        # spent 20 ms more in the kernel: by the CPU clock, not the wall
        stime0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
        with open("/dev/zero", "rb", buffering=0) as zero:
            while resource.getrusage(resource.RUSAGE_SELF).ru_stime - stime0 < 0.02:
                zero.read(1 << 20)
    t = p.get_metrics().timing
    assert t.system_time_s >= 0.02
    assert t.user_time_s + t.system_time_s == pytest.approx(t.cpu_time_s, abs=1e-12)
    assert t.cpu_time_s <= t.wall_time_s * (os.cpu_count() or 1) + 0.05


def test_a_sleeping_block_uses_little_cpu():
    p = stepscope.Profiler()
    with p.profile("sleep"):
        time.sleep(0.05)
    m = p.get_metrics()
    assert m.timing.wall_time_s >= 0.05
    assert m.timing.cpu_time_s < m.timing.wall_time_s


def test_memory_of_a_block_that_keeps_64_mib():
    p = stepscope.Profiler(memory_interval=0.01)
    with p.profile("alloc"):
        block = bytearray(64 << 20)  # zero-filled: the pages are touched
    mem = p.get_metrics().memory
    assert mem.final_ram_mb - mem.initial_ram_mb >= 50
    assert mem.peak_ram_mb - mem.initial_ram_mb >= 50
    assert mem.peak_ram_mb >= max(mem.initial_ram_mb, mem.final_ram_mb)
    del block
    # get_current_memory() is read now: the 64 MiB are gone again
    assert p.get_current_memory() < mem.final_ram_mb - 50


def test_a_peak_between_samples_comes_from_the_high_water_mark(run_alone):
    # a fresh process (its high-water mark is its own), no sample in the
    # block: the 64 MiB, freed before the end, show only through VmHWM
    proc = run_alone("""
        import json, stepscope
        p = stepscope.Profiler(memory_interval=60)
        with p.profile("spike"):
            spike = bytearray(64 << 20)
            del spike
        print(json.dumps(p.get_metrics().to_dict()))
    """, STEPSCOPE_OUT="")
    m = json.loads(proc.stdout)
    mem = m["memory"]
    assert m["samples"] == 0
    assert mem["final_ram_mb"] - mem["initial_ram_mb"] < 10
    assert mem["peak_ram_mb"] - mem["initial_ram_mb"] >= 50


def test_a_block_that_grows_every_sample_is_a_leak(run_alone):
    # a fresh process: in the suite's own, memory earlier tests freed is
    # still resident, and the block's allocations reuse it without the RSS
    # growing (CI saw 36 MiB of RSS for 48 MiB allocated)
    proc = run_alone("""
        import json, time, stepscope
        p = stepscope.Profiler(memory_interval=0.01)
        kept = []
        with p.profile("leaky") as op:
            # 24 allocations, each followed by at least one sample: by count,
            # not by time, the same on a slow machine (looping until 24
            # samples made fewer allocations where a busy machine let the
            # sampler take several at once: CI saw 27 MiB of growth)
            for _ in range(24):
                kept.append(bytearray(2 << 20))
                seen = op.samples
                while op.samples == seen:
                    time.sleep(0.001)
        m = p.get_metrics()
        print(json.dumps({"samples": m.samples, "leak": m.memory.memory_leak_detected,
                          "growth": m.memory.peak_ram_mb - m.memory.initial_ram_mb, "notes": m.notes}))
    """, STEPSCOPE_OUT="")
    m = json.loads(proc.stdout)
    assert m["samples"] >= 24
    assert m["leak"] is True
    assert m["growth"] >= 40
    assert "memory_leak_detected" not in m["notes"]


def test_a_steady_block_is_not_a_leak():
    p = stepscope.Profiler(memory_interval=0.01)
    with p.profile("steady") as op:
        while op.samples < 16:
            bytearray(2 << 20)  # allocated and freed again every time
            wait_for_next_sample(op)
    m = p.get_metrics()
    assert m.samples >= 16
    assert m.memory.memory_leak_detected is False


def test_too_few_samples_cannot_judge_a_leak():
    p = stepscope.Profiler(memory_interval=60)
    with p.profile("short"):
        pass
    m = p.get_metrics()
    assert m.samples == 0 and m.memory.memory_leak_detected is None
    assert m.notes["memory_leak_detected"].startswith("0 RSS samples inside the block, 10 needed")


def series(values):
    s = profiler_module._RssSeries()
    for v in values:
        s.add(v)
    return s


@pytest.mark.parametrize("values, verdict", [
    ([100 + i for i in range(20)], True),                       # 1 MiB a sample, steadily
    ([100.0] * 20, False),                                      # level
    ([100.0] * 10 + [150.0] * 10, False),                       # one allocation halfway
    ([100 + 5 * min(i, 5) for i in range(20)], False),          # warms up, then level
    ([100 + 0.04 * i for i in range(20)], False),               # 0.76 MiB in all: under 1 MiB
    ([100 + i for i in range(9)], None),                        # 9 samples: too few
])
def test_the_leak_rule(values, verdict):
    assert profiler_module.judge_leak(series(values))[0] is verdict


def test_a_long_series_is_merged_but_keeps_its_slope():
    s = series(range(5000))
    assert s.samples == 5000 and s.peak == 4999
    points = s.values()
    assert len(points) <= profiler_module._SERIES_MAX_POINTS
    # each point the mean of as many samples: still 1 per sample, end to end
    assert profiler_module.fitted_growth(points) == pytest.approx(4999, rel=0.01)


def test_partial_results_when_the_block_raises():
    p = stepscope.Profiler()
    boom = ValueError("boom")
    with pytest.raises(ValueError) as raised:
        with p.profile("risky"):
            time.sleep(0.01)
            raise boom
    assert raised.value is boom  # unchanged
    assert p.has_results()
    m = p.get_metrics()
    assert m.operation_name == "risky"
    assert m.completed is False and m.error == "ValueError: boom"
    assert m.timing.wall_time_s >= 0.01
    assert "risky" in p.get_timing_breakdown()
    assert m.summary().endswith("raised ValueError: boom")
    assert p._open == []                           # the block is closed, raise or not


def test_nested_and_repeated_operations():
    p = stepscope.Profiler(memory_interval=0.01)
    walls = []
    with p.profile("epoch"):
        for _ in range(2):
            with p.profile("step"):
                time.sleep(0.005)
            walls.append(p.get_metrics("step").timing.wall_time_s)
    breakdown = p.get_timing_breakdown()
    assert breakdown["step"] == walls[0] + walls[1]   # repeated blocks add up
    assert breakdown["epoch"] >= breakdown["step"]    # nested: inside the parent's time
    assert p.get_metrics().operation_name == "epoch"  # the last to finish
    assert p.get_metrics("step").timing.wall_time_s == walls[1]
    assert p.get_metrics("step") is p.get_metrics("step")  # made once, when first asked for
    with pytest.raises(KeyError, match=re.escape("no operation named 'nope' has finished; known: 'step', 'epoch'")):
        p.get_metrics("nope")


def test_one_sampler_thread_per_profiler_that_outlives_a_block_briefly(monkeypatch):
    monkeypatch.setattr(profiler_module, "SAMPLER_LINGER_S", 3600.0)
    p = stepscope.Profiler(memory_interval=0.01)
    assert sampler_of(p) is None
    with p.profile("a") as op:
        sampler = sampler_of(p)
        assert sampler.is_alive() and sampler.name == profiler_module.SAMPLER_THREAD_NAME
        assert sampler.daemon                      # never holds the interpreter's exit
        with p.profile("b") as inner:
            assert sampler_of(p) is sampler        # one per Profiler
            wait_for_next_sample(inner)
        wait_for_next_sample(op)
    # it stays for the next block: a loop of blocks starts no thread per block
    with p.profile("c") as again:
        assert sampler_of(p) is sampler
        wait_for_next_sample(again)
    assert sampler_of(p) is sampler and sampler.is_alive()
    # with no block open for SAMPLER_LINGER_S it ends by itself
    monkeypatch.setattr(profiler_module, "SAMPLER_LINGER_S", 0.05)
    sampler.join(timeout=60)
    assert not sampler.is_alive() and sampler_of(p) is None
    with p.profile("d") as later:                 # and the next block starts a new one
        wait_for_next_sample(later)
    assert sampler_of(p) is not sampler
    p._stop_sampler()
    assert sampler_of(p) is None


def test_a_forked_child_profiles_with_its_own_sampler(run_alone):
    # the parent's sampler is running at the fork; the child has no such
    # thread and its lock is fresh: its blocks start their own sampler
    proc = run_alone("""
        import json, os, time, stepscope
        p = stepscope.Profiler(memory_interval=0.01)
        with p.profile("parent") as op:
            while op.samples < 2:
                time.sleep(0.001)
        pid = os.fork()
        if pid == 0:
            with p.profile("child") as op:
                give_up = time.monotonic() + 60     # a broken child would wait forever
                while op.samples < 2 and time.monotonic() < give_up:
                    time.sleep(0.001)
            m = p.get_metrics("child")
            os.write(1, json.dumps([m.samples, m.memory.initial_ram_mb > 0]).encode())
            os._exit(0)
        os.waitpid(pid, 0)
    """, STEPSCOPE_OUT="")
    samples, has_ram = json.loads(proc.stdout)
    assert samples >= 2 and has_ram


def test_threads_profile_side_by_side():
    p = stepscope.Profiler(memory_interval=0.005)
    start = threading.Barrier(4)
    errors = []

    def work(k):
        try:
            start.wait()
            for i in range(5):
                with p.profile("thread-%d" % k):
                    with p.profile("shared"):
                        time.sleep(0.002)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    breakdown = p.get_timing_breakdown()
    assert sorted(breakdown) == ["shared", "thread-0", "thread-1", "thread-2", "thread-3"]
    assert all(p.get_metrics("thread-%d" % k).completed for k in range(4))
    assert p._open == []


def test_a_profile_block_is_entered_once():
    p = stepscope.Profiler()
    op = p.profile("once")
    with op:
        pass
    with pytest.raises(RuntimeError, match="each profile\\(\\) block can be entered once"):
        with op:
            pass


@pytest.mark.parametrize("make, exc, message", [
    (lambda: stepscope.Profiler(enable_line_profiling=True), ValueError,
     "Profiler: enable_line_profiling is not supported: stepscope times named blocks, not lines"),
    (lambda: stepscope.Profiler(memory_interval=0), ValueError, "memory_interval must be > 0 seconds, not 0"),
    (lambda: stepscope.Profiler(memory_interval="1"), TypeError, "memory_interval must be a number of seconds"),
    (lambda: stepscope.Profiler(carbon_intensity_g_per_kwh=-1), ValueError, "carbon_intensity_g_per_kwh must be"),
    (lambda: stepscope.Profiler(gpu=-1), ValueError, "gpu must be a GPU index >= 0, not -1"),
    (lambda: stepscope.Profiler().profile(3), TypeError, "the name must be a str, not int"),
    (lambda: stepscope.Profiler().profile(""), ValueError, "the name must not be empty"),
    (lambda: stepscope.Profiler().get_metrics(), LookupError, "no profiled operation has finished yet"),
])
def test_errors(make, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        make()


def test_summary_and_to_dict():
    m = profiler_module.PerformanceMetrics(
        operation_name="train",
        timing=profiler_module.TimingMetrics(45.2, 40.0, 38.0, 2.0),
        memory=profiler_module.MemoryMetrics(1000.0, 2000.0, 2457.6, None, False),
        compute=profiler_module.ComputeMetrics(None, None, 78.0, None),
        system=profiler_module.SystemMetrics(None, None, None, None, None, None))
    assert m.summary() == "Peak RAM: 2.4 GB, Wall Time: 45.2s, GPU Util: 78%"
    m.compute.cpu_utilization_percent = 88.5
    m.memory.peak_gpu_mb = 512.0
    assert m.summary() == "Peak RAM: 2.4 GB, Peak GPU: 512.0 MB, Wall Time: 45.2s, CPU Util: 88%, GPU Util: 78%"
    d = json.loads(json.dumps(m.to_dict()))
    assert set(d) == {"operation_name", "timing", "memory", "compute", "system", "completed", "error",
                      "samples", "notes"}
    assert d["memory"] == {"initial_ram_mb": 1000.0, "final_ram_mb": 2000.0, "peak_ram_mb": 2457.6,
                           "peak_gpu_mb": 512.0, "memory_leak_detected": False}
    assert set(d["system"]) == {"cpu_percent", "memory_percent", "disk_io_mb", "network_io_mb", "energy_j",
                                "carbon_g"}
    assert d["compute"] == {"estimated_flops": None, "flops_per_second": None, "gpu_utilization_percent": 78.0,
                            "cpu_utilization_percent": 88.5, "flops_method": None}


def test_system_figures_and_their_reasons():
    p = stepscope.Profiler(memory_interval=0.01)
    with p.profile("io") as op:
        wait_for_next_sample(op)
    m = p.get_metrics()
    s = m.system
    # /proc is always there: system memory
    assert 0 < s.memory_percent < 100
    assert m.compute.estimated_flops is None and m.notes["estimated_flops"] == "estimate_flops=False"
    assert s.carbon_g is None and m.notes["carbon_g"] == "track_carbon=False"


def test_totals_need_readings_a_second_apart():
    p = stepscope.Profiler(memory_interval=0.01)
    with p.profile("short"):
        pass
    m = p.get_metrics()
    for figure in ("disk_io_mb", "network_io_mb", "energy_j"):
        assert getattr(m.system, figure) is None
        assert re.fullmatch(r"the sampler's readings at the block's start and end are \d\.\d{3} s apart, under 1 s: "
                            r"too close for a total it reads every 0\.5 s .*", m.notes[figure])
    with p.profile("long"):
        # by the core sampler's clock, not a sleep: the same on a slow machine
        t0 = stepscope.capture()["time_ns"]
        while stepscope.capture()["time_ns"] - t0 < 1.2e9:
            time.sleep(0.02)
    m = p.get_metrics()
    # /proc is always there: the workload's disk counters and the network's
    assert m.system.disk_io_mb is not None and m.system.disk_io_mb >= 0
    assert m.system.network_io_mb is not None and m.system.network_io_mb >= 0
    if m.system.energy_j is None:
        assert "no energy counter could be read" in m.notes["energy_j"]


class PlayedCapture:
    """capture() with a GPU: real host keys, GPU 0 with the readings in
    self.state, which a test changes as it goes; time_ns is played too."""

    def __init__(self):
        base = stepscope.capture()
        self.base = {k: v for k, v in base.items() if k != "gpus"}
        self.state = dict(gpu_memory=1 << 30, gpu_energy=100.0, cpu_energy=10.0, time_ns=0)
        self.reads = 0

    def __call__(self, gpu=0, fresh=False):
        self.reads += 1
        st = self.state
        g = {"index": 0, "name": "Played GPU", "uuid": "GPU-0", "source": "nvml",
             "gpu_memory_used_bytes": st["gpu_memory"], "gpu_memory_total_bytes": 8 << 30,
             "gpu_utilization_percent": 60.0, "gpu_workload_memory_bytes": None,
             "gpu_energy_joules": st["gpu_energy"]}
        d = dict(self.base)
        d.update({k: v for k, v in g.items() if k.startswith("gpu_")})
        d.update(gpu_memory=g["gpu_memory_used_bytes"], cpu_package_energy_joules=st["cpu_energy"], gpus=[g],
                 time_ns=st["time_ns"])
        return d


def play(monkeypatch):
    played = PlayedCapture()
    monkeypatch.setattr(stepscope.Profiler, "_capture", staticmethod(played))
    # every read a new capture(), none reused: the played states land where the test puts them
    monkeypatch.setattr(profiler_module, "READING_REUSE_S", 0.0)
    return played


def test_gpu_energy_and_carbon_figures_from_the_capture(monkeypatch):
    played = play(monkeypatch)
    p = stepscope.Profiler(memory_interval=0.01, track_carbon=True, carbon_intensity_g_per_kwh=400)
    with p.profile("gpu") as op:
        played.state.update(gpu_memory=3 << 30, time_ns=500_000_000)
        wait_for_next_sample(op)
        assert p.get_current_gpu_memory() == 3 / 8   # the latest sample's
        played.state.update(gpu_memory=1 << 30, gpu_energy=150.0, cpu_energy=30.0, time_ns=1_500_000_000)
    m = p.get_metrics()
    assert m.memory.peak_gpu_mb == 3 * 1024          # the samples' 3 GiB, over the ends' 1
    assert m.compute.gpu_utilization_percent == 60.0
    assert m.system.energy_j == (150 - 100) + (30 - 10)  # readings 1.5 s apart
    assert m.system.carbon_g == pytest.approx(70 / 3.6e6 * 400)
    assert "GPU Util: 60%" in m.summary() and "Peak GPU: 3.0 GB" in m.summary()

    # the same change over readings 0.5 s apart: no totals
    played.state.update(gpu_energy=100.0, cpu_energy=10.0, time_ns=0)
    with p.profile("half a second"):
        played.state.update(gpu_energy=150.0, cpu_energy=30.0, time_ns=500_000_000)
    m = p.get_metrics()
    assert m.system.energy_j is None and m.system.carbon_g is None
    assert m.notes["energy_j"].startswith("the sampler's readings at the block's start and end are 0.500 s apart")
    assert m.notes["carbon_g"] == "no energy reading"

    played = play(monkeypatch)
    off = stepscope.Profiler(track_gpu=False, track_carbon=True)
    with off.profile("no gpu"):
        played.state.update(gpu_energy=150.0, cpu_energy=30.0, time_ns=2_000_000_000)
    m = off.get_metrics()
    assert m.memory.peak_gpu_mb is None and m.compute.gpu_utilization_percent is None
    assert m.notes["peak_gpu_mb"] == "track_gpu=False"
    assert m.system.energy_j == 30 - 10              # the CPU package only
    assert m.system.carbon_g is None and m.notes["carbon_g"].startswith("no carbon intensity")
    assert off.get_current_gpu_memory() is None


def test_a_loop_of_blocks_reuses_a_recent_reading(monkeypatch):
    played = PlayedCapture()
    monkeypatch.setattr(stepscope.Profiler, "_capture", staticmethod(played))
    monkeypatch.setattr(profiler_module, "READING_REUSE_S", 3600.0)  # every reading is recent
    p = stepscope.Profiler(memory_interval=60)      # no sampler reading in the loop
    for _ in range(10):
        with p.profile("phase"):
            pass
    # the first block's start reads; every later start and end reuses it
    assert played.reads == 1
    assert p.get_metrics("phase").memory.peak_gpu_mb == 1024
    p._stop_sampler()


def test_no_gpu_reading_says_why(monkeypatch):
    def no_gpu(gpu=0, fresh=False):
        d = stepscope.capture(gpu=gpu, fresh=fresh)
        for k in list(d):
            if k.startswith("gpu_"):
                d[k] = None
        d["gpus"] = []
        return d
    monkeypatch.setattr(stepscope.Profiler, "_capture", staticmethod(no_gpu))
    p = stepscope.Profiler()
    with p.profile("cpu only"):
        pass
    m = p.get_metrics()
    assert m.memory.peak_gpu_mb is None and m.compute.gpu_utilization_percent is None
    assert m.notes["gpu_utilization_percent"].startswith("no reading of GPU 0: capture() found no such GPU")
    assert m.notes["peak_gpu_mb"].endswith(", and torch has not initialised CUDA")
    assert p.get_current_gpu_memory() is None


def test_a_gpu_without_a_reading_is_named_in_the_note(monkeypatch):
    played = play(monkeypatch)

    def no_utilization(gpu=0, fresh=False):
        d = played(gpu, fresh)
        d["gpu_utilization_percent"] = d["gpus"][0]["gpu_utilization_percent"] = None
        return d
    monkeypatch.setattr(stepscope.Profiler, "_capture", staticmethod(no_utilization))
    p = stepscope.Profiler()
    with p.profile("gpu"):
        pass
    m = p.get_metrics()
    assert m.compute.gpu_utilization_percent is None
    assert m.notes["gpu_utilization_percent"] == (
        "GPU 0 (Played GPU, through nvml) gives no gpu_utilization_percent reading")
    assert m.memory.peak_gpu_mb == 1024    # memory was read: the ends' 1 GiB


def test_estimate_flops_counts_a_linear_model():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    x = torch.randn(32, 784)
    p = stepscope.Profiler(estimate_flops=True)
    with p.profile("forward"):
        with p.profile("inner"):       # torch's profiler is the enclosing block's
            model(x)
    outer, inner = p.get_metrics("forward"), p.get_metrics("inner")
    # torch counts 2*M*N*K for each addmm; ReLU has no FLOP formula
    assert outer.compute.estimated_flops == 2 * 32 * 784 * 512 + 2 * 32 * 512 * 10 == 26017792
    assert outer.compute.flops_per_second == outer.compute.estimated_flops / outer.timing.wall_time_s
    assert inner.compute.estimated_flops is None and inner.compute.flops_per_second is None
    assert inner.notes["estimated_flops"].startswith("torch's profiler was already running")


def test_estimate_flops_never_starts_a_second_torch_profiler(monkeypatch):
    # torch 2.x's Kineto cancels a running profiler when another starts: the
    # user's own profile (or an enclosing block's) would end with "Can't
    # disable Kineto profiler when it's not running"
    torch = pytest.importorskip("torch")
    starts = []
    enter = torch.profiler.profile.__enter__

    def counted(self):
        starts.append(self)
        return enter(self)
    monkeypatch.setattr(torch.profiler.profile, "__enter__", counted)
    p = stepscope.Profiler(estimate_flops=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with p.profile("inside"):
            torch.mm(torch.ones(4, 4), torch.ones(4, 4))
    assert len(starts) == 1                         # the user's alone
    assert any(e.name == "aten::mm" for e in prof.events())
    m = p.get_metrics("inside")
    assert m.compute.estimated_flops is None
    assert m.notes["estimated_flops"] == ("torch's profiler was already running "
                                          "(a torch profiler is running in this process)")


class _Op:
    """What _flops reads of a torch.profiler FunctionEvent."""
    def __init__(self, name, shapes, flops=0, parent=None, children=()):
        self.name, self.input_shapes, self.flops = name, shapes, flops
        self.cpu_parent, self.cpu_children = parent, list(children)


def test_estimate_flops_counts_fused_attention_by_rule():
    # torch 2.x runs attention as one fused operator the profiler has no
    # formula for (an H200's torch 2.11 counted MultiheadAttention's
    # projections alone): the rule counts its matmuls, 2*B*H*Lq*Lk*(D+Dv)
    # forward and twice that backward
    from stepscope import _flops
    q, kv = [16, 4, 10, 8], [16, 4, 12, 8]
    scores = 2 * 16 * 4 * 10 * 12 * (8 + 8)
    backward_node = _Op("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionForCpuBackward0", [])
    events = [
        _Op("aten::addmm", [], flops=1000),
        _Op("aten::_scaled_dot_product_flash_attention_for_cpu", [q, kv, kv, [], []]),
        _Op("aten::_scaled_dot_product_flash_attention_for_cpu_backward", [q, q, kv, kv, q, []],
            parent=backward_node),
    ]
    c = _flops.count(events, [], _flops.PendingConvolutions())
    assert (c.forward, c.attention_forward, c.attention_backward, c.attention_ops) == (1000, scores, 2 * scores, 2)
    assert c.total == 1000 + 3 * scores
    assert c.method == "profiler+attention-rule"
    assert "the attention rule added %d for 2 fused attention operators" % (3 * scores) in c.note()
    # what torch counted inside it (a version with a formula, the math path) is not counted twice
    inner = _Op("aten::bmm", [], flops=scores // 2)
    counted = _Op("aten::_scaled_dot_product_efficient_attention", [q, kv, kv, []], children=[inner])
    c = _flops.count([counted, inner], [], _flops.PendingConvolutions())
    assert c.forward + c.attention_forward == scores


def flops_of(p, name, fn):
    with p.profile(name):
        fn()
    m = p.get_metrics(name)
    return m.compute.estimated_flops, m.compute.flops_method, m.notes["estimated_flops"]


# Analytic counts, torch's convention: a multiply-add is 2 FLOPs, biases
# and elementwise work are not counted.  A linear layer's forward is
# 2*B*in*out; its backward 2*B*in*out for the weight's gradient and as
# much again for the input's when the input requires grad.  A 2-D
# convolution's forward is 2*B*Cout*Hout*Wout*Cin*kh*kw/groups; each
# gradient of its backward (input, weight) as much.
B = 16


def linear_forward(n_in, n_out):
    return 2 * B * n_in * n_out


def conv_forward(c_in, c_out, k, h_out, w_out, groups=1):
    return 2 * B * c_out * h_out * w_out * c_in * k * k // groups


@pytest.mark.parametrize("input_grad", [False, True])
def test_estimate_flops_of_a_linear_layer_forward_and_backward(input_grad):
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(64, 32)
    x = torch.randn(B, 64, requires_grad=input_grad)
    flops, method, note = flops_of(stepscope.Profiler(estimate_flops=True), "linear",
                                   lambda: layer(x).sum().backward())
    f = linear_forward(64, 32)
    assert flops == pytest.approx(f + (2 if input_grad else 1) * f, rel=0.05)
    assert method == "profiler"    # torch counts the backward's mm itself
    assert note.startswith("forward %d FLOPs, backward %d: torch's profiler counted" % (f, flops - f))


@pytest.mark.parametrize("input_grad, weight_grad, gradients", [
    (False, True, 1),    # a first layer: the data needs no gradient
    (True, True, 2),     # a layer inside the network
    (True, False, 1),    # a frozen layer
])
def test_estimate_flops_of_a_convolution_forward_and_backward(input_grad, weight_grad, gradients):
    torch = pytest.importorskip("torch")
    conv = torch.nn.Conv2d(3, 8, 3, padding=1, groups=1)
    conv.weight.requires_grad_(weight_grad)
    x = torch.randn(B, 3, 12, 12, requires_grad=input_grad)
    flops, method, note = flops_of(stepscope.Profiler(estimate_flops=True), "conv",
                                   lambda: conv(x).sum().backward())
    f = conv_forward(3, 8, 3, 12, 12)
    assert flops == pytest.approx(f * (1 + gradients), rel=0.05)
    assert method == "profiler+backward-rule"
    assert "the rule added %d for 1 aten::convolution_backward" % (f * gradients) in note
    assert "assumed" not in note


def test_estimate_flops_of_a_grouped_strided_convolution():
    torch = pytest.importorskip("torch")
    conv = torch.nn.Conv2d(4, 8, 3, stride=2, groups=2)
    x = torch.randn(B, 4, 17, 17, requires_grad=True)
    flops, _, _ = flops_of(stepscope.Profiler(estimate_flops=True), "conv", lambda: conv(x).sum().backward())
    assert flops == pytest.approx(3 * conv_forward(4, 8, 3, 8, 8, groups=2), rel=0.05)


def two_layer_model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(8 * 10 * 10, 10))


def test_estimate_flops_of_a_two_layer_model_training_step():
    torch = pytest.importorskip("torch")
    model = two_layer_model(torch)
    x = torch.randn(B, 3, 12, 12)      # data: no gradient for the first layer's input
    conv, linear = conv_forward(3, 8, 3, 10, 10), linear_forward(800, 10)
    p = stepscope.Profiler(estimate_flops=True)
    flops, method, _ = flops_of(p, "step", lambda: model(x).sum().backward())
    assert flops == pytest.approx(2 * conv + 3 * linear, rel=0.05)
    assert method == "profiler+backward-rule"
    m = p.get_metrics("step")
    assert m.compute.flops_per_second == flops / m.timing.wall_time_s   # from the total
    assert "FLOP/s: " in m.summary()


def test_estimate_flops_with_forward_and_backward_in_separate_blocks():
    torch = pytest.importorskip("torch")
    model = two_layer_model(torch)
    x = torch.randn(B, 3, 12, 12)
    conv, linear = conv_forward(3, 8, 3, 10, 10), linear_forward(800, 10)
    p = stepscope.Profiler(estimate_flops=True)
    with p.profile("forward"):
        loss = model(x).sum()
    with p.profile("backward"):
        loss.backward()
    forward, backward = p.get_metrics("forward"), p.get_metrics("backward")
    assert forward.compute.estimated_flops == pytest.approx(conv + linear, rel=0.05)
    assert forward.compute.flops_method == "profiler"
    # the forward block saw that the convolution's input needs no gradient
    assert backward.compute.estimated_flops == pytest.approx(conv + 2 * linear, rel=0.05)
    assert backward.compute.flops_method == "profiler+backward-rule"
    assert backward.notes["estimated_flops"].startswith("forward 0 FLOPs")

    # a forward no block saw: both of the convolution's gradients assumed
    loss = model(x).sum()
    with p.profile("backward"):
        loss.backward()
    unseen = p.get_metrics("backward")
    assert unseen.compute.estimated_flops == pytest.approx(2 * conv + 2 * linear, rel=0.05)
    assert unseen.notes["estimated_flops"].endswith(
        "(1 had their forward outside every estimate_flops block: both gradients assumed)")


def test_estimate_flops_of_attention_forward_and_backward():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    seq, embed, heads = 10, 32, 4
    mha = torch.nn.MultiheadAttention(embed, heads)
    x = torch.randn(seq, B, embed, requires_grad=True)
    p = stepscope.Profiler(estimate_flops=True)
    with p.profile("forward"):
        out = mha(x, x, x, need_weights=False)[0]
    with p.profile("backward"):
        out.sum().backward()
    forward = p.get_metrics("forward").compute.estimated_flops
    projections = 4 * linear_forward(embed, embed) * seq        # q, k, v and out: B*seq rows each
    scores = 2 * 2 * B * seq * seq * embed                       # q @ k^T and attn @ v, over the heads
    assert forward == pytest.approx(projections + scores, rel=0.05)
    # every input needs a gradient: backward twice the forward (torch's mm
    # and bmm on torch 1.13; on 2.x its mm and the attention rule)
    assert p.get_metrics("backward").compute.estimated_flops == pytest.approx(2 * forward, rel=0.05)


def test_estimate_flops_without_torch_says_why(run_alone):
    proc = run_alone("""
        import sys
        sys.modules["torch"] = None          # as if torch were not installed
        import json, stepscope
        p = stepscope.Profiler(estimate_flops=True)
        with p.profile("no torch"):
            pass
        m = p.get_metrics()
        print(json.dumps([m.compute.estimated_flops, m.notes["estimated_flops"]]))
    """, STEPSCOPE_OUT="")
    flops, note = json.loads(proc.stdout)
    assert flops is None
    assert note.startswith("torch is not installed")


def test_profile_blocks_are_zones_in_the_run_report(run_under):
    r = run_under("""
        import json, threading, stepscope
        p = stepscope.Profiler(memory_interval=0.01)
        with p.profile("epoch"):
            for i in range(3):
                with p.profile("step"):
                    pass
        try:
            with p.profile("fails"):
                raise KeyError("x")
        except KeyError:
            pass
        t = threading.Thread(target=lambda: p.profile("on a thread").__enter__().__exit__(None, None, None))
        t.start(); t.join()
        print(json.dumps(p.get_metrics("epoch").to_dict()))
    """)
    assert r.zone("epoch")["count"] == 1
    assert r.zone("step")["count"] == 3
    assert r.zone("fails")["count"] == 1
    assert r.zone("on a thread")["count"] == 1
    assert r.zone("epoch")["total_s"] >= r.zone("step")["total_s"]
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())
    m = json.loads(r.stdout)
    assert m["completed"] and m["timing"]["wall_time_s"] > 0
