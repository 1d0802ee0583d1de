#!/bin/sh
# test_train_gpt_hf.sh -- train_gpt --arch llama in and out of Hugging Face model
# directories: a trained model written with --save-hf (one model.safetensors), read back
# with --hf-model and written sharded (--save-hf-shard-size), at 1 rank and at 2 and 3
# ranks under ZeRO-3, always gives the bits --save-weights wrote; a missing shard and a
# misshaped tensor are refused naming them. (The directories transformers wrote,
# tests/fixtures/hf, are read by tests/test_hf_parity.)
# Run by `make check' from the build directory; by hand: sh tests/test_train_gpt_hf.sh.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
train=$top_builddir/examples/train_gpt
require_built "$train"
stage3=$top_srcdir/examples/configs/stage3.json

run trained 0 "$train" --arch llama --steps 20 --save-hf "$tmp/a" --save-weights "$tmp/a.safetensors"
if expect_ok trained; then
    expect_text trained out "saved $tmp/a (Hugging Face LlamaForCausalLM)"
    [ -f "$tmp/a/model.safetensors" ] && [ -f "$tmp/a/config.json" ] &&
        [ ! -f "$tmp/a/model.safetensors.index.json" ] || fail "--save-hf: not one model.safetensors"
fi

run sharded 0 "$train" --hf-model "$tmp/a" --steps 0 --save-hf "$tmp/b" --save-hf-shard-size 100000 \
    --save-weights "$tmp/b.safetensors"
if expect_ok sharded; then
    expect_text sharded out "init: $tmp/a"
    shards=$(ls "$tmp/b" | grep -c '^model-0000[0-9]-of-0000[0-9]\.safetensors$')
    [ -f "$tmp/b/model.safetensors.index.json" ] && [ "$shards" -ge 3 ] ||
        fail "--save-hf-shard-size 100000: $shards shards, not 3 or more and an index"
    cmp -s "$tmp/a.safetensors" "$tmp/b.safetensors" || fail "--hf-model then --save-weights: other bits"
fi

for np in 2 3; do
    run "stage3_np$np" "$np" "$train" --hf-model "$tmp/b" --config "$stage3" --batch $((4 * np)) --steps 0 \
        --save-hf "$tmp/c$np" --save-weights "$tmp/c$np.safetensors"
    expect_ok "stage3_np$np" && { cmp -s "$tmp/a.safetensors" "$tmp/c$np.safetensors" ||
        fail "$np ranks at stage 3: --hf-model read other bits"; }
    cmp -s "$tmp/a/model.safetensors" "$tmp/c$np/model.safetensors" ||
        fail "$np ranks at stage 3: --save-hf wrote other bits"
done

second=$(ls "$tmp/b" | grep '^model-00002-of-')
rm "$tmp/b/$second"
run missing 0 "$train" --hf-model "$tmp/b" --steps 0
expect_error missing 1 "shard $tmp/b/$second is missing (it holds tensor model.layers."
sed 's/"intermediate_size": 176/"intermediate_size": 160/' "$tmp/a/config.json" >"$tmp/wide.json"
mv "$tmp/wide.json" "$tmp/a/config.json"
run misshaped 0 "$train" --hf-model "$tmp/a" --steps 0
expect_error misshaped 1 "tensor model.layers.0.mlp.gate_proj.weight has shape \[176, 64\], the config's is \[160, 64\]"
run gpt2 0 "$train" --save-hf "$tmp/g" --steps 0
expect_error gpt2 2 "save-hf writes a Llama"
finish "train_gpt --hf-model / --save-hf keep the bits"
