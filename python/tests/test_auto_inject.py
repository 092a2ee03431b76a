"""How `stepscope run` gets auto-instrumentation into a Python workload:
the startup hook (python/auto/sitecustomize.py) it puts first on
PYTHONPATH, --no-auto, the stand-aside when the script instruments itself,
and report.json's "steps_recorded_by" and "auto".

The torch patching itself is stepscope/_auto.py's; here a test double of
its interface stands in for it (install() patches one function of a small
fake torch package, stand_aside(reason) undoes it), in a copy of the built
package made of links, so these tests check the plumbing alone.  One test
imports the real torch, to check that the hook notices it.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PYTHON, STEPSCOPE_BIN, script_env, write_script

import stepscope

BUILD_PKG = Path(stepscope.__file__).resolve().parent
HOOK_DIR = BUILD_PKG.parent / "auto"

# The test double of stepscope/_auto.py: install() wraps torch.train_step
# (when the torch imported has one) so that each call is a step, recorded
# through instrument_face as the real one records; stand_aside(reason)
# unwraps it and says so on stderr, once.
FAKE_AUTO = '''
import os, sys
import torch
from . import _stepscope

_face = _stepscope.instrument_face
_orig = None

def _wrapped(*a, **k):
    t = _face.step_begin()
    try:
        return _orig(*a, **k)
    finally:
        _face.zone_end(t)

def stand_aside(reason):
    if os.environ.get("FAKE_AUTO_STAYS"):  # as the real one in a DataLoader worker
        sys.stderr.write("fake auto: asked, stays\\n")
        return False
    if os.environ.get("FAKE_AUTO_ASIDE_FAILS"):
        raise RuntimeError("the double cannot stand aside")
    if _orig is not None:
        torch.train_step = _orig
    sys.stderr.write("stepscope: auto-instrumentation stands aside: %s\\n" % reason)

def turn_off(reason):
    torch.train_step = _orig
    _stepscope._set_auto_callback(None, reason)

def install():
    global _orig
    if os.environ.get("FAKE_AUTO_FAILS"):
        raise RuntimeError("the double fails to install")
    sys.stderr.write("fake auto: install in %d\\n" % os.getpid())
    _orig = getattr(torch, "train_step", None)
    if _orig is not None:
        torch.train_step = _wrapped
    _stepscope._set_auto_callback(stand_aside)
'''

FAKE_TORCH = '''
calls = 0

def train_step():
    global calls
    calls += 1
    return calls
'''


@pytest.fixture
def env(tmp_path):
    """The directories a test puts on PYTHONPATH: pkg (the built package
    with the test double as stepscope._auto) and faketorch."""
    pkg = tmp_path / "pkg" / "stepscope"
    pkg.mkdir(parents=True)
    for f in BUILD_PKG.iterdir():
        if f.is_file() and f.name != "_auto.py":  # a link would write the double into the build
            (pkg / f.name).symlink_to(f)
    (pkg / "_auto.py").write_text(FAKE_AUTO)
    torch_dir = tmp_path / "faketorch" / "torch"
    torch_dir.mkdir(parents=True)
    (torch_dir / "__init__.py").write_text(FAKE_TORCH)
    return {"pkg": str(tmp_path / "pkg"), "faketorch": str(tmp_path / "faketorch"), "tmp": tmp_path}


def stepscope_run(tmp_path, argv, options=(), pythonpath=None, **extra):
    """argv under `stepscope run -q` (options before --); returns
    (CompletedProcess, report.json as a dict)."""
    out = tmp_path / "out"
    env = script_env(**extra)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    proc = subprocess.run([STEPSCOPE_BIN, "run", "-q", "-o", str(out), *options, "--", *argv], cwd=str(tmp_path),
                          env=env, capture_output=True, text=True, timeout=300)
    with open(out / "report.json") as f:
        return proc, json.load(f)


def auto_lines(stderr):
    return [line for line in stderr.splitlines() if "auto-instrumentation" in line]


TRAIN = '''
import torch
for i in range(5):
    torch.train_step()
print("calls", torch.calls)
'''


def test_auto_records_the_steps(env):
    script = write_script(env["tmp"], TRAIN)
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 5\n"
    assert proc.stderr.count("fake auto: install") == 1
    assert auto_lines(proc.stderr) == []
    assert rep["steps"]["count"] == 5
    assert rep["steps_recorded_by"] == "auto"
    assert rep["auto"]["state"] == "active"
    assert rep["auto"]["reason"] is None
    assert rep["auto"]["processes_active"] == 1
    assert rep["auto"]["processes_stood_aside"] == 0
    (p,) = rep["processes"]
    assert p["auto"] == {"state": "active", "reason": None}
    assert p["instrument"] is False
    # the terminal summary and report.html say it in one line
    again = subprocess.run([STEPSCOPE_BIN, "report", str(env["tmp"] / "out"), "--format", "summary"],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "steps: auto-instrumented (--no-auto to switch off)\n" in again.stdout + again.stderr
    html = (env["tmp"] / "out" / "report.html").read_text()
    assert "Steps recorded</dt><dd>auto-instrumented<small>--no-auto to switch off</small>" in html


def test_the_scripts_own_step_makes_auto_stand_aside_once(env):
    script = write_script(env["tmp"], '''
        import torch, stepscope
        torch.train_step()            # auto's step, before the script's first
        for i in range(4):
            with stepscope.step():
                with stepscope.zone("work"):
                    torch.train_step()
            stepscope.record("loss", 1.0)
        print("calls", torch.calls)
    ''')
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 5\n"
    reason = "the script records steps of its own at train.py:5"  # the line of its first step
    assert auto_lines(proc.stderr) == ["stepscope: auto-instrumentation stands aside: " + reason]
    # auto's one step, then the script's four: none counted twice
    assert rep["steps"]["count"] == 5
    assert rep["steps_recorded_by"] == "code"
    assert rep["auto"]["state"] == "stood_aside"
    assert rep["auto"]["reason"] == reason
    assert rep["auto"]["reason_pid"] == rep["processes"][0]["pid"]
    assert rep["processes"][0]["auto"] == {"state": "stood_aside", "reason": reason}
    again = subprocess.run([STEPSCOPE_BIN, "report", str(env["tmp"] / "out"), "--format", "summary"],
                           capture_output=True, text=True, timeout=120)
    assert ("steps: recorded by the program's own zones (auto-instrumentation stood aside: %s)\n" % reason
            in again.stdout + again.stderr)


STEPS_OF_ITS_OWN = "records steps of its own"
ZONE_OF_AUTOS = 'records a zone auto records too ("%s")'


@pytest.mark.parametrize("call,what", [
    ("with stepscope.zone('forward'): pass", ZONE_OF_AUTOS % "forward"),
    ("stepscope.microstep()", STEPS_OF_ITS_OWN),
    ("stepscope.zone_end(stepscope.zone_begin('backward'))", ZONE_OF_AUTOS % "backward"),
    ("stepscope.zone_end(stepscope.step_begin())", STEPS_OF_ITS_OWN),
    ("stepscope.zone_end(stepscope.microstep_begin())", STEPS_OF_ITS_OWN),
    ("with stepscope.gpu_zone('optimizer', 0): pass", ZONE_OF_AUTOS % "optimizer"),
    ("with stepscope.zone('optimizer.zero_grad'): pass", ZONE_OF_AUTOS % "optimizer.zero_grad"),
    ("stepscope.phase('data'); stepscope.phase_end()", ZONE_OF_AUTOS % "data"),
    ("stepscope.Profiler().profile('h2d').__enter__()", ZONE_OF_AUTOS % "h2d"),
])
def test_every_begin_of_the_scripts_own_steps_stands_auto_aside(env, call, what):
    name = call.split("(")[0].replace("with ", "").split(".")[1]
    if not hasattr(stepscope, name):
        pytest.skip("this stepscope has no %s()" % name)
    script = write_script(env["tmp"], '''
        import torch, stepscope
        %s
        %s
        for i in range(3):
            torch.train_step()
    ''' % (call, call))
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == 0, proc.stderr
    # once, for the first call, at its line: the Profiler's own frames are the package's
    reason = "the script %s at train.py:3" % what
    assert auto_lines(proc.stderr) == ["stepscope: auto-instrumentation stands aside: " + reason]
    assert rep["auto"]["state"] == "stood_aside"
    assert rep["auto"]["reason"] == reason
    # the patch is undone: the loop's three calls are not steps
    assert rep["steps"]["count"] == (2 if "stepscope.step_begin" in call else 0)


@pytest.mark.parametrize("call", [
    "with stepscope.zone('encoder'): pass",
    "stepscope.zone_end(stepscope.zone_begin('decode'))",
    "with stepscope.gpu_zone('attention', 0): pass",
    "stepscope.Profiler().profile('augment').__enter__()",
])
def test_zones_of_other_names_nest_in_autos_and_leave_it_on(env, call):
    """A zone the script names itself (a part of its model, its Dataset's
    decoding) nests inside auto's zones and steps: nothing is counted
    twice, so auto stays, and says nothing."""
    name = call.split("(")[0].replace("with ", "").split(".")[1]
    if not hasattr(stepscope, name):
        pytest.skip("this stepscope has no %s()" % name)
    script = write_script(env["tmp"], '''
        import torch, stepscope
        for i in range(3):
            %s
            torch.train_step()
    ''' % (call,))
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == 0, proc.stderr
    assert auto_lines(proc.stderr) == []
    assert rep["auto"]["state"] == "active"
    assert rep["steps"]["count"] == 3
    assert rep["steps_recorded_by"] == "auto"


def test_values_and_counts_leave_auto_on(env):
    script = write_script(env["tmp"], '''
        import torch, stepscope
        for i in range(3):
            torch.train_step()
            stepscope.record("loss", 0.5)
            stepscope.count("samples", 8)
    ''')
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == 0, proc.stderr
    assert auto_lines(proc.stderr) == []
    assert rep["auto"]["state"] == "active"
    assert rep["steps_recorded_by"] == "auto"
    assert rep["steps"]["count"] == 3


def test_auto_turning_itself_off_keeps_its_steps(env):
    script = write_script(env["tmp"], '''
        import torch, stepscope._auto
        torch.train_step(); torch.train_step()
        stepscope._auto.turn_off("an error in its hooks (KeyError: 3)")
        torch.train_step()
    ''')
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == 0, proc.stderr
    assert rep["steps"]["count"] == 2
    assert rep["steps_recorded_by"] == "auto"
    assert rep["auto"]["state"] == "turned_off"
    assert rep["auto"]["reason"] == "an error in its hooks (KeyError: 3)"
    assert rep["auto"]["processes_turned_off"] == 1
    assert rep["processes"][0]["auto"] == {"state": "turned_off", "reason": "an error in its hooks (KeyError: 3)"}
    again = subprocess.run([STEPSCOPE_BIN, "report", str(env["tmp"] / "out"), "--format", "summary"],
                           capture_output=True, text=True, timeout=120)
    assert ("steps: auto-instrumented (auto-instrumentation turned itself off: an error in its hooks (KeyError: 3))"
            "\n") in again.stdout + again.stderr


def test_a_callback_that_returns_false_keeps_auto_and_is_not_asked_again(env):
    # the real _auto returns False in a DataLoader worker, where the
    # script's zones nest inside auto's data.fetch: auto stays, silently
    # (a zone named as one of auto's asks it; see the test above)
    script = write_script(env["tmp"], '''
        import torch, stepscope
        for i in range(3):
            with stepscope.zone("data"):
                pass
            torch.train_step()
        print("calls", torch.calls)
    ''')
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"],
                              FAKE_AUTO_STAYS="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 3\n"
    assert proc.stderr.count("fake auto: asked, stays") == 1
    assert auto_lines(proc.stderr) == []
    assert rep["steps"]["count"] == 3
    assert {z["name"]: z["count"] for z in rep["zones"]}["data"] == 3
    assert rep["steps_recorded_by"] == "auto"
    assert rep["auto"]["state"] == "active" and rep["auto"]["reason"] is None
    assert rep["processes"][0]["auto"] == {"state": "active", "reason": None}


def test_a_failed_stand_aside_is_one_line(env):
    script = write_script(env["tmp"], '''
        import torch, stepscope
        with stepscope.step():
            pass
        with stepscope.step():
            pass
        print("went on")
    ''')
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"],
                              FAKE_AUTO_ASIDE_FAILS="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "went on\n"
    assert auto_lines(proc.stderr) == [
        "stepscope: auto-instrumentation could not stand aside (the double cannot stand aside): its patches may "
        "stay, but record nothing"]
    assert rep["auto"]["state"] == "stood_aside"
    assert rep["steps"]["count"] == 2


@pytest.mark.parametrize("end, rc", [("raise SystemExit(3)", 3), ("import os; os._exit(4)", 4),
                                     ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + 9),
                                     ("raise ValueError('crash')", 1)])
def test_a_crash_leaves_every_completed_step(env, end, rc):
    script = write_script(env["tmp"], '''
        import torch
        for i in range(3):
            torch.train_step()
        %s
    ''' % end)
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == rc, proc.stderr
    assert rep["steps"]["count"] == 3
    assert rep["steps_recorded_by"] == "auto"
    assert rep["auto"]["state"] == "active"


def test_processes_the_workload_starts_inherit_it(env):
    child = write_script(env["tmp"], TRAIN, name="child.py")
    script = write_script(env["tmp"], '''
        import multiprocessing as mp, runpy, subprocess, sys
        if __name__ == "__main__":
            subprocess.run([sys.executable, %r], check=True)
            p = mp.get_context("spawn").Process(target=runpy.run_path, args=(%r,))
            p.start(); p.join()
            print("exit", p.exitcode)
    ''' % (str(child), str(child)))
    proc, rep = stepscope_run(env["tmp"], [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 5\ncalls 5\nexit 0\n"
    assert proc.stderr.count("fake auto: install") == 2
    assert rep["auto"]["processes_active"] == 2
    assert rep["steps"]["count"] == 10
    assert rep["steps_recorded_by"] == "auto"


def test_a_script_without_torch_runs_untouched(env, tmp_path):
    user = tmp_path / "userpath"
    user.mkdir()
    script = write_script(tmp_path, '''
        import os, sys
        print(sys.argv[1:])
        print(sys.path)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "stepscope", "importlib")))
        print(getattr(sys.modules.get("sitecustomize"), "__file__", None))
        print([type(f).__name__ for f in sys.meta_path if type(f).__name__ not in ("_TorchWatch", "_StepscopeFallback")])
        print(sum(i * i for i in range(1000)))
    ''')
    alone = subprocess.run([PYTHON, str(script), "a", "b"], cwd=str(tmp_path), capture_output=True, text=True,
                           env=dict(script_env(), PYTHONPATH=str(user)), timeout=120)
    assert alone.returncode == 0, alone.stderr
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script), "a", "b"], pythonpath=str(user))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == alone.stdout
    assert proc.stderr == alone.stderr == ""
    assert rep["processes"] == []
    assert rep["steps_recorded_by"] is None
    assert rep["auto"] == {"state": "not_installed", "reason": "no Python process of the run imported torch",
                           "reason_pid": None, "processes_active": 0, "processes_stood_aside": 0,
                           "processes_turned_off": 0}


def test_a_user_sitecustomize_still_runs_exactly_once(env, tmp_path):
    user = tmp_path / "usersite"
    user.mkdir()
    marks = tmp_path / "marks"
    (user / "sitecustomize.py").write_text(
        "import os\nMARK = 'user'\nwith open(%r, 'a') as f:\n    f.write('ran in %%d\\n' %% os.getpid())\n" % str(marks))
    script = write_script(tmp_path, '''
        import sitecustomize, torch
        print(sitecustomize.MARK, torch.train_step())
    ''')
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script)],
                              pythonpath=":".join([str(user), env["faketorch"], env["pkg"]]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "user 1\n"
    assert len(marks.read_text().splitlines()) == 1
    assert rep["steps_recorded_by"] == "auto"  # and auto still came in


def test_a_user_sitecustomize_that_imports_torch(env, tmp_path):
    """torch imported while the chained sitecustomize runs: auto comes in then."""
    user = tmp_path / "usersite"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import torch\n")
    script = write_script(tmp_path, TRAIN)
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script)],
                              pythonpath=":".join([str(user), env["faketorch"], env["pkg"]]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 5\n"
    assert proc.stderr.count("fake auto: install") == 1
    assert rep["steps_recorded_by"] == "auto"
    assert rep["steps"]["count"] == 5


def test_an_error_in_the_user_sitecustomize_reads_as_python_says_it(env, tmp_path):
    user = tmp_path / "usersite"
    user.mkdir()
    (user / "sitecustomize.py").write_text("raise ValueError('boom in sitecustomize')\n")
    script = write_script(tmp_path, '''
        import torch
        print("ran", torch.train_step())
    ''')
    path = ":".join([str(user), env["faketorch"], env["pkg"]])
    alone = subprocess.run([PYTHON, str(script)], cwd=str(tmp_path), capture_output=True, text=True,
                           env=dict(script_env(), PYTHONPATH=path), timeout=120)
    assert alone.stderr == "Error in sitecustomize; set PYTHONVERBOSE for traceback:\nValueError: boom in sitecustomize\n"
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script)], pythonpath=path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == alone.stdout == "ran 1\n"
    assert proc.stderr.replace("fake auto: install in %d\n" % rep["processes"][0]["pid"], "") == alone.stderr
    assert rep["steps_recorded_by"] == "auto"


def test_no_auto_leaves_pythonpath_alone(env, tmp_path):
    script = write_script(tmp_path, '''
        import os, torch
        print(os.environ.get("PYTHONPATH"), os.environ.get("STEPSCOPE_AUTO"))
        import stepscope
        with stepscope.step():
            torch.train_step()
    ''')
    path = env["faketorch"] + ":" + env["pkg"]
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script)], options=["--no-auto"], pythonpath=path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "%s 0\n" % path
    assert "fake auto" not in proc.stderr
    assert auto_lines(proc.stderr) == []
    assert rep["auto"] == {"state": "off", "reason": "stepscope run --no-auto", "reason_pid": None,
                           "processes_active": 0, "processes_stood_aside": 0, "processes_turned_off": 0}
    assert rep["steps_recorded_by"] == "code"
    assert rep["processes"][0]["auto"] is None
    # and without --no-auto, the hook goes first and the user's path after it
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script)], pythonpath=path)
    hook, rest = proc.stdout.split(":", 1)
    assert rest == "%s 1\n" % path
    assert (Path(hook) / "sitecustomize.py").read_text() == (HOOK_DIR / "sitecustomize.py").read_text()


def test_the_hook_does_nothing_without_stepscope_auto(env, tmp_path):
    script = write_script(tmp_path, '''
        import sys, torch
        print(torch.train_step(), [type(f).__name__ for f in sys.meta_path])
    ''')
    for value in (None, "0", ""):
        extra = {} if value is None else {"STEPSCOPE_AUTO": value}
        proc = subprocess.run([PYTHON, str(script)], cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                              env=dict(script_env(**extra),
                                       PYTHONPATH=":".join([str(HOOK_DIR), env["faketorch"], env["pkg"]])))
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        assert "_TorchWatch" not in proc.stdout
        assert proc.stdout.startswith("1 ")


def test_stepscope_from_stepscope_python_path(env, tmp_path):
    """An interpreter that cannot import stepscope gets the package the CLI
    names; one that cannot at all says so in one line, and runs on."""
    script = write_script(tmp_path, '''
        import torch
        print("calls", torch.train_step())
    ''')
    hooked = ":".join([str(HOOK_DIR), env["faketorch"]])
    proc = subprocess.run([PYTHON, str(script)], cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(script_env(STEPSCOPE_AUTO="1", STEPSCOPE_PYTHON_PATH=env["pkg"]),
                                   PYTHONPATH=hooked))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 1\n"
    assert proc.stderr.count("fake auto: install") == 1
    proc = subprocess.run([PYTHON, str(script)], cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(script_env(STEPSCOPE_AUTO="1"), PYTHONPATH=hooked))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 1\n"
    (line,) = proc.stderr.splitlines()
    assert line.startswith("stepscope: auto-instrumentation off: the stepscope module cannot be imported (")
    # a stepscope without auto-instrumentation found first (an older install)
    old = env["tmp"] / "old" / "stepscope"
    old.mkdir(parents=True)
    for f in (env["tmp"] / "pkg" / "stepscope").iterdir():
        if f.name != "_auto.py":
            (old / f.name).symlink_to(f.resolve())
    proc = subprocess.run([PYTHON, str(script)], cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(script_env(STEPSCOPE_AUTO="1", STEPSCOPE_PYTHON_PATH=env["pkg"]),
                                   PYTHONPATH=hooked + ":" + str(old.parent)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 1\n"
    assert proc.stderr == ("stepscope: auto-instrumentation off: the stepscope module found first (%s) has none; "
                           "install this stepscope's (pip install, docs/python.md)\n" % (old / "__init__.py"))


def test_stepscope_imported_before_torch_comes_from_stepscope_python_path(env, tmp_path):
    """A script that imports stepscope first (to record values of its own)
    finds the CLI's package too, through a finder placed after every other:
    sys.path stays what the script would have seen."""
    script = write_script(tmp_path, '''
        import sys
        before = list(sys.path)
        import stepscope
        import torch
        print("calls", torch.train_step(), stepscope.__file__.startswith(%r), sys.path == before)
    ''' % (env["pkg"],))
    hooked = ":".join([str(HOOK_DIR), env["faketorch"]])
    proc = subprocess.run([PYTHON, str(script)], cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(script_env(STEPSCOPE_AUTO="1", STEPSCOPE_PYTHON_PATH=env["pkg"]),
                                   PYTHONPATH=hooked))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 1 True True\n"
    assert proc.stderr.count("fake auto: install") == 1


def test_a_failing_install_is_one_line_and_the_script_runs(env, tmp_path):
    script = write_script(tmp_path, '''
        import torch
        print("calls", torch.train_step())
    ''')
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script)], pythonpath=env["faketorch"] + ":" + env["pkg"],
                              FAKE_AUTO_FAILS="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "calls 1\n"
    assert proc.stderr == "stepscope: auto-instrumentation off: RuntimeError: the double fails to install\n"
    assert rep["auto"]["state"] == "not_installed"


def test_a_non_python_command_gets_the_environment_and_no_message(env, tmp_path):
    proc, rep = stepscope_run(tmp_path, ["sh", "-c", 'echo "$STEPSCOPE_AUTO"'])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1\n"
    assert proc.stderr == ""
    # a missing hook: no word for a command that is not Python ...
    proc, rep = stepscope_run(tmp_path, ["sh", "-c", "true"], STEPSCOPE_AUTO_DIR=str(tmp_path / "nowhere"))
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert rep["auto"]["state"] == "unavailable"
    # ... one line for one that is, and the run goes on
    script = write_script(tmp_path, "print('ran')\n")
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script)], STEPSCOPE_AUTO_DIR=str(tmp_path / "nowhere"))
    assert proc.returncode == 0
    assert proc.stdout == "ran\n"
    assert auto_lines(proc.stderr) == [
        "stepscope: run: auto-instrumentation: no startup hook (sitecustomize.py) in %s: the run goes on without it"
        % (tmp_path / "nowhere")]
    assert rep["auto"]["state"] == "unavailable"
    # a script whose #! names Python is Python too
    py = tmp_path / "tool"
    py.write_text("#!%s\nprint('tool ran')\n" % PYTHON)
    py.chmod(0o755)
    proc, rep = stepscope_run(tmp_path, [str(py)], STEPSCOPE_AUTO_DIR=str(tmp_path / "nowhere"))
    assert proc.stdout == "tool ran\n"
    assert len(auto_lines(proc.stderr)) == 1
    # a shell script that starts Python passes the hook on
    sh = tmp_path / "train.sh"
    sh.write_text("#!/bin/sh\nexec %s %s\n" % (PYTHON, write_script(tmp_path, TRAIN, name="t.py")))
    sh.chmod(0o755)
    proc, rep = stepscope_run(tmp_path, [str(sh)], pythonpath=env["faketorch"] + ":" + env["pkg"])
    assert proc.returncode == 0, proc.stderr
    assert rep["steps_recorded_by"] == "auto"


def test_real_torch_is_noticed_and_instrument_stands_auto_aside(env, tmp_path):
    pytest.importorskip("torch")
    script = write_script(tmp_path, '''
        import torch
        import stepscope.torch as st
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = [torch.randn(8, 4) for _ in range(3)]
        for x in st.instrument(model, opt, data):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        print("done")
    ''')
    proc, rep = stepscope_run(tmp_path, [PYTHON, str(script)], pythonpath=env["pkg"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done\n"
    assert proc.stderr.count("fake auto: install") == 1
    assert auto_lines(proc.stderr) == [
        "stepscope: auto-instrumentation stands aside: the script calls stepscope.torch.instrument() at train.py:7"]
    assert rep["steps_recorded_by"] == "instrument"
    assert rep["auto"]["state"] == "stood_aside"
    assert rep["processes"][0]["instrument"] is True
    assert rep["steps"]["count"] == 3
