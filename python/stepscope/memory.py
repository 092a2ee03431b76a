"""stepscope.MemoryTracker: the third seed's GPU memory tracker, over the
core.

    tracker = stepscope.MemoryTracker()
    with tracker:
        for batch in loader:
            loss = model(batch).sum()
            loss.backward()
    tracker.print_summary()
    print(tracker.get_stats()["peak_allocated"] / 2**30, "GiB")
    rows = tracker.get_allocation_timeline()   # [(t_ns, allocated_bytes, event), ...]

What it reads (torch.cuda's caching allocator, on the tracker's device):
``torch.cuda.memory_stats()`` at the block's enter and exit (counters the
allocator keeps; no synchronisation, no kernel), and, with
``track_timeline``, the allocator's own allocation history where torch
keeps one with timestamps (``torch.cuda.memory._record_memory_history``
with ``max_entries``, torch 2.1+), else a sample of
``torch.cuda.memory_allocated()`` every ``interval`` ms from a thread of its
own.  The block is a zone ("memory_tracker", or name=) and its figures are
values of the record, the timeline rows values at their own times
(``torch.cuda.timeline.allocated_bytes``, stepscope.record(at_ns=)), so
report.json, report.html and trace.json show them.  docs/python.md
("MemoryTracker") says what each figure is and how exact it is.

Without torch's CUDA (no torch, a CPU-only torch, or CuPy / JAX / your own
CUDA code), it reads the device instead: cuMemGetInfo_v2 of the current
CUDA context through the library's libcuda (_stepscope._cuda_mem_info), at
enter and exit and every ``interval`` ms between (get_stats()["source"] is
"cuda"; used = total - free counts every process on the GPU).
"""

import sys
import threading
import time
import warnings

from . import _stepscope as _core

__all__ = ["MemoryTracker"]

#: the value name of the timeline's rows in the record (report.html's
#: chart, trace.json's counter track)
TIMELINE_VALUE = "torch.cuda.timeline.allocated_bytes"
#: likewise for the device's used bytes, where torch has no CUDA
DEVICE_TIMELINE_VALUE = "cuda.timeline.device_used_bytes"

#: at most this many rows of one block go into the record (all of them
#: stay in get_allocation_timeline()): below the 16384 value events a
#: thread's ring keeps by default (STEPSCOPE_VALUE_EVENTS), so none of a
#: block's rows is overwritten by the next
MAX_RECORDED_ROWS = 10000

#: the allocation history's size when the tracker turns it on: entries
#: beyond it push the oldest out (torch's ring), which the stats say
HISTORY_MAX_ENTRIES = 1000000

MIB = 1 << 20
GIB = 1 << 30

_warned_no_history = False


def _realtime_ns():
    # torch's history times are the Unix epoch (CLOCK_REALTIME); a test
    # replaces this to pin the offset between the two clocks
    return time.time_ns()


def clock_offset_ns(clock=None, realtime=None):
    """stepscope.clock_ns() minus the Unix time in ns, from the tightest of
    five Unix readings each between two of the record's clock (the pair
    nearest together pins it best): what maps torch's time_us onto the
    record's clock."""
    clock = clock or _core.clock_ns
    realtime = realtime or _realtime_ns
    best = None
    for _ in range(5):
        a = clock()
        r = realtime()
        b = clock()
        if best is None or b - a < best[0]:
            best = (b - a, (a + b) // 2 - r)
    return best[1]


def format_bytes(n):
    """n bytes as MiB below 1 GiB, else GiB, one decimal ("4.0 MiB")."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n >= GIB:
        return "%s%.1f GiB" % (sign, n / GIB)
    return "%s%.1f MiB" % (sign, n / MIB)


def thin_rows(rows, cap):
    """At most cap of rows (time order), the extremes kept: rows are cut
    into cap // 2 runs of consecutive rows and each run keeps its lowest
    and its highest allocated_bytes (one row when they are the same), so a
    peak or a trough of the timeline is never thinned away.  Returns (kept,
    number thinned)."""
    n = len(rows)
    if n <= cap:
        return list(rows), 0
    runs = max(1, cap // 2)
    kept = []
    for r in range(runs):
        lo, hi = r * n // runs, (r + 1) * n // runs
        run = rows[lo:hi]
        if not run:
            continue
        i_min = min(range(len(run)), key=lambda i: run[i][1])
        i_max = max(range(len(run)), key=lambda i: run[i][1])
        for i in sorted({i_min, i_max}):
            kept.append(run[i])
    return kept, n - len(kept)


def _torch_cuda_or_reason():
    """(torch, None) when torch has a usable CUDA, else (None, why)."""
    try:
        import torch
    except Exception as e:  # no torch, or a broken install
        return None, "torch is not importable (%s: %s)" % (type(e).__name__, e)
    version = getattr(torch, "__version__", "?")
    cuda = getattr(torch, "cuda", None)
    try:
        available = cuda is not None and cuda.is_available()
    except Exception as e:
        return None, "torch %s: torch.cuda.is_available() failed (%s)" % (version, e)
    if not available:
        return None, ("torch %s has no usable CUDA device (torch.cuda.is_available() is False: a CPU-only torch, "
                      "no GPU, or CUDA_VISIBLE_DEVICES empty)" % version)
    return torch, None


def _history_api(torch):
    """'timed' when torch.cuda.memory._record_memory_history takes
    max_entries (torch 2.1+: its history entries carry time_us), else
    None with why."""
    memory = getattr(torch.cuda, "memory", None)
    record = getattr(memory, "_record_memory_history", None)
    if record is None or getattr(memory, "_snapshot", None) is None:
        return None, "torch.cuda.memory._record_memory_history is absent"
    import inspect
    try:
        params = inspect.signature(record).parameters
    except (TypeError, ValueError):
        params = {}
    if "max_entries" not in params:
        return None, "its _record_memory_history keeps no timestamped allocation history (torch 2.1+ does)"
    return "timed", None


def _history_enabled(torch):
    """Whether the allocator already records history (the user's), where
    torch says (torch._C._cuda_isHistoryEnabled); None when it cannot."""
    probe = getattr(getattr(torch, "_C", None), "_cuda_isHistoryEnabled", None)
    if probe is None:
        return None
    try:
        return bool(probe())
    except Exception:
        return None


def _stat(stats, key):
    return int(stats.get(key, 0) or 0)


class _Sampler(threading.Thread):
    """read() every interval ms, with its time on the record's clock,
    until stopped (the tracker puts the block's enter and exit readings
    first and last); setup() first, on this thread, when given.  An
    exception ends the sampling with its text in .error: never the
    workload's problem."""

    def __init__(self, name, read, interval_ms, setup=None):
        super().__init__(name=name, daemon=True)
        self._read, self._setup, self._interval = read, setup, interval_ms / 1000.0
        self._stop_event = threading.Event()
        self.samples = []
        self.error = None

    def run(self):
        try:
            if self._setup:
                self._setup()
            while not self._stop_event.wait(self._interval):
                self.samples.append((_core.clock_ns(), self._read()))
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)

    def stop(self):
        self._stop_event.set()
        self.join()


def _device_used():
    """(used, total) bytes of the current CUDA context's device."""
    free, total = _core._cuda_mem_info()
    return total - free, total


class MemoryTracker:
    """A context manager tracking torch.cuda memory of one GPU over its
    block (the seed's options, plus device, name and reset_peak).

    track_allocations: count allocations and frees in the block (the
        allocator's allocation.all counters).
    track_timeline: keep the allocation timeline (get_allocation_timeline).
    interval: the sampling period in ms where torch keeps no timestamped
        allocation history (torch before 2.1).
    device: the GPU (index, "cuda:N" or torch.device); None: the current one.
    name: the block's zone, and the prefix of its values in the record.
    reset_peak: reset torch's peak counters at enter, so the peak is
        exact from them (your own torch.cuda.max_memory_allocated() then
        counts from the block's enter too); off by default.

    A tracker may be used for several blocks one after another (each block
    starts afresh); a block inside its own block is an error.  Without
    torch's CUDA but with a current CUDA context (CuPy, JAX, your own
    CUDA code), it tracks the device's used memory instead (get_stats()
    "source": "cuda"; docs/python.md).  Without either the block runs
    untracked: a warning says why, get_stats() has "available": False and
    the "reason".
    """

    def __init__(self, track_allocations=True, track_timeline=True, interval=100, device=None,
                 name="memory_tracker", reset_peak=False):
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or not interval > 0:
            raise ValueError("stepscope.MemoryTracker: interval must be a number of milliseconds above 0, not %r"
                             % (interval,))
        if not isinstance(name, str) or not name:
            raise ValueError("stepscope.MemoryTracker: name must be a non-empty str, not %r" % (name,))
        if not (device is None or (isinstance(device, str) and device.split(":")[0] == "cuda") or
                (not isinstance(device, (str, int)) and hasattr(device, "index") and
                 getattr(device, "type", "cuda") == "cuda") or
                (isinstance(device, int) and not isinstance(device, bool) and device >= 0)):
            raise TypeError("stepscope.MemoryTracker: device must be a GPU index, 'cuda:N' or a torch.device, not %r"
                            % (device,))
        self.track_allocations = bool(track_allocations)
        self.track_timeline = bool(track_timeline)
        self.interval = interval
        self.device = device
        self.name = name
        self.reset_peak = bool(reset_peak)
        self._open = False
        self._stats = None
        self._timeline = []

    # ------------------------------------------------------------ the block

    def __enter__(self):
        if self._open:
            raise RuntimeError("stepscope.MemoryTracker: this tracker's block is already open (a 'with' inside "
                               "its own 'with'); use another MemoryTracker for the inner block")
        self._open = True
        self._stats, self._timeline = None, []
        self._torch, self._reason = _torch_cuda_or_reason()
        self._sampler = None
        self._history = None
        self._device_mode = False
        if self._torch is None:
            self._begin_device()
        if self._torch is not None:
            try:
                self._begin(self._torch.cuda)
            except Exception as e:  # a broken CUDA setup must not stop the training it watches
                self._untrack("torch.cuda failed at the block's enter (%s: %s)" % (type(e).__name__, e))
        if self._torch is None and not self._device_mode:
            warnings.warn("stepscope.MemoryTracker: %s; the block is not tracked" % self._reason,
                          RuntimeWarning, stacklevel=2)
        # the zone is the block's own time: CUDA's initialisation and the
        # history's start before it, the reading of the history after it
        self._zone = _core.zone_begin(self.name)
        return self

    def _begin(self, cuda):
        if not cuda.is_initialized():
            cuda.init()  # as the block's first CUDA tensor would: the history covers the block
        self._dev = cuda.current_device() if self.device is None else self._device_index(self.device)
        if self.reset_peak:
            cuda.reset_peak_memory_stats(self._dev)
        if self.track_timeline:
            self._start_timeline(cuda)
        self._enter_rt = _realtime_ns()
        self._enter_ns = _core.clock_ns()
        self._at_enter = cuda.memory_stats(self._dev)
        if self._sampler is not None:
            self._sampler.samples.append((self._enter_ns, _stat(self._at_enter, "allocated_bytes.all.current")))
            self._sampler.start()

    def _begin_device(self):
        """Where torch has no CUDA: track the device's used memory through
        libcuda when the thread has a current CUDA context; else add why
        not to the reason."""
        if self.device is not None:
            self._reason += "; device=%r needs torch's CUDA (without it the device is the current CUDA " \
                            "context's)" % (self.device,)
            return
        try:
            context = _core._cuda_context()
            if not context:
                raise RuntimeError("the calling thread has no current CUDA context")
            used, total = _device_used()
        except Exception as e:
            self._reason += "; and no device memory to read instead (%s)" % (e,)
            return
        self._device_mode = True
        self._enter_ns = _core.clock_ns()
        self._device_enter = (used, total)
        # the device's used bytes, in the CUDA context of the thread that
        # opened the block (made current on the sampler's own
        # thread first: a context is current per thread)
        self._sampler = _Sampler("stepscope device memory sampler", lambda: _device_used()[0], self.interval,
                                 setup=lambda: _core._cuda_use_context(context))
        self._sampler.samples.append((self._enter_ns, used))
        self._sampler.start()

    def _end_device(self):
        self._sampler.stop()
        s = {"available": True, "source": "cuda",
             "scope": "the device of the current CUDA context: every process on it, not only this one"}
        try:
            used, total = _device_used()
        except Exception as e:  # the context went away in the block
            used, total = None, self._device_enter[1]
            s["exit_error"] = "%s: %s" % (type(e).__name__, e)
        self._exit_ns = _core.clock_ns()
        samples = self._sampler.samples
        if used is not None:
            samples.append((self._exit_ns, used))
        s.update({
            "device": None,
            "total": total,
            "device_used_at_enter": self._device_enter[0],
            "device_used": used if used is not None else samples[-1][1],
            "duration_s": (self._exit_ns - self._enter_ns) / 1e9,
            "peak_device_used": max(b for _, b in samples),
            "peak_device_used_method": "sampled",
            "samples": len(samples),
            "interval_ms": self.interval,
        })
        s["delta_device_used"] = s["device_used"] - s["device_used_at_enter"]
        if self._sampler.error:
            s["timeline_error"] = self._sampler.error
        self._stats = s
        if self.track_timeline:
            self._timeline = [(t, b, "sampled") for t, b in samples]
            s["timeline_source"] = "device used bytes (cuMemGetInfo) sampled every %s ms" % self.interval
            s["timeline_rows"] = len(self._timeline)
        for key in ("peak_device_used", "device_used", "delta_device_used"):
            _core.record(self.name + "." + key + "_bytes", s[key])
        self._record_timeline(DEVICE_TIMELINE_VALUE)

    def _untrack(self, reason):
        """Stop tracking this block (what was started is stopped), for reason."""
        if self._sampler is not None and self._sampler.is_alive():
            self._sampler.stop()
        if self._history is not None and self._history["ours"]:
            try:
                self._torch.cuda.memory._record_memory_history(enabled=None)
            except Exception:
                pass
        self._torch, self._reason, self._sampler, self._history = None, reason, None, None
        self._timeline = []

    def __exit__(self, *exc):
        _core.zone_end(self._zone)
        try:
            if self._torch is not None:
                try:
                    self._end(self._torch.cuda)
                except Exception as e:  # never the workload's problem, nor in place of its exception
                    self._untrack("torch.cuda failed at the block's exit (%s: %s)" % (type(e).__name__, e))
                    warnings.warn("stepscope.MemoryTracker: %s; the block is not tracked" % self._reason,
                                  RuntimeWarning, stacklevel=2)
            if self._device_mode:
                try:
                    self._end_device()
                except Exception as e:  # never the workload's problem, nor in place of its exception
                    self._device_mode = False
                    self._reason = "reading device memory failed at the block's exit (%s: %s)" % (
                        type(e).__name__, e)
                    self._timeline = []
            if not self._device_mode and self._torch is None:
                self._stats = {"available": False, "reason": self._reason}
        finally:
            self._open = False
        return False

    def _end(self, cuda):
        at_exit = cuda.memory_stats(self._dev)
        self._exit_ns = _core.clock_ns()
        self._exit_rt = _realtime_ns()
        self._stats = self._figures(self._at_enter, at_exit)
        if self.track_timeline:
            self._finish_timeline(cuda)
        self._record()

    def _device_index(self, device):
        index = getattr(device, "index", device)
        if isinstance(device, str):
            index = self._torch.device(device).index
        if index is None:
            return self._torch.cuda.current_device()
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError("stepscope.MemoryTracker: device must be a GPU index, 'cuda:N' or a torch.device, "
                            "not %r" % (device,))
        return index

    # ---------------------------------------------------------- the figures

    def _figures(self, enter, exit_):
        s = {
            "available": True,
            "source": "torch",
            "device": self._dev,
            "allocated_at_enter": _stat(enter, "allocated_bytes.all.current"),
            "reserved_at_enter": _stat(enter, "reserved_bytes.all.current"),
            "allocated": _stat(exit_, "allocated_bytes.all.current"),
            "reserved": _stat(exit_, "reserved_bytes.all.current"),
            "duration_s": (self._exit_ns - self._enter_ns) / 1e9,
        }
        s["delta_allocated"] = s["allocated"] - s["allocated_at_enter"]
        s["delta_reserved"] = s["reserved"] - s["reserved_at_enter"]
        if self.track_allocations:
            s["num_alloc"] = _stat(exit_, "allocation.all.allocated") - _stat(enter, "allocation.all.allocated")
            s["num_free"] = _stat(exit_, "allocation.all.freed") - _stat(enter, "allocation.all.freed")
        for what in ("allocated", "reserved"):
            peak_enter = _stat(enter, what + "_bytes.all.peak")
            peak_exit = _stat(exit_, what + "_bytes.all.peak")
            if self.reset_peak:
                s["peak_" + what], s["peak_" + what + "_method"] = peak_exit, "reset"
            elif peak_exit > peak_enter:
                s["peak_" + what], s["peak_" + what + "_method"] = peak_exit, "torch_peak_rose"
            else:
                # torch's peak is older than the block: the block's own
                # peak lies between what was seen and that peak
                s["peak_" + what] = max(s[what + "_at_enter"], s[what])
                s["peak_" + what + "_method"] = "bound"
                s["peak_" + what + "_upper_bound"] = peak_exit
        return s

    # --------------------------------------------------------- the timeline

    def _start_timeline(self, cuda):
        global _warned_no_history
        api, why = _history_api(self._torch)
        if api == "timed":
            already = _history_enabled(self._torch)
            self._history = {"ours": not already}
            if not already:
                cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                                   max_entries=HISTORY_MAX_ENTRIES)
            return
        self._no_history = "torch %s: %s" % (getattr(self._torch, "__version__", "?"), why)
        if not _warned_no_history:
            _warned_no_history = True
            warnings.warn("stepscope.MemoryTracker: %s; the allocation timeline samples "
                          "torch.cuda.memory_allocated() every %s ms instead (and the per-step "
                          "torch.cuda.allocated_bytes values stand beside it)" % (self._no_history, self.interval),
                          RuntimeWarning, stacklevel=3)
        dev = self._dev
        self._sampler = _Sampler("stepscope memory sampler", lambda: int(cuda.memory_allocated(dev)),
                                 self.interval)  # started once the enter is read

    def _finish_timeline(self, cuda):
        s = self._stats
        if self._history is not None:
            snap = cuda.memory._snapshot()
            if self._history["ours"]:
                cuda.memory._record_memory_history(enabled=None)
            self._timeline = self._history_rows(snap)
            s["timeline_source"] = "torch allocation history (torch.cuda.memory._record_memory_history)"
            s["timeline_history_was_on"] = not self._history["ours"]
        else:
            self._sampler.stop()
            # the block's exit, as its stats read it, ends the timeline
            self._sampler.samples.append((self._exit_ns, s["allocated"]))
            self._timeline = self._sampled_rows()
            s["timeline_source"] = "sampled every %s ms (%s)" % (self.interval, self._no_history)
            if self._sampler.error:
                s["timeline_error"] = self._sampler.error
        s["timeline_rows"] = len(self._timeline)
        if self._timeline:
            top = max(r[1] for r in self._timeline)
            if self._history is not None and s.get("timeline_complete"):
                # every alloc and free of the block, from its allocated
                # bytes at enter: the running total's top is the peak
                s["peak_allocated"], s["peak_allocated_method"] = top, "history"
                s.pop("peak_allocated_upper_bound", None)
            elif s["peak_allocated_method"] == "bound" and top > s["peak_allocated"]:
                s["peak_allocated"] = top

    def _history_rows(self, snap):
        traces = snap.get("device_traces") or []
        entries = traces[self._dev] if self._dev < len(traces) else []
        offset = clock_offset_ns()
        s = self._stats
        lo, hi = self._enter_rt, self._exit_rt
        running, reserved = s["allocated_at_enter"], s["reserved_at_enter"]
        top_reserved = reserved
        rows, untimed, in_block, before = [], 0, 0, 0
        for e in entries:
            t_us = e.get("time_us")
            if t_us is None:
                untimed += 1
                continue
            t_rt = int(t_us) * 1000
            if t_rt < lo - lo % 1000:  # the block's own entries only (torch's times are in µs)
                before += 1
                continue
            if t_rt > hi:
                continue
            in_block += 1
            action, size = e.get("action"), int(e.get("size", 0) or 0)
            if action == "alloc":
                running += size
                rows.append((t_rt + offset, running, "alloc " + format_bytes(size)))
            elif action == "free_requested":
                running -= size
                rows.append((t_rt + offset, running, "free " + format_bytes(size)))
            elif action == "oom":
                rows.append((t_rt + offset, running, "oom " + format_bytes(size)))
            elif action == "segment_alloc":
                reserved += size
                top_reserved = max(top_reserved, reserved)
            elif action == "segment_free":
                reserved -= size
        s["clock_offset_ns"] = offset
        s["timeline_history_entries"] = in_block
        if untimed:
            s["timeline_untimed_entries"] = untimed
        # complete when the history saw the block from its start: its
        # running total must end where the allocator says it did, and it
        # must reach back to the enter: ours began there (and did not fill
        # up); the user's is a ring of their max_entries, which may have
        # lost the block's first entries (a big allocation among them,
        # freed again) unless it still holds one from before the block
        reaches_enter = self._history["ours"] or before > 0
        s["timeline_complete"] = (reaches_enter and running == s["allocated"] and
                                  len(entries) < HISTORY_MAX_ENTRIES)
        if s["timeline_complete"] and reserved == s["reserved"]:
            # the segments of the block end where the allocator says: the
            # reserved peak is exact from them as well
            s["peak_reserved"], s["peak_reserved_method"] = top_reserved, "history"
            s.pop("peak_reserved_upper_bound", None)
        return rows

    def _sampled_rows(self):
        return [(t, b, "sample " + format_bytes(b)) for t, b in self._sampler.samples]

    # ------------------------------------------------------ into the record

    def _record(self):
        s, prefix = self._stats, self.name + "."
        for key in ("peak_allocated", "peak_reserved", "allocated", "reserved", "delta_allocated"):
            _core.record(prefix + key + "_bytes", s[key])
        if self.track_allocations:
            _core.record(prefix + "num_alloc", s["num_alloc"])
            _core.record(prefix + "num_free", s["num_free"])
        self._record_timeline(TIMELINE_VALUE)

    def _record_timeline(self, value_name):
        s = self._stats
        if not self._timeline:
            return
        rows, thinned = thin_rows(self._timeline, MAX_RECORDED_ROWS)
        s["timeline_recorded_rows"] = len(rows)
        s["timeline_thinned_rows"] = thinned
        # from a thread of its own: a burst of values on the caller's
        # thread would push its own older values out of its ring
        worker = threading.Thread(target=self._record_rows, args=(rows, value_name),
                                  name="stepscope memory timeline")
        worker.start()
        worker.join()

    @staticmethod
    def _record_rows(rows, value_name):
        _core.thread_name("stepscope memory timeline")
        for t_ns, allocated, _event in rows:
            _core.record(value_name, allocated, at_ns=t_ns)

    # --------------------------------------------------------------- results

    def get_stats(self):
        """The last block's figures, a dict (docs/python.md, "MemoryTracker");
        {} before any block has ended."""
        return dict(self._stats) if self._stats else {}

    def get_allocation_timeline(self):
        """The last block's rows (t_ns, allocated_bytes, event), t_ns on
        stepscope.clock_ns()'s clock, allocated_bytes the allocator's
        allocated bytes after the event; all of them (only the record's
        copy is thinned)."""
        return list(self._timeline)

    def print_summary(self, file=None):
        """A short table of the last block's figures."""
        out = file or sys.stdout
        s = self._stats
        if not s:
            print("MemoryTracker %s: no block has ended yet" % self.name, file=out)
            return
        if not s["available"]:
            print("MemoryTracker %s: not tracked: %s" % (self.name, s["reason"]), file=out)
            return
        if s["source"] == "cuda":
            self._print_device_summary(s, out)
            return
        exact = {"reset": "exact (peak reset at enter)", "torch_peak_rose": "exact (torch's peak rose in the block)",
                 "history": "exact (allocation history)"}

        def how(what):
            return exact.get(s["peak_%s_method" % what]) or (
                "at least; at most %s (torch's peak from before the block)" % format_bytes(
                    s["peak_%s_upper_bound" % what]))
        lines = [
            ("device", "cuda:%d" % s["device"]),
            ("allocated at enter", format_bytes(s["allocated_at_enter"])),
            ("allocated at exit", format_bytes(s["allocated"])),
            ("change", format_bytes(s["delta_allocated"])),
            ("peak allocated", "%s  %s" % (format_bytes(s["peak_allocated"]), how("allocated"))),
            ("reserved at exit", format_bytes(s["reserved"])),
            ("peak reserved", "%s  %s" % (format_bytes(s["peak_reserved"]), how("reserved"))),
        ]
        if "num_alloc" in s:
            lines.append(("allocations / frees", "%d / %d" % (s["num_alloc"], s["num_free"])))
        if "timeline_source" in s:
            lines.append(("timeline", "%d rows, %s" % (s["timeline_rows"], s["timeline_source"])))
        self._print_lines(s, lines, out)

    def _print_lines(self, s, lines, out):
        print("MemoryTracker %s (%.3f s)" % (self.name, s["duration_s"]), file=out)
        width = max(len(k) for k, _ in lines)
        for k, v in lines:
            print("  %-*s  %s" % (width, k, v), file=out)

    def _print_device_summary(self, s, out):
        lines = [
            ("measured", "device memory used (cuMemGetInfo), all processes on the GPU; torch has no CUDA here"),
            ("device total", format_bytes(s["total"])),
            ("used at enter", format_bytes(s["device_used_at_enter"])),
            ("used at exit", format_bytes(s["device_used"])),
            ("change", format_bytes(s["delta_device_used"])),
            ("peak used", "%s  at least (the highest of %d samples, every %s ms)" % (
                format_bytes(s["peak_device_used"]), s["samples"], s["interval_ms"])),
        ]
        if "timeline_source" in s:
            lines.append(("timeline", "%d rows, %s" % (s["timeline_rows"], s["timeline_source"])))
        self._print_lines(s, lines, out)
