#!/bin/sh
# test.sh - the whole test suite, three ways:
#   build/        gcc, the normal build: every test
#   build-asan/   clang with AddressSanitizer + UndefinedBehaviorSanitizer: every test
#   build-tsan/   clang with ThreadSanitizer: the tests of threading code
#                 (TSan defers signal delivery, which the CLI tests rely on);
#                 it builds only what they need (the target threads_tests)
# The sanitizer builds compile while the gcc build's tests run (those
# spend much of their time waiting on the workloads they start).  ctest
# runs the tests of a build in parallel, SPS_TEST_JOBS at a time (default
# twice the cores); tests that cannot share the machine say so in
# test/CMakeLists.txt (RUN_SERIAL).  The sanitizer builds size their
# longest workloads down by SPS_TEST_SCALE (test/CMakeLists.txt).
# Ends with each build's time, its ten slowest tests and one
# "N passed, N failed" line over all three.  Each test's own output, with
# the time of each of its cases, is in DIR/Testing/Temporary/LastTest.log.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc)
test_jobs=${SPS_TEST_JOBS:-$((2 * jobs))}
passed=0
failed=0

GCC="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc"
ASAN="-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DSPS_SANITIZE=address,undefined"
TSAN="-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DSPS_SANITIZE=thread"

now() { date +%s; }

# build DIR CMAKE_ARGS [BUILD_ARGS]: configure and build; the seconds it
# took go to DIR/build.seconds, a failure's output to stderr
build() {
    t0=$(now)
    mkdir -p "$1"
    # shellcheck disable=SC2086
    if ! { cmake -S . -B "$1" $2 && cmake --build "$1" -j"$jobs" ${3:-}; } >"$1/build.log" 2>&1; then
        cat "$1/build.log" >&2
        echo "test.sh: $1: the build failed" >&2
        return 1
    fi
    echo $(($(now) - t0)) >"$1/build.seconds"
}

# run_tests DIR [CTEST_ARGS]: ctest, its log to DIR/ctest.log and stdout;
# adds to passed and failed, and notes the times
run_tests() {
    dir=$1
    shift
    t0=$(now)
    log="$dir/ctest.log"
    set +e
    (cd "$dir" && ctest --output-on-failure -j"$test_jobs" "$@") >"$log" 2>&1
    set -e
    echo $(($(now) - t0)) >"$dir/test.seconds"
    cat "$log"
    line=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "test.sh: $dir: ctest did not report a result" >&2
        failed=$((failed + 1))
        return
    fi
    total=$(echo "$line" | sed -E 's/.* out of ([0-9]+).*/\1/')
    bad=$(echo "$line" | sed -E 's/.*, ([0-9]+) tests? failed.*/\1/')
    passed=$((passed + total - bad))
    failed=$((failed + bad))
}

# The ten slowest tests of a ctest log ("  12.34 s  name"), from ctest's own
# per-test lines ("3/37 Test #12: name ....   Passed    7.14 sec").
slowest() {
    sed -nE 's/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: ([^ ]+) .* ([0-9]+\.[0-9]+) sec$/\2 \1/p' "$1" |
        sort -rn | head -n 10 | awk '{ printf "  %7.2f s  %s\n", $1, $2 }'
}

start=$(now)
for dir in build build-asan build-tsan; do
    rm -f "$dir/build.seconds" "$dir/test.seconds"
done
echo "== build:$GCC" >&2
build build "$GCC"
# the sanitizer builds, one after the other, beside the gcc tests
(build build-asan "$ASAN" && build build-tsan "$TSAN" "--target threads_tests") &
sanitizer_builds=$!
run_tests build
if ! wait "$sanitizer_builds"; then
    failed=$((failed + 1))
fi
if [ -f build-asan/build.seconds ]; then
    echo "== build-asan:$ASAN" >&2
    run_tests build-asan
fi
if [ -f build-tsan/build.seconds ]; then
    echo "== build-tsan:$TSAN" >&2
    run_tests build-tsan -L threads
fi

for dir in build build-asan build-tsan; do
    [ -f "$dir/test.seconds" ] || continue
    echo "$dir: build $(cat "$dir/build.seconds") s, tests $(cat "$dir/test.seconds") s; slowest:"
    slowest "$dir/ctest.log"
done
echo "all: $(($(now) - start)) s (the sanitizer builds ran beside build/'s tests)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
