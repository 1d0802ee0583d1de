#!/bin/sh
# test_examples.sh -- runs examples/train_mlp and examples/custom_unit end to
# end at small sizes and checks what they promise:
#   - every stage prints the tables, the memory ledger equals the ZeRO formula
#     ("ok" on every model-state row) and stages 0-3 print the same losses;
#   - the atom-ordered data makes 1 rank with accumulation 2 equal 2 ranks;
#   - --save-weights / --init-weights round-trip byte for byte;
#   - training from a --write-synthetic-data file equals synthetic training;
#   - bad flags exit 2 and bad files exit 1, naming the flag, file or tensor;
#   - custom_unit trains its own unit at stage 3.
# Run by `make check' from the build directory (tests/mpirun-wrapper); by
# hand: sh tests/test_examples.sh from the top build directory.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
train=$top_builddir/examples/train_mlp
custom=$top_builddir/examples/custom_unit
require_built "$train" "$custom"

# losses NAME: step, loss, lr and grad norm of every progress line, and the final line
losses() {
    grep -E '^step [0-9]+/' "$tmp/$1.out" | cut -d'|' -f1-4
    grep '^final:' "$tmp/$1.out"
}

small="--hidden 32 --layers 2 --steps 5 --batch 8"

# ---- every stage: tables, ledger == formula, comm == theory, same losses
for stage in 0 1 2 3; do
    name=stage$stage
    # shellcheck disable=SC2086
    run "$name" 2 "$train" $small --stage "$stage"
    expect_ok "$name" || continue
    out=$tmp/$name.out
    grep -q '^memory per rank' "$out" || fail "$name: no memory table"
    grep -q '^communication of step 5' "$out" || fail "$name: no communication table"
    for row in params grads master optim 'model states'; do
        grep -Eq "^  $row +.* ok\$" "$out" || fail "$name: memory row '$row' is not ok"
    done
    if grep -q MISMATCH "$out"; then
        fail "$name: a measurement disagrees with theory"
        show "$name"
    fi
    grep -Eq '^sent elements per rank: .* ok$' "$out" || fail "$name: sent elements != theory"
    [ "$(grep -c '^step [0-9]*/5 ' "$out")" -eq 5 ] || fail "$name: expected 5 progress lines"
done
for stage in 1 2 3; do
    [ "$(losses stage$stage)" = "$(losses stage0)" ] ||
        fail "stage $stage printed other losses than stage 0"
done
last0=$(grep '^step 5/5' "$tmp/stage0.out" | cut -d'|' -f2)
last3=$(grep '^step 5/5' "$tmp/stage3.out" | cut -d'|' -f2)
[ -n "$last0" ] && [ "$last0" = "$last3" ] ||
    fail "final loss of stage 0 ($last0) and stage 3 ($last3) differ"

# stage 3 with every unit gathered and released (no persistent units)
# shellcheck disable=SC2086
run gathered 2 "$train" $small --stage 3 --persistence 0
if expect_ok gathered; then
    grep -Eq '^sent elements per rank: .*Ψp = 0, Ψr = [0-9]+, N = 2\)  ok$' "$tmp/gathered.out" ||
        fail "stage 3 without persistent units: sent elements != (3Ψ - Ψr)(N-1)/N"
    [ "$(losses gathered)" = "$(losses stage0)" ] || fail "stage 3 (gathered) losses != stage 0"
fi

# ---- atoms: 1 rank accumulating 2 micro-batches of 2 == 2 ranks with 1 each
run accum 1 "$train" --hidden 32 --layers 2 --steps 3 --batch 4 --micro-batch 2 --stage 2
expect_ok accum && { grep -q '^batch: 4 = micro-batch 2 x accumulation 2 x world 1' \
    "$tmp/accum.out" || fail "accumulation derivation not printed"; }
run noaccum 2 "$train" --hidden 32 --layers 2 --steps 3 --batch 4 --stage 2
expect_ok noaccum && { [ "$(losses accum)" = "$(losses noaccum)" ] ||
    fail "1 rank x accumulation 2 and 2 ranks print different losses"; }

# ---- weights: save, load with --steps 0, save again: the same bytes
w1=$tmp/w1.safetensors
w2=$tmp/w2.safetensors
run save 2 "$train" --hidden 32 --layers 2 --steps 3 --batch 8 --stage 2 --save-weights "$w1"
expect_ok save
run reload 2 "$train" --hidden 32 --layers 2 --steps 0 --batch 8 --stage 3 \
    --init-weights "$w1" --save-weights "$w2"
if expect_ok reload; then
    grep -q '^final: no step taken' "$tmp/reload.out" || fail "--steps 0 did not say so"
    cmp -s "$w1" "$w2" || fail "weights saved after --init-weights differ from the loaded file"
fi

# ---- precision: bf16 and fp16 keep stages 0 and 3 bit-identical; weights
# saved as bf16 load back and are half the size of fp32 ones
for prec in bf16 fp16; do
    for st in 0 3; do
        run "$prec$st" 2 "$train" --hidden 32 --layers 2 --steps 20 --batch 8 --lr 1e-3 \
            --stage "$st" --precision "$prec" --save-weights "$tmp/$prec$st.safetensors" \
            --save-dtype bf16
        expect_ok "$prec$st" || continue
        grep -q "^theory: stage $st, .*($prec, Adam: 2 + 2 + 4 + 8 bytes" "$tmp/$prec$st.out" ||
            fail "$prec stage $st: the mixed-precision formula is not printed"
        if grep -E '^  (params|grads|master|optim|model states) ' "$tmp/$prec$st.out" |
            grep -qv ' ok$'; then
            fail "$prec stage $st: a model-state row is not ok"
        fi
        # 2 bytes per element on the wire, not 4 (MISMATCH in every 16-bit run before)
        grep -Eq '^sent elements per rank: measured ([0-9]+), theory \1 = .*  ok$' \
            "$tmp/$prec$st.out" || fail "$prec stage $st: sent elements != theory"
    done
    [ "$(losses "${prec}0")" = "$(losses "${prec}3")" ] ||
        fail "$prec: stages 0 and 3 print different losses"
    cmp -s "$tmp/${prec}0.safetensors" "$tmp/${prec}3.safetensors" ||
        fail "$prec: stages 0 and 3 saved different weights"
done
grep -q 'loss scale .*(overflow: step skipped)' "$tmp/fp160.out" ||
    fail "fp16: DeepSpeed's 2^32 start did not overflow and skip a step"
grep -q 'loss scale 65536$' "$tmp/fp160.out" ||
    fail "fp16: the loss scale did not come down to 2^16"
run bf16load 2 "$train" --hidden 32 --layers 2 --steps 0 --batch 8 \
    --init-weights "$tmp/bf160.safetensors" --save-weights "$tmp/again.safetensors"
if expect_ok bf16load; then
    size16=$(wc -c <"$tmp/bf160.safetensors")
    size32=$(wc -c <"$tmp/again.safetensors")
    [ $((size32 - size16)) -gt $((size16 / 2)) ] ||
        fail "bf16 weights ($size16 bytes) are not about half the fp32 ones ($size32)"
fi

# ---- data file: the synthetic set written to a file trains the same
data=$tmp/data.safetensors
run write 0 "$train" --hidden 32 --write-synthetic-data "$data" --samples 40
expect_ok write && { [ -s "$data" ] || fail "--write-synthetic-data wrote nothing"; }
# shellcheck disable=SC2086
run fromfile 2 "$train" $small --stage 3 --data "$data"
expect_ok fromfile && { [ "$(losses fromfile)" = "$(losses stage3)" ] ||
    fail "training from the written data file differs from synthetic training"; }

# a NaN or Inf among the inputs is refused at load naming the file, row and column (it
# was "the training diverged or started from non-finite weights" at step 1)
hdr=$(od -An -tu8 -N8 "$data" | tr -d ' ')
inputs_at=$(head -c $((8 + hdr)) "$data" | tail -c "$hdr" | tr -d ' ' |
    sed -n 's/.*"inputs":{[^}]*"data_offsets":\[\([0-9]*\),.*/\1/p')
for v in nan:'\000\000\300\177' inf:'\000\000\200\177'; do
    cp "$data" "$tmp/${v%%:*}.safetensors"
    # shellcheck disable=SC2059 # the value's bytes are the format
    printf "${v#*:}" | dd of="$tmp/${v%%:*}.safetensors" bs=1 conv=notrunc \
        seek=$((8 + hdr + inputs_at + 4 * (7 * 32 + 3))) 2>/dev/null
    run "data_${v%%:*}" 0 "$train" $small --data "$tmp/${v%%:*}.safetensors"
    expect_error "data_${v%%:*}" 1 "$tmp/${v%%:*}.safetensors: inputs\[7\]\[3\] = ${v%%:*} is not a finite number"
done

# ---- integer flags take every form their config keys take (5e8 in ds_config.json):
#      "3e0" steps are 3 steps, "5e5" a bucket of 500000; a fraction stays refused
run sci 0 "$train" --hidden 32 --layers 2 --batch 8 --steps 3e0 --bucket 5e5
expect_ok sci && { grep -q '^final: step 3,' "$tmp/sci.out" || fail "--steps 3e0 did not run 3 steps"; }
run frac 0 "$train" --bucket 5.5
expect_error frac 2 "--bucket: '5.5' is not"

# ---- bad input: exit status and a message naming the culprit
run stage5 0 "$train" --stage 5
expect_error stage5 2 '--stage'
run hidden 0 "$train" --hidden -1
expect_error hidden 2 '--hidden'
run unknown 0 "$train" --no-such-flag
expect_error unknown 2 'no-such-flag'
run batch 0 "$train" --batch 7 --micro-batch 2
expect_error batch 2 '--batch'
run missing 0 "$train" --hidden 32 --layers 2 --init-weights "$tmp/missing.safetensors"
expect_error missing 1 'missing.safetensors'
run shape 2 "$train" --hidden 16 --layers 2 --init-weights "$w1"
expect_error shape 1 'layers.0.0.weight has shape \[128, 32\], the model.s is \[64, 16\]'
run extra 0 "$train" --hidden 32 --layers 1 --init-weights "$w1"
expect_error extra 1 'layers.1.0.weight'
run labels 0 "$train" --hidden 32 --layers 1 --classes 3 --data "$data"
expect_error labels 1 'labels\[[0-9]*\] = [0-9]* is outside'
run help 0 "$train" --help
if expect_ok help; then
    grep -q '^SYNOPSIS' "$tmp/help.out" || fail "--help has no SYNOPSIS"
fi

# ---- custom_unit: a user-written unit trains at stage 3
run custom 2 "$custom"
if expect_ok custom; then
    grep -q "residual_linear" "$tmp/custom.out" || fail "custom_unit did not introduce its unit"
    grep -Eq '^step 8 \| loss [0-9]+\.[0-9]+$' "$tmp/custom.out" ||
        { fail "custom_unit did not train 8 steps to a finite loss"; show custom; }
fi

finish "test_examples: all passed"
