#!/bin/sh
# test_qgz.sh -- ZeRO++ qgZ (zero_optimization.zero_quantized_gradients, src/engine/qgz.c):
# stage 3's gradient reduce-scatter becomes an all-to-all of block-wise int4 (or int8,
# libzero.qgz_bits) codes, summed in fp32 in a fixed order. Lossy by design, but
# deterministic: at N = 2, 3 and 4 (4 also in two hops, groups of 2 from
# zero_hpz_partition_size), oversubscribed, the GPT trains to the same bytes twice; it
# differs from the unquantized run by a bounded amount after 3 steps (the final loss
# within 0.02, every weight within 0.01; 0.0025 measured); the comm report's bytes
# inside and across the groups equal their formula (also at N = 6 in groups of 3, with
# accumulation, and in `zero schedule`); native mode with overlap repeats its bytes;
# stage 2 with the key and a code width of 5 are refused naming the key, and
# `zero config` shows both keys.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp="$top_builddir/examples/train_mlp"
gpt="$top_builddir/examples/train_gpt"
zero="$top_builddir/src/cli/zero"
require_built "$mlp" "$gpt" "$zero"

printf '{"zero_optimization": {"stage": 3}}\n' >"$tmp/flat.json"
printf '{"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}}\n' >"$tmp/q4.json"
printf '{"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}, "libzero": {"qgz_bits": 8}}\n' >"$tmp/q8.json"
printf '{"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 2}}\n' >"$tmp/hpz.json"
printf '{"zero_optimization": {"stage": 3, "zero_quantized_gradients": true, "zero_hpz_partition_size": 2}}\n' >"$tmp/q4hpz.json"

gpt_flags="--n-layer 2 --n-embd 32 --n-head 2 --block-size 12 --batch 12 --steps 3 --warmup 1"
gpt_flags="$gpt_flags --persistence 0 --reuse-distance 0 --sample 0 --val-every 0"

final_loss() { # final_loss NAME: the loss on the run's "final:" line
    sed -n 's/^final: step [0-9]*, loss \([^,]*\),.*/\1/p' "$tmp/$1.out"
}

case_np() { # case_np TAG NP FLAT_CONFIG QGZ_CONFIG FLAGS...
    tag=$1 np=$2 flat=$3 q=$4
    shift 4
    # shellcheck disable=SC2086 # flag lists
    run "${tag}_flat" "$np" "$gpt" --config "$tmp/$flat.json" $gpt_flags "$@" \
        --save-weights "$tmp/${tag}_flat.st"
    expect_ok "${tag}_flat" || return
    for i in 1 2; do
        # shellcheck disable=SC2086
        run "${tag}_q$i" "$np" "$gpt" --config "$tmp/$q.json" $gpt_flags "$@" \
            --save-weights "$tmp/${tag}_q$i.st"
        expect_ok "${tag}_q$i" || return
    done
    cmp -s "$tmp/${tag}_q1.st" "$tmp/${tag}_q2.st" ||
        fail "$tag: two qgZ runs gave different weights at N = $np"
    cmp -s "$tmp/${tag}_flat.st" "$tmp/${tag}_q1.st" &&
        fail "$tag: qgZ gave the unquantized weights bit for bit: nothing was quantized"
    grep -q MISMATCH "$tmp/${tag}_q1.out" && fail "$tag: a count differs from its formula" &&
        show "${tag}_q1"
    grep -q '^qgZ int[48] all-to-all sent bytes per rank.* ok$' "$tmp/${tag}_q1.out" ||
        fail "$tag: no qgZ bytes line equal to its formula" || show "${tag}_q1"
    awk -v a="$(final_loss "${tag}_flat")" -v b="$(final_loss "${tag}_q1")" \
        'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d < 0.02) }' ||
        fail "$tag: final loss $(final_loss "${tag}_q1") with qgZ, $(final_loss "${tag}_flat") without: expected within 0.02"
    run "${tag}_diff" 0 "$zero" diff "$tmp/${tag}_flat.st" "$tmp/${tag}_q1.st" --brief
    worst=$(sed -n 's/.*| max abs \([^ ]*\) |.*/\1/p' "$tmp/${tag}_diff.out" | sort -g | tail -1)
    awk -v w="$worst" 'BEGIN { exit !(w != "" && w + 0 > 0 && w < 0.01) }' ||
        fail "$tag: largest weight difference against the unquantized run $worst; expected in (0, 0.01)"
}
case_np n2 2 flat q4
case_np n2_int8 2 flat q8
if ! small_sweep; then
    case_np n3 3 flat q4
    case_np bf16_n3 3 flat q4 --bf16
    case_np n4 4 flat q4
    # two hops: groups of 2 (hpZ's), 2 groups; hpZ alone keeps flat stage 3's bits
    case_np n4_hops 4 hpz q4hpz
fi

# the formula independent of the code's: at N = 4 in groups of 2 the MLP's units
# (Ψ = 40 960 padded) have shards of whole blocks, Ψ/N = 10 240 elements in all, so one
# reduction of every unit sends int4 slots of Ψ/N (1/2 + 4/256) = 5 280 bytes: (g-1) P
# = 2 of them inside the group, (P-1) = 1 across
run hops 4 "$mlp" --config "$tmp/q4hpz.json" --hidden 32 --layers 2 --batch 24 --steps 2 \
    --persistence 0 --reuse-distance 0
if expect_ok hops; then
    grep -q MISMATCH "$tmp/hops.out" && fail "hops: a count differs from its formula" && show hops
    line=$(grep '^qgZ int4 all-to-all sent bytes per rank' "$tmp/hops.out")
    echo "$line" | grep -q 'inside the group measured 10560, theory 10560 .* to other groups measured 5280, theory 5280 ' ||
        fail "hops: int4 bytes are not 2 x 5 280 inside and 5 280 across: $line"
fi

# N = 6 in groups of 3 (not a power of two: trees of 3 members, then of 2 groups), int8
if ! small_sweep; then
    printf '{"zero_optimization": {"stage": 3, "zero_quantized_gradients": true, "zero_hpz_partition_size": 3}, "libzero": {"qgz_bits": 8}}\n' >"$tmp/h3.json"
    run n6 6 "$mlp" --config "$tmp/h3.json" --hidden 32 --layers 2 --batch 24 --steps 2 \
        --persistence 0 --reuse-distance 0
    if expect_ok n6; then
        grep -q MISMATCH "$tmp/n6.out" && fail "n6: a count differs from its formula" && show n6
        grep -q '^qgZ int8 all-to-all sent bytes per rank, groups of 3 ranks .*, 2 groups: .* ok$' \
            "$tmp/n6.out" || fail "n6: no qgZ line in groups of 3 equal to its formula" || show n6
    fi
fi

# with 2 micro-steps each reduction lands in an fp32 accumulation slot, twice a step
printf '{"train_batch_size": 24, "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 3, "zero_quantized_gradients": true}}\n' >"$tmp/accum.json"
for i in 1 2; do
    run "accum$i" 3 "$mlp" --config "$tmp/accum.json" --hidden 32 --layers 2 --steps 2 \
        --persistence 0 --reuse-distance 0 --save-weights "$tmp/accum$i.st"
done
if expect_ok accum1 && expect_ok accum2; then
    grep -q MISMATCH "$tmp/accum1.out" && fail "accum: a count differs from its formula" &&
        show accum1
    grep -q '^qgZ int4 all-to-all sent bytes per rank.* ok$' "$tmp/accum1.out" ||
        fail "accum: no qgZ bytes line equal to its formula" || show accum1
    cmp -s "$tmp/accum1.st" "$tmp/accum2.st" ||
        fail "accum: two qgZ runs with accumulation gave different weights"
fi

# native mode with overlap_comm takes the same (blocking) path: the same bytes twice
printf '{"zero_optimization": {"stage": 3, "zero_quantized_gradients": true, "overlap_comm": true}, "libzero": {"collectives": "native"}}\n' >"$tmp/native.json"
for i in 1 2; do
    run "native$i" 3 "$mlp" --config "$tmp/native.json" --hidden 32 --layers 2 --batch 24 \
        --steps 3 --quiet --save-weights "$tmp/native$i.st"
done
expect_ok native1 && expect_ok native2 && { cmp -s "$tmp/native1.st" "$tmp/native2.st" ||
    fail "native: two qgZ runs in native mode with overlap gave different weights"; }

# zero schedule's view: the all-to-alls' bytes and the gathers' elements, each equal to
# the comm stats and to the theory
run schedule 4 "$zero" schedule --stage 3 --hpz 2 --qgz 4 --persistence 0 --reuse-distance 0 \
    --hidden 16 --layers 2 --align 64
if expect_ok schedule; then
    grep -q MISMATCH "$tmp/schedule.out" && fail "schedule: a count differs" && show schedule
    grep -q '^  qgZ int4 all-to-all (bytes): 3 reductions; .*  ok$' "$tmp/schedule.out" ||
        fail "schedule: no qgZ line equal to the comm stats" || show schedule
    grep -q '^theory: (2Ψ - Ψp - Ψr - Ψg)(N-1)/N = .*  ok$' "$tmp/schedule.out" ||
        fail "schedule: the gathers' theory does not hold" || show schedule
    # each reduction's two hops, each named by the group it spans
    for hop in "hpz group" "across groups"; do
        [ "$(grep -c "all_to_all bucket .*, quantized, $hop\$" "$tmp/schedule.out")" = 3 ] ||
            fail "schedule: not 3 all_to_all rows in the $hop" || show schedule
    done
fi

# refused: another stage, another width, a combination not done
run stage2 0 "$mlp" --config "$tmp/q4.json" --stage 2 --hidden 32 --layers 1 --steps 1 --quiet
expect_error stage2 1 "zero_optimization.zero_quantized_gradients = true needs stage 3 (stage is 2)"
printf '{"train_batch_size": 24, "zero_optimization": {"stage": 3, "zero_quantized_gradients": true}, "libzero": {"qgz_bits": 5}}\n' >"$tmp/bits5.json"
run bits5 0 "$zero" config "$tmp/bits5.json" --world 4
expect_error bits5 1 "libzero.qgz_bits = 5: qgZ's codes are 4 or 8 bits wide"
printf '{"train_batch_size": 24, "zero_optimization": {"stage": 3, "zero_quantized_gradients": true, "mics_shard_size": 2}}\n' >"$tmp/mics.json"
run with_mics 0 "$zero" config "$tmp/mics.json" --world 4
expect_error with_mics 1 "zero_optimization.zero_quantized_gradients = true with zero_optimization.mics_shard_size > 0: combining qgZ with it is not implemented yet"
printf '{"train_batch_size": 24, "zero_optimization": {"stage": 3, "zero_quantized_gradients": true}, "libzero": {"qgz_bits": 8}}\n' >"$tmp/cfg.json"
run config 0 "$zero" config "$tmp/cfg.json" --world 4
expect_ok config && expect_line config out "zero_optimization.zero_quantized_gradients = true (file)" &&
    expect_line config out "libzero.qgz_bits = 8 (file)"
finish "qgZ at N = 2, 3, 4, 6 (one and two hops), int4 and int8: deterministic, within its bound of the unquantized run, all-to-all bytes equal to their formula; stage 2 and 5 bits refused naming the key"
