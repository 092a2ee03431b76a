"""stepscope._deep: the deep-capture window (``stepscope run --torch-profile``).

The C extension calls in here only when STEPSCOPE_TORCH_PROFILE was set at
import (python/src/deep.c): before each step begins and after it ends (or
is taken back unrecorded), whichever face made it -- ``stepscope.step()``,
``step_begin()``/``zone_end()``, ``stepscope.torch.instrument`` or the
auto-instrumentation.  Only the main thread's steps are followed, and a
step begun inside another step (nested) is not: the window counts the
main thread's steps as steps.csv's ``step_index`` does (0-based, in the
order they end).

The spec (tools/cli/torch_profile_opt.c checks it for ``stepscope run``):

- ``FIRST:END``: torch.profiler is on for steps FIRST to END-1.  It starts
  just before step FIRST begins and stops just after step END-1 ends, so
  its own start and stop fall between steps.
- ``auto``: from step AUTO_MIN_STEPS on, the first step that takes more
  than AUTO_FACTOR times the median of the last AUTO_HISTORY steps before
  it triggers a capture of the AUTO_STEPS steps that follow it, once.

Time alignment.  torch.profiler's times count from its own trace start
(microseconds; integers in torch 1.13).  Around each capture the window
runs SYNC_ROUNDS empty ``record_function("stepscope.sync")`` blocks, each
bracketed by two ``time.monotonic_ns()`` readings a <= b: the block's
profiler interval [s, e] then lies inside [a, b] on CLOCK_MONOTONIC, so
the offset is in [a - s, b - e] for every block (widened by the profiler's
rounding).  The intersection over all blocks (before and after the
window) gives the offset (its middle) and the error bound (half its
width), which the file records: a preempted bracket only widens its own
interval.  Should the intervals not intersect (the profiler's clock ran
apart from CLOCK_MONOTONIC), each end of the window gets its own offset
and the offset runs linearly between them (_align).

What the file keeps.  Only the operators that ran between the window's
first step's begin and its last step's end (on CLOCK_MONOTONIC, read just
after the profiler started and just before it stops): the profiler's own
work at its start and stop is not the script's.  torch 2.x records some
(a cudaDeviceSynchronize at stop where CUDA is traced, the record_function
calls of the sync blocks) that torch 1.13 does not.  A GPU activity is
kept when it began inside; it may end after the step that launched it.

The capture goes to RUN_DIR/records/torch-ops-<pid>.tsv (docs/record-
format.md, "torch-ops files"), written to a temporary file and renamed.
Nothing here raises into the script: a failure is one line on stderr and
the window is given up.
"""

import atexit
import bisect
import collections
import os
import sys
import threading
import time

ENV = "STEPSCOPE_TORCH_PROFILE"
AUTO_MIN_STEPS = 10   # auto judges steps from this index on
AUTO_FACTOR = 3.0     # "slow": above this many times the median
AUTO_HISTORY = 256    # the median is of at most this many steps before
AUTO_STEPS = 5        # what a trigger captures: the steps after the slow one
SYNC_ROUNDS = 16      # record_function brackets at each end of the window
FORMAT = "stepscope-torch-ops 1"

_monotonic_ns = time.monotonic_ns


def _say(what):
    try:
        sys.stderr.write("stepscope: --torch-profile: %s\n" % what)
        sys.stderr.flush()
    except Exception:
        pass


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _write_beside_records(run_dir, name, text):
    """text into run_dir/records/name, replaced whole, never through a link:
    run_dir and records/ are opened without following a link at their
    names (the recorder does the same), the temporary has a random name
    and is created exclusively, and the rename is relative to records/."""
    dfd = os.open(run_dir, _DIR_FLAGS)
    try:
        rfd = os.open("records", _DIR_FLAGS, dir_fd=dfd)
    finally:
        os.close(dfd)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        for _ in range(16):
            tmp = ".%s.tmp-%s" % (name, os.urandom(6).hex())
            try:
                fd = os.open(tmp, flags, 0o644, dir_fd=rfd)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError("records/%s: no free temporary name" % name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
                f.write(text)
            os.replace(tmp, name, src_dir_fd=rfd, dst_dir_fd=rfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=rfd)
            except OSError:
                pass
            raise
    finally:
        os.close(rfd)


def parse_spec(spec):
    """(first, end) for FIRST:END, "auto" for auto; ValueError otherwise."""
    if spec == "auto":
        return "auto"
    first, sep, end = spec.partition(":")
    if not sep or not first.isdigit() or not end.isdigit() or int(end) <= int(first):
        raise ValueError("%r is not FIRST:END (0-based step indices, END excluded) or auto" % spec)
    return int(first), int(end)


class _Window:
    def __init__(self, spec):
        self.spec = spec
        self.window = parse_spec(spec)
        self.auto = self.window == "auto"
        self.pid = os.getpid()
        self.main = threading.main_thread().ident
        self.ended = 0          # main-thread steps ended so far (the next step's index)
        self.in_step = False
        self.begun_ns = 0
        self.done = False       # captured, or given up
        self.prof = None
        self.first_step = self.end_step = None
        self.trigger = None     # auto: (slow step's index, its duration / median)
        self.history = collections.deque()
        self.sorted = []
        self.syncs = []         # (a_ns, b_ns) around each sync block, in order
        self.costs = {}
        self.captured = 0       # the window's steps ended so far
        self.lo_ns = None       # monotonic ns: the window's first step begins after this
        self.hi_ns = None       # and its last step ended before this
        if not self.auto:
            self.first_step, self.end_step = self.window

    # -- the steps ---------------------------------------------------------

    def begin(self):
        if self.in_step or threading.get_ident() != self.main:
            return False
        if self.prof is None and self.ended == self.first_step and not self.done:
            self._start()
            self.lo_ns = _monotonic_ns()
        self.in_step = True
        if self.auto:  # only auto times the steps
            self.begun_ns = _monotonic_ns()
        return True

    def end(self, discarded):
        if not self.in_step:
            return
        self.hi_ns = _monotonic_ns()
        self.in_step = False
        if discarded:
            return
        index = self.ended
        self.ended += 1
        if self.prof is not None:
            self.captured += 1
            if self.ended >= self.end_step:
                self._stop(None)
        elif self.auto and self.trigger is None:
            self._judge(index, _monotonic_ns() - self.begun_ns)

    def _judge(self, index, took):
        if index >= AUTO_MIN_STEPS and self.sorted:
            n = len(self.sorted)
            median = (self.sorted[n // 2] + self.sorted[(n - 1) // 2]) / 2.0
            if median > 0 and took > AUTO_FACTOR * median:
                self.trigger = (index, took / median)
                self.first_step, self.end_step = index + 1, index + 1 + AUTO_STEPS
                return
        if len(self.history) == AUTO_HISTORY:
            old = self.history.popleft()
            del self.sorted[bisect.bisect_left(self.sorted, old)]
        self.history.append(took)
        bisect.insort(self.sorted, took)

    # -- the profiler ------------------------------------------------------

    def _start(self):
        if "torch" not in sys.modules:
            self._give_up("this process never imported torch: nothing to profile")
            return
        try:
            t0 = _monotonic_ns()
            import torch
            from torch.profiler import ProfilerActivity, profile
            activities = [ProfilerActivity.CPU]
            if torch.cuda.is_available():
                activities.append(ProfilerActivity.CUDA)
            self.prof = profile(activities=activities)
            self.prof.start()
            self._sync()
            self.costs["start_ns"] = _monotonic_ns() - t0
        except Exception as e:  # never into the script
            self.prof = None
            self._give_up("torch.profiler could not start (%s: %s)" % (type(e).__name__, e))

    def _sync(self):
        from torch.profiler import record_function
        for _ in range(SYNC_ROUNDS):
            a = _monotonic_ns()
            with record_function("stepscope.sync"):
                pass
            b = _monotonic_ns()
            self.syncs.append((a, b))

    def _stop(self, why_short):
        prof, self.prof = self.prof, None
        self.done = True
        try:
            t0 = _monotonic_ns()
            self._sync()
            prof.stop()
            t1 = _monotonic_ns()
            self.costs["stop_ns"] = t1 - t0
            lines = self._export(prof.events(), why_short)
            self.costs["export_ns"] = _monotonic_ns() - t1
            self._write(lines)
        except Exception as e:
            self._give_up("the capture could not be exported (%s: %s)" % (type(e).__name__, e))

    # -- the export --------------------------------------------------------

    def _align(self, syncs_prof, unit_ns, rounding_ns):
        """(to_ns, bound_ns): to_ns(profiler time) is monotonic ns.

        Each sync block bounds the offset (monotonic ns - profiler time *
        unit_ns) to [a - s - rounding, b - e + rounding]; a block whose
        bracket was preempted gives a wide interval, the others narrow
        ones, and the intersection keeps the narrowest bounds.  Should the
        blocks have no common offset (torch.profiler converts the CPU's
        time-stamp counter at a rate it fitted: its clock runs a little
        apart from CLOCK_MONOTONIC), each end of the window gets its own
        intersection (the tightest single bracket there, should even those
        not meet) and the offset runs linearly between the two; the bound is
        the wider end's, never the spread between them.
        """
        def meet(pairs):  # (offset, bound, whether all the brackets met)
            lows = [a - s * unit_ns - rounding_ns for (a, _), (s, _) in pairs]
            highs = [b - e * unit_ns + rounding_ns for (_, b), (_, e) in pairs]
            lo, hi = max(lows), min(highs)
            met = lo <= hi
            if not met:  # the tightest bracket alone
                lo, hi = min(zip(lows, highs), key=lambda lh: lh[1] - lh[0])
            return (lo + hi) / 2.0, (hi - lo) / 2.0, met

        pairs = list(zip(self.syncs, syncs_prof))
        offset, bound, met = meet(pairs)
        if met or len(pairs) < 2:
            return (lambda t: t * unit_ns + offset), bound
        half = len(pairs) // 2  # SYNC_ROUNDS at the start, as many at the stop
        (o0, b0, _), (o1, b1, _) = meet(pairs[:half]), meet(pairs[half:])
        t0 = sum(s + e for _, (s, e) in pairs[:half]) / (2.0 * half)
        t1 = sum(s + e for _, (s, e) in pairs[half:]) / (2.0 * (len(pairs) - half))
        rate = (o1 - o0) / (t1 - t0) if t1 != t0 else 0.0
        return (lambda t: t * unit_ns + o0 + (t - t0) * rate), max(b0, b1)

    def _export(self, events, why_short):
        syncs, sync_thread, sync_ids = [], None, set()
        for ev in events:
            if ev.name == "stepscope.sync":
                syncs.append((ev.time_range.start, ev.time_range.end))
                sync_thread = ev.thread
                sync_ids.add(id(ev))
        if len(syncs) != len(self.syncs):
            raise RuntimeError("%d sync marks in the profile, %d made" % (len(syncs), len(self.syncs)))
        syncs.sort()
        # torch 1.13 gives whole microseconds; 2.x fractional ones (from ns)
        integral = all(isinstance(s, int) for s, _ in syncs)
        to_ns, bound = self._align(syncs, 1000, 1000 if integral else 1)
        slack = int(bound) + 1
        spans = [(a - slack, b + slack) for a, b in self.syncs]
        lo = self.lo_ns - slack if self.lo_ns is not None else None
        hi = self.hi_ns + slack if self.hi_ns is not None else None
        main_tid = threading.get_native_id()
        ops = []
        for ev in events:
            if id(ev) in sync_ids:
                continue
            start = int(round(to_ns(ev.time_range.start)))
            end = int(round(to_ns(ev.time_range.end)))
            if any(a <= start and end <= b for a, b in spans):
                continue  # the sync blocks' own work (record_function's tensors)
            device = getattr(ev.device_type, "name", str(ev.device_type))
            gpu = device not in ("CPU",)
            if (lo is not None and start < lo) or (not gpu and hi is not None and end > hi):
                continue  # the profiler's own work at its start or stop
            if gpu:
                self_ns = end - start
                tid = 0
            else:
                self_ns = int(round(ev.self_cpu_time_total * 1000))
                # the profiler numbers threads itself; the main thread is the
                # sync blocks'; another keeps its number, negated
                tid = main_tid if ev.thread == sync_thread else -int(ev.thread)
            name = ev.name.replace("\t", " ").replace("\n", " ").replace("\r", " ")
            ops.append("op\t%d\t%d\t%d\t%d\t%s\t%s\n" % (start, end, max(self_ns, 0), tid,
                                                         "gpu" if gpu else "cpu", name))
        head = [FORMAT + "\n", "pid\t%d\n" % os.getpid(), "spec\t%s\n" % self.spec,
                "tid\t%d\n" % main_tid,
                "window\t%d\t%d\n" % (self.first_step, self.first_step + self.captured),
                "align_error_ns\t%d\n" % int(round(bound)),
                "start_cost_ns\t%d\n" % self.costs.get("start_ns", 0),
                "stop_cost_ns\t%d\n" % self.costs.get("stop_ns", 0)]
        if self.trigger:
            head.append("trigger\t%d\t%.3f\n" % self.trigger)
        if why_short:
            head.append("short\t%s\n" % why_short)
        return head, ops

    def _write(self, lines, unavailable=None):
        run_dir = os.environ.get("STEPSCOPE_RUN_DIR")
        if not run_dir:
            _say("no run directory (STEPSCOPE_RUN_DIR): the capture is not kept")
            return
        if unavailable is not None:
            head, ops = [FORMAT + "\n", "pid\t%d\n" % os.getpid(), "spec\t%s\n" % self.spec,
                         "tid\t%d\n" % threading.get_native_id(), "unavailable\t%s\n" % unavailable], []
        else:
            head, ops = lines
            # measured once the lines are made: it goes in the file it measures
            head.append("export_cost_ns\t%d\n" % self.costs.get("export_ns", 0))
        lines = head + ops + ["end\t%d\n" % len(ops)]
        _write_beside_records(run_dir, "torch-ops-%d.tsv" % os.getpid(), "".join(lines))

    def _give_up(self, why):
        self.done = True
        _say(why)
        try:
            self._write(None, unavailable=why)
        except Exception as e:
            _say("%s: %s" % (type(e).__name__, e))

    # -- the exit ----------------------------------------------------------

    def at_exit(self):
        if os.getpid() != self.pid or self.done:
            return
        try:
            from . import _stepscope
            _stepscope._end_pending()  # a loop of bare step() calls: its last step
        except Exception:
            pass
        if self.done:  # that step closed the window
            return
        if self.prof is not None:
            self.hi_ns = _monotonic_ns()  # the script's work up to its exit is its own
            self._stop("the process ended after %d of the window's %d steps"
                       % (self.captured, self.end_step - self.first_step))
        elif self.first_step is None:
            self._give_up("no step was slow enough to trigger a capture (%d steps)" % self.ended)
        else:
            self._give_up("the process ended after %d steps, before step %d" % (self.ended, self.first_step))


_window = None  # made at the first step; False: the spec is bad


def _make():
    global _window
    spec = os.environ.get(ENV, "")
    try:
        _window = _Window(spec)
    except ValueError as e:
        _say(str(e))
        _window = False
        return None
    atexit.register(_window.at_exit)
    return _window


def _after_fork_in_child():
    # a forked process counts its own steps, with a window of its own
    global _window
    if _window is not None:
        _window = None


os.register_at_fork(after_in_child=_after_fork_in_child)


def step_begin():
    """Called by the extension before a step begins: whether to follow it,
    or None when the window is over (the extension then stops calling)."""
    w = _make() if _window is None else _window
    if not w or w.done:
        return None
    try:
        return w.begin()
    except Exception as e:
        _say("%s: %s" % (type(e).__name__, e))
        return False


def step_end(discarded):
    """Called by the extension after a followed step ends (or was taken
    back unrecorded: discarded); True when the window is over."""
    if not _window:
        return True
    try:
        _window.end(discarded)
    except Exception as e:
        _say("%s: %s" % (type(e).__name__, e))
    return _window.done
