#!/bin/sh
# The rounding envelope: zero envelope over 4 order seeds of one training, then zero diff
# --envelope against the default-order run (tests/test_trajectory.sh holds each seed's
# own contract):
#   inside  (exit 0): native mode at N = 2 and 3 (MPI's reduction, OpenBLAS's GEMM), the
#           same global batch in micro-batches of 4, two samples of one step swapped;
#   outside (exit 1): weight decay 0.1 the reference does not have, two samples of
#           different steps swapped (another data order), one sample counted twice in
#           place of another of its step (a micro-batch's gradient scaled wrong);
#   bad input (exit 2): runs with one seed twice, runs of different trainings.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp=$top_builddir/examples/train_mlp
zero=$top_builddir/src/cli/zero
plant=$top_builddir/tests/st_plant
require_built "$mlp" "$zero" "$plant"

args="--hidden 16 --layers 2 --batch 24 --micro-batch 2 --lr 1e-2 --quiet --steps 4"
w="--trajectory-weights-every 1"
for seed in 1 2 3 4; do
    run "seed$seed" 0 "$mlp" $args --order-seed "$seed" --trajectory "$tmp/seed$seed.jsonl" $w
    expect_ok "seed$seed"
done
run envelope 0 "$zero" envelope -o "$tmp/env.jsonl" "$tmp/seed1.jsonl" "$tmp/seed2.jsonl" \
    "$tmp/seed3.jsonl" "$tmp/seed4.jsonl"
expect_ok envelope && expect_line envelope out "wrote $tmp/env.jsonl: 5 steps of 4 runs"
head -n 1 "$tmp/env.jsonl" | grep -q '^{"envelope":1,"runs":4,"from":\[.*\],"order_seeds":\[1,2,3,4\]}$' ||
    fail "envelope header: $(head -n 1 "$tmp/env.jsonl")"
sed -n 2p "$tmp/env.jsonl" | grep -q '^{"step":0,"loss":0.0,"grad_norm":0.0,"tensors":{"layers.0.0.weight":{"max_abs":0.0,"rel_l2":0.0},' ||
    fail "envelope step 0 (one start, no spread): $(sed -n 2p "$tmp/env.jsonl" | cut -c1-200)"
sed -n 3p "$tmp/env.jsonl" | grep -q '^{"step":1,"loss":[0-9.e-]*,"grad_norm":[0-9.e-]*,"tensors":{"layers.0.0.weight":{"max_abs":[1-9]' ||
    fail "envelope step 1 has no spread: $(sed -n 3p "$tmp/env.jsonl" | cut -c1-200)"

run ref 0 "$mlp" $args --trajectory "$tmp/ref.jsonl" $w
expect_ok ref

# judge NAME WANT_RC: run NAME's trajectory against ref's, by the envelope
judge() {
    run "diff_$1" 0 "$zero" diff "$tmp/ref.jsonl" "$tmp/$1.jsonl" --envelope "$tmp/env.jsonl" --brief
    if [ "$2" -eq 0 ]; then
        expect_ok "diff_$1" &&
            expect_line "diff_$1" out "verdict: inside the envelope: 4 of 5 steps differ, none beyond it"
    else
        expect_rc "diff_$1" "$2"
    fi
}

run native2 2 "$mlp" $args --mode native --trajectory "$tmp/native2.jsonl" $w
expect_ok native2 && judge native2 0
run native3 3 "$mlp" $args --mode native --stage 2 --trajectory "$tmp/native3.jsonl" $w
expect_ok native3 && judge native3 0
run micro4 0 "$mlp" $(echo "$args" | sed 's/--micro-batch 2/--micro-batch 4/') \
    --trajectory "$tmp/micro4.jsonl" $w
expect_ok micro4 && judge micro4 0

# the data as a file: samples 0 and 7 are one step's (a reordering), 3 and 30 are not
run data 0 "$mlp" $args --write-synthetic-data "$tmp/data.st" --samples 96
"$plant" "$tmp/data.st" "$tmp/within.st" --swap-rows 0 7 || exit 99
"$plant" "$tmp/data.st" "$tmp/across.st" --swap-rows 3 30 || exit 99
run within 0 "$mlp" $args --data "$tmp/within.st" --trajectory "$tmp/within.jsonl" $w
expect_ok within && judge within 0
run across 0 "$mlp" $args --data "$tmp/across.st" --trajectory "$tmp/across.jsonl" $w
if expect_ok across; then
    judge across 1
    expect_text diff_across out "verdict: OUTSIDE: 4 of 5 steps (first: step 1: loss "
fi

# one sample's gradient counted twice (sample 0 copied over sample 7 of the same step):
# a micro-batch's gradient scaled wrong
"$plant" "$tmp/data.st" "$tmp/twice.st" --copy-row 0 7 || exit 99
run twice_data 0 "$mlp" $args --data "$tmp/twice.st" --trajectory "$tmp/twice_data.jsonl" $w
if expect_ok twice_data; then
    judge twice_data 1
    expect_text diff_twice_data out "verdict: OUTSIDE: 4 of 5 steps (first: step 1: loss "
fi

# a formula the reference does not have: weight decay
printf '{"optimizer": {"type": "AdamW", "params": {"weight_decay": 0.1}}}\n' >"$tmp/wd.json"
run decay 0 "$mlp" $args --config "$tmp/wd.json" --trajectory "$tmp/decay.jsonl" $w
if expect_ok decay; then
    judge decay 1
    expect_text diff_decay out "verdict: OUTSIDE: 4 of 5 steps (first: step 1: layers.0.0.weight: beyond the envelope)"
fi

run twice 0 "$zero" envelope -o "$tmp/bad.jsonl" "$tmp/seed1.jsonl" "$tmp/seed1.jsonl"
expect_error twice 2 "have the same order seed 1: their difference is 0, not an envelope"
run short 0 "$mlp" $(echo "$args" | sed 's/--steps 4/--steps 2/') --order-seed 9 \
    --trajectory "$tmp/short.jsonl"
run unlike 0 "$zero" envelope -o "$tmp/bad.jsonl" "$tmp/seed1.jsonl" "$tmp/short.jsonl"
expect_error unlike 2 "are not one training"
[ -e "$tmp/bad.jsonl" ] && fail "a refused envelope left $tmp/bad.jsonl"

finish "envelope: native mode and reorderings inside; weight decay, another data order and a sample counted twice outside"
