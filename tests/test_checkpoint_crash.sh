#!/bin/sh
# test_checkpoint_crash.sh -- a save killed (SIGKILL) at any point leaves a
# loadable checkpoint: tests/ckpt_crash_writer saves step 2, then is killed on
# one rank while saving step 4 at each fault point of the save (rank file
# created, mid-write, file done, meta.json, before/after publishing the step
# directory, before `latest` moves, while pruning). Afterwards `latest` must
# name step 2 (or step 4 once the pointer moved), `zero ckpt inspect` must
# verify every checksum, no step directory may be partial, and a run resumed
# from it must end with the same loss bits as a run that never stopped.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
writer=$top_builddir/tests/ckpt_crash_writer
zero=$top_builddir/src/cli/zero
require_built "$writer" "$zero"

# mpi NAME ARGS...: the writer on 2 ranks, output in $tmp/NAME.out/.err, status in $rc
mpi() {
    name=$1
    shift
    run "$name" 2 "$writer" "$@"
}

mpi straight "$tmp/unused" straight
if [ "$rc" -ne 0 ]; then
    cat "$tmp/straight.err"
    echo "FAIL: the uninterrupted run failed"
    exit 1
fi
want=$(grep '^step ' "$tmp/straight.out")

# point hit rank latest-after resume?
while read -r point hit rank expect resume; do
    dir=$tmp/ck-$point-$hit
    case=$point#$hit@rank$rank
    mpi "kill-$point-$hit" "$dir" kill "$point" "$hit" "$rank"
    if [ "$rc" -eq 0 ]; then
        fail "$case: the writer was not killed (status 0)"
        continue
    fi
    latest=$(cat "$dir/latest" 2>/dev/null)
    [ "$latest" = "$expect" ] || fail "$case: latest is '$latest', expected '$expect'"
    "$zero" ckpt inspect "$dir" >"$tmp/inspect.out" 2>"$tmp/inspect.err" ||
        { cat "$tmp/inspect.err"; fail "$case: zero ckpt inspect failed"; }
    for step in "$dir"/step_*; do
        [ -f "$step/meta.json" ] && [ -f "$step/rank-00000.bin" ] &&
            [ -f "$step/rank-00001.bin" ] ||
            fail "$case: $step is incomplete"
    done
    if [ "$resume" = yes ]; then
        mpi "resume-$point" "$dir" resume
        got=$(grep '^step ' "$tmp/resume-$point.out")
        [ "$rc" -eq 0 ] && [ "$got" = "$want" ] ||
            { cat "$tmp/resume-$point.err"; fail "$case: resumed '$got', uninterrupted '$want'"; }
    fi
done <<'POINTS'
open 0 1 step_000002 no
write 40 1 step_000002 no
rank-file 0 0 step_000002 no
meta 0 0 step_000002 yes
publish 0 0 step_000002 no
published 0 0 step_000002 no
latest 0 0 step_000002 no
prune 0 0 step_000004 yes
POINTS

finish "test_checkpoint_crash: all kill points leave a loadable checkpoint"
