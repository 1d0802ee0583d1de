#!/bin/sh
# test_inputs.sh -- every reader takes only regular files: a directory or a FIFO
# given as --config, --data, --init-weights or inside a --resume checkpoint
# (latest, a rank file) is refused at once naming the path and its kind, never
# read as an empty document ("1:0: invalid JSON"), as LONG_MAX bytes, or waited
# on for a writer. `timeout` turns a hang into a failure.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
mlp=$top_builddir/examples/train_mlp
gpt=$top_builddir/examples/train_gpt
zero=$top_builddir/src/cli/zero
require_built "$mlp" "$gpt" "$zero"

mkfifo "$tmp/fifo" || exit 99
mkdir "$tmp/dir"
small="--hidden 8 --layers 1 --batch 4 --steps 1 --quiet"
for t in dir fifo; do
    case $t in dir) kind="a directory" ;; fifo) kind="a FIFO" ;; esac
    what="$tmp/$t: is $kind, not a regular file"
    run config_$t 0 timeout 20 "$zero" config "$tmp/$t"
    expect_error config_$t 1 "$what"
    run mlp_config_$t 0 timeout 20 "$mlp" $small --config "$tmp/$t"
    expect_error mlp_config_$t 2 "$what"
    # an unusable input is a usage error, found at start-up (src/program/program.c): exit 2
    run mlp_data_$t 0 timeout 20 "$mlp" $small --data "$tmp/$t"
    expect_error mlp_data_$t 2 "$what"
    run mlp_init_$t 0 timeout 20 "$mlp" $small --init-weights "$tmp/$t"
    expect_error mlp_init_$t 2 "$what"
    run gpt_data_$t 0 timeout 20 "$gpt" --steps 1 --quiet --data "$tmp/$t"
    expect_error gpt_data_$t 2 "$what"
done

# a checkpoint whose latest, or whose rank file, is a FIFO
run save 0 "$mlp" $small --save-checkpoint "$tmp/ck"
expect_ok save
mkdir "$tmp/ck_latest"
mkfifo "$tmp/ck_latest/latest"
run resume_latest 0 timeout 20 "$mlp" $small --resume "$tmp/ck_latest"
expect_error resume_latest 1 "$tmp/ck_latest/latest: is a FIFO, not a regular file"
cp -r "$tmp/ck" "$tmp/ck_rank"
rm "$tmp/ck_rank/step_000001/rank-00000.bin"
mkfifo "$tmp/ck_rank/step_000001/rank-00000.bin"
run resume_rank 0 timeout 20 "$mlp" $small --steps 2 --resume "$tmp/ck_rank"
expect_error resume_rank 1 "rank-00000.bin: is a FIFO, not a regular file"
run inspect_rank 0 timeout 20 "$zero" ckpt inspect "$tmp/ck_rank"
expect_error inspect_rank 1 "rank-00000.bin: is a FIFO, not a regular file"

finish "test_inputs: directories and FIFOs are refused by every reader, at once"
