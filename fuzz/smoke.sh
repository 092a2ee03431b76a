#!/bin/sh
# smoke.sh [SECONDS] - build the fuzz harnesses with libFuzzer,
# AddressSanitizer (leak checking on) and UndefinedBehaviorSanitizer in
# build-fuzz/ (clang), then run each for SECONDS (default 60) from its seed
# corpus, one after the other.  Fails on the first crash, leak, timeout,
# out-of-memory or sanitizer report, leaving the input that did it in
# build-fuzz/artifacts/ (docs/fuzzing.md says how to keep it as a
# regression test).  Prints each harness's executions and coverage.
# CI runs it (.ci/run); SPS_FUZZ_BUILD_DIR moves the build.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${SPS_FUZZ_BUILD_DIR:-build-fuzz}
if ! command -v clang >/dev/null 2>&1; then
    echo "smoke.sh: clang is not installed: the harnesses need its libFuzzer" >&2
    exit 1
fi
mkdir -p "$build"
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DSPS_SANITIZE=address,undefined -DSPS_FUZZ=ON -DSPS_BUILD_TESTS=OFF &&
    cmake --build "$build" -j"$(nproc)" --target fuzz_harnesses; } >"$build/fuzz-build.log" 2>&1; then
    cat "$build/fuzz-build.log" >&2
    echo "smoke.sh: the harnesses did not build" >&2
    exit 1
fi
artifacts="$build/artifacts"
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a stack for every UBSan report, and no ASan report left unfailed
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0

for h in record report compare peek torch_ops merge; do
    # the record readers' seeds are real records, over a MiB each
    case $h in
    record | peek) opts="-max_len=2097152" ;;
    report | compare) opts="-dict=fuzz/report.dict" ;;
    *) opts="" ;;
    esac
    mkdir -p "$work/$h"
    log="$build/fuzz-$h.log"
    # new inputs go to the scratch corpus, the seeds stay as they are
    # shellcheck disable=SC2086
    if ! "$build/fuzz_$h" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/$h-" $opts "$work/$h" "fuzz/corpus/$h" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "smoke.sh: fuzz_$h failed; its input is in $artifacts/ (full log: $log)" >&2
        exit 1
    fi
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
    echo "fuzz_$h: $(echo "$done_line" | sed -E 's/^#([0-9]+)[[:space:]]+DONE[[:space:]]+(cov: [0-9]+) (ft: [0-9]+).*/\1 executions, \2, \3/') in ${seconds}s"
done
