#!/bin/sh
# test_hpz.sh -- ZeRO++ hpZ moves bytes, never bits: stage 3 with a secondary partition
# of the parameters inside groups of g ranks (zero_optimization.zero_hpz_partition_size,
# src/engine/hpz.c), whose backward gathers run inside the group, trains to the weights
# of flat stage 3 and of stage 0, byte for byte, at N = 4 (g = 2, 4) and N = 6 (g = 2, 3),
# oversubscribed, for the toy MLP and the GPT in fp32 and bf16; every unit is gathered
# again for its backward (--persistence 0 --reuse-distance 0), so the backward really
# reads the secondary shards. The comm report's counts equal their formulas (the world
# all-gathers lose the backward's, the group's gathers send Ψg(g-1)/g), the ledger shows
# the secondary shards under their own tag next to their theory, checkpoints saved
# under hpZ resume flat (and the other way round) at another world size to the same
# bits, and a group size that does not divide the world size is refused naming the key.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp="$top_builddir/examples/train_mlp"
gpt="$top_builddir/examples/train_gpt"
zero="$top_builddir/src/cli/zero"
require_built "$mlp" "$gpt" "$zero"

config() { # config FILE G: stage 3 with hpZ groups of G ranks (1: flat)
    printf '{"zero_optimization": {"stage": 3, "zero_hpz_partition_size": %s}}\n' "$2" >"$1"
}
for g in 1 2 3 4; do config "$tmp/g$g.json" "$g"; done

mlp_flags="--hidden 32 --layers 2 --batch 24 --steps 3 --persistence 0 --reuse-distance 0 --quiet"
gpt_flags="--n-layer 2 --n-embd 32 --n-head 2 --block-size 12 --batch 12 --steps 3 --warmup 1"
gpt_flags="$gpt_flags --persistence 0 --reuse-distance 0 --sample 0 --val-every 0 --quiet"

# one model and precision at N ranks: stage 0 and flat stage 3 are the reference, every
# g that divides N must give their bytes
sweep() { # sweep TAG NP GROUPS PROG FLAGS...
    tag=$1 np=$2 groups=$3 prog=$4
    shift 4
    # shellcheck disable=SC2086 # flag lists
    run "${tag}_s0" "$np" "$prog" --stage 0 "$@" --save-weights "$tmp/${tag}_s0.st"
    expect_ok "${tag}_s0" || return
    for g in 1 $groups; do
        name="${tag}_g$g"
        run "$name" "$np" "$prog" --config "$tmp/g$g.json" "$@" --save-weights "$tmp/$name.st"
        expect_ok "$name" || continue
        cmp -s "$tmp/${tag}_s0.st" "$tmp/$name.st" ||
            fail "$name: weights differ from stage 0 at N = $np"
    done
}
# shellcheck disable=SC2086
{
    sweep mlp_n4 4 "2 4" "$mlp" $mlp_flags
    sweep gpt_n4 4 "2" "$gpt" $gpt_flags
    # the suites that repeat this one walk each path once (above); the default build
    # checks the bits
    if ! small_sweep; then
        sweep mlp_bf16_n4 4 "2" "$mlp" $mlp_flags --precision bf16
        sweep mlp_n6 6 "2 3" "$mlp" $mlp_flags
        sweep mlp_bf16_n6 6 "2 3" "$mlp" $mlp_flags --precision bf16
        sweep gpt_bf16_n6 6 "2 3" "$gpt" $gpt_flags --bf16
        sweep gpt_n6 6 "3" "$gpt" $gpt_flags
    fi
}

# the report: world, in-group and other groups' bytes next to their formulas, the secondary shards
# in the ledger (Ψ' = 2 units x 8 192 padded elements, 4 bytes, 1/2 each: 0.03 MiB)
run report 4 "$mlp" --config "$tmp/g2.json" --hidden 32 --layers 2 --batch 24 --steps 2 \
    --persistence 0 --reuse-distance 0
if expect_ok report; then
    grep -q MISMATCH "$tmp/report.out" && fail "report: a count differs from its formula" &&
        show report
    expect_text report out "in-group sent elements per rank: measured"
    expect_text report out "hpZ groups of 2 ranks (nodes hold 4 ranks each): sent inside the group"
    expect_text report out "to other groups: measured 163840 bytes, theory 163840 = the world's"
    grep -q '^  hpz_secondary .* ok$' "$tmp/report.out" ||
        fail "report: no hpz_secondary row equal to its theory" || show report
fi
# with accumulation the backward gathers again in every micro-step: AΨg(g-1)/g
run report_accum 4 "$mlp" --config "$tmp/g2.json" --hidden 32 --layers 2 --batch 24 --steps 2 \
    --persistence 0 --reuse-distance 0 --micro-batch 2
if expect_ok report_accum; then
    grep -q MISMATCH "$tmp/report_accum.out" &&
        fail "report_accum: a count differs from its formula" && show report_accum
    expect_text report_accum out "measured 49152, theory 49152 = AΨg(g-1)/g"
fi
run report_flat 4 "$mlp" --config "$tmp/g1.json" --hidden 32 --layers 2 --batch 24 \
    --steps 2 --persistence 0 --reuse-distance 0
if expect_ok report_flat; then
    # flat stage 3's world all-gathers carry the backward too: hpZ's carry less
    flat=$(awk '$1 == "all_gather" { print $4 }' "$tmp/report_flat.out")
    hpz=$(awk '$1 == "all_gather" { print $4 }' "$tmp/report.out")
    awk -v f="$flat" -v h="$hpz" 'BEGIN { exit !(h < f) }' ||
        fail "world all-gather bytes: hpZ $hpz MB, flat $flat MB: expected fewer with hpZ"
    grep -q "in-group" "$tmp/report_flat.out" && fail "report_flat: in-group rows without hpZ"
fi

# checkpoints: the secondary shards are derived, never saved; 2 steps at N = 4, then
# 1 more at N = 6, under every pairing of layouts, give one set of bytes
ckpt() { # ckpt NAME G_SAVE G_RESUME
    run "$1_save" 4 "$mlp" --config "$tmp/g$2.json" --hidden 32 --layers 2 --batch 24 \
        --steps 2 --persistence 0 --reuse-distance 0 --quiet --save-checkpoint "$tmp/$1.ck"
    expect_ok "$1_save" || return
    run "$1_resume" 6 "$mlp" --config "$tmp/g$3.json" --hidden 32 --layers 2 --batch 24 \
        --steps 3 --persistence 0 --reuse-distance 0 --quiet --resume "$tmp/$1.ck" \
        --save-weights "$tmp/$1.st"
    expect_ok "$1_resume"
}
ckpt flat 1 1
ckpt hpz_to_flat 2 1
pairings=hpz_to_flat
if ! small_sweep; then
    ckpt flat_to_hpz 1 3
    ckpt hpz_to_hpz 2 2
    pairings="$pairings flat_to_hpz hpz_to_hpz"
fi
for c in $pairings; do
    cmp -s "$tmp/flat.st" "$tmp/$c.st" || fail "$c: resumed weights differ from the flat run's"
done

# a group size must divide the world size, and hpZ is stage 3's
run bad_size 4 "$mlp" --config "$tmp/g3.json" --hidden 32 --layers 1 --steps 1 --quiet
expect_error bad_size 1 "zero_optimization.zero_hpz_partition_size = 3 does not divide the world size 4"
run bad_stage 0 "$mlp" --config "$tmp/g2.json" --stage 2 --hidden 32 --layers 1 --steps 1 --quiet
expect_error bad_stage 1 "zero_optimization.zero_hpz_partition_size = 2 needs stage 3"

printf '{"train_batch_size": 24, "zero_optimization": {"stage": 3, "zero_hpz_partition_size": 3}}\n' >"$tmp/cfg.json"
run config_ok 0 "$zero" config "$tmp/cfg.json" --world 6
expect_ok config_ok && expect_line config_ok out "zero_optimization.zero_hpz_partition_size = 3 (file)"
run config_bad 0 "$zero" config "$tmp/cfg.json" --world 4
expect_error config_bad 1 "zero_optimization.zero_hpz_partition_size = 3 does not divide the world size 4"

# zero estimate: the secondary partition, 2Ψ/g in mixed precision (7.5e9 x 2 / 8 bytes)
run estimate 0 "$zero" estimate --params 7.5e9 --ranks 64 --hpz 8
expect_ok estimate &&
    expect_text estimate out "+ secondary partition 2Ψ/8 = 1.9 GB (1.75 GiB) per rank; stage 3 with it: 3.8 GB"
run estimate_bad 0 "$zero" estimate --params 7.5e9 --ranks 64 --hpz 7
expect_error estimate_bad 2 "must divide the one world size given (N = 64)"

# zero schedule: the backward's gathers are in-group rows, equal to the comm stats
run schedule 4 "$zero" schedule --stage 3 --hpz 2 --persistence 0 --reuse-distance 0 --layers 2
if expect_ok schedule; then
    grep -q MISMATCH "$tmp/schedule.out" && fail "schedule: a total differs" && show schedule
    grep -q '^  in-group gather .* ok ' "$tmp/schedule.out" || fail "schedule: no in-group row"
    grep -q '^across the groups: (3Ψ - Ψp - Ψr - Ψg)(N-g)/N = .* ok ' "$tmp/schedule.out" ||
        fail "schedule: no line of the bytes across the groups"
    grep -q ' bwd .* group_all_gather' "$tmp/schedule.out" ||
        grep -q 'group_all_gather' "$tmp/schedule.out" || fail "schedule: no group_all_gather event"
fi

finish "hpZ at N = 4 (g = 2, 4) and N = 6 (g = 2, 3) gives stage 0's and flat stage 3's weights, MLP and GPT, fp32 and bf16; counts equal their formulas; checkpoints cross layouts"
