#!/bin/sh
# test_faults -- a fault on some ranks stops every rank within seconds, with the
# failing rank's message, and loses or leaves no file (issue 28, docs/faults.md).
#
# 1. Faults the environment makes on one rank only: ZERO_CPU_ISA=bogus and
#    ZERO_CPU_THREADS=0 (the backend's open), an nvme_path that exists in one
#    rank's working directory only (the engine's creation); train_mlp, train_gpt
#    and zero verify, at 2, 3 and 4 ranks (oversubscribed).
# 2. ZERO_FAULT at every site a small run passes (enumerated with ZERO_FAULT_LOG):
#    train_mlp at stage 2 with a checkpoint resumed and saved again, and at stage
#    3 with optimizer and parameters on NVMe. For each site the fault hits rank 0,
#    the last rank or all ranks (make check takes one choice per site, rotating, at
#    2 and 3 ranks; ZERO_FAULT_SWEEP=full takes all three at 2, 3 and 4 ranks).
#    Each run must end non-zero within 10 s, print the site's "ZERO_FAULT: SITE
#    fails here" and the trainer's own error line, leave the previous checkpoint
#    and weights as they were, and leave no swap or temporary file behind.
# 3. A rank that fails alone in the middle of a step (its 60th allocation): every rank
#    ends within 10 s and the failing rank's swap files are gone; a rank waiting in a
#    collective (its peer stopped) removes its swap files when SIGTERM comes.
# Every job runs under `timeout 30', so a hang fails instead of blocking.
# shellcheck disable=SC2086 # $m, $flags and the lists are lists of words
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp=$top_builddir/examples/train_mlp
gpt=$top_builddir/examples/train_gpt
zero=$top_builddir/src/cli/zero
require_built "$mlp" "$gpt" "$zero"

# job NAME ARGS...: mpirun ARGS under timeout 30; output in $tmp/NAME.out/.err,
# status in $rc; fails on a hang, on 10 s or more, and on exit status 0.
job() {
    name=$1
    shift
    start=$(date +%s)
    timeout 30 "$mpirun_cmd" $mpirun_flags "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    took=$(($(date +%s) - start))
    if [ "$rc" -eq 124 ]; then
        fail "$name hangs (killed after 30 s)"
        show "$name"
    elif [ "$took" -ge 10 ]; then
        fail "$name took $took s"
    elif [ "$rc" -eq 0 ] && grep -q "ZERO_FAULT: .* fails here" "$tmp/$name.err"; then
        fail "$name exited 0 although a rank failed"
        show "$name"
    fi
}

# says NAME REGEX: NAME's stderr matches REGEX
says() {
    if ! grep -q -- "$2" "$tmp/$1.err"; then
        fail "$1: no line matching '$2' on stderr"
        show "$1"
    fi
}

# ---- 1. the environment on one rank ----
m="$mlp --hidden 16 --layers 2 --batch 24 --steps 2 --quiet"
g="$gpt --n-layer 1 --n-head 2 --n-embd 16 --batch 24 --steps 1 --quiet --sample 0"
v="$zero verify --steps 1 --stages 0,3 --hidden 16 --layers 1 --batch 24"
o="$mlp --hidden 8 --layers 1 --batch 4 --steps 1 --quiet"
# the suites that repeat this one (sanitizers, distcheck) take the odd N = 3 only
startup_worlds="2 3 4"
small_sweep && startup_worlds=3
for np in $startup_worlds; do
    healthy=$((np - 1))
    for prog in mlp gpt verify; do
        case $prog in
        mlp) cmd=$m ;;
        gpt) cmd=$g ;;
        *) cmd=$v ;;
        esac
        job "isa_${prog}_np$np" -np $healthy $cmd : -np 1 -x ZERO_CPU_ISA=bogus $cmd
        says "isa_${prog}_np$np" "ZERO_CPU_ISA=bogus: unknown"
        job "threads_${prog}_np$np" -np 1 -x ZERO_CPU_THREADS=0 $cmd : -np $healthy $cmd
        says "threads_${prog}_np$np" "rank 0: ZERO_CPU_THREADS=0"
    done
done

mkdir -p "$tmp/a/sw" "$tmp/b"
sed 's|/var/tmp|sw|' "$top_srcdir/examples/configs/nvme.json" >"$tmp/nv.json"
job nvme_one_rank -np 1 --wdir "$tmp/a" $m --micro-batch 2 --config "$tmp/nv.json" : \
    -np 1 --wdir "$tmp/b" $m --micro-batch 2 --config "$tmp/nv.json"
says nvme_one_rank "rank 1: .*nvme_path sw: does not exist"
if [ -n "$(ls "$tmp/a/sw")" ]; then
    fail "nvme_one_rank: rank 0 left $(ls "$tmp/a/sw")"
fi

# a value a knob does not take, or a ZERO_FAULT that is not SITE:RANKS[:NTH], is an
# error on every rank (both were ignored, or only warned about): on the last rank only,
# every rank stops with its message
job knob_one_rank -np 1 $m : -np 1 -x ZERO_HOST_ISA=bogus $m
says knob_one_rank "rank 1: ZERO_HOST_ISA=bogus: it takes base|avx2|avx512"
[ "$rc" -ne 0 ] || fail "knob_one_rank exited 0"
for bad in ZERO_AIO=bogus ZERO_FP32_LOGITS=true ZERO_FAULT=nonsense ZERO_FAULT=alloc:0x; do
    name=env_$(echo "$bad" | tr -c 'A-Za-z0-9\n' _)
    # shellcheck disable=SC2086
    run "$name" 0 env "$bad" $m
    expect_error "$name" 1 "${bad%%=*}=${bad#*=}: "
done

# ---- a trainer started without mpirun under ulimit -v ----
# A threaded OpenBLAS started its thread pool when the library loaded; under the limit
# a worker's buffer allocation failed and it retried for ever, and MPI_Init's fork of
# the singleton waited for it in OpenBLAS's fork handler: no output, no end. The cpu
# backend loads OpenBLAS in native mode only, after MPI_Init (cpu_openblas.c), so
# exact mode gets to the memory check. OPENBLAS_NUM_THREADS (which lib.sh sets) hid
# the hang; AddressSanitizer's shadow memory does not fit under ulimit -v. (Below about
# 300000 Open MPI's own start-up, PMIX's dstore, can run out of memory before our check
# under make check: 500000 leaves it room.) Each limit comes on top of the shared
# libraries' own mapping (a CUDA build's are 0.8 GB).
# shellcheck disable=SC3045 # dash (Debian's sh), bash and busybox all have ulimit -v
if ! under_sanitizers; then
    libs=$(libraries_kb "$mlp")
    for lim in 500000 1000000; do
        (ulimit -v $((lim + libs)) && exec env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS \
            -u GOTO_NUM_THREADS timeout 20 $mlp --steps 1 --quiet) \
            >"$tmp/ulimit_$lim.out" 2>"$tmp/ulimit_$lim.err"
        rc=$?
        [ "$rc" -ne 124 ] || fail "ulimit_$lim: train_mlp hangs under ulimit -v $lim"
        expect_error "ulimit_$lim" 1 "train_mlp: rank 0: not enough memory: .*RLIMIT_AS (ulimit -v)"
    done
    (ulimit -v 1000000 && exec env -u OPENBLAS_NUM_THREADS timeout 20 $o) \
        >"$tmp/ulimit_small.out" 2>"$tmp/ulimit_small.err"
    rc=$?
    expect_ok ulimit_small
    # NVMe offload's staging buffers under the limit: the message was the whole of
    # "16797696 bytes for an NVMe buffer"; the memory plan counts the rings now and
    # refuses them at start-up with the breakdown (workspace) and what to change, before
    # any swap file exists
    mkdir -p "$tmp/nvlim"
    sed "s|/var/tmp|$tmp/nvlim|; s|\"pin_memory\": true|\"pin_memory\": false|; \
        s|\"buffer_count\": 4|\"buffer_count\": 64|" "$top_srcdir/examples/configs/nvme.json" \
        >"$tmp/nvlim.json"
    (ulimit -v 2000000 && exec timeout 20 $mlp --hidden 1024 --layers 4 --batch 4 --steps 1 \
        --quiet --config "$tmp/nvlim.json") >"$tmp/nvme_limit.out" 2>"$tmp/nvme_limit.err"
    rc=$?
    expect_error nvme_limit 1 "train_mlp: rank 0: not enough memory: the planned peak of host memory is [0-9.]* GiB (.*workspace [0-9.]* GiB; .*shrink the buffers (reduce_bucket_size, stage3_max_live_parameters, the offload buffer counts)"
    [ -z "$(ls "$tmp/nvlim")" ] || fail "nvme_limit left $(ls "$tmp/nvlim")"
fi
# native mode loads OpenBLAS when the backend opens: a singleton and two ranks train
echo '{"libzero": {"collectives": "native"}}' >"$tmp/native.json"
run native_singleton 0 $o --config "$tmp/native.json"
expect_ok native_singleton
run native_np2 2 $o --config "$tmp/native.json"
expect_ok native_np2

# ---- mixed runs: what changes the math differs between ranks ----
job fp32_logits_one_rank -np 1 $g : -np 1 -x ZERO_FP32_LOGITS=1 $g
says fp32_logits_one_rank "ZERO_FP32_LOGITS differs between ranks: '1' on rank 1, unset on rank 0"
# two copies of --data at the same path and size that differ in the middle only
mkdir -p "$tmp/da" "$tmp/db"
if run data_write 0 $mlp --write-synthetic-data "$tmp/da/d.safetensors" --samples 40000 \
    --hidden 16 && expect_ok data_write; then
    cp "$tmp/da/d.safetensors" "$tmp/db/d.safetensors"
    size=$(wc -c <"$tmp/da/d.safetensors")
    printf '\001' | dd of="$tmp/db/d.safetensors" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
    job data_middle -np 1 --wdir "$tmp/da" $m --data d.safetensors : \
        -np 1 --wdir "$tmp/db" $m --data d.safetensors
    says data_middle "rank 1: --data contents = $size bytes, content"
fi

# ---- outputs that would collide or fail only after training: refused at start-up ----
mkdir -p "$tmp/sub"
run out_same 0 $o --save-weights "$tmp/o" --trace "$tmp/sub/../o"
expect_error out_same 2 "train_mlp: --save-weights $tmp/o and --trace $tmp/sub/../o name the same file"
run out_latest 0 $o --save-weights "$tmp/ck0/latest" --save-checkpoint "$tmp/ck0"
expect_error out_latest 2 "--save-weights $tmp/ck0/latest is --save-checkpoint $tmp/ck0's own entry"
mkdir -p "$tmp/ck_fifo" "$tmp/ck_null" "$tmp/ck_dir/latest" "$tmp/ck_step"
mkfifo "$tmp/ck_fifo/latest"
ln -s /dev/null "$tmp/ck_null/latest"
: >"$tmp/ck_step/step_000001"
for k in fifo:"a FIFO" null:"a character device" dir:"a directory"; do
    run "out_latest_${k%%:*}" 0 $o --save-checkpoint "$tmp/ck_${k%%:*}"
    expect_error "out_latest_${k%%:*}" 2 "ck_${k%%:*}/latest is ${k#*:}, not a regular file"
done
run out_step_file 0 $o --save-checkpoint "$tmp/ck_step"
expect_error out_step_file 2 "ck_step/step_000001 is a regular file, not a checkpoint directory"

# ---- SIGTERM and SIGINT: every rank stops after the same step, the swap files go ----
# The default action killed the ranks mid-step and left the swap files (issue 28 item
# 5). Now the handler records the signal, the ranks agree on it after each step
# (src/program/program_signal.c), rank 0 prints "stopped by signal N at step S", the
# engine is destroyed and nothing is saved. Signalled: mpirun (which passes SIGTERM on
# to every rank), every rank, one rank alone (the others learn it from the agreement),
# a singleton;
# a signal ignored at start (a shell's background job ignores SIGINT) stays ignored.
# files_appear DIR N: waits up to 20 s for N files in DIR
files_appear() {
    n=0
    while [ "$(ls "$1" | wc -l)" -lt "$2" ] && [ $n -lt 200 ]; do
        sleep 0.1
        n=$((n + 1))
    done
}

# ends_within_10s PID WHAT: waits up to 10 s for PID to end, else fails with WHAT and kills it
ends_within_10s() {
    n=0
    while kill -0 "$1" 2>/dev/null && [ $n -lt 100 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    if kill -0 "$1" 2>/dev/null; then
        fail "$2"
        kill -9 "$1"
    fi
}

# signalled NAME SIGNAL WHOM NP: train_mlp with NVMe offload, NP ranks (0: no mpirun),
# receives SIGNAL once its swap files exist; WHOM is mpirun, all (every rank, as a
# batch system's cancel sends it) or a rank number
signalled() {
    sname=$1 sig=$2 whom=$3 np=$4
    d=$tmp/$sname
    mkdir -p "$d/sw"
    sed "s|/var/tmp|$d/sw|" "$top_srcdir/examples/configs/nvme.json" >"$d/nv.json"
    long="$mlp --hidden 16 --layers 2 --batch 24 --micro-batch 2 --steps 1000000 --quiet \
        --config $d/nv.json --save-weights $d/w.safetensors"
    if [ "$np" -eq 0 ]; then
        sh -c 'echo $$ >"$0.0" && exec "$@"' "$d/pid" $long >"$tmp/$sname.out" 2>"$tmp/$sname.err" &
    else
        # a SIGTERM'd mpirun sends SIGCONT, then SIGTERM and then SIGKILL, each
        # odls_base_sigkill_timeout seconds (1) after the last: 3 leaves the ranks time
        # for the step's end on a loaded machine and still ends within 10 s
        OMPI_MCA_odls_base_sigkill_timeout=3 \
            "$mpirun_cmd" $mpirun_flags -np "$np" sh -c 'echo $$ >"$0.$OMPI_COMM_WORLD_RANK" &&
                exec "$@"' "$d/pid" $long >"$tmp/$sname.out" 2>"$tmp/$sname.err" &
    fi
    job_pid=$!
    files_appear "$d/sw" "$((np > 0 ? np : 1))"
    sleep 1 # a few steps in
    if [ "$whom" = mpirun ]; then
        kill -"$sig" $job_pid
    elif [ "$whom" = all ]; then
        # shellcheck disable=SC2046 # one pid a word
        kill -"$sig" $(cat "$d"/pid.*)
    else
        kill -"$sig" "$(cat "$d/pid.$whom")"
    fi
    ends_within_10s $job_pid "$sname: still running 10 s after SIG$sig"
    wait $job_pid
    rc=$?
    [ "$rc" -ne 0 ] || fail "$sname exited 0 after SIG$sig"
    case $sig in TERM) num=15 ;; INT) num=2 ;; esac
    says "$sname" "^train_mlp: stopped by signal $num (SIG$sig) at step [0-9]* of 1000000; nothing saved"
    [ -z "$(ls "$d/sw")" ] || fail "$sname: left $(ls "$d/sw")"
    [ ! -e "$d/w.safetensors" ] || fail "$sname: saved the weights although stopped"
}
# (SIGINT goes to a rank: a shell's background job, mpirun or a singleton, ignores it)
signalled term_mpirun_np2 TERM mpirun 2
signalled int_rank1_np3 INT 1 3
if ! small_sweep; then # the sanitizer build: the two above (about 25 s there)
    signalled term_all_np2 TERM all 2
    signalled term_singleton TERM 0 0
fi

# A rank that cannot end its step (its peer is stopped, so it waits in a collective)
# removes its swap files as the SIGTERM arrives, while it lives on: the waiting ranks of
# a job whose peer aborted are in this state when mpirun's SIGTERM comes, and its SIGKILL
# follows. The stopped peer's files stay until it goes on; then both end at the step
# (rank 0 had the signal), and destroy, finding rank 0's paths gone, removes rank 1's.
d=$tmp/stuck
mkdir -p "$d/sw"
sed "s|/var/tmp|$d/sw|" "$top_srcdir/examples/configs/nvme.json" >"$d/nv.json"
"$mpirun_cmd" $mpirun_flags -np 2 sh -c 'echo $$ >"$0.$OMPI_COMM_WORLD_RANK" && exec "$@"' \
    "$d/pid" $mlp --hidden 16 --layers 2 --batch 24 --micro-batch 2 --steps 1000000 --quiet \
    --config "$d/nv.json" >"$tmp/stuck.out" 2>"$tmp/stuck.err" &
job_pid=$!
files_appear "$d/sw" 2
sleep 1
kill -STOP "$(cat "$d/pid.1")"
sleep 0.5
kill -TERM "$(cat "$d/pid.0")"
sleep 1
kill -0 "$(cat "$d/pid.0")" 2>/dev/null || fail "stuck: rank 0 ended although its peer is stopped"
[ -z "$(ls "$d/sw" | grep 'rank00000\.swap')" ] ||
    fail "stuck: rank 0 kept $(ls "$d/sw" | grep 'rank00000\.swap') after its SIGTERM"
[ -n "$(ls "$d/sw" | grep 'rank00001\.swap')" ] || fail "stuck: the stopped rank 1's files went"
kill -CONT "$(cat "$d/pid.1")"
ends_within_10s $job_pid "stuck: still running 10 s after rank 1 went on"
wait $job_pid
[ $? -ne 0 ] || fail "stuck exited 0 after SIGTERM"
says stuck "^train_mlp: stopped by signal 15 (SIGTERM) at step [0-9]* of 1000000; nothing saved"
[ -z "$(ls "$d/sw")" ] || fail "stuck: left $(ls "$d/sw")"

# ---- 2. ZERO_FAULT at every site ----
tree_sum() { (cd "$1" && find . -type f -print | LC_ALL=C sort | xargs -r md5sum); }

# leftovers DIR: swap files and temporaries left under DIR
leftovers() {
    find "$1" \( -name '*.swap' -o -name '*.tmp*' -o -name '.tmp-*' \) -print 2>/dev/null
}

# sweep NAME SETUP FLAGS: SETUP (a clean run, shell text run in $tmp/NAME) makes
# ck/ (step_000002) and w.safetensors; FLAGS are the faulty run's train_mlp flags
# (run in $tmp/NAME; the swap files go to its sw/). After each faulty run ck/ and
# w.safetensors are compared with the clean ones, then restored.
sweep() {
    sname=$1 flags=$3
    d=$tmp/$sname
    mkdir -p "$d/sw"
    (cd "$d" && eval "$2") || fail "$sname: the clean run failed"
    cp -a "$d/ck" "$d/ck.clean"
    cp "$d/w.safetensors" "$d/w.clean"
    (cd "$d" && ZERO_FAULT_LOG=$d/sites timeout 30 "$mpirun_cmd" $mpirun_flags -np 2 $flags \
        >"$d/clean.out" 2>&1) || fail "$sname: the faulty run's command fails without a fault"
    rm -rf "$d/ck"
    cp -a "$d/ck.clean" "$d/ck"
    cp "$d/w.clean" "$d/w.safetensors"
    sites=$(cut -d' ' -f1 "$d/sites" | LC_ALL=C sort -u)
    echo "$sname: $(echo "$sites" | wc -l) sites:" $sites
    step2=$(tree_sum "$d/ck.clean/step_000002")
    weights=$(md5sum <"$d/w.clean")
    i=0
    for site in $sites; do
        # a site only rank 0 passes (meta.json, latest, the weights) is not tried on the last
        if grep -q "^$site 1\$" "$d/sites"; then all_choices="0 last all"; else all_choices="0 all"; fi
        for np in $worlds; do
            i=$((i + 1))
            n=$(echo $all_choices | wc -w)
            if [ "$full" ]; then choices=$all_choices; else
                choices=$(echo $all_choices | cut -d' ' -f$((i % n + 1)))
            fi
            for ranks in $choices; do
                run_name="${sname}_${site}_${ranks}_np$np"
                job "$run_name" --wdir "$d" -np $np -x ZERO_FAULT="$site:$ranks" $flags
                if [ "$rc" -eq 0 ]; then # at this world size these ranks do not pass the site
                    echo "$run_name: not passed"
                    rm -rf "$d/ck" "$d/sw"/*
                    cp -a "$d/ck.clean" "$d/ck"
                    cp "$d/w.clean" "$d/w.safetensors"
                    continue
                fi
                says "$run_name" "ZERO_FAULT: $site fails here"
                says "$run_name" "^train_mlp: "
                if [ "$(tree_sum "$d/ck/step_000002")" != "$step2" ]; then
                    fail "$run_name: the previous checkpoint (ck/step_000002) changed"
                fi
                latest=$(cat "$d/ck/latest" 2>/dev/null)
                if [ ! -f "$d/ck/$latest/meta.json" ]; then
                    fail "$run_name: ck/latest ('$latest') names no checkpoint"
                fi
                if [ "$(md5sum <"$d/w.safetensors")" != "$weights" ]; then
                    fail "$run_name: the previous weights changed although the run failed"
                fi
                left=$(leftovers "$d")
                if [ -n "$left" ]; then
                    fail "$run_name: left $left"
                fi
                rm -rf "$d/ck" "$d/sw"/* $left
                cp -a "$d/ck.clean" "$d/ck"
                cp "$d/w.clean" "$d/w.safetensors"
            done
        done
    done
}

# ---- a rank that fails alone in the middle of a step ----
# Its 60th allocation is an activation of the first step's forward: it removes its swap
# files and aborts the job while the others wait in a collective (mpirun's SIGTERM then
# makes each of them remove theirs, program_signal.c, before its SIGKILL: the case
# "stuck" below checks that handler deterministically). Rank 0 alone at N = 2, the last
# rank alone at N = 3 (the suites that repeat this one: the latter); each run takes
# about 7 s, 5 of them program_die's wait for the others.
sed "s|/var/tmp|sw|" "$top_srcdir/examples/configs/nvme.json" >"$tmp/alone.json"
alone="$mlp --hidden 16 --layers 2 --batch 24 --micro-batch 2 --steps 3 --quiet --config $tmp/alone.json"
alone_cases="2:0 3:last"
small_sweep && alone_cases="3:last"
for c in $alone_cases; do
    np=${c%%:*} ranks=${c#*:}
    name=alone_${ranks}_np$np
    mkdir -p "$tmp/$name/sw"
    job "$name" --wdir "$tmp/$name" -np "$np" -x ZERO_FAULT="alloc:$ranks:60" $alone
    says "$name" "ZERO_FAULT: alloc fails here (passage 60)"
    says "$name" "^train_mlp: rank [0-9]*: allocating .* (activations): injected fault"
    [ "$ranks" = last ] && failed=$((np - 1)) || failed=0
    left=$(ls "$tmp/$name/sw" | grep "rank0000$failed\.swap")
    [ -z "$left" ] || fail "$name: the failing rank $failed left $left"
done

full=
worlds="2 3"
small_sweep && worlds=3
if [ "${ZERO_FAULT_SWEEP:-}" = full ]; then
    full=1
    worlds="2 3 4"
fi
# shellcheck disable=SC2317 # called from sweep's SETUP text, through eval
mpi() { timeout 30 "$mpirun_cmd" $mpirun_flags "$@" >/dev/null 2>&1; }
s2="$mlp --hidden 16 --layers 2 --batch 24 --stage 2 --quiet"
sweep stage2 "mpi -np 2 $s2 --steps 2 --save-checkpoint ck --save-weights w.safetensors" \
    "$s2 --steps 4 --resume ck --save-checkpoint ck --save-weights w.safetensors"
s3="$mlp --hidden 16 --layers 2 --batch 24 --micro-batch 2 --quiet --config $tmp/nv.json"
sweep nvme "mpi -np 2 $s3 --steps 2 --save-checkpoint ck --save-weights w.safetensors" \
    "$s3 --steps 4 --resume ck --save-checkpoint ck --save-weights w.safetensors"

finish "$test_name: every fault stopped every rank with its message, nothing lost or left"
