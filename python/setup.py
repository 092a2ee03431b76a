"""Build the stepscope Python package: the C extension stepscope._stepscope
for the stable ABI (CPython 3.8+, one _stepscope.abi3.so), compiled together
with the core library's C sources from ../src.

    /usr/bin/python3 -m venv --system-site-packages /tmp/venv
    /tmp/venv/bin/pip install --no-build-isolation ./python

The library's source list is read from ../CMakeLists.txt (SPS_LIB_SOURCES,
the sps_objects target), so CMake and pip build the same files.  It builds
from a checkout (an in-tree build, pip 21.3+): the sources live outside
python/.
"""
import os
import re

from setuptools import Extension, setup

try:
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

    class bdist_wheel(_bdist_wheel):
        # tag the wheel abi3 (cp38-abi3): one wheel for every CPython 3.8+
        def get_tag(self):
            python, abi, plat = _bdist_wheel.get_tag(self)
            if python.startswith("cp"):
                return "cp38", "abi3", plat
            return python, abi, plat

    cmdclass = {"bdist_wheel": bdist_wheel}
except ImportError:
    cmdclass = {}

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def library_sources():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        text = f.read()
    m = re.search(r"set\(SPS_LIB_SOURCES\s+(.*?)\)", text, re.S)
    if not m:
        raise SystemExit("setup.py: SPS_LIB_SOURCES not found in %s" % os.path.join(ROOT, "CMakeLists.txt"))
    files = [s for s in m.group(1).split() if s.endswith(".c")]
    # absolute paths: setuptools then puts the objects under build/temp*/,
    # not next to the sources
    return [os.path.join(ROOT, s) for s in files]


ext = Extension(
    "stepscope._stepscope",
    sources=[os.path.join("src", n) for n in ("module.c", "zone.c", "gpu_zone.c", "info.c", "face.c", "live.c", "deep.c", "auto_mode.c", "clock_sync.c")] + library_sources(),
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src")],
    define_macros=[("Py_LIMITED_API", "0x03080000"), ("_GNU_SOURCE", None)],
    py_limited_api=True,
    extra_compile_args=["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
    # export PyInit__stepscope only (see python/CMakeLists.txt)
    extra_link_args=["-Wl,--version-script=" + os.path.join(HERE, "src", "exports.map"), "-Wl,-Bsymbolic"],
    libraries=["dl", "m"],
)

setup(
    name="stepscope",
    version="0.1.0",
    description="Where each step of a training loop spends its time (C extension over libstepscope)",
    packages=["stepscope"],
    ext_modules=[ext],
    python_requires=">=3.8",
    cmdclass=cmdclass,
)
