#!/bin/sh
# test_memory_plan.sh -- memory predicted: a model whose states cannot fit in
# what the process may use (here RLIMIT_AS, set with ulimit -v) fails before
# anything is allocated, naming the planned peak per tag (the model states and the
# transient tags: gathers, buckets, activations, workspace) and the limit, on one
# rank and on every rank of a job, within seconds, the gradient accumulation
# counters included (whole units with rank-major atoms, shards by default); a
# model that fits still runs; ranks sharing a memory cgroup are checked together; NVMe
# offload whose states fit but whose staging buffers do not is refused at start-up.
# Run by `make check' (tests/mpirun-wrapper); by hand: sh tests/test_memory_plan.sh
# from the top build directory.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
train=$top_builddir/examples/train_mlp
require_built "$train"
case ${ZERO_TEST_SANITIZERS:-} in
    *address*) # its shadow memory needs terabytes of address space: no RLIMIT_AS test under it
        echo "$test_name: skipped under AddressSanitizer (RLIMIT_AS)"
        exit 77
        ;;
esac

# limited NAME NP CMD...: run NAME under a 3 GB address-space limit
limited() {
    name=$1
    shift
    # shellcheck disable=SC3045 # dash (Debian's sh), bash and busybox all have ulimit -v
    (ulimit -v 3000000 && run "$name" "$@" && echo "$rc" >"$tmp/$name.rc") ||
        echo 1 >"$tmp/$name.rc"
    rc=$(cat "$tmp/$name.rc")
}

# expect_plan NAME BEFORE STATES AFTER STAGE: NAME's stderr has BEFORE, a total, the
# breakdown STATES, the workspace (its size depends on the backend's threads), AFTER and
# STAGE: "BEFORE N GiB (STATES, workspace N GiBAFTER; STAGE"
expect_plan() {
    re="$(re_quote "$2") [0-9.]+ GiB \\($(re_quote "$3"), workspace [0-9.]+ GiB$(re_quote "$4"); $(re_quote "$5")"
    grep -Eq -- "$re" "$tmp/$1.err" || {
        fail "$1: no plan '$2 ... ($3, workspace ...$4; $5' in its err"
        cat "$tmp/$1.err"
    }
}
# re_quote TEXT: TEXT as an extended regular expression matching itself
re_quote() {
    printf '%s' "$1" | sed 's/[][().*+?^$|{}\\]/\\&/g'
}

# ~1.07e9 parameters: 16 GiB of fp32 Adam states at stage 0
big="--hidden 4096 --layers 8 --steps 1 --batch 2"
start=$(date +%s)
# shellcheck disable=SC2086 # $big is a list of words
limited big1 0 "$train" $big
[ "$rc" -eq 1 ] || fail "big1: exit $rc, expected 1"
# (the workspace holds the backend's packing panels, which grow with its threads: not pinned)
expect_plan big1 "train_mlp: rank 0: not enough memory: the planned peak of host memory is" \
    "params 4.00 GiB, grads 4.00 GiB, optim 8.00 GiB" "" "stage 0,"
# the limit named: RLIMIT_AS, unless a cgroup or MemAvailable leaves even less
grep -Eq 'but this process may use [0-9.]+ GiB \((RLIMIT_AS \(ulimit -v\) 2\.86 GiB, [0-9.]+ GiB already mapped|cgroup|/proc/meminfo)' \
    "$tmp/big1.err" || { fail "big1: the limit is not named"; show big1; }

# at stage 3 on 2 ranks each rank's plan is its shard, with the gathers (the default
# stage3_max_live_parameters, 1e9 elements, and one unit's fp32 copy to save the weights),
# the local gradients of a 5e8-element reduce bucket (three units) and one reduce-scatter's
# window
# shellcheck disable=SC2086
limited big2 2 "$train" $big --stage 3
[ "$rc" -ne 0 ] || fail "big2: exit 0, expected a failure"
expect_plan big2 "planned peak of host memory is" \
    "params 2.00 GiB, grads 2.00 GiB, optim 4.00 GiB, gather 4.23 GiB, buckets 1.50 GiB" \
    ", comm 0.50 GiB" "stage 3,"
elapsed=$(($(date +%s) - start))
[ "$elapsed" -lt 20 ] || fail "the refusals took ${elapsed}s: they should come before any allocation"

# the plan fails on the last rank only: rank 0's message carries that rank's own, with
# its breakdown (it said "its message has the breakdown" and the message never came)
one="$train --hidden 1024 --layers 8 --steps 1 --batch 24 --quiet"
last_limit=$((700000 + $(libraries_kb "$train"))) # on top of the libraries (CUDA's: 0.8 GB)
for np in 2 3; do
    # shellcheck disable=SC2086 # $one is a list of words
    timeout 30 "$mpirun_cmd" $mpirun_flags -np $((np - 1)) $one : -np 1 \
        sh -c "ulimit -v $last_limit && exec $one" >"$tmp/last_only_np$np.out" 2>"$tmp/last_only_np$np.err"
    rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "last_only_np$np: exit $rc, expected a failure"
    expect_plan "last_only_np$np" "train_mlp: rank 0: rank $((np - 1)) cannot hold its planned peak in the memory it may use: rank $((np - 1)): not enough memory: the planned peak of host memory is" \
        "params 0.25 GiB, grads 0.25 GiB, optim 0.50 GiB" ", comm 0.03 GiB" "stage 0,"
done

# gradient accumulation (A = 4): the counters' floor(log2 A) + 1 = 3 fp32 slots per unit,
# of the whole unit with rank-major atoms (3 x 4 bytes x Ψ), of the shard by default
# shellcheck disable=SC2086
limited accum_rank 2 "$train" $big --stage 3 --batch 16 --micro-batch 2 --atom-order rank_major
[ "$rc" -ne 0 ] || fail "accum_rank: exit 0, expected a failure"
expect_plan accum_rank "planned peak of host memory is" \
    "params 2.00 GiB, grads 2.00 GiB, optim 4.00 GiB, gather 4.23 GiB, buckets 1.50 GiB" \
    ", comm 0.50 GiB, accum 12.00 GiB" "stage 3,"
# shellcheck disable=SC2086
limited accum_micro 2 "$train" $big --stage 3 --batch 16 --micro-batch 2
[ "$rc" -ne 0 ] || fail "accum_micro: exit 0, expected a failure"
expect_plan accum_micro "planned peak of host memory is" \
    "params 2.00 GiB, grads 2.00 GiB, optim 4.00 GiB, gather 4.23 GiB, buckets 1.50 GiB" \
    ", comm 0.50 GiB, accum 6.00 GiB" "stage 3,"

# ZeRO-Infinity's shape (issue 28: OOM-killed after engine creation): the states are in
# NVMe swap files and fit, the 64 staging buffers of the optimizer's ring do not; refused
# before any swap file is made, the workspace (the rings) named in the breakdown
mkdir -p "$tmp/sw"
printf '%s\n' '{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,' \
    ' "bf16": {"enabled": true}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},' \
    ' "zero_optimization": {"stage": 3, "sub_group_size": 1e8,' \
    "   \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$tmp/sw\", \"buffer_count\": 64}," \
    "   \"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"$tmp/sw\", \"max_in_cpu\": 0}}}" \
    >"$tmp/rings.json"
start=$(date +%s)
limited rings 0 "$train" --hidden 2048 --layers 4 --steps 1 --config "$tmp/rings.json"
[ "$rc" -eq 1 ] || { fail "rings: exit $rc, expected 1"; show rings; }
grep -Eq 'not enough memory: the planned peak of host memory is [0-9.]+ GiB \(.*workspace [0-9.]+ GiB' \
    "$tmp/rings.err" || { fail "rings: no breakdown naming the workspace"; show rings; }
[ -z "$(ls -A "$tmp/sw")" ] || fail "rings: left $(ls -A "$tmp/sw")"
[ $(($(date +%s) - start)) -lt 20 ] || fail "rings: the refusal took more than 20 s"

# a model that fits runs under the same limit
limited small 0 "$train" --hidden 16 --layers 1 --steps 1 --batch 2 --quiet
[ "$rc" -eq 0 ] || { fail "small: exit $rc under the limit"; show small; }

# ranks sharing a memory cgroup share its limit: each rank's plan (0.50 GiB of states, 0.55
# with the transient tags) fits the cgroup's 0.78 GiB alone, the two together do not, and
# are refused before any allocation (they passed one by one and were OOM-killed together);
# two ranks whose plans fit together (a quarter of the model at stage 3) run.
# Needs a writable memory cgroup (root: v1's memory hierarchy or v2's memory controller).
cg_mlp="$train --hidden 1024 --batch 8 --steps 0 --quiet"
cg_root=
if [ -w /sys/fs/cgroup/memory ]; then
    cg_root=/sys/fs/cgroup/memory cg_limit=memory.limit_in_bytes
elif [ -w /sys/fs/cgroup ] && grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    cg_root=/sys/fs/cgroup cg_limit=memory.max
fi
cg=$cg_root/libzero-test-$$
if [ -n "$cg_root" ] && mkdir "$cg" 2>/dev/null && echo $((800 * 1024 * 1024)) >"$cg/$cg_limit"; then
    for job in "cgroup_np1 1 --layers 4 --stage 0" "cgroup_np2 2 --layers 4 --stage 0" \
        "cgroup_np2_small 2 --layers 1 --stage 3"; do
        name=${job%% *}
        rest=${job#* }
        # shellcheck disable=SC2086 # $cg_mlp and the stage are lists of words
        (echo "$(sh -c 'echo $PPID')" >"$cg/cgroup.procs" &&
            exec timeout 60 "$mpirun_cmd" $mpirun_flags -np ${rest%% *} $cg_mlp ${rest#* }) \
            >"$tmp/$name.out" 2>"$tmp/$name.err"
        echo $? >"$tmp/$name.rc"
    done
    rmdir "$cg" 2>/dev/null
    [ "$(cat "$tmp/cgroup_np1.rc")" -eq 0 ] || { fail "cgroup_np1: one rank's plan fits, exit $(cat "$tmp/cgroup_np1.rc")"; show cgroup_np1; }
    [ "$(cat "$tmp/cgroup_np2_small.rc")" -eq 0 ] || { fail "cgroup_np2_small: the plans fit, exit $(cat "$tmp/cgroup_np2_small.rc")"; show cgroup_np2_small; }
    [ "$(cat "$tmp/cgroup_np2.rc")" -eq 1 ] || fail "cgroup_np2: exit $(cat "$tmp/cgroup_np2.rc"), expected 1"
    expect_plan cgroup_np2 "train_mlp: rank 0: not enough memory: the planned peak of host memory is" \
        "params 0.13 GiB, grads 0.13 GiB, optim 0.25 GiB" ", comm 0.03 GiB" "stage 0,"
    grep -Eq "; with the 2 ranks sharing it \(0, 1\) 1\.[0-9]+ GiB, but the cgroup's processes may use" \
        "$tmp/cgroup_np2.err" || { fail "cgroup_np2: the ranks sharing the cgroup not named"; show cgroup_np2; }
else
    rmdir "$cg" 2>/dev/null
    echo "$test_name: the cgroup cases skipped (no writable memory cgroup here)"
fi

finish "test_memory_plan: all passed"
