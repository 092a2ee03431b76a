#!/bin/sh
# install-deps.sh - install the Debian 12 packages stepscope builds and tests
# with.  Runs apt-get only when something is missing.
set -eu

# python3-dev builds the Python module; python3-pytest and python3-torch test
# it; python3-venv and python3-pip test the documented pip install of it,
# from the sdist python3-build makes;
# libmicrohttpd12 serves `stepscope run --serve` (loaded at run time: no
# -dev package is needed to build), and prometheus (its server and
# promtool) tests it; bash-completion tests the completion with
# its helpers and says where to install it, shellcheck lints it, mandoc,
# groff and man-db's lexgrog check the man page; protobuf-compiler and
# python3-protobuf decode the TensorBoard event files (test/tensorboard_test.py)
PACKAGES="build-essential cmake pkg-config clang libclang-rt-14-dev libjansson-dev libmicrohttpd12 python3-psutil chromium
          python3-dev python3-pytest python3-torch python3-venv python3-pip python3-build prometheus
          bash-completion shellcheck mandoc groff-base man-db protobuf-compiler python3-protobuf"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-deps: need root (or sudo) to install:$missing" >&2
    exit 1
fi
echo "install-deps: installing$missing" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
