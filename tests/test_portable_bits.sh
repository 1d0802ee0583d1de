#!/bin/sh
# test_portable_bits.sh -- exact mode's bits do not depend on the processor's
# vector width or on OpenBLAS: the MLP (fp32, bf16, fp16) and the GPT (fp32,
# bf16) trained for a few steps at N = 1, 2 and 3 and a couple of stages save
# the same weights under every ZERO_CPU_ISA (scalar, avx2, avx512: the exact
# GEMM's micro-kernels) with the host kernels' ZERO_HOST_ISA of the same width
# (base, avx2, avx512), each paired with an OPENBLAS_CORETYPE (Prescott,
# Haswell, SkylakeX), and under ZERO_CPU_THREADS = 1, 2, 3. A variant this
# processor lacks is skipped (the rest must still agree). The weights are
# compared as files (cksum of --save-weights), the fp32 MLP through the hash
# table `zero verify` prints for stages 0 and 3 at N = 3, 2, 1; and all of them
# equal the golden fingerprints in tests/golden/portable_bits.txt. The GPT in bf16
# also under the bf16-tile contract (libzero.matmul "bf16_tile"): emulated by every
# variant above, and run by AMX's TDPBF16PS under ZERO_CPU_ISA=amx where the processor
# has it.
# Run by `make check' from the build directory; by hand: sh tests/test_portable_bits.sh
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
if under_sanitizers; then
    # a claim about bits, which the default build checks; the kernels of every
    # variant run under the sanitizers in test_gemm and test_exact_vec
    echo "test_portable_bits.sh: skipped in the sanitizer build (the default build runs it)"
    exit 77
fi
mlp=$top_builddir/examples/train_mlp
gpt=$top_builddir/examples/train_gpt
zero=$top_builddir/src/cli/zero
require_built "$mlp" "$gpt" "$zero"

mlp_small="--hidden 32 --layers 2 --steps 3 --batch 12 --quiet"
gpt_small="--n-layer 1 --steps 3 --batch 6 --sample 0 --eval-problems 0 --val-every 0"
printf '{"bf16": {"enabled": true}, "libzero": {"matmul": "bf16_tile"}}\n' >"$tmp/tile.json"
fingerprints="verify mlp-bf16 mlp-fp16 gpt-fp32 gpt-bf16 gpt-tile"

# trainings TAG ENV...: every training of the comparison under ENV (NAME=VALUE
# words); $tmp/TAG-WHAT.sum holds each one's fingerprint
trainings() {
    tag=$1
    shift
    envs="$*"
    # shellcheck disable=SC2086
    run "$tag-verify" 3 env $envs "$zero" verify --worlds 3,2,1 --stages 0,3 --hidden 32 \
        --layers 2 --steps 2 --micro-batch 1 --batch 6
    # verify exits 1 when N = 3 and N = 1 differ by rounding (accumulation over 3
    # ranks nests another tree, docs/exactness.md); the rows are what is compared
    grep -E '^stage [0-3], N = ' "$tmp/$tag-verify.out" >"$tmp/$tag-verify.sum" ||
        { fail "$tag: zero verify printed no hashes"; show "$tag-verify"; }
    for job in "mlp-bf16 2 $mlp $mlp_small --stage 3 --precision bf16" \
        "mlp-fp16 3 $mlp $mlp_small --stage 1 --precision fp16" \
        "gpt-fp32 0 $gpt $gpt_small --stage 0" \
        "gpt-bf16 3 $gpt $gpt_small --stage 2 --bf16" \
        "gpt-tile 2 $gpt $gpt_small --stage 3 --config $tmp/tile.json"; do
        what=${job%% *}
        rest=${job#* }
        np=${rest%% *}
        prog_args=${rest#* }
        # shellcheck disable=SC2086
        run "$tag-$what" "$np" env $envs $prog_args --save-weights "$tmp/$tag-$what.safetensors"
        expect_ok "$tag-$what" && cksum <"$tmp/$tag-$what.safetensors" >"$tmp/$tag-$what.sum"
    done
}

# compare TAG REF: every fingerprint of TAG equals REF's
compare() {
    for f in $fingerprints; do
        [ -s "$tmp/$2-$f.sum" ] || continue
        [ -s "$tmp/$1-$f.sum" ] || continue
        cmp -s "$tmp/$1-$f.sum" "$tmp/$2-$f.sum" ||
            fail "$f: $1 gives other weights than $2 ($(head -1 "$tmp/$1-$f.sum") vs $(head -1 "$tmp/$2-$f.sum"))"
    done
}

ref=
threads=1
for pair in scalar:Prescott avx2:Haswell avx512:SkylakeX; do
    isa=${pair%%:*}
    core=${pair#*:}
    run probe-$isa 0 env ZERO_CPU_ISA=$isa "$mlp" --hidden 8 --layers 1 --steps 0 --quiet
    if [ "$rc" -ne 0 ]; then
        grep -q "ZERO_CPU_ISA=$isa: this processor" "$tmp/probe-$isa.err" ||
            { fail "ZERO_CPU_ISA=$isa refused without saying the processor lacks it"; show probe-$isa; }
        echo "$test_name: skipping $isa: this processor lacks it"
        continue
    fi
    host=$isa # the host kernels' variants (Adam, casts, sums, exact math) by the same name
    [ "$isa" = scalar ] && host=base
    trainings "$isa" ZERO_CPU_ISA="$isa" ZERO_HOST_ISA="$host" OPENBLAS_CORETYPE="$core" \
        ZERO_CPU_THREADS="$threads"
    threads=$((threads + 1))
    if [ -z "$ref" ]; then ref=$isa; else compare "$isa" "$ref"; fi
done

# the bf16-tile contract by the instruction itself
run probe-amx 0 env ZERO_CPU_ISA=amx "$mlp" --hidden 8 --layers 1 --steps 0 --quiet
if [ "$rc" -eq 0 ] && [ -n "$ref" ]; then
    # shellcheck disable=SC2086
    run amx-gpt-tile 2 env ZERO_CPU_ISA=amx ZERO_HOST_ISA=avx512 "$gpt" $gpt_small --stage 3 \
        --config "$tmp/tile.json" --save-weights "$tmp/amx-gpt-tile.safetensors"
    expect_ok amx-gpt-tile && cksum <"$tmp/amx-gpt-tile.safetensors" >"$tmp/amx-gpt-tile.sum"
    compare amx "$ref"
else
    echo "$test_name: skipping amx: this processor lacks it"
fi

# golden: what every machine prints (computed once, on x86-64; tests/aarch64 checks
# arm64 against x86-64). A change of the numerics must update the file on purpose:
# ZERO_UPDATE_GOLDEN=1 sh tests/test_portable_bits.sh rewrites it.
golden=$top_srcdir/tests/golden/portable_bits.txt
if [ -n "$ref" ]; then
    for f in $fingerprints; do
        sed "s/^/$f: /" "$tmp/$ref-$f.sum"
    done >"$tmp/golden.now"
    if [ "${ZERO_UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$tmp/golden.now" "$golden"
    elif ! cmp -s "$tmp/golden.now" "$golden"; then
        fail "the bits differ from the golden ones in $golden (diff below: - golden, + here)"
        diff "$golden" "$tmp/golden.now" | sed 's/^/    /'
    fi
fi

# an unknown variant is refused with a message, not a crash
run badisa 0 env ZERO_CPU_ISA=sse9 "$mlp" --hidden 8 --layers 1 --steps 1 --quiet
expect_error badisa 1 'ZERO_CPU_ISA=sse9: unknown'

# threads really split these GEMMs (4H = 2048 columns, 12 rows, K = 512)
for t in 1 2 3; do
    run "threads$t" 0 env ZERO_CPU_THREADS=$t "$mlp" --hidden 512 --layers 1 --steps 2 --batch 12 \
        --quiet --save-weights "$tmp/threads$t.safetensors"
    expect_ok "threads$t"
done
for t in 2 3; do
    cmp -s "$tmp/threads1.safetensors" "$tmp/threads$t.safetensors" ||
        fail "ZERO_CPU_THREADS=$t gives other weights than 1 thread"
done

finish "$test_name: every variant, OpenBLAS core and thread count gives the same bits"
