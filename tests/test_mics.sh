#!/bin/sh
# test_mics.sh -- MiCS / HSDP moves bytes, never bits: the model states sharded within
# shard groups of M consecutive ranks (zero_optimization.mics_shard_size, src/engine/mics.c)
# and replicated across the N/M groups, stages 1-3, train to the weights of stage 0
# (and so of flat ZeRO) byte for byte at N = 4 (M = 1, 2) and N = 6 (M = 2, 3),
# oversubscribed, for the toy MLP and the GPT, fp32 and bf16, with gradient
# accumulation; stage 3 gathers every unit again for its backward (--persistence 0
# --reuse-distance 0). The comm report's world and in-group bytes equal their formulas,
# the ledger's states are 1/M, checkpoints saved under MiCS resume flat (and the other
# way round) at another world size to the same bits, and a shard size that does not
# divide the world size, or stage 0, is refused naming the key. Native mode reduces in
# the groups (a reduce-scatter in the shard group, an all-reduce across the replicas):
# its loss is the exact run's within 1e-4 and its group bytes equal their formulas.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp="$top_builddir/examples/train_mlp"
gpt="$top_builddir/examples/train_gpt"
zero="$top_builddir/src/cli/zero"
require_built "$mlp" "$gpt" "$zero"

config() { # config FILE STAGE M [KEYS]: MiCS with shard groups of M ranks (-1: off)
    printf '{"zero_optimization": {"stage": %s, "mics_shard_size": %s%s}}\n' "$2" "$3" "${4:-}" >"$1"
}
for s in 0 1 2 3; do for m in -1 1 2 3; do config "$tmp/s${s}_m$m.json" "$s" "$m"; done; done
# DeepSpeed's other reduction and gather paths: an all-reduce that keeps the shard, one
# broadcast per shard (from the first shard group's ranks)
config "$tmp/s2_m2_allreduce.json" 2 2 ', "reduce_scatter": false'
config "$tmp/s1_m2_broadcast.json" 1 2 ', "allgather_partitions": false'

mlp_flags="--hidden 32 --layers 2 --batch 24 --steps 3 --persistence 0 --reuse-distance 0 --quiet"
gpt_flags="--n-layer 2 --n-embd 32 --n-head 2 --block-size 12 --batch 12 --steps 3 --warmup 1"
gpt_flags="$gpt_flags --persistence 0 --reuse-distance 0 --sample 0 --val-every 0 --quiet"

# one model and precision at N ranks: stage 0 is the reference; every stage in STAGES
# with every M in SIZES must give its bytes
sweep() { # sweep TAG NP STAGES SIZES PROG FLAGS...
    tag=$1 np=$2 stages=$3 sizes=$4 prog=$5
    shift 5
    # shellcheck disable=SC2086 # flag lists
    run "${tag}_s0" "$np" "$prog" --config "$tmp/s0_m-1.json" "$@" --save-weights "$tmp/${tag}_s0.st"
    expect_ok "${tag}_s0" || return
    for s in $stages; do
        for m in $sizes; do
            name="${tag}_s${s}_m$m"
            run "$name" "$np" "$prog" --config "$tmp/s${s}_m$m.json" "$@" --save-weights "$tmp/$name.st"
            expect_ok "$name" || continue
            cmp -s "$tmp/${tag}_s0.st" "$tmp/$name.st" ||
                fail "$name: weights differ from stage 0 at N = $np"
        done
    done
}
# shellcheck disable=SC2086
{
    sweep mlp_n4 4 "1 3" "2" "$mlp" $mlp_flags
    sweep mlp_n6 6 "3" "3" "$mlp" $mlp_flags
    sweep gpt_n4 4 "3" "2" "$gpt" $gpt_flags --bf16
    # the suites that repeat this one walk each path once (above); the default build
    # checks the bits
    if ! small_sweep; then
        sweep mlp_n4_s2 4 "2" "2" "$mlp" $mlp_flags
        sweep mlp_n6 6 "1 2" "2 3" "$mlp" $mlp_flags
        sweep mlp_n4_one 4 "3" "1" "$mlp" $mlp_flags
        sweep mlp_bf16_n6 6 "3" "3" "$mlp" $mlp_flags --precision bf16
        sweep mlp_accum_n4 4 "2 3" "2" "$mlp" $mlp_flags --micro-batch 3 --precision bf16
        sweep gpt_n6 6 "2" "3" "$gpt" $gpt_flags
        # overlap_comm, rank-major atoms (one reduction per step along the canonical tree)
        sweep mlp_overlap_n4 4 "2 3" "2" "$mlp" $mlp_flags --overlap 1
        sweep mlp_rank_major_n6 6 "2 3" "3" "$mlp" $mlp_flags --micro-batch 2 \
            --atom-order rank_major
        sweep mlp_allreduce_n4 4 "2" "2_allreduce" "$mlp" $mlp_flags
        sweep mlp_broadcast_n4 4 "1" "2_broadcast" "$mlp" $mlp_flags
    fi
}

# the report: the world carries the reduce-scatters alone, the groups the gathers and
# the replica all-gathers, each next to its formula; the states are 1/M in the ledger
report() { # report NAME STAGE M
    run "$1" 4 "$mlp" --config "$tmp/s$2_m$3.json" --hidden 32 --layers 2 --batch 24 --steps 2 \
        --persistence 0 --reuse-distance 0
    expect_ok "$1" || return
    grep -q MISMATCH "$tmp/$1.out" && fail "$1: a count differs from its formula" && show "$1"
    expect_text "$1" out "sent elements per rank: measured 30720, theory 30720 = Ψ(N-1)/N (MiCS"
    expect_text "$1" out "MiCS shard groups of $3 ranks, $((4 / $3)) replicas"
    expect_text "$1" out "(MiCS: N is the shard group's M = $3)"
}
report report_s3 3 2
small_sweep || report report_s1 1 2

# native mode: the backends' own hierarchy, a reduce-scatter inside the shard group and an
# all-reduce across the replica group; no reduction runs over the world. The sums come in
# the library's order, so the loss is the exact run's within 1e-4 (rounding of fp32 sums of
# a few terms moves it by about 1e-6 here, whatever the CPU), and the bytes inside the
# shard groups and across them equal their formulas
native() { # native NAME NP STAGE M [FLAGS]
    base=$1 ranks=$2 s=$3 m=$4
    shift 4
    for mode in exact native; do
        run "${base}_$mode" "$ranks" "$mlp" --config "$tmp/s${s}_m$m.json" --hidden 32 --layers 2 \
            --batch 24 --steps 3 --persistence 0 --reuse-distance 0 --mode "$mode" "$@"
        expect_ok "${base}_$mode" || return
        ! grep -q MISMATCH "$tmp/${base}_$mode.out" ||
            { fail "${base}_$mode: a count differs from its formula" && show "${base}_$mode"; }
    done
    expect_text "${base}_native" out "theory 0 = 0 (MiCS in native mode"
    expect_text "${base}_native" out "across them, in the replica groups of $((ranks / m)): measured"
    expect_text "${base}_native" out "2Ψ(R-1)/N, its all-reduce per reduction  ok"
    expect_text "${base}_native" out "+ Ψ(M-1)/M per reduction, its reduce-scatter  ok"
    expect_text "${base}_exact" out "Ψ(R-1)/N, the reduced shard's all-gather per reduction  ok"
    loss() { sed -n 's/^final: step [0-9]*, loss //p' "$tmp/$1.out"; }
    awk -v a="$(loss "${base}_exact")" -v b="$(loss "${base}_native")" \
        'BEGIN { d = a - b; exit !(a != "" && b != "" && d < 1e-4 && d > -1e-4) }' ||
        fail "$base: native loss $(loss "${base}_native") is not within 1e-4 of exact's $(loss "${base}_exact")"
}
native native_n4 4 3 2
native native_n6 6 3 3
small_sweep || {
    native native_n6_s1 6 1 3
    native native_n4_accum 4 2 2 --micro-batch 3
    native native_n4_s3_accum 4 3 2 --micro-batch 2 --overlap 1
}

# zero schedule --mics: the groups' collectives by the group they span (the replica
# group's are the bytes that cross the shard groups), each next to the comm stats and to
# its formula, in exact mode (the replica group gathers) and native (it all-reduces)
for mode in exact native; do
    run "schedule_$mode" 4 "$zero" schedule --stage 3 --mics 2 --persistence 0 \
        --reuse-distance 0 --layers 2 --mode "$mode"
    expect_ok "schedule_$mode" || continue
    ! grep -q MISMATCH "$tmp/schedule_$mode.out" ||
        { fail "schedule_$mode: a total differs" && show "schedule_$mode"; }
    replica=$([ "$mode" = exact ] && echo gather || echo reduce)
    for row in "shard gather" "replica $replica"; do
        grep -q "^  $row .* ok$" "$tmp/schedule_$mode.out" || fail "schedule_$mode: no '$row' row"
    done
    for line in "world: " "inside the shard groups: " "across them, in the replica groups: "; do
        grep -q "^  $line.*  ok$" "$tmp/schedule_$mode.out" ||
            fail "schedule_$mode: no theory line '$line... ok'"
    done
    grep -q "group_all_gather" "$tmp/schedule_$mode.out" ||
        fail "schedule_$mode: no group_all_gather event"
done

# checkpoints are the flat layout's (each rank writes the flat shard it reduced): 2 steps
# at N = 4, then 1 more at N = 6, under every pairing of layouts, give one set of bytes
ckpt() { # ckpt NAME STAGE M_SAVE M_RESUME
    run "$1_save" 4 "$mlp" --config "$tmp/s$2_m$3.json" --hidden 32 --layers 2 --batch 24 \
        --steps 2 --persistence 0 --reuse-distance 0 --quiet --save-checkpoint "$tmp/$1.ck"
    expect_ok "$1_save" || return
    run "$1_resume" 6 "$mlp" --config "$tmp/s$2_m$4.json" --hidden 32 --layers 2 --batch 24 \
        --steps 3 --persistence 0 --reuse-distance 0 --quiet --resume "$tmp/$1.ck" \
        --save-weights "$tmp/$1.st"
    expect_ok "$1_resume"
}
ckpt flat 3 -1 -1
ckpt s3_mics_to_flat 3 2 -1
pairings="s3_mics_to_flat"
if ! small_sweep; then
    ckpt s3_flat_to_mics 3 -1 3
    ckpt s3_mics_to_mics 3 2 3
    ckpt s1_mics_to_flat 1 1 -1
    pairings="$pairings s3_flat_to_mics s3_mics_to_mics s1_mics_to_flat"
fi
for c in $pairings; do
    cmp -s "$tmp/flat.st" "$tmp/$c.st" || fail "$c: resumed weights differ from the flat run's"
done

# a shard size must divide the world size; MiCS shards stages 1-3
run bad_size 4 "$mlp" --config "$tmp/s3_m3.json" --hidden 32 --layers 1 --steps 1 --quiet
expect_error bad_size 1 "zero_optimization.mics_shard_size = 3 does not divide the world size 4"
run bad_stage 0 "$mlp" --config "$tmp/s0_m2.json" --hidden 32 --layers 1 --steps 1 --quiet
expect_error bad_stage 1 "zero_optimization.mics_shard_size = 2 needs stage 1, 2 or 3"

printf '{"train_batch_size": 24, "zero_optimization": {"stage": 3, "mics_shard_size": 3}}\n' >"$tmp/cfg.json"
run config_ok 0 "$zero" config "$tmp/cfg.json" --world 6
expect_ok config_ok && expect_line config_ok out "zero_optimization.mics_shard_size = 3 (file)"
run config_bad 0 "$zero" config "$tmp/cfg.json" --world 4
expect_error config_bad 1 "zero_optimization.mics_shard_size = 3 does not divide the world size 4"

# what MiCS does not combine with, each refused naming the keys
refuse() { # refuse NAME KEYS MESSAGE: zero config of stage 3 with KEYS at N = 4
    printf '{"train_batch_size": 8, "zero_optimization": {"stage": 3, %s}}\n' "$2" >"$tmp/$1.json"
    run "$1" 0 "$zero" config "$tmp/$1.json" --world 4
    expect_error "$1" 1 "$3"
}
refuse zero_size '"mics_shard_size": 0' \
    "zero_optimization.mics_shard_size = 0; expected -1 (off) or a positive divisor"
refuse with_hpz '"mics_shard_size": 2, "zero_hpz_partition_size": 2' \
    "mics_shard_size = 2 cannot be combined with zero_hpz_partition_size = 2"
refuse with_offload '"mics_shard_size": 2, "offload_optimizer": {"device": "cpu"}' \
    "mics_shard_size = 2 with offload_optimizer: offloading MiCS's shards is not implemented"
refuse hier_alone '"mics_hierarchical_params_gather": true' \
    "mics_hierarchical_params_gather = true needs mics_shard_size > 0 and stage 3"

# zero estimate: the shards are 1/M (16 x 7.5e9 / 8 bytes at stage 3)
run estimate 0 "$zero" estimate --params 7.5e9 --ranks 64 --mics 8
expect_ok estimate && expect_line estimate out "3 Pos+g+p 16Ψ/M 15 GB 13.97 GiB" &&
    expect_line estimate out "1 Pos 4Ψ + 12Ψ/M 41.3 GB 38.42 GiB"
run estimate_bad 0 "$zero" estimate --params 7.5e9 --ranks 64 --mics 7
expect_error estimate_bad 2 "--mics 7 (mics_shard_size) must divide the one world size given (N = 64)"

# the trace: an update's shard is its shard group's piece j = rank % M (not rank x shard)
run trace 4 "$mlp" --config "$tmp/s3_m2.json" --hidden 32 --layers 2 --batch 24 --steps 2 \
    --quiet --trace "$tmp/trace.json" --trace-steps 2
if expect_ok trace; then
    awk '/"name":"optimizer / {
             match($0, /"pid":[0-9]+/); pid = substr($0, RSTART + 6, RLENGTH - 6)
             match($0, /"elements":[0-9]+/); n = substr($0, RSTART + 11, RLENGTH - 11)
             if (!match($0, /"shard_first_element":[0-9]+/)) { bad++; next }
             f = substr($0, RSTART + 22, RLENGTH - 22); seen++
             if (f != (pid % 2) * n) bad++
         }
         END { exit !(seen > 0 && bad == 0) }' "$tmp/trace.json" ||
        fail "trace: an optimizer slice's shard_first_element is not (rank % M) x its elements"
fi
finish "MiCS at N = 4 (M = 1, 2) and N = 6 (M = 2, 3), stages 1-3, gives stage 0's weights, MLP and GPT, fp32 and bf16, with accumulation; counts equal their formulas"
