"""Bad arguments raise clear TypeError/ValueError; nothing crashes.  These
run in pytest's own process (conftest sets STEPSCOPE_OUT="": no report)."""
import re

import pytest

import stepscope


@pytest.mark.parametrize("call, exc, message", [
    (lambda: stepscope.zone(1), TypeError, "stepscope.zone(): the name must be a str, not int"),
    (lambda: stepscope.zone(None), TypeError, "stepscope.zone(): the name must be a str, not NoneType"),
    (lambda: stepscope.zone([]), TypeError, "stepscope.zone(): the name must be a str, not list"),
    (lambda: stepscope.zone(""), ValueError, "stepscope.zone(): the name must not be empty"),
    (lambda: stepscope.zone("a\0b"), ValueError, "stepscope.zone(): the name must not contain NUL characters"),
    (lambda: stepscope.zone_begin(b"x"), TypeError, "stepscope.zone_begin(): the name must be a str, not bytes"),
    (lambda: stepscope.zone_end("1"), TypeError, "stepscope.zone_end(): the token must be an int, not str"),
    (lambda: stepscope.zone_end(-1), ValueError, "stepscope.zone_end(): -1 is not a token from zone_begin()"),
    (lambda: stepscope.zone_end(2**40), ValueError, "is not a token from zone_begin()"),
    (lambda: stepscope.record("loss", "high"), TypeError, "stepscope.record(): the value must be a number, not str"),
    (lambda: stepscope.record(3, 1.0), TypeError, "stepscope.record(): the name must be a str, not int"),
    (lambda: stepscope.record("loss"), TypeError, "record expected 2 arguments, got 1"),
    (lambda: stepscope.count("n", 1.5), TypeError, "stepscope.count(): n must be an int, not float"),
    (lambda: stepscope.count("n", -1), ValueError, "stepscope.count(): n must be between 0 and 2**64-1, not -1"),
    (lambda: stepscope.count("n", 2**64), ValueError, "n must be between 0 and 2**64-1"),
    (lambda: stepscope.count("", 1), ValueError, "stepscope.count(): the name must not be empty"),
    (lambda: stepscope.capture(gpu=-1), ValueError, "stepscope.capture(): gpu must be >= 0, not -1"),
    (lambda: stepscope.Zone(), TypeError, "use stepscope.zone(name)"),
    (lambda: stepscope.zone("d")(3), TypeError, "@stepscope.zone('d') must decorate a function, not int"),
    (lambda: stepscope.zone("d")(len, len), TypeError,
     "a stepscope.zone decorates one function: @stepscope.zone(\"name\") above a def"),
    (lambda: stepscope.configure(out=""), ValueError, "out must be a non-empty path or None"),
    (lambda: stepscope.configure(enabled=1), TypeError, "enabled must be True or False"),
])
def test_bad_arguments(call, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        call()


def test_decorating_generators_and_coroutines_is_refused():
    def gen():
        yield 1

    async def coro():
        pass

    for f in (gen, coro):
        with pytest.raises(TypeError, match="cannot time a generator or coroutine function"):
            stepscope.zone("g")(f)


def test_an_open_zone_object_cannot_be_entered_again():
    z = stepscope.zone("twice")
    with z:
        with pytest.raises(RuntimeError, match=re.escape("stepscope.zone('twice') is already open")):
            with z:
                pass
    with z:   # once it has ended it can be used again
        pass


def test_values_accept_anything_float_accepts():
    class Loss:
        def __float__(self):
            return 0.25
    stepscope.record("ok", 1)          # an int
    stepscope.record("ok", True)
    stepscope.record("ok", Loss())     # e.g. a 0-d tensor
    stepscope.count("ok_n")            # n defaults to 1
    stepscope.count("ok_n", n=0)
    stepscope.count(name="ok_n", n=True)


def test_zone_objects_are_reused_when_free():
    # a free cached zone is handed out again: no allocation per with
    first = id(stepscope.zone("reuse"))
    with stepscope.zone("reuse"):
        pass
    assert id(stepscope.zone("reuse")) == first
    held = stepscope.zone("reuse")
    assert stepscope.zone("reuse") is not held   # in use by someone: a fresh one


def test_a_zones_bound_methods_are_made_once_and_kept_from_reuse():
    z = stepscope.zone("bound")
    assert z.__enter__ is z.__enter__ and z.__exit__ is z.__exit__
    assert z.__exit__.__self__ is z and z.__enter__.__name__ == "__enter__"
    exit_held = z.__exit__
    del z
    # somebody holds its __exit__: handing the zone out again could end a
    # block that somebody else still means to end
    assert stepscope.zone("bound") is not exit_held.__self__
    del exit_held


def test_class_level_methods_work_as_contextlib_calls_them():
    import contextlib
    Zone = type(stepscope.zone("cls"))
    assert repr(Zone.__enter__) == "<method '__enter__' of 'stepscope.zone' objects>"
    with contextlib.ExitStack() as stack:   # looks __enter__/__exit__ up on the class
        z = stack.enter_context(stepscope.zone("cls"))
        assert z.name == "cls"
        with pytest.raises(RuntimeError, match="already open"):
            Zone.__enter__(z)
    assert Zone.__exit__(z, None, None, None) is None
    with pytest.raises(TypeError, match="must be a stepscope.zone, not int"):
        Zone.__enter__(3)
    with pytest.raises(TypeError, match="needs a stepscope.zone as its first argument"):
        Zone.__exit__()


def test_zones_of_recursion_are_collected():
    import gc

    def down(n):
        with stepscope.zone("recurse"):
            if n:
                down(n - 1)
    down(50)   # 50 nested: 50 fresh zones, each in a cycle with its methods
    gc.collect()
    Zone = type(stepscope.zone("recurse"))
    alive = [o for o in gc.get_objects() if type(o) is Zone and o.name == "recurse"]
    assert len(alive) == 1   # the cached one; the cycles were collected


def test_exit_without_enter_and_exit_twice_are_harmless():
    z = stepscope.zone("loose")
    assert z.__exit__(None, None, None) is None
    s = stepscope.step()
    s.__exit__(None, None, None)
    s.__exit__(None, None, None)
    stepscope._stepscope._end_pending()


def test_status_fields():
    st = stepscope.status()
    assert set(st) == {"mode", "clock", "ticks_per_second", "record_path", "reason", "events_recorded",
                       "events_dropped", "threads_recording", "enabled", "torch_cuda_memory"}
    assert st["mode"] in ("uninitialised", "memory")
    assert st["clock"] in ("tsc", "monotonic") and st["ticks_per_second"] > 0
    with stepscope.zone("status"):
        pass
    after = stepscope.status()
    assert after["mode"] == "memory" and after["record_path"] == ""
    assert after["events_recorded"] >= st["events_recorded"] + 1


def test_public_names():
    for name in stepscope.__all__:
        assert hasattr(stepscope, name), name
    # the seeds' API shapes (docs/python.md, "The seeds' APIs")
    for name in ("Profiler", "PerformanceProfiler", "PerformanceMetrics", "MetricsCollector", "Reporter",
                 "MemoryTracker"):
        assert name in stepscope.__all__, name
    assert stepscope.PerformanceProfiler is stepscope.Profiler
    assert stepscope.Profiler.__module__ == "stepscope.profiler"
    assert stepscope.MetricsCollector.__module__ == stepscope.Reporter.__module__ == "stepscope.collector"
    assert stepscope.__version__ == "0.1.0"
    assert stepscope._stepscope.__file__.endswith("_stepscope.abi3.so")
