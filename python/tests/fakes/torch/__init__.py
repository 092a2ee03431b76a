"""A fake ``torch`` for stepscope's tests of GPU memory per step
(test_torch_memory.py): only the surface stepscope reads, with the caching
allocator's statistics scripted by the test.

The test's script calls alloc(n) / free(n) / reserve(n) / release(n), which
move the current figures and the peaks as torch's allocator does (a peak is
the largest current figure since the start or the last reset); stepscope
reads them through torch._C._cuda_memoryStats(device), the call
torch.cuda.memory_stats() makes.  FAKE_TORCH_RAISE=NAME:K makes the K-th
call (1-based) of NAME (is_initialized, getDevice, memoryStats,
reset_peak_memory_stats) raise RuntimeError("fake torch: NAME failed").
FAKE_TORCH_STATS=empty makes memoryStats return {} (a torch whose
statistics are not shaped as documented).  calls counts every call by NAME.
"""
import os
import sys
import types

__version__ = "0.0-fake"

state = {"allocated": 0, "reserved": 0, "peak_allocated": 0, "peak_reserved": 0, "initialized": True}
calls = {"is_initialized": 0, "getDevice": 0, "memoryStats": 0, "reset_peak_memory_stats": 0}
_raise = os.environ.get("FAKE_TORCH_RAISE", "")


def _call(name):
    calls[name] += 1
    if _raise == "%s:%d" % (name, calls[name]):
        raise RuntimeError("fake torch: %s failed" % name)


def alloc(n):
    state["allocated"] += n
    state["peak_allocated"] = max(state["peak_allocated"], state["allocated"])


def free(n):
    state["allocated"] -= n


def reserve(n):
    state["reserved"] += n
    state["peak_reserved"] = max(state["peak_reserved"], state["reserved"])


def release(n):
    state["reserved"] -= n


def _stat(current, peak):
    return {"current": current, "peak": peak, "allocated": 0, "freed": 0}


def _memory_stats(device):
    _call("memoryStats")
    assert device == 0, device
    if os.environ.get("FAKE_TORCH_STATS") == "empty":
        return {}
    a = _stat(state["allocated"], state["peak_allocated"])
    r = _stat(state["reserved"], state["peak_reserved"])
    return {"allocated_bytes": {"all": a, "small_pool": dict(a), "large_pool": dict(a)},
            "reserved_bytes": {"all": r, "small_pool": dict(r), "large_pool": dict(r)},
            "num_alloc_retries": 0}


def _get_device():
    _call("getDevice")
    return 0


def _is_initialized():
    _call("is_initialized")
    return state["initialized"]


def _reset_peak_memory_stats(device=None):
    _call("reset_peak_memory_stats")
    state["peak_allocated"] = state["allocated"]
    state["peak_reserved"] = state["reserved"]


def _max_memory_allocated(device=None):
    return state["peak_allocated"]


_C = types.ModuleType("torch._C")
_C._cuda_memoryStats = _memory_stats
_C._cuda_getDevice = _get_device
cuda = types.ModuleType("torch.cuda")
cuda.is_initialized = _is_initialized
cuda.reset_peak_memory_stats = _reset_peak_memory_stats
cuda.max_memory_allocated = _max_memory_allocated
sys.modules["torch._C"] = _C
sys.modules["torch.cuda"] = cuda
