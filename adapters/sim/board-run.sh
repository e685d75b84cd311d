#!/bin/sh
# board-run.sh CASE RESULTS: run one batch file (or version 1 case file) of the SmoothL1LossGrad
# conformance suite on a board, with the harness built for it (docs/simulator-protocol.md):
#
#   sl1conf certify --impl "sim:[timeout=120] /path/to/board-run.sh {case} {result}" ...
#
# It copies CASE to the board, runs the harness there, ALWAYS copies the results file back (the
# records the harness flushed before a crash or a hang name the case that failed) and exits with
# the harness's status. Not `set -e`: every step's status is looked at. Settings (environment):
#   SL1_BOARD           the board's ssh name                                    (board)
#   SL1_BOARD_DIR       a folder on the board for the two files                 (/tmp)
#   SL1_BOARD_HARNESS   the harness on the board                                (./harness)
#   SL1_BOARD_TIMEOUT   seconds without a new result record before the board    (10; 0: never)
#                       kills the harness (a hang: exit 124)
#   SL1_BOARD_DEADLINE  seconds any one step may take before the board is       (0: no limit)
#                       taken for wedged: the step is killed, then SL1_BOARD_RESET
#   SL1_BOARD_RESET     shell command that resets the board, returns when it answers again
#                       (run too when the connection is lost during the run: ssh's status 255)
#   SL1_BOARD_COPY_TO   shell command copying local "$1" to "$2" on the board   (scp)
#   SL1_BOARD_RUN       shell command running the command line "$1" there       (ssh)
#   SL1_BOARD_COPY_FROM shell command copying "$1" on the board to local "$2"   (scp)
# Exit status: the harness's (0 all written, 1 I/O error, 2 bad case file, 128+N killed by signal N
# on the board), 124 when the board's or the deadline's watchdog killed it, else the failed copy's.
set -u

if [ "$#" -ne 2 ]; then
    echo "usage: board-run.sh CASE RESULTS (sim:board-run.sh {case} {result})" >&2
    exit 2
fi
case_file=$1
results=$2

SL1_BOARD=${SL1_BOARD:-board}
export SL1_BOARD
board_dir=${SL1_BOARD_DIR:-/tmp}
harness=${SL1_BOARD_HARNESS:-./harness}
stall=${SL1_BOARD_TIMEOUT:-10}
deadline=${SL1_BOARD_DEADLINE:-0}
reset=${SL1_BOARD_RESET:-}
# shellcheck disable=SC2016 # expanded by the sh -c that runs each of them, with its own "$1" "$2"
{
    copy_to=${SL1_BOARD_COPY_TO:-'exec scp -q -- "$1" "$SL1_BOARD:$2"'}
    run=${SL1_BOARD_RUN:-'exec ssh -o BatchMode=yes -- "$SL1_BOARD" "$1"'}
    copy_from=${SL1_BOARD_COPY_FROM:-'exec scp -q -- "$SL1_BOARD:$1" "$2"'}
}
for n in "$stall" "$deadline"; do
    case $n in
        '' | *[!0-9]*)
            echo "board-run: SL1_BOARD_TIMEOUT and SL1_BOARD_DEADLINE are whole seconds, not '$n'" >&2
            exit 2
            ;;
    esac
done

say() { echo "board-run: $*" >&2; }
# q WORD: WORD single-quoted for the board's shell
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

tag=sl1conf-$(uname -n 2>/dev/null | tr -cd 'A-Za-z0-9.-')-$$
remote_case=$board_dir/$tag.in
remote_results=$board_dir/$tag.out

# On the board: run the harness; a watchdog kills it when its results file has not grown for $4
# seconds (a hang), so that the records before the hang are still copied back.
# shellcheck disable=SC2016 # expanded on the board
board_script='h=$1 i=$2 o=$3 t=$4 m=$3.stalled w=
rm -f "$o" "$m"
"$h" "$i" "$o" </dev/null &
p=$!
if [ "$t" -gt 0 ]; then
    (
        last=-1 idle=0
        while kill -0 "$p" 2>/dev/null; do
            sleep 1
            size=$(wc -c <"$o" 2>/dev/null) || size=0
            if [ "$size" = "$last" ]; then idle=$((idle + 1)); else idle=0 last=$size; fi
            if [ "$idle" -ge "$t" ]; then : >"$m"; kill -9 "$p"; exit 0; fi
        done
    ) </dev/null >/dev/null 2>&1 &
    w=$!
fi
wait "$p"
s=$?
if [ -n "$w" ]; then kill "$w" 2>/dev/null; { wait "$w"; } 2>/dev/null; fi
rm -f "$i"
if [ "$s" -eq 137 ] && [ -e "$m" ]; then
    rm -f "$m"
    echo "board-run: no new result record for $t s on the board: harness killed" >&2
    exit 124
fi
exit "$s"'
remote="sh -c $(q "$board_script") sl1-board $(q "$harness") $(q "$remote_case") $(q "$remote_results") $(q "$stall")"

expired=0
scratch=
if [ "$deadline" -gt 0 ]; then
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/board-run.XXXXXX") || exit 1
    trap 'rm -rf "$scratch"' EXIT
fi

# step NAME COMMAND ARG...: the shell command COMMAND with ARG... as "$1"..., killed (status 124,
# expired=1) when it takes longer than SL1_BOARD_DEADLINE
step() {
    name=$1 cmd=$2
    shift 2
    if [ "$deadline" -eq 0 ]; then
        sh -c "$cmd" "$name" "$@"
        return
    fi
    rm -f "$scratch/expired"
    sh -c "$cmd" "$name" "$@" &
    runner=$!
    (
        trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
        sleep "$deadline" &
        sleeper=$!
        wait "$sleeper"
        : >"$scratch/expired"
        kill -9 "$runner" 2>/dev/null
    ) </dev/null &
    watcher=$!
    wait "$runner"
    code=$?
    kill "$watcher" 2>/dev/null
    { wait "$watcher"; } 2>/dev/null
    if [ "$code" -eq 137 ] && [ -e "$scratch/expired" ]; then
        expired=1
        say "$name: no answer from the board within $deadline s (SL1_BOARD_DEADLINE): killed"
        return 124
    fi
    return "$code"
}

was_reset=0
reset_board() {
    if [ "$was_reset" -eq 1 ]; then
        return
    fi
    was_reset=1
    if [ -z "$reset" ]; then
        say "no SL1_BOARD_RESET: reset the board by hand before the next run"
    elif sh -c "$reset" sl1-reset >&2; then
        say "board reset (SL1_BOARD_RESET)"
    else
        say "SL1_BOARD_RESET failed (status $?)"
    fi
}

step sl1-copy-to "$copy_to" "$case_file" "$remote_case"
code=$?
if [ "$code" -ne 0 ]; then
    say "copying the case file to $SL1_BOARD:$remote_case failed (status $code): nothing ran on the board"
    if [ "$expired" -eq 1 ]; then reset_board; fi
    exit "$code"
fi

step sl1-run "$run" "$remote"
status=$?
if [ "$expired" -eq 1 ]; then
    reset_board
elif [ "$status" -eq 255 ] && [ -n "$reset" ]; then
    say "lost the connection to the board (status 255: ssh's own)"
    reset_board
elif [ "$status" -gt 128 ] && [ "$status" -lt 255 ]; then
    say "the harness died of SIG$(kill -l "$((status - 128))" 2>/dev/null) on the board (status $status)"
elif [ "$status" -ne 0 ] && [ "$status" -ne 124 ]; then
    say "the harness or the connection to the board failed (status $status)"
fi

# Always: the records the harness flushed before a crash, a hang or a reset.
step sl1-copy-from "$copy_from" "$remote_results" "$results"
code=$?
if [ "$code" -eq 0 ]; then
    step sl1-clean "$run" "rm -f $(q "$remote_case") $(q "$remote_results")" >/dev/null 2>&1
else
    say "copying the results back from $SL1_BOARD:$remote_results failed (status $code)"
    if [ "$expired" -eq 1 ]; then reset_board; fi
    if [ "$status" -eq 0 ]; then status=$code; fi
fi
exit "$status"
