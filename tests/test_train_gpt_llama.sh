#!/bin/sh
# test_train_gpt_llama.sh -- examples/train_gpt --arch llama end to end:
#   - the embedded default (examples/configs/llama-tiny.json's tiny GQA model) learns
#     the addition task as GPT-2 does: >= 90% exact match on held-out problems;
#   - 2 ranks at stage 3 end with the bits of 1 rank at stage 0 accumulating 2;
#   - --save-weights writes Hugging Face names (model.layers.0.self_attn.k_proj.weight);
#   - a checkpoint records its architecture and --arch gpt2 refuses to resume it,
#     naming both (exit 1); a Llama checkpoint resumes under --arch llama;
#   - zero memory --model llama matches the formula exactly; zero verify --model llama
#     finds stages 0-3 bit-identical;
#   - bad Llama flags fail naming the flag (exit 2).
# Run by `make check' from the build directory.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
train=$top_builddir/examples/train_gpt
require_built "$train"

final() {
    grep '^final:' "$tmp/$1.out"
}

# -- the default learns (measured: 99.2% here on 2 ranks, micro-batch 16; 99.6% on 1
#    rank, micro-batch 32, whose gradient sums split the rows differently)
#    (the suites that repeat this one walk the same path for 20 steps; the default
#    build checks that it learns)
learn_steps=
small_sweep && learn_steps="--steps 20"
# shellcheck disable=SC2086
run learn 2 "$train" --arch llama --val-every 0 --sample 0 $learn_steps \
    --save-weights "$tmp/w.safetensors"
expect_ok learn
acc=$(final learn | sed -n 's/.*accuracy \([0-9.]*\).*/\1/p')
if [ -z "$learn_steps" ] && { [ -z "$acc" ] || ! awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }'; }; then
    fail "learn: accuracy '$acc' is below 0.9"
    show learn
fi
echo "learn: $(final learn)"
grep -q 'Llama with 2 layers, 4 heads (2 kv)' "$tmp/learn.out" || fail "learn: no Llama header"
grep -aq 'model.layers.0.self_attn.k_proj.weight' "$tmp/w.safetensors" ||
    fail "save-weights: no Hugging Face name in the file"

# -- 2 ranks at stage 3 = 1 rank at stage 0 accumulating 2 micro-batches
short="--arch llama --steps 20 --sample 0 --eval-problems 0 --val-every 0 --micro-batch 16"
# shellcheck disable=SC2086
run wide 2 "$train" $short --stage 3 --persistence 0
# shellcheck disable=SC2086
run alone 1 "$train" $short --stage 0
expect_ok wide && expect_ok alone
[ "$(final wide)" = "$(final alone)" ] ||
    fail "stage 3 on 2 ranks: '$(final wide)' differs from 1 rank: '$(final alone)'"

# -- checkpoints know their architecture
# shellcheck disable=SC2086
run save 1 "$train" $short --save-checkpoint "$tmp/ck"
expect_ok save
grep -q '"arch": *"llama"' "$tmp"/ck/step_000020/meta.json || fail "meta.json: no user.arch llama"
run wrong 1 "$train" --steps 30 --sample 0 --eval-problems 0 --resume "$tmp/ck"
expect_error wrong 1 'user.arch is "llama"; this run is --arch gpt2'
# shellcheck disable=SC2086
run again 1 "$train" --arch llama --steps 25 --sample 0 --eval-problems 0 --val-every 0 \
    --micro-batch 16 --resume "$tmp/ck"
expect_ok again
grep -q 'resumed from' "$tmp/again.out" || fail "again: did not resume"

# -- zero memory and zero verify know the Llama units: the ledger's model states equal
#    16 bytes a parameter exactly with a tied head (a parameterless unit once cost 4
#    bytes), and stages 0-3 on 3 ranks give one weight hash
zero=$top_builddir/src/cli/zero
run mem 2 "$zero" memory --model llama --hidden 32 --layers 2
expect_ok mem && expect_text mem out 'ok           ok           ok           ok'
run verify 3 "$zero" verify --model llama --hidden 32 --layers 2 --steps 2
expect_ok verify && expect_text verify out 'bit-identical after every one of 2 steps'
expect_text verify out 'a Llama of 2 layers'

# -- bad flags name themselves
run kv 1 "$train" --arch llama --n-kv-head 3
expect_error kv 2 '--n-kv-head must divide --n-head'
run archname 1 "$train" --arch mamba
expect_error archname 2 'arch'
finish "train_gpt --arch llama: ok"
