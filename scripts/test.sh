#!/bin/sh
# test.sh - the whole test suite, three ways:
#   build/        gcc, the normal build: every test
#   build-asan/   clang with AddressSanitizer + UndefinedBehaviorSanitizer: every test
#   build-tsan/   clang with ThreadSanitizer: the tests of threading code
#                 (TSan defers signal delivery, which the CLI tests rely on)
# Ends with one "N passed, N failed" line over all three.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc)
passed=0
failed=0

run_suite() { # dir, cmake args..., then ctest args after "--"
    dir=$1
    shift
    cfg=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do cfg="$cfg $1"; shift; done
    [ $# -gt 0 ] && shift
    echo "== $dir:$cfg" >&2
    # shellcheck disable=SC2086
    cmake -S . -B "$dir" $cfg >/dev/null
    cmake --build "$dir" -j"$jobs" >/dev/null
    log="$dir/ctest.log"
    set +e
    (cd "$dir" && ctest --output-on-failure "$@") >"$log" 2>&1
    set -e
    cat "$log"
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

run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc
run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DSPS_SANITIZE=address,undefined
run_suite build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DSPS_SANITIZE=thread -- -L threads

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
