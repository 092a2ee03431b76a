"""Zones, steps, micro-steps, values and counters, as report.json sees them
when the script runs under `stepscope run`."""


def test_with_zones_nest_inside_steps(run_under):
    r = run_under("""
        import time, stepscope
        for i in range(6):
            with stepscope.step():
                with stepscope.zone("data"):
                    pass
                with stepscope.zone("forward"):
                    with stepscope.zone("inner"):
                        time.sleep(0.001)
                stepscope.record("loss", 10.0 - i)
                stepscope.count("samples", 32)
    """)
    step = r.zone("step")
    assert step["kind"] == "step" and step["count"] == 6
    for name in ("data", "forward", "inner"):
        z = r.zone(name)
        assert z["kind"] == "zone" and z["count"] == 6, z
    fwd, inner = r.zone("forward"), r.zone("inner")
    # forward's only child is inner: its self time is the rest, to the ns
    assert abs(fwd["self_s"] + inner["total_s"] - fwd["total_s"]) < 1e-8
    assert inner["total_s"] > 0 and inner["total_s"] <= fwd["total_s"] <= step["total_s"]
    loss = r.value("loss")
    assert (loss["count"], loss["first"], loss["last"], loss["min"], loss["max"]) == (6, 10.0, 5.0, 5.0, 10.0)
    samples = r.counter("samples")
    assert (samples["total"], samples["increments"]) == (6 * 32, 6)
    rows = r.report["steps"]["rows"]
    assert [row["index"] for row in rows] == list(range(6))
    assert [row["values"]["loss"] for row in rows] == [10.0 - i for i in range(6)]
    assert all(row["counters"]["samples"] == 32 for row in rows)
    assert all(set(row["zones_self_s"]) == {"data", "forward", "inner"} for row in rows)
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())
    # recorded into the run's record file, not memory
    assert r.report["processes"][0]["record"].endswith(".sps")


def test_bare_steps_end_at_the_next_step_and_at_exit(run_under):
    r = run_under("""
        import stepscope
        for i in range(5):
            stepscope.step()
            with stepscope.zone("work"):
                pass
            stepscope.record("i", i)
        # the fifth step is still open here: the exit hook ends it
    """)
    assert r.zone("step")["count"] == 5
    assert r.zone("work")["count"] == 5
    rows = r.report["steps"]["rows"]
    assert [row["values"]["i"] for row in rows] == [0, 1, 2, 3, 4]
    assert all("work" in row["zones_self_s"] for row in rows)
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())


def test_microsteps_with_and_bare(run_under):
    r = run_under("""
        import stepscope
        for i in range(3):                     # with-form micro-steps
            with stepscope.step():
                for k in range(4):
                    with stepscope.microstep():
                        with stepscope.zone("fwd"):
                            pass
        for i in range(2):                     # bare micro-steps in bare steps
            stepscope.step()
            for k in range(2):
                stepscope.microstep()
                with stepscope.zone("fwd"):
                    pass
        with stepscope.step():                 # a bare micro-step ends with its with-step
            stepscope.microstep()
    """)
    assert r.zone("step")["count"] == 3 + 2 + 1
    assert r.zone("microstep")["kind"] == "microstep"
    assert r.zone("microstep")["count"] == 12 + 4 + 1
    assert r.zone("fwd")["count"] == 12 + 4
    rows = r.report["steps"]["rows"]
    assert [row.get("microsteps", 0) for row in rows] == [4, 4, 4, 2, 2, 1]
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())


def test_decorator_times_every_call_and_keeps_the_function(run_under):
    r = run_under("""
        import stepscope

        @stepscope.zone("load")
        def load(x, scale=1):
            "Load a batch."
            return x * scale

        @stepscope.zone("fib")
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)

        print(load(3), load(4, scale=10), load.__name__, load.__doc__, load.__wrapped__(5))
        print(fib(5))
    """)
    assert r.stdout.split("\n")[0] == "3 40 load Load a batch. 5"
    assert r.stdout.split("\n")[1] == "5"
    assert r.zone("load")["count"] == 2     # __wrapped__ is the bare function
    assert r.zone("fib")["count"] == 15     # calls of fib(5), recursion included
    assert all(t["mismatched_ends"] == 0 for t in r.threads())


def test_zone_ends_when_the_block_raises(run_under):
    r = run_under("""
        import stepscope
        for i in range(3):
            try:
                with stepscope.zone("fails"):
                    raise KeyError(i)
            except KeyError as e:
                print("caught", e)
    """)
    assert r.stdout.split() == ["caught", "0", "caught", "1", "caught", "2"]
    assert r.zone("fails")["count"] == 3
    assert all(t["mismatched_ends"] == 0 and t["open_zones"] == [] for t in r.threads())


def test_same_name_nested_and_kept_zone_objects(run_under):
    r = run_under("""
        import stepscope
        kept = stepscope.zone("kept")
        for i in range(4):
            with kept:
                with stepscope.zone("a"):
                    with stepscope.zone("a"):      # the cached "a" is in use: a fresh one
                        pass
        print(kept.name, repr(kept))
    """)
    assert r.stdout.strip() == "kept <stepscope.zone 'kept'>"
    assert r.zone("kept")["count"] == 4
    assert r.zone("a")["count"] == 8
    assert all(t["mismatched_ends"] == 0 for t in r.threads())


def test_low_level_tokens(run_under):
    r = run_under("""
        import stepscope as s
        st = s.step_begin()
        outer = s.zone_begin("outer")
        inner = s.zone_begin("inner")
        print(st, outer, inner)
        s.zone_end(inner)
        s.zone_end(outer)
        m = s.microstep_begin()
        s.zone_end(m)
        s.zone_end(st)
        s.zone_end(0)          # a begin that recorded nothing: ignored
    """)
    # tokens are the depths on the thread's stack
    assert r.stdout.split() == ["1", "2", "3"]
    assert [r.zone(n)["count"] for n in ("step", "outer", "inner", "microstep")] == [1, 1, 1, 1]
    assert all(t["mismatched_ends"] == 0 for t in r.threads())


def test_threads_record_on_their_own(run_under):
    r = run_under("""
        import threading, stepscope
        with stepscope.zone("main"):           # the main thread's entry first
            pass
        together = threading.Barrier(3)        # all three alive at once: an entry each
        def worker(k):
            stepscope.thread_name("worker-%d" % k)
            for i in range(50):
                with stepscope.step():
                    with stepscope.zone("w%d" % k):
                        pass
            together.wait()
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
        for t in ts: t.start()
        for t in ts: t.join()
    """)
    assert r.zone("step")["count"] == 150
    assert [r.zone("w%d" % k)["count"] for k in range(3)] == [50, 50, 50]
    assert r.zone("main")["count"] == 1
    threads = r.threads()
    # (not `exited`: join() can return before the OS thread has finished)
    assert sorted(t["name"] for t in threads[1:]) == ["worker-0", "worker-1", "worker-2"]
    assert len(threads) == 4 and all(t["earlier_threads"] == 0 for t in threads)
    assert all(t["mismatched_ends"] == 0 for t in threads)


def test_disabled_records_nothing(run_under):
    r = run_under("""
        import stepscope
        stepscope.set_enabled(False)
        print(stepscope.is_enabled())
        with stepscope.zone("off"):
            pass
        stepscope.record("v", 1.0)
        stepscope.configure(enabled=True)
        with stepscope.zone("on"):
            pass
    """)
    assert r.stdout.strip() == "False"
    assert r.zone("on")["count"] == 1
    off = r.zone("off")
    assert off is None or off["count"] == 0
    v = r.value("v")
    assert v is None or v["count"] == 0
