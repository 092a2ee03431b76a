# bash completion for stepscope                             -*- shell-script -*-
#
# Completes the commands, each command's options and the values of those
# that take a fixed set, directories for the options that name one, run
# directories for report and compare (holding report.json, which is what
# they read) and for merge (holding records/), as many as each command
# takes, and after `stepscope run [options] [--]` the workload's own
# command line through that command's completion.
#
# Works with bash-completion's helpers (_init_completion, _command_offset)
# and without them (plain bash: compgen and complete only).  The option
# lists are those of tools/cli/cmd_*.c; test/cli_docs_test.py keeps them,
# `stepscope CMD --help`, docs/cli.md and docs/stepscope.1 the same.

_stepscope_commands="run snapshot report compare merge doctor help"

# Each command's options; those in _stepscope_takes_value take a value.
_stepscope_opts_top="-h --help -V --version"
_stepscope_opts_run="-o --output -q --quiet --no-live --no-stream --ring-events --ring-policy
    --interval --machine-interval --no-sample --trace-max-mb --carbon-intensity --pue
    --peak-flops --max-overhead --torch-profile --gpu-peak --no-auto --serve --prom-textfile
    --tensorboard --allow-foreign-dir -h --help"
_stepscope_opts_report="--format -o --output --from-records --trace-max-mb --allow-foreign-dir -h --help"
# --resamples and --seed are accepted and ignored: not offered
_stepscope_opts_compare="--vs --skip --step --threshold --alpha --fail-on --format -o -h --help"
_stepscope_opts_merge="-o --output --max-clock-error --force --trace-max-mb -q --quiet -h --help"
_stepscope_opts_snapshot="--pid --wait -h --help"
_stepscope_opts_doctor="--json -h --help"

# Whether option $2 of command $1 takes a value (the word after it).
_stepscope_takes_value() {
    case "$1 $2" in
    "run -o" | "run --output" | "run --ring-events" | "run --ring-policy" | "run --interval" | \
        "run --machine-interval" | "run --trace-max-mb" | "run --carbon-intensity" | "run --pue" | \
        "run --peak-flops" | "run --max-overhead" | "run --torch-profile" | "run --gpu-peak" | "run --serve" | \
        "run --prom-textfile" | "run --tensorboard")
        return 0 ;;
    "report --format" | "report -o" | "report --output" | "report --trace-max-mb")
        return 0 ;;
    "compare --skip" | "compare --step" | "compare --threshold" | "compare --alpha" | \
        "compare --fail-on" | "compare --format" | "compare --resamples" | "compare --seed" | \
        "compare -o")
        return 0 ;;
    "merge -o" | "merge --output" | "merge --max-clock-error" | "merge --trace-max-mb")
        return 0 ;;
    "snapshot --pid" | "snapshot --wait")
        return 0 ;;
    esac
    return 1
}

# COMPREPLY += the words of list $1 that begin with $2.
_stepscope_add_words() {
    local w
    while IFS= read -r w; do
        COMPREPLY+=("$w")
    done < <(compgen -W "$1" -- "$2")
}

# Whether $1 is a run directory as command $2 reads it: report and
# compare read report.json (what `stepscope run` or a program with
# STEPSCOPE_OUT wrote), merge the records.
_stepscope_is_run_dir() {
    if [[ $2 == merge ]]; then
        [[ -d $1/records ]]
    else
        [[ -f $1/report.json ]]
    fi
}

# Whether directory $1 holds a run directory (for command $2) one or two
# levels down, so that completing through it can reach one.
_stepscope_leads_to_run_dir() {
    local d found=1 globs
    globs=$(shopt -p nullglob failglob) # the user's, put back below
    shopt -s nullglob
    shopt -u failglob
    for d in "$1"/*/ "$1"/*/*/; do
        if _stepscope_is_run_dir "${d%/}" "$2"; then
            found=0
            break
        fi
    done
    eval "$globs"
    return $found
}

# COMPREPLY += run directories of command $2 matching $1, and the
# directories that lead to one; with $3 = files, also report files
# (report.json, report-PID.json) that compare (and report, given what to
# make) take in place of a directory.  merge refuses a directory given
# twice: those on the line (_stepscope_given) are not offered again.
_stepscope_complete_runs() {
    local cur=$1 cmd=$2 want_files=${3-} d f g
    while IFS= read -r d; do
        if [[ $cmd == merge ]]; then
            for g in "${_stepscope_given[@]}"; do
                [[ ${d%/} == "$g" ]] && continue 2
            done
        fi
        if _stepscope_is_run_dir "$d" "$cmd" || _stepscope_leads_to_run_dir "$d" "$cmd"; then
            COMPREPLY+=("$d")
        fi
    done < <(compgen -d -- "$cur")
    if [[ $want_files == files ]]; then
        while IFS= read -r f; do
            [[ -f $f && ${f##*/} == report*.json ]] && COMPREPLY+=("$f")
        done < <(compgen -f -- "$cur")
    fi
    compopt -o filenames 2>/dev/null
}

# _stepscope_complete_paths -d|-f CUR: directories, or files (and
# directories), one word each however they are spelt
_stepscope_complete_paths() {
    local p
    while IFS= read -r p; do
        COMPREPLY+=("$p")
    done < <(compgen "$1" -- "$2")
    compopt -o filenames 2>/dev/null
}

_stepscope_complete_pids() {
    if declare -F _pids >/dev/null; then
        _pids # bash-completion's: from ps, matching $cur
    else
        local p pids=()
        for p in /proc/[0-9]*; do
            [[ -d $p ]] && pids+=("${p#/proc/}")
        done
        _stepscope_add_words "${pids[*]}" "$1"
    fi
}

# COMPREPLY for the value of option $2 of command $1, the word being $3.
# Returns 1 when the value is free text (nothing to offer).  report's -o
# follows the line's --format (_stepscope_format, from
# _stepscope_scan_line): tensorboard takes a directory only; csv a
# directory or a file, the others a file (compgen -f: the files and the
# directories on the way to one).
_stepscope_complete_value() {
    local cmd=$1 opt=$2 cur=$3
    case "$cmd $opt" in
    "run -o" | "run --output" | "run --tensorboard" | "merge -o" | "merge --output")
        _stepscope_complete_paths -d "$cur" ;;
    "report -o" | "report --output")
        if [[ ${_stepscope_format-} == tensorboard ]]; then
            _stepscope_complete_paths -d "$cur"
        else
            _stepscope_complete_paths -f "$cur"
        fi ;;
    "compare -o" | "run --prom-textfile")
        _stepscope_complete_paths -f "$cur" ;;
    "run --ring-policy")
        _stepscope_add_words "keep-latest keep-first" "$cur" ;;
    "run --torch-profile")
        _stepscope_add_words "auto" "$cur" ;;
    "run --gpu-peak")
        _stepscope_add_words "keep step" "$cur" ;;
    "report --format")
        _stepscope_add_words "html csv trace json summary tensorboard" "$cur" ;;
    "compare --format")
        _stepscope_add_words "text markdown json" "$cur" ;;
    "compare --fail-on")
        _stepscope_add_words "slower" "$cur" ;;
    "snapshot --pid")
        _stepscope_complete_pids "$cur" ;;
    *)
        return 1 ;;
    esac
    return 0
}

# The command line as words, into the caller's words, cword and cur (the
# current word up to the cursor), with "host:port" and "3:5" one word as
# stepscope sees them (bash splits them at COMP_WORDBREAKS' colon).
# _stepscope_word_at[k] is the index in COMP_WORDS where words[k] begins,
# for _command_offset, and _stepscope_word_start[k] its offset in COMP_LINE.
_stepscope_split_words() {
    words=() _stepscope_word_at=() _stepscope_word_start=()
    cword=-1
    local i pos=0 start prev_end=-1 piece k=-1 cur_start=0 rest before
    for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
        piece=${COMP_WORDS[i]}
        # where the piece lies in COMP_LINE (the current word may be empty)
        start=$pos
        if [[ -n $piece ]]; then
            rest=${COMP_LINE:pos}
            before=${rest%%"$piece"*}
            [[ $before == "$rest" ]] || start=$((pos + ${#before}))
        elif ((i == COMP_CWORD)); then
            start=$COMP_POINT
        fi
        if ((k >= 0 && start == prev_end)) && [[ $piece == :* || ${words[k]} == *: ]]; then
            words[k]+=$piece
        else
            words[++k]=$piece
            _stepscope_word_at[k]=$i
            _stepscope_word_start[k]=$start
            ((i <= COMP_CWORD)) && cur_start=$start
        fi
        ((i == COMP_CWORD)) && cword=$k
        pos=$((start + ${#piece}))
        prev_end=$pos
    done
    ((cword >= 0)) || cword=$k
    cur=${words[cword]}
    if ((COMP_POINT >= cur_start && COMP_POINT - cur_start < ${#cur})); then
        cur=${COMP_LINE:cur_start:COMP_POINT-cur_start}
    fi
}

# Completions of a word holding a colon: readline replaces only what
# follows its last colon (a COMP_WORDBREAKS character), so drop the rest.
_stepscope_trim_colon() {
    [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]] || return
    local prefix=${cur%"${cur##*:}"} i
    for i in "${!COMPREPLY[@]}"; do
        COMPREPLY[i]=${COMPREPLY[i]#"$prefix"}
    done
}

# Complete the workload's command line, which begins at words[$1]: its
# command's own completion (bash-completion's _command_offset, else the
# command's `complete -F` function called as bash would), else files.
_stepscope_complete_workload() {
    local at=$1 c
    _stepscope_workload=1
    if declare -F _command_offset >/dev/null; then
        _command_offset "${_stepscope_word_at[at]}"
        return
    fi
    if ((cword == at)); then
        while IFS= read -r c; do
            COMPREPLY+=("$c")
        done < <(compgen -c -- "$cur")
        return
    fi
    local spec
    spec=$(complete -p -- "${words[at]}" 2>/dev/null)
    if [[ $spec =~ \ -F\ ([^ ]+) ]]; then
        local func=${BASH_REMATCH[1]} off=${_stepscope_word_at[at]}
        local start=${_stepscope_word_start[at]}
        COMP_LINE=${COMP_LINE:start}
        ((COMP_POINT -= start))
        COMP_WORDS=("${COMP_WORDS[@]:off}")
        ((COMP_CWORD -= off))
        "$func" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    else
        _stepscope_complete_paths -f "$cur"
    fi
}

_stepscope() {
    # prev: _init_completion sets it (the words are walked here instead)
    # shellcheck disable=SC2034
    local cur prev words cword _stepscope_word_at _stepscope_word_start _stepscope_workload=0
    COMPREPLY=()
    if declare -F _init_completion >/dev/null; then
        # bash-completion's handling of redirections (it completes the
        # file after > itself and returns 1)
        _init_completion -n : || return
    fi
    _stepscope_split_words
    _stepscope_main
    # the workload's own completion has dealt with its colons
    ((_stepscope_workload)) || _stepscope_trim_colon
    return 0
} &&
    complete -F _stepscope stepscope

# What the words of command $1 other than the current one say, into the
# caller's _stepscope_npos (positional arguments; _stepscope_given: them,
# without a trailing slash), _stepscope_nbase (those
# before --vs), _stepscope_vs_at (the index of --vs, -1 without),
# _stepscope_format (the last --format's value) and _stepscope_has_out
# (-o or --output given).  The current word counts as none of these: the
# word being completed is what this decides.
_stepscope_scan_line() {
    local cmd=$1 i=2 w
    _stepscope_npos=0 _stepscope_nbase=0 _stepscope_vs_at=-1 _stepscope_format="" _stepscope_has_out=0
    _stepscope_given=()
    while ((i < ${#words[@]})); do
        w=${words[i]}
        if ((i == cword)); then
            :
        elif _stepscope_takes_value "$cmd" "$w"; then
            # (a value being completed says nothing yet)
            if ((i + 1 != cword)); then
                case $w in
                --format) _stepscope_format=${words[i + 1]-} ;;
                -o | --output) _stepscope_has_out=1 ;;
                esac
            fi
            ((i++))
        elif [[ $cmd == compare && $w == --vs ]]; then
            _stepscope_vs_at=$i
        elif [[ $w != -?* ]]; then
            ((_stepscope_npos++))
            _stepscope_given+=("${w%/}")
            ((_stepscope_vs_at >= 0)) || ((_stepscope_nbase++))
        fi
        ((i++))
    done
}

# COMPREPLY += command $1's options matching $2, less those already given
# that the command takes once (compare's --vs).
_stepscope_add_opts() {
    local list=_stepscope_opts_$1 o opts=()
    for o in ${!list}; do
        [[ $o == --vs ]] && ((_stepscope_vs_at >= 0)) && continue
        opts+=("$o")
    done
    _stepscope_add_words "${opts[*]}" "$2"
}

# COMPREPLY for words, cword and cur.
_stepscope_main() {
    if ((cword == 1)); then
        if [[ $cur == -* ]]; then
            _stepscope_add_words "$_stepscope_opts_top" "$cur"
        else
            _stepscope_add_words "$_stepscope_commands" "$cur"
        fi
        return 0
    fi
    local cmd=${words[1]}
    local _stepscope_npos=0 _stepscope_nbase=0 _stepscope_vs_at=-1 _stepscope_format="" _stepscope_has_out=0
    local _stepscope_given=()
    case $cmd in
    help)
        ((cword == 2)) && _stepscope_add_words "${_stepscope_commands% help}" "$cur"
        return 0 ;;
    run | snapshot | report | compare | merge | doctor) ;;
    *)
        return 0 ;;
    esac

    [[ $cmd == run ]] || _stepscope_scan_line "$cmd"
    # walk the words before the cursor: an option's value, the end of
    # run's options (at -- or its first word that is not an option)
    local i=2 w
    while ((i < cword)); do
        w=${words[i]}
        if [[ $cmd == run ]]; then
            if [[ $w == -- ]]; then
                _stepscope_complete_workload $((i + 1))
                return 0
            elif [[ $w != -* ]]; then
                _stepscope_complete_workload "$i"
                return 0
            fi
        fi
        if _stepscope_takes_value "$cmd" "$w"; then
            if ((i + 1 == cword)); then
                _stepscope_complete_value "$cmd" "$w" "$cur"
                return 0
            fi
            ((i += 2))
            continue
        fi
        ((i++))
    done

    if [[ $cur == -* ]]; then
        _stepscope_add_opts "$cmd" "$cur"
        return 0
    fi
    case $cmd in
    run)
        # the workload's command
        _stepscope_complete_workload "$cword" ;;
    report)
        # DIR, one only; a report file (report-PID.json) is taken where
        # the line says what to make (--format) and where (-o; the
        # summary needs no -o)
        if ((_stepscope_npos > 0)); then
            _stepscope_add_opts "$cmd" "$cur"
        elif [[ $_stepscope_format == summary ]] ||
            [[ -n $_stepscope_format && $_stepscope_has_out == 1 ]]; then
            _stepscope_complete_runs "$cur" report files
        else
            _stepscope_complete_runs "$cur" report
        fi ;;
    compare)
        # BASE NEW, or BASE... --vs NEW...: without --vs a third run needs
        # one (after it), so it is offered beside the runs
        _stepscope_complete_runs "$cur" compare files
        if ((_stepscope_vs_at < 0 && _stepscope_nbase >= 2)); then
            _stepscope_add_words "--vs" "$cur"
        fi ;;
    merge)
        _stepscope_complete_runs "$cur" merge ;;
    esac
    return 0
}

# ex: filetype=sh
