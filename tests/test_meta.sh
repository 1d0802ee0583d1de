#!/bin/sh
# test_meta.sh -- the data position a trainer reads from meta.json
# (user.next_step) is parsed as JSON and cross-checked against the restored
# counters.global_steps (repeated in every rank file's checksummed header):
# -1 (once a heap-buffer-overflow read), "abc" (once a silent restart at 0),
# INT64_MAX (once "no step taken", exit 0) and a plain mismatch are each a clear
# error naming the file and the key, and a non-zero exit, in both trainers.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
mlp=$top_builddir/examples/train_mlp
gpt=$top_builddir/examples/train_gpt
require_built "$mlp" "$gpt"

# tamper NAME VALUE: a copy of $tmp/$prog's checkpoint with user.next_step = VALUE
tamper() {
    rm -rf "$tmp/$1"
    cp -r "$tmp/$prog" "$tmp/$1"
    sed "s/\"next_step\": 2,/\"next_step\": $2,/" "$tmp/$prog/step_000002/meta.json" \
        >"$tmp/$1/step_000002/meta.json"
    grep -q "\"next_step\": $2," "$tmp/$1/step_000002/meta.json" || fail "$1: sed did not apply"
}

for prog in mlp gpt; do
    if [ $prog = mlp ]; then
        bin=$mlp
        args="--hidden 8 --layers 1 --batch 4 --quiet"
    else
        bin=$gpt
        args="--n-layer 1 --n-embd 16 --n-head 2 --batch 4 --quiet"
    fi
    run ${prog}_save 0 "$bin" $args --steps 2 --save-checkpoint "$tmp/$prog"
    expect_ok ${prog}_save
    run ${prog}_resume 0 "$bin" $args --steps 3 --resume "$tmp/$prog"
    expect_ok ${prog}_resume
    meta="step_000002/meta.json: user.next_step"
    tamper ${prog}_neg -1
    run ${prog}_neg 0 "$bin" $args --steps 3 --resume "$tmp/${prog}_neg"
    expect_error ${prog}_neg 1 "$tmp/${prog}_neg/$meta = -1 does not match counters.global_steps = 2"
    tamper ${prog}_abc '"abc"'
    run ${prog}_abc 0 "$bin" $args --steps 3 --resume "$tmp/${prog}_abc"
    expect_error ${prog}_abc 1 "$meta: \"abc\" is not an integer"
    tamper ${prog}_max 9223372036854775807
    run ${prog}_max 0 "$bin" $args --steps 3 --resume "$tmp/${prog}_max"
    expect_error ${prog}_max 1 "$meta = 9223372036854775807 does not match counters.global_steps = 2"
    tamper ${prog}_other 1
    run ${prog}_other 0 "$bin" $args --steps 3 --resume "$tmp/${prog}_other"
    expect_error ${prog}_other 1 "$meta = 1 does not match counters.global_steps = 2"
done

finish "test_meta: a tampered user.next_step is refused naming meta.json and the key"
