"""capture(): the seed's four keys plus every catalogue metric, None where
there is no reading."""
import json

import stepscope

SEED_KEYS = ["gpu_memory", "gpu_temperature", "cpu_memory", "cpu_temperature"]


def test_catalogue():
    rows = stepscope.metrics()
    names = [m["name"] for m in rows]
    assert len(names) == len(set(names)) == 31 + 11
    for name in ("cpu_pressure_some_percent", "workload_run_delay_seconds", "workload_run_delay_percent"):
        assert next(m for m in rows if m["name"] == name)["source"] == "sched"
    for name in ("workload_pss_bytes", "workload_pss_peak_bytes", "workload_uss_bytes"):
        assert next(m for m in rows if m["name"] == name)["source"] == "proc"
    assert names[0] == "system_cpu_percent" and names[-1] == "gpu_workload_memory_bytes"
    rss = next(m for m in rows if m["name"] == "workload_rss_bytes")
    assert (rss["unit"], rss["source"], rss["kind"], rss["per_gpu"]) == ("bytes", "proc", "gauge", False)
    energy = next(m for m in rows if m["name"] == "gpu_energy_joules")
    assert (energy["unit"], energy["kind"], energy["per_gpu"]) == ("joules", "total", True)


def test_capture_alone(run_alone):
    # in a process of its own: the first capture starts that process's sampler
    proc = run_alone("""
        import json, os, stepscope
        c = stepscope.capture()
        f = stepscope.capture(fresh=True)
        print(json.dumps({"c": c, "f": f, "metrics": stepscope.metrics(), "pid": os.getpid(),
                          "rss": int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")}))
    """, STEPSCOPE_OUT="")
    out = json.loads(proc.stdout)
    c, f = out["c"], out["f"]
    names = [m["name"] for m in out["metrics"]]
    assert list(c)[:4] == SEED_KEYS
    assert set(c) == set(SEED_KEYS) | set(names) | {"cpu_memory_metric", "gpus", "time_ns", "published", "fresh",
                                                           "torch_cuda"}
    assert c["torch_cuda"] is None  # no torch imported (test_torch_memory.py has it)
    assert c["published"] is False and c["fresh"] is True and f["fresh"] is True
    for key in SEED_KEYS + names:
        assert c[key] is None or isinstance(c[key], (int, float)), key
    # units: whole bytes as int; /proc is always there on Linux.  The tree's
    # memory is its PSS once read (smaps_rollup, Linux 4.14 on): a fresh
    # capture reads it; the sampler's first tick waits for its budget
    assert c["cpu_memory_metric"] in ("workload_pss_bytes", "workload_rss_bytes")
    assert c["cpu_memory"] == c[c["cpu_memory_metric"]]
    assert isinstance(c["cpu_memory"], int) and c["cpu_memory"] > 0
    assert f["cpu_memory_metric"] == "workload_pss_bytes" and f["cpu_memory"] == f["workload_pss_bytes"]
    assert isinstance(f["cpu_memory"], int) and 0 < f["cpu_memory"] <= f["workload_rss_bytes"]
    assert 0 < f["workload_uss_bytes"] <= f["workload_pss_bytes"] <= f["workload_pss_peak_bytes"]
    # the sampler read the tree when it started; the script allocated little since
    assert abs(c["workload_rss_bytes"] - out["rss"]) < 64 << 20
    assert c["system_memory_total_bytes"] > c["system_memory_used_bytes"] > 0
    assert c["workload_processes"] == 1
    assert c["cpu_temperature"] == c["cpu_temperature_celsius"]
    if not c["gpus"]:
        # no GPU here: every GPU reading is None, never a made-up 0
        for key in ["gpu_memory", "gpu_temperature"] + [n for n in names if n.startswith("gpu_")]:
            assert c[key] is None, key
    else:
        g0 = next((g for g in c["gpus"] if g["index"] == 0), None)
        assert g0 is not None and c["gpu_memory"] == g0["gpu_memory_used_bytes"]
        assert c["gpu_temperature"] == g0["gpu_temperature_celsius"]
        assert set(g0) >= {"index", "name", "uuid", "source"} | {n for n in names if n.startswith("gpu_")}


def test_capture_under_run_reads_what_the_cli_publishes(run_under):
    r = run_under("""
        import json, time, stepscope
        for _ in range(200):                  # the CLI's first sample may not be there yet, nor
            c = stepscope.capture()           # its first PSS read (the tree's second machine interval)
            if c["published"] and c["workload_pss_bytes"] is not None:
                break
            time.sleep(0.05)
        print(json.dumps(c))
    """)
    c = json.loads(r.stdout)
    assert c["published"] is True and c["fresh"] is False
    assert c["cpu_memory_metric"] == "workload_pss_bytes"
    assert c["workload_rss_bytes"] >= c["cpu_memory"] == c["workload_pss_bytes"] > 0


def test_a_first_capture_that_is_fresh_reads_the_pss(run_alone):
    # the capture that starts the process's sampler, asked to be fresh,
    # reads what only a fresh read reads (it once gave the RSS sum)
    proc = run_alone("""
        import json, stepscope
        print(json.dumps(stepscope.capture(fresh=True)))
    """, STEPSCOPE_OUT="")
    f = json.loads(proc.stdout)
    assert f["fresh"] is True
    assert f["cpu_memory_metric"] == "workload_pss_bytes" and f["cpu_memory"] == f["workload_pss_bytes"] > 0


def test_tree_memory_counts_shared_pages_once(run_alone):
    # A parent touches a 64 MiB buffer, then forks three children that share
    # it copy-on-write and wait, idle.  The tree's PSS from a fresh capture
    # agrees with psutil's memory_full_info().pss summed over the same four
    # processes at that moment, within 5%; the RSS sum counts the buffer in
    # each process, four times over.
    proc = run_alone("""
        import json, os, psutil, stepscope
        N, BUF = 3, 64 << 20
        stepscope.capture()                   # the sampler and its thread first: they stay put
        buf = bytearray(BUF)
        buf[::4096] = b"\\x01" * (BUF // 4096)  # every page resident
        r, w = os.pipe()
        kids = []
        for _ in range(N):
            pid = os.fork()
            if pid == 0:
                os.close(w)
                os.read(r, 1)                 # idle until the parent is done
                os._exit(0)
            kids.append(pid)
        os.close(r)
        procs = [psutil.Process(p) for p in [os.getpid()] + kids]
        rounds = []
        for _ in range(3):
            c = stepscope.capture(fresh=True)
            pss = sum(p.memory_full_info().pss for p in procs)
            rounds.append({"c": c, "psutil_pss": pss})
        os.close(w)
        for pid in kids:
            os.waitpid(pid, 0)
        print(json.dumps({"rounds": rounds, "buf": BUF, "n": N}))
    """, STEPSCOPE_OUT="")
    out = json.loads(proc.stdout)
    buf, n = out["buf"], out["n"]
    for rd in out["rounds"]:
        c = rd["c"]
        assert c["workload_processes"] == n + 1
        assert c["cpu_memory_metric"] == "workload_pss_bytes" and c["cpu_memory"] == c["workload_pss_bytes"]
        pss, want = c["workload_pss_bytes"], rd["psutil_pss"]
        assert abs(pss - want) <= 0.05 * want, (pss, want)
        # the buffer counts once in PSS, once per process in the RSS sum.
        # What the tree holds besides it (the interpreter, its libraries:
        # 32 MiB of PSS on Ubuntu 24.04's Python 3.12, kernel 6.18, half
        # that here) is in PSS no more than in RSS, whatever its size: had
        # the buffer counted per process in PSS too, its 3 extra copies
        # would break that
        rss = c["workload_rss_bytes"]
        assert buf <= pss and rss >= (n + 1) * buf, (pss, rss)
        assert pss - buf <= rss - (n + 1) * buf, (pss, rss)
        # nobody owns the shared buffer alone
        assert c["workload_uss_bytes"] < pss - 0.5 * buf
        assert c["workload_pss_peak_bytes"] >= pss
