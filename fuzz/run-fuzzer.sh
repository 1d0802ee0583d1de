#!/bin/sh
# run-fuzzer.sh SRCDIR/fuzz NAME... -- runs fuzz/fuzz_NAME of the build directory
# for $FUZZ_SECONDS seconds each (default 30), from the seeds in
# SRCDIR/fuzz/corpus/NAME (read only) and what earlier runs kept in
# fuzz-corpus/NAME, with SRCDIR/fuzz/NAME.dict when there is one. A crash, leak
# or timeout leaves the input in fuzz-artifacts/ and makes the script fail;
# each target's time and result is printed at the end.
set -u
fuzzdir=$1
shift
seconds=${FUZZ_SECONDS:-30}
summary=
failed=0
mkdir -p fuzz-artifacts
for name in "$@"; do
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
        result="FAILED (see fuzz-artifacts/$name.log)"
        failed=1
        tail -40 "fuzz-artifacts/$name.log"
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "fuzz-artifacts/$name.log")
    summary="$summary
  fuzz_$name: $result, ${runs:-?} inputs in $(($(date +%s) - start))s"
done
echo "fuzz summary:$summary"
exit $failed
