#!/bin/sh
# test_hf_estimate.sh -- zero estimate --hf-config takes Ψ from a Hugging Face
# LlamaForCausalLM config.json as transformers counts it: model.num_parameters() of the
# fixtures' models, as make_llama_fixtures.py printed it, 19616 untied (llama_gqa) and
# 18016 tied (llama_bias, its head not counted twice); a config asking for math libzero
# does not compute exits 2 naming the key.
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
finish "zero estimate --hf-config counts as transformers does"
