"""stepscope.MetricsCollector and stepscope.Reporter, the third seed's
collector and reporter: exact statistics from a played clock, self time and
the bottleneck, throughput, the JSON/CSV/HTML files read back, threads,
errors, and the zones and values in a `stepscope run` report."""
import csv
import html.parser
import io
import json
import math
import re
import threading

import pytest

import stepscope


class PlayedClock:
    """collector._clock: returns the times it is given, in order."""

    def __init__(self, *times):
        self.times = list(times)

    def __call__(self):
        return self.times.pop(0)


def collector_with_clock(*times):
    c = stepscope.MetricsCollector()
    c._clock = PlayedClock(*times)
    return c


def test_timing_statistics_in_ms():
    c = collector_with_clock(0.0, 0.010, 1.0, 1.020, 2.0, 2.030)
    for _ in range(3):
        with c.measure_time("forward"):
            pass
    t = c.to_dict()["timing"]["forward"]
    assert t["count"] == 3
    assert t["total"] == pytest.approx(60.0)
    assert t["mean"] == pytest.approx(20.0)
    assert t["std"] == pytest.approx(math.sqrt(200 / 3))  # the population's
    assert (t["min"], t["max"]) == (pytest.approx(10.0), pytest.approx(30.0))
    assert t["self_total"] == pytest.approx(60.0)


def test_nested_sections_self_time_and_the_bottleneck():
    # full_iteration 0..0.090 holds forward (30 ms) and backward (50 ms): 10 ms its own
    c = collector_with_clock(0.0, 0.005, 0.035, 0.035, 0.085, 0.090)
    with c.measure_time("full_iteration"):
        with c.measure_time("forward"):
            pass
        with c.measure_time("backward"):
            pass
    timing = c.to_dict()["timing"]
    assert timing["full_iteration"]["total"] == pytest.approx(90.0)
    assert timing["full_iteration"]["self_total"] == pytest.approx(10.0)
    assert timing["backward"]["self_total"] == pytest.approx(50.0)
    analysis = c.analyze_bottlenecks()
    assert analysis["bottleneck"] == "backward"   # not the enclosing section
    assert analysis["shares"] == pytest.approx({"full_iteration": 10 / 90, "forward": 30 / 90, "backward": 50 / 90})
    assert sum(analysis["shares"].values()) == pytest.approx(1.0)


def test_a_block_that_raises_is_timed_and_the_exception_propagates():
    c = collector_with_clock(0.0, 0.004)
    with pytest.raises(KeyError):
        with c.measure_time("fails"):
            raise KeyError("x")
    assert c.to_dict()["timing"]["fails"]["total"] == pytest.approx(4.0)


def test_recorded_values():
    c = stepscope.MetricsCollector()
    for v in (3, 1.5, 4.5, float("nan"), float("inf")):
        c.record("loss", v)
    m = c.to_dict()["metrics"]["loss"]
    assert (m["count"], m["non_finite"]) == (3, 2)   # NaN and inf counted apart
    assert m["mean"] == pytest.approx(3.0) and m["total"] == pytest.approx(9.0)
    assert (m["min"], m["max"], m["last"]) == (1.5, 4.5, 4.5)
    assert m["std"] == pytest.approx(math.sqrt(1.5))


class Scalar:
    """A 0-d tensor stand-in: float() takes it."""

    def __float__(self):
        return 0.25


@pytest.mark.parametrize("name, value, exc, message", [
    ("loss", "high", TypeError, "MetricsCollector.record(): the value must be a number, not str"),
    ("loss", None, TypeError, "MetricsCollector.record(): the value must be a number, not NoneType"),
    ("loss", 1j, TypeError, "MetricsCollector.record(): the value must be a number, not complex"),
    ("loss", [1.0], TypeError, "MetricsCollector.record(): the value must be a number, not list"),
    (3, 1.0, TypeError, "stepscope.record(): the name must be a str, not int"),
    ("", 1.0, ValueError, "stepscope.record(): the name must not be empty"),
])
def test_record_refuses_what_is_not_a_number(name, value, exc, message):
    c = stepscope.MetricsCollector()
    with pytest.raises(exc, match=re.escape(message)):
        c.record(name, value)
    assert c.to_dict()["metrics"] == {}


def test_record_takes_what_float_takes():
    c = stepscope.MetricsCollector()
    c.record("x", Scalar())
    c.record("x", True)
    assert c.to_dict()["metrics"]["x"]["total"] == 1.25


def test_a_measure_time_object_is_open_once_at_a_time():
    c = collector_with_clock(1.0, 1.5, 2.0, 2.25)
    section = c.measure_time("kept")
    with section:
        with pytest.raises(RuntimeError, match="already open"):
            with section:
                pass
    with section:       # once closed it can be used again, as a zone can
        pass
    d = c.to_dict()["timing"]["kept"]
    # the refused entry left the open block alone: 500 ms and 250 ms
    assert (d["count"], d["total"], d["max"], d["self_total"]) == (2, 750.0, 500.0, 750.0)


def test_measure_time_refuses_bad_names():
    c = stepscope.MetricsCollector()
    with pytest.raises(TypeError, match="the name must be a str, not int"):
        c.measure_time(5)
    with pytest.raises(ValueError, match="the name must not be empty"):
        c.measure_time("")


def test_throughput_from_batch_sizes_and_iterations():
    # 4 iterations of the seed's loop between t=1 and t=3: record batch_size,
    # time the iteration, record the loss
    times = []
    for i in range(4):
        start = 1.0 + 0.5 * i
        times += [start, start + 0.1, start + 0.4, start + 0.5]
    c = collector_with_clock(*times)
    for i in range(4):
        c.record("batch_size", 32)
        with c.measure_time("iteration"):
            pass
        c.record("loss", 1.0)
    tp = c.to_dict()["throughput"]
    assert tp == {"samples_per_sec": pytest.approx(128 / 2.0), "iterations_per_sec": pytest.approx(4 / 2.0),
                  "samples": 128, "iterations": 4, "span_s": pytest.approx(2.0)}


def test_the_samples_counter_comes_before_batch_sizes():
    c = collector_with_clock(0.0, 1.0, 4.0)
    c.record("batch_size", 32)
    c.count("samples", 100)
    c.count("samples", 300)
    d = c.to_dict()
    assert d["counters"] == {"samples": 400}
    assert d["throughput"]["samples"] == 400
    assert d["throughput"]["samples_per_sec"] == pytest.approx(100.0)
    assert d["throughput"]["iterations"] is None and d["throughput"]["iterations_per_sec"] is None


def test_empty_collector():
    c = stepscope.MetricsCollector()
    d = c.to_dict()
    assert (d["timing"], d["metrics"], d["counters"]) == ({}, {}, {})
    assert d["throughput"] == {"samples_per_sec": None, "iterations_per_sec": None, "samples": None,
                               "iterations": None, "span_s": None}
    assert c.analyze_bottlenecks() == {"bottleneck": None, "shares": {}}
    assert "timing: nothing timed" in c.generate_report()


def test_memory_is_this_process_peak():
    c = stepscope.MetricsCollector()
    mem = c.to_dict()["memory"]
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    assert mem["peak_rss_bytes"] >= stepscope.profiler.process_rss_bytes()
    assert abs(mem["peak_rss_bytes"] - hwm) < 16 << 20
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_initialized():
        assert mem["peak_allocated"] is None and mem["peak_reserved"] is None


def test_threads_keep_their_own_nesting():
    c = stepscope.MetricsCollector()
    start = threading.Barrier(4)

    def work(k):
        start.wait()
        for i in range(200):
            with c.measure_time("outer"):
                with c.measure_time("inner"):
                    pass
            c.record("v", k)
            c.count("samples", 2)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    d = c.to_dict()
    assert d["timing"]["outer"]["count"] == d["timing"]["inner"]["count"] == 800
    assert d["metrics"]["v"]["count"] == 800 and d["metrics"]["v"]["total"] == 200 * (0 + 1 + 2 + 3)
    assert d["counters"]["samples"] == 1600
    # each thread's inner is nested in its own outer: the self times add up
    outer, inner = d["timing"]["outer"], d["timing"]["inner"]
    assert outer["self_total"] == pytest.approx(outer["total"] - inner["total"])


def filled_collector():
    c = collector_with_clock(0.0, 0.001, 0.003, 0.003, 0.010, 0.011, 0.012)
    c.record("batch_size", 16)
    with c.measure_time("<b>fwd</b>"):
        pass
    with c.measure_time('a,"quoted" name'):
        pass
    c.record("loss", 0.5)
    c.record("loss", 0.25)
    return c


def test_text_report():
    text = filled_collector().generate_report()
    assert text.startswith("stepscope MetricsCollector report\n")
    assert re.search(r"^<b>fwd</b> +1 +2\.000 ", text, re.M)
    assert re.search(r"^loss +2 +0\.375 ", text, re.M)
    assert "bottleneck: a,\"quoted\" name (77.8% of the timed self time)" in text


def test_save_json_reads_back(tmp_path):
    c = filled_collector()
    stepscope.Reporter(c).save_json(tmp_path / "metrics.json")
    with open(tmp_path / "metrics.json") as f:
        d = json.load(f)
    expected = c.to_dict()
    for part in ("timing", "metrics", "counters", "throughput"):
        assert d[part] == expected[part]
    assert set(d["memory"]) == {"peak_rss_bytes", "peak_allocated", "peak_reserved"}
    assert d["timing"]["<b>fwd</b>"]["mean"] == pytest.approx(2.0)


def test_save_csv_neutralises_formula_names(tmp_path):
    # a name a spreadsheet would run as a formula gets a leading ' (OWASP),
    # while a negative number stays a number for pandas
    c = collector_with_clock(*[0.001 * i for i in range(20)])
    with c.measure_time('=HYPERLINK("http://evil","x")'):
        pass
    for lead in "+-@\t\r":
        c.record(lead + "x", -1.5)
    stepscope.Reporter(c).save_csv(tmp_path / "metrics.csv")
    with open(tmp_path / "metrics.csv", newline="") as f:
        names = [r["name"] for r in csv.DictReader(f)]
    assert "'=HYPERLINK(\"http://evil\",\"x\")" in names
    for lead in "+-@\t\r":
        assert "'" + lead + "x" in names
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_csv(tmp_path / "metrics.csv")
    assert str(frame["mean"].dtype).startswith("float")
    assert frame.loc[frame["name"] == "'-x", "mean"].iloc[0] == -1.5

def test_save_csv_reads_back(tmp_path):
    stepscope.Reporter(filled_collector()).save_csv(tmp_path / "metrics.csv")
    with open(tmp_path / "metrics.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == ["section", "name", "unit", "count", "mean", "std", "min", "max", "total",
                                     "self_total", "last", "value"]
        rows = {(r["section"], r["name"]): r for r in reader}
    quoted = rows[("timing", 'a,"quoted" name')]   # the csv module's quoting round-trips
    assert (quoted["unit"], quoted["count"], float(quoted["mean"])) == ("ms", "1", pytest.approx(7.0))
    loss = rows[("metrics", "loss")]
    assert (loss["count"], float(loss["mean"]), float(loss["last"]), loss["self_total"]) == ("2", 0.375, 0.25, "")
    assert rows[("throughput", "samples")]["value"] == "16"
    assert rows[("memory", "peak_allocated")]["value"] == ""   # None: an empty cell
    assert int(rows[("memory", "peak_rss_bytes")]["value"]) > 0


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.cells, self.attrs = [], [], []
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        self._in_cell = tag in ("td", "th")
        if self._in_cell:
            self.cells.append("")

    def handle_endtag(self, tag):
        self._in_cell = False

    def handle_data(self, data):
        if self._in_cell:
            self.cells[-1] += data


def test_save_html_is_one_escaped_page(tmp_path):
    stepscope.Reporter(filled_collector()).save_html(tmp_path / "report.html")
    text = (tmp_path / "report.html").read_text()
    assert "&lt;b&gt;fwd&lt;/b&gt;" in text and "<b>fwd" not in text
    page = Page()
    page.feed(text)
    assert page.tags.count("table") == 4               # timing, metrics, memory, throughput
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert not [a for a in page.attrs if a[0] in ("src", "href")]   # nothing from outside
    assert "<b>fwd</b>" in page.cells and 'a,"quoted" name' in page.cells   # what the reader sees


def test_print_summary(capsys):
    c = filled_collector()
    stepscope.Reporter(c).print_summary()
    out = capsys.readouterr().out
    buf = io.StringIO()
    stepscope.Reporter(c).print_summary(file=buf)
    assert out == buf.getvalue()
    assert out.splitlines()[0] == "stepscope MetricsCollector report"


@pytest.mark.parametrize("method", ["save_json", "save_csv", "save_html"])
def test_unwritable_paths_raise_oserror_naming_the_path(tmp_path, method):
    path = tmp_path / "no such dir" / "out.file"
    with pytest.raises(OSError) as raised:
        getattr(stepscope.Reporter(stepscope.MetricsCollector()), method)(path)
    assert str(path) in str(raised.value)


def test_reporter_needs_a_collector():
    with pytest.raises(TypeError, match="Reporter\\(\\): needs a MetricsCollector, not dict"):
        stepscope.Reporter({})


def test_sections_and_values_are_in_the_run_report(run_under):
    r = run_under("""
        import stepscope
        c = stepscope.MetricsCollector()
        for i in range(4):
            c.record("batch_size", 8)
            with c.measure_time("iteration"):
                with c.measure_time("forward"):
                    pass
            c.record("loss", 1.0 / (i + 1))
            c.count("samples", 8)
        print(c.analyze_bottlenecks()["bottleneck"] in ("iteration", "forward"))
    """)
    assert r.stdout.strip() == "True"
    assert r.zone("iteration")["count"] == 4 and r.zone("forward")["count"] == 4
    assert r.zone("iteration")["total_s"] >= r.zone("forward")["total_s"]
    loss = r.value("loss")
    assert (loss["count"], loss["first"], loss["last"]) == (4, 1.0, 0.25)
    assert r.value("batch_size")["count"] == 4
    assert r.counter("samples")["total"] == 32
