#!/bin/sh
# pip_install_test.sh PYTHON WORKDIR - the install documented in
# docs/python.md: `pip install --no-build-isolation ./python` into a venv
# made with --system-site-packages, then import it from outside the tree
# and record a zone into a report.  Exit 77 (skipped, with the reason) when
# this Python has no venv or pip, or the venv has no setuptools to build
# with (pip would fetch it from the network, which the test never uses).
set -eu
py=$1
work=$2
# the installed package must be the one imported: a PYTHONPATH inherited
# from the caller (a build's python/ directory) would come first
unset PYTHONPATH PYTHONHOME
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"
if ! "$py" -m venv --system-site-packages "$work/venv" >"$work/venv.log" 2>&1; then
    echo "pip install test skipped: $py -m venv failed (install python3-venv):"
    tail -n 3 "$work/venv.log"
    exit 77
fi
if ! "$work/venv/bin/python" -m pip --version >/dev/null 2>&1; then
    echo "pip install test skipped: no pip in the venv (install python3-pip)"
    exit 77
fi
if ! "$work/venv/bin/python" -c 'import setuptools' >"$work/setuptools.log" 2>&1; then
    echo "pip install test skipped: the venv has no setuptools to build with (install python3-setuptools;"
    echo "  pip would fetch it from the network otherwise):"
    tail -n 1 "$work/setuptools.log"
    exit 77
fi
# --no-build-isolation: build with the system's setuptools, no index needed;
# -q keeps the compiler quiet unless it fails
if ! "$work/venv/bin/python" -m pip install -q --no-build-isolation --no-index "$src/python" >"$work/pip.log" 2>&1; then
    cat "$work/pip.log"
    if grep -q -e "No matching distribution" -e "Could not find a version" "$work/pip.log"; then
        echo "pip install test skipped: pip wanted a package from the network (see above)"
        exit 77
    fi
    exit 1
fi
cd "$work"
STEPSCOPE_OUT="$work/out" "$work/venv/bin/python" -c '
import stepscope
assert stepscope._stepscope.__file__.endswith("site-packages/stepscope/_stepscope.abi3.so"), stepscope._stepscope.__file__
with stepscope.zone("installed"):
    pass
'
grep -q '"name": "installed"' "$work/out/report.json"
# pip builds in the tree; leave it as it was
rm -rf "$src/python/build" "$src/python/stepscope.egg-info"
echo "pip install test: ok"
