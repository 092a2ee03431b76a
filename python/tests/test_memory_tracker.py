"""stepscope.MemoryTracker and its allocation timeline, without a GPU: a
fake ``torch`` put in sys.modules by the script (a subprocess under
``stepscope run``), scripted with exact allocator counters and an
allocation history of torch 2.1+'s shape (entries with time_us) or torch
1.13's (no timestamped history: the sampled fallback).  The figures,
the timeline's rows, the record's values (report.json), trace.json's
counter track and the warnings are checked exactly; the real torch of
this machine (CPU only) gives the untracked block and its reason.
"""
import json
import textwrap
from pathlib import Path

import pytest

from conftest import STEPSCOPE_BIN

from stepscope import memory as memory_module

#: the fake torch: an allocator whose counters and history the script
#: drives (alloc/free/segment), with torch.cuda's surface MemoryTracker
#: reads.  Times: stepscope.memory._realtime_ns is pinned to the record's
#: clock plus OFFSET, so a history time maps back exactly.
FAKE = r'''
import inspect, json, sys, types
import stepscope
from stepscope import memory as M

OFFSET = 1700000000000000000
M._realtime_ns = lambda: stepscope.clock_ns() + OFFSET

class Allocator:
    def __init__(self):
        self.cur = self.peak = self.res = self.res_peak = 0
        self.n_alloc = self.n_free = 0
        self.history = None
        self.traces = []
        self.calls = []
        self.initialised = False

    def now_us(self):
        return M._realtime_ns() // 1000

    def note(self, action, size):
        if self.history is not None and TIMED:
            self.traces.append({"action": action, "addr": 0, "size": size, "stream": 0, "time_us": self.now_us()})

    def segment(self, size):
        self.res += size
        self.res_peak = max(self.res_peak, self.res)
        self.note("segment_alloc", size)

    def alloc(self, size):
        self.cur += size
        self.peak = max(self.peak, self.cur)
        self.n_alloc += 1
        self.note("alloc", size)

    def free(self, size):
        self.cur -= size
        self.n_free += 1
        self.note("free_requested", size)
        self.note("free_completed", size)

A = Allocator()
torch = types.ModuleType("torch")
torch.__version__ = VERSION
cuda = types.ModuleType("torch.cuda")
memory = types.ModuleType("torch.cuda.memory")
torch.cuda, cuda.memory = cuda, memory
cuda.is_available = lambda: True
cuda.is_initialized = lambda: A.initialised
def init():
    A.initialised = True
    A.calls.append("init")
cuda.init = init
cuda.current_device = lambda: 0
cuda.memory_stats = lambda device=None: {
    "allocated_bytes.all.current": A.cur, "allocated_bytes.all.peak": A.peak,
    "reserved_bytes.all.current": A.res, "reserved_bytes.all.peak": A.res_peak,
    "allocation.all.allocated": A.n_alloc, "allocation.all.freed": A.n_free}
cuda.memory_allocated = lambda device=None: A.cur
def reset_peak_memory_stats(device=None):
    A.peak, A.res_peak = A.cur, A.res
    A.calls.append("reset_peak")
cuda.reset_peak_memory_stats = reset_peak_memory_stats
if TIMED:  # torch 2.1+: enabled=None|"state"|"all", max_entries
    def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None):
        A.history = enabled
        A.calls.append(["history", enabled, context, max_entries])
    torch._C = types.SimpleNamespace(_cuda_isHistoryEnabled=lambda: A.history is not None)
else:  # torch 1.13: a bool, and no time in what it records
    def _record_memory_history(enabled, record_context=True, trace_alloc_max_entries=1,
                               trace_alloc_record_context=False, device=None):
        A.calls.append(["history", enabled])
    torch._C = types.SimpleNamespace()
memory._record_memory_history = _record_memory_history
memory._snapshot = lambda device=None: {"segments": [], "device_traces": [list(A.traces)]}
torch.device = lambda s: types.SimpleNamespace(index=int(s.split(":")[1]))
sys.modules["torch"], sys.modules["torch.cuda"], sys.modules["torch.cuda.memory"] = torch, cuda, memory

def dump(**kw):
    print("RESULT " + json.dumps(kw))
'''

MIB = 1 << 20


def fake_script(body, timed=True, version="2.3.0+fake"):
    return "TIMED = %r\nVERSION = %r\n" % (timed, version) + FAKE + textwrap.dedent(body)


def result_of(r):
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def trace_of(tmp_path):
    with open(tmp_path / "out" / "trace.json") as f:
        return json.load(f)


def counter_points(trace, name):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return [e for e in events if e.get("ph") == "C" and e.get("name") == name]


def test_history_timeline_stats_and_record(run_under, tmp_path):
    r = run_under(fake_script('''
        A.alloc(8 * MIB); A.segment(20 * MIB)            # before the block: not its own
        tracker = stepscope.MemoryTracker(interval=5)
        with tracker:
            A.segment(32 * MIB)
            A.alloc(4 * MIB)
            A.alloc(16 * MIB)
            A.free(4 * MIB)
            A.alloc(2 * MIB)
        A.alloc(1 * MIB)                                 # after it: not its own
        dump(stats=tracker.get_stats(), rows=tracker.get_allocation_timeline(), calls=A.calls,
             traces=A.traces, history_after=A.history)
        tracker.print_summary()
    '''.replace("MIB", str(MIB))))
    res = result_of(r)
    s, rows = res["stats"], res["rows"]
    assert s["available"] is True and s["device"] == 0 and s["source"] == "torch"
    assert s["allocated_at_enter"] == 8 * MIB
    assert s["allocated"] == 26 * MIB
    assert s["delta_allocated"] == 18 * MIB
    assert s["reserved_at_enter"] == 20 * MIB and s["reserved"] == 52 * MIB
    assert s["num_alloc"] == 3 and s["num_free"] == 1
    # torch's peak rose from 8 to 28 MiB inside the block; the history's
    # running total agrees, so the peak is exact from it
    assert s["peak_allocated"] == 28 * MIB and s["peak_allocated_method"] == "history"
    assert "peak_allocated_upper_bound" not in s
    assert s["peak_reserved"] == 52 * MIB and s["peak_reserved_method"] == "history"
    assert s["timeline_complete"] is True
    assert s["timeline_source"].startswith("torch allocation history")
    offset = s["clock_offset_ns"]  # measured (test_clock_offset checks how)
    # the tracker turned the history on for the block only, without stacks
    assert res["calls"] == ["init", ["history", "all", None, memory_module.HISTORY_MAX_ENTRIES], ["history", None,
                            "all", 9223372036854775807]]
    assert res["history_after"] is None
    # one row per alloc and free of the block, on the record's clock
    times = [e["time_us"] * 1000 + offset for e in res["traces"] if e["action"] in ("alloc", "free_requested")]
    assert [row[1:] for row in rows] == [[12 * MIB, "alloc 4.0 MiB"], [28 * MIB, "alloc 16.0 MiB"],
                                         [24 * MIB, "free 4.0 MiB"], [26 * MIB, "alloc 2.0 MiB"]]
    assert [row[0] for row in rows] == times
    assert s["timeline_rows"] == 4 and s["timeline_thinned_rows"] == 0
    # the record: the block's zone, its figures and the rows as values
    assert r.zone("memory_tracker")["count"] == 1
    assert r.value("memory_tracker.peak_allocated_bytes")["max"] == 28 * MIB
    assert r.value("memory_tracker.delta_allocated_bytes")["last"] == 18 * MIB
    assert r.value("memory_tracker.num_alloc")["last"] == 3
    assert "stepscope memory timeline" in [t.get("name") for t in r.threads()]
    v = r.value(memory_module.TIMELINE_VALUE)
    assert v["count"] == 4 and v["max"] == 28 * MIB and v["min"] == 12 * MIB and v["last"] == 26 * MIB
    # trace.json: a counter track of its own name, one point per row, in time order
    points = counter_points(trace_of(tmp_path), "GPU memory allocated (torch)")
    assert [list(p["args"].values())[0] for p in points] == [12 * MIB, 28 * MIB, 24 * MIB, 26 * MIB]
    ts = [p["ts"] for p in points]
    assert ts == sorted(ts)
    assert ts[-1] - ts[0] == pytest.approx((times[-1] - times[0]) / 1000, abs=0.002)
    assert "peak allocated" in r.stdout and "28.0 MiB  exact (allocation history)" in r.stdout
    # report.html: the timeline's chart (test_html.c checks how it is drawn)
    page = (tmp_path / "out" / "report.html").read_text()
    chart = page[page.index('<section id="torch-memory-timeline">'):]
    chart = chart[:chart.index("</section>")]
    assert "GPU memory allocated by torch over time" in chart and chart.count("<polyline") == 1


def test_peak_bound_reset_and_user_history(run_under):
    r = run_under(fake_script('''
        A.alloc(64 * MIB); A.free(64 * MIB); A.alloc(8 * MIB)   # an old peak of 64 MiB
        t = stepscope.MemoryTracker(track_timeline=False)
        with t:
            A.alloc(4 * MIB); A.free(4 * MIB)
        bound = t.get_stats()
        with t:                                     # the same tracker: a second block, afresh
            A.alloc(2 * MIB)
        again = t.get_stats()
        r = stepscope.MemoryTracker(track_timeline=False, reset_peak=True)
        with r:
            A.alloc(1 * MIB)
        reset = r.get_stats()
        # the user records history already: the tracker leaves it on
        memory._record_memory_history(enabled="all", max_entries=50)
        u = stepscope.MemoryTracker()
        with u:
            A.alloc(3 * MIB)
        user, rows = u.get_stats(), u.get_allocation_timeline()
        try:
            with u:
                with u:
                    pass
        except RuntimeError as e:
            nested = str(e)
        dump(bound=bound, again=again, reset=reset, user=user, calls=A.calls, history=A.history, rows=rows,
             nested=nested)
    '''.replace("MIB", str(MIB))))
    res = result_of(r)
    b = res["bound"]
    # torch's peak (64 MiB) is older than the block and did not rise: the
    # block's peak is given as the bound it is
    assert b["peak_allocated_method"] == "bound"
    assert b["peak_allocated"] == 8 * MIB and b["peak_allocated_upper_bound"] == 64 * MIB
    assert "timeline_source" not in b
    assert res["again"]["allocated_at_enter"] == 8 * MIB and res["again"]["num_alloc"] == 1
    assert res["reset"]["peak_allocated_method"] == "reset" and res["reset"]["peak_allocated"] == 11 * MIB
    assert "reset_peak" in res["calls"]
    assert res["history"] == "all"  # still the user's
    assert res["calls"].count(["history", "all", "all", 50]) == 1 and ["history", None, "all",
                                                                         9223372036854775807] not in res["calls"]
    assert res["user"]["timeline_history_was_on"] is True
    assert [row[1:] for row in res["rows"]] == [[14 * MIB, "alloc 3.0 MiB"]]
    assert "already open" in res["nested"] and "another MemoryTracker" in res["nested"]


def test_user_history_that_wrapped_in_the_block_is_not_taken_as_complete(run_under):
    # the user's own history keeps its latest 4 entries (torch's
    # max_entries ring): the block's 64 MiB allocation is pushed out of it
    # by later ones that balance, so its running total still ends where
    # the allocator says.  The history does not reach back to the block's
    # enter: not complete, and the peak is torch's (which rose: exact)
    r = run_under(fake_script('''
        memory._record_memory_history(enabled="all", max_entries=4)
        note = A.note
        def ring(action, size):
            note(action, size)
            del A.traces[:-4]
        A.note = ring
        t = stepscope.MemoryTracker()
        with t:
            A.alloc(64 * MIB); A.free(64 * MIB)
            for i in range(4):
                A.alloc(MIB); A.free(MIB)
        s = t.get_stats()
        # a history that holds an entry from before the block reaches back
        # to it: complete, exact from it
        A.alloc(2 * MIB)
        with t:
            A.alloc(8 * MIB); A.free(8 * MIB)
        dump(wrapped=s, covered=t.get_stats())
    '''.replace("MIB", str(MIB))))
    res = result_of(r)
    w = res["wrapped"]
    assert w["timeline_history_was_on"] is True and w["timeline_history_entries"] == 4
    assert w["timeline_complete"] is False
    assert (w["peak_allocated"], w["peak_allocated_method"]) == (64 * MIB, "torch_peak_rose")
    c = res["covered"]
    assert c["timeline_complete"] is True
    assert (c["peak_allocated"], c["peak_allocated_method"]) == (10 * MIB, "history")


def test_broken_cuda_leaves_the_block_untracked(run_under):
    # torch.cuda raising at the block's exit: the block's own exception
    # passes through untouched, the history the tracker turned on is
    # turned off, and the stats say why
    r = run_under(fake_script('''
        import warnings
        t = stepscope.MemoryTracker()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                with t:
                    A.alloc(4 * MIB)
                    cuda.memory_stats = lambda device=None: 1 / 0
                    raise KeyError("the block's own")
            except KeyError as e:
                own = str(e)
        dump(own=own, stats=t.get_stats(), history=A.history, warnings=[str(x.message) for x in w])
    '''.replace("MIB", str(MIB))))
    res = result_of(r)
    assert res["own"] == "\"the block's own\""
    assert res["history"] is None
    why = "torch.cuda failed at the block's exit (ZeroDivisionError: division by zero)"
    assert res["stats"] == {"available": False, "reason": why}
    assert res["warnings"] == ["stepscope.MemoryTracker: %s; the block is not tracked" % why]
    assert r.zone("memory_tracker")["count"] == 1


def test_bad_arguments():
    for kw, err in ((dict(device="cpu"), TypeError), (dict(device=True), TypeError), (dict(device=-1), TypeError),
                    (dict(interval=0), ValueError), (dict(name=""), ValueError)):
        with pytest.raises(err, match="^stepscope.MemoryTracker: "):
            memory_module.MemoryTracker(**kw)
    memory_module.MemoryTracker(device="cuda:1")
    memory_module.MemoryTracker(device=0)


def test_clock_offset():
    # Unix readings each between two of the record's clock: the pair
    # nearest together (the third, 4 ns apart) gives the offset, from its middle
    clock = iter([100, 150, 200, 230, 300, 304, 400, 420, 500, 600]).__next__
    unix = iter([10140, 10230, 10302, 10420, 10590]).__next__
    assert memory_module.clock_offset_ns(clock, unix) == 302 - 10302


def test_thinning_keeps_extremes():
    rows = [(i, v, "alloc") for i, v in enumerate([5, 1, 9, 3, 3, 3, 7, 0, 4, 2, 8, 6])]
    kept, thinned = memory_module.thin_rows(rows, 6)  # 3 runs of 4
    assert kept == [(1, 1, "alloc"), (2, 9, "alloc"), (6, 7, "alloc"), (7, 0, "alloc"), (9, 2, "alloc"),
                    (10, 8, "alloc")]
    assert thinned == 6
    assert memory_module.thin_rows(rows, 12) == (rows, 0)


def test_thinned_rows_in_the_record(run_under):
    r = run_under(fake_script('''
        M.MAX_RECORDED_ROWS = 10
        t = stepscope.MemoryTracker()
        with t:
            for i in range(20):
                A.alloc((i % 7 + 1) * MIB)
        dump(stats=t.get_stats(), rows=t.get_allocation_timeline())
    '''.replace("MIB", str(MIB))))
    res = result_of(r)
    assert len(res["rows"]) == 20  # all of them for the caller
    assert res["stats"]["timeline_recorded_rows"] == 10 and res["stats"]["timeline_thinned_rows"] == 10
    v = r.value(memory_module.TIMELINE_VALUE)
    assert v["count"] == 10
    assert v["max"] == res["rows"][-1][1]  # the top (a running total of allocs) survives
    assert v["min"] == res["rows"][0][1]


def test_torch_1_13_falls_back_to_sampling(run_under):
    r = run_under(fake_script('''
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = stepscope.MemoryTracker(interval=5)
            with t:
                A.alloc(4 * MIB)
            with t:
                A.alloc(4 * MIB)
        dump(stats=t.get_stats(), rows=t.get_allocation_timeline(), warnings=[str(x.message) for x in w])
    '''.replace("MIB", str(MIB)), timed=False, version="1.13.1"))
    res = result_of(r)
    assert res["warnings"] == [
        "stepscope.MemoryTracker: torch 1.13.1: its _record_memory_history keeps no timestamped allocation "
        "history (torch 2.1+ does); the allocation timeline samples torch.cuda.memory_allocated() every 5 ms "
        "instead (and the per-step torch.cuda.allocated_bytes values stand beside it)"]  # once
    s = res["stats"]
    assert s["timeline_source"].startswith("sampled every 5 ms (torch 1.13.1:")
    rows = res["rows"]
    # the block's enter and exit are its first and last rows
    assert rows[0][1:] == [4 * MIB, "sample 4.0 MiB"] and rows[-1][1:] == [8 * MIB, "sample 8.0 MiB"]
    assert all(row[1] in (4 * MIB, 8 * MIB) for row in rows)
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)
    assert s["peak_allocated"] == 8 * MIB and s["peak_allocated_method"] == "torch_peak_rose"


def test_real_torch_without_cuda(run_alone):
    pytest.importorskip("torch")
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine's torch has CUDA: the untracked block is for a CPU-only torch")
    proc = run_alone('''
        import warnings, torch, stepscope
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = stepscope.MemoryTracker()
            with t:
                x = torch.ones(3)
        print([str(m.message) for m in w])
        print(t.get_stats(), t.get_allocation_timeline())
        t.print_summary()
    ''', STEPSCOPE_LIBCUDA=NO_CUDA)
    lines = proc.stdout.splitlines()
    want = ("torch %s has no usable CUDA device (torch.cuda.is_available() is False: a CPU-only torch, no GPU, or "
            "CUDA_VISIBLE_DEVICES empty); and no device memory to read instead (libcuda unavailable: cannot load "
            "%s: %s: cannot open shared object file: No such file or directory)" % (torch.__version__, NO_CUDA,
                                                                                  NO_CUDA))
    assert lines[0] == repr(["stepscope.MemoryTracker: %s; the block is not tracked" % want])
    assert lines[1] == repr({"available": False, "reason": want}) + " []"
    assert lines[2] == "MemoryTracker memory_tracker: not tracked: " + want


def test_record_at_ns(run_under):
    # a value read in the first step, recorded after the second: the
    # first step's; and record()'s refusals
    r = run_under("""
        import stepscope
        with stepscope.step():
            t = stepscope.clock_ns()
        with stepscope.step():
            pass
        stepscope.record("late", 7.0, at_ns=t)
        for bad in (dict(at_ns=-1), dict(at_ns=1.5), dict(when=1)):
            try:
                stepscope.record("late", 1.0, **bad)
            except (TypeError, ValueError) as e:
                print(type(e).__name__, e)
    """)
    rows = r.report["steps"]["rows"]
    assert [row.get("values", {}).get("late") for row in rows] == [7.0, None]
    assert r.stdout.splitlines() == [
        "ValueError stepscope.record(): at_ns must be a non-negative int below 2**64",
        "TypeError stepscope.record(): at_ns must be an int (ns of stepscope.clock_ns()'s clock), not float",
        "TypeError stepscope.record() takes only the keyword at_ns"]


# ----------------------------------------------- without torch's CUDA: libcuda
# The device's used bytes (cuMemGetInfo_v2) through the suite's fake
# libcuda, torch blocked (sys.modules["torch"] = None): the script changes
# the fake's free bytes and waits until the sampler has read each value
# (the fake counts the calls, and a call counted after a change sees it:
# no timing in the test).

NO_CUDA = "/nonexistent/libcuda.so.1"
FAKE_CUDA_LIB = str(Path(STEPSCOPE_BIN).resolve().parent / "fakes" / "libfake_cuda.so")

DEVICE_SCRIPT = r'''
import ctypes, json, os, sys, time, warnings
sys.modules["torch"] = None               # no torch at all: the libcuda path
import stepscope
fake = ctypes.CDLL(os.environ["STEPSCOPE_LIBCUDA"])
fake.fake_cuda_set_mem.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong]
fake.fake_cuda_calls.argtypes = [ctypes.c_char_p]
fake.fake_cuda_calls.restype = ctypes.c_long
TOTAL = 80 << 30

def use(used):
    fake.fake_cuda_set_mem(TOTAL - used, TOTAL)

def sampled():
    # the next cuMemGetInfo sees the value set before it (a hang guard only)
    n = fake.fake_cuda_calls(b"cuMemGetInfo")
    deadline = time.monotonic() + 120
    while fake.fake_cuda_calls(b"cuMemGetInfo") <= n and time.monotonic() < deadline:
        time.sleep(0.001)
'''


def device_rows_dedup(rows):
    out = []
    for row in rows:
        if not out or out[-1] != row[1]:
            out.append(row[1])
    return out


@pytest.fixture
def fake_libcuda():
    if not Path(FAKE_CUDA_LIB).exists():
        pytest.fail("no fake libcuda at %s: build the tree (cmake --build build)" % FAKE_CUDA_LIB)
    return FAKE_CUDA_LIB


def test_device_memory_without_torch_cuda(run_under, tmp_path, fake_libcuda):
    G = 1 << 30
    r = run_under(DEVICE_SCRIPT + textwrap.dedent('''
        use(1 << 30)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = stepscope.MemoryTracker(interval=1)
            with t:
                use((5 << 30) + 123); sampled()
                use(3 << 30); sampled()
                use(2 << 30)
        print("RESULT " + json.dumps(dict(stats=t.get_stats(), rows=t.get_allocation_timeline(),
                                          warnings=[str(m.message) for m in w],
                                          ctx_set=fake.fake_cuda_calls(b"cuCtxSetCurrent"),
                                          sync=sum(fake.fake_cuda_calls(n) for n in (
                                              b"cuCtxSynchronize", b"cuStreamSynchronize",
                                              b"cuEventSynchronize")))))
        t.print_summary()
    '''), STEPSCOPE_LIBCUDA=fake_libcuda)
    res = result_of(r)
    s, rows = res["stats"], res["rows"]
    assert res["warnings"] == [] and res["sync"] == 0
    # the sampler made the block's context current on its own thread (the
    # fake's context is one for all threads, so this is what shows it)
    assert res["ctx_set"] == 1
    assert s["available"] is True and s["source"] == "cuda"
    assert s["total"] == 80 * G
    assert s["device_used_at_enter"] == 1 * G
    assert s["device_used"] == 2 * G
    assert s["delta_device_used"] == 1 * G
    assert s["peak_device_used"] == 5 * G + 123 and s["peak_device_used_method"] == "sampled"
    assert "every process" in s["scope"]
    # enter, the samples, exit: each value the script set, in order
    assert device_rows_dedup(rows) == [1 * G, 5 * G + 123, 3 * G, 2 * G]
    assert rows[0][1] == 1 * G and rows[-1][1] == 2 * G
    assert all(row[2] == "sampled" for row in rows)
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)
    assert s["timeline_rows"] == s["samples"] == len(rows)
    assert "timeline_error" not in s
    # the record: the figures and the rows as values at their own times
    assert r.zone("memory_tracker")["count"] == 1
    assert r.value("memory_tracker.peak_device_used_bytes")["last"] == 5 * G + 123
    assert r.value("memory_tracker.delta_device_used_bytes")["last"] == 1 * G
    v = r.value(memory_module.DEVICE_TIMELINE_VALUE)
    assert v["count"] == len(rows) and v["max"] == 5 * G + 123 and v["min"] == 1 * G and v["last"] == 2 * G
    # trace.json: a counter track of the value's name, one point per row
    points = counter_points(trace_of(tmp_path), memory_module.DEVICE_TIMELINE_VALUE)
    assert [list(p["args"].values())[0] for p in points] == [row[1] for row in rows]
    assert "peak used" in r.stdout and "5.0 GiB  at least (the highest of %d samples, every 1 ms)" % len(rows) \
        in r.stdout
    assert "all processes on the GPU" in r.stdout


def test_device_memory_without_a_context(run_under, fake_libcuda):
    r = run_under(DEVICE_SCRIPT + textwrap.dedent('''
        fake.fake_cuda_set_context(0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = stepscope.MemoryTracker()
            with t:
                pass
        print("RESULT " + json.dumps(dict(stats=t.get_stats(), warnings=[str(m.message) for m in w])))
    '''), STEPSCOPE_LIBCUDA=fake_libcuda)
    res = result_of(r)
    why = ("torch is not importable (ModuleNotFoundError: import of torch halted; None in sys.modules); and no device "
           "memory to read instead (the calling thread has no current CUDA context)")
    assert res["stats"] == {"available": False, "reason": why}
    assert res["warnings"] == ["stepscope.MemoryTracker: %s; the block is not tracked" % why]
