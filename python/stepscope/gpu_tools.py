"""stepscope.CUDATimer and stepscope.StreamProfiler: the third seed's GPU
timing classes, over GPU zones.

    timer = stepscope.CUDATimer()
    with timer.measure("forward"):
        out = model(x)
    print(timer.get_elapsed("forward"))          # ms, from the zone's CUDA events
    print(timer.time("matmul", torch.mm, a, b))  # warmup, then repeat measured runs: stats

    profiler = stepscope.StreamProfiler(num_streams=2)
    with profiler:
        for s, task in zip(streams, tasks):
            with torch.cuda.stream(s), stepscope.gpu_zone(task.name):
                task()
    profiler.print_stream_efficiency()

Every block either class times is a GPU zone of the calling thread (a CPU
zone plus a pair of CUDA events on a stream, resolved without a
synchronising driver call), so it is also in the report as the zone and the
value ``<name>.gpu_ms``.  The classes read the GPU times back from the
module's ring of the thread's most recently resolved GPU zones
(``_stepscope._gpu_spans``), and wait for them, where they wait at all, with
``_stepscope.gpu_wait``, which polls the thread's own events: never a
device-wide synchronisation.  docs/python.md ("CUDATimer", "StreamProfiler")
defines each figure.
"""

import collections
import math
import statistics
import sys
import threading
import time

from . import _stepscope as _core

__all__ = ["CUDATimer", "StreamProfiler", "stream_figures"]

#: how many resolved GPU zones the module keeps per thread (_gpu_spans)
SPAN_RING = 1024
#: CUDATimer.time() with synchronize=True waits for its repetitions every
#: this many, so that a long benchmark never fills the thread's pool of 256
#: event pairs (a full pool drops GPU zones rather than wait)
TIME_WAIT_EVERY = 128
#: CUDATimer keeps the latest this many measurements of each name (the
#: statistics cover them): a timer left on for a whole run stays bounded
KEEP_PER_NAME = 100_000
#: gpu_wait() waits for all of the thread's pending GPU zones: a result's
#: wait calls it for slices this long (s) and stops at the first after
#: which its own measurements are resolved, so that later work queued on
#: other streams (a GPU zone on a side stream) is not waited for
WAIT_SLICE_S = 0.005
#: timeout=None: wait this long at most (as gpu_wait)
WAIT_MAX_S = 86400.0
#: the low 32 bits of a gpu_zone_begin() token are the CPU zone, the high
#: 32 the thread's event pair (0: none was recorded: a CPU-only zone)
_PAIR_SHIFT = 32


def _spans_api(who):
    """(_gpu_spans, gpu_wait) of the extension, or a RuntimeError naming
    who needs them: a module built without them cannot read GPU times back."""
    spans, wait = getattr(_core, "_gpu_spans", None), getattr(_core, "gpu_wait", None)
    if spans is None or wait is None:
        raise RuntimeError("%s needs stepscope._stepscope._gpu_spans and gpu_wait, which this build of the "
                           "module lacks (rebuild stepscope)" % who)
    return spans, wait


def _stream_handle(stream, who):
    """The CUstream handle (int) a GPU zone on stream uses: stream=None is
    the current one, as gpu_zone finds it (torch's current stream when torch
    is imported and has initialised CUDA, else 0, the legacy default)."""
    if stream is None:
        torch = sys.modules.get("torch")
        cuda = getattr(torch, "cuda", None)
        if cuda is None or not cuda.is_initialized():
            return 0
        stream = cuda.current_stream()
    handle = stream
    if not isinstance(stream, int):
        handle = getattr(stream, "cuda_stream", None)
        if handle is None:
            raise TypeError("%s: stream must be None, an int (a CUstream handle) or an object with an int "
                            ".cuda_stream (torch.cuda.Stream), not %s" % (who, type(stream).__name__))
    if isinstance(handle, bool) or not isinstance(handle, int):
        raise TypeError("%s: stream.cuda_stream must be an int, not %s" % (who, type(handle).__name__))
    if not 0 <= handle < 1 << 64:
        raise ValueError("%s: a stream handle is between 0 and 2**64-1, not %d" % (who, handle))
    return handle


# ------------------------------------------------------------------ matching

_PENDING, _RESOLVED, _NO_GPU, _LOST = "pending", "resolved", "no_gpu", "lost"


class _Measurement:
    """One measured block: its GPU time once its span is read back."""

    __slots__ = ("name", "stream", "thread", "gpu_ms", "start_ns", "end_ns", "state", "why")

    def __init__(self, name, stream, thread):
        self.name, self.stream, self.thread = name, stream, thread
        self.gpu_ms = self.start_ns = self.end_ns = self.why = None
        self.state = _PENDING


class _Matcher:
    """A thread's reader of _gpu_spans: hands each resolved span to the
    oldest pending measurement of the same name and stream.  On one stream
    the GPU reaches end events in the order they were recorded, and the
    module resolves a thread's pairs in that order, so per (name, stream)
    the spans come back in the order the measurements ended."""

    def __init__(self):
        self.cursor = None  # the last seq read; None: never read
        self.queues = {}    # (name, stream) -> deque of pending _Measurement
        self.pending = 0

    def poll(self):
        spans = _core._gpu_spans(self.cursor or 0)
        if not spans:
            if self.cursor is None:
                self.cursor = 0  # an empty ring: nothing resolved on this thread yet (seq starts at 1)
            return
        if self.cursor is not None and self.pending:
            expected = self.cursor + 1
            if any(s[0] != expected + k for k, s in enumerate(spans)):
                self._lose("more than %d GPU zones were resolved on this thread between two reads: its span "
                           "was overwritten" % SPAN_RING)
                self.cursor = spans[-1][0]
                return
        if self.cursor is not None:  # the first read only finds where the ring is
            for seq, name, stream, start_ns, end_ns, gpu_ms in spans:
                queue = self.queues.get((name, stream))
                if queue:
                    m = queue.popleft()
                    m.gpu_ms, m.start_ns, m.end_ns, m.state = gpu_ms, start_ns, end_ns, _RESOLVED
                    self.pending -= 1
        self.cursor = spans[-1][0]

    def add(self, m):
        queue = self.queues.get((m.name, m.stream))
        if queue is None:
            queue = self.queues[(m.name, m.stream)] = collections.deque()
        queue.append(m)
        self.pending += 1

    def settle(self, why):
        """After gpu_wait found nothing pending: what is still unmatched
        was never resolved (its events failed)."""
        self._lose(why)

    def _lose(self, why):
        for queue in self.queues.values():
            for m in queue:
                m.state, m.why = _LOST, why
        self.queues.clear()
        self.pending = 0


_local = threading.local()


def _matcher():
    try:
        return _local.matcher
    except AttributeError:
        m = _local.matcher = _Matcher()
        return m


def _no_gpu_reason(token):
    """Why a gpu_zone_begin() token has no event pair."""
    if not token:
        return "the zone was not recorded (stepscope recording is off, or the zone was thinned)"
    status = _core.cuda_status()
    if status.get("reason"):
        return "GPU zones are CPU zones here: %s" % status["reason"]
    return ("the thread's 256 CUDA event pairs were all pending (the GPU is far behind the CPU): the zone was "
            "timed on the CPU only")


def _stats(values):
    """count, mean, std (population), min, max, median, total of ms values."""
    n = len(values)
    if not n:
        return {"count": 0, "mean": None, "std": None, "min": None, "max": None, "median": None, "total": 0.0}
    total = math.fsum(values)
    mean = total / n
    return {"count": n, "mean": mean, "std": math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n),
            "min": min(values), "max": max(values), "median": statistics.median(values), "total": total}


# ----------------------------------------------------------------- CUDATimer

class _Measure:
    """The context manager CUDATimer.measure() returns."""

    __slots__ = ("_timer", "_name", "_open")

    def __init__(self, timer, name):
        self._timer, self._name, self._open = timer, name, None

    def __enter__(self):
        if self._open is not None:
            raise RuntimeError("CUDATimer.measure(%r) is already open: make one per block" % self._name)
        self._open = self._timer._begin(self._name, "CUDATimer.measure()")
        return self

    def __exit__(self, exc_type, exc, tb):
        begun, self._open = self._open, None
        self._timer._end(begun)
        return False


class CUDATimer:
    """Times blocks on the GPU with CUDA events: each block is a
    ``stepscope.gpu_zone`` of its name on the timer's stream.

    synchronize: True: reading a result (get_elapsed, get_stats, time)
        waits for the measurements' end events, polling the calling
        thread's GPU zones (stepscope.gpu_wait), as cudaEventSynchronize
        on them would; False: it never waits, and what the GPU has not
        finished is None or left out.  Never a device-wide
        synchronisation (docs/python.md says why).
    warmup, repeat: the unmeasured and measured runs of time().
    stream: None (the current stream at each block, as gpu_zone), an int
        CUstream handle or a torch.cuda.Stream.

    Measurements are kept per thread; a result still pending is waited for
    on the thread that measured it.  Safe to use from several threads.
    """

    def __init__(self, synchronize=True, warmup=3, repeat=10, stream=None):
        if not isinstance(synchronize, bool):
            raise TypeError("CUDATimer(): synchronize must be True or False")
        for what, v, low in (("warmup", warmup, 0), ("repeat", repeat, 1)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError("CUDATimer(): %s must be an int, not %s" % (what, type(v).__name__))
            if v < low:
                raise ValueError("CUDATimer(): %s must be at least %d, not %d" % (what, low, v))
        _spans_api("CUDATimer()")
        # an int or a Stream is read once, now (as gpu_zone does); None at each block
        self._handle = None if stream is None else _stream_handle(stream, "CUDATimer()")
        self.synchronize, self.warmup, self.repeat, self.stream = synchronize, warmup, repeat, stream
        self._lock = threading.Lock()
        self._measurements = {}  # name -> deque of the latest KEEP_PER_NAME _Measurement, oldest first
        self._started = {}       # name -> what _begin returned

    def __repr__(self):
        return "<stepscope.CUDATimer synchronize=%s warmup=%d repeat=%d names=%d>" % (
            self.synchronize, self.warmup, self.repeat, len(self._measurements))

    # -- measuring ------------------------------------------------------------

    def measure(self, name):
        """A context manager: the block is one measurement of name."""
        _check_name(name, "CUDATimer.measure()")
        return _Measure(self, name)

    def start(self, name):
        """Begin a measurement of name; stop(name) ends it (on the same
        thread; starts and stops nest as zones do)."""
        _check_name(name, "CUDATimer.start()")
        with self._lock:
            if name in self._started:
                raise RuntimeError("CUDATimer.start(%r): %r is already started: stop(%r) it first"
                                   % (name, name, name))
            self._started[name] = None  # reserved while the zone begins
        try:
            begun = self._begin(name, "CUDATimer.start()")
        except BaseException:
            with self._lock:
                del self._started[name]
            raise
        with self._lock:
            self._started[name] = begun

    def stop(self, name):
        """End the measurement start(name) began."""
        with self._lock:
            begun = self._started.get(name)
            if begun is None:
                raise RuntimeError("CUDATimer.stop(%r): %r was not started (call start(%r) first)"
                                   % (name, name, name))
            if begun[2] != threading.get_ident():
                raise RuntimeError("CUDATimer.stop(%r): it was started on another thread: stop it there" % name)
            del self._started[name]
        self._end(begun)

    def _begin(self, name, who):
        stream = self._handle
        if stream is None:
            stream = _stream_handle(None, who)
        # read the ring now, not at the end: reading resolves the finished
        # pairs, and between this block's end and its place in the queue
        # nothing may resolve its pair (it would go unclaimed)
        matcher = _matcher()
        matcher.poll()
        return (name, stream, threading.get_ident(), _core.gpu_zone_begin(name, stream), matcher)

    def _end(self, begun):
        name, stream, thread, token, matcher = begun
        _core.gpu_zone_end(token)
        m = _Measurement(name, stream, thread)
        if token >> _PAIR_SHIFT:
            matcher.add(m)
        else:
            m.state, m.why = _NO_GPU, _no_gpu_reason(token)
        with self._lock:
            kept = self._measurements.get(name)
            if kept is None:
                kept = self._measurements[name] = collections.deque(maxlen=KEEP_PER_NAME)
            kept.append(m)
        return m

    # -- results ---------------------------------------------------------------

    def get_elapsed(self, name, timeout=None):
        """The GPU time in ms of the latest measurement of name.

        synchronize=True waits for it (at most timeout seconds:
        TimeoutError); synchronize=False returns None while the GPU has not
        finished it.  RuntimeError when it has no GPU time (no CUDA here:
        the message says why; its CPU time is the zone in the report) or
        it was lost.  KeyError when name was never measured."""
        with self._lock:
            ms = self._measurements.get(name)
            if not ms:
                raise KeyError("CUDATimer.get_elapsed(%r): no measurement of that name" % name)
            m = ms[-1]
        self._settle([m], timeout, "CUDATimer.get_elapsed(%r)" % name)
        if m.state == _RESOLVED:
            return m.gpu_ms
        if m.state == _PENDING:
            return None
        raise RuntimeError("CUDATimer.get_elapsed(%r): no GPU time: %s" % (name, m.why))

    def get_stats(self, name=None, timeout=None):
        """Statistics in ms of name's measurements with a GPU time:
        count, mean, std (population), min, max, median, total, and how
        many are pending, have no GPU time (no_gpu) or were lost.  Without
        name: {name: stats} for every name, where a name none of whose
        measurements has a GPU time has count 0 and its "reason" (asked
        for by name, it is a RuntimeError).  synchronize=True first waits
        for the pending ones (at most timeout seconds: TimeoutError)."""
        if name is None:
            with self._lock:
                names = {n: list(ms) for n, ms in self._measurements.items()}
            return {n: self._stats_of(ms, timeout, "CUDATimer.get_stats(%r)" % n, refuse=False)
                    for n, ms in names.items()}
        with self._lock:
            ms = list(self._measurements.get(name, ()))
        if not ms:
            raise KeyError("CUDATimer.get_stats(%r): no measurement of that name" % name)
        return self._stats_of(ms, timeout, "CUDATimer.get_stats(%r)" % name)

    def _stats_of(self, ms, timeout, who, refuse=True):
        """The stats of ms; none with a GPU time: RuntimeError (refuse),
        else count 0 and the reason (one name among all of them)."""
        self._settle(ms, timeout, who)
        no_gpu = all(m.state == _NO_GPU for m in ms)
        if no_gpu and refuse:
            raise RuntimeError("%s: no GPU time: %s" % (who, ms[-1].why))
        out = _stats([m.gpu_ms for m in ms if m.state == _RESOLVED])
        for state in (_PENDING, _NO_GPU, _LOST):
            out[state] = sum(1 for m in ms if m.state == state)
        if no_gpu:
            out["reason"] = ms[-1].why
        return out

    def _settle(self, ms, timeout, who):
        """Read back what the GPU has finished of ms; with synchronize,
        wait for the rest measured on this thread."""
        me = threading.get_ident()
        if not any(m.state == _PENDING for m in ms):
            return
        _, wait = _spans_api(who)
        matcher = _matcher()
        _core.gpu_flush()  # resolves what is finished, never waits
        matcher.poll()
        mine = [m for m in ms if m.state == _PENDING and m.thread == me]
        if not self.synchronize:
            return
        if any(m.state == _PENDING and m.thread != me for m in ms):
            raise RuntimeError("%s: a measurement is still pending on another thread: read it there (or with "
                               "synchronize=False)" % who)
        if not mine:
            return
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
            raise TypeError("%s: timeout must be None or a number of seconds, not %s" % (who, type(timeout).__name__))
        if timeout is not None and not timeout >= 0:
            raise ValueError("%s: timeout must be >= 0 seconds or None, not %r" % (who, timeout))
        deadline = time.monotonic() + (WAIT_MAX_S if timeout is None else min(timeout, WAIT_MAX_S))
        while True:
            left = wait(max(0.0, min(WAIT_SLICE_S, deadline - time.monotonic())))
            matcher.poll()
            if not any(m.state == _PENDING for m in mine):
                return
            if not left:
                matcher.settle("its CUDA events could not be resolved (cuda_status()['unresolved'] counts it)")
                return
            if time.monotonic() >= deadline:
                raise TimeoutError("%s: the GPU had not reached the end of the measurement after %s s (%d GPU "
                                   "zones of this thread pending)" % (who, timeout, left))

    # -- benchmarking ------------------------------------------------------------

    def time(self, name, fn, *args, **kwargs):
        """Run fn(*args, **kwargs) warmup times unmeasured, then repeat
        times each measured as name; return the stats of those repeat
        measurements (as get_stats).  synchronize=True waits for them
        (every TIME_WAIT_EVERY too, so the thread's pool of event pairs
        never fills); synchronize=False returns what is resolved."""
        _check_name(name, "CUDATimer.time()")
        if not callable(fn):
            raise TypeError("CUDATimer.time(%r, fn): fn must be callable, not %s" % (name, type(fn).__name__))
        for _ in range(self.warmup):
            fn(*args, **kwargs)
        ms = []
        for k in range(self.repeat):
            begun = self._begin(name, "CUDATimer.time()")
            try:
                fn(*args, **kwargs)
            finally:
                ms.append(self._end(begun))
            if self.synchronize and (k + 1) % TIME_WAIT_EVERY == 0:
                self._settle(ms, None, "CUDATimer.time(%r)" % name)
        return self._stats_of(ms, None, "CUDATimer.time(%r)" % name)

    benchmark = time

    def reset(self):
        """Forget every finished measurement (a start() still open stays
        open and is measured when stopped)."""
        with self._lock:
            self._measurements.clear()

    def names(self):
        """The measured names, in the order first measured."""
        with self._lock:
            return list(self._measurements)


def _check_name(name, who):
    if not isinstance(name, str):
        raise TypeError("%s: name must be a str, not %s" % (who, type(name).__name__))
    if not name:
        raise ValueError("%s: name must not be empty" % who)


# ------------------------------------------------------------ StreamProfiler

def _union(intervals):
    """The union of [start, end) intervals as sorted, disjoint intervals."""
    out = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def _length(intervals):
    return sum(e - s for s, e in intervals)


def stream_figures(spans, num_streams=None):
    """The StreamProfiler figures of spans, tuples (seq, name, stream,
    start_ns, end_ns, gpu_ms) as _gpu_spans returns them (docs/python.md
    defines each figure).  A pure function: the profiler's arithmetic."""
    by_stream, unplaced = {}, 0
    for _seq, _name, stream, start, end, gpu_ms in spans:
        if start == end == 0:
            unplaced += 1  # no epoch event could be had: a duration without a place
            continue
        s = by_stream.setdefault(stream, {"intervals": [], "zones": 0, "gpu_ms": 0.0})
        s["intervals"].append((start, end))
        s["zones"] += 1
        s["gpu_ms"] += gpu_ms
    busy = {stream: _union(s["intervals"]) for stream, s in by_stream.items()}
    wall_iv = _union([iv for ivs in busy.values() for iv in ivs])
    wall = _length(wall_iv)
    # a sweep over the streams' own unions: time with two or more busy
    edges = sorted([(s, 1) for ivs in busy.values() for s, _ in ivs] +
                   [(e, -1) for ivs in busy.values() for _, e in ivs])
    overlap, depth, last = 0, 0, None
    for t, step in edges:
        if depth >= 2:
            overlap += t - last
        depth += step
        last = t
    busy_ns = {stream: _length(ivs) for stream, ivs in busy.items()}
    total = sum(busy_ns.values())
    n = num_streams if num_streams is not None else len(busy)
    ideal = max(max(busy_ns.values()), total / n) if busy_ns and n else 0
    streams = {}
    for stream in sorted(by_stream):
        streams[stream] = {"zones": by_stream[stream]["zones"], "busy_ms": busy_ns[stream] / 1e6,
                           "zone_gpu_ms": by_stream[stream]["gpu_ms"],
                           "busy_share": busy_ns[stream] / wall if wall else None}
    return {
        "streams": streams, "streams_seen": len(busy), "num_streams": n, "zones": len(spans) - unplaced,
        "unplaced": unplaced,
        "wall_ms": wall / 1e6, "busy_ms": total / 1e6, "overlap_ms": overlap / 1e6,
        "span_ms": (wall_iv[-1][1] - wall_iv[0][0]) / 1e6 if wall_iv else 0.0,
        "overlap": overlap / wall if wall else None,
        "concurrency": total / wall if wall else None,
        "ideal_ms": ideal / 1e6,
        "efficiency": ideal / wall if wall else None,
    }


class StreamProfiler:
    """A context manager: the calling thread's GPU zones (gpu_zone,
    CUDATimer.measure, on any stream) that end inside the block are its
    data; get_stats() and print_stream_efficiency() give each stream's
    busy time, the overlap between streams and the efficiency against the
    ideal (docs/python.md defines each).

    num_streams: the N of the ideal (None: the streams seen).
    name: the prefix of the values recorded at the end of each block:
        <name>.wall_ms, <name>.busy_ms, <name>.overlap, <name>.concurrency,
        <name>.efficiency.
    timeout: seconds that entering waits for the thread's GPU zones of
        before the block, and leaving for the block's (None: no bound).
    """

    def __init__(self, num_streams=None, name="streams", timeout=30.0):
        if num_streams is not None and (isinstance(num_streams, bool) or not isinstance(num_streams, int)):
            raise TypeError("StreamProfiler(): num_streams must be None or an int, not %s"
                            % type(num_streams).__name__)
        if num_streams is not None and num_streams < 1:
            raise ValueError("StreamProfiler(): num_streams must be at least 1, not %d" % num_streams)
        _check_name(name, "StreamProfiler()")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout >= 0):
            raise ValueError("StreamProfiler(): timeout must be None or seconds >= 0, not %r" % (timeout,))
        self.num_streams, self.name, self.timeout = num_streams, name, timeout
        self._open = None  # (thread, seq at enter, pending at enter) inside the block
        self._result = None

    def __repr__(self):
        return "<stepscope.StreamProfiler %r num_streams=%s>" % (self.name, self.num_streams)

    def __enter__(self):
        if self._open is not None:
            raise RuntimeError("StreamProfiler %r: a block is already open" % self.name)
        _, wait = _spans_api("StreamProfiler")
        # GPU zones that ended before the block but are still pending would
        # be resolved, and numbered, inside it: wait for them first
        before = wait(self.timeout) if _core.gpu_flush() else 0
        matcher = _matcher()
        matcher.poll()
        self._open = (threading.get_ident(), matcher.cursor or 0, before)
        return self

    def __exit__(self, exc_type, exc, tb):
        thread, seq0, before = self._open
        if thread != threading.get_ident():
            raise RuntimeError("StreamProfiler %r: the block was entered on another thread" % self.name)
        self._open = None
        spans_fn, wait = _spans_api("StreamProfiler")
        left = wait(self.timeout)
        spans = spans_fn(seq0)
        _matcher().poll()
        lost = (spans[0][0] - seq0 - 1) if spans else 0
        lost += sum(b[0] - a[0] - 1 for a, b in zip(spans, spans[1:]))
        fig = stream_figures(spans, self.num_streams)
        fig.update(lost=lost, pending=left, pending_before=before, reason=None)
        if not spans:
            status = _core.cuda_status()
            if status.get("reason"):
                fig["reason"] = status["reason"]
        self._result = fig
        if fig["efficiency"] is not None:
            for key in ("wall_ms", "busy_ms", "overlap", "concurrency", "efficiency"):
                _core.record("%s.%s" % (self.name, key), fig[key])
        return False

    def get_stats(self):
        """The figures of the last block (docs/python.md): a dict with
        streams {handle: {zones, busy_ms, zone_gpu_ms, busy_share}},
        streams_seen, num_streams, zones, unplaced, wall_ms, busy_ms,
        overlap_ms, span_ms, overlap, concurrency, ideal_ms, efficiency,
        lost, pending, pending_before and reason."""
        if self._open is not None:
            raise RuntimeError("StreamProfiler %r: get_stats() inside the block: leave it first" % self.name)
        if self._result is None:
            raise RuntimeError("StreamProfiler %r: no block profiled yet (use `with profiler:`)" % self.name)
        out = dict(self._result)
        out["streams"] = {k: dict(v) for k, v in self._result["streams"].items()}
        return out

    def format_stream_efficiency(self):
        """print_stream_efficiency()'s text."""
        f = self.get_stats()
        lines = ["StreamProfiler %r: %d GPU zones on %d streams (N = %d)"
                 % (self.name, f["zones"], f["streams_seen"], f["num_streams"])]
        if f["efficiency"] is None:
            lines.append("  no GPU time in the block" + (": %s" % f["reason"] if f["reason"] else ""))
        else:
            lines.append("  %-20s %6s %12s %8s" % ("stream", "zones", "busy ms", "of wall"))
            for stream, s in f["streams"].items():
                lines.append("  %-20s %6d %12.4f %7.1f%%" % ("0 (default)" if stream == 0 else hex(stream),
                                                             s["zones"], s["busy_ms"], 100 * s["busy_share"]))
            lines.append("  GPU wall (any stream busy) %.4f ms, first start to last end %.4f ms"
                         % (f["wall_ms"], f["span_ms"]))
            lines.append("  overlap (two or more streams busy) %.4f ms = %.1f%% of the wall"
                         % (f["overlap_ms"], 100 * f["overlap"]))
            lines.append("  concurrency (sum of busy / wall) %.3f" % f["concurrency"])
            lines.append("  ideal wall max(longest busy, sum of busy / %d) %.4f ms: efficiency %.1f%%"
                         % (f["num_streams"], f["ideal_ms"], 100 * f["efficiency"]))
        if f["unplaced"]:
            lines.append("  %d GPU zones had a GPU time but no place on the GPU's timeline: not counted"
                         % f["unplaced"])
        if f["lost"]:
            lines.append("  %d GPU zones of the block were lost (more than %d resolved in it): not counted"
                         % (f["lost"], SPAN_RING))
        if f["pending"]:
            lines.append("  %d GPU zones were still pending after %s s: not counted" % (f["pending"], self.timeout))
        if f["pending_before"]:
            lines.append("  %d GPU zones from before the block were still pending at its start: they may be "
                         "counted" % f["pending_before"])
        return "\n".join(lines)

    def print_stream_efficiency(self, file=None):
        """Print the figures of the last block (stdout by default)."""
        print(self.format_stream_efficiency(), file=file if file is not None else sys.stdout)
