#!/bin/sh
# run_dir_lock_test.sh STEPSCOPE WORKLOAD - one `stepscope run` per
# directory at a time, and an earlier run's outputs set aside, never lost.
#
# The held runs' workloads wait on a fifo after their steps, so nothing
# here depends on timing: the test writes to the fifo when it is done
# with a run in progress.
#   - a second run on a held directory is refused before its command
#     starts, in one line naming the holder; `stepscope report DIR` too;
#     the first run's report then holds its own steps, exactly;
#   - a run killed before its report leaves the earlier run's outputs in
#     DIR/.previous, byte for byte;
#   - a run whose report cannot be written says where the earlier outputs
#     are, and they are there;
#   - a command that cannot be started puts the earlier outputs back;
#   - a normal run over an earlier one leaves nothing aside.
set -u
stepscope=$1 workload=$2
command -v python3 >/dev/null || { echo "SKIP: python3 (reads report.json) not installed"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/sps-lock-XXXXXX") || exit 1
trap '[ -n "$held" ] && kill "$held" 2>/dev/null; rm -rf "$t"' EXIT
export STEPSCOPE_RUN_DIR= STEPSCOPE_OUT= STEPSCOPE_DISABLE=
. "$(dirname "$0")/run_dir_lib.sh"
d=$t/out

# the held workload makes "$1" steps, marks $t/ready and waits on $t/fifo
printf '"%s" --steps "$1" && : >"%s/ready" && read x <"%s/fifo"\n' "$workload" "$t" "$t" >"$t/hold.sh"

# --- run A: the earlier run ----------------------------------------------
"$stepscope" run -q -o "$d" -- "$workload" --steps 3 || failed "run A"
a_report=$(sum "$d/report.json") a_records=$(records_sum "$d/records")

# --- run B holds the directory -------------------------------------------
start_held "$d" "$t/hold.sh" 5
b_pid=$held
[ "$(sum "$d/.previous/report.json")" = "$a_report" ] && [ ! -e "$d/report.json" ] &&
    ok "B running: A's report.json set aside in .previous, none in DIR" || failed "B running: $(ls -A "$d" "$d/.previous")"
[ "$(records_sum "$d/.previous/records")" = "$a_records" ] && ok "B running: A's records set aside" ||
    failed "B running: A's records not in .previous/records"

"$stepscope" run -q -o "$d" -- sh -c ': >"$0/c-ran"; exec "$1" --steps 7' "$t" "$workload" 2>"$t/err"
rc=$?
want="stepscope: run: $d: in use by stepscope run pid $b_pid (sh $t/hold.sh 5), started "
if [ "$rc" = 1 ] && [ "$(wc -l <"$t/err")" = 1 ] && [ "${want}" = "$(cut -c1-${#want} "$t/err")" ] &&
    grep -q '; choose another -o$' "$t/err" && [ ! -e "$t/c-ran" ]; then
    ok "a second run: refused in one line naming the holder, before its command ran"
else
    failed "a second run: exit $rc, c-ran $([ -e "$t/c-ran" ] && echo yes || echo no)"
    echo "  got:  $(cat "$t/err")"; echo "  want: $want..."
fi
"$stepscope" report "$d" 2>"$t/err"
rc=$?
[ "$rc" = 1 ] && grep -q "^stepscope: report: $d: in use by stepscope run pid $b_pid " "$t/err" &&
    ok "report of a held directory: refused, naming the holder" || failed "report of a held directory: exit $rc: $(cat "$t/err")"
"$stepscope" report "$t/elsewhere-not-read" --format html -o "$d/page.html" 2>"$t/err"
grep -q "^stepscope: report: $d/page.html: in use by stepscope run pid $b_pid " "$t/err" &&
    ok "report -o into a held directory: refused" || failed "report -o into a held directory: $(cat "$t/err")"
"$stepscope" merge "$d" -o "$t/merged" -q 2>"$t/err"
rc=$?
[ "$rc" = 1 ] && grep -q "^stepscope: merge: $d: in use by stepscope run pid $b_pid " "$t/err" && [ ! -e "$t/merged" ] &&
    ok "merge of a held directory: refused, naming the holder" || failed "merge of a held directory: exit $rc: $(cat "$t/err")"
"$stepscope" compare "$d" "$d" 2>"$t/err" >/dev/null
rc=$?
[ "$rc" = 2 ] && grep -q "^stepscope: compare: $d: in use by stepscope run pid $b_pid .*; compare it when that run has ended$" "$t/err" &&
    ok "compare of a held directory: refused, naming the holder" || failed "compare of a held directory: exit $rc: $(cat "$t/err")"

release
[ "$rc" = 0 ] || failed "B: exit $rc: $(cat "$t/held.err")"
[ "$(steps_of "$d/report.json")" = 5 ] && ok "B's report: its own 5 steps" || failed "B's report: $(steps_of "$d/report.json") steps"
n=$(ls "$d/records" | wc -l)
[ "$n" = 1 ] && ok "B's records: its workload's one, none of A's" || failed "B's records: $(ls "$d/records")"
listing=$(cd "$d" && ls -A | tr '\n' ' ')
want_listing=".stepscope.lock capture.bin records report.html report.json steps.csv steps.jsonl timeline.csv trace.json "
[ "$listing" = "$want_listing" ] && ok "after B: no .previous, no temporary" || failed "after B: $listing"
b_report=$(sum "$d/report.json") b_records=$(records_sum "$d/records")

# --- run F is killed before its report -----------------------------------
start_held "$d" "$t/hold.sh" 2
kill_held
[ "$(sum "$d/.previous/report.json")" = "$b_report" ] && [ "$(records_sum "$d/.previous/records")" = "$b_records" ] &&
    [ ! -e "$d/report.json" ] && ok "F killed: B's report and records kept in .previous, byte for byte" ||
    failed "F killed: $(ls -A "$d" "$d/.previous")"

# --- run G: a command that cannot start puts the earlier outputs back ----
f_records=$(records_sum "$d/records")
"$stepscope" run -q -o "$d" -- "$t/no-such-command" 2>"$t/err"
rc=$?
[ "$rc" = 127 ] && [ "$(records_sum "$d/records")" = "$f_records" ] && [ "$(sum "$d/.previous/report.json")" = "$b_report" ] &&
    [ ! -e "$d/.previous.older" ] && ok "command not found: F's records back in place, B's still in .previous" ||
    failed "command not found: exit $rc: $(ls -A "$d" "$d/.previous" 2>&1 | tr '\n' ' ')"

# --- run H: a normal run over F's leftovers ------------------------------
"$stepscope" run -q -o "$d" -- "$workload" --steps 4 2>"$t/err" || failed "H: $(cat "$t/err")"
listing=$(cd "$d" && ls -A | tr '\n' ' ')
[ "$listing" = "$want_listing" ] && [ "$(steps_of "$d/report.json")" = 4 ] && [ ! -s "$t/err" ] &&
    ok "H over a killed run: its own 4 steps, nothing aside" || failed "H: $listing $(cat "$t/err")"
h_report=$(sum "$d/report.json")

# --- run E: its report cannot be written ---------------------------------
start_held "$d" "$t/hold.sh" 2
mkdir "$d/report.json"   # report.json's rename fails: EISDIR
release
if [ "$rc" = 1 ] && [ "$(wc -l <"$t/held.err")" = 2 ] && grep -q "^stepscope: run: report: $d/report.json: " "$t/held.err" &&
    grep -qx "stepscope: run: $d/.previous: the earlier run's outputs are kept here: this run wrote no report" "$t/held.err" &&
    [ "$(sum "$d/.previous/report.json")" = "$h_report" ]; then
    ok "no report: one line says where the earlier outputs are, and they are there"
else failed "no report: exit $rc: $(cat "$t/held.err")"; fi

# --- a holder on another host, days ago, with a long command line ---------
# (the lock taken by flock(1) over a file written as a run writes it)
if command -v flock >/dev/null; then
    d2=$t/elsewhere
    mkdir "$d2"
    long=$(printf 'x%.0s' $(seq 1 200))
    # an escape sequence in it is shown as '?', never sent to the terminal
    printf '4242 1700000000 otherhost\npython train.py \033[2J--tag %s\n' "$long" >"$d2/.stepscope.lock"
    rm -f "$t/fifo" && mkfifo "$t/fifo"
    flock -x "$d2/.stepscope.lock" -c "read x <'$t/fifo'" &
    held=$!
    # flock(1) holds the lock once it has started: a second taker says so
    while flock -xn "$d2/.stepscope.lock" true; do sleep 0.05; done
    TZ=UTC "$stepscope" run -q -o "$d2" -- "$workload" --steps 1 2>"$t/err"
    rc=$?
    cut=$(printf 'python train.py ?[2J--tag %s' "$long" | cut -c1-116)
    want="stepscope: run: $d2: in use by stepscope run pid 4242 on otherhost ($cut...), started 2023-11-14 22:13:20; choose another -o"
    [ "$rc" = 1 ] && [ "$(cat "$t/err")" = "$want" ] && ok "another host's holder: host, date and a cut, plain command line named" ||
        { failed "another host's holder: exit $rc"; echo "  got:  $(cat "$t/err")"; echo "  want: $want"; }
    echo go >"$t/fifo"; wait "$held"; held=
    "$stepscope" run -q -o "$d2" -- "$workload" --steps 1 2>"$t/err" && [ "$(steps_of "$d2/report.json")" = 1 ] &&
        ok "the holder gone: the directory is free (the stale file blocks nothing)" || failed "after the holder: $(cat "$t/err")"
else
    echo "skip the other-host holder: flock(1) (util-linux) not installed"
fi

# a file of the user's named .previous or .previous.older (stepscope makes
# directories there): refused in one line, never removed
d3=$t/ownfiles
"$stepscope" run -q -o "$d3" -- "$workload" --steps 2 2>"$t/err" || failed "ownfiles: first run: $(cat "$t/err")"
for n in .previous .previous.older; do
    printf 'my notes\n' >"$d3/$n"
    "$stepscope" run -q -o "$d3" -- "$workload" --steps 3 2>"$t/err"
    rc=$?
    if [ "$rc" = 1 ] && [ "$(wc -l <"$t/err")" = 1 ] && grep -q "$n: not a directory stepscope made: move it away" "$t/err" &&
        [ "$(cat "$d3/$n")" = "my notes" ] && [ "$(steps_of "$d3/report.json")" = 2 ]; then
        ok "a file of the user's at $n: refused in one line, kept, the earlier report in place"
    else failed "a file at $n: exit $rc: $(cat "$t/err"); $(ls -la "$d3")"; fi
    rm -f "$d3/$n"
done

exit $fail
