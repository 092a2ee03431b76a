"""stepscope.CUDATimer and stepscope.StreamProfiler (gpu_tools.py).

The arithmetic of the stream figures is a pure function, checked here
directly.  The classes read GPU times back through the extension's
gpu_zone_begin/gpu_zone_end, gpu_flush, gpu_wait and _gpu_spans; the
scripts below replace those five, in their own interpreter, with a small
Python model of one thread's GPU zones (FAKE_GPU: streams whose clocks the
script advances, pairs resolved in the order they ended, a ring of the
latest 1024 spans numbered from 1), so that every GPU time, every pending
zone and every lost span is known exactly."""
import json
import textwrap

import pytest

from stepscope.gpu_tools import WAIT_SLICE_S, stream_figures

MS = 1_000_000  # ns

FAKE_GPU = """
    import contextlib, json, sys
    import stepscope
    from stepscope import _stepscope as core

    class FakeGpu:
        '''One thread's GPU zones: each stream has a clock (ns) that run()
        advances; a zone's start and end are its stream's clock at begin and
        end.  The GPU has not reached the end events on a held stream yet
        (gpu_flush leaves them pending) but does while gpu_wait waits; on a
        stuck stream it never does.'''
        def __init__(self):
            self.clock, self.held, self.stuck, self.open, self.pending, self.ring = {}, set(), set(), {}, [], []
            self.seq, self.slot, self.no_cuda, self.waits, self.syncs = 0, 0, None, [], 0

        def gpu_zone_begin(self, name, stream=None):
            if self.no_cuda:
                return 1                          # a CPU zone: depth 1, no pair
            self.slot += 1
            self.open[self.slot] = (name, stream, self.clock.get(stream, 0))
            return self.slot << 32 | 1

        def gpu_zone_end(self, token):
            if token >> 32:
                name, stream, start = self.open.pop(token >> 32)
                self.pending.append((name, stream, start, self.clock.get(stream, 0)))

        def run(self, stream, ms):
            self.clock[stream] = self.clock.get(stream, 0) + round(ms * 1e6)

        def _resolve(self, waiting=False):
            if waiting:
                self.held.clear()
            keep = []
            for name, stream, start, end in self.pending:
                if stream in self.held or stream in self.stuck:
                    keep.append((name, stream, start, end))
                    continue
                self.seq += 1
                self.ring = (self.ring + [(self.seq, name, stream, start, end, (end - start) / 1e6)])[-1024:]
            self.pending = keep
            return len(keep)

        def gpu_flush(self):
            return self._resolve()

        def gpu_wait(self, timeout=None):
            self.waits.append(timeout)
            return self._resolve(waiting=True)

        def _gpu_spans(self, since=0):
            self._resolve()                   # as the module's: the finished pairs first
            return [s for s in self.ring if s[0] > since]

        def cuda_status(self):
            return {"available": not self.no_cuda, "reason": self.no_cuda}

    fake = FakeGpu()
    for fn in ("gpu_zone_begin", "gpu_zone_end", "gpu_flush", "gpu_wait", "_gpu_spans", "cuda_status"):
        setattr(core, fn, getattr(fake, fn))

    @contextlib.contextmanager
    def gz(name, stream):
        '''stepscope.gpu_zone, on the fake'''
        token = core.gpu_zone_begin(name, stream)
        try:
            yield
        finally:
            core.gpu_zone_end(token)

    def out(**kw):
        print(json.dumps(kw))
"""


def with_fake(code):
    return textwrap.dedent(FAKE_GPU) + textwrap.dedent(code)


def last_json(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def span(seq, stream, start_ms, end_ms, name="z"):
    return (seq, name, stream, round(start_ms * MS), round(end_ms * MS), end_ms - start_ms)


# ------------------------------------------------------------- the figures

def test_two_overlapping_streams():
    f = stream_figures([span(1, 7, 0, 10), span(2, 9, 5, 12)])
    assert f["streams"] == {7: {"zones": 1, "busy_ms": 10.0, "zone_gpu_ms": 10.0, "busy_share": 10 / 12},
                            9: {"zones": 1, "busy_ms": 7.0, "zone_gpu_ms": 7.0, "busy_share": 7 / 12}}
    assert (f["wall_ms"], f["busy_ms"], f["overlap_ms"], f["span_ms"]) == (12.0, 17.0, 5.0, 12.0)
    assert f["overlap"] == 5 / 12 and f["concurrency"] == 17 / 12
    # ideal: max(longest 10, 17 / 2 streams) = 10 ms against 12 achieved
    assert (f["ideal_ms"], f["efficiency"], f["num_streams"], f["streams_seen"]) == (10.0, 10 / 12, 2, 2)


def test_num_streams_sets_the_ideal():
    # the same work judged against 4 streams: 17/4 < 10, the longest stream still bounds it;
    # three equal streams run one after another: ideal 3/3 of one, efficiency 1/3
    assert stream_figures([span(1, 7, 0, 10), span(2, 9, 5, 12)], num_streams=4)["ideal_ms"] == 10.0
    f = stream_figures([span(1, 1, 0, 4), span(2, 2, 4, 8), span(3, 3, 8, 12)])
    assert (f["overlap"], f["concurrency"], f["ideal_ms"], f["efficiency"]) == (0.0, 1.0, 4.0, 1 / 3)
    f = stream_figures([span(1, 1, 0, 4), span(2, 2, 4, 8), span(3, 3, 8, 12)], num_streams=2)
    assert (f["ideal_ms"], f["efficiency"]) == (6.0, 0.5)


def test_nested_zones_count_once():
    # on stream 1 an outer zone [0,10) holds [2,4) and [3,6): busy 10, not 15;
    # stream 2's [8,14) overlaps it by 2; idle [14,20) is outside the wall
    f = stream_figures([span(1, 1, 2, 4), span(2, 1, 3, 6), span(3, 1, 0, 10), span(4, 2, 8, 14), span(5, 2, 20, 21)])
    s1 = f["streams"][1]
    assert (s1["zones"], s1["busy_ms"], s1["zone_gpu_ms"]) == (3, 10.0, 15.0)
    assert f["streams"][2]["busy_ms"] == 7.0
    assert (f["wall_ms"], f["overlap_ms"], f["span_ms"]) == (15.0, 2.0, 21.0)
    assert f["concurrency"] == 17 / 15 and f["ideal_ms"] == 10.0 and f["efficiency"] == 10 / 15


def test_three_streams_overlap_is_two_or_more():
    # [0,6) [2,8) [4,10): two or more busy over [2,8) (6 of 10), all three over [4,6)
    f = stream_figures([span(1, 1, 0, 6), span(2, 2, 2, 8), span(3, 3, 4, 10)])
    assert (f["wall_ms"], f["overlap_ms"], f["busy_ms"]) == (10.0, 6.0, 18.0)
    assert f["ideal_ms"] == 6.0 and f["efficiency"] == 0.6


def test_one_stream_and_nothing():
    f = stream_figures([span(1, 0, 0, 3), span(2, 0, 5, 6)])
    assert (f["wall_ms"], f["overlap"], f["concurrency"], f["efficiency"], f["span_ms"]) == (4.0, 0.0, 1.0, 1.0, 6.0)
    f = stream_figures([])
    assert (f["zones"], f["wall_ms"], f["overlap"], f["concurrency"], f["efficiency"], f["streams"]) == (
        0, 0.0, None, None, None, {})
    # a span the module could not place (start == end == 0) has a duration, no interval
    f = stream_figures([span(1, 1, 0, 5), (2, "z", 2, 0, 0, 3.5)])
    assert (f["zones"], f["unplaced"], f["streams_seen"], f["wall_ms"], f["efficiency"]) == (1, 1, 1, 5.0, 1.0)
    # touching zones on two streams do not overlap
    assert stream_figures([span(1, 1, 0, 5), span(2, 2, 5, 9)])["overlap_ms"] == 0.0


# ------------------------------------------------------------ StreamProfiler

def test_stream_profiler_block(run_under):
    r = run_under(with_fake("""
        fake.held.add(0x10)
        fake.run(0x10, 3)
        with gz("before", 0x10):                   # pending at the block's start: its enter waits for it
            fake.run(0x10, 1)
        p = stepscope.StreamProfiler(name="overlap")
        with p:
            t = stepscope.CUDATimer(stream=0x20)
            fake.clock[0x20] = 4_000_000           # both streams start at 4 ms
            with gz("a", 0x10):
                fake.run(0x10, 10)
            fake.run(0x20, 5)
            with t.measure("b"):
                fake.run(0x20, 7)
        s = p.get_stats()
        p.print_stream_efficiency()
        out(stats=s, b=t.get_elapsed("b"), waits=fake.waits)
    """))
    s = last_json(r.stdout)
    st = s["stats"]
    assert st["streams"] == {"16": {"zones": 1, "busy_ms": 10.0, "zone_gpu_ms": 10.0, "busy_share": 10 / 12},
                             "32": {"zones": 1, "busy_ms": 7.0, "zone_gpu_ms": 7.0, "busy_share": 7 / 12}}
    assert (st["wall_ms"], st["overlap"], st["concurrency"], st["efficiency"]) == (12.0, 5 / 12, 17 / 12, 10 / 12)
    assert (st["lost"], st["pending"], st["pending_before"], st["reason"], st["zones"]) == (0, 0, 0, None, 2)
    assert s["b"] == 7.0
    # the enter waited for "before" (pending), the exit for the block's zones: both bounded by timeout
    assert s["waits"] == [30.0, 30.0]
    assert "0x10                      1      10.0000    83.3%" in r.stdout
    assert "overlap (two or more streams busy) 5.0000 ms = 41.7% of the wall" in r.stdout
    assert "ideal wall max(longest busy, sum of busy / 2) 10.0000 ms: efficiency 83.3%" in r.stdout
    for key, v in (("overlap", 5 / 12), ("efficiency", 10 / 12), ("concurrency", 17 / 12), ("wall_ms", 12.0),
                   ("busy_ms", 17.0)):
        got = r.value("overlap." + key)
        assert got is not None and (got["count"], got["last"]) == (1, pytest.approx(v, rel=1e-12)), key


def test_stream_profiler_lost_pending_and_no_cuda(run_alone):
    proc = run_alone(with_fake("""
        res = {}
        fake.run(1, 1)
        with gz("old", 1):
            fake.run(1, 1)
        core.gpu_flush()
        p = stepscope.StreamProfiler(num_streams=2, name="many", timeout=0.5)
        with p:
            for i in range(1030):                  # 6 more than the ring holds
                with gz("z", 1):
                    fake.run(1, 1)
            fake.stuck.add(2)
            with gz("stuck", 2):                   # the GPU never gets there
                fake.run(2, 1)
        s = p.get_stats()
        res["many"] = [s[k] for k in ("zones", "lost", "pending", "wall_ms", "num_streams", "efficiency")]
        p.print_stream_efficiency()
        fake.no_cuda = "cannot load libcuda.so.1: no such file"
        fake.stuck.clear(); core.gpu_flush()
        with p:
            with gz("cpu", 1):
                pass
        s = p.get_stats()
        res["no_cuda"] = [s["zones"], s["efficiency"], s["reason"]]
        p.print_stream_efficiency()
        for bad in ((lambda: stepscope.StreamProfiler(num_streams=0)), (lambda: stepscope.StreamProfiler(name="")),
                    (lambda: stepscope.StreamProfiler().get_stats())):
            try:
                bad()
            except (ValueError, RuntimeError) as e:
                res.setdefault("errors", []).append(str(e))
        try:
            with p:
                p.get_stats()
        except RuntimeError as e:
            res["inside"] = str(e)
        out(**res)
    """), STEPSCOPE_OUT="")
    res = last_json(proc.stdout)
    # 1030 resolved, the ring kept the last 1024; the held zone is pending, not counted
    assert res["many"] == [1024, 6, 1, 1024.0, 2, 1.0]  # one stream: its own busy time is the ideal
    assert "6 GPU zones of the block were lost (more than 1024 resolved in it): not counted" in proc.stdout
    assert "1 GPU zones were still pending after 0.5 s: not counted" in proc.stdout
    assert res["no_cuda"] == [0, None, "cannot load libcuda.so.1: no such file"]
    assert "no GPU time in the block: cannot load libcuda.so.1: no such file" in proc.stdout
    assert res["errors"] == ["StreamProfiler(): num_streams must be at least 1, not 0",
                             "StreamProfiler(): name must not be empty",
                             "StreamProfiler 'streams': no block profiled yet (use `with profiler:`)"]
    assert res["inside"] == "StreamProfiler 'many': get_stats() inside the block: leave it first"


# ----------------------------------------------------------------- CUDATimer

def test_timer_measures_and_waits(run_alone):
    proc = run_alone(with_fake("""
        res = {}
        t = stepscope.CUDATimer()
        fake.held.add(0)                     # the GPU finishes them while get_elapsed waits
        for ms in (2, 4, 9):
            with t.measure("fwd"):
                fake.run(0, ms)
        fake.run(0, 100)                     # work outside any measurement
        res["elapsed"] = t.get_elapsed("fwd")  # waits: the latest, 9
        res["stats"] = t.get_stats("fwd")
        t.start("step"); fake.run(0, 1.5); t.stop("step")
        res["step"] = t.get_elapsed("step")
        res["all"] = sorted(t.get_stats())
        res["waits"] = fake.waits
        # synchronize=False: None while the GPU has not reached the end, never waits
        n = stepscope.CUDATimer(synchronize=False, stream=3)
        fake.held.add(3)
        with n.measure("x"):
            fake.run(3, 6)
        res["pending"] = [n.get_elapsed("x"), n.get_stats("x")["pending"], len(fake.waits)]
        fake.held.clear()
        res["done"] = n.get_elapsed("x")
        t.reset()
        res["reset"] = t.names()
        out(**res)
    """), STEPSCOPE_OUT="")
    res = last_json(proc.stdout)
    assert res["elapsed"] == 9.0
    st = res["stats"]
    assert (st["count"], st["mean"], st["min"], st["max"], st["median"], st["total"]) == (3, 5.0, 2.0, 9.0, 4.0, 15.0)
    assert st["std"] == pytest.approx((26 / 3) ** 0.5, rel=1e-12)  # population: (9 + 1 + 16) / 3
    assert (st["pending"], st["no_gpu"], st["lost"]) == (0, 0, 0)
    assert res["step"] == 1.5 and res["all"] == ["fwd", "step"]
    # the first get_elapsed's, one slice (the GPU finished in it); the step was done when it was read
    assert res["waits"] == [WAIT_SLICE_S]
    assert res["pending"] == [None, 1, 1] and res["done"] == 6.0
    assert res["reset"] == []


def test_timer_matches_by_name_and_stream(run_alone):
    # stream 1 lags: its "a" resolves after stream 2's later "a", and an
    # unrelated zone of another name sits between; each gets its own time
    proc = run_alone(with_fake("""
        t = stepscope.CUDATimer(synchronize=False)
        fake.held.add(1)
        with stepscope.CUDATimer(stream=1, synchronize=False).measure("a") as m:
            fake.run(1, 8)
        one = stepscope.CUDATimer(stream=1)
        with one.measure("a"):
            fake.run(1, 3)
        with gz("other", 2):
            fake.run(2, 50)
        two = stepscope.CUDATimer(stream=2)
        with two.measure("a"):
            fake.run(2, 5)
        core.gpu_flush()
        first = two.get_elapsed("a")
        fake.held.clear()
        out(two=first, one=one.get_elapsed("a"), waits=len(fake.waits))
    """), STEPSCOPE_OUT="")
    assert last_json(proc.stdout) == {"two": 5.0, "one": 3.0, "waits": 0}


def test_timer_time_warmup_and_repeat(run_alone):
    proc = run_alone(with_fake("""
        calls = []
        def work(ms, tag=None):
            calls.append(tag)
            fake.held.add(0)                 # never finished before a wait
            fake.run(0, ms)
            return ms
        t = stepscope.CUDATimer(warmup=2, repeat=5)
        s = t.time("k", work, 0.5, tag="x")
        t.benchmark("k", work, 1.5)          # more measurements of k
        big = stepscope.CUDATimer(warmup=0, repeat=300)
        b = big.time("big", work, 1)
        waits = list(fake.waits)
        # a name keeps its latest KEEP_PER_NAME measurements; time() returns all of its own
        from stepscope import gpu_tools
        gpu_tools.KEEP_PER_NAME = 4
        grow = iter(range(1, 7))
        capped = stepscope.CUDATimer(warmup=0, repeat=6)
        c = capped.time("cap", lambda: work(next(grow)))
        kept = capped.get_stats("cap")
        out(stats=s, calls=len(calls), tags=calls[:7], k=t.get_stats("k")["count"], big=[b["count"], b["mean"]],
            waits=waits, cap=[c["count"], c["min"], kept["count"], kept["min"], kept["max"]])
    """), STEPSCOPE_OUT="")
    res = last_json(proc.stdout)
    st = res["stats"]
    assert (st["count"], st["mean"], st["std"], st["min"], st["max"]) == (5, 0.5, 0.0, 0.5, 0.5)
    assert res["tags"] == ["x"] * 7 and res["calls"] == 2 + 5 + 2 + 5 + 300 + 6
    assert res["k"] == 10 and res["big"] == [300, 1.0]
    assert res["cap"] == [6, 1.0, 4, 3.0, 6.0]
    # one wait (one slice: the GPU finished in it) per time() call, and big's also at repetitions 128 and 256
    assert res["waits"] == [WAIT_SLICE_S] * 5


def test_timer_without_cuda_says_why(run_alone):
    proc = run_alone(with_fake("""
        fake.no_cuda = "cannot load libcuda.so.1: libcuda.so.1: cannot open shared object file"
        t = stepscope.CUDATimer()
        errors = []
        with t.measure("fwd"):
            pass
        for call in (lambda: t.get_elapsed("fwd"), lambda: t.get_stats("fwd"), lambda: t.time("k", len, ())):
            try:
                call()
            except RuntimeError as e:
                errors.append(str(e))
        out(errors=errors)
    """), STEPSCOPE_OUT="")
    why = ("no GPU time: GPU zones are CPU zones here: cannot load libcuda.so.1: libcuda.so.1: cannot open shared "
           "object file")
    assert last_json(proc.stdout)["errors"] == ["CUDATimer.get_elapsed('fwd'): " + why,
                                                "CUDATimer.get_stats('fwd'): " + why,
                                                "CUDATimer.time('k'): " + why]


def test_timer_all_names_with_one_name_timed_before_cuda(run_alone):
    # the first block ran before torch made a CUDA context (a model.cuda()
    # measured): a CPU zone.  get_stats() of every name still gives the
    # others; that name's entry has no GPU figure and says why
    proc = run_alone(with_fake("""
        t = stepscope.CUDATimer()
        fake.no_cuda = "no current CUDA context on a thread that began a GPU zone"
        with t.measure("setup"):
            pass
        fake.no_cuda = None
        for ms in (2, 4):
            with t.measure("fwd"):
                fake.run(0, ms)
        everything = t.get_stats()
        try:
            t.get_stats("setup")
        except RuntimeError as e:
            one = str(e)
        out(everything=everything, one=one)
    """), STEPSCOPE_OUT="")
    res = last_json(proc.stdout)
    why = "GPU zones are CPU zones here: no current CUDA context on a thread that began a GPU zone"
    assert res["one"] == "CUDATimer.get_stats('setup'): no GPU time: " + why  # asked by name: refused
    assert res["everything"]["setup"] == {"count": 0, "mean": None, "std": None, "min": None, "max": None,
                                          "median": None, "total": 0.0, "pending": 0, "no_gpu": 1, "lost": 0,
                                          "reason": why}
    fwd = res["everything"]["fwd"]
    assert (fwd["count"], fwd["total"], fwd["no_gpu"]) == (2, 6.0, 0) and "reason" not in fwd


def test_timer_timeout_lost_and_threads(run_alone):
    proc = run_alone(with_fake("""
        import threading
        res = {}
        t = stepscope.CUDATimer()
        fake.stuck.add(0)
        with t.measure("slow"):
            fake.run(0, 1)
        try:
            t.get_elapsed("slow", timeout=0.25)
        except TimeoutError as e:
            res["timeout"] = str(e)
        # the pair fails to resolve: gpu_wait finds nothing pending, the span never comes
        fake.stuck.clear(); fake.pending.clear()
        try:
            t.get_elapsed("slow")
        except RuntimeError as e:
            res["failed"] = str(e)
        # more than 1024 zones resolved between two reads: the measurement's span is gone
        fake.held.add(0)
        with t.measure("gone"):
            fake.run(0, 1)
        for i in range(1100):
            with gz("noise", 5):
                pass
        try:
            t.get_elapsed("gone")
        except RuntimeError as e:
            res["lost"] = str(e)
        res["lost_stats"] = t.get_stats("gone")["lost"]
        fake.held.add(0)
        with t.measure("other thread"):
            fake.run(0, 1)
        def read():
            try:
                t.get_elapsed("other thread")
            except RuntimeError as e:
                res["thread"] = str(e)
        th = threading.Thread(target=read); th.start(); th.join()
        t.start("s")
        for call in (lambda: t.start("s"), lambda: t.stop("never"), lambda: t.get_elapsed("nothing"),
                     lambda: t.measure(""), lambda: stepscope.CUDATimer(repeat=0),
                     lambda: stepscope.CUDATimer(stream="s"),
                     lambda: t.time("k", 5)):
            try:
                call()
            except Exception as e:
                res.setdefault("errors", []).append("%s: %s" % (type(e).__name__, e))
        def stop_elsewhere():
            try:
                t.stop("s")
            except RuntimeError as e:
                res["stop_thread"] = str(e)
        th = threading.Thread(target=stop_elsewhere); th.start(); th.join()
        t.stop("s")
        out(**res)
    """), STEPSCOPE_OUT="")
    res = last_json(proc.stdout)
    assert res["timeout"] == ("CUDATimer.get_elapsed('slow'): the GPU had not reached the end of the measurement "
                              "after 0.25 s (1 GPU zones of this thread pending)")
    assert res["failed"] == ("CUDATimer.get_elapsed('slow'): no GPU time: its CUDA events could not be resolved "
                             "(cuda_status()['unresolved'] counts it)")
    assert res["lost"] == ("CUDATimer.get_elapsed('gone'): no GPU time: more than 1024 GPU zones were resolved on "
                           "this thread between two reads: its span was overwritten")
    assert res["lost_stats"] == 1
    assert res["thread"] == ("CUDATimer.get_elapsed('other thread'): a measurement is still pending on another "
                             "thread: read it there (or with synchronize=False)")
    assert res["errors"] == [
        "RuntimeError: CUDATimer.start('s'): 's' is already started: stop('s') it first",
        "RuntimeError: CUDATimer.stop('never'): 'never' was not started (call start('never') first)",
        "KeyError: \"CUDATimer.get_elapsed('nothing'): no measurement of that name\"",
        "ValueError: CUDATimer.measure(): name must not be empty",
        "ValueError: CUDATimer(): repeat must be at least 1, not 0",
        "TypeError: CUDATimer(): stream must be None, an int (a CUstream handle) or an object with an int "
        ".cuda_stream (torch.cuda.Stream), not str",
        "TypeError: CUDATimer.time('k', fn): fn must be callable, not int"]
    assert res["stop_thread"] == "CUDATimer.stop('s'): it was started on another thread: stop it there"


def test_without_the_spans_api_the_classes_say_so(run_alone):
    proc = run_alone("""
        import stepscope
        from stepscope import _stepscope as core
        for fn in ("_gpu_spans", "gpu_wait"):
            if hasattr(core, fn):
                delattr(core, fn)
        for make in (lambda: stepscope.CUDATimer(), lambda: stepscope.StreamProfiler().__enter__()):
            try:
                make()
            except RuntimeError as e:
                print(e)
    """, STEPSCOPE_OUT="")
    assert proc.stdout.splitlines() == [
        "CUDATimer() needs stepscope._stepscope._gpu_spans and gpu_wait, which this build of the module "
        "lacks (rebuild stepscope)",
        "StreamProfiler needs stepscope._stepscope._gpu_spans and gpu_wait, which this build of the module lacks "
        "(rebuild stepscope)"]


# ------------------------------------------ end to end, over the fake libcuda

# The real module over the test suite's fake libcuda (test_gpu_zone.py's
# FAKE and SPANS: the fake's clock, per-stream queues and call counts).
from test_gpu_zone import FAKE, FAKE_CUDA, NO_CUDA, SPANS  # noqa: E402


def with_fake_cuda(code):
    return textwrap.dedent(FAKE) + textwrap.dedent(SPANS) + textwrap.dedent(code)


@pytest.fixture(scope="module")
def fake_cuda():
    import os
    if not os.path.exists(FAKE_CUDA):
        pytest.fail("no fake libcuda at %s: build the tree (cmake --build build)" % FAKE_CUDA)
    return FAKE_CUDA


def test_stream_profiler_over_the_fake_gpu(run_under, fake_cuda, tmp_path):
    # stream A busy [0, 10) ms, B [5, 12): a gpu_zone on A, a CUDATimer block on B
    r = run_under(with_fake_cuda("""
        p = stepscope.StreamProfiler(name="s")
        t = stepscope.CUDATimer(stream=B)
        with p:
            with stepscope.gpu_zone("a", A):
                pass
            with t.measure("b"):
                pass
            fake.fake_cuda_stream_complete(A, 2)          # the thread's epoch and a's start, at 0
            fake.fake_cuda_stream_advance(B, 5.0)
            fake.fake_cuda_stream_complete(B, 1)
            fake.fake_cuda_stream_advance(A, 10.0)
            fake.fake_cuda_stream_complete(A, 1)
            # B's end only once the block's exit has polled a few times: the exit waits for it
            q0 = fake.fake_cuda_calls(b"cuEventQuery")
            def finish():
                while fake.fake_cuda_calls(b"cuEventQuery") < q0 + 3:
                    time.sleep(0.0005)
                fake.fake_cuda_stream_advance(B, 7.0)
                fake.fake_cuda_stream_complete(B, 1)
            th = threading.Thread(target=finish)
            th.start()
        th.join()
        s = p.get_stats()
        p.print_stream_efficiency()
        print(json.dumps({"stats": s, "b": t.get_elapsed("b"), "sync": synchronising_calls()}))
    """), STEPSCOPE_LIBCUDA=fake_cuda)
    out = last_json(r.stdout)
    st = out["stats"]
    assert {k: (v["zones"], v["busy_ms"]) for k, v in st["streams"].items()} == {
        str(0xA000): (1, 10.0), str(0xB000): (1, 7.0)}
    assert (st["wall_ms"], st["overlap_ms"], st["busy_ms"], st["ideal_ms"]) == (12.0, 5.0, 17.0, 10.0)
    assert (st["overlap"], st["efficiency"], st["lost"], st["pending"], st["unplaced"]) == (5 / 12, 10 / 12, 0, 0, 0)
    assert out["b"] == 7.0 and out["sync"] == 0
    assert "0xa000                    1      10.0000    83.3%" in r.stdout
    assert r.value("s.overlap")["last"] == pytest.approx(5 / 12, rel=1e-12)
    assert r.value("s.efficiency")["last"] == pytest.approx(10 / 12, rel=1e-12)
    assert r.value("b.gpu_ms")["last"] == 7.0 and r.zone("b")["count"] == 1  # the timer's block is a GPU zone
    # ... and on the trace's GPU timeline: each zone on its stream's track, where the GPU ran it
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    tracks = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    gpu = {(tracks.get(e["tid"]), e["name"]): (e["ts"], e["dur"]) for e in events
           if e.get("ph") == "X" and str(tracks.get(e["tid"], "")).startswith("GPU stream")}
    (a0, a_dur), (b0, b_dur) = gpu[("GPU stream 0xa000", "a")], gpu[("GPU stream 0xb000", "b")]
    assert (a_dur, b_dur, b0 - a0) == (pytest.approx(10000), pytest.approx(7000), pytest.approx(5000))


def test_cuda_timer_over_the_fake_gpu(run_under, fake_cuda):
    r = run_under(with_fake_cuda("""
        res = {}
        t = stepscope.CUDATimer()
        for ms in (1.5, 2.5, 5.0):
            with t.measure("fwd"):
                fake.fake_cuda_complete(-1)          # the GPU reaches the start event now
                fake.fake_cuda_advance(ms)           # and spends ms in the block
        try:
            t.get_elapsed("fwd", timeout=0.05)       # the end event is not reached: a bounded wait
        except TimeoutError as e:
            res["timeout"] = str(e)
        # a thread finishes the GPU's work once get_elapsed has polled a few times
        q0 = fake.fake_cuda_calls(b"cuEventQuery")
        def finish():
            while fake.fake_cuda_calls(b"cuEventQuery") < q0 + 3:
                time.sleep(0.0005)
            fake.fake_cuda_complete(-1)
        th = threading.Thread(target=finish); th.start()
        res["elapsed"] = t.get_elapsed("fwd")
        th.join()
        res["stats"] = t.get_stats("fwd")
        # time(): the GPU reaches each start at once and spends 0.25 ms in the block;
        # a thread lets it reach the end events (the clock only moves inside work)
        calls = []
        def work():
            calls.append(1)
            fake.fake_cuda_complete(-1)
            fake.fake_cuda_advance(0.25)
        stop = threading.Event()
        def reach():
            while not stop.is_set():
                fake.fake_cuda_complete(-1)
                time.sleep(0.0005)
        th = threading.Thread(target=reach); th.start()
        b = stepscope.CUDATimer(warmup=2, repeat=4)
        res["bench"] = [b.time("bench", work)["count"], len(calls)]
        stop.set(); th.join()
        res["bench_stats"] = b.get_stats("bench")
        res["sync"] = synchronising_calls()
        print(json.dumps(res))
    """), STEPSCOPE_LIBCUDA=fake_cuda)
    res = last_json(r.stdout)
    assert res["timeout"] == ("CUDATimer.get_elapsed('fwd'): the GPU had not reached the end of the measurement "
                              "after 0.05 s (1 GPU zones of this thread pending)")
    assert res["elapsed"] == 5.0
    st = res["stats"]
    assert (st["count"], st["min"], st["max"], st["median"], st["total"], st["pending"]) == (3, 1.5, 5.0, 2.5, 9.0, 0)
    assert res["bench"] == [4, 6]
    bs = res["bench_stats"]
    assert (bs["count"], bs["mean"], bs["min"], bs["max"]) == (4, 0.25, 0.25, 0.25)
    assert res["sync"] == 0
    v = r.value("fwd.gpu_ms")
    assert (v["count"], v["min"], v["max"]) == (3, 1.5, 5.0) and r.zone("fwd")["count"] == 3
    # warmup runs are no GPU zones: four of "bench"
    assert r.value("bench.gpu_ms")["count"] == 4 and r.zone("bench")["count"] == 4


def test_without_libcuda_the_classes_say_why(run_under):
    r = run_under("""
        import json, stepscope
        t = stepscope.CUDATimer()
        with t.measure("fwd"):
            pass
        out = {}
        try:
            t.get_elapsed("fwd")
        except RuntimeError as e:
            out["timer"] = str(e)
        p = stepscope.StreamProfiler()
        with p:
            with stepscope.gpu_zone("z", 0x10):
                pass
        out["profiler"] = [p.get_stats()["zones"], p.get_stats()["reason"]]
        out["status"] = stepscope.cuda_status()["reason"]
        print(json.dumps(out))
    """, STEPSCOPE_LIBCUDA=NO_CUDA)
    out = last_json(r.stdout)
    assert out["status"].startswith("cannot load %s: " % NO_CUDA)
    assert out["timer"] == "CUDATimer.get_elapsed('fwd'): no GPU time: GPU zones are CPU zones here: " + out["status"]
    assert out["profiler"] == [0, out["status"]]
    assert r.zone("fwd")["count"] == 1 and r.value("fwd.gpu_ms") is None   # its CPU time is the zone
    assert r.value("streams.overlap") is None


def test_cuda_timer_follows_the_current_stream(run_alone, fake_cuda):
    # stream=None: torch's current stream at each block, as gpu_zone finds it
    # (a stand-in for torch, which has no GPU here), and the span matched on it
    proc = run_alone(with_fake_cuda("""
        import types
        current = types.SimpleNamespace(cuda_stream=A)
        sys.modules["torch"] = types.SimpleNamespace(cuda=types.SimpleNamespace(
            is_initialized=lambda: True, current_stream=lambda: current))
        t = stepscope.CUDATimer()
        seen = []
        for stream, ms in ((A, 2.0), (B, 3.0)):
            current = types.SimpleNamespace(cuda_stream=stream)
            with t.measure("x"):
                seen.append(fake.fake_cuda_last_stream())
                fake.fake_cuda_stream_complete(stream, -1)
                fake.fake_cuda_stream_advance(stream, ms)
            fake.fake_cuda_stream_complete(stream, -1)
            seen.append(t.get_elapsed("x", timeout=5))
        print(json.dumps(seen))
    """), STEPSCOPE_LIBCUDA=fake_cuda, STEPSCOPE_OUT="")
    assert last_json(proc.stdout) == [0xA000, 2.0, 0xB000, 3.0]


def test_cuda_timer_waits_for_its_measurement_not_for_other_streams(run_alone, fake_cuda):
    # fwd on the default stream, then a GPU zone on a side stream B whose
    # kernel runs on.  get_elapsed('fwd') waits for fwd's end event, as
    # cudaEventSynchronize on it would, not for B: it returns with B still
    # pending.  A thread lets the default stream reach fwd's end once the
    # wait has polled a few times, and B's end only after many more polls
    # (which never come once get_elapsed has returned)
    proc = run_alone(with_fake_cuda("""
        t = stepscope.CUDATimer()
        with t.measure("fwd"):
            fake.fake_cuda_stream_complete(None, -1)   # the epoch and fwd's start
            fake.fake_cuda_stream_advance(None, 2.0)
        with stepscope.gpu_zone("side", B):
            pass
        fake.fake_cuda_stream_complete(B, 1)           # B's start; its end is far off
        fake.fake_cuda_stream_pending.argtypes = [ctypes.c_void_p]
        q0 = fake.fake_cuda_calls(b"cuEventQuery")
        done = threading.Event()
        def gpu():
            while fake.fake_cuda_calls(b"cuEventQuery") < q0 + 6:
                time.sleep(0.0005)
            fake.fake_cuda_stream_complete(None, -1)   # fwd's end
            while fake.fake_cuda_calls(b"cuEventQuery") < q0 + 400 and not done.is_set():
                time.sleep(0.0005)
            fake.fake_cuda_stream_complete(B, -1)      # the side stream's end, if it is still waited for
        th = threading.Thread(target=gpu)
        th.start()
        elapsed = t.get_elapsed("fwd", timeout=60)
        side_pending = fake.fake_cuda_stream_pending(B)
        done.set()
        th.join()
        print(json.dumps({"elapsed": elapsed, "side_pending": side_pending}))
    """), STEPSCOPE_LIBCUDA=fake_cuda, STEPSCOPE_OUT="")
    assert last_json(proc.stdout) == {"elapsed": 2.0, "side_pending": 1}
