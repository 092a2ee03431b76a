# run_dir_lib.sh - what the run directory tests share (sourced by
# run_dir_lock_test.sh and run_dir_killed_test.sh): the tally, report and
# record checksums, and a `stepscope run` held on a fifo so that nothing
# in them depends on timing.  Needs $stepscope and $t (a private scratch
# directory) set, and sets $held, $rc and $fail.
fail=0
held=
failed() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
steps_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"]["count"])' "$1" 2>/dev/null; }
sum() { cat "$@" | sha256sum | cut -d' ' -f1; }
records_sum() { (cd "$1" && ls -- *.sps | sort && sum ./*.sps); }
listing() { (cd "$1" && ls -A | tr '\n' ' '); }

# start_held DIR SCRIPT [ARG]: `stepscope run -q -o DIR -- sh SCRIPT ARG`
# in the background; returns once SCRIPT has marked $t/ready and waits on
# $t/fifo ($held: stepscope's pid, its stderr in $t/held.err)
start_held() {
    rm -f "$t/ready" "$t/fifo" && mkfifo "$t/fifo"
    "$stepscope" run -q -o "$1" -- sh "$2" "${3:-0}" 2>"$t/held.err" &
    held=$!
    while [ ! -e "$t/ready" ]; do
        kill -0 "$held" 2>/dev/null || { failed "the held run ended early: $(cat "$t/held.err")"; exit 1; }
        sleep 0.05
    done
}
# release: let the held workload end; wait for stepscope; $rc its status
release() { echo go >"$t/fifo"; wait "$held"; rc=$?; held=; }
# kill_held: `kill -9` stepscope; its workload got SIGTERM (its
# parent-death signal); had it run on, this ends it (the fifo opened
# read-write never blocks)
kill_held() {
    kill -KILL "$held"
    wait "$held" 2>/dev/null
    { echo go >&3; } 3<>"$t/fifo"
    held=
}
