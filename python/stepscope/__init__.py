"""stepscope: where each step of a training loop spends its time.

    import stepscope

    for batch in loader:
        with stepscope.step():
            with stepscope.zone("forward"):
                loss = model(batch)
            with stepscope.zone("backward"):
                loss.backward()
            stepscope.record("loss", loss.item())
            stepscope.count("samples", len(batch))

The recording is done by libstepscope, compiled into the C extension
``stepscope._stepscope``; this file only re-exports it and adds what is
simpler in Python (the decorator wrapper, configure(), the exit hook).
``Profiler`` (profiler.py), ``MetricsCollector``/``Reporter``
(collector.py) and ``CUDATimer``/``StreamProfiler`` (gpu_tools.py) are the
seeds' API shapes over the same zones and values.

Under ``stepscope run -- python train.py`` everything goes into the run's
report.  Alone, the process writes ``stepscope-out/report.json`` (in the
working directory at import) when the interpreter exits; STEPSCOPE_OUT or
``configure(out=...)`` choose another directory, and ``out=None`` (or
STEPSCOPE_OUT set to "") none.  See docs/python.md.
"""

import atexit as _atexit
import functools as _functools
import inspect as _inspect
import os as _os
import warnings as _warnings

from . import _stepscope
from ._stepscope import (  # noqa: F401  (the public face)
    Step,
    Zone,
    capture,
    clock_now,
    clock_ns,
    count,
    is_enabled,
    metrics,
    microstep,
    microstep_begin,
    phase,
    phase_end,
    record,
    set_enabled,
    status,
    step,
    step_begin,
    thread_name,
    wait,
    wait_begin,
    wait_record,
    write_report,
    zone,
    zone_begin,
    zone_end,
)

from ._live import last_step, status_line  # noqa: F401  (trackers and progress bars)
from .collector import MetricsCollector, Reporter  # noqa: F401  (the third seed's API)
from .memory import MemoryTracker  # noqa: F401  (the third seed's GPU memory tracker)
from .profiler import PerformanceMetrics, PerformanceProfiler, Profiler  # noqa: F401  (the first seed's)

__version__ = _stepscope.__version__

__all__ = [
    "zone", "step", "microstep", "phase", "phase_end", "record", "count", "capture", "status", "metrics",
    "configure", "out_dir", "write_report", "set_enabled", "is_enabled", "thread_name",
    "zone_begin", "zone_end", "step_begin", "microstep_begin", "Zone", "Step",
    "Profiler", "PerformanceProfiler", "PerformanceMetrics", "MetricsCollector", "Reporter", "MemoryTracker",
    "last_step", "status_line",
    "wait", "wait_begin", "wait_record", "clock_now", "clock_ns",
]

# GPU zones: CUDA events on a stream, resolved without synchronising (docs/python.md)
from ._stepscope import GpuZone, cuda_status, gpu_flush, gpu_wait, gpu_zone, gpu_zone_begin, gpu_zone_end  # noqa: E402,F401

__all__ += ["gpu_zone", "gpu_flush", "gpu_wait", "cuda_status", "gpu_zone_begin", "gpu_zone_end", "GpuZone"]

# the third seed's GPU timing classes, over GPU zones (gpu_tools.py)
from .gpu_tools import CUDATimer, StreamProfiler  # noqa: E402,F401

__all__ += ["CUDATimer", "StreamProfiler"]

#: the report directory used alone when neither STEPSCOPE_OUT nor configure() says
DEFAULT_OUT = "stepscope-out"


def _setup_out():
    # The library reads STEPSCOPE_OUT when this process records its first
    # event, and writes OUT/report.json from its own exit handler, after
    # the interpreter has finished.  Putting the default in os.environ
    # (absolute, so a chdir does not move it) also tells programs this one
    # starts that the report is taken: the library leaves a marker in OUT
    # and a descendant that sees it does not write over the parent's report.
    global _OUT_DEFAULTED
    if _os.environ.get("STEPSCOPE_RUN_DIR"):
        return  # under `stepscope run`: the CLI writes the report
    if "STEPSCOPE_OUT" not in _os.environ:
        _os.environ["STEPSCOPE_OUT"] = _os.path.abspath(DEFAULT_OUT)
        _OUT_DEFAULTED = True


#: whether _setup_out put STEPSCOPE_OUT into os.environ (the `stepscope`
#: command, __main__.py, takes it out again: it is no recording process)
_OUT_DEFAULTED = False


_setup_out()


def _env_count(name):
    # as the library reads it (standalone_out.c): a non-negative int, else -1
    import re
    m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", _os.environ.get(name, ""))
    v = int(m.group(1)) if m else -1
    return v if 0 <= v <= 0x7FFFFFFF else -1


def out_dir():
    """The directory this process's report will be written to at exit, or
    None: under ``stepscope run`` (the CLI writes the run's report), or when
    switched off with ``configure(out=None)`` / STEPSCOPE_OUT="".  A rank of
    a distributed job (RANK set, WORLD_SIZE unset or above 1) writes into
    ``rank-<RANK>`` under STEPSCOPE_OUT, so that no rank overwrites another's
    report (docs/distributed.md)."""
    if _os.environ.get("STEPSCOPE_RUN_DIR"):
        return None
    out = _os.environ.get("STEPSCOPE_OUT") or None
    rank, world = _env_count("RANK"), _env_count("WORLD_SIZE")
    if out is None or rank < 0 or world in (0, 1):
        return out
    return _os.path.join(out, "rank-%d" % rank)


_UNSET = object()


#: STEPSCOPE_GPU_PEAK's values (docs/python.md, "GPU memory per step")
GPU_PEAK_MODES = ("keep", "step")


def _gpu_peak_from_env():
    # Read once, at import: a bad value is an error here, never in the loop.
    mode = _os.environ.get("STEPSCOPE_GPU_PEAK", "")
    if mode not in GPU_PEAK_MODES + ("",):
        raise ValueError("stepscope: STEPSCOPE_GPU_PEAK=%r: must be \"keep\" (never reset torch's peak memory "
                         "statistics, the default) or \"step\" (reset them at each step's begin)" % mode)
    _stepscope._set_gpu_peak(mode or "keep")


_gpu_peak_from_env()


def configure(out=_UNSET, enabled=None, gpu_peak=None):
    """Configure the module; every argument is optional.

    out: the directory for this process's report.json at exit when not
        under ``stepscope run`` (a str or path; None: write no report).  It
        must be set before the first zone, step, value or counter, when the
        library fixes it; later calls raise RuntimeError.
    enabled: True or False turns recording on or off for the whole process
        (as ``set_enabled``).
    gpu_peak: "keep" (the default: torch's peak memory statistics are never
        reset, and a step's peak is recorded only when torch's rose during
        it) or "step" (reset them at each step's begin, so every step's peak
        is exact; this changes what torch.cuda.max_memory_allocated() and
        the other peaks return to the script).  As STEPSCOPE_GPU_PEAK.
    """
    if gpu_peak is not None:
        if gpu_peak not in GPU_PEAK_MODES:
            raise ValueError("stepscope.configure(): gpu_peak must be \"keep\" or \"step\", not %r" % (gpu_peak,))
        _stepscope._set_gpu_peak(gpu_peak)
    if out is not _UNSET:
        if _os.environ.get("STEPSCOPE_RUN_DIR"):
            _warnings.warn("stepscope.configure(out=...) has no effect under `stepscope run`: "
                           "the run directory gets the report", stacklevel=2)
        else:
            if status()["mode"] != "uninitialised":
                raise RuntimeError("stepscope.configure(out=...) must come before the first zone, step, "
                                   "value or counter: the report directory is fixed when recording starts")
            if out is None:
                _os.environ["STEPSCOPE_OUT"] = ""
            else:
                path = _os.fspath(out)
                if isinstance(path, bytes):
                    path = _os.fsdecode(path)
                if not isinstance(path, str) or not path:
                    raise ValueError("stepscope.configure(): out must be a non-empty path or None")
                _os.environ["STEPSCOPE_OUT"] = _os.path.abspath(path)
    if enabled is not None:
        if not isinstance(enabled, bool):
            raise TypeError("stepscope.configure(): enabled must be True or False")
        set_enabled(enabled)


def _decorate(name, func, stream=_UNSET):
    # Called by Zone.__call__ (C): @stepscope.zone(name) above a def; and by
    # GpuZone.__call__ with the stream it was given: @stepscope.gpu_zone(name).
    what = "zone" if stream is _UNSET else "gpu_zone"
    if not callable(func):
        raise TypeError("@stepscope.%s(%r) must decorate a function, not %s" % (what, name, type(func).__name__))
    if _inspect.iscoroutinefunction(func) or _inspect.isasyncgenfunction(func) or _inspect.isgeneratorfunction(func):
        # a zone is a span on one thread's stack; a coroutine or generator
        # suspends inside it while other code runs on the same thread
        raise TypeError("@stepscope.%s(%r) cannot time a generator or coroutine function (%s): "
                        "use `with stepscope.%s(...)` around code that does not yield or await"
                        % (what, name, getattr(func, "__qualname__", func), what))

    if stream is not _UNSET:
        @_functools.wraps(func)
        def gpu_timed(*args, **kwargs):
            with gpu_zone(name, stream):  # stream None: the current one at each call
                return func(*args, **kwargs)

        return gpu_timed

    @_functools.wraps(func)
    def timed(*args, **kwargs):
        with zone(name):
            return func(*args, **kwargs)

    return timed


# What this module's own work costs on this machine, for the report's
# overhead (about a millisecond; nothing is recorded).  A measurement that
# fails leaves the costs unmeasured (the report then says so): never the
# import.
from . import _cost  # noqa: E402

try:
    _cost.measure_module()
except Exception:  # noqa: BLE001
    pass

# After the hook below (atexit runs last-registered first): resolve the main
# thread's GPU zones that finished after its last step end (never waits).
_atexit.register(_stepscope.gpu_flush)
# The last step of a loop marked with bare step() calls ends here (on the
# main thread), before the library's own exit handler writes the report.
_atexit.register(_stepscope._end_pending)
