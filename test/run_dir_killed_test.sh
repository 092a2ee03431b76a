#!/bin/sh
# run_dir_killed_test.sh STEPSCOPE WORKLOAD - `stepscope run` killed twice
# in a row loses neither the last report nor a killed run's records.
#
# A run that finds records and no report.json in DIR (a `stepscope run`
# killed before its report) rebuilds that run's report.json from them, in
# one line, before setting it aside in DIR/.previous: so .previous always
# holds the run just before, with a report, and every run that recorded
# gets one.  A killed run whose records hold nothing readable never
# replaces a .previous that has a report.
#
# The held runs' workloads wait on a fifo after their steps, so nothing
# here depends on timing.
set -u
stepscope=$1 workload=$2
command -v python3 >/dev/null || { echo "SKIP: python3 (reads report.json) not installed"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/sps-killed-XXXXXX") || exit 1
trap '[ -n "$held" ] && kill "$held" 2>/dev/null; rm -rf "$t"' EXIT
export STEPSCOPE_RUN_DIR= STEPSCOPE_OUT= STEPSCOPE_DISABLE=
. "$(dirname "$0")/run_dir_lib.sh"
want_listing=".stepscope.lock capture.bin records report.html report.json steps.csv steps.jsonl timeline.csv trace.json "

# the held commands: each marks $t/ready, then waits on $t/fifo
printf '"%s" --steps "$1" && : >"%s/ready" && read x <"%s/fifo"\n' "$workload" "$t" "$t" >"$t/steps.sh"
# a process killed after it created its record, before it wrote a byte
printf ': >"$STEPSCOPE_RUN_DIR/records/4242-0.sps" && : >"%s/ready" && read x <"%s/fifo"\n' "$t" "$t" >"$t/empty.sh"
# a command killed before anything in it recorded
printf ': >"%s/ready" && read x <"%s/fifo"\n' "$t" "$t" >"$t/nothing.sh"

rebuilt_line() { echo "stepscope: run: $1: the earlier run had no report (killed?): rebuilt report.json from its records before setting it aside in $1/.previous"; }

d=$t/out
# --- A reports; B is killed ---------------------------------------------
"$stepscope" run -q -o "$d" -- "$workload" --steps 3 || failed "run A"
start_held "$d" "$t/steps.sh" 5
kill_held
b_records=$(records_sum "$d/records")
[ ! -e "$d/report.json" ] && [ "$(steps_of "$d/.previous/report.json")" = 3 ] &&
    ok "B killed: no report.json in DIR, A's in .previous" || failed "B killed: $(listing "$d")"

# --- C: B's report rebuilt before B is set aside; C is killed too --------
start_held "$d" "$t/steps.sh" 7
if [ "$(cat "$t/held.err")" = "$(rebuilt_line "$d")" ]; then
    ok "C: one line says B's report.json was rebuilt"
else failed "C's line: '$(cat "$t/held.err")'"; echo "  want: '$(rebuilt_line "$d")'"; fi
[ -f "$d/.previous/report.json" ] && [ "$(steps_of "$d/.previous/report.json")" = 5 ] &&
    [ "$(records_sum "$d/.previous/records")" = "$b_records" ] && [ ! -e "$d/report.json" ] &&
    ok "C running: .previous holds B's rebuilt report.json (B's 5 steps) and B's records, byte for byte" ||
    failed "C running: .previous: $(listing "$d/.previous" 2>&1), $(steps_of "$d/.previous/report.json") steps"
kill_held
c_records=$(records_sum "$d/records")

# --- D: C's report rebuilt the same way; D ends normally -----------------
start_held "$d" "$t/steps.sh" 4
[ "$(cat "$t/held.err")" = "$(rebuilt_line "$d")" ] && ok "D: the same line for C" ||
    failed "D's line: '$(cat "$t/held.err")'"
[ "$(steps_of "$d/.previous/report.json")" = 7 ] && [ "$(records_sum "$d/.previous/records")" = "$c_records" ] &&
    ok "D running: .previous holds C's rebuilt report.json (C's 7 steps) and C's records" ||
    failed "D running: $(steps_of "$d/.previous/report.json") steps in .previous"
release
[ "$(cat "$t/held.err")" = "$(rebuilt_line "$d")" ] || failed "D: stderr after its end: $(cat "$t/held.err")"
[ "$rc" = 0 ] && [ "$(steps_of "$d/report.json")" = 4 ] && [ "$(listing "$d")" = "$want_listing" ] &&
    ok "D: its own 4 steps, nothing aside" || failed "D: exit $rc, $(listing "$d"), $(steps_of "$d/report.json") steps"

# --- killed before recording anything: the .previous report stays -------
d2=$t/early
"$stepscope" run -q -o "$d2" -- "$workload" --steps 2 || failed "run A2"
a2_report=$(sum "$d2/report.json")
# K0 created its record and was killed before writing it
start_held "$d2" "$t/empty.sh"
kill_held
[ "$(sum "$d2/.previous/report.json")" = "$a2_report" ] || failed "K0 killed: .previous is not A2's"
# K1: nothing readable in K0's records: they go, .previous (A2's) stays
start_held "$d2" "$t/nothing.sh"
want="stepscope: run: $d2: the earlier run had no report and no readable record (killed before it recorded?): "
want_end="; removed its leftovers, and $d2/.previous keeps the run before it, with its report"
line=$(cat "$t/held.err")
if [ "$(wc -l <"$t/held.err")" = 1 ] && [ "$want" = "$(echo "$line" | cut -c1-${#want})" ] &&
    [ "${line%"$want_end"}" != "$line" ]; then
    ok "K1: one line says K0's unreadable leftovers are removed and .previous kept"
else failed "K1's line: '$line'"; echo "  want: '$want...$want_end'"; fi
[ "$(sum "$d2/.previous/report.json")" = "$a2_report" ] && [ ! -e "$d2/.previous.older" ] &&
    [ ! -e "$d2/records/4242-0.sps" ] && [ ! -e "$d2/report.json" ] &&
    ok "K1 running: .previous still A2's report, byte for byte; K0's empty record gone" ||
    failed "K1 running: $(listing "$d2"); .previous: $(listing "$d2/.previous")"
kill_held
# K2: K1 recorded nothing at all: .previous (A2's) stays, no line
start_held "$d2" "$t/steps.sh" 3
[ ! -s "$t/held.err" ] && [ "$(sum "$d2/.previous/report.json")" = "$a2_report" ] && [ ! -e "$d2/.previous.older" ] &&
    ok "K2 running: after a run that recorded nothing, .previous still A2's, no line" ||
    failed "K2 running: '$(cat "$t/held.err")' $(listing "$d2")"
release
[ "$rc" = 0 ] && [ "$(steps_of "$d2/report.json")" = 3 ] && [ "$(listing "$d2")" = "$want_listing" ] &&
    ok "K2: its own 3 steps, nothing aside" || failed "K2: exit $rc, $(listing "$d2")"

# --- killed with its report rebuilt, then one killed before recording ----
# (the second leaves .previous (B3's, rebuilt) and .previous.older (A3's):
# both go once the next run has its report)
d3=$t/twice
"$stepscope" run -q -o "$d3" -- "$workload" --steps 2 || failed "run A3"
start_held "$d3" "$t/steps.sh" 3
kill_held
start_held "$d3" "$t/nothing.sh"
[ "$(cat "$t/held.err")" = "$(rebuilt_line "$d3")" ] || failed "C3's line: '$(cat "$t/held.err")'"
kill_held
start_held "$d3" "$t/steps.sh" 4
[ ! -s "$t/held.err" ] && [ "$(steps_of "$d3/.previous/report.json")" = 3 ] &&
    ok "D3 running: after a run that recorded nothing, .previous still B3's rebuilt report, no line" ||
    failed "D3 running: '$(cat "$t/held.err")' $(listing "$d3")"
release
[ "$rc" = 0 ] && [ "$(steps_of "$d3/report.json")" = 4 ] && [ "$(listing "$d3")" = "$want_listing" ] &&
    ok "D3: its own 4 steps, neither .previous nor .previous.older left" || failed "D3: exit $rc, $(listing "$d3")"

exit $fail
