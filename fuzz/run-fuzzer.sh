#!/bin/sh
# run-fuzzer.sh SRCDIR/fuzz NAME... -- runs fuzz/fuzz_NAME of the build directory
# for $FUZZ_SECONDS seconds each (default 30), from the seeds in
# SRCDIR/fuzz/corpus/NAME (read only) and what earlier runs kept in
# fuzz-corpus/NAME, with SRCDIR/fuzz/NAME.dict when there is one. A crash, leak
# or timeout leaves the input in fuzz-artifacts/ and makes the script fail;
# each target's time and result is printed at the end. $FUZZ_JOBS targets
# (default 1) run at a time, each a single libFuzzer process: on N cores,
# FUZZ_JOBS=N gives every target the same seconds of fuzzing in 1/N of the time
# (quickstart.sh fuzz sets it to its JOBS).
set -u
fuzzdir=$1
shift
seconds=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-1}
mkdir -p fuzz-artifacts

# fuzz NAME: one target; its result (ok or FAILED) and time in fuzz-artifacts/NAME.result
fuzz() {
    name=$1
    mkdir -p "fuzz-corpus/$name"
    dict=
    [ -f "$fuzzdir/$name.dict" ] && dict="-dict=$fuzzdir/$name.dict"
    # MPI's own allocations (fuzz_ckpt_load) need whole stacks to match tests/lsan.supp
    asan=
    [ "$name" = ckpt_load ] && asan="fast_unwind_on_malloc=0"
    start=$(date +%s)
    echo "==> fuzz_$name for ${seconds}s"
    # shellcheck disable=SC2086 # $dict is one word or none
    if ASAN_OPTIONS="$asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}" "./fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="fuzz-artifacts/$name-" $dict \
        "fuzz-corpus/$name" "$fuzzdir/corpus/$name" >"fuzz-artifacts/$name.log" 2>&1; then
        result=ok
    else
        result=FAILED
    fi
    echo "$result $(($(date +%s) - start))" >"fuzz-artifacts/$name.result"
}

# $jobs targets at a time (they all take FUZZ_SECONDS), then each result in order
count=0
for name in "$@"; do
    rm -f "fuzz-artifacts/$name.result"
    fuzz "$name" &
    count=$((count + 1))
    if [ "$count" -ge "$jobs" ]; then
        wait
        count=0
    fi
done
wait
summary=
failed=0
for name in "$@"; do
    result=FAILED took=
    [ -f "fuzz-artifacts/$name.result" ] && read -r result took <"fuzz-artifacts/$name.result"
    if [ "$result" != ok ]; then
        result="FAILED (see fuzz-artifacts/$name.log)"
        failed=1
        echo "==> fuzz_$name failed:"
        tail -40 "fuzz-artifacts/$name.log"
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "fuzz-artifacts/$name.log")
    summary="$summary
  fuzz_$name: $result, ${runs:-?} inputs in ${took:-?}s"
done
echo "fuzz summary:$summary"
exit $failed
