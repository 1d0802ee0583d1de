#!/bin/sh
# test_hf_estimate.sh -- zero estimate --hf-config takes Ψ from a Hugging Face
# LlamaForCausalLM config.json as transformers counts it: model.num_parameters() of the
# fixtures' models, as make_llama_fixtures.py printed it, 19616 untied (llama_gqa) and
# 18016 tied (llama_bias, its head not counted twice); a config asking for math libzero
# does not compute exits 2 naming the key; 4093 layers are counted at once, more are refused; zero verify, memory and schedule run the
# config's model.
# Run by `make check' from the build directory; by hand: sh tests/test_hf_estimate.sh.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
zero=$top_builddir/src/cli/zero
require_built "$zero"
fixtures=$top_srcdir/tests/fixtures/hf

run untied 0 "$zero" estimate --hf-config "$fixtures/llama_gqa/config.json" --ranks 4
if expect_ok untied; then
    expect_text untied out "Ψ = 19,616 parameters, N = 4 ranks"
    expect_text untied out "2 layers, hidden 32, 4 heads / 2 kv heads of 8, intermediate 48, vocab 64 (untied head)"
fi
run tied 0 "$zero" estimate --hf-config "$fixtures/llama_bias/config.json"
expect_ok tied && expect_text tied out "Ψ = 18,016 parameters"

sed 's/"silu"/"gelu"/' "$fixtures/llama_gqa/config.json" >"$tmp/gelu.json"
run gelu 0 "$zero" estimate --hf-config "$tmp/gelu.json"
expect_error gelu 2 "gelu.json: hidden_act: expected \"silu\""
run both 0 "$zero" estimate --hf-config "$fixtures/llama_gqa/config.json" --params 7e9
expect_error both 2 "give one of --params"

# the most layers a model holds (4093 of width 2): Ψ and the largest unit in closed form
# at once; one more is refused naming the key (timeout 20 turns a walk of the tensors, or
# a model built, into a failure)
deep='{"vocab_size": 2, "hidden_size": 2, "intermediate_size": 2, "num_attention_heads": 1'
printf '%s, "num_hidden_layers": 4093}' "$deep" >"$tmp/deep.json"
run deep 0 timeout 20 "$zero" estimate --hf-config "$tmp/deep.json"
expect_ok deep && expect_text deep out "Ψ = 130,986 parameters"
printf '%s, "num_hidden_layers": 200000000}' "$deep" >"$tmp/deeper.json"
run deeper 0 timeout 20 "$zero" estimate --hf-config "$tmp/deeper.json"
expect_error deeper 2 "deeper.json: llama config: num_hidden_layers 200000000: more than the 4093"

# zero verify / memory / schedule build the config's Llama (the untied GQA one, llama3 rope)
run verify 3 "$zero" verify --hf-config "$fixtures/llama_gqa/config.json" --steps 2
expect_ok verify && expect_text verify out "all 4 configurations bit-identical after every one of 2 steps"
run memory 2 "$zero" memory --hf-config "$fixtures/llama_gqa/config.json"
expect_ok memory && expect_text memory out "Ψ = 19,616 parameters"
run schedule 2 "$zero" schedule --hf-config "$fixtures/llama_gqa/config.json" --stage 3
expect_ok schedule && expect_text schedule out "model: the Llama of $fixtures/llama_gqa/config.json (2 layers"
run verify_bad 0 "$zero" verify --hf-config "$tmp/gelu.json"
expect_error verify_bad 2 "hidden_act"
finish "zero estimate --hf-config counts as transformers does; verify, memory, schedule take it"
