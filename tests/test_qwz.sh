#!/bin/sh
# test_qwz.sh -- ZeRO++ qwZ (zero_optimization.zero_quantized_weights, src/engine/qwz.c):
# stage 3's parameter all-gathers carry block-wise int8 codes and one fp32 scale per
# 256 elements. Lossy by design, but deterministic: at N = 2 and 3, oversubscribed,
# the GPT (fp32 and bf16) trains to the same bytes twice; it differs from the
# unquantized run, by a bounded amount (the final loss within 0.02, every weight within
# 0.01 after 3 steps; 0.003 measured); the comm report's int8 all-gather
# bytes equal their formula; with hpZ (N = 4 in groups of 2, N = 6 in groups of 3) the
# weights are flat qwZ's bit for bit (the backward's in-group gathers deliver the
# forward's dequantized values), within the bound of hpZ's unquantized run, and the
# int8, in-group and cross-group bytes equal their formulas; qwZ + hpZ + qgZ (ZeRO++)
# trains to the same bytes twice; stages 1 and 2, MiCS and offload_param with the key
# are refused naming it, and `zero config` shows it.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp="$top_builddir/examples/train_mlp"
gpt="$top_builddir/examples/train_gpt"
zero="$top_builddir/src/cli/zero"
require_built "$mlp" "$gpt" "$zero"

printf '{"zero_optimization": {"stage": 3}}\n' >"$tmp/flat.json"
printf '{"zero_optimization": {"stage": 3, "zero_quantized_weights": true}}\n' >"$tmp/qwz.json"

# every unit gathered for forward and again for backward: both gathers quantized
gpt_flags="--n-layer 2 --n-embd 32 --n-head 2 --block-size 12 --batch 12 --steps 3 --warmup 1"
gpt_flags="$gpt_flags --persistence 0 --reuse-distance 0 --sample 0 --val-every 0"

final_loss() { # final_loss NAME: the loss on the run's "final:" line
    sed -n 's/^final: step [0-9]*, loss \([^,]*\),.*/\1/p' "$tmp/$1.out"
}

case_np() { # case_np TAG NP FLAGS...
    tag=$1 np=$2
    shift 2
    # shellcheck disable=SC2086 # flag lists
    run "${tag}_flat" "$np" "$gpt" --config "$tmp/flat.json" $gpt_flags "$@" \
        --save-weights "$tmp/${tag}_flat.st"
    expect_ok "${tag}_flat" || return
    for i in 1 2; do
        # shellcheck disable=SC2086
        run "${tag}_q$i" "$np" "$gpt" --config "$tmp/qwz.json" $gpt_flags "$@" \
            --save-weights "$tmp/${tag}_q$i.st"
        expect_ok "${tag}_q$i" || return
    done
    cmp -s "$tmp/${tag}_q1.st" "$tmp/${tag}_q2.st" ||
        fail "$tag: two qwZ runs gave different weights at N = $np"
    cmp -s "$tmp/${tag}_flat.st" "$tmp/${tag}_q1.st" &&
        fail "$tag: qwZ gave the unquantized weights bit for bit: nothing was quantized"
    grep -q MISMATCH "$tmp/${tag}_q1.out" && fail "$tag: a count differs from its formula" &&
        show "${tag}_q1"
    expect_text "${tag}_q1" out "qwZ int8 all-gather sent bytes per rank: measured"
    awk -v a="$(final_loss "${tag}_flat")" -v b="$(final_loss "${tag}_q1")" \
        'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d < 0.02) }' ||
        fail "$tag: final loss $(final_loss "${tag}_q1") with qwZ, $(final_loss "${tag}_flat") without: expected within 0.02"
    run "${tag}_diff" 0 "$zero" diff "$tmp/${tag}_flat.st" "$tmp/${tag}_q1.st" --brief
    worst=$(sed -n 's/.*| max abs \([^ ]*\) |.*/\1/p' "$tmp/${tag}_diff.out" | sort -g | tail -1)
    awk -v w="$worst" 'BEGIN { exit !(w != "" && w + 0 > 0 && w < 0.01) }' ||
        fail "$tag: largest weight difference against the unquantized run $worst; expected in (0, 0.01)"
}
case_np n2 2
# the suites that repeat this one (sanitizers) walk each path once: N = 3 below
if ! small_sweep; then
    case_np n3 3
    case_np bf16_n3 3 --bf16
fi

# the report's formula at N = 3 with the MLP (shards of 2 x 8 192 / 3 elements,
# not a multiple of the block: a short last block)
run report 3 "$mlp" --config "$tmp/qwz.json" --hidden 32 --layers 2 --batch 24 --steps 2 \
    --persistence 0 --reuse-distance 0
if expect_ok report; then
    grep -q MISMATCH "$tmp/report.out" && fail "report: a count differs from its formula" &&
        show report
    grep -q '^qwZ int8 all-gather sent bytes per rank: .* ok$' "$tmp/report.out" ||
        fail "report: no qwZ bytes line equal to its formula" || show report
fi

# with 2 micro-steps each gathers every unit twice again (the default build)
small_sweep || printf '{"train_batch_size": 24, "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 3, "zero_quantized_weights": true}}\n' >"$tmp/accum.json"
small_sweep || run report_accum 3 "$mlp" --config "$tmp/accum.json" --hidden 32 --layers 2 \
    --steps 2 --persistence 0 --reuse-distance 0
if ! small_sweep && expect_ok report_accum; then
    grep -q MISMATCH "$tmp/report_accum.out" &&
        fail "report_accum: a count differs from its formula" && show report_accum
    grep -q '^qwZ int8 all-gather sent bytes per rank: .* ok$' "$tmp/report_accum.out" ||
        fail "report_accum: no qwZ bytes line equal to its formula" || show report_accum
fi

# independent of the code's own formula: at N = 2 the MLP's shards are whole blocks, so
# the int8 gathers send 1 + 4/256 bytes per fp32 element the gathers would send
run report_n2 2 "$mlp" --config "$tmp/qwz.json" --hidden 32 --layers 2 --batch 24 --steps 2 \
    --persistence 0 --reuse-distance 0
if expect_ok report_n2; then
    line=$(grep '^qwZ int8 all-gather sent bytes per rank' "$tmp/report_n2.out")
    echo "$line" | awk '{ m = $9 + 0; sub(/.*compute dtype: /, ""); f = ($0 + 0) / 4 * 65 / 64
                          exit !(m > 0 && m == f) }' ||
        fail "report_n2: int8 all-gather bytes are not 65/64 of the fp32 elements: $line"
fi

# stage 3's alone
for stage in 1 2; do
    run "stage$stage" 0 "$mlp" --config "$tmp/qwz.json" --stage "$stage" --hidden 32 \
        --layers 1 --steps 1 --quiet
    expect_error "stage$stage" 1 "zero_optimization.zero_quantized_weights = true needs stage 3 (stage is $stage)"
done
printf '{"train_batch_size": 24, "zero_optimization": {"stage": 3, "zero_quantized_weights": true}}\n' >"$tmp/cfg.json"
run config 0 "$zero" config "$tmp/cfg.json" --world 4
expect_ok config && expect_line config out "zero_optimization.zero_quantized_weights = true (file)"

# qwZ with hpZ: the forward's world gathers in int8, the backward's in-group gathers the
# secondary shards, which hold what the forward delivered, in the compute dtype. So the
# backward computes with the forward's values, as flat qwZ's second quantized gather of the
# same shards does: the weights are flat qwZ's, bit for bit (exact mode), and two runs agree.
hpz_case() { # hpz_case TAG NP G FLAGS...
    tag=$1 np=$2 g=$3
    shift 3
    printf '{"zero_optimization": {"stage": 3, "zero_hpz_partition_size": %s}}\n' "$g" \
        >"$tmp/${tag}_hpz.json"
    printf '{"zero_optimization": {"stage": 3, "zero_quantized_weights": true, "zero_hpz_partition_size": %s}}\n' \
        "$g" >"$tmp/${tag}_qhpz.json"
    # shellcheck disable=SC2086 # flag lists
    run "${tag}_hpz" "$np" "$gpt" --config "$tmp/${tag}_hpz.json" $gpt_flags "$@" \
        --save-weights "$tmp/${tag}_hpz.st"
    # shellcheck disable=SC2086
    run "${tag}_qflat" "$np" "$gpt" --config "$tmp/qwz.json" $gpt_flags "$@" \
        --save-weights "$tmp/${tag}_qflat.st"
    for i in 1 2; do
        # shellcheck disable=SC2086
        run "${tag}_q$i" "$np" "$gpt" --config "$tmp/${tag}_qhpz.json" $gpt_flags "$@" \
            --save-weights "$tmp/${tag}_q$i.st"
    done
    for r in hpz qflat q1 q2; do expect_ok "${tag}_$r" || return; done
    cmp -s "$tmp/${tag}_q1.st" "$tmp/${tag}_q2.st" ||
        fail "$tag: two qwZ + hpZ runs gave different weights at N = $np, g = $g"
    cmp -s "$tmp/${tag}_qflat.st" "$tmp/${tag}_q1.st" ||
        fail "$tag: qwZ + hpZ (g = $g) gave other weights than flat qwZ at N = $np"
    cmp -s "$tmp/${tag}_hpz.st" "$tmp/${tag}_q1.st" &&
        fail "$tag: qwZ + hpZ gave hpZ's unquantized weights bit for bit: nothing was quantized"
    grep -q MISMATCH "$tmp/${tag}_q1.out" && fail "$tag: a count differs from its formula" &&
        show "${tag}_q1"
    for line in "qwZ int8 all-gather sent bytes per rank: " "in-group sent elements per rank: " \
        "to other groups: "; do
        grep -q "^$line.* ok$" "$tmp/${tag}_q1.out" ||
            fail "$tag: no line '$line...' equal to its formula" || show "${tag}_q1"
    done
    awk -v a="$(final_loss "${tag}_hpz")" -v b="$(final_loss "${tag}_q1")" \
        'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d < 0.02) }' ||
        fail "$tag: final loss $(final_loss "${tag}_q1") with qwZ + hpZ, $(final_loss "${tag}_hpz") with hpZ alone: expected within 0.02"
}
hpz_case hpz_n4 4 2
small_sweep || hpz_case hpz_n6 6 3

# ZeRO++'s three together (qwZ, hpZ, qgZ): deterministic, every count equal to its formula
printf '{"zero_optimization": {"stage": 3, "zero_quantized_weights": true, "zero_hpz_partition_size": 2, "zero_quantized_gradients": true}}\n' >"$tmp/zpp.json"
for i in 1 2; do
    # shellcheck disable=SC2086
    run "zpp$i" 4 "$gpt" --config "$tmp/zpp.json" $gpt_flags --save-weights "$tmp/zpp$i.st"
done
if expect_ok zpp1 && expect_ok zpp2; then
    cmp -s "$tmp/zpp1.st" "$tmp/zpp2.st" || fail "zpp: two ZeRO++ runs gave different weights"
    grep -q MISMATCH "$tmp/zpp1.out" && fail "zpp: a count differs from its formula" && show zpp1
    grep -q '^qgZ int4 all-to-all .* ok$' "$tmp/zpp1.out" || fail "zpp: no qgZ bytes line" ||
        show zpp1
fi

# not combined yet: MiCS's gathers and offloaded shards', refused naming both keys
printf '{"train_batch_size": 24, "zero_optimization": {"stage": 3, "zero_quantized_weights": true, "mics_shard_size": 2}}\n' >"$tmp/mics.json"
run with_mics 0 "$zero" config "$tmp/mics.json" --world 4
expect_error with_mics 1 "zero_optimization.zero_quantized_weights = true with mics_shard_size > 0: combining qwZ with it is not implemented yet"
printf '{"train_batch_size": 24, "zero_optimization": {"stage": 3, "zero_quantized_weights": true, "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "cpu"}}}\n' >"$tmp/offload.json"
run with_offload 0 "$zero" config "$tmp/offload.json" --world 4
expect_error with_offload 1 "zero_optimization.zero_quantized_weights = true with offload_param: combining qwZ with it is not implemented yet"
finish "qwZ at N = 2 and 3: deterministic, within its bound of the unquantized run, int8 all-gather bytes equal to their formula; with hpZ (N = 4, g = 2; N = 6, g = 3) flat qwZ's weights, bytes equal to their formulas; with hpZ and qgZ deterministic; stages 1-2, MiCS and offload_param refused naming the key"
