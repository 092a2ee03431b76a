"""stepscope.MetricsCollector and stepscope.Reporter: the third seed's
collector and reporter, over the core.

    collector = stepscope.MetricsCollector()
    for data, target in loader:
        collector.record("batch_size", data.size(0))
        with collector.measure_time("iteration"):
            loss = train_step(data, target)
        collector.record("loss", loss.item())
    print(collector.generate_report())
    stepscope.Reporter(collector).save_html("report.html")

``measure_time(name)`` is a real ``stepscope.zone(name)`` and ``record``
is ``stepscope.record``, so under ``stepscope run`` both are in the run's
report too.  The collector keeps running statistics (no list of every
duration), so it can stay on for a whole training run.  docs/python.md
("The seeds' APIs") says what each figure is.
"""

import csv
import html
import json
import math
import sys
import threading
import time

from . import _stepscope as _core
from .profiler import _torch_cuda, process_peak_rss_bytes

__all__ = ["MetricsCollector", "Reporter"]

#: the collector counts the samples of its throughput from this counter ...
SAMPLES_COUNTER = "samples"


class _RunningStats:
    """Count, total, mean, population std, min and max of a stream of
    numbers, in O(1) memory (Welford's update)."""

    __slots__ = ("count", "total", "mean", "_m2", "min", "max", "last")

    def __init__(self):
        self.count = 0
        self.total = 0.0
        self.mean = 0.0
        self._m2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.last = None

    def add(self, x):
        self.count += 1
        self.total += x
        delta = x - self.mean
        self.mean += delta / self.count
        self._m2 += delta * (x - self.mean)
        self.min = min(self.min, x)
        self.max = max(self.max, x)
        self.last = x

    def as_dict(self):
        if not self.count:
            return {"mean": None, "std": None, "min": None, "max": None, "count": 0, "total": 0.0}
        return {"mean": self.mean, "std": math.sqrt(self._m2 / self.count), "min": self.min, "max": self.max,
                "count": self.count, "total": self.total}


class _Section:
    """The durations (ms) of one measure_time name."""

    __slots__ = ("stats", "self_total")

    def __init__(self):
        self.stats = _RunningStats()
        self.self_total = 0.0  # ms not spent in sections nested inside it


class _Value:
    """The values of one record name; NaN and infinities are counted
    apart (a diverging loss is worth seeing, and JSON has no NaN)."""

    __slots__ = ("stats", "non_finite")

    def __init__(self):
        self.stats = _RunningStats()
        self.non_finite = 0


class _TimedSection:
    """The context manager measure_time() returns."""

    __slots__ = ("_collector", "_zone", "name", "_t0", "_children_ms")

    def __init__(self, collector, name):
        self._collector = collector
        self._zone = _core.zone(name)  # checks the name now: TypeError/ValueError
        self.name = name

    def __enter__(self):
        # the zone first: entering an object that is already open raises
        # RuntimeError there, before the open block's state is touched
        self._zone.__enter__()
        self._children_ms = 0.0
        self._collector._stack().append(self)
        self._t0 = self._collector._clock()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._zone.__exit__(exc_type, exc, tb)
        t1 = self._collector._clock()
        ms = (t1 - self._t0) * 1e3
        stack = self._collector._stack()
        stack.pop()
        if stack:
            stack[-1]._children_ms += ms
        self._collector._add_time(self.name, ms, ms - self._children_ms, self._t0, t1)
        return False


class MetricsCollector:
    """Named timings, recorded values and counters, with the third seed's
    JSON form (``to_dict()``), a text report and a bottleneck analysis.
    Safe to use from several threads.

    iteration_name: the measure_time() name whose count is the number of
        iterations for ``throughput`` (the seed's loop times "iteration").
    batch_size_name: the recorded value whose sum is the number of samples
        when the counter "samples" was never counted.
    """

    def __init__(self, iteration_name="iteration", batch_size_name="batch_size"):
        self.iteration_name = iteration_name
        self.batch_size_name = batch_size_name
        self._lock = threading.Lock()  # guards the dicts and the span
        self._local = threading.local()
        self._sections = {}
        self._values = {}
        self._counters = {}
        self._first = None  # _clock() at the first activity
        self._last = None   # ... and at the end of the last

    # seconds, monotonic; a seam the tests use to play exact durations
    _clock = staticmethod(time.perf_counter)

    # -- collecting ----------------------------------------------------------

    def record(self, name, value):
        """Record a number under name (also ``stepscope.record``)."""
        if isinstance(value, (str, bytes, bytearray)) or value is None:
            raise TypeError("MetricsCollector.record(): the value must be a number, not %s" % type(value).__name__)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TypeError("MetricsCollector.record(): the value must be a number, not %s"
                            % type(value).__name__) from None
        _core.record(name, number)  # also checks the name
        now = self._clock()
        with self._lock:
            v = self._values.get(name)
            if v is None:
                v = self._values[name] = _Value()
            if math.isfinite(number):
                v.stats.add(number)
            else:
                v.non_finite += 1
            self._touch(now, now)

    def count(self, name, n=1):
        """Add n (an int >= 0) to the counter name (also ``stepscope.count``).
        The counter "samples" is what throughput counts samples by."""
        _core.count(name, n)  # checks name and n
        now = self._clock()
        with self._lock:
            self._counters[name] = self._counters.get(name, 0) + int(n)
            self._touch(now, now)

    def measure_time(self, name):
        """``with collector.measure_time(name):`` times the block (also the
        zone ``name``); a block that raises is timed too."""
        return _TimedSection(self, name)

    def _stack(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _touch(self, start, end):
        if self._first is None or start < self._first:
            self._first = start
        if self._last is None or end > self._last:
            self._last = end

    def _add_time(self, name, ms, self_ms, t0, t1):
        with self._lock:
            s = self._sections.get(name)
            if s is None:
                s = self._sections[name] = _Section()
            s.stats.add(ms)
            s.self_total += self_ms
            self._touch(t0, t1)

    # -- results -------------------------------------------------------------

    def to_dict(self):
        """The third seed's JSON structure (plain dicts, numbers and None):

        timing: {name: {mean, std, min, max, count, total, self_total}} in
            ms; std is the population's; self_total leaves out the time of
            sections nested inside on the same thread.
        metrics: {name: {mean, std, min, max, count, total, last, non_finite}}
            of the recorded values (NaN and infinities only in non_finite).
        counters: {name: total}.
        memory: peak_rss_bytes (this process's high-water mark since it
            started), peak_allocated / peak_reserved (torch.cuda's, bytes;
            None unless torch has initialised CUDA).
        throughput: samples_per_sec, iterations_per_sec, and what they are
            made of: samples, iterations, span_s.
        """
        with self._lock:
            timing = {}
            for name, s in self._sections.items():
                d = s.stats.as_dict()
                d["self_total"] = s.self_total
                timing[name] = d
            metrics = {}
            for name, v in self._values.items():
                d = v.stats.as_dict()
                d["last"] = v.stats.last
                d["non_finite"] = v.non_finite
                metrics[name] = d
            counters = dict(self._counters)
            span = self._last - self._first if self._first is not None else None
        return {"timing": timing, "metrics": metrics, "counters": counters, "memory": self._memory(),
                "throughput": self._throughput(timing, metrics, counters, span)}

    def stats(self):
        """The same as to_dict()."""
        return self.to_dict()

    def _memory(self):
        cuda = _torch_cuda(0)
        return {"peak_rss_bytes": process_peak_rss_bytes(),
                "peak_allocated": cuda.max_memory_allocated() if cuda else None,
                "peak_reserved": cuda.max_memory_reserved() if cuda else None}

    def _throughput(self, timing, metrics, counters, span):
        if SAMPLES_COUNTER in counters:
            samples = counters[SAMPLES_COUNTER]
        elif self.batch_size_name in metrics:
            samples = metrics[self.batch_size_name]["total"]
            if samples.is_integer():
                samples = int(samples)  # batch sizes are whole: 160, not 160.0
        else:
            samples = None
        iterations = timing[self.iteration_name]["count"] if self.iteration_name in timing else None
        per_second = (lambda n: n / span if n is not None and span else None)
        return {"samples_per_sec": per_second(samples), "iterations_per_sec": per_second(iterations),
                "samples": samples, "iterations": iterations, "span_s": span}

    def analyze_bottlenecks(self):
        """{"bottleneck": the section with the most self time (None when
        nothing was timed), "shares": {name: its fraction of all sections'
        self time}}.  Self time, so an enclosing "full_iteration" does not
        win over the parts inside it; without nesting it is the total."""
        with self._lock:
            self_ms = {name: s.self_total for name, s in self._sections.items()}
        whole = sum(self_ms.values())
        shares = {name: ms / whole if whole > 0 else 0.0 for name, ms in self_ms.items()}
        bottleneck = max(self_ms, key=self_ms.get) if self_ms else None
        return {"bottleneck": bottleneck, "shares": shares}

    def generate_report(self):
        """A readable text report of everything collected."""
        return _text_report(self.to_dict(), self.analyze_bottlenecks())


# -- rendering ----------------------------------------------------------------

def _num(x, fmt="%.3f"):
    return "-" if x is None else fmt % x


def _bytes(n):
    return "n/a" if n is None else "%.1f MiB" % (n / (1 << 20))


def _text_report(d, bottlenecks):
    lines = ["stepscope MetricsCollector report", ""]
    shares = bottlenecks["shares"]
    if d["timing"]:
        lines.append("%-24s %8s %10s %10s %10s %10s %12s %6s" % (
            "timing (ms)", "count", "mean", "std", "min", "max", "total", "share"))
        for name, t in d["timing"].items():
            lines.append("%-24s %8d %10s %10s %10s %10s %12s %5.1f%%" % (
                name, t["count"], _num(t["mean"]), _num(t["std"]), _num(t["min"]), _num(t["max"]),
                _num(t["total"]), shares.get(name, 0.0) * 100))
    else:
        lines.append("timing: nothing timed")
    if d["metrics"]:
        lines.append("")
        lines.append("%-24s %8s %12s %12s %12s %12s %12s" % ("metric", "count", "mean", "std", "min", "max", "last"))
        for name, m in d["metrics"].items():
            extra = "  (%d not finite)" % m["non_finite"] if m["non_finite"] else ""
            lines.append("%-24s %8d %12s %12s %12s %12s %12s%s" % (
                name, m["count"], _num(m["mean"], "%.6g"), _num(m["std"], "%.6g"), _num(m["min"], "%.6g"),
                _num(m["max"], "%.6g"), _num(m["last"], "%.6g"), extra))
    if d["counters"]:
        lines.append("")
        lines.append("counters: " + ", ".join("%s %d" % kv for kv in d["counters"].items()))
    mem, tp = d["memory"], d["throughput"]
    lines.append("")
    lines.append("memory: peak RSS %s (this process); torch CUDA peak allocated %s, reserved %s"
                 % (_bytes(mem["peak_rss_bytes"]), _bytes(mem["peak_allocated"]), _bytes(mem["peak_reserved"])))
    lines.append("throughput: %s samples/s, %s iterations/s (over %s s)" % (
        _num(tp["samples_per_sec"], "%.1f"), _num(tp["iterations_per_sec"], "%.2f"), _num(tp["span_s"])))
    if bottlenecks["bottleneck"] is not None:
        name = bottlenecks["bottleneck"]
        lines.append("bottleneck: %s (%.1f%% of the timed self time)" % (name, shares[name] * 100))
    return "\n".join(lines) + "\n"


_CSV_FIELDS = ["section", "name", "unit", "count", "mean", "std", "min", "max", "total", "self_total", "last", "value"]

_HTML_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f0f0f0; }
"""


def _csv_text(name):
    """A name that a spreadsheet would run as a formula (=, +, -, @, tab or
    CR first: OWASP's CSV-injection list) with a ' in front, as steps.csv
    writes it; the csv module quotes what else needs quoting."""
    return "'" + name if name[:1] in ("=", "+", "-", "@", "\t", "\r") else name


def _cell(x):
    if x is None:
        return "-"
    if isinstance(x, float):
        return "%.6g" % x
    return str(x)


class Reporter:
    """Writes what a MetricsCollector holds: save_json, save_csv, save_html,
    print_summary.  Each call reads the collector afresh.  A path that
    cannot be written raises the OSError open() gives (it names the path)."""

    def __init__(self, collector):
        if not isinstance(collector, MetricsCollector):
            raise TypeError("Reporter(): needs a MetricsCollector, not %s" % type(collector).__name__)
        self.collector = collector

    def save_json(self, path):
        """The collector's to_dict() as JSON."""
        d = self.collector.to_dict()
        with open(path, "w") as f:
            json.dump(d, f, indent=2, allow_nan=False)
            f.write("\n")

    def _rows(self):
        d = self.collector.to_dict()
        for name, t in d["timing"].items():
            yield dict(t, section="timing", name=name, unit="ms")
        for name, m in d["metrics"].items():
            row = dict(m, section="metrics", name=name, unit="")
            del row["non_finite"]
            yield row
        for name, total in d["counters"].items():
            yield {"section": "counters", "name": name, "unit": "count", "value": total}
        for name, value in d["memory"].items():
            yield {"section": "memory", "name": name, "unit": "bytes", "value": value}
        units = {"samples_per_sec": "1/s", "iterations_per_sec": "1/s", "samples": "count",
                 "iterations": "count", "span_s": "s"}
        for name, value in d["throughput"].items():
            yield {"section": "throughput", "name": name, "unit": units[name], "value": value}

    def save_csv(self, path):
        """One row per timed section, metric, counter, memory and
        throughput figure: section,name,unit, then the stats (empty where a
        column does not apply or nothing was measured).  A name that would
        start a spreadsheet formula gets a leading ' (numbers never do)."""
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=_CSV_FIELDS, restval="")
            w.writeheader()
            for row in self._rows():
                row["name"] = _csv_text(row["name"])
                w.writerow({k: ("" if v is None else v) for k, v in row.items()})

    def save_html(self, path):
        """One self-contained page (no scripts, no external files): a table
        per section."""
        d = self.collector.to_dict()
        b = self.collector.analyze_bottlenecks()
        e = html.escape
        out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
               "<title>stepscope metrics</title><style>%s</style></head><body>" % _HTML_STYLE,
               "<h1>stepscope metrics</h1>"]
        if b["bottleneck"] is not None:
            out.append("<p>Bottleneck: <strong>%s</strong> (%.1f%% of the timed self time)</p>"
                       % (e(b["bottleneck"]), b["shares"][b["bottleneck"]] * 100))

        def table(title, header, rows):
            out.append("<h2>%s</h2><table><tr>%s</tr>" % (e(title), "".join("<th>%s</th>" % e(h) for h in header)))
            for r in rows:
                out.append("<tr>%s</tr>" % "".join("<td>%s</td>" % e(_cell(c)) for c in r))
            out.append("</table>")

        stats = ["count", "mean", "std", "min", "max", "total"]
        table("Timing (ms)", ["section"] + stats + ["self total", "share"],
              [[n] + [t[k] for k in stats] + [t["self_total"], "%.1f%%" % (b["shares"].get(n, 0) * 100)]
               for n, t in d["timing"].items()])
        table("Metrics", ["metric"] + stats + ["last", "not finite"],
              [[n] + [m[k] for k in stats] + [m["last"], m["non_finite"]] for n, m in d["metrics"].items()])
        if d["counters"]:
            table("Counters", ["counter", "total"], list(d["counters"].items()))
        table("Memory (bytes)", ["figure", "value"], list(d["memory"].items()))
        table("Throughput", ["figure", "value"], list(d["throughput"].items()))
        out.append("</body></html>")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")

    def print_summary(self, file=None):
        """Print the collector's text report (to sys.stdout by default)."""
        print(self.collector.generate_report(), end="", file=file if file is not None else sys.stdout)
