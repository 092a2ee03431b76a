#!/bin/sh
# run_dir_foreign_test.sh STEPSCOPE WORKLOAD - a run directory another user
# owns is refused (its owner could swap what stepscope writes there),
# unless --allow-foreign-dir (STEPSCOPE_ALLOW_FOREIGN_DIR=1 for the
# library's STEPSCOPE_OUT) says otherwise; root's directories are not
# another user's.  The same for the directories `stepscope report` writes
# into (DIR, -o's) and run's --prom-textfile directory, with the swap a
# directory's owner could make mid-write (a link to root's directory in
# its place) planted once.  Run as root and, through setpriv, as nobody.
# Needs root (to give directories to other users) and setpriv: skips (77)
# with the reason otherwise.
set -u
stepscope=$1 workload=$2
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root to give directories to other users"; exit 77; fi
setpriv=$(command -v setpriv) || { echo "SKIP: setpriv (util-linux) not installed"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/sps-foreign-XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
chmod 0755 "$t"
export STEPSCOPE_RUN_DIR= STEPSCOPE_OUT= STEPSCOPE_DISABLE= STEPSCOPE_ALLOW_FOREIGN_DIR=
fail=0
failed() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
# as_nobody CMD...: CMD as uid and gid 65534, no other group
as_nobody() { "$setpriv" --reuid=65534 --regid=65534 --clear-groups "$@"; }
# refused WHAT RC ERRFILE UID: exit 1, one line, the owner's uid named, nothing ran
refused() {
    if [ "$2" = 1 ] && [ "$(wc -l <"$3")" = 1 ] && grep -Eq "owned by (user [^ ]+ )?\(?uid $4\)?, not by you: .*--allow-foreign-dir" "$3" &&
        [ ! -e "$t/ran" ]; then ok "$1: refused in one line"
    else failed "$1: exit $2, ran: $([ -e "$t/ran" ] && echo yes || echo no): $(cat "$3")"; fi
    rm -f "$t/ran"
}

# --- as root ---------------------------------------------------------------
mkdir "$t/theirs" && chown 65534:65534 "$t/theirs"
"$stepscope" run -q -o "$t/theirs" -- sh -c ': >"$0/ran"; exec "$1" --steps 2' "$t" "$workload" 2>"$t/err"
refused "root, -o another user's directory" $? "$t/err" 65534
"$stepscope" run -q -o "$t/theirs" --allow-foreign-dir -- "$workload" --steps 2 2>"$t/err"
rc=$?
[ "$rc" = 0 ] && [ -f "$t/theirs/report.json" ] && ok "root, --allow-foreign-dir: the run is written" ||
    failed "--allow-foreign-dir: exit $rc: $(cat "$t/err")"

mkdir -p "$t/mine/records" && chown 65534:65534 "$t/mine/records"
"$stepscope" run -q -o "$t/mine" -- sh -c ': >"$0/ran"; exec "$1" --steps 2' "$t" "$workload" 2>"$t/err"
rc=$?
refused "root, DIR/records another user's" $rc "$t/err" 65534
grep -q "mine/records: owned by" "$t/err" || failed "the line names records/: $(cat "$t/err")"

mkdir "$t/tb-theirs" && chown 65534:65534 "$t/tb-theirs"
"$stepscope" run -q -o "$t/tbrun" --tensorboard "$t/tb-theirs" -- sh -c ': >"$0/ran"' "$t" 2>"$t/err"
refused "root, --tensorboard another user's directory" $? "$t/err" 65534

mkdir "$t/out-theirs" && chown 65534:65534 "$t/out-theirs"
STEPSCOPE_OUT=$t/out-theirs "$workload" --steps 2 2>"$t/err"
grep -q "report not written: cannot use STEPSCOPE_OUT $t/out-theirs: owned by uid 65534, not by this user" "$t/err" &&
    [ ! -e "$t/out-theirs/report.json" ] && ok "root, STEPSCOPE_OUT another user's: no report, said why" ||
    failed "STEPSCOPE_OUT another user's: $(cat "$t/err")"
STEPSCOPE_ALLOW_FOREIGN_DIR=1 STEPSCOPE_OUT=$t/out-theirs "$workload" --steps 2 2>"$t/err"
[ -f "$t/out-theirs/report.json" ] && ok "root, STEPSCOPE_ALLOW_FOREIGN_DIR=1: the report is written" ||
    failed "STEPSCOPE_ALLOW_FOREIGN_DIR=1: $(cat "$t/err")"

# DIR of root's (made by the run) inside another user's directory: its
# owner could move DIR away mid-run and put a link to any directory in its
# place, and the report would be written there
mkdir "$t/parent-theirs" && chown 65534:65534 "$t/parent-theirs"
"$stepscope" run -q -o "$t/parent-theirs/out" -- sh -c ': >"$0/ran"' "$t" 2>"$t/err"
rc=$?
refused "root, -o DIR inside another user's directory" $rc "$t/err" 65534
grep -q "inside $t/parent-theirs, owned by" "$t/err" || failed "the line names the parent: $(cat "$t/err")"
"$stepscope" run -q -o "$t/parent-theirs/out2" --allow-foreign-dir -- "$workload" --steps 2 2>"$t/err"
rc=$?
[ "$rc" = 0 ] && [ -f "$t/parent-theirs/out2/report.json" ] && ok "root, --allow-foreign-dir: DIR inside it used" ||
    failed "--allow-foreign-dir inside another user's directory: exit $rc: $(cat "$t/err")"
for mode in 0777 1777; do
    mkdir "$t/open$mode" && chmod "$mode" "$t/open$mode"
    "$stepscope" run -q -o "$t/open$mode/out" -- sh -c ': >"$0/ran"' "$t" 2>"$t/err"
    rc=$?
    if [ "$mode" = 0777 ]; then
        if [ "$rc" = 1 ] && [ "$(wc -l <"$t/err")" = 1 ] && [ ! -e "$t/ran" ] &&
            grep -q "inside $t/open0777, which every user may write (no sticky bit)" "$t/err"; then
            ok "root, -o DIR inside a directory all may write: refused in one line"
        else failed "-o inside a 0777 directory: exit $rc: $(cat "$t/err")"; fi
    else
        [ "$rc" = 0 ] && [ -e "$t/ran" ] && ok "root, -o DIR inside a sticky directory all may write (as /tmp): used" ||
            failed "-o inside a 1777 directory: exit $rc: $(cat "$t/err")"
    fi
    rm -f "$t/ran"
done
mkdir "$t/tb-parent" && chown 65534:65534 "$t/tb-parent"
"$stepscope" run -q -o "$t/tbrun2" --tensorboard "$t/tb-parent/tb" -- sh -c ': >"$0/ran"' "$t" 2>"$t/err"
refused "root, --tensorboard DIR inside another user's directory" $? "$t/err" 65534

# --- report and --prom-textfile: the same rule --------------------------------
# a run of root's, and a copy of it in a directory nobody owns (nb/out,
# nobody's too); vict is root's, beside it
"$stepscope" run -q -o "$t/src" -- "$workload" --steps 2 2>"$t/err" || failed "the run to report: $(cat "$t/err")"
mkdir "$t/nb" && cp -r "$t/src" "$t/nb/out" && cp -r "$t/src" "$t/vict" && chown -R 65534:65534 "$t/nb"
rm -f "$t/nb/out/report.html" "$t/nb/out/steps.csv" "$t/vict/report.html" "$t/vict/steps.csv"
# untouched WHAT DIR: none of report's files appeared in DIR
untouched() {
    if [ ! -e "$2/report.html" ] && [ ! -e "$2/steps.csv" ] && [ -z "$(ls "$2" | grep -e '\.tfevents\.' -e '^x\.')" ]; then
        ok "$1: nothing written in $2"
    else failed "$1: written in $2: $(ls "$2")"; fi
}
"$stepscope" report "$t/nb/out" 2>"$t/err"
refused "root, report DIR another user's" $? "$t/err" 65534
untouched "root, report DIR another user's" "$t/nb/out"
# the swap the owner of nb can make while root writes, planted once: out
# is a link to root's vict when report looks at it
mv "$t/nb/out" "$t/nb/out.x" && ln -s "$t/vict" "$t/nb/out" && chown -h 65534:65534 "$t/nb/out"
"$stepscope" report "$t/nb/out" 2>"$t/err"
refused "root, report DIR a link in another user's directory" $? "$t/err" 65534
grep -q "inside $t/nb, owned by" "$t/err" || failed "the line names nb: $(cat "$t/err")"
untouched "root, report DIR a link in another user's directory" "$t/vict"
for fmt in html tensorboard csv; do
    case $fmt in html) o=$t/nb/out/x.html ;; tensorboard) o=$t/nb/out/tb ;; csv) o=$t/nb/out ;; esac
    "$stepscope" report "$t/src" --format $fmt -o "$o" 2>"$t/err"
    refused "root, report --format $fmt -o in another user's directory" $? "$t/err" 65534
    untouched "root, report --format $fmt -o in another user's directory" "$t/vict"
    [ ! -e "$t/vict/tb" ] || failed "report --format tensorboard: $t/vict/tb made"
done
rm "$t/nb/out" && mv "$t/nb/out.x" "$t/nb/out"
"$stepscope" report "$t/nb/out" --allow-foreign-dir 2>"$t/err"
rc=$?
[ "$rc" = 0 ] && [ -f "$t/nb/out/report.html" ] && ok "root, report --allow-foreign-dir: written" ||
    failed "report --allow-foreign-dir: exit $rc: $(cat "$t/err")"
"$stepscope" report "$t/nb/out" --format summary >/dev/null 2>"$t/err" && ok "root, report --format summary (nothing written): read" ||
    failed "report --format summary of another user's directory: $(cat "$t/err")"
"$stepscope" run -q -o "$t/promrun" --prom-textfile "$t/nb/m.prom" -- sh -c ': >"$0/ran"' "$t" 2>"$t/err"
refused "root, --prom-textfile in another user's directory" $? "$t/err" 65534
grep -q -- "--prom-textfile $t/nb/m.prom: its directory $t/nb: owned by" "$t/err" || failed "the line names the file and nb: $(cat "$t/err")"
[ ! -e "$t/nb/m.prom" ] || failed "--prom-textfile written in nb"
as_nobody "$stepscope" report "$t/nb/out" --format html -o "$t/nb/y.html" 2>"$t/err" && [ -f "$t/nb/y.html" ] &&
    ok "nobody, report into its own directory: written" || failed "nobody, report into its own: $(cat "$t/err")"

# --- as nobody ---------------------------------------------------------------
mkdir "$t/roots" && chmod 0777 "$t/roots"
as_nobody "$stepscope" run -q -o "$t/roots" -- "$workload" --steps 2 2>"$t/err"
rc=$?
[ "$rc" = 0 ] && [ -f "$t/roots/report.json" ] && ok "nobody, -o a directory of root's: used" ||
    failed "nobody in root's directory: exit $rc: $(cat "$t/err")"
mkdir "$t/other" && chown 65533:65533 "$t/other" && chmod 0777 "$t/other"
as_nobody "$stepscope" run -q -o "$t/other" -- sh -c ': >"$0/ran"' "$t" 2>"$t/err"
refused "nobody, -o uid 65533's directory" $? "$t/err" 65533
mkdir "$t/nobodys" && chown 65534:65534 "$t/nobodys"
as_nobody "$stepscope" run -q -o "$t/nobodys" -- "$workload" --steps 2 2>"$t/err"
rc=$?
[ "$rc" = 0 ] && [ -f "$t/nobodys/report.json" ] && ok "nobody, -o its own directory: used" ||
    failed "nobody in its own directory: exit $rc: $(cat "$t/err")"

exit $fail
