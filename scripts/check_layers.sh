#!/bin/sh
# check_layers.sh - data flows one way: a file never includes a header of a
# layer above its own.  Run by ctest (test "layers"); prints each upward
# include and exits 1 when there is one.
#
#   usage: scripts/check_layers.sh [SOURCE_DIR [BUILD_DIR]]
#
# With BUILD_DIR it also checks the calls themselves (an include is not
# needed to call a function declared in stepscope.h): no object file of a
# layer uses an sps* symbol that only a higher layer's object defines
# (nm on the objects CMake built).
#
# The layers, lowest first (the data flow: records -> model -> analysis ->
# renderers):
#   0  the recorder and what it stands on: src/*.[ch] (recorder, clock,
#      stats, crc32, errors, record_format.h), src/platform/, include/
#   1  the machine: src/sources/, src/gpu/, src/sampler/, the Linux sources
#      (src/platform/linux/source_*.c and the proc source's proc_*.[ch]),
#      src/capture.[ch]
#   2  src/model/     records -> Run
#   3  src/analysis/  what the Run means
#   4  src/report/    the report model, its builder and reader
#   5  src/render/, src/live/, src/compare/   what a person reads
#   6  tools/         the CLI
# A layer may include its own and any lower layer's headers.  A folder that
# is not listed fails the check: give it a layer here.
set -u
root=${1:-$(dirname "$0")/..}
build=${2:-}
if [ -n "$build" ]; then
    build=$(cd "$build" && pwd) || exit 2 # before the cd below: it may be relative
fi
cd "$root" || exit 2

layer_of() {
    case "$1" in
    include/*) echo 0 ;;
    src/platform/linux/source_* | src/platform/linux/proc_*) echo 1 ;;
    src/platform/*) echo 0 ;;
    src/capture.[ch]) echo 1 ;;
    src/sources/* | src/gpu/* | src/sampler/*) echo 1 ;;
    src/model/*) echo 2 ;;
    src/analysis/*) echo 3 ;;
    src/report/*) echo 4 ;;
    src/render/* | src/live/* | src/compare/*) echo 5 ;;
    src/*/*) echo unknown ;;
    src/*) echo 0 ;;
    tools/*) echo 6 ;;
    *) echo unknown ;;
    esac
}

# Upward dependencies that are known and owned, one per line: "FILE
# UNIT" (UNIT: the header and source without their extension).  Each is a
# debt with its reason; the check still catches every new one.
known=''

# "a/b/../c/./d" -> "a/c/d"
normalise() {
    echo "$1" | awk -F/ '{
        n = 0
        for (i = 1; i <= NF; i++) {
            if ($i == "." || $i == "") continue
            if ($i == ".." && n > 0) { n--; continue }
            part[++n] = $i
        }
        s = part[1]
        for (i = 2; i <= n; i++) s = s "/" part[i]
        print s
    }'
}

bad=0
files=$(find src tools -name '*.[ch]' | sort)
for f in $files; do
    fl=$(layer_of "$f")
    if [ "$fl" = unknown ]; then
        echo "layers: $f: its folder has no layer (add it to scripts/check_layers.sh)"
        bad=1
        continue
    fi
    dir=$(dirname "$f")
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        case "$inc" in
        ../* | ./*) target=$(normalise "$dir/$inc") ;;
        *)
            if [ -e "$dir/$inc" ]; then
                target=$(normalise "$dir/$inc")
            elif [ -e "src/$inc" ]; then
                target="src/$inc"
            elif [ -e "include/$inc" ]; then
                target="include/$inc"
            else
                continue # a system or generated header
            fi
            ;;
        esac
        il=$(layer_of "$target")
        [ "$il" = unknown ] && il=99
        if [ "$il" -gt "$fl" ]; then
            if printf '%s\n' "$known" | grep -qx "$f ${target%.[ch]}"; then
                continue
            fi
            echo "layers: $f (layer $fl) includes $target (layer $il): a lower layer must not call up"
            bad=1
        fi
    done
done
# The calls: every object's undefined sps* symbols against the layer of the
# object that defines them.
if [ -n "$build" ]; then
    syms=$(mktemp)
    trap 'rm -f "$syms"' EXIT
    nobj=0
    for o in $(find "$build/CMakeFiles" \( -path '*.dir/src/*.c.o' -o -path '*.dir/tools/*.c.o' \) | sort); do
        src=${o#*.dir/}
        src=${src%.o}
        [ -e "$src" ] || continue # left in the build tree by a file since moved or removed
        l=$(layer_of "$src")
        [ "$l" = unknown ] && continue
        nobj=$((nobj + 1))
        nm -P "$o" | awk -v s="$src" -v l="$l" '{ print s, l, $1, $2 }' >>"$syms"
    done
    if [ "$nobj" -eq 0 ]; then
        echo "layers: no object files under $build/CMakeFiles: build first"
        bad=1
    elif ! awk '
        FNR == NR { known[$1 " " $2] = 1; next }
        $4 != "U" && $4 ~ /^[A-Z]$/ { if (!($3 in def) || $2 < def[$3]) { def[$3] = $2; where[$3] = $1 } }
        $4 == "U" && $3 ~ /^sps/ { use[++n] = $0 }
        END {
            bad = 0
            for (i = 1; i <= n; i++) {
                split(use[i], u, " ")
                unit = where[u[3]]
                sub(/\.c$/, "", unit)
                if ((u[3] in def) && def[u[3]] > u[2] && !((u[1] " " unit) in known)) {
                    printf "layers: %s (layer %s) calls %s, defined in %s (layer %s): a lower layer must not call up\n",
                           u[1], u[2], u[3], where[u[3]], def[u[3]]
                    bad = 1
                }
            }
            exit bad
        }' - "$syms" <<EOF_KNOWN; then
$known
EOF_KNOWN
        bad=1
    fi
fi

if [ "$bad" -ne 0 ]; then
    echo "layers: FAILED (see the layer table at the top of scripts/check_layers.sh)"
    exit 1
fi
echo "layers: every include${build:+ and call} points down or sideways ($(echo "$files" | wc -l) files)"
