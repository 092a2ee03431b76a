#!/bin/sh
# run_dir_links_test.sh STEPSCOPE WORKLOAD - nothing outside the run
# directory is written or removed, whatever links somebody planted in it.
#
# Victims: a directory of files (one of them a 0600 file, one named like a
# record) outside every directory stepscope is given.  Links to them are
# planted at every name stepscope writes in the run directory (the
# outputs, records/, .previous, the lock, steps.jsonl), at the
# predictable temporary names older versions used (NAME.tmp-PID and
# NAME.tmp.PID for a range of pids), at the record names of the next
# pids, at STEPSCOPE_OUT, at -o itself and at --prom-textfile; then
# `stepscope run`, `report`, `merge` and a library process with
# STEPSCOPE_RUN_DIR or STEPSCOPE_OUT run there.  After each: every
# victim's content, size, mtime and inode are as they were, and the
# command either wrote real files in place of the links or refused with
# one clear line.
set -u
stepscope=$1 workload=$2
command -v python3 >/dev/null || { echo "SKIP: python3 (plants the links and reads report.json) not installed"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/sps-links-XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
export STEPSCOPE_RUN_DIR= STEPSCOPE_OUT= STEPSCOPE_DISABLE=
fail=0
failed() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }

victim=$t/victim
mkdir -p "$victim/empty" "$victim/sub"
printf 'victim file\n' >"$victim/file"
printf 'root only\n' >"$victim/secret" && chmod 0600 "$victim/secret"
printf 'not a record\n' >"$victim/123-0.sps"
printf '{"victim": 1}\n' >"$victim/report.json"
printf 'x\n' >"$victim/sub/events.out.tfevents.1.h.1.1.stepscope"
mkfifo "$victim/fifo"   # stands for a device: what is written into one is not undone
# name type size mtime inode of each, then each file's checksum
state() { (cd "$victim" && find . -printf '%p %y %s %T@ %i\n' | sort && find . -type f -exec sha256sum {} + | sort); }
state >"$t/before"
victims_intact() {
    state >"$t/after"
    if cmp -s "$t/before" "$t/after"; then ok "$1: every victim as it was"; else
        failed "$1: a victim changed:"; diff "$t/before" "$t/after" | head -20
        cp "$t/after" "$t/before"; fi   # later checks judge only their own commands
}

outputs="report.json report.html steps.csv timeline.csv trace.json steps.jsonl capture.bin"
# plant_names DIR: a link to a victim at every output name, at records/
# and .previous, and at the temporary names NAME.tmp-PID, NAME.tmp.PID
# (and capture.bin's, merge.tsv's) for the next 200 pids
plant_names() {
    for n in $outputs; do ln -sfn "$victim/secret" "$1/$n"; done
    ln -sfn "$victim" "$1/records"
    ln -sfn "$victim/sub" "$1/.previous"
    python3 - "$1" "$victim/file" <<'EOF'
import os, sys
d, target = sys.argv[1], sys.argv[2]
pid = os.getpid()
for p in range(pid, pid + 200):
    for n in ("report.json", "report.html", "steps.csv", "timeline.csv", "trace.json", "capture.bin", "steps.jsonl"):
        for name in ("%s.tmp-%d" % (n, p), "%s.tmp.%d" % (n, p)):
            try:
                os.symlink(target, os.path.join(d, name))
            except FileExistsError:
                pass
EOF
}
# regular_outputs DIR WHAT: every output a regular file, records/ a directory
regular_outputs() {
    bad=
    for n in $outputs; do [ -f "$1/$n" ] && [ ! -L "$1/$n" ] || bad="$bad $n"; done
    [ -d "$1/records" ] && [ ! -L "$1/records" ] || bad="$bad records"
    if [ -z "$bad" ]; then ok "$2: real files in place of the links"; else failed "$2: not regular:$bad"; fi
}
steps_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"]["count"])' "$1" 2>/dev/null; }

# --- stepscope run over a directory full of links ------------------------
d=$t/run
mkdir "$d"
plant_names "$d"
"$stepscope" run -q -o "$d" --prom-textfile "$d/metrics.prom" -- "$workload" --steps 3 2>"$t/err"
rc=$?
[ "$rc" = 0 ] || { failed "run over links: exit $rc"; cat "$t/err"; }
regular_outputs "$d" "run"
[ "$(steps_of "$d/report.json")" = 3 ] && ok "run: report.json holds the run's 3 steps" || failed "run: report.json: $(steps_of "$d/report.json") steps"
n=$(find "$d/records" -maxdepth 1 -type f -name '*.sps' | wc -l)
[ "$n" = 1 ] && ok "run: one record, in the real records/" || failed "run: $n records in $d/records"
[ ! -e "$d/.previous" ] && [ ! -L "$d/.previous" ] && ok "run: the planted .previous is gone" || failed "run: .previous left: $(ls -la "$d/.previous")"
victims_intact "run over links"

# the same directory again, links planted over the first run's files and
# at --prom-textfile's name
plant_names "$d"
ln -sfn "$victim/secret" "$d/metrics.prom"
"$stepscope" run -q -o "$d" --prom-textfile "$d/metrics.prom" -- "$workload" --steps 4 2>"$t/err"
rc=$?
[ "$rc" = 0 ] || { failed "second run over links: exit $rc"; cat "$t/err"; }
regular_outputs "$d" "second run"
[ "$(steps_of "$d/report.json")" = 4 ] && ok "second run: 4 steps" || failed "second run: $(steps_of "$d/report.json") steps"
[ -f "$d/metrics.prom" ] && [ ! -L "$d/metrics.prom" ] && ok "--prom-textfile: a real file in place of the link" || failed "--prom-textfile: $(ls -la "$d/metrics.prom")"
victims_intact "second run over links"

# a link at the lock's name: refused, never opened
d2=$t/locklink
mkdir "$d2"
ln -s "$victim/secret" "$d2/.stepscope.lock"
"$stepscope" run -q -o "$d2" -- "$workload" --steps 1 2>"$t/err"
rc=$?
if [ "$rc" = 1 ] && [ "$(wc -l <"$t/err")" = 1 ] && grep -q '\.stepscope\.lock: is a symbolic link' "$t/err"; then
    ok "a link at the lock's name: refused in one line"
else failed "a link at the lock's name: exit $rc: $(cat "$t/err")"; fi
victims_intact "lock link"

# a hard link at the lock's name (anyone who may write DIR can make one
# to a file of theirs; with fs.protected_hardlinks=0, to any file): the
# holder's line is never written into it
d2=$t/lockhard
mkdir "$d2"
ln "$victim/file" "$d2/.stepscope.lock"
"$stepscope" run -q -o "$d2" -- "$workload" --steps 1 2>"$t/err"
rc=$?
if [ "$rc" = 1 ] && [ "$(wc -l <"$t/err")" = 1 ] && grep -q '\.stepscope\.lock: has 2 names' "$t/err"; then
    ok "a hard link at the lock's name: refused in one line"
else failed "a hard link at the lock's name: exit $rc: $(cat "$t/err")"; fi
victims_intact "lock hard link"

# -o naming a link to a directory: refused, nothing written there
ln -s "$victim/sub" "$t/olink"
"$stepscope" run -q -o "$t/olink" -- "$workload" --steps 1 2>"$t/err"
rc=$?
if [ "$rc" = 1 ] && grep -q "olink: is a symbolic link: name the directory itself (-o $victim/sub)" "$t/err"; then
    ok "-o LINK: refused, naming the directory"
else failed "-o LINK: exit $rc: $(cat "$t/err")"; fi
"$stepscope" run -q -o "$t/olink/" -- "$workload" --steps 1 2>"$t/err"
[ $? = 1 ] && grep -q "is a symbolic link" "$t/err" && ok "-o LINK/: refused too" || failed "-o LINK/: $(cat "$t/err")"
"$stepscope" run -q -o "$t/tbrun" --tensorboard "$t/olink" -- "$workload" --steps 1 2>"$t/err"
[ $? = 1 ] && grep -q "tensorboard $t/olink: is a symbolic link" "$t/err" && ok "--tensorboard LINK: refused" ||
    failed "--tensorboard LINK: $(cat "$t/err")"
victims_intact "-o LINK"

# records/ swapped for a link while the run lasts (after every check at
# its start): the records stepscope cuts to size when the workload ends
# (a killed process's record, uncut, lies in the target) are not followed
d3=$t/swapped
mkdir -p "$t/killed" "$d3"
STEPSCOPE_RUN_DIR=$t/killed "$workload" --steps 3 --die-at 2 2>/dev/null
mkdir "$victim/records" && cp "$t/killed/records/"*.sps "$victim/records/" && state >"$t/before"
mkfifo "$t/fifo"
"$stepscope" run -q --no-sample -o "$d3" -- sh -c '"$0" --steps 2 && : >"$1/ready" && read x <"$1/fifo"' \
    "$workload" "$t" 2>"$t/err" &
held=$!
while [ ! -e "$t/ready" ]; do kill -0 "$held" 2>/dev/null || break; sleep 0.05; done
mv "$d3/records" "$d3/records.real" && ln -s "$victim/records" "$d3/records"
echo go >"$t/fifo"
wait "$held"
victims_intact "records/ swapped for a link during the run"

# --- stepscope report over links -----------------------------------------
for n in report.html steps.csv timeline.csv trace.json; do ln -sfn "$victim/secret" "$d/$n"; done
plant_names_tmp_only() { python3 - "$1" "$victim/file" <<'EOF'
import os, sys
d, target = sys.argv[1], sys.argv[2]
pid = os.getpid()
for p in range(pid, pid + 200):
    for n in ("report.html", "steps.csv", "timeline.csv", "trace.json", "x.html"):
        for name in ("%s.tmp-%d" % (n, p), "%s.tmp.%d" % (n, p)):
            try:
                os.symlink(target, os.path.join(d, name))
            except FileExistsError:
                pass
EOF
}
plant_names_tmp_only "$d"
"$stepscope" report "$d" 2>"$t/err" || { failed "report over links: $(cat "$t/err")"; }
regular_outputs "$d" "report"
ln -s "$victim/secret" "$d/x.html"
"$stepscope" report "$d" --format html -o "$d/x.html" 2>"$t/err" || failed "report -o LINK: $(cat "$t/err")"
[ -f "$d/x.html" ] && [ ! -L "$d/x.html" ] && ok "report -o LINK: a real file in place of the link" || failed "report -o LINK"
victims_intact "report over links"

# a link to a FIFO (or a device) at an output's name: replaced, never
# opened for writing (a reader waits on the FIFO to catch any write)
cat "$victim/fifo" >"$t/fifo-got" &
reader=$!
ln -sfn "$victim/fifo" "$d/report.html"
"$stepscope" report "$d" 2>"$t/err" || failed "report over a FIFO link: $(cat "$t/err")"
kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
[ -f "$d/report.html" ] && [ ! -L "$d/report.html" ] && [ ! -s "$t/fifo-got" ] &&
    ok "report: a link to a FIFO at report.html replaced, nothing written into the FIFO" ||
    failed "report over a FIFO link: $(wc -c <"$t/fifo-got") bytes went into the FIFO"
victims_intact "report over a FIFO link"

# --- stepscope merge: OUT a link to an empty directory -------------------
ln -s "$victim/empty" "$t/mlink"
"$stepscope" merge "$d" -o "$t/mlink" -q 2>"$t/err"
rc=$?
[ "$rc" = 1 ] && [ -d "$victim/empty" ] && grep -q "mlink: is a symbolic link" "$t/err" && ok "merge -o LINK: refused (exit 1)" ||
    failed "merge -o LINK: exit $rc: $(cat "$t/err")"
"$stepscope" merge "$d" -o "$t/merged" -q 2>"$t/err" || failed "merge: $(cat "$t/err")"
[ -f "$t/merged/records/merge.tsv" ] && [ -z "$(find "$t/merged/records" -name '.*')" ] &&
    ok "merge: merge.tsv in place, no temporary left" || failed "merge: $(ls -la "$t/merged/records")"
victims_intact "merge"

# --- the library: STEPSCOPE_RUN_DIR ---------------------------------------
lr=$t/lib-run
mkdir "$lr"
ln -s "$victim" "$lr/records"
STEPSCOPE_RUN_DIR=$lr "$workload" --steps 2 2>"$t/err"
rc=$?
[ "$rc" = 0 ] && grep -q "records: it is a symbolic link (not followed); recording in memory" "$t/err" &&
    ok "library: records/ a link: recorded in memory, said why" || failed "library records link: exit $rc: $(cat "$t/err")"
victims_intact "library records link"

# record names of the next pids planted as links: the record is a fresh file
lr2=$t/lib-run2
mkdir -p "$lr2/records"
python3 - "$lr2/records" "$victim/123-0.sps" <<'EOF'
import os, sys
d, target = sys.argv[1], sys.argv[2]
pid = os.getpid()
for p in range(pid, pid + 2000):
    os.symlink(target, os.path.join(d, "%d-0.sps" % p))
EOF
STEPSCOPE_RUN_DIR=$lr2 "$workload" --steps 2 2>"$t/err"
rc=$?
n=$(find "$lr2/records" -type f -name '*.sps' | wc -l)
[ "$rc" = 0 ] && [ "$n" = 1 ] && [ ! -s "$t/err" ] && ok "library: planted record names skipped, one fresh record" ||
    failed "library planted names: exit $rc, $n records: $(cat "$t/err")"
victims_intact "library record names"

# --- the library: STEPSCOPE_OUT -------------------------------------------
ln -s "$victim/sub" "$t/outlink"
STEPSCOPE_OUT=$t/outlink "$workload" --steps 2 2>"$t/err"
rc=$?
[ "$rc" = 0 ] && grep -q "report not written: cannot use STEPSCOPE_OUT $t/outlink: is a symbolic link" "$t/err" &&
    ok "STEPSCOPE_OUT a link: report not written, said why" || failed "STEPSCOPE_OUT link: exit $rc: $(cat "$t/err")"
o=$t/out
mkdir "$o"
for n in report.json report.html steps.csv timeline.csv trace.json; do ln -s "$victim/secret" "$o/$n"; done
plant_names_tmp_only "$o"
STEPSCOPE_OUT=$o "$workload" --steps 2 2>"$t/err"
[ -f "$o/report.json" ] && [ ! -L "$o/report.json" ] && [ ! -e "$o/report.html" ] && [ ! -L "$o/report.html" ] &&
    ok "STEPSCOPE_OUT over links: report.json real, the derived links removed" || failed "STEPSCOPE_OUT over links: $(ls -la "$o" | head)"
# a rank's directory planted as a link
mkdir "$t/ranked" && ln -s "$victim/sub" "$t/ranked/rank-1"
STEPSCOPE_OUT=$t/ranked RANK=1 WORLD_SIZE=2 "$workload" --steps 2 2>"$t/err"
grep -q "rank-1: is a symbolic link" "$t/err" && ok "STEPSCOPE_OUT rank-N a link: not followed" ||
    failed "STEPSCOPE_OUT rank link: $(cat "$t/err")"
victims_intact "STEPSCOPE_OUT"

exit $fail
