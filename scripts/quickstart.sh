#!/bin/sh
# quickstart.sh - install what stepscope needs, build it, and profile the
# bundled example (an MLP trained in plain C) with `stepscope run`.
# Leaves the report in stepscope-out/ and prints the summary.
set -eu
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "built: build/stepscope, build/libstepscope.{so,a}, build/tiny_train" >&2
./build/stepscope run -o stepscope-out -- ./build/tiny_train
