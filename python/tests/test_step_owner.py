"""Which step a value or count belongs to, from Python: after a
`with stepscope.step()` block (the step just ended), from a helper thread
(its process's stepping thread's), from a forked child that records no step
of its own (its parent's), and before the first step (none)."""
import pytest


def rows_of(r):
    return r.report["steps"]["rows"]


def test_count_after_the_step_block_keeps_the_throughput(run_under):
    r = run_under("""
        import stepscope
        stepscope.count("samples", 1000)          # before the first step: no step's
        for i in range(6):
            with stepscope.step():
                sum(range(20000))
            stepscope.count("samples", 32)
            stepscope.record("loss", 1.0 / (i + 1))
    """)
    rows = rows_of(r)
    assert [row["counters"]["samples"] for row in rows] == [32] * 6
    assert [row["values"]["loss"] for row in rows] == pytest.approx([1.0 / (i + 1) for i in range(6)], rel=1e-14)
    samples = r.report["analysis"]["throughput"]["counters"][0]
    assert samples["name"] == "samples" and samples["total"] == 1000 + 6 * 32
    assert samples["per_second"] > 0 and samples["in_steps"] == 32 * samples["steps"]


def test_helper_thread_and_forked_child(run_under):
    r = run_under("""
        import os, threading, stepscope
        def helper(n):
            stepscope.count("decoded", n)
        for i in range(4):
            with stepscope.step():
                t = threading.Thread(target=helper, args=(10 + i,))
                t.start(); t.join()
                pid = os.fork()
                if pid == 0:                      # records no step: lends its counts to the parent's
                    stepscope.count("child", 100 + i)
                    os._exit(0)
                os.waitpid(pid, 0)
            pid = os.fork()
            if pid == 0:                          # after the parent's step ended: that step's
                stepscope.count("child", 1000)
                os._exit(0)
            os.waitpid(pid, 0)
    """)
    rows = rows_of(r)
    assert len(rows) == 4
    assert [row["counters"]["decoded"] for row in rows] == [10, 11, 12, 13]
    assert [row["counters"]["child"] for row in rows] == [1100, 1101, 1102, 1103]
    assert len(r.report["processes"]) == 9
