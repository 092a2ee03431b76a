#!/bin/bash
# completion_test.sh SOURCE_DIR plain|bash-completion - the bash completion
# of stepscope (tools/completion/stepscope.bash), called as bash calls it
# (COMP_WORDS, COMP_CWORD, COMP_LINE, COMP_POINT set, the function given
# the command, the word and the word before it), its COMPREPLY compared
# with what it must be: the commands, every command's options, the values
# of the options that take a fixed set, run directories of a fixture tree,
# and the workload's own completion after `stepscope run [options] [--]`.
#
# plain: bash alone.  bash-completion: with Debian's bash-completion
# helpers (_init_completion, _command_offset) loaded first; skipped (77)
# where that package is not installed.
set -u
src=${1:?usage: completion_test.sh SOURCE_DIR plain|bash-completion [BUILD_DIR CMAKE]}
mode=${2:?usage: completion_test.sh SOURCE_DIR plain|bash-completion [BUILD_DIR CMAKE]}
build=${3-} cmake=${4-}

errlog=$(mktemp)
tree=$(mktemp -d)
trap 'rm -rf "$tree" "$errlog"' EXIT

if [[ $mode == bash-completion ]]; then
    helpers=/usr/share/bash-completion/bash_completion
    if [[ ! -r $helpers ]]; then
        echo "SKIP: $helpers not found (Debian package bash-completion; scripts/install-deps.sh installs it)"
        exit 77
    fi
    # shellcheck disable=SC1090
    . "$helpers"
    declare -F _init_completion _command_offset __load_completion >/dev/null ||
        { echo "FAIL: $helpers lacks _init_completion, _command_offset or __load_completion"; exit 1; }
    # the installed completion, found by bash-completion's own loader as
    # for a stepscope installed into that prefix (XDG_DATA_DIRS)
    if [[ -n $build ]]; then
        "$cmake" --install "$build" --prefix "$tree/prefix" >"$tree/install.log" 2>&1 ||
            { echo "FAIL: cmake --install:"; tail -5 "$tree/install.log"; exit 1; }
        XDG_DATA_DIRS=$tree/prefix/share __load_completion stepscope
        [[ $(complete -p stepscope 2>/dev/null) == "complete -F _stepscope stepscope" ]] ||
            { echo "FAIL: bash-completion did not load the completion installed in $tree/prefix:" \
                "$(find "$tree/prefix" -name 'stepscope*' -path '*complet*')"; exit 1; }
        echo "installed: $(cd "$tree/prefix" && find . -path '*bash-completion*' -type f) (loaded by __load_completion)"
        complete -r stepscope
    fi
fi
# shellcheck disable=SC1091
. "$src/tools/completion/stepscope.bash" || { echo "FAIL: cannot source the completion"; exit 1; }
if [[ $mode == plain ]] && declare -F _init_completion >/dev/null; then
    echo "FAIL: plain mode has bash-completion's helpers"
    exit 1
fi
[[ $(complete -p stepscope 2>/dev/null) == "complete -F _stepscope stepscope" ]] ||
    { echo "FAIL: stepscope's completion is not registered: $(complete -p stepscope 2>&1)"; exit 1; }

passed=0 failed=0

# Split LINE as bash does for COMP_WORDS: at blanks, and at a colon (one of
# COMP_WORDBREAKS), which becomes a word of its own; a line that ends in a
# blank has an empty word last.
split_line() {
    local line=$1 w part
    COMP_WORDS=()
    for w in $line; do
        while [[ $w == *:* ]]; do
            part=${w%%:*}
            [[ -n $part ]] && COMP_WORDS+=("$part")
            COMP_WORDS+=(":")
            w=${w#*:}
        done
        [[ -n $w ]] && COMP_WORDS+=("$w")
    done
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
}

# Complete LINE with the cursor at its end; REPLY_SORTED: COMPREPLY sorted,
# one line.
complete_line() {
    COMP_LINE=$1
    COMP_POINT=${#1}
    split_line "$1"
    COMPREPLY=()
    local prev=""
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    _stepscope stepscope "${COMP_WORDS[COMP_CWORD]}" "$prev" 2>>"$errlog"
    REPLY_SORTED=$(printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort | tr '\n' ' ')
    REPLY_SORTED=${REPLY_SORTED% }
}

# expect LINE WORD...: COMPREPLY is exactly the words (in any order).
expect() {
    local line=$1
    shift
    complete_line "$line"
    local want
    want=$(printf '%s\n' "$@" | LC_ALL=C sort | tr '\n' ' ')
    want=${want% }
    if [[ $REPLY_SORTED == "$want" ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: '$line'"
        echo "  want: $want"
        echo "  got:  $REPLY_SORTED"
    fi
}

# expect_has LINE WORD...: COMPREPLY holds each word (among others).
expect_has() {
    local line=$1 w
    shift
    complete_line "$line"
    for w in "$@"; do
        if [[ " $REPLY_SORTED " == *" $w "* ]]; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            echo "FAIL: '$line' does not offer '$w' (got: ${REPLY_SORTED:0:300})"
        fi
    done
}

# ------------------------------------------------------------ commands
expect "stepscope " compare doctor help merge report run snapshot
expect "stepscope r" report run
expect "stepscope m" merge
expect "stepscope -" -h --help -V --version
expect "stepscope --v" --version
expect "stepscope help " compare doctor merge report run snapshot
expect "stepscope help r" report run
expect "stepscope nosuchcommand "

# ------------------------------------------------- each command's options
run_opts=(-o --output -q --quiet --no-live --no-stream --ring-events --ring-policy --interval
    --machine-interval --no-sample --trace-max-mb --carbon-intensity --pue --peak-flops
    --max-overhead --torch-profile --gpu-peak --no-auto --serve --prom-textfile --tensorboard --allow-foreign-dir
    -h --help)
expect "stepscope run -" "${run_opts[@]}"
expect "stepscope run --no-" --no-live --no-stream --no-sample --no-auto
expect "stepscope run -q --m" --machine-interval --max-overhead
expect "stepscope run --torch-profile 3:5 -" "${run_opts[@]}"
expect "stepscope run --serve :9464 --ring-events 1024 --p" --peak-flops --prom-textfile --pue
expect "stepscope report -" --format -o --output --from-records --trace-max-mb --allow-foreign-dir -h --help
expect "stepscope report out --format html -" --format -o --output --from-records --trace-max-mb --allow-foreign-dir -h --help
expect "stepscope compare -" --vs --skip --step --threshold --alpha --fail-on --format -o -h --help
expect "stepscope compare a b --f" --fail-on --format
expect "stepscope merge -" -o --output --max-clock-error --force --trace-max-mb -q --quiet -h --help
expect "stepscope snapshot -" --pid --wait -h --help
expect "stepscope doctor -" --json -h --help
expect "stepscope doctor --json -" --json -h --help

# ------------------------------------------------ values of fixed sets
expect "stepscope report out --format " html csv trace json summary tensorboard
expect "stepscope report --format t" trace tensorboard
expect "stepscope compare a b --format " text markdown json
expect "stepscope compare a --vs b --format m" markdown
expect "stepscope compare a b --fail-on " slower
expect "stepscope run --ring-policy " keep-latest keep-first
expect "stepscope run -q --ring-policy keep-f" keep-first
expect "stepscope run --torch-profile " auto
expect "stepscope run --gpu-peak " keep step
expect "stepscope run --gpu-peak step -q --g" --gpu-peak
# free values: nothing to offer
expect "stepscope run --ring-events "
expect "stepscope run --serve "
expect "stepscope compare a b --threshold "
expect "stepscope merge a -o b --max-clock-error "
expect "stepscope snapshot --wait "
expect_has "stepscope snapshot --pid " "$$"

# ------------------------------------------- run directories, files, dirs
# out: a run (report.json, records/, a rank's own run directory in rank-1);
# base: records only (merge reads it, report and compare need report.json);
# exp/2026/r1: a report.json two levels down (not merge's); plain: a
# directory with no run; a report file of a standalone process; a file.
mkdir -p "$tree/runs"
tree=$tree/runs
mkdir -p "$tree/out/records" "$tree/out/rank-1" "$tree/base/records" "$tree/exp/2026/r1" \
    "$tree/plain/sub" "$tree/deep/a/b/c"
touch "$tree/out/report.json" "$tree/out/rank-1/report.json" "$tree/exp/2026/r1/report.json" \
    "$tree/report-123.json" "$tree/notes.txt" "$tree/deep/a/b/c/report.json"
cd "$tree" || exit 1
# report: one DIR holding report.json; a report file only where the line
# says what to make and where (report refuses it otherwise)
expect "stepscope report " exp out
expect "stepscope report o" out
expect "stepscope report out/" out/rank-1
expect "stepscope report exp/" exp/2026
expect "stepscope report --format csv " exp out
expect "stepscope report --format csv -o x " exp out report-123.json
expect "stepscope report -o x.html --format html out/" out/rank-1 out/report.json
expect "stepscope report --format summary " exp out report-123.json
# ... and after it options only
report_opts=(--format -o --output --from-records --trace-max-mb --allow-foreign-dir -h --help)
expect "stepscope report out3 " "${report_opts[@]}"
expect "stepscope report --format html out " "${report_opts[@]}"
expect "stepscope report out -o x.html --format html o"
# -o: what the format writes (tensorboard a directory; csv a directory or
# a file; the others a file)
expect "stepscope report out --format tensorboard -o " base deep exp out plain
expect "stepscope report out --format tensorboard --output n"
expect "stepscope report out --format csv -o " base deep exp notes.txt out plain report-123.json
expect "stepscope report out --format html -o n" notes.txt
# compare: BASE NEW, or BASE... --vs NEW...; --vs once
expect "stepscope compare " exp out report-123.json
expect "stepscope compare out " exp out report-123.json
expect "stepscope compare out exp " --vs exp out report-123.json
expect "stepscope compare out base --vs " exp out report-123.json
expect "stepscope compare a --vs b " exp out report-123.json
expect "stepscope compare --skip 0 " exp out report-123.json
expect "stepscope compare --threshold 5% e" exp
compare_opts_no_vs=(--skip --step --threshold --alpha --fail-on --format -o -h --help)
expect "stepscope compare a --vs b -" "${compare_opts_no_vs[@]}"
expect "stepscope compare a b c --vs d e --" --skip --step --threshold --alpha --fail-on --format --help
expect "stepscope compare a --vs b --v"
# merge: DIR... holding records/
expect "stepscope merge " base out
expect "stepscope merge out -o "  base deep exp out plain
expect "stepscope merge out --trace-max-mb 10 b" base
expect "stepscope merge out -o merged " base
expect "stepscope merge base out/ "
expect "stepscope merge base --force o" out
expect "stepscope run -o " base deep exp out plain
expect "stepscope run -q --output p" plain
expect "stepscope run --tensorboard " base deep exp out plain
expect "stepscope report out -o n" notes.txt
expect "stepscope compare a b -o r" report-123.json
expect "stepscope run --prom-textfile no" notes.txt

# the user's glob options are theirs: failglob (an unmatched glob is an
# error) does not break the walk through directories, and stays set
shopt -s failglob
expect "stepscope report " exp out
expect "stepscope merge " base out
if shopt -q failglob; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
    echo "FAIL: failglob was reset"
fi
shopt -u failglob

# ---------------------------------------- the workload after run's options
# fakecmd: a command with a completion function of its own, which says
# what it was called with (the line from its command on: bash-completion's
# _command_offset leaves the blank before it; and whether COMP_POINT is
# still right after the word being completed)
fakecmd() { :; }
_fakecmd() {
    local line=${COMP_LINE#"${COMP_LINE%%[! ]*}"} point=bad
    [[ ${COMP_LINE:0:COMP_POINT} == *" $2" ]] && point=ok
    COMPREPLY=("w0=${COMP_WORDS[0]}" "cword=$COMP_CWORD" "cur=$2" "line=${line// /_}" "point=$point")
}
complete -F _fakecmd fakecmd
expect "stepscope run -- fakecmd x" w0=fakecmd cword=1 cur=x line=fakecmd_x point=ok
expect "stepscope run -o out -- fakecmd --a b" w0=fakecmd cword=2 cur=b line=fakecmd_--a_b point=ok
# options end at the first word that is not one (run's own parser)
expect "stepscope run -q -o out fakecmd y" w0=fakecmd cword=1 cur=y line=fakecmd_y point=ok
expect "stepscope run --serve :9464 --torch-profile 3:5 fakecmd " w0=fakecmd cword=1 cur= line=fakecmd_ point=ok
# a workload option that looks like one of run's is the workload's
expect "stepscope run -- fakecmd -o" w0=fakecmd cword=1 cur=-o line=fakecmd_-o point=ok
expect "stepscope run fakecmd --no-live -" w0=fakecmd cword=2 cur=- line=fakecmd_--no-live_- point=ok
# the command itself
expect_has "stepscope run -- fakec" fakecmd
expect_has "stepscope run -q fakec" fakecmd
expect_has "stepscope run " fakecmd bash
# a command with no completion of its own: its arguments are files
expect_has "stepscope run -- nocompletioncmd no" notes.txt

# noise on stderr other than compopt's outside readline is a bug
if grep -v "compopt: not currently executing completion function" "$errlog" | grep -q .; then
    failed=$((failed + 1))
    echo "FAIL: the completion wrote to stderr:"
    grep -v "compopt: not currently executing completion function" "$errlog" | head -5
fi

echo "completion ($mode): $passed passed, $failed failed"
[[ $failed -eq 0 ]]
