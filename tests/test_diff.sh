#!/bin/sh
# zero diff A B on planted differences (tests/st_plant.c): one ulp, a NaN, a transposed
# tensor, a renamed key, a missing tensor, each found and named with exit status 1;
# wrapper prefixes, a tied head and a buffer matched (0); bad input named (2); a
# hand-written envelope judging a difference inside (0) and outside (1).
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

zero=$top_builddir/src/cli/zero
plant=$top_builddir/tests/st_plant
require_built "$zero" "$plant"
a=$tmp/a.safetensors
"$plant" --make "$a" || exit 99

# diff NAME EDITS...: B = A with EDITS, then zero diff A B into run NAME
diff_planted() {
    name=$1
    shift
    "$plant" "$a" "$tmp/$name.safetensors" "$@" || exit 99
    run "$name" 0 "$zero" diff "$a" "$tmp/$name.safetensors"
}

diff_planted same
expect_ok same && expect_line same out "verdict: equal: 8 of 8 tensors bit-identical"

diff_planted ulp --ulp h.0.attn.c_attn.weight 50
if expect_rc ulp 1; then
    expect_text ulp out "OUTSIDE h.0.attn.c_attn.weight [8, 24] fp32: 1 of 192 differ"
    expect_text ulp out "ulps (fp32) 1:1 | first [2, 2]:"
    expect_line ulp out "verdict: OUTSIDE: 1 of 8 tensors (h.0.attn.c_attn.weight: the bits differ)"
fi

# --ulps K: a tensor within K ulps everywhere is inside (another grouping of a formula),
# a NaN never is
run ulps1 0 "$zero" diff "$a" "$tmp/ulp.safetensors" --ulps 1
if expect_ok ulps1; then
    expect_text ulps1 out "inside  h.0.attn.c_attn.weight [8, 24] fp32: 1 of 192 differ"
    expect_text ulps1 out "within --ulps 1: 1 ulps at most"
    expect_line ulps1 out "verdict: inside the --ulps allowance: 1 of 8 tensors differ, none beyond it"
fi
"$plant" "$tmp/ulp.safetensors" "$tmp/ulp2.safetensors" --ulp h.0.attn.c_attn.weight 50 || exit 99
run ulps2 0 "$zero" diff "$a" "$tmp/ulp2.safetensors" --ulps 1
expect_rc ulps2 1 && expect_text ulps2 out "ulps (fp32) 2:1 | first [2, 2]:"

diff_planted nan --nan h.0.ln_1.weight 3
expect_rc nan 1 && expect_text nan out "OUTSIDE h.0.ln_1.weight [8] fp32: 1 of 8 differ"
expect_text nan out "nan:1 | first [3]:"
expect_text nan out "vs nan (0x7fc00000)"
run nanulps 0 "$zero" diff "$a" "$tmp/nan.safetensors" --ulps 1000000
expect_rc nanulps 1

diff_planted transposed --transpose h.0.mlp.c_fc.weight
expect_rc transposed 1 &&
    expect_line transposed out "OUTSIDE h.0.mlp.c_fc.weight: shape [8, 32] in A, [32, 8] in B: B is exactly A transposed"

diff_planted renamed --rename h.0.ln_1.bias h.0.ln_1.b
if expect_rc renamed 1; then
    expect_line renamed out "OUTSIDE h.0.ln_1.bias: only in A (h.0.ln_1.bias)"
    expect_line renamed out "OUTSIDE h.0.ln_1.b: only in B (h.0.ln_1.b)"
fi

diff_planted missing --drop ln_f.weight
expect_rc missing 1 &&
    expect_line missing out "verdict: OUTSIDE: 1 of 8 tensors (ln_f.weight: missing in B)"

# another trainer's spelling: DeepSpeed's module., torch.compile's _orig_mod., HF's
# transformer., its causal-mask buffer and the head tied to wte
diff_planted wrapped --copy wte.weight lm_head.weight --copy h.0.ln_1.bias h.0.attn.bias \
    --prefix module._orig_mod.transformer.
if expect_ok wrapped; then
    expect_line wrapped out "skipped lm_head.weight: only in B, a tied copy of its wte.weight"
    expect_line wrapped out "skipped h.0.attn.bias: a buffer, only in B"
    expect_line wrapped out "verdict: equal: 8 of 8 tensors bit-identical (buffers and tied copies skipped)"
fi
# an untied head is a tensor of its own
diff_planted untied --copy wte.weight lm_head.weight --ulp lm_head.weight 0
expect_rc untied 1 && expect_line untied out "OUTSIDE lm_head.weight: only in B (lm_head.weight)"

# dtypes: one bf16 ulp counted in bf16 ulps; fp32 against its bf16 rounding, in fp32 ulps
"$plant" "$a" "$tmp/a16.safetensors" --dtype bf16 || exit 99
"$plant" "$tmp/a16.safetensors" "$tmp/b16.safetensors" --ulp wpe.weight 7 || exit 99
run bf16 0 "$zero" diff "$tmp/a16.safetensors" "$tmp/b16.safetensors"
expect_rc bf16 1 && expect_text bf16 out "OUTSIDE wpe.weight [6, 8] bf16: 1 of 48 differ"
expect_text bf16 out "ulps (bf16) 1:1 | first [0, 7]:"
run mixed 0 "$zero" diff "$a" "$tmp/a16.safetensors" --brief
expect_rc mixed 1 && expect_text mixed out "OUTSIDE wte.weight [16, 8] mixed:"
expect_text mixed out "ulps (fp32)"

# bad input: a missing file, a file that is not safetensors, two names that collide
run nofile 0 "$zero" diff "$a" "$tmp/nothing.safetensors"
expect_error nofile 2 "nothing.safetensors"
printf 'not a safetensors file' >"$tmp/junk.safetensors"
run junk 0 "$zero" diff "$tmp/junk.safetensors" "$a"
expect_error junk 2 "junk.safetensors"
"$plant" "$a" "$tmp/twice.safetensors" --copy wte.weight module.wte.weight || exit 99
run twice 0 "$zero" diff "$a" "$tmp/twice.safetensors"
expect_error twice 2 "tensors 'wte.weight' and 'module.wte.weight' are both 'wte.weight'"
run noargs 0 "$zero" diff "$a"
expect_error noargs 2 "give two files"

# an envelope: 2x the tensor's values is far outside, a 1e-7 scale change inside one of
# 1e-6 (a step read from the files' metadata)
cat >"$tmp/env.jsonl" <<'JSON'
{"envelope": 1, "runs": 3, "from": ["x", "y", "z"]}
{"step": 3, "loss": 1e-7, "grad_norm": 1e-6, "tensors": {"ln_f.weight": {"max_abs": 1e-6, "rel_l2": 1e-6}}}
JSON
diff_planted near --scale ln_f.weight 1.0000001 --meta step 3
run near 0 "$zero" diff "$a" "$tmp/near.safetensors" --envelope "$tmp/env.jsonl"
if expect_ok near; then
    expect_text near out "inside  ln_f.weight [8] fp32:"
    expect_line near out "verdict: inside the envelope: 1 of 8 tensors differ, none beyond it"
fi
diff_planted far --scale ln_f.weight 2 --meta step 3
run far 0 "$zero" diff "$a" "$tmp/far.safetensors" --envelope "$tmp/env.jsonl"
expect_rc far 1 && expect_text far out "verdict: OUTSIDE the envelope: 1 of 8 tensors (ln_f.weight: beyond the envelope)"
# a difference in a tensor the envelope does not have is judged by equality
diff_planted other --ulp wte.weight 0 --meta step 3
run other 0 "$zero" diff "$a" "$tmp/other.safetensors" --envelope "$tmp/env.jsonl"
expect_rc other 1 && expect_text other out "(the envelope has no tensor wte.weight: judged by equality)"
run nostep 0 "$zero" diff "$a" "$a" --envelope "$tmp/env.jsonl"
expect_error nostep 2 "no \"step\" in their metadata"
run badstep 0 "$zero" diff "$a" "$a" --envelope "$tmp/env.jsonl" --step 9
expect_error badstep 2 "the envelope has no step 9"
printf '{"envelope": 1, "runs": 3}\n{"step": 1, "loss": -1, "grad_norm": 0}\n' >"$tmp/bad.jsonl"
run badenv 0 "$zero" diff "$a" "$a" --envelope "$tmp/bad.jsonl" --step 1
expect_error badenv 2 "bad.jsonl:2: \"loss\" must be a non-negative number"

finish "zero diff: planted differences found and named, equal files equal, bad input named"
