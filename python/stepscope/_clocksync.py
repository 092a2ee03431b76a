"""Each rank's clock against rank 0's, for ``stepscope merge``.

Where torch.distributed is up, every rank measures the offset of its
clock (the one its record's times are on) to rank 0's with a ping-pong
over a gloo side group, NTP-style: several round trips, the one with the
smallest round-trip time kept, offset = t_rank0 - (t_send + t_recv) / 2,
error bound = rtt / 2.  Once when the process group comes up (the side
group is created collectively right after ``init_process_group``), once
when it goes down (``destroy_process_group``, or at exit; not at an exit
on an uncaught exception, whose peers are gone: stored as skipped).  The
result goes into the record's header (``_stepscope._clock_offset_set``),
where ``stepscope merge`` finds it; docs/distributed.md says how it is
used.

Never slows or hangs the script for long: every exchange is bounded by
the side group's timeout (STEPSCOPE_CLOCK_SYNC_TIMEOUT_S, default 5 s),
and any failure is stored as "not measured" with the reason, never
raised.  STEPSCOPE_CLOCK_SYNC=0 turns it off.
"""

import atexit as _atexit
import datetime as _datetime
import functools as _functools
import os as _os
import sys as _sys
import threading as _threading

from . import _stepscope

START, END = 0, 1
_ONE_RANK = "one rank: nothing to measure against"

_lock = _threading.Lock()
_group = None         # the gloo side group, once made
_group_failed = None  # why it could not be made
_done = [False, False]
_installed = False
_last = [None, None]  # what each measurement found (a dict), for sync_clocks()
_pid = _os.getpid()   # a forked child (a DataLoader worker) is no rank: it never exchanges


def _enabled():
    return _os.environ.get("STEPSCOPE_CLOCK_SYNC", "1") not in ("0", "off", "")


def _timeout_s():
    try:
        return max(0.1, min(600.0, float(_os.environ.get("STEPSCOPE_CLOCK_SYNC_TIMEOUT_S", "5"))))
    except ValueError:
        return 5.0


def _rounds(world):
    # rank 0 serves every peer in turn: fewer rounds each in a big job
    # keeps the whole exchange near a second (docs/scale.md)
    return 16 if world <= 64 else 8 if world <= 512 else 4


def _store(when, result):
    _last[when] = result
    if result.get("measured"):
        _stepscope._clock_offset_set(when, result["offset_ns"], result["error_ns"], result["at_ns"],
                                     result["rounds"])
    else:
        _stepscope._clock_offset_set(when, 0, 0, 0, result.get("rounds", 0), result["reason"][:120])


def _make_group(dist):
    """The side group, made collectively (every rank calls this at the
    same point).  Returns it, or None with _group_failed saying why."""
    global _group, _group_failed
    if _group is not None or _group_failed is not None:
        return _group
    try:
        _group = dist.new_group(backend="gloo", timeout=_datetime.timedelta(seconds=_timeout_s()))
    except Exception as exc:  # noqa: BLE001  (no gloo, a store that went away)
        _group_failed = "no gloo side group: %s" % (str(exc).splitlines() or ["?"])[0]
    return _group


def _exchange(dist, group, rank, world):
    """The ping-pong; returns the result dict of this rank."""
    import torch

    rounds = _rounds(world)
    clock = _stepscope._clock_ns
    buf = torch.zeros(1, dtype=torch.int64)
    if rank == 0:
        for peer in range(1, world):
            for _ in range(rounds):
                dist.recv(buf, src=peer, group=group)
                buf[0] = clock()
                dist.send(buf, dst=peer, group=group)
        return {"measured": True, "offset_ns": 0, "error_ns": 0, "at_ns": clock(), "rounds": 0}
    best = None
    for _ in range(rounds):
        t_send = clock()
        dist.send(buf, dst=0, group=group)
        dist.recv(buf, src=0, group=group)
        t_recv = clock()
        if best is None or t_recv - t_send < best[0]:
            best = (t_recv - t_send, int(buf[0]), t_send, t_recv)
    rtt, t0, t_send, t_recv = best
    mid = t_send + rtt // 2
    return {"measured": True, "offset_ns": t0 - mid, "error_ns": (rtt + 1) // 2, "at_ns": mid,
            "rounds": rounds}


def measure(when):
    """Measure now (collective: every rank of the default group calls it
    at the same point).  Stores the result in the record and returns it:
    {"measured": True, "offset_ns", "error_ns", "at_ns", "rounds"} or
    {"measured": False, "reason"}.  Never raises."""
    with _lock:
        try:
            import torch.distributed as dist

            if _os.getpid() != _pid:
                result = {"measured": False, "reason": "a forked child of a rank: not a rank itself"}
            elif not dist.is_available() or not dist.is_initialized():
                result = {"measured": False, "reason": "torch.distributed is not initialised"}
            else:
                rank, world = dist.get_rank(), dist.get_world_size()
                group = _make_group(dist) if world > 1 else None
                if world < 2:
                    result = {"measured": False, "reason": _ONE_RANK}
                elif group is None:
                    result = {"measured": False, "reason": _group_failed}
                else:
                    result = _exchange(dist, group, rank, world)
        except Exception as exc:  # noqa: BLE001  (a peer gone, a timeout)
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            result = {"measured": False, "reason": "exchange failed: %s" % first[:100]}
        _done[when] = True
        try:
            if result.get("reason") != _ONE_RANK:  # nothing to measure is no failure
                _store(when, result)
        except Exception:  # noqa: BLE001  (a module without a record)
            pass
        return result


def _failing():
    """Why this process is exiting on an error, or None.  An uncaught
    exception: Python sets sys.last_value before the atexit handlers run.
    Its peers are gone or going (torchrun ends them), so an end exchange
    would only wait out the timeout."""
    exc = getattr(_sys, "last_value", None)
    if exc is None:
        return None
    return "skipped: the process is exiting on an uncaught %s" % type(exc).__name__


def _at_end():
    if not _done[END] and _done[START] and _enabled() and _os.getpid() == _pid:
        failing = _failing()
        if failing is None:
            measure(END)
            return
        _done[END] = True
        _last[END] = {"measured": False, "reason": failing}
        try:
            _store(END, _last[END])
        except Exception:  # noqa: BLE001  (a module without a record)
            pass


def _wrap_init(original):
    @_functools.wraps(original)
    def init_process_group(*args, **kwargs):
        out = original(*args, **kwargs)
        if _enabled() and not _done[START]:
            measure(START)
        return out

    init_process_group._stepscope_clock_sync = True
    return init_process_group


def _wrap_destroy(original):
    @_functools.wraps(original)
    def destroy_process_group(group=None):
        try:
            import torch.distributed as dist

            if group is None or group is dist.group.WORLD:
                _at_end()
        except Exception:  # noqa: BLE001
            pass
        global _group
        if group is None or group is _group:
            _group = None
        return original(group) if group is not None else original()

    destroy_process_group._stepscope_clock_sync = True
    return destroy_process_group


def install():
    """Measure clock offsets wherever torch.distributed comes up in this
    process: wraps init_process_group and destroy_process_group (and
    measures at once when the group is up already).  Idempotent; never
    raises.  Called by the auto-instrumentation and instrument()."""
    global _installed
    if _installed or not _enabled():
        return
    _installed = True
    try:
        import torch.distributed as dist

        if not dist.is_available():
            return
        from torch.distributed import distributed_c10d as c10d

        for owner in (dist, c10d):
            if not getattr(owner.init_process_group, "_stepscope_clock_sync", False):
                owner.init_process_group = _wrap_init(owner.init_process_group)
            if not getattr(owner.destroy_process_group, "_stepscope_clock_sync", False):
                owner.destroy_process_group = _wrap_destroy(owner.destroy_process_group)
        _atexit.register(_at_end)
        if dist.is_initialized() and not _done[START]:
            measure(START)
    except Exception:  # noqa: BLE001  (a torch without distributed)
        pass


def sync_clocks():
    """Measure this rank's clock offset to rank 0 now, for ``stepscope
    merge``: for scripts that call init_process_group themselves without
    stepscope run's auto-instrumentation or instrument().  Collective:
    every rank calls it at the same point, after init_process_group.  The
    first call is the start measurement; a later one (or
    destroy_process_group, or the exit) the end.  Returns what was
    measured: {"measured": True, "offset_ns", "error_ns", "at_ns",
    "rounds"} (offset: rank 0's clock minus this one's) or
    {"measured": False, "reason"}."""
    global _installed
    if not _installed:
        install()  # measures START when the group is up
        if _last[START] is not None:
            return dict(_last[START])
    return measure(END if _done[START] else START)
