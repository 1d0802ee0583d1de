#!/bin/sh
# test_overlap.sh -- overlap changes when collectives run, never the bits: train_mlp's
# trained weights are byte-identical with --overlap 0 and 1 at N = 2, 3, 4 in stages 0-3
# (N = 2 and 4 share one reference: with a fixed micro-batch the tree over atoms does not
# depend on a power-of-two N; N = 3 has its own), with small
# reduce buckets (several reductions in flight at once) and gradient accumulation (3-6
# micro-steps). With --overlap 1 the exact reductions and gathers run on the cpu backend's
# communication thread (backends/cpu/cpu_progress.c); tests/test_trace.c checks that
# they then overlap compute in the trace.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

train="$top_builddir/examples/train_mlp"
require_built "$train"

# the suites that repeat this one (sanitizers, distcheck) walk the paths at the odd
# N = 3 only; the default build checks the bits at every N
worlds="2 3 4"
small_sweep && worlds=3
ref=""
for np in $worlds; do
    [ "$np" -eq 3 ] && ref_keep="$ref" && ref=""
    [ "$np" -eq 4 ] && ref="$ref_keep"
    for stage in 0 1 2 3; do
        for overlap in 0 1; do
            name="n${np}_s${stage}_o${overlap}"
            run "$name" "$np" "$train" --stage "$stage" --overlap "$overlap" --hidden 32 \
                --layers 2 --batch 24 --micro-batch 2 --steps 2 --bucket 3000 --quiet \
                --save-weights "$tmp/$name.safetensors"
            expect_ok "$name" || continue
            if [ -z "$ref" ]; then
                ref="$tmp/$name.safetensors"
            elif ! cmp -s "$ref" "$tmp/$name.safetensors"; then
                fail "$name: weights differ from $(basename "$ref" .safetensors)"
            fi
        done
    done
done
finish "overlap 0 and 1 give identical weights at N = 2, 3, 4, stages 0-3"
