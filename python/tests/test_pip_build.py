"""The pip build's helpers (tools/pip/): the source lists read from
CMakeLists.txt, and the wheel's platform tag read from ELF files, each
checked against its real counterpart (the CMake targets; readelf).  The
build and install themselves are pip_install_test.sh's (ctest
python_pip_install)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, STEPSCOPE_BIN

sys.path.insert(0, str(ROOT / "tools" / "pip"))
import cmake_sources  # noqa: E402
import elf_tag  # noqa: E402

import stepscope  # noqa: E402

CMAKE_FILES = ["CMakeLists.txt", "python/CMakeLists.txt"]


def test_cli_sources_follow_the_linked_libraries():
    cm = cmake_sources.CMakeLists(str(ROOT), CMAKE_FILES)
    files, external = cm.closure("stepscope")
    lib = cm.sources("sps_objects")
    # its own, then sps_compare's, sps_report's (through sps_compare),
    # sps_live's and stepscope_static's objects, each once
    for f in ("tools/cli/main.c", "tools/cli/prom_http.c", "src/compare/compare.c", "src/render/html.c",
              "src/live/peek.c", "src/recorder.c"):
        assert f in files
    assert len(files) == len(set(files))
    assert set(lib) <= set(files)
    assert {"PkgConfig::JANSSON", "${CMAKE_DL_LIBS}", "m"} <= set(external)
    # every one is a link item setup.py knows (SYSTEM_LIBS, STATIC): a new
    # one must be taught to it, or the pip build stops naming it.
    # libmicrohttpd is none: --serve loads it at run time (prom_http.c)
    assert set(external) <= {"Threads::Threads", "${CMAKE_DL_LIBS}", "m", "dl", "pthread", "rt",
                             "PkgConfig::JANSSON"}
    ext = cm.sources("sps_python")
    assert ext[0] == "python/src/module.c" and ext[-len(lib):] == lib


def test_every_cli_source_is_listed():
    # a .c file added to tools/cli/ but to no list would be missing from
    # both builds: CMake and pip compile the same CLI sources
    cm = cmake_sources.CMakeLists(str(ROOT), CMAKE_FILES)
    files, _ = cm.closure("stepscope")
    on_disk = {"tools/cli/" + n for n in os.listdir(ROOT / "tools" / "cli") if n.endswith(".c")}
    assert sorted(on_disk - set(files)) == []


def test_pip_builds_every_library_source():
    # a source given to CMake some other way (target_sources, a variable
    # set in a loop) would be missing from the pip build: every C file
    # under src/ is reached from the CLI's target
    cm = cmake_sources.CMakeLists(str(ROOT), CMAKE_FILES)
    files, _ = cm.closure("stepscope")
    on_disk = {str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.c")}
    assert sorted(on_disk - set(files)) == []


def tree(tmp_path, cmake):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text("int a;\n")
    (tmp_path / "CMakeLists.txt").write_text(cmake)
    return str(tmp_path)


def test_parse_failures_say_what(tmp_path):
    root = tree(tmp_path, "set(LIB src/a.c src/gone.c)\nadd_library(objs OBJECT ${LIB})\n"
                          "add_executable(tool ${NOPE})\nadd_library(gen STATIC $<IF:x,y,z>)\n")
    cm = cmake_sources.CMakeLists(root, ["CMakeLists.txt"])
    with pytest.raises(cmake_sources.CMakeParseError, match=r"\$\{LIB\} lists src/gone.c, which does not exist"):
        cm.sources("objs")
    with pytest.raises(cmake_sources.CMakeParseError, match=r"tool names \$\{NOPE\}, which no set\(\) defines"):
        cm.sources("tool")
    with pytest.raises(cmake_sources.CMakeParseError, match=r"gen: cannot follow"):
        cm.sources("gen")
    with pytest.raises(cmake_sources.CMakeParseError, match=r"no add_library/add_executable\(stepscope"):
        cm.closure("stepscope")


def test_comments_and_transitive_links(tmp_path):
    root = tree(tmp_path, "add_library(base STATIC src/a.c) # src/b.c\n"
                          "add_executable(tool src/a.c)\n"
                          "target_link_libraries(tool PRIVATE mid)\nadd_library(mid STATIC src/a.c)\n"
                          "target_link_libraries(mid PUBLIC base PkgConfig::X)\n")
    cm = cmake_sources.CMakeLists(root, ["CMakeLists.txt"])
    assert cm.closure("tool") == (["src/a.c"], ["PkgConfig::X"])


def test_aliases_and_interface_libraries(tmp_path):
    # what a CMake package's exported names look like (stepscope::...)
    root = tree(tmp_path, "add_library(base STATIC src/a.c)\nadd_library(ns::base ALIAS base)\n"
                          "add_library(deps INTERFACE)\ntarget_link_libraries(deps INTERFACE m)\n"
                          "add_library(ext SHARED IMPORTED)\n"
                          "add_executable(tool src/a.c)\ntarget_link_libraries(tool PRIVATE ns::base deps ext)\n")
    cm = cmake_sources.CMakeLists(root, ["CMakeLists.txt"])
    assert cm.closure("tool") == (["src/a.c"], ["m", "ext"])
    assert cm.sources("ns::base") == ["src/a.c"]


def readelf(*args):
    if not shutil.which("readelf"):
        pytest.skip("no readelf (binutils)")
    return subprocess.run(["readelf"] + list(args), check=True, stdout=subprocess.PIPE,
                          universal_newlines=True).stdout


def test_elf_reader_agrees_with_readelf():
    so = stepscope._stepscope.__file__
    for path in (so, STEPSCOPE_BIN):
        info = elf_tag.ElfInfo(path)
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", readelf("-d", path))
        assert info.needed == needed
        versions = set(re.findall(r"Name: (\S+)\s+Flags", readelf("-V", path)))
        assert set().union(*info.versions.values()) == versions


def test_tag_of_the_module_and_of_the_cmake_cli():
    arch = os.uname().machine
    so = stepscope._stepscope.__file__
    glibc = max(int(v) for v in re.findall(r"GLIBC_2\.(\d+)", readelf("-V", so)))
    assert elf_tag.platform_tag([so], arch) == ("manylinux_2_%d_%s" % (glibc, arch), [])
    # the CMake build's CLI links libjansson.so: not a manylinux wheel's.
    # libmicrohttpd it loads at run time (dlopen): no DT_NEEDED for it
    tag, why = elf_tag.platform_tag([so, STEPSCOPE_BIN], arch)
    assert tag == "linux_" + arch
    name = os.path.basename(STEPSCOPE_BIN)
    assert "%s needs libjansson.so.4, which is not in the manylinux policy" % name in why
    assert not [w for w in why if "microhttpd" in w]
    assert not [n for n in elf_tag.ElfInfo(STEPSCOPE_BIN).needed if "microhttpd" in n]


def test_not_elf(tmp_path):
    p = tmp_path / "x"
    p.write_text("#!/bin/sh\n")
    assert not elf_tag.is_elf(str(p))
    with pytest.raises(elf_tag.ElfError, match="not an ELF file"):
        elf_tag.ElfInfo(str(p))


def test_a_run_path_of_the_build_machine_is_not_manylinux(tmp_path):
    # pyenv's LDSHARED passes -Wl,-rpath,<its prefix>/lib: a file carrying
    # such a path is not what a manylinux tag promises; $ORIGIN is
    if not shutil.which("cc"):
        pytest.skip("no cc to link the test's libraries with")
    src = tmp_path / "f.c"
    src.write_text("int f(void) { return 1; }\n")
    arch = os.uname().machine
    tags = {}
    for name, flag in (("build", "-Wl,-rpath,/opt/build-machine/lib"), ("origin", "-Wl,-rpath,$ORIGIN/lib"),
                       ("none", None)):
        out = tmp_path / ("lib%s.so" % name)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(src)] + ([flag] if flag else []), check=True)
        tags[name] = elf_tag.platform_tag([str(out)], arch)
    assert tags["build"][0] == "linux_" + arch
    assert tags["build"][1] == ["libbuild.so has the run path /opt/build-machine/lib, a directory of the build machine"]
    assert tags["origin"][0].startswith("manylinux_") and tags["origin"][1] == []
    assert tags["none"][0].startswith("manylinux_")
