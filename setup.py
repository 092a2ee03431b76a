"""Build the stepscope Python package: the C extension stepscope._stepscope
(the stable ABI, CPython 3.8+: one _stepscope.abi3.so) and the `stepscope`
command, both compiled with setuptools' own compiler from the sources
CMakeLists.txt lists, so CMake and pip build the same files.

    /usr/bin/python3 -m venv --system-site-packages /tmp/venv
    /tmp/venv/bin/pip install --no-build-isolation .        # a checkout
    /tmp/venv/bin/pip install --no-build-isolation stepscope-0.1.0.tar.gz

What the wheel holds (docs/python.md, "Build and install"):

    stepscope/*.py, stepscope/_stepscope.abi3.so   the module
    stepscope/_bin/stepscope      the CLI; `stepscope` (a console script)
                                  and `python -m stepscope` exec it
    stepscope/_hook/sitecustomize.py   the startup hook `stepscope run`
                                  finds at ../_hook from its executable
    share/man/man1/stepscope.1    the manual page

The CLI links jansson statically (libjansson.a) and loads libmicrohttpd
at run time for `run --serve` (dlopen, where the system has it), so both
ELF files need only libc, libm, libdl and libpthread.  The platform tag is computed from them
(tools/pip/elf_tag.py): manylinux_2_Y when they qualify, else linux.
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext
from setuptools.command.build_py import build_py as _build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "tools", "pip"))
import cmake_sources  # noqa: E402
import elf_tag  # noqa: E402

# CMake's link items the pip build knows how to satisfy (pkg-config
# modules by their imported target; the rest is libc's)
SYSTEM_LIBS = {"Threads::Threads": "pthread", "${CMAKE_DL_LIBS}": "dl", "m": "m", "dl": "dl", "pthread": "pthread",
               "rt": "rt"}
STATIC = {"PkgConfig::JANSSON": "jansson"}

CFLAGS = ["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
          # no build-tree paths in the debug information or __FILE__
          "-ffile-prefix-map=%s=." % ROOT]


def fail(msg):
    raise SystemExit("setup.py: " + msg)


def version():
    """SPS_VERSION_STRING (what `stepscope --version` and __version__ say),
    checked against CMakeLists.txt's project() version."""
    with open(os.path.join(ROOT, "include", "stepscope.h")) as f:
        m = re.search(r'#define SPS_VERSION_STRING "([^"]+)"', f.read())
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        p = re.search(r"\bproject\(\s*stepscope\s+VERSION\s+([0-9.]+)", f.read())
    if not m or not p:
        fail("no version: SPS_VERSION_STRING in include/stepscope.h or project(stepscope VERSION ...) in "
             "CMakeLists.txt not found")
    if m.group(1) != p.group(1):
        fail("include/stepscope.h says version %s, CMakeLists.txt %s" % (m.group(1), p.group(1)))
    return m.group(1)


def readme():
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def read_targets():
    """(library, extension's own, CLI's own sources, CLI's link items) from
    CMakeLists.txt and python/CMakeLists.txt."""
    try:
        cm = cmake_sources.CMakeLists(ROOT, ["CMakeLists.txt", os.path.join("python", "CMakeLists.txt")])
        lib = cm.sources("sps_objects")
        ext = [f for f in cm.sources("sps_python") if f not in lib]
        cli, links = cm.closure("stepscope")
    except cmake_sources.CMakeParseError as e:
        fail("reading the source lists from CMakeLists.txt: %s" % e)
    return lib, ext, [f for f in cli if f not in lib], links


def pkg_config(*args):
    try:
        return subprocess.run(["pkg-config"] + list(args), check=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True).stdout.split()
    except FileNotFoundError:
        fail("pkg-config not found (install pkg-config)")
    except subprocess.CalledProcessError as e:
        fail("pkg-config %s: %s" % (" ".join(args), e.stderr.strip() or "failed"))


def static_archive(module):
    """The module's static library (Debian's libjansson.a), else None."""
    for libdir in pkg_config("--variable=libdir", module):
        for name in pkg_config("--libs-only-l", module):
            path = os.path.join(libdir, "lib%s.a" % name[2:])
            if os.path.isfile(path):
                return path
    return None


class build_ext(_build_ext):
    """The library's objects once, linked into the extension and, with the
    CLI's own, into stepscope/_bin/stepscope."""

    def build_extensions(self):
        # called by build_ext.run() once self.compiler is set up
        lib, _, cli, links = read_targets()
        self.drop_run_paths()
        lib_objects = self.compile_all(lib, [("_GNU_SOURCE", None)])
        for ext in self.extensions:
            ext.extra_objects = lib_objects + list(ext.extra_objects or [])
            # setuptools relinks an extension only when its sources or
            # depends are newer than it: the library's objects, compiled
            # again just now, must count, or a change in src/ or include/
            # would leave a stale module beside a fresh CLI
            ext.depends = list(ext.depends or []) + lib_objects
            ext.extra_compile_args = list(ext.extra_compile_args) + self.gcc_only_flags()
        _build_ext.build_extensions(self)
        self.build_cli(cli, links, lib_objects)

    def drop_run_paths(self):
        # An interpreter built with a run path into its own prefix (pyenv's
        # LDSHARED has -Wl,-rpath,~/.pyenv/versions/X/lib) would write that
        # build machine's directory into the module; the module needs no
        # libpython (abi3, resolved by the interpreter that loads it)
        def keep(arg):
            return not (arg.startswith(("-Wl,-rpath", "-Wl,-R", "-Wl,--rpath", "-Wl,--enable-new-dtags"))
                        or (arg.startswith("-R") and len(arg) > 2))
        for attr in ("linker_so", "linker_exe"):
            args = getattr(self.compiler, attr, None)
            if args:
                setattr(self.compiler, attr, [a for a in args if keep(a)])

    def gcc_only_flags(self):
        # as CMakeLists.txt: messages are cut to fixed buffers on purpose,
        # which gcc's -Wformat-truncation (in -Wall) warns about; clang has
        # no such warning and would warn about the option
        if not hasattr(self, "_sps_gcc_flags"):
            try:
                out = subprocess.run([self.compiler.compiler_so[0], "--version"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, universal_newlines=True).stdout
            except OSError:
                out = ""
            self._sps_gcc_flags = ["-Wno-format-truncation"] if "Free Software Foundation" in out else []
        return self._sps_gcc_flags

    def compile_all(self, sources, macros, include_dirs=()):
        cc = self.compiler
        extra = self.gcc_only_flags()
        out = os.path.join(self.build_temp, "sps")
        includes = [os.path.join(ROOT, "include"), os.path.join(ROOT, "src")] + list(include_dirs)
        rel = [os.path.relpath(os.path.join(ROOT, s)) for s in sources]
        for o in cc.object_filenames(rel, output_dir=out):
            os.makedirs(os.path.dirname(o), exist_ok=True)

        def one(src):
            return cc.compile([src], output_dir=out, macros=macros, include_dirs=includes,
                              extra_postargs=CFLAGS + list(extra))[0]

        jobs = self.parallel if isinstance(self.parallel, int) and self.parallel > 0 else os.cpu_count() or 1
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, rel))

    def build_cli(self, sources, links, lib_objects):
        libraries, archives, include_dirs = [], [], []
        for item in links:
            if item in SYSTEM_LIBS:
                libraries.append(SYSTEM_LIBS[item])
            elif item in STATIC:
                include_dirs.extend(f[2:] for f in pkg_config("--cflags-only-I", STATIC[item]))
                archive = static_archive(STATIC[item])
                if archive:
                    archives.append(archive)
                else:  # no static library: linked dynamically, and the tag says so
                    libraries.extend(n[2:] for n in pkg_config("--libs-only-l", STATIC[item]))
            else:
                fail("CMakeLists.txt links %s into stepscope; setup.py does not know how to (see SYSTEM_LIBS, "
                     "STATIC)" % item)
        defines = [("_GNU_SOURCE", None),
                   # the hook and the package, relative to stepscope/_bin/
                   ("SPS_AUTO_INSTALL_REL", '"../_hook"'), ("SPS_PYTHON_INSTALL_REL", '"../.."')]
        objects = self.compile_all(sources, defines, include_dirs)
        pkg_dir = self.get_ext_fullpath("stepscope._stepscope")
        bin_dir = os.path.join(os.path.dirname(pkg_dir), "_bin")
        self.compiler.link_executable(objects + lib_objects + archives, "stepscope", output_dir=bin_dir,
                                     libraries=libraries, extra_preargs=["-Wl,--as-needed"])


class build_py(_build_py):
    """The startup hook, python/auto/sitecustomize.py, into the package as
    stepscope/_hook/ (a directory `stepscope run` puts first on PYTHONPATH,
    so it holds nothing else)."""

    def run(self):
        # the package is built afresh each time: a file left in the
        # persistent build-pip/ tree by an earlier build (one since
        # removed from python/stepscope) would otherwise be shipped
        shutil.rmtree(os.path.join(self.build_lib, "stepscope"), ignore_errors=True)
        _build_py.run(self)
        hook = os.path.join(self.build_lib, "stepscope", "_hook")
        self.mkpath(hook)
        self.copy_file(os.path.join(ROOT, "python", "auto", "sitecustomize.py"), hook)

    def get_outputs(self, include_bytecode=1):
        return _build_py.get_outputs(self, include_bytecode) + [
            os.path.join(self.build_lib, "stepscope", "_hook", "sitecustomize.py")]


cmdclass = {"build_ext": build_ext, "build_py": build_py}

try:
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

    class bdist_wheel(_bdist_wheel):
        """cp38-abi3 (one wheel for every CPython 3.8+), on the platform
        its ELF files justify (tools/pip/elf_tag.py)."""

        def get_tag(self):
            python, abi, plat = _bdist_wheel.get_tag(self)
            if python.startswith("cp"):
                python, abi = "cp38", "abi3"
            platform = sysconfig.get_platform()
            if platform.startswith("linux-") and not self.plat_name_supplied:
                plat = self._elf_platform(platform.split("-", 1)[1])
            return python, abi, plat

        def _elf_platform(self, arch):
            if getattr(self, "_sps_plat", None):
                return self._sps_plat
            files = []
            for d, _, names in os.walk(self.bdist_dir):
                files.extend(os.path.join(d, n) for n in names if elf_tag.is_elf(os.path.join(d, n)))
            if not files:
                fail("no ELF files in %s to tag the wheel by" % self.bdist_dir)
            tag, why = elf_tag.platform_tag(files, arch)
            for w in why:
                print("setup.py: wheel tagged %s: %s" % (tag, w))
            self._sps_plat = tag
            return tag

    cmdclass["bdist_wheel"] = bdist_wheel
except ImportError:
    if {"bdist_wheel", "dist_info"} & set(sys.argv):
        fail("building a wheel needs the wheel package, which this Python lacks (Debian: apt-get install "
             "python3-wheel, and a venv made with --system-site-packages; elsewhere: pip install wheel)")

_, ext_sources, _, _ = read_targets()

setup(
    name="stepscope",
    version=version(),
    description="Where each step of a training loop spends its time: a C step profiler, its Python module "
                "and the stepscope command",
    long_description=readme(),
    long_description_content_type="text/markdown",
    package_dir={"": "python"},
    packages=["stepscope"],
    ext_modules=[Extension(
        "stepscope._stepscope",
        sources=ext_sources,
        include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src")],
        define_macros=[("Py_LIMITED_API", "0x03080000"), ("_GNU_SOURCE", None)],
        py_limited_api=True,
        extra_compile_args=CFLAGS,
        # export PyInit__stepscope only (see python/CMakeLists.txt)
        extra_link_args=["-Wl,--version-script=" + os.path.join(ROOT, "python", "src", "exports.map"),
                         "-Wl,-Bsymbolic"],
        libraries=["pthread", "dl", "m"],
    )],
    entry_points={"console_scripts": ["stepscope = stepscope.__main__:main"]},
    data_files=[("share/man/man1", ["docs/stepscope.1"])],
    python_requires=">=3.8",
    cmdclass=cmdclass,
    # setuptools' build tree, apart from CMake's build/
    options={"build": {"build_base": "build-pip"}},
)
