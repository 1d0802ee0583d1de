#!/bin/sh
# test_startup_agreement -- every program agrees on start-up before it acts
# (src/program/program.c): a rank whose flags, config or input files fail, or
# differ from rank 0's, is named with the flag or key by rank 0, and the whole
# job exits non-zero within seconds instead of hanging. Ranks get different
# arguments through Open MPI's MPMD syntax (-np 1 prog A : -np 1 prog B); every
# job runs under `timeout 20', so a hang fails the test instead of stalling CI.
# Also the input checks of issue 14's item 9: a directory or a FIFO as --data,
# an unusable --save-checkpoint directory, NaN in --init-weights.
# shellcheck disable=SC2086 # $m, $g and the rank lists are lists of words
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp=$top_builddir/examples/train_mlp
gpt=$top_builddir/examples/train_gpt
zero=$top_builddir/src/cli/zero
require_built "$mlp" "$gpt" "$zero"

# mpmd NAME "PROG ARGS" "PROG ARGS" [...]: one rank per argument list (a list
# may start with "-np K" for K ranks); output in $tmp/NAME.out/.err, status in
# $rc; fails when the job takes 10 s or more.
mpmd() {
    name=$1
    shift
    apps=""
    for app in "$@"; do
        case $app in
        -np*) apps="$apps${apps:+ : }$app" ;;
        *) apps="$apps${apps:+ : }-np 1 $app" ;;
        esac
    done
    start=$(date +%s)
    timeout 20 "$mpirun_cmd" $mpirun_flags $apps >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    took=$(($(date +%s) - start))
    if [ "$rc" -eq 124 ]; then
        fail "$name hangs (killed after 20 s)"
        show "$name"
    elif [ "$took" -ge 10 ]; then
        fail "$name took $took s"
    fi
}

# no_training NAME: the job stopped before its first step
no_training() {
    if grep -q '^step\|^final' "$tmp/$1.out"; then
        fail "$1: trained although the start-up failed"
        show "$1"
    fi
}

cat >"$tmp/good.json" <<'EOF'
{"train_batch_size": 4}
EOF
cat >"$tmp/unknown_key.json" <<'EOF'
{"train_batch_size": 4, "no_such_key": 1}
EOF

# ---- train_mlp: an error on one rank only ----
m="$mlp --hidden 8 --layers 1 --batch 4 --steps 1 --quiet"

mpmd mlp_config "$m --config $tmp/good.json" "$m --config /nonexistent.json"
expect_error mlp_config 2 "train_mlp: rank 1: --config: /nonexistent.json"
no_training mlp_config

mpmd mlp_bad_flag "$m" "$m --no-such-flag"
expect_error mlp_bad_flag 2 "train_mlp: rank 1: unknown option '--no-such-flag'"

mpmd mlp_lr_nan "$m" "$m --lr nan"
expect_error mlp_lr_nan 2 "train_mlp: rank 1: --lr: 'nan' is not a finite number"

mpmd mlp_batch_7 "$m --batch 8" "$m --batch 7"
expect_error mlp_batch_7 2 "train_mlp: rank 1: --batch 7"

mpmd mlp_unknown_key "$m --config $tmp/good.json" "$m --config $tmp/unknown_key.json"
expect_error mlp_unknown_key 2 "train_mlp: rank 1: --config: .*no_such_key"

# ---- train_mlp: flags or config keys that shape the run differ ----
cat >"$tmp/stage2.json" <<'EOF'
{"train_batch_size": 4, "zero_optimization": {"stage": 2}}
EOF
mpmd mlp_config_key "$m --config $tmp/good.json" "$m --config $tmp/stage2.json"
expect_error mlp_config_key 2 \
    "rank 1: zero_optimization.stage = 2, rank 0: zero_optimization.stage = 0"

# the atom order decides which samples a rank reads and how the engine reduces
mpmd mlp_atom_order "$m" "$m --atom-order rank_major"
expect_error mlp_atom_order 2 \
    'rank 1: libzero.atom_order = "rank_major", rank 0: libzero.atom_order = "micro_step_major"'
no_training mlp_atom_order
mpmd mlp_atom_order_bad "$m" "$m --atom-order rank-major"
expect_error mlp_atom_order_bad 2 \
    "train_mlp: rank 1: --atom-order: 'rank-major' is not micro_step_major or rank_major"

mpmd mlp_steps "$m --steps 1" "$m --steps 2"
expect_error mlp_steps 2 "rank 1: --steps = 2, rank 0: --steps = 1"
no_training mlp_steps

ck="--save-checkpoint $tmp/ck"
mpmd mlp_checkpoint_every "$m $ck --checkpoint-every 1" "$m $ck --checkpoint-every 2"
expect_error mlp_checkpoint_every 2 "rank 1: --checkpoint-every = 2, rank 0: --checkpoint-every = 1"

mpmd mlp_save_checkpoint "$m --save-checkpoint $tmp/ck0" "$m --save-checkpoint $tmp/ck1"
expect_error mlp_save_checkpoint 2 \
    "rank 1: --save-checkpoint = $tmp/ck1, rank 0: --save-checkpoint = $tmp/ck0"
[ -e "$tmp/ck0" ] || [ -e "$tmp/ck1" ] && fail "mlp_save_checkpoint: a checkpoint was written"

mpmd mlp_trace "$m --trace $tmp/trace.json" "$m"
expect_error mlp_trace 2 "rank 1: --trace = (not given), rank 0: --trace = $tmp/trace.json"
[ -e "$tmp/trace.json" ] && fail "mlp_trace: the trace was written"

# four ranks: the one that differs is named
mpmd mlp_four_ranks "-np 3 $m --steps 1" "$m --steps 3"
expect_error mlp_four_ranks 2 "rank 3: --steps = 3, rank 0: --steps = 1"

# ---- train_gpt: flags that shape the run differ ----
g="$gpt --n-layer 1 --n-head 2 --n-embd 16 --batch 2 --steps 1 --quiet --sample 0"
g="$g --eval-problems 0 --val-batches 1"

mpmd gpt_steps "$g --steps 1" "$g --steps 2"
expect_error gpt_steps 2 "rank 1: --steps = 2, rank 0: --steps = 1"

mpmd gpt_val_every "$g --val-every 1" "$g --val-every 2"
expect_error gpt_val_every 2 "rank 1: --val-every = 2, rank 0: --val-every = 1"

mpmd gpt_memory_table "$g --memory-table" "$g"
expect_error gpt_memory_table 2 "rank 1: --memory-table = 0, rank 0: --memory-table = 1"

printf '%s\n' "0123456789 the quick brown fox jumps over the lazy dog" >"$tmp/a.txt"
printf '%s\n' "9876543210 pack my box with five dozen liquor jugs" >"$tmp/b.txt"
mpmd gpt_data "$g --block-size 8 --data $tmp/a.txt" "$g --block-size 8 --data $tmp/b.txt"
expect_error gpt_data 2 "rank 1: --data = $tmp/b.txt, rank 0: --data = $tmp/a.txt"

mpmd gpt_val_batches "$g --val-batches 1" "$g --val-batches 2"
expect_error gpt_val_batches 2 "rank 1: --val-batches = 2, rank 0: --val-batches = 1"

mpmd gpt_sample "$g --sample 0" "$g --sample 4"
expect_error gpt_sample 2 "rank 1: --sample = 4, rank 0: --sample = 0"

# three ranks, the last with a bad value
mpmd gpt_three_ranks "-np 2 $g" "$g --steps -1"
expect_error gpt_three_ranks 2 "train_gpt: rank 2: --steps: '-1' is not"

# ---- the zero tool's MPI commands ----
mpmd schedule_steps "$zero schedule --steps 1" "$zero schedule --steps 2"
expect_error schedule_steps 2 "zero schedule: the ranks disagree on the run: rank 1: --steps = 2"

mpmd memory_bad_flag "$zero memory" "$zero memory --no-such-flag"
expect_error memory_bad_flag 2 "zero memory: rank 1: unknown argument '--no-such-flag'"

mpmd verify_stage "$zero verify --steps 1 --stages 0,1" "$zero verify --steps 1 --stages 0,2"
expect_error verify_stage 2 "rank 1: --stages = 0,2, rank 0: --stages = 0,1"

# ---- input files (one process) ----
mkdir "$tmp/dir"
run gpt_data_dir 0 $g --data "$tmp/dir"
expect_error gpt_data_dir 2 "train_gpt: --data: $tmp/dir: is a directory, not a regular file"

mkfifo "$tmp/fifo"
start=$(date +%s)
timeout 20 $g --data "$tmp/fifo" >"$tmp/gpt_data_fifo.out" 2>"$tmp/gpt_data_fifo.err"
rc=$?
[ $(($(date +%s) - start)) -ge 10 ] && fail "gpt_data_fifo took 10 s or more"
expect_error gpt_data_fifo 2 "train_gpt: --data: $tmp/fifo: is a FIFO, not a regular file"

# --save-checkpoint that cannot be created: found before the training
: >"$tmp/file"
run mlp_ckpt_under_file 0 $m --save-checkpoint "$tmp/file/ck"
expect_error mlp_ckpt_under_file 1 "train_mlp: --save-checkpoint: cannot create $tmp/file/ck"
no_training mlp_ckpt_under_file
run mlp_ckpt_is_file 0 $m --save-checkpoint "$tmp/file"
expect_error mlp_ckpt_is_file 2 \
    "train_mlp: --save-checkpoint: $tmp/file is a regular file, not a directory"
no_training mlp_ckpt_is_file
if [ "$(id -u)" -ne 0 ]; then # root writes into read-only directories
    mkdir "$tmp/readonly" && chmod 555 "$tmp/readonly"
    run mlp_ckpt_readonly 0 $m --save-checkpoint "$tmp/readonly"
    expect_error mlp_ckpt_readonly 1 "train_mlp: --save-checkpoint: cannot write into $tmp/readonly"
    no_training mlp_ckpt_readonly
fi
run mlp_ckpt_ok 0 $m --save-checkpoint "$tmp/ck_ok"
expect_ok mlp_ckpt_ok && [ ! -e "$tmp/ck_ok/latest" ] && fail "mlp_ckpt_ok: no checkpoint saved"
for probe in "$tmp/ck_ok"/.zero-probe* "$tmp"/.zero-probe*; do
    [ -e "$probe" ] && fail "mlp_ckpt_ok: the directory probe $probe was left behind"
done

# NaN in --init-weights: named at start-up, not trained to "loss nan"
run mlp_save 0 $m --save-weights "$tmp/w.safetensors"
if expect_ok mlp_save; then
    # the first 4 bytes of the data section (after the 8-byte header length and
    # the header) become a float NaN, 0x7fc00000 little-endian
    hlen=$(od -An -t u8 -N 8 "$tmp/w.safetensors" | tr -d ' ')
    printf '\000\000\300\177' |
        dd of="$tmp/w.safetensors" bs=1 seek=$((8 + hlen)) conv=notrunc 2>/dev/null
    run mlp_nan_weights 0 $m --init-weights "$tmp/w.safetensors"
    expect_error mlp_nan_weights 1 \
        "train_mlp: --init-weights: $tmp/w.safetensors: tensor .* holds NaN at element 0"
    no_training mlp_nan_weights
fi

# a loss that stops being finite stops the run with an error, not exit 0
run mlp_diverges 0 $mlp --hidden 8 --layers 1 --batch 4 --steps 20 --lr 1e30 --quiet
expect_error mlp_diverges 1 "train_mlp: step [0-9]*: the loss is .*; stopping"

finish "$test_name: every start-up failure or difference named, no hang"
