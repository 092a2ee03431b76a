"""stepscope.Profiler: the first seed's ``PerformanceProfiler``, over the core.

    profiler = stepscope.Profiler()
    with profiler.profile("training"):
        train()
    print(profiler.get_metrics().summary())   # Peak RAM: 812.4 MB, Wall Time: 45.2s, CPU Util: 99%

Each ``profile(name)`` block is a real ``stepscope.zone(name)`` (so under
``stepscope run`` it is in report.json's zones) and, around it, a set of
measurements the Profiler keeps per operation: wall and CPU time, this
process's RAM (start, end, peak, a leak judgement), GPU memory and
utilisation, system CPU, memory, disk, network and energy from
``stepscope.capture()``, and optionally a FLOP count from torch's profiler.
docs/python.md ("The seeds' APIs") says what each figure is and how it is
measured.
"""

import os
import resource
import sys
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional

from . import _flops
from . import _stepscope as _core

__all__ = [
    "Profiler", "PerformanceProfiler", "PerformanceMetrics", "TimingMetrics", "MemoryMetrics",
    "ComputeMetrics", "SystemMetrics", "ProfiledOperation",
]

MIB = 1 << 20

#: the leak judgement needs at least this many RSS samples inside the block
LEAK_MIN_SAMPLES = 10
#: ... and a least-squares growth over them of at least this many MiB
LEAK_MIN_GROWTH_MB = 1.0
#: the RSS series of one block keeps at most this many points (older ones
#: are merged pairwise), so a long block at a short interval stays small
_SERIES_MAX_POINTS = 2048
#: the sampler never wakes more often than this (seconds)
MIN_SAMPLE_INTERVAL = 0.001
#: detailed_memory samples this many times as often as memory_interval
DETAILED_MEMORY_FACTOR = 4
#: disk, network and energy of a block need the sampler's readings at its
#: start and end at least this many seconds apart (they are read every 0.5 s)
TOTALS_MIN_WINDOW_S = 1.0
#: a block's start reading may be the Profiler's last one when it is this
#: young (seconds): the core's sampler reads every 100 ms
READING_REUSE_S = 0.05
#: the sampler thread stays this long after a Profiler's last block closes,
#: so that a loop of blocks does not start and join a thread every block
SAMPLER_LINGER_S = 2.0

#: the sampler thread's name
SAMPLER_THREAD_NAME = "stepscope-profiler-sampler"

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


class _ProcFile:
    """One /proc/self file kept open and re-read with pread: a block's
    reads cost a system call each (about 1 us for statm), not an open,
    read and close (about 10 us).  procfs regenerates the text on every
    read from offset 0.  A forked child reopens it: /proc/self resolved to
    the parent when the file was opened."""

    def __init__(self, path, size):
        self.path, self.size, self.fd = path, size, None

    def read(self):
        """The file's bytes, or None when it cannot be read (no procfs)."""
        try:
            if self.fd is None:
                self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            return os.pread(self.fd, self.size, 0)
        except OSError:
            return None

    def forget(self):
        """After fork, in the child: the descriptor names the parent's file."""
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


_STATM = _ProcFile("/proc/self/statm", 256)
_STATUS = _ProcFile("/proc/self/status", 8192)


def process_rss_bytes():
    """This process's resident memory now (/proc/self/statm), in bytes.

    Read on every call: the core's ``workload_rss_bytes`` covers the whole
    process tree under ``stepscope run`` and is sampled every 100 ms, while
    a profiled block wants this process at this moment."""
    text = _STATM.read()
    try:
        return int(text.split()[1]) * _PAGE_SIZE
    except (AttributeError, IndexError, ValueError):
        # no procfs: the core's fresh reading of the workload (this
        # process and its children when not under `stepscope run`)
        return _core.capture(fresh=True)["workload_rss_bytes"]


#: True once getrusage's ru_maxrss is known to be this process's own
#: high-water mark (see process_peak_rss_bytes); it stays so
_maxrss_is_own = False


def process_peak_rss_bytes(usage=None):
    """This process's resident-memory high-water mark (VmHWM), in bytes.

    Not getrusage's ru_maxrss alone: Linux carries that across execve, so
    a program started by a big process (pytest with torch loaded, a
    launcher) reports its parent's peak until it exceeds it.  ru_maxrss is
    the larger of that inherited figure and VmHWM, so once it is no more
    than VmHWM it is VmHWM for good.  Given usage (a getrusage(RUSAGE_SELF)
    the caller has), its ru_maxrss is used from then on, which saves
    reading /proc/self/status (about 8 us)."""
    global _maxrss_is_own
    if usage is not None and _maxrss_is_own:
        return usage.ru_maxrss * 1024  # KiB on Linux
    text = _STATUS.read()
    at = text.find(b"\nVmHWM:") if text else -1
    if at >= 0:
        try:
            hwm = int(text[at + 7:text.index(b"kB", at)]) * 1024
        except ValueError:
            pass
        else:
            if usage is not None and usage.ru_maxrss * 1024 <= hwm:
                _maxrss_is_own = True
            return hwm
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _mb(nbytes):
    return None if nbytes is None else nbytes / MIB


# -- the metrics ------------------------------------------------------------

@dataclass
class TimingMetrics:
    """Seconds.  CPU times are the whole process's (every thread), from
    getrusage(RUSAGE_SELF) at the block's start and end."""
    wall_time_s: float
    cpu_time_s: float
    user_time_s: float
    system_time_s: float


@dataclass
class MemoryMetrics:
    """MB here are MiB (2**20 bytes).  RAM is this process's resident set."""
    initial_ram_mb: float
    final_ram_mb: float
    peak_ram_mb: float
    peak_gpu_mb: Optional[float]
    memory_leak_detected: Optional[bool]


@dataclass
class ComputeMetrics:
    """estimated_flops is forward and backward (docs/python.md);
    flops_method says how: "profiler" (torch's counts alone),
    "profiler+backward-rule" (and convolutions' backward by rule),
    "profiler+attention-rule" (and fused attention by rule) or
    "profiler+rules" (both), None
    without a count."""
    estimated_flops: Optional[int]
    flops_per_second: Optional[float]
    gpu_utilization_percent: Optional[float]
    cpu_utilization_percent: Optional[float]
    flops_method: Optional[str] = None


@dataclass
class SystemMetrics:
    cpu_percent: Optional[float]
    memory_percent: Optional[float]
    disk_io_mb: Optional[float]
    network_io_mb: Optional[float]
    energy_j: Optional[float]
    carbon_g: Optional[float]


def _format_mb(mb):
    return "%.1f GB" % (mb / 1024) if mb >= 1024 else "%.1f MB" % mb


def _format_seconds(s):
    return "%.1fs" % s if s >= 1 else "%.1fms" % (s * 1e3)


@dataclass
class PerformanceMetrics:
    """What one ``profile(name)`` block measured.

    completed is False when the block raised; error is then
    ``"ExceptionType: message"`` and the figures cover the block up to the
    raise.  samples is the number of sampler readings taken inside the
    block.  notes maps a figure to a remark: why it is None, or (for
    estimated_flops) how it was counted."""
    operation_name: str
    timing: TimingMetrics
    memory: MemoryMetrics
    compute: ComputeMetrics
    system: SystemMetrics
    completed: bool = True
    error: Optional[str] = None
    samples: int = 0
    notes: Dict[str, str] = field(default_factory=dict)

    def to_dict(self):
        """Plain dicts, lists, numbers and None (json.dumps takes it)."""
        return asdict(self)

    def summary(self):
        """One line: "Peak RAM: 2.4 GB, Wall Time: 45.2s, GPU Util: 78%"
        style, leaving out what was not measured."""
        parts = ["Peak RAM: %s" % _format_mb(self.memory.peak_ram_mb)]
        if self.memory.peak_gpu_mb is not None:
            parts.append("Peak GPU: %s" % _format_mb(self.memory.peak_gpu_mb))
        parts.append("Wall Time: %s" % _format_seconds(self.timing.wall_time_s))
        if self.compute.cpu_utilization_percent is not None:
            parts.append("CPU Util: %.0f%%" % self.compute.cpu_utilization_percent)
        if self.compute.gpu_utilization_percent is not None:
            parts.append("GPU Util: %.0f%%" % self.compute.gpu_utilization_percent)
        if self.compute.flops_per_second is not None:
            parts.append("FLOP/s: %.3g" % self.compute.flops_per_second)
        if self.system.energy_j is not None:
            parts.append("Energy: %.1f J" % self.system.energy_j)
        if self.memory.memory_leak_detected:
            parts.append("possible memory leak")
        if not self.completed:
            parts.append("raised %s" % self.error)
        return ", ".join(parts)


# -- the leak judgement -----------------------------------------------------

class _RssSeries:
    """RSS samples (MiB) of one block, at most _SERIES_MAX_POINTS points.

    When full, neighbouring points are averaged pairwise and each new point
    is then the mean of twice as many samples, so every point stands for
    the same number of evenly spaced samples and a straight-line fit over
    the points keeps its meaning."""

    def __init__(self):
        self.points = []
        self.samples = 0       # raw samples added
        self.peak = None
        self._per_point = 1
        self._pending_sum = 0.0
        self._pending = 0

    def add(self, mb):
        self.samples += 1
        self.peak = mb if self.peak is None else max(self.peak, mb)
        self._pending_sum += mb
        self._pending += 1
        if self._pending == self._per_point:
            self.points.append(self._pending_sum / self._pending)
            self._pending_sum, self._pending = 0.0, 0
            if len(self.points) == _SERIES_MAX_POINTS:
                self.points = [(a + b) / 2 for a, b in zip(self.points[::2], self.points[1::2])]
                self._per_point *= 2

    def values(self):
        if self._pending:
            return self.points + [self._pending_sum / self._pending]
        return list(self.points)


def fitted_growth(points):
    """The least-squares line's rise from the first point to the last."""
    n = len(points)
    if n < 2:
        return 0.0
    mean_i = (n - 1) / 2
    mean_y = sum(points) / n
    sxx = sum((i - mean_i) ** 2 for i in range(n))
    sxy = sum((i - mean_i) * (y - mean_y) for i, y in enumerate(points))
    return sxy / sxx * (n - 1)


def judge_leak(series):
    """(True/False/None, note).  The rule, in docs/python.md: with at least
    LEAK_MIN_SAMPLES samples, a leak is a least-squares growth over all of
    them of at least LEAK_MIN_GROWTH_MB that also shows in each half (each
    half's own fitted growth at least a quarter of the whole's).  The
    halves tell steady growth from a single allocation, or a cache that
    warms up and then stays level."""
    if series.samples < LEAK_MIN_SAMPLES:
        return None, ("%d RSS samples inside the block, %d needed to judge a leak "
                      "(a shorter memory_interval or detailed_memory=True samples more)"
                      % (series.samples, LEAK_MIN_SAMPLES))
    points = series.values()
    whole = fitted_growth(points)
    half = len(points) // 2
    first, second = fitted_growth(points[:half]), fitted_growth(points[half:])
    leak = whole >= LEAK_MIN_GROWTH_MB and min(first, second) >= whole / 4
    return leak, None


# -- sampling ---------------------------------------------------------------

def _gpu_memory_bytes(reading):
    """The workload's own memory on the GPU when the source can tell it,
    else all processes' (what nvidia-smi shows)."""
    own = reading.get("gpu_workload_memory_bytes")
    return own if own is not None else reading.get("gpu_memory_used_bytes")


def _memory_percent(reading):
    used, total = reading.get("system_memory_used_bytes"), reading.get("system_memory_total_bytes")
    return used / total * 100 if used is not None and total else None


class _Sample:
    __slots__ = ("rss_mb", "cpu_percent", "memory_percent", "gpu_utilization", "gpu_memory_bytes")

    def __init__(self, rss_bytes, reading, track_gpu):
        self.rss_mb = rss_bytes / MIB
        self.cpu_percent = reading.get("system_cpu_percent")
        self.memory_percent = _memory_percent(reading)
        self.gpu_utilization = reading.get("gpu_utilization_percent") if track_gpu else None
        self.gpu_memory_bytes = _gpu_memory_bytes(reading) if track_gpu else None


class _Accumulator:
    """Running figures over the samples of one block."""

    def __init__(self):
        self.rss = _RssSeries()
        self.cpu_sum, self.cpu_n = 0.0, 0
        self.gpu_util_sum, self.gpu_util_n = 0.0, 0
        self.memory_percent_max = None
        self.gpu_memory_max = None

    def add(self, s, with_rss=True):
        if with_rss:
            self.rss.add(s.rss_mb)
        if s.cpu_percent is not None:
            self.cpu_sum += s.cpu_percent
            self.cpu_n += 1
        if s.gpu_utilization is not None:
            self.gpu_util_sum += s.gpu_utilization
            self.gpu_util_n += 1
        if s.memory_percent is not None:
            self.memory_percent_max = max(self.memory_percent_max or 0.0, s.memory_percent)
        if s.gpu_memory_bytes is not None:
            self.gpu_memory_max = max(self.gpu_memory_max or 0, s.gpu_memory_bytes)


def _delta(before, after, key):
    a, b = before.get(key), after.get(key)
    return b - a if a is not None and b is not None else None


def _energy_delta(before, after, include_gpus):
    """Joules between two readings over every energy counter both have:
    CPU packages and DRAM (RAPL) and, with include_gpus, each GPU (matched
    by index).  None when no counter could be read."""
    parts = [_delta(before, after, "cpu_package_energy_joules"), _delta(before, after, "dram_energy_joules")]
    if include_gpus:
        earlier = {g["index"]: g for g in before.get("gpus") or []}
        for g in after.get("gpus") or []:
            if g["index"] in earlier:
                parts.append(_delta(earlier[g["index"]], g, "gpu_energy_joules"))
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def _torch_cuda(gpu):
    """torch.cuda when torch is already imported, CUDA is initialised and
    has GPU gpu; else None.  Never imports torch (seconds) or initialises
    CUDA on the profiler's account."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_initialized() and gpu < cuda.device_count():
            return cuda
    except Exception:  # a broken CUDA setup must not break the profiled code
        return None
    return None


class ProfiledOperation:
    """One ``profile(name)`` block; ``with profiler.profile(name) as op``
    gives it.  op.name is the name, op.samples the sampler readings taken
    inside the block so far."""

    def __init__(self, profiler, name):
        self._profiler = profiler
        self._zone = _core.zone(name)  # checks the name now: TypeError/ValueError
        self.name = name
        self._acc = _Accumulator()
        self._used = False
        self._end = None      # the raw readings at the end, until metrics() turns them into figures
        self._result = None   # the PerformanceMetrics, once made

    @property
    def samples(self):
        with self._profiler._lock:
            return self._acc.rss.samples

    def __enter__(self):
        if self._used:
            raise RuntimeError("profile(%r): each profile() block can be entered once; "
                               "call profiler.profile(...) again" % self.name)
        self._used = True
        p = self._profiler
        self._notes = {}
        self._reading0 = p._recent_reading()
        self._rss0 = process_rss_bytes()
        self._cuda0 = self._torch_gpu_memory()
        self._flops_profiler = self._start_flop_count() if p.estimate_flops else None
        p._register(self)
        # the clocks last and the zone innermost: the profiler's own work
        # (its reads, starting the sampler) stays out of the figures
        self._usage0 = resource.getrusage(resource.RUSAGE_SELF)
        self._hwm0 = process_peak_rss_bytes(self._usage0)
        self._t0 = time.perf_counter()
        self._zone.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._zone.__exit__(exc_type, exc, tb)
        wall = time.perf_counter() - self._t0
        usage1 = resource.getrusage(resource.RUSAGE_SELF)
        p = self._profiler
        p._unregister(self)
        flops = self._stop_flop_count()
        # only the readings here: the figures are made when asked for
        # (metrics()), so a loop of blocks nobody reads pays no more
        error = None
        if exc_type is not None:  # a string now: the exception would hold the frames alive
            error = "%s: %s" % (exc_type.__name__, exc) if str(exc) else exc_type.__name__
        self._end = (wall, usage1, process_rss_bytes(), process_peak_rss_bytes(usage1), p._recent_reading(),
                     self._torch_gpu_memory(), flops, exc_type is None, error)
        p._store(self, wall)
        return False  # an exception propagates unchanged

    def metrics(self):
        """The block's PerformanceMetrics (made on the first call; the
        Profiler's lock held by the caller).  None while the block runs."""
        if self._result is None and self._end is not None:
            self._result = self._metrics(*self._end)
            self._end = self._reading0 = None  # the readings are in the figures now
        return self._result

    # -- torch -------------------------------------------------------------

    def _torch_gpu_memory(self):
        if not self._profiler.track_gpu:
            return None
        cuda = _torch_cuda(self._profiler.gpu)
        if cuda is None:
            return None
        gpu = self._profiler.gpu
        return cuda.memory_allocated(gpu), cuda.max_memory_allocated(gpu)

    def _start_flop_count(self):
        try:
            import torch.profiler
        except ImportError:
            self._notes["estimated_flops"] = ("torch is not installed: estimate_flops counts FLOPs with "
                                              "torch.profiler.profile(with_flops=True)")
            return None
        counter = _flops.BlockCounter(torch, self._profiler._pending_convolutions)
        try:
            counter.start()
        except RuntimeError as e:
            # one torch profiler per thread: an enclosing profile() block with
            # estimate_flops (its count includes this block) or the user's own
            self._notes["estimated_flops"] = "torch's profiler was already running (%s)" % e
            return None
        return counter

    def _stop_flop_count(self):
        """The block's _flops.FlopCount, or None."""
        counter, self._flops_profiler = self._flops_profiler, None  # torch's events go with it
        return counter.stop() if counter is not None else None

    # -- the figures ---------------------------------------------------------

    def _metrics(self, wall, usage1, rss1, hwm1, reading1, cuda1, flops, completed, error):
        p = self._profiler
        notes = self._notes
        u0 = self._usage0
        user = usage1.ru_utime - u0.ru_utime
        system = usage1.ru_stime - u0.ru_stime
        timing = TimingMetrics(wall_time_s=wall, cpu_time_s=user + system, user_time_s=user, system_time_s=system)

        acc = self._acc  # no sampler writes to it any more: unregistered
        # the reading at the end counts as a sample of the machine (not of
        # RSS, whose series holds the sampler's readings only)
        end = _Sample(rss1, reading1, p.track_gpu)
        acc.add(end, with_rss=False)

        peak = max(self._rss0, rss1)
        if acc.rss.peak is not None:
            peak = max(peak, acc.rss.peak * MIB)
        if hwm1 > self._hwm0:
            # the process's high-water mark rose inside the block: that is
            # the block's exact peak, even one between two samples
            peak = max(peak, hwm1)
        leak, leak_note = judge_leak(acc.rss)
        if leak_note:
            notes["memory_leak_detected"] = leak_note
        memory = MemoryMetrics(initial_ram_mb=_mb(self._rss0), final_ram_mb=_mb(rss1), peak_ram_mb=_mb(peak),
                               peak_gpu_mb=self._peak_gpu_mb(acc, reading1, cuda1), memory_leak_detected=leak)

        total = flops.total if flops is not None else None
        if flops is not None:
            notes["estimated_flops"] = flops.note()
        elif not p.estimate_flops:
            notes["estimated_flops"] = "estimate_flops=False"
        flops_per_second = total / wall if total is not None and wall > 0 else None
        gpu_util = acc.gpu_util_sum / acc.gpu_util_n if acc.gpu_util_n else None
        if gpu_util is None:
            notes["gpu_utilization_percent"] = self._no_gpu_reason(reading1, "gpu_utilization_percent")
        compute = ComputeMetrics(estimated_flops=total, flops_per_second=flops_per_second,
                                 flops_method=flops.method if flops is not None else None,
                                 gpu_utilization_percent=gpu_util,
                                 cpu_utilization_percent=timing.cpu_time_s / wall * 100 if wall > 0 else None)

        disk, net, energy = self._totals(reading1, notes)
        system = SystemMetrics(
            cpu_percent=acc.cpu_sum / acc.cpu_n if acc.cpu_n else None,
            memory_percent=acc.memory_percent_max,
            disk_io_mb=_mb(disk), network_io_mb=_mb(net), energy_j=energy,
            carbon_g=self._carbon_g(energy, notes))
        for figure in ("cpu_percent", "memory_percent", "disk_io_mb", "network_io_mb"):
            if getattr(system, figure) is None:
                notes.setdefault(figure, "stepscope.capture() had no reading for it (see `stepscope doctor`)")

        return PerformanceMetrics(operation_name=self.name, timing=timing, memory=memory, compute=compute,
                                  system=system, completed=completed, error=error,
                                  samples=acc.rss.samples, notes=notes)

    def _totals(self, reading1, notes):
        """(disk bytes, network bytes, energy J) between the sampler's
        readings at the block's start and end, each None when unknown.

        The readings are capture()'s latest samples, not fresh reads (a
        fresh read walks the process tree, DataLoader workers included:
        about 80 us with two workers on a 2-core VM), and the sampler
        reads these totals every 0.5 s.  So the change covers the block to
        within one such interval at each end, and is given only when the
        two readings are at least TOTALS_MIN_WINDOW_S apart; a shorter
        block gets None and a note."""
        r0 = self._reading0
        t0, t1 = r0.get("time_ns"), reading1.get("time_ns")
        window = (t1 - t0) / 1e9 if t0 is not None and t1 is not None else 0.0
        if window < TOTALS_MIN_WINDOW_S:
            why = ("the sampler's readings at the block's start and end are %.3f s apart, under %g s: too "
                   "close for a total it reads every 0.5 s (a block of seconds gets it; "
                   "stepscope.capture(fresh=True) reads one now)" % (window, TOTALS_MIN_WINDOW_S))
            for figure in ("disk_io_mb", "network_io_mb", "energy_j"):
                notes[figure] = why
            return None, None, None
        disk = [_delta(r0, reading1, "workload_disk_read_bytes"), _delta(r0, reading1, "workload_disk_write_bytes")]
        net = [_delta(r0, reading1, "system_network_receive_bytes"),
               _delta(r0, reading1, "system_network_transmit_bytes")]
        energy = _energy_delta(r0, reading1, self._profiler.track_gpu)
        if energy is None:
            notes["energy_j"] = "no energy counter could be read (RAPL, GPU): see `stepscope doctor`"
        return (sum(disk) if None not in disk else None, sum(net) if None not in net else None, energy)

    def _no_gpu_reason(self, reading, metric):
        p = self._profiler
        if not p.track_gpu:
            return "track_gpu=False"
        gpu = next((g for g in reading.get("gpus") or [] if g["index"] == p.gpu), None)
        if gpu is None:
            return "no reading of GPU %d: capture() found no such GPU (see `stepscope doctor`)" % p.gpu
        return "GPU %d (%s, through %s) gives no %s reading" % (p.gpu, gpu["name"], gpu["source"], metric)

    def _peak_gpu_mb(self, acc, reading1, cuda1):
        if not self._profiler.track_gpu:
            self._notes["peak_gpu_mb"] = "track_gpu=False"
            return None
        candidates = []
        if acc.gpu_memory_max is not None:
            candidates.append(acc.gpu_memory_max)
        at_start = _gpu_memory_bytes(self._reading0)  # still in use while the block runs
        if at_start is not None:
            candidates.append(at_start)
        if self._cuda0 is not None and cuda1 is not None:
            (allocated0, max0), (allocated1, max1) = self._cuda0, cuda1
            # torch's peak is since the process started (or the user's last
            # reset): if it rose during the block, the new peak is the
            # block's; otherwise the block's ends are what is known
            candidates.append(max1 if max1 > max0 else max(allocated0, allocated1))
        if not candidates:
            self._notes["peak_gpu_mb"] = (self._no_gpu_reason(reading1, "gpu_memory_used_bytes")
                                          + ", and torch has not initialised CUDA")
            return None
        return _mb(max(candidates))

    def _carbon_g(self, energy, notes):
        p = self._profiler
        if not p.track_carbon:
            notes["carbon_g"] = "track_carbon=False"
        elif p.carbon_intensity_g_per_kwh is None:
            notes["carbon_g"] = ("no carbon intensity: pass carbon_intensity_g_per_kwh "
                                 "(your grid's g CO2e/kWh; the world's average is about 480)")
        elif energy is None:
            notes["carbon_g"] = "no energy reading"
        else:
            return energy / 3.6e6 * p.carbon_intensity_g_per_kwh
        return None


class Profiler:
    """Per-operation time, memory, compute and system figures, from the
    stepscope core.  See the module's docstring and docs/python.md.

    track_gpu: read GPU ``gpu``'s memory and utilisation (and torch.cuda's
        allocator when torch has initialised CUDA).
    track_carbon: turn energy into g CO2e with carbon_intensity_g_per_kwh
        (carbon_g is None without an intensity).
    detailed_memory: sample RSS DETAILED_MEMORY_FACTOR times as often.
    memory_interval: seconds between the sampler's readings while a block
        is open.
    enable_line_profiling: not supported (ValueError): use zones.
    estimate_flops: count FLOPs with torch.profiler around each block.
    """

    def __init__(self, track_gpu=True, track_carbon=False, detailed_memory=False, memory_interval=0.5,
                 enable_line_profiling=False, estimate_flops=False, carbon_intensity_g_per_kwh=None, gpu=0):
        if enable_line_profiling:
            raise ValueError("Profiler: enable_line_profiling is not supported: stepscope times named blocks, "
                             "not lines; wrap the lines you want timed in stepscope.zone(name) or profile(name)")
        if isinstance(memory_interval, bool) or not isinstance(memory_interval, (int, float)):
            raise TypeError("Profiler: memory_interval must be a number of seconds, not %s"
                            % type(memory_interval).__name__)
        if not memory_interval > 0:
            raise ValueError("Profiler: memory_interval must be > 0 seconds, not %r" % (memory_interval,))
        if carbon_intensity_g_per_kwh is not None and not (
                isinstance(carbon_intensity_g_per_kwh, (int, float)) and carbon_intensity_g_per_kwh >= 0):
            raise ValueError("Profiler: carbon_intensity_g_per_kwh must be a number >= 0 (g CO2e/kWh) or None, "
                             "not %r" % (carbon_intensity_g_per_kwh,))
        if isinstance(gpu, bool) or not isinstance(gpu, int) or gpu < 0:
            raise ValueError("Profiler: gpu must be a GPU index >= 0, not %r" % (gpu,))
        self.track_gpu = bool(track_gpu)
        self.track_carbon = bool(track_carbon)
        self.detailed_memory = bool(detailed_memory)
        self.memory_interval = float(memory_interval)
        self.estimate_flops = bool(estimate_flops)
        self.carbon_intensity_g_per_kwh = carbon_intensity_g_per_kwh
        self.gpu = gpu
        interval = self.memory_interval / DETAILED_MEMORY_FACTOR if self.detailed_memory else self.memory_interval
        #: seconds between two readings of the sampler thread
        self.sample_interval = max(interval, MIN_SAMPLE_INTERVAL)

        self._lock = threading.Lock()        # guards everything below
        self._open = []                      # ProfiledOperations inside their block
        self._sampler = None                 # (thread, stop event) while the sampler runs
        self._latest = {}                    # name -> the ProfiledOperation of its last block
        self._breakdown = {}                 # name -> wall seconds of all its blocks
        self._last = None
        self._last_reading = None            # (time.monotonic(), capture()) of the latest _read()
        #: estimate_flops: forward convolutions awaiting their backward
        self._pending_convolutions = _flops.PendingConvolutions()
        _PROFILERS.add(self)

    # the core's readings; a seam the tests use to play a GPU
    _capture = staticmethod(_core.capture)

    def _read(self):
        """capture()'s latest sample, for GPU gpu: O(1), no file read."""
        reading = self._capture(gpu=self.gpu)
        self._last_reading = (time.monotonic(), reading)
        return reading

    def _recent_reading(self):
        """The reading this Profiler took last (at a block's end, or its
        sampler's) when under READING_REUSE_S old, else a new one.  In a
        loop of blocks the previous block's end reading serves the next
        one's start; the core's sampler has rarely taken a newer sample
        since."""
        last = self._last_reading
        if last is not None and time.monotonic() - last[0] < READING_REUSE_S:
            return last[1]
        return self._read()

    # -- the public face ---------------------------------------------------

    def profile(self, operation_name):
        """``with profiler.profile(name):`` measures the block, as the
        zone ``name`` in stepscope's record.  Blocks nest and may run on
        several threads at once; each gets its own figures."""
        return ProfiledOperation(self, operation_name)

    def get_metrics(self, operation_name=None):
        """The PerformanceMetrics of the last finished block named
        operation_name, or of the last finished block of any name."""
        with self._lock:
            if self._last is None:
                raise LookupError("Profiler.get_metrics(): no profiled operation has finished yet "
                                  "(profile one with `with profiler.profile(name):`)")
            if operation_name is None:
                return self._last.metrics()
            try:
                op = self._latest[operation_name]
            except KeyError:
                raise KeyError("Profiler.get_metrics(): no operation named %r has finished; known: %s"
                               % (operation_name, ", ".join(map(repr, self._latest)))) from None
            return op.metrics()

    def get_timing_breakdown(self):
        """{name: wall seconds}, every finished block of a name added up.
        Nested blocks are also inside their parents' times."""
        with self._lock:
            return dict(self._breakdown)

    def has_results(self):
        """True once a block has finished (raised or not)."""
        with self._lock:
            return self._last is not None

    def get_current_memory(self):
        """This process's resident memory now, in MB (MiB)."""
        return process_rss_bytes() / MIB

    def get_current_gpu_memory(self):
        """The fraction (0 to 1) of GPU ``gpu``'s memory in use by all
        processes at the sampler's latest reading, or None: no GPU reading,
        or track_gpu is False."""
        if not self.track_gpu:
            return None
        r = self._read()
        used, total = r.get("gpu_memory_used_bytes"), r.get("gpu_memory_total_bytes")
        return used / total if used is not None and total else None

    # -- bookkeeping, shared with ProfiledOperation ------------------------

    def _register(self, op):
        with self._lock:
            self._open.append(op)
            if self._sampler is None:
                stop = threading.Event()
                thread = threading.Thread(target=self._sample_loop, args=(stop,), daemon=True,
                                          name=SAMPLER_THREAD_NAME)
                self._sampler = (thread, stop)
                thread.start()

    def _unregister(self, op):
        # the sampler stays (SAMPLER_LINGER_S): the next block, usually
        # milliseconds away in a loop, finds it running
        with self._lock:
            self._open.remove(op)

    def _store(self, op, wall):
        with self._lock:
            self._latest[op.name] = op
            self._breakdown[op.name] = self._breakdown.get(op.name, 0.0) + wall
            self._last = op

    def _sample_loop(self, stop):
        # Event.wait sleeps without the GIL; a reading is a pread of statm
        # plus capture(), which copies the latest sample (O(1)).  The
        # thread ends once no block has been open for SAMPLER_LINGER_S,
        # deciding so under the lock, where _register looks for it: a
        # block opening then starts a new one.  A daemon: it never holds
        # the interpreter's exit.
        idle_since = None
        while not stop.wait(self.sample_interval):
            with self._lock:
                if stop.is_set():  # _stop_sampler, and perhaps a new sampler already
                    return
                if not self._open:
                    now = time.monotonic()
                    if idle_since is None:
                        idle_since = now
                    elif now - idle_since >= SAMPLER_LINGER_S:
                        self._sampler = None
                        return
                    continue
            idle_since = None
            sample = _Sample(process_rss_bytes(), self._read(), self.track_gpu)
            with self._lock:
                for op in self._open:
                    op._acc.add(sample)

    def _stop_sampler(self):
        """Stop the sampler thread now and join it, instead of letting it
        end SAMPLER_LINGER_S after the last block; a block opening later
        starts a new one."""
        with self._lock:
            sampler, self._sampler = self._sampler, None
            if sampler is not None:
                sampler[1].set()  # under the lock: the thread sees it before it could clear _sampler
        if sampler is not None:
            sampler[0].join()  # outside the lock: a reading in flight needs it to land


def _after_fork_in_child():
    # the child has no sampler thread, and a lock its parent's thread held
    # at the fork stays held: fresh ones, and /proc/self files reopened
    global _maxrss_is_own
    for p in list(_PROFILERS):
        p._lock = threading.Lock()
        p._sampler = None
        p._pending_convolutions = _flops.PendingConvolutions()
    _maxrss_is_own = False
    _STATM.forget()
    _STATUS.forget()


#: every live Profiler, for the fork handler
_PROFILERS = weakref.WeakSet()
os.register_at_fork(after_in_child=_after_fork_in_child)


#: the first seed's name for it
PerformanceProfiler = Profiler
