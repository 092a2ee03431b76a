"""The leak analysis of a Python script that records no step (it never
imports stepscope or torch): memory judged against time.  Each script
sleeps between its allocations, so a busy machine only stretches the run;
what grows, grows far past what matters (1 MiB, or 1% of the level)."""


def leaks_of(result):
    return result.report["analysis"]["leaks"]


def tree_series(leaks):
    return next(s for s in leaks["series"] if s["scope"] == "workload process tree")


def test_growing_script_leaks_against_time(run_under):
    # 1 MiB kept every 20 ms, 200 times: 200 MiB over 4 s or more
    r = run_under("""
        import time
        kept = []
        for i in range(200):
            kept.append(b"x" * (1 << 20))
            time.sleep(0.02)
    """)
    leaks = leaks_of(r)
    assert leaks["axis"] == "time", leaks
    assert leaks["verdict"] == "leak", leaks["reason"]
    assert leaks["step_stream"] is None and leaks["steps_analysed"] == 0
    tree = tree_series(leaks)
    assert tree["verdict"] == "leak", tree["reason"]
    assert tree["slope_bytes_per_step"] is None
    assert tree["ci95_low"] > 0 and tree["slope_bytes_per_second"] >= tree["ci95_low"]
    # what grew in the time judged: much of the 200 MiB, never more
    assert 40 * 2**20 < tree["growth_bytes"] < 210 * 2**20, tree
    assert tree["seconds_analysed"] >= 2 and tree["points"] >= 20


def test_script_that_holds_is_no_leak(run_under):
    # 100 MiB taken at once, then held for 4 s
    r = run_under("""
        import time
        kept = [b"x" * (1 << 20) for i in range(100)]
        time.sleep(4)
    """)
    leaks = leaks_of(r)
    assert leaks["axis"] == "time", leaks
    assert leaks["verdict"] == "no leak", leaks["reason"]
    assert tree_series(leaks)["verdict"] == "no leak"
