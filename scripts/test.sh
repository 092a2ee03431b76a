#!/bin/sh
# test.sh - the whole test suite, three ways:
#   build/        gcc, the normal build: every test
#   build-asan/   clang with AddressSanitizer + UndefinedBehaviorSanitizer: every test
#   build-tsan/   clang with ThreadSanitizer: the tests of threading code
#                 (TSan defers signal delivery, which the CLI tests rely on);
#                 it builds only what they need (the target threads_tests)
# ctest runs the tests of a build in parallel (SPS_TEST_JOBS of them at a
# time, default twice the cores: most tests spend their time waiting on a
# workload they started).  The sanitizer builds size their longest
# workloads down by SPS_TEST_SCALE (test/CMakeLists.txt).
# Ends with each build's time, its slowest tests and one
# "N passed, N failed" line over all three.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc)
test_jobs=${SPS_TEST_JOBS:-$((2 * jobs))}
passed=0
failed=0
timings=""

now() { date +%s; }

run_suite() { # dir, cmake args..., then "--build" build args, then "--" ctest args
    dir=$1
    shift
    cfg=""
    while [ $# -gt 0 ] && [ "$1" != "--" ] && [ "$1" != "--build" ]; do cfg="$cfg $1"; shift; done
    build=""
    if [ $# -gt 0 ] && [ "$1" = "--build" ]; then
        shift
        while [ $# -gt 0 ] && [ "$1" != "--" ]; do build="$build $1"; shift; done
    fi
    [ $# -gt 0 ] && shift
    echo "== $dir:$cfg" >&2
    t0=$(now)
    # shellcheck disable=SC2086
    cmake -S . -B "$dir" $cfg >/dev/null
    # shellcheck disable=SC2086
    cmake --build "$dir" -j"$jobs" $build >/dev/null
    t1=$(now)
    log="$dir/ctest.log"
    set +e
    (cd "$dir" && ctest --output-on-failure -j"$test_jobs" "$@") >"$log" 2>&1
    set -e
    t2=$(now)
    cat "$log"
    timings="$timings$dir: build $((t1 - t0)) s, tests $((t2 - t1)) s; slowest:
$(slowest "$log")
"
    line=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1)
    total=$(echo "$line" | sed -E 's/.* out of ([0-9]+).*/\1/')
    bad=$(echo "$line" | sed -E 's/.*, ([0-9]+) tests? failed.*/\1/')
    if [ -z "$line" ]; then
        echo "test.sh: $dir: ctest did not report a result" >&2
        failed=$((failed + 1))
        return
    fi
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
run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc
run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DSPS_SANITIZE=address,undefined
run_suite build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DSPS_SANITIZE=thread \
    --build --target threads_tests -- -L threads

printf '%s' "$timings"
echo "all: $(($(now) - start)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
