"""Without `stepscope run`: the process writes its own report at exit."""
import subprocess

from conftest import STEPSCOPE_BIN, load_report

SCRIPT = """
    import stepscope
    for i in range(4):
        stepscope.step()
        with stepscope.zone("forward"):
            pass
        stepscope.record("loss", float(i))
    print(stepscope.status()["mode"], stepscope.out_dir())
"""


def test_default_report_dir_is_stepscope_out_in_the_cwd(run_alone, tmp_path):
    proc = run_alone(SCRIPT)
    assert proc.stdout.strip() == "memory %s" % (tmp_path / "stepscope-out")
    r = load_report(tmp_path / "stepscope-out")
    assert r.zone("step")["count"] == 4         # the last ended by the exit hook
    assert r.zone("forward")["count"] == 4
    assert r.value("loss")["last"] == 3.0
    assert r.report["processes"][0]["record"] == "<memory record>"
    assert r.report["processes"][0]["ended"] == "exit"
    # the owner marker is gone once the report is written
    assert sorted(p.name for p in (tmp_path / "stepscope-out").iterdir()) == ["report.json"]


def test_summary_of_a_standalone_report(run_alone, tmp_path):
    # no exit status (the process wrote the report itself): the first line
    # starts with the wall time, not with blanks where the status would be
    run_alone(SCRIPT)
    proc = subprocess.run([STEPSCOPE_BIN, "report", str(tmp_path / "stepscope-out"), "--format", "summary", "-o", "-"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    first = [line for line in proc.stdout.splitlines() if line.startswith("stepscope:")][0]
    assert first.startswith("stepscope: wall "), first
    assert "  user " in first and "  peak RSS " in first


def test_stepscope_out_overrides_the_default(run_alone, tmp_path):
    run_alone(SCRIPT, STEPSCOPE_OUT=str(tmp_path / "elsewhere"))
    assert load_report(tmp_path / "elsewhere").zone("forward")["count"] == 4
    assert not (tmp_path / "stepscope-out").exists()


def test_configure_out_and_off(run_alone, tmp_path):
    run_alone("""
        import stepscope
        stepscope.configure(out="mine")
        with stepscope.zone("z"):
            pass
        try:
            stepscope.configure(out="late")
        except RuntimeError as e:
            print("late:", e)
    """)
    assert load_report(tmp_path / "mine").zone("z")["count"] == 1
    assert not (tmp_path / "late").exists() and not (tmp_path / "stepscope-out").exists()

    proc = run_alone("""
        import stepscope
        stepscope.configure(out=None)
        with stepscope.zone("z"):
            pass
        print(stepscope.out_dir())
    """)
    assert proc.stdout.strip() == "None"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "train.py"]


def test_empty_stepscope_out_writes_nothing(run_alone, tmp_path):
    run_alone(SCRIPT, STEPSCOPE_OUT="")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_write_report_now(run_alone, tmp_path):
    run_alone("""
        import stepscope
        stepscope.configure(out=None)
        with stepscope.zone("z"):
            pass
        stepscope.write_report("now")
        try:
            stepscope.write_report("train.py/x")    # a file where a directory must be
        except OSError as e:
            print("OSError")
    """)
    assert load_report(tmp_path / "now").zone("z")["count"] == 1


def test_a_child_python_does_not_overwrite_the_parents_report(run_alone, tmp_path):
    # the child inherits STEPSCOPE_OUT and finds the parent's owner marker
    (tmp_path / "child.py").write_text(
        "import stepscope\nwith stepscope.zone('child'):\n    pass\n")
    run_alone("""
        import subprocess, sys, stepscope
        with stepscope.zone("parent"):
            subprocess.run([sys.executable, "child.py"], check=True)
    """)
    r = load_report(tmp_path / "stepscope-out")
    assert r.zone("parent")["count"] == 1
    assert r.zone("child") is None


def test_import_and_the_seed_classes_create_no_directory(run_alone, tmp_path):
    # the report directory is claimed at the first zone, step, value or
    # counter, not before: a script that only imports (or builds the seed
    # classes and never times anything) leaves the working directory alone
    proc = run_alone("""
        import stepscope
        from stepscope import MetricsCollector, PerformanceProfiler, Profiler, Reporter
        Profiler()
        PerformanceProfiler(track_gpu=False)
        Reporter(MetricsCollector())
        print(stepscope.status()["mode"], stepscope.out_dir())
    """)
    assert proc.stdout.split()[0] == "uninitialised"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]
    assert proc.stderr == ""


def test_one_stderr_line_says_where_the_report_went(run_alone, tmp_path):
    proc = run_alone(SCRIPT)
    out = tmp_path / "stepscope-out"
    assert proc.stderr == "stepscope: report written to %s/report.json (`stepscope report %s` makes HTML, CSV " \
        "and a trace)\n" % (out, out)

