#!/bin/sh
# c_package_test.sh - stepscope as a C user's build gets it.
#
# install: installs this build into a fresh prefix, then builds
# test/consumer/ four ways against that prefix alone:
#   find_package(stepscope), stepscope::stepscope         (shared)
#   find_package(stepscope), stepscope::stepscope_static  (static)
#   pkg-config --cflags --libs stepscope                  (shared)
#   pkg-config --static --cflags --libs stepscope         (static)
# and test/consumer_cxx/ (a C++-only project) with find_package both ways,
# and runs each under the installed `stepscope run`; test/consumer_none/ (a
# project with no language enabled) runs stepscope::cli; a static link by
# hand without the --undefined option says on stderr, under STEPSCOPE_OUT,
# that it writes no report; then moves the prefix and builds from it again.
# subdirectory: builds test/consumer/ with stepscope's source tree inside
# it (add_subdirectory, as FetchContent does) and runs both programs under
# the CLI built there.
# Each run's report.json must hold the consumer's steps and zones.  The
# static builds must not need libstepscope.so (no DT_NEEDED) and must keep
# the STEPSCOPE_OUT exporter (the linker option the package carries); the
# shared ones must load the library of the prefix (or of the project).
#
# usage: c_package_test.sh install|subdirectory BUILD_DIR SOURCE_DIR CMAKE C_COMPILER VERSION [SANITIZE]
# SANITIZE is the build's -fsanitize list (empty for none): an instrumented
# library links only into an instrumented program.
# Exit 0 passed, 1 failed, 77 skipped (a tool it needs is missing).
set -u

mode=$1 build=$2 src=$3 cmake=$4 cc=$5 version=$6 sanitize=${7:-}
case $mode in
install | subdirectory) ;;
*)
    echo "c_package_test.sh: unknown mode '$mode' (install or subdirectory)" >&2
    exit 2
    ;;
esac

for tool in "$cmake" pkg-config readelf ldd /usr/bin/python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool not found (needed to build and check the consumer)"
        exit 77
    fi
done

work=$build/c_package_test_$mode
rm -rf "$work"
mkdir -p "$work"
log=$work/log.txt
: >"$log"
failed=0
passed=0

fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
pass() { echo "ok: $*"; passed=$((passed + 1)); }
# run a command, its output into the log; on failure show the log's tail
step() {
    what=$1
    shift
    echo "+ $*" >>"$log"
    if "$@" >>"$log" 2>&1; then
        return 0
    fi
    fail "$what: $*"
    tail -n 30 "$log"
    return 1
}

cflags="-Wall -Wextra -Werror"
ldflags=""
if [ -n "$sanitize" ]; then
    cflags="$cflags -fsanitize=$sanitize -fno-omit-frame-pointer"
    ldflags="-fsanitize=$sanitize"
fi

needs_libstepscope() { readelf -d "$1" 2>/dev/null | grep -q 'NEEDED.*\[libstepscope\.so'; }

# check_report FILE: the consumer's 7 steps, its zones and its value
check_report() {
    /usr/bin/python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
zones = sorted((z["name"], z["kind"], z["count"]) for z in r["zones"])
want = sorted([("consumer_step", "step", 7), ("consumer_load", "zone", 7), ("consumer_compute", "zone", 7)])
problems = []
if zones != want:
    problems.append("zones %s, expected %s" % (zones, want))
if r["steps"]["count"] != 7:
    problems.append("steps.count %s, expected 7" % r["steps"]["count"])
values = {v["name"]: v["count"] for v in r["values"]}
if values != {"consumer_loss": 7}:
    problems.append("values %s, expected consumer_loss x7" % values)
print("; ".join(problems) if problems else "7 steps; zones consumer_load, consumer_compute")
sys.exit(1 if problems else 0)
EOF
}

# check_binary LABEL LIBDIR STEPSCOPE [VAR=VALUE]: the program $work/LABEL,
# linked against the libstepscope of LIBDIR, run (with the environment
# given) under the CLI STEPSCOPE.  A shared build must load LIBDIR's
# library, never another stepscope's on this machine.
check_binary() {
    label=$1 want_libdir=$2 cli=$3 env=${4:-}
    exe=$work/$label
    name=$(echo "$label" | tr / _)
    if [ ! -x "$exe" ]; then
        fail "$label was not built"
        return
    fi
    case $label in
    *static)
        if needs_libstepscope "$exe"; then fail "$label needs libstepscope.so"; else pass "$label: no DT_NEEDED libstepscope"; fi
        # the exporter kept: STEPSCOPE_OUT alone writes a report
        if STEPSCOPE_OUT=$work/out_$name "$exe" >>"$log" 2>&1 && [ -f "$work/out_$name/report.json" ]; then
            pass "$label: STEPSCOPE_OUT wrote report.json"
        else
            fail "$label: STEPSCOPE_OUT wrote no report.json (the --undefined option lost?)"
        fi
        ;;
    *shared)
        if needs_libstepscope "$exe"; then pass "$label: DT_NEEDED libstepscope"; else fail "$label does not need libstepscope.so"; fi
        real=$(cd "$want_libdir" && pwd -P)/libstepscope.so.$version
        # shellcheck disable=SC2086 # env is one VAR=VALUE word or none
        lib=$(env $env ldd "$exe" 2>/dev/null | awk '/libstepscope\.so/ { print $3 }' | xargs -r realpath)
        if [ "$lib" = "$real" ]; then pass "$label loads $lib"; else fail "$label loads '$lib', expected $real"; fi
        ;;
    esac
    run=$work/run_$name
    # shellcheck disable=SC2086
    if env $env "$cli" run -q -o "$run" -- "$exe" >>"$log" 2>&1; then
        if out=$(check_report "$run/report.json" 2>&1); then pass "$label under stepscope run: $out"; else fail "$label under stepscope run: $out"; fi
    else
        fail "stepscope run -- $label failed"
        tail -n 20 "$log"
    fi
}

# check_consumer_ctest DIR CLI: stepscope::cli is CLI, and the consumer's
# own test (its program under stepscope::cli) wrote the report expected
check_consumer_ctest() {
    cli_path=$(cat "$1/stepscope_cli_path.txt" 2>/dev/null)
    if [ "$cli_path" = "$2" ]; then pass "stepscope::cli is $2"; else fail "stepscope::cli: '$cli_path', expected $2"; fi
    # shellcheck disable=SC2016 # $1 is sh -c's own argument
    step "the consumer's ctest (stepscope::cli run)" sh -c 'cd "$1" && ctest --output-on-failure' sh "$1"
    if out=$(check_report "$1/profile-out/report.json" 2>&1); then
        pass "the consumer's ctest under stepscope::cli: $out"
    else
        fail "the consumer's ctest under stepscope::cli: $out"
    fi
}

# ------------------------------------------------------------------ install
install_mode() {
    prefix=$work/prefix
    step "install" "$cmake" --install "$build" --prefix "$prefix" || return
    libdir=$prefix/lib
    for f in bin/stepscope include/stepscope.h lib/libstepscope.a lib/libstepscope.so lib/pkgconfig/stepscope.pc \
             lib/cmake/stepscope/stepscope-config.cmake lib/cmake/stepscope/stepscope-config-version.cmake \
             lib/cmake/stepscope/stepscope-targets.cmake; do
        if [ -e "$prefix/$f" ]; then pass "installed $f"; else fail "not installed: $f"; fi
    done
    stepscope=$prefix/bin/stepscope
    # the soname names the ABI line: MAJOR.MINOR before 1.0, MAJOR after
    soname=libstepscope.so.$(echo "$version" | awk -F. '{ if ($1 == 0) printf "0.%d", $2; else printf "%d", $1 }')
    got=$(readelf -d "$libdir/libstepscope.so" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    if [ "$got" = "$soname" ] && [ -e "$libdir/$soname" ]; then pass "soname $soname, installed"; else fail "soname '$got', expected $soname (installed too)"; fi

    # -------------------------------------------------------------- pkg-config
    # Only the prefix's own stepscope.pc: PKG_CONFIG_LIBDIR replaces the
    # default search path, so a stepscope installed on this machine cannot
    # answer.
    PKG_CONFIG_LIBDIR=$libdir/pkgconfig
    PKG_CONFIG_PATH=
    export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH
    step "pkg-config --validate" pkg-config --validate stepscope && pass "pkg-config --validate stepscope"
    modversion=$(pkg-config --modversion stepscope 2>>"$log")
    if [ "$modversion" = "$version" ]; then pass "pkg-config --modversion: $modversion"; else fail "pkg-config --modversion: '$modversion', expected $version"; fi
    # the prefix found from the file's own place: libdir is the prefix's lib
    pc_libdir=$(cd "$(pkg-config --variable=libdir stepscope)" 2>/dev/null && pwd -P)
    if [ "$pc_libdir" = "$(cd "$libdir" && pwd -P)" ]; then pass "pkg-config libdir is the prefix's"; else fail "pkg-config libdir: '$pc_libdir', expected $libdir"; fi
    static_libs=$(pkg-config --static --libs stepscope)
    for want in -lstepscope -lpthread -ldl -lm -Wl,--undefined=sps__standalone_out_linked; do
        case " $static_libs " in
        *" $want "*) pass "pkg-config --static --libs has $want" ;;
        *) fail "pkg-config --static --libs lacks $want: $static_libs" ;;
        esac
    done
    # shellcheck disable=SC2046,SC2086 # the flags are words
    step "pkg-config shared build" "$cc" -std=c11 $cflags -o "$work/pc_shared" "$src/test/consumer/consumer.c" \
        $(pkg-config --cflags --libs stepscope) $ldflags
    # libstepscope.so sits beside libstepscope.a in the prefix, and a linker
    # given -lstepscope takes the shared one: name the archive (-l:) and keep
    # everything else pkg-config --static prints, as docs/api.md shows.
    pc_static=$(pkg-config --static --libs stepscope | sed 's/-lstepscope/-l:libstepscope.a/')
    # shellcheck disable=SC2046,SC2086
    step "pkg-config static build" "$cc" -std=c11 $cflags -o "$work/pc_static" "$src/test/consumer/consumer.c" \
        $(pkg-config --cflags stepscope) $pc_static $ldflags

    # ------------------------------------------------------------ find_package
    cm_args="-DCMAKE_PREFIX_PATH=$prefix -DCMAKE_C_COMPILER=$cc -DCMAKE_BUILD_TYPE=RelWithDebInfo"
    major_minor=$(echo "$version" | cut -d. -f1-2)
    # shellcheck disable=SC2086
    step "find_package configure" "$cmake" -S "$src/test/consumer" -B "$work/cm" $cm_args \
        "-DCMAKE_C_FLAGS=$cflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" -DCONSUMER_STEPSCOPE_VERSION="$major_minor" &&
        step "find_package build" "$cmake" --build "$work/cm"
    # A C++-only project: the header as C++, the C library linked by a C++
    # linker.  Its compiler is the C compiler's partner (gcc-12: g++-12,
    # clang: clang++, cc: c++), so that a sanitizer's runtime is the
    # library's; build-essential and clang install both.
    cxx=$(echo "$cc" | sed 's/gcc\(-[0-9.]*\)\{0,1\}$/g++\1/; s/clang\(-[0-9.]*\)\{0,1\}$/clang++\1/; s/\/cc$/\/c++/')
    if [ "$cxx" != "$cc" ] && command -v "$cxx" >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        step "C++ find_package configure" "$cmake" -S "$src/test/consumer_cxx" -B "$work/cxx" \
            -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            "-DCMAKE_CXX_FLAGS=$cflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" &&
            step "C++ find_package build" "$cmake" --build "$work/cxx"
    else
        fail "no C++ compiler beside $cc (looked for $cxx)"
    fi
    # A project with neither C nor C++ enabled (project(x NONE)), which
    # FindThreads refuses: the package is still found and stepscope::cli
    # runs from the project's own test.
    # shellcheck disable=SC2016 # $1 is sh -c's own argument
    step "NONE-language find_package configure" "$cmake" -S "$src/test/consumer_none" -B "$work/none" \
        -DCMAKE_PREFIX_PATH="$prefix" &&
        step "NONE-language project's ctest (stepscope::cli --version)" \
            sh -c 'cd "$1" && ctest --output-on-failure' sh "$work/none" &&
        pass "project(x NONE): find_package(stepscope) and stepscope::cli --version"
    none_cli=$(cat "$work/none/stepscope_cli_path.txt" 2>/dev/null)
    if [ "$none_cli" = "$prefix/bin/stepscope" ]; then pass "NONE project's stepscope::cli is the prefix's"; else fail "NONE project's stepscope::cli: '$none_cli'"; fi
    # A static link by hand without the --undefined option (what neither
    # pkg-config --static nor the CMake target gives): the report writer is
    # left out, and STEPSCOPE_OUT says so on stderr instead of nothing; the
    # program's exit status stays its own.
    # shellcheck disable=SC2046,SC2086
    step "hand-linked static build (no --undefined)" "$cc" -std=c11 $cflags -o "$work/hand_static" \
        "$src/test/consumer/consumer.c" $(pkg-config --cflags stepscope) -L"$libdir" -l:libstepscope.a -lpthread \
        -ldl -lm $ldflags
    STEPSCOPE_OUT=$work/out_hand "$work/hand_static" >"$work/hand_static.out" 2>"$work/hand_static.err"
    hand_rc=$?
    hand_lines=$(grep -c "STEPSCOPE_OUT=$work/out_hand is set, but this program was linked without stepscope's report writer" "$work/hand_static.err")
    if [ "$hand_rc" -eq 0 ] && [ "$hand_lines" -eq 1 ] && grep -q "sps__standalone_out_linked" "$work/hand_static.err"; then
        pass "hand-linked static program: one stderr line says the report writer is missing, exit 0"
    else
        fail "hand-linked static program: exit $hand_rc, $hand_lines line(s) about the missing report writer:"
        cat "$work/hand_static.err"
    fi
    if env -u STEPSCOPE_OUT "$work/hand_static" 2>&1 | grep -q "report writer"; then
        fail "hand-linked static program: the line appears without STEPSCOPE_OUT"
    else
        pass "hand-linked static program: no line without STEPSCOPE_OUT"
    fi
    # An older release line is refused, which an older request does not
    # show by itself (a newer one is refused by every rule): before 1.0 each
    # minor version is its own line (SameMinorVersion: 0.2.x is not asked
    # for as 0.1), from 1.0 each major version (SameMajorVersion).
    older=$(echo "$version" | awk -F. '{ if ($1 == 0) printf "0.%d", $2 - 1; else printf "%d.0", $1 - 1 }')
    case $older in
    *-*) echo "note: $version has no older release line to refuse" ;;
    *)
        # shellcheck disable=SC2086
        if "$cmake" -S "$src/test/consumer" -B "$work/cm_refused" $cm_args -DCONSUMER_STEPSCOPE_VERSION="$older" \
            >"$work/refused.txt" 2>&1; then
            fail "find_package(stepscope $older) accepted version $version"
        elif grep -q "compatible with requested version" "$work/refused.txt" &&
            grep -q "version: $version" "$work/refused.txt"; then
            pass "find_package(stepscope $older) refuses $version"
        else
            fail "find_package(stepscope $older) failed for another reason:"
            tail -n 20 "$work/refused.txt"
        fi
        ;;
    esac

    # ------------------------------------------------------------ the programs
    # How a shared build finds the prefix's library: the CMake build gets a
    # RUNPATH to the imported library from CMake (what a CMake user's build
    # tree has); the pkg-config link line names no run path, so that build
    # runs with LD_LIBRARY_PATH set to the prefix's lib, as a program using
    # a library outside the system's directories does.
    if readelf -d "$work/cm/consumer_shared" 2>/dev/null | grep -q "R.*PATH.*$libdir"; then
        pass "cm/consumer_shared: RUNPATH has $libdir"
    else
        fail "cm/consumer_shared: no RUNPATH to $libdir"
    fi
    check_binary cm/consumer_shared "$libdir" "$stepscope"
    check_binary cm/consumer_static "$libdir" "$stepscope"
    check_binary pc_shared "$libdir" "$stepscope" "LD_LIBRARY_PATH=$libdir"
    check_binary pc_static "$libdir" "$stepscope"
    check_binary cxx/consumer_cxx_shared "$libdir" "$stepscope"
    check_binary cxx/consumer_cxx_static "$libdir" "$stepscope"
    check_consumer_ctest "$work/cm" "$stepscope"

    # --------------------------------------------------------- a moved prefix
    # Both descriptions find the prefix from their own place, so the tree
    # moved elsewhere still builds programs, which use the moved library.
    moved=$work/moved
    mv "$prefix" "$moved"
    PKG_CONFIG_LIBDIR=$moved/lib/pkgconfig
    # shellcheck disable=SC2046,SC2086
    step "pkg-config build from the moved prefix" "$cc" -std=c11 $cflags -o "$work/moved_pc_shared" \
        "$src/test/consumer/consumer.c" $(pkg-config --cflags --libs stepscope) $ldflags
    # shellcheck disable=SC2086
    step "find_package configure from the moved prefix" "$cmake" -S "$src/test/consumer" -B "$work/moved_cm" \
        -DCMAKE_PREFIX_PATH="$moved" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        "-DCMAKE_C_FLAGS=$cflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" &&
        step "find_package build from the moved prefix" "$cmake" --build "$work/moved_cm"
    ln -s "$work/moved_cm/consumer_shared" "$work/moved_cm_shared"
    check_binary moved_pc_shared "$moved/lib" "$moved/bin/stepscope" "LD_LIBRARY_PATH=$moved/lib"
    check_binary moved_cm_shared "$moved/lib" "$moved/bin/stepscope"
}

# ------------------------------------------------------------- subdirectory
# stepscope compiled inside the consumer's build, its binary directory
# named stepscope/ (no sanitizer: nothing this build made is linked).
subdirectory_mode() {
    sub=$work/sub
    step "add_subdirectory configure" "$cmake" -S "$src/test/consumer" -B "$sub" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONSUMER_STEPSCOPE_SOURCE_DIR="$src" &&
        step "add_subdirectory build" "$cmake" --build "$sub" --target consumer_shared consumer_static stepscope \
            -j"$(nproc)" || return
    for t in consumer_shared consumer_static; do
        ln -s "$sub/$t" "$work/sub_$t"
    done
    check_binary sub_consumer_shared "$sub/stepscope" "$sub/stepscope/stepscope"
    check_binary sub_consumer_static "$sub/stepscope" "$sub/stepscope/stepscope"
    check_consumer_ctest "$sub" "$sub/stepscope/stepscope"
}

"${mode}_mode"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
