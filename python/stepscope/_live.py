"""The calling thread's last completed step, for trackers and progress bars.

``last_step()`` is the line ``stepscope run`` writes to DIR/steps.jsonl for
that step, as a dict with the same keys (docs/stream-format.md), read in
place from this process's own record: nothing is kept on the hot path for
it, and a call costs a walk over that step's events (tens of microseconds
for a step of a few dozen zones).  ``status_line()`` is the same step in a
few words, for a tqdm postfix.
"""

import json as _json

from . import _stepscope


def last_step():
    """The calling thread's last completed step as a dict, or None before
    its first step ends.

    Keys (docs/stream-format.md): step, name, pid, rank, thread, start_s,
    end_s, duration_s, zones_self_s {zone: self seconds}, microsteps,
    values {name: last value}, counters {name: summed increments}, machine
    (the run's latest readings under ``stepscope run``, this process's RSS
    alone; None when none), partial.  Values recorded after the step ended
    count until the thread's next step begins, as in report.json.
    """
    line = _stepscope._last_step_json()
    return None if line is None else _json.loads(line)


def _duration(s):
    if s >= 1:
        return "%.2f s" % s
    if s >= 1e-3:
        return "%.0f ms" % (s * 1e3) if s >= 0.01 else "%.1f ms" % (s * 1e3)
    return "%.0f µs" % (s * 1e6)


def _bytes(b):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return "%.1f %s" % (b / size, unit)
    return "%d B" % b


def status_line(step=None, zones=5, values=3):
    """A short string for a progress bar's postfix, e.g.
    ``step 412 182 ms | data 41% forward 22% backward 30% | loss 0.4121 | rss 1.2 GiB``:
    the step's number and duration; the self time of its largest zones
    (at most ``zones``), in percent of the step; its values (at most
    ``values``, 4 significant digits); the workload's resident memory, and
    each GPU's utilisation when there are readings.  ``step`` is a dict
    from last_step() (None: the calling thread's last step).  "" before
    the first step ends.
    """
    s = last_step() if step is None else step
    if not s:
        return ""
    parts = ["step %d %s" % (s["step"], _duration(s["duration_s"]))]
    dur = s["duration_s"]
    top = sorted(s["zones_self_s"].items(), key=lambda kv: -kv[1])[:zones] if dur > 0 else []
    if top:
        parts.append(" ".join("%s %.0f%%" % (n, 100 * t / dur) for n, t in top))
    shown = [(n, v) for n, v in s["values"].items() if v is not None][:values]
    if shown:
        parts.append(" ".join("%s %.4g" % (n, v) for n, v in shown))
    m = s.get("machine") or {}
    machine = []
    if m.get("workload_rss_bytes") is not None:
        machine.append("rss " + _bytes(m["workload_rss_bytes"]))
    for k in sorted(m):
        if k.startswith("gpu") and k.endswith("_utilization_percent") and m[k] is not None:
            machine.append("%s %.0f%%" % (k[: -len("_utilization_percent")], m[k]))
    if machine:
        parts.append(" ".join(machine))
    return " | ".join(parts)
