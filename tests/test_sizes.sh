#!/bin/sh
# test_sizes.sh -- sizes derived from flags and config keys are checked
# (include/zero/size.h): a batch whose buffers overflow 64 bits, or that no
# memory can hold, is an error naming the flag or key and a non-zero exit, never
# a wrapped product and a crash. Run under the ASan/UBSan build too, where a
# signed overflow or a short buffer would abort the program.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
mlp=$top_builddir/examples/train_mlp
gpt=$top_builddir/examples/train_gpt
require_built "$mlp" "$gpt"

run mlp_batch 0 "$mlp" --hidden 4 --layers 1 --steps 1 --batch 4611686018427387904
expect_error mlp_batch 1 "train_micro_batch_size_per_gpu.*--hidden 4.*overflows"

printf '{"train_batch_size": 4611686018427387904}\n' >"$tmp/big.json"
run mlp_config 0 "$mlp" --hidden 4 --layers 1 --steps 1 --config "$tmp/big.json"
expect_error mlp_config 1 "micro-batch of 4611686018427387904 samples (train_micro_batch_size_per_gpu).*overflows"

# a batch that fits 64 bits but no memory: the message says how much was asked for
run mlp_huge 0 "$mlp" --hidden 4 --layers 1 --steps 1 --batch 1000000000000
expect_error mlp_huge 1 "micro-batch of 1000000000000 samples.*no memory for 4000000000000 x 4 = 16000000000000 bytes"

run gpt_batch 0 "$gpt" --block-size 524288 --batch 35184372088832
expect_error gpt_batch 1 "train_micro_batch_size_per_gpu) x --block-size 524288.*overflows"

# model sizes from flags
run mlp_hidden 0 "$mlp" --hidden 4611686018427387904 --layers 1 --steps 1 --batch 2
expect_error mlp_hidden 1 "inner width 4 \* hidden: 4611686018427387904 \* 4 overflows"
run mlp_classes 0 "$mlp" --hidden 4 --classes 4611686018427387904 --layers 1 --steps 1 --batch 2
expect_error mlp_classes 1 "unit classifier: parameter weight: .* overflows"

finish "test_sizes: overflowing and huge batches are clear errors in train_mlp and train_gpt"
