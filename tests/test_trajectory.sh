#!/bin/sh
# The trajectory file and the order seed:
#   - schema: the header's fields, every step line's fields and types, a hash per
#     tensor equal to FNV-1a 64 of the weights file's bytes (recomputed by st_plant),
#     weights every K steps with their step in the metadata, bad flags named;
#   - --order-seed S: stages 0-3 at N = 2, 3 (rank-major atoms, A = 4) and 4 give the
#     bits of N = 1 for the seed (zero diff on the trajectories exits 0), another seed
#     and the default order give other bits; bf16 and train_gpt likewise at N = 2
#     stage 3.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp=$top_builddir/examples/train_mlp
gpt=$top_builddir/examples/train_gpt
zero=$top_builddir/src/cli/zero
plant=$top_builddir/tests/st_plant
require_built "$mlp" "$gpt" "$zero" "$plant"

# B 24, m 2: A = 12, 6, 4, 3 at N = 1, 2, 3, 4
args="--hidden 16 --layers 2 --batch 24 --micro-batch 2 --lr 1e-2 --quiet --steps 3"
t=$tmp/ref.jsonl
run ref 0 "$mlp" $args --order-seed 5 --trajectory "$t" --trajectory-weights-every 2
expect_ok ref

# ---- schema ----
head -n 1 "$t" >"$tmp/header"
for key in '"trajectory":1' '"program":"train_mlp"' '"world":1' '"stage":0' \
    '"compute_dtype":"fp32"' '"atom_order":"micro_step_major"' '"order_seed":5' \
    '"global_batch":24' '"micro_batch":2' '"accumulation":12' '"hash":"fnv1a64-f32le"' \
    '{"name":"layers.0.0.weight","shape":[64,16]}' '{"name":"classifier.bias","shape":[10]}'; do
    grep -qF "$key" "$tmp/header" || fail "header: no $key"
done
[ "$(wc -l <"$t")" -eq 5 ] || fail "$(wc -l <"$t") lines, expected the header, step 0 and 3 steps"
num='-\{0,1\}[0-9][0-9.e+-]*'
hashes='"hashes":{\("[a-z0-9._]*":"[0-9a-f]\{16\}",\)\{9\}"[a-z0-9._]*":"[0-9a-f]\{16\}"}'
for step in 1 2 3; do
    line=$(sed -n "$((step + 2))p" "$t")
    echo "$line" | grep -q "^{\"step\":$step,\"loss\":$num,\"grad_norm\":$num,\"lr\":$num,\"loss_scale\":$num,\"skipped\":false,$hashes" ||
        fail "step $step: the line does not follow the schema: $line"
done
sed -n 2p "$t" | grep -q "^{\"step\":0,$hashes,\"weights\":\"ref.jsonl.step000000.safetensors\"}$" ||
    fail "step 0: $(sed -n 2p "$t")"
sed -n 4p "$t" | grep -q '"weights":"ref.jsonl.step000002.safetensors"}$' || fail "step 2: no weights"
sed -n 3p "$t" | grep -q '"weights"' && fail "step 1 has weights (every 2)"
# the documented hash, recomputed from the weights file; and the file's step
"$plant" --hash "$t.step000002.safetensors" >"$tmp/hashes" || fail "st_plant --hash"
while read -r name hash; do
    sed -n 4p "$t" | grep -qF "\"$name\":\"$hash\"" || fail "step 2: $name's hash is not $hash"
done <"$tmp/hashes"
[ "$(wc -l <"$tmp/hashes")" -eq 10 ] || fail "the weights file has $(wc -l <"$tmp/hashes") tensors"
printf '{"envelope":1,"runs":2}\n{"step":2,"loss":0,"grad_norm":0,"tensors":{"classifier.bias":{"max_abs":0,"rel_l2":0}}}\n' >"$tmp/env"
run stepmeta 0 "$zero" diff "$t.step000002.safetensors" "$t.step000002.safetensors" --envelope "$tmp/env"
expect_ok stepmeta || fail "the weights file has no step 2 in its metadata"
run self 0 "$zero" diff "$t" "$t"
expect_ok self && expect_line self out "verdict: equal: 4 of 4 steps bit-identical"

run noflag 0 "$mlp" $args --trajectory-weights-every 2
expect_error noflag 2 "train_mlp: --trajectory-weights-every needs --trajectory FILE"
run badseed 0 "$mlp" $args --order-seed -3
expect_error badseed 2 "train_mlp: --order-seed: '-3' is not a non-negative integer"
run dirtraj 0 "$mlp" $args --trajectory "$tmp"
expect_error dirtraj 1 "--trajectory: $tmp: is a directory"
run mixed 0 "$zero" diff "$t" "$t.step000002.safetensors"
expect_error mixed 2 "is a trajectory file, .* is not"

# ---- the contract under a seed ----
same_as_ref() { # NAME: its trajectory equals ref's, step by step
    run "diff_$1" 0 "$zero" diff "$t" "$tmp/$1.jsonl"
    expect_ok "diff_$1" || fail "$1: another trajectory than N = 1 stage 0 under seed 5"
}
for np in 2 4; do
    for stage in 0 1 2 3; do
        [ "$np" -eq 4 ] && [ "$stage" -eq 1 ] && continue # N = 4: stages 0, 2, 3
        run "s${stage}n$np" "$np" "$mlp" $args --stage "$stage" --order-seed 5 \
            --trajectory "$tmp/s${stage}n$np.jsonl"
        expect_ok "s${stage}n$np" && same_as_ref "s${stage}n$np"
    done
done
for stage in 0 1 2 3; do # N = 3: rank-major atoms, A = 4, give the tree over 12 atoms
    run "s${stage}n3" 3 "$mlp" $args --stage "$stage" --order-seed 5 --atom-order rank_major \
        --trajectory "$tmp/s${stage}n3.jsonl"
    expect_ok "s${stage}n3" && same_as_ref "s${stage}n3"
done
run seed6 0 "$mlp" $args --order-seed 6 --trajectory "$tmp/seed6.jsonl"
run seed0 0 "$mlp" $args --trajectory "$tmp/seed0.jsonl"
for other in seed6 seed0; do
    run "diff_$other" 0 "$zero" diff "$t" "$tmp/$other.jsonl"
    expect_rc "diff_$other" 1 && expect_text "diff_$other" out "verdict: OUTSIDE: 3 of 4 steps (first: step 1:"
done

# bf16 (each micro-step's gradient rounded once, summed in fp32): the seed's bits held
# at N = 2 stage 3, another seed's not
b="--precision bf16 --order-seed 5"
run bf1 0 "$mlp" $args $b --trajectory "$tmp/bf1.jsonl"
run bf2 2 "$mlp" $args $b --stage 3 --trajectory "$tmp/bf2.jsonl"
run bf6 0 "$mlp" $args --precision bf16 --order-seed 6 --trajectory "$tmp/bf6.jsonl"
if expect_ok bf1 && expect_ok bf2 && expect_ok bf6; then
    grep -qF '"compute_dtype":"bf16"' "$tmp/bf1.jsonl" || fail "bf16: the header says another dtype"
    run diff_bf2 0 "$zero" diff "$tmp/bf1.jsonl" "$tmp/bf2.jsonl"
    expect_ok diff_bf2
    run diff_bf6 0 "$zero" diff "$tmp/bf1.jsonl" "$tmp/bf6.jsonl"
    expect_rc diff_bf6 1
fi

# train_gpt: the same file from the shared driver, its seed held at N = 2 stage 3
g="--steps 2 --sample 0 --eval-problems 0 --quiet --batch 8 --micro-batch 2 --order-seed 3"
run gpt1 0 "$gpt" $g --trajectory "$tmp/g1.jsonl" --trajectory-weights-every 2
run gpt2 2 "$gpt" $g --stage 3 --trajectory "$tmp/g2.jsonl"
if expect_ok gpt1 && expect_ok gpt2; then
    grep -qF '{"name":"h.0.attn.c_attn.weight","shape":[64,192]}' "$tmp/g1.jsonl" ||
        fail "train_gpt: no h.0.attn.c_attn.weight in the header"
    run diff_gpt 0 "$zero" diff "$tmp/g1.jsonl" "$tmp/g2.jsonl"
    expect_ok diff_gpt
fi

finish "trajectory: schema and hashes hold; an order seed keeps stages 0-3 and N = 1-4 identical"
