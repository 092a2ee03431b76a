#!/bin/sh
# make_corpus.sh BUILD - the fuzz harnesses' seed corpus (fuzz/corpus/),
# made again from real runs: the bundled examples and the suite's C
# workloads under `stepscope run` (and `stepscope merge`), with rings of 16
# events so that each record holds wrapped rings and stays small.  Needs a
# build of the suite (BUILD/stepscope, BUILD/tiny_train,
# BUILD/test_workload, BUILD/rank_sim, and BUILD/python with torch for the
# torch-ops seed).
# Replaces the seeds it makes (seed-*); the regression inputs added by
# hand (crash-*, see docs/fuzzing.md) are kept.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: make_corpus.sh BUILD}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

STEPSCOPE_RING_EVENTS=16 STEPSCOPE_STEP_EVENTS=16 STEPSCOPE_VALUE_EVENTS=16
export STEPSCOPE_RING_EVENTS STEPSCOPE_STEP_EVENTS STEPSCOPE_VALUE_EVENTS

# run NAME CMD...: `stepscope run` of CMD into $work/NAME (its exit status
# is the workload's, which may be a signal's on purpose)
run() {
    name=$1
    shift
    case $1 in
    --*) ;; # stepscope run's options, then --
    *) set -- -- "$@" ;;
    esac
    "$build/stepscope" run -q -o "$work/$name" "$@" >/dev/null 2>&1 || true
    [ -f "$work/$name/report.json" ] || { echo "make_corpus.sh: $name: no report.json" >&2; exit 1; }
}
run tiny "$build/tiny_train" --steps 30 --print-every 0
run fork "$build/test_workload" --steps 12 --micro 3 --warmup 2 --fork 2
run killed "$build/test_workload" --steps 8 --die-at 5
run ranks "$build/rank_sim" --ranks 2 --steps 10 --offset-ns 25000 --error-ns 800
# two nodes merged: records/merge.tsv and a merged report.json
STEPSCOPE_HOSTNAME=nodea run node-a "$build/rank_sim" --ranks 2 --world 4 --steps 6 --offset-ns 25000 --error-ns 800
STEPSCOPE_HOSTNAME=nodeb run node-b "$build/rank_sim" --ranks 2 --first-rank 2 --world 4 --steps 6 \
    --offset-ns 25000 --error-ns 800
"$build/stepscope" merge -q "$work/node-a" "$work/node-b" -o "$work/merged" >/dev/null 2>&1
# the deep-capture window of a PyTorch run: a torch-ops file (needs torch
# and the Python module of the build)
reports="tiny fork killed ranks merged"
if PYTHONPATH="$build/python" /usr/bin/python3 -c 'import torch, stepscope' 2>/dev/null; then
    PYTHONPATH="$build/python" run torch --torch-profile 2:4 -- /usr/bin/python3 "$here/../examples/torch_train.py" \
        --epochs 1 --points 200
    reports="$reports torch"
else
    echo "make_corpus.sh: no torch for /usr/bin/python3: the torch-ops seed is left as it was" >&2
fi

# GPU zones on two streams and the default one over the suite's fake
# libcuda (needs BUILD/fakes and the Python module of the build): a
# record with GPU-span events (format version 2)
gpu_script='
import ctypes, os, stepscope
fake = ctypes.CDLL(os.environ["STEPSCOPE_LIBCUDA"])
fake.fake_cuda_stream_advance.argtypes = [ctypes.c_void_p, ctypes.c_double]
fake.fake_cuda_stream_complete.argtypes = [ctypes.c_void_p, ctypes.c_long]
for i in range(12):
    with stepscope.step():
        for name, stream in (("fwd", 0xA000), ("copy", 0xB000), ("opt", None)):
            with stepscope.gpu_zone(name, stream or 0):
                pass
            fake.fake_cuda_stream_complete(stream, 1 + (i == 0 and name == "fwd"))
            fake.fake_cuda_stream_advance(stream, 0.25 + i)
            fake.fake_cuda_stream_complete(stream, 1)
stepscope.gpu_wait(10)
'
gpu=
if [ -f "$build/fakes/libfake_cuda.so" ] && PYTHONPATH="$build/python" /usr/bin/python3 -c 'import stepscope' 2>/dev/null; then
    STEPSCOPE_LIBCUDA="$build/fakes/libfake_cuda.so" PYTHONPATH="$build/python" run gpu /usr/bin/python3 -c "$gpu_script"
    gpu=gpu
else
    echo "make_corpus.sh: no fake libcuda or Python module in $build: the GPU seed is left as it was" >&2
fi

for h in record report compare peek merge; do
    mkdir -p "$here/corpus/$h"
    if [ -z "$gpu" ] && [ -f "$here/corpus/$h/seed-gpu.sps" ]; then
        mv "$here/corpus/$h/seed-gpu.sps" "$work/keep-$h-seed-gpu.sps"
    fi
    rm -f "$here/corpus/$h"/seed-*
    if [ -f "$work/keep-$h-seed-gpu.sps" ]; then
        mv "$work/keep-$h-seed-gpu.sps" "$here/corpus/$h/seed-gpu.sps"
    fi
done
for name in $reports; do
    cp "$work/$name/report.json" "$here/corpus/report/seed-$name.json"
    cp "$work/$name/report.json" "$here/corpus/compare/seed-$name.json"
done
# one record line (the last: a rank aligned by its measured offset), on
# fuzz.sps, the record fuzz_merge puts beside it
{
    grep -v '^record' "$work/merged/records/merge.tsv"
    grep '^record' "$work/merged/records/merge.tsv" | tail -n 1 | sed 's/^record\t[^\t]*\t/record\tfuzz.sps\t/'
} >"$here/corpus/merge/seed-merge.tsv"
if [ -d "$work/torch" ]; then
    mkdir -p "$here/corpus/torch_ops"
    rm -f "$here/corpus/torch_ops"/seed-*
    cp "$work/torch/records"/torch-ops-*.tsv "$here/corpus/torch_ops/seed-torch.tsv"
fi
# one record of each run but the fork's child: the smallest record is over
# a MiB (a 1 MiB name table, a 58 KiB histogram per zone), nearly all
# zeros, which git stores in a few KiB
for name in tiny fork killed ranks $gpu; do
    set -- "$work/$name/records"/*.sps
    cp "$1" "$here/corpus/record/seed-$name.sps"
    cp "$1" "$here/corpus/peek/seed-$name.sps"
done
# the JSON readers' dictionary: JSON's own tokens and every key the seeds
# hold, so the fuzzer reaches the members the reader walks
{
    echo '# report.json tokens for fuzz_report and fuzz_compare (fuzz/make_corpus.sh writes it)'
    for t in '{' '}' '[' ']' ',' ':' 'true' 'false' 'null' '-1' '1e308' '-0.0' '18446744073709551616' \
        'NaN' '\u0000' '\ud800' '\"'; do
        printf '"%s"\n' "$(printf '%s' "$t" | sed 's/\\/\\\\/g; s/"/\\"/g')"
    done
    cat "$here/corpus/report"/seed-*.json | grep -o '"[A-Za-z_0-9]*":' | sort -u | sed 's/"/\\"/g; s/^/"/; s/$/"/'
} >"$here/report.dict"
du -sh "$here/corpus"/*
