#!/bin/sh
# test_config_cli.sh -- ds_config.json from the command line:
#   - `zero config` prints every example config resolved (exit 0), with the
#     values and origins it promises, and --world applies the batch rule;
#   - bad configs exit 1 with the message naming the key (misspelling with a
#     suggestion, duplicate key, syntax error with line:column, unimplemented
#     feature, batch arithmetic); usage errors exit 2;
#   - train_mlp --config takes the file, and flags override it wherever they stand.
# Run by `make check' (tests/mpirun-wrapper); by hand: sh tests/test_config_cli.sh
# from the top build directory.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
zero=$top_builddir/src/cli/zero
train=$top_builddir/examples/train_mlp
configs=$top_srcdir/examples/configs
bad=$top_srcdir/tests/configs
require_built "$zero" "$train"

# ---- zero config on the example configs
for stage in 0 1 2 3; do
    run "stage$stage" 0 "$zero" config "$configs/stage$stage.json" --world 2
    expect_rc "stage$stage" 0
    expect_line "stage$stage" out "zero_optimization.stage = $stage (file)"
    expect_line "stage$stage" out "gradient_accumulation_steps = 2 (derived)"
    expect_line "stage$stage" out "train_batch_size = 16 (file)"
    lines=$(grep -c ' = ' "$tmp/stage$stage.out")
    [ "$lines" -eq 82 ] || fail "stage$stage: $lines keys printed, expected 82"
done
expect_line stage3 out "zero_optimization.stage3_max_live_parameters = 1000000000 (file)"
expect_line stage3 out "zero_optimization.reduce_scatter = true (default)"
expect_line stage0 out "zero_optimization.overlap_comm = false (derived)"
expect_line stage0 out 'libzero.collectives = "exact" (file)'
expect_line stage0 out 'libzero.atom_order = "micro_step_major" (default)'
expect_line stage0 out 'libzero.activations = "fp32" (default)'

run noworld 0 "$zero" config "$configs/stage1.json"
expect_rc noworld 0
expect_line noworld out "gradient_accumulation_steps = null (default)"

run auto 0 "$zero" config "$bad/hf_auto.json" --world 4
expect_rc auto 0
expect_line auto out "train_batch_size = 8 (auto, as Hugging Face fills it: world x per_device_train_batch_size x accumulation)"
expect_line auto out "optimizer.params.lr = 0.001 (auto, as Hugging Face fills it: learning_rate)"
expect_line auto out "zero_optimization.stage3_prefetch_bucket_size = 50000000 (auto, as Hugging Face fills it: 0.9 hidden_size^2)"

# Hugging Face's ZeRO-3 example (its DeepSpeed integration docs) with the amp and
# flops_profiler sections: "auto" where the integration fills it, amp off
run hf 0 "$zero" config "$bad/hf_zero3.json"
expect_rc hf 0
expect_line hf out "scheduler.params.total_num_steps = 0 (auto, as Hugging Face fills it: num_training_steps)"
expect_line hf out "fp16.enabled = false (auto, as Hugging Face fills it: fp16)"
# ... and train_mlp resolves each from its flags and model, printing where from
run hf_mlp 0 "$train" --config "$bad/hf_zero3.json" --hidden 16 --layers 1 --classes 4 \
    --steps 2 --batch 4 --lr 2e-4
expect_rc hf_mlp 0
expect_line hf_mlp out "config: optimizer.params.lr = auto -> 0.0002 (from --lr)"
expect_line hf_mlp out "config: scheduler.params.total_num_steps = auto -> 2 (from --steps)"
expect_line hf_mlp out "config: train_batch_size = auto -> 4 (from --batch)"
expect_line hf_mlp out "config: zero_optimization.reduce_bucket_size = auto -> 256 (hidden_size^2, --hidden 16)"
expect_line hf_mlp out "config: zero_optimization.stage3_param_persistence_threshold = auto -> 160 (10 hidden_size, --hidden 16)"

# libzero.matmul's "auto" is its documented default, not Hugging Face's placeholder
# (it was refused as one); libzero.activations = "compute" would change nothing in
# the residual MLP, so train_mlp refuses it (it was accepted without a word)
echo '{"libzero": {"matmul": "auto"}}' >"$tmp/matmul_auto.json"
run matmul_auto 0 "$train" --config "$tmp/matmul_auto.json" --hidden 8 --layers 1 --steps 1 \
    --batch 4 --quiet
expect_rc matmul_auto 0
echo '{"libzero": {"activations": "compute"}}' >"$tmp/act_compute.json"
run act_compute 0 "$train" --config "$tmp/act_compute.json" --hidden 8 --layers 1 --steps 1
expect_error act_compute 2 "train_mlp: --config: $tmp/act_compute.json: libzero.activations = \"compute\" applies to the GPT's blocks (train_gpt)"

# "auto" where the integration fills nothing is an error naming the key
for key in '"zero_optimization": {"stage": "auto"}' '"optimizer": {"type": "auto"}' \
    '"zero_optimization": {"allgather_bucket_size": "auto"}'; do
    printf '{"train_micro_batch_size_per_gpu": 2, %s}\n' "$key" >"$tmp/auto_bad.json"
    run auto_bad 0 "$zero" config "$tmp/auto_bad.json"
    expect_rc auto_bad 1
    expect_text auto_bad err "\"auto\" is resolved only for the keys DeepSpeed's Hugging Face integration fills"
done

# accepted means honoured: what this build cannot do is refused, naming the key;
# zero config runs the engine's own checks (offload at stage 0, the trace's steps)
check_refused() { # NAME JSON-MEMBERS TEXT
    printf '{"train_micro_batch_size_per_gpu": 2, %s}\n' "$2" >"$tmp/$1.json"
    run "$1" 0 "$zero" config "$tmp/$1.json"
    expect_rc "$1" 1
    expect_text "$1" err "$3"
}
check_refused ratio '"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}' \
    "zero_optimization.offload_optimizer.ratio=0.3: partial optimizer offload (a ratio below 1) is not implemented yet in this build"
check_refused buffers '"zero_optimization": {"offload_param": {"buffer_count": 8}}' \
    "zero_optimization.offload_param.{nvme_path, buffer_count, buffer_size, max_in_cpu}: set to other than DeepSpeed's defaults, but they tune NVMe offload only"
check_refused fast_init '"zero_optimization": {"offload_optimizer": {"fast_init": true}}' \
    "zero_optimization.offload_optimizer.{nvme_path, buffer_count, pipeline_read, pipeline_write, fast_init}: set to other than DeepSpeed's defaults, but they tune NVMe offload only"
check_refused amp '"amp": {"enabled": true}' "amp.enabled=true: NVIDIA Apex AMP is not implemented yet"
check_refused flops '"flops_profiler": {"enabled": true}' \
    "flops_profiler.enabled=true: the flops profiler is not implemented yet"
check_refused offload0 '"zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}}' \
    "zero_optimization.offload_optimizer.device = cpu needs stage 1, 2 or 3 (stage is 0)"
check_refused trace_steps '"libzero": {"trace": {"steps": "3-2"}}' 'libzero.trace.steps "3-2": '

# fp16, bf16, offload, nvme: valid DeepSpeed configs
for f in fp16 bf16 offload nvme; do
    run "$f" 0 "$zero" config "$configs/$f.json" --world 2
    expect_rc "$f" 0
done
expect_line offload out "zero_optimization.offload_optimizer.device = \"cpu\" (file)"
expect_line offload out "zero_optimization.offload_param.device = \"cpu\" (file)"
expect_line nvme out "zero_optimization.offload_optimizer.device = \"nvme\" (file)"
expect_line nvme out "zero_optimization.offload_param.nvme_path = \"/var/tmp\" (file)"
expect_line nvme out "aio.queue_depth = 8 (file)"
expect_line nvme out "aio.use_gds = false (default)"

# ---- bad configs: exit 1, the key named
run misspelled 0 "$zero" config "$bad/misspelled.json"
expect_rc misspelled 1
expect_line misspelled err "zero config: $bad/misspelled.json: zero_optimization.stage3_prefetch_bucket_sise: unknown key; did you mean zero_optimization.stage3_prefetch_bucket_size?"

run duplicate 0 "$zero" config "$bad/duplicate.json"
expect_rc duplicate 1
expect_line duplicate err "zero config: $bad/duplicate.json:6:11: invalid JSON: duplicate object key near '\"stage\"'"

run syntax 0 "$zero" config "$bad/bad_syntax.json"
expect_rc syntax 1
expect_line syntax err "zero config: $bad/bad_syntax.json:5:11: invalid JSON: '}' expected near '\"stage\"'"

run arithmetic 0 "$zero" config "$configs/stage0.json" --world 3
expect_rc arithmetic 1
expect_line arithmetic err "zero config: $configs/stage0.json: train_batch_size 16 is not divisible by train_micro_batch_size_per_gpu 4 * world size 3 = 12"

run missing 0 "$zero" config "$tmp/none.json"
expect_rc missing 1
expect_text missing err "zero config: $tmp/none.json: "

# ---- usage
run usage_world 0 "$zero" config "$configs/stage0.json" --world zero
expect_rc usage_world 2
expect_text usage_world err "--world: expected a rank count >= 1"
run usage_none 0 "$zero" config
expect_rc usage_none 2
run usage_help 0 "$zero" config --help
expect_rc usage_help 0
expect_text usage_help out "usage: zero config FILE [--world N]"

# ---- train_mlp --config, flags over the file (one rank, no step: the header shows all)
small="--hidden 16 --layers 1 --classes 4 --steps 0"
# shellcheck disable=SC2086 # $small is a list of words
run mlp_file 0 "$train" --config "$configs/stage3.json" $small
expect_rc mlp_file 0
expect_text mlp_file out "| stage 3 | mode exact"
expect_text mlp_file out "batch: 16 = micro-batch 4 x accumulation 4 x world 1"
expect_text mlp_file out "optimizer: AdamW lr 1.00e-03 betas (0.9, 0.999) eps 1e-08 weight decay 0.01 | clipping 1"

# the flags win wherever they stand, before or after --config
# shellcheck disable=SC2086
run mlp_flags 0 "$train" --stage 1 --lr 5e-4 --config "$configs/stage3.json" --batch 8 --mode native $small
expect_rc mlp_flags 0
expect_text mlp_flags out "| stage 1 | mode native"
expect_text mlp_flags out "batch: 8 = micro-batch 4 x accumulation 2 x world 1"
expect_text mlp_flags out "optimizer: AdamW lr 5.00e-04"

# without --config: train_mlp's own defaults
# shellcheck disable=SC2086
run mlp_plain 0 "$train" $small
expect_rc mlp_plain 0
expect_text mlp_plain out "| stage 0 | mode exact"
expect_text mlp_plain out "batch: 32 = micro-batch 32 x accumulation 1 x world 1"
expect_text mlp_plain out "optimizer: AdamW lr 1.00e-04"

# a bad file is a usage error naming the file and key
# shellcheck disable=SC2086
run mlp_bad 0 "$train" --config "$bad/misspelled.json" $small
expect_rc mlp_bad 2
expect_line mlp_bad err "train_mlp: --config: $bad/misspelled.json: zero_optimization.stage3_prefetch_bucket_sise: unknown key; did you mean zero_optimization.stage3_prefetch_bucket_size?"

# the libzero.trace section writes the trace as --trace does
printf '{"train_micro_batch_size_per_gpu": 2, "libzero": {"trace": {"path": "%s", "steps": "2"}}}\n' \
    "$tmp/trace.json" >"$tmp/trace_cfg.json"
run mlp_trace 0 "$train" --config "$tmp/trace_cfg.json" --hidden 16 --layers 1 --steps 3
expect_rc mlp_trace 0
if [ -s "$tmp/trace.json" ]; then
    grep -q '"traceEvents"' "$tmp/trace.json" || fail "mlp_trace: no trace events in the file"
else
    fail "mlp_trace: libzero.trace.path wrote no trace"
fi

# steps_per_print is the progress lines' interval (and the last step);
# wall_clock_breakdown adds the forward/backward/step/communication times
printf '{"train_micro_batch_size_per_gpu": 2, "steps_per_print": 2, "wall_clock_breakdown": true}\n' \
    >"$tmp/print.json"
run mlp_print 0 "$train" --config "$tmp/print.json" --hidden 16 --layers 1 --steps 5
expect_rc mlp_print 0
[ "$(grep -Ec '^step [0-9]+/5 ' "$tmp/mlp_print.out")" -eq 3 ] ||
    fail "mlp_print: expected the progress lines of steps 2, 4 and 5"
expect_text mlp_print out "step 4/5 |"
[ "$(grep -Ec '^time: forward [0-9.]+ ms \| backward [0-9.]+ ms \| step [0-9.]+ ms \| communication [0-9.]+ ms' "$tmp/mlp_print.out")" -eq 3 ] ||
    fail "mlp_print: expected a wall-clock line after each progress line"

run mlp_help 0 "$train" --help
expect_rc mlp_help 0
expect_text mlp_help out "Precedence: the defaults below < FILE < the flags given here,"

finish "test_config_cli: all passed"
