"""capture(): the seed's four keys plus every catalogue metric, None where
there is no reading."""
import json

import stepscope

SEED_KEYS = ["gpu_memory", "gpu_temperature", "cpu_memory", "cpu_temperature"]


def test_catalogue():
    rows = stepscope.metrics()
    names = [m["name"] for m in rows]
    assert len(names) == len(set(names)) == 28 + 11
    for name in ("cpu_pressure_some_percent", "workload_run_delay_seconds", "workload_run_delay_percent"):
        assert next(m for m in rows if m["name"] == name)["source"] == "sched"
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
    assert set(c) == set(SEED_KEYS) | set(names) | {"gpus", "time_ns", "published", "fresh"}
    assert c["published"] is False and c["fresh"] is True and f["fresh"] is True
    for key in SEED_KEYS + names:
        assert c[key] is None or isinstance(c[key], (int, float)), key
    # units: whole bytes as int; /proc is always there on Linux
    assert c["cpu_memory"] == c["workload_rss_bytes"]
    assert isinstance(c["cpu_memory"], int) and c["cpu_memory"] > 0
    # the sampler read the tree when it started; the script allocated little since
    assert abs(c["cpu_memory"] - out["rss"]) < 64 << 20
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
        for _ in range(200):                  # the CLI's first sample may not be there yet
            c = stepscope.capture()
            if c["published"] and c["workload_rss_bytes"] is not None:
                break
            time.sleep(0.05)
        print(json.dumps(c))
    """)
    c = json.loads(r.stdout)
    assert c["published"] is True and c["fresh"] is False
    assert c["cpu_memory"] == c["workload_rss_bytes"] > 0
